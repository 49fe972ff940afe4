/*
** ops/rnn.c -- one layer and direction of a recurrent net (RNN tanh/relu,
** LSTM with optional projection, GRU) over a whole sequence, and its fused
** backward through time: the public ops over the nn family's rnn entries
** (core/kern_nn.h; the loops are cpu/rnn.c). docs/rnn.md.
**
** What holds:
** - float32/float64, every operand of the input's dtype and device; any
**   layout (read through dense copies); results are new contiguous
**   tensors on the input's device.
** - PyTorch's layouts and gate orders: w_ih [G H, I], w_hh [G H, P],
**   biases [G H], w_hr [P, H]; LSTM i f g o, GRU r z n.
** - lengths (int64 counts on the CPU, each in 0..L) make a batch of
**   sequences of different lengths (the packed path of the Lua layer).
** - Autograd: one node (kind NN) for out, h_n and c_n, saving the operands
**   and the workspace of states and gates; its backward (the reverse time
**   loop) is fused and not itself differentiable.
*/
#include "ops/nn_ops.h"

#include <limits.h>

static const char *rnn_op_name(em_rnn_mode m) {
  switch (m) {
    case EM_RNN_TANH: return "rnn_tanh";
    case EM_RNN_RELU: return "rnn_relu";
    case EM_RNN_LSTM: return "lstm";
    default: return "gru";
  }
}

static const char *const rnn_what[EM_RNN_NOPS] = {"input", "h0", "c0", "weight_ih",
                                                  "weight_hh", "bias_ih", "bias_hh",
                                                  "weight_hr"};

/* t has the shape {a, b} (nd 2) or {a} (nd 1) */
static em_status rnn_shape(const char *op, const char *what, const em_tensor *t, int nd,
                           int64_t a, int64_t b) {
  int64_t want[2] = {a, b};
  if (t->ndim == nd && t->sizes[0] == a && (nd == 1 || t->sizes[1] == b)) return EM_OK;
  char s1[EM_SHAPE_BUF], s2[EM_SHAPE_BUF];
  return em_fail(EM_E_VALUE, "%s: expected %s of shape %s, got %s", op, what,
                 em_fmt_shape(s1, sizeof s1, nd, want),
                 em_fmt_shape(s2, sizeof s2, t->ndim, t->sizes));
}

/* Checks the operands and fills g (g->lengths points into *lens, a dense
** int64 copy of lengths the caller releases). */
static em_status rnn_geo(const char *op, em_rnn_mode mode, const em_tensor *const *in,
                         const em_tensor *lengths, int reverse, em_rnn_geo *g,
                         em_tensor **lens) {
  *lens = NULL;
  if (mode != EM_RNN_TANH && mode != EM_RNN_RELU && mode != EM_RNN_LSTM && mode != EM_RNN_GRU)
    return em_fail(EM_E_VALUE, "rnn: unknown mode %d", (int)mode);
  const em_tensor *x = in[EM_RNN_X];
  if (!x || !in[EM_RNN_W_IH] || !in[EM_RNN_W_HH])
    return em_fail(EM_E_VALUE, "%s: input, weight_ih and weight_hh are required", op);
  em_status st = nn_check_float(op, "input", x);
  if (st != EM_OK) return st;
  for (int i = 1; i < EM_RNN_NOPS; i++)
    if (in[i] && (st = nn_check_same(op, rnn_what[i], x, in[i])) != EM_OK) return st;
  if (x->ndim != 3)
    return em_fail(EM_E_VALUE, "%s: expected input of 3 dims (L, N, H_in), got %d", op, x->ndim);
  if (in[EM_RNN_C0] && mode != EM_RNN_LSTM)
    return em_fail(EM_E_VALUE, "%s: c0 is an LSTM's state only", op);
  if (in[EM_RNN_W_HR] && mode != EM_RNN_LSTM)
    return em_fail(EM_E_VALUE, "%s: weight_hr (proj_size) is an LSTM's only", op);
  const em_tensor *wih = in[EM_RNN_W_IH], *whh = in[EM_RNN_W_HH], *whr = in[EM_RNN_W_HR];
  memset(g, 0, sizeof *g);
  g->mode = mode;
  g->G = mode == EM_RNN_LSTM ? 4 : mode == EM_RNN_GRU ? 3 : 1;
  g->L = x->sizes[0];
  g->N = x->sizes[1];
  g->I = x->sizes[2];
  g->reverse = reverse != 0;
  if (wih->ndim != 2 || wih->sizes[0] % g->G != 0)
    return em_fail(EM_E_VALUE, "%s: expected weight_ih of shape (%d * hidden_size, %lld), got "
                   "%d dims with %lld rows", op, (int)g->G, (long long)g->I, wih->ndim,
                   (long long)(wih->ndim ? wih->sizes[0] : 0));
  g->H = wih->sizes[0] / g->G;
  if ((st = rnn_shape(op, rnn_what[EM_RNN_W_IH], wih, 2, g->G * g->H, g->I)) != EM_OK) return st;
  g->P = g->H;
  if (whr) {
    if (whr->ndim != 2 || whr->sizes[0] < 1)
      return em_fail(EM_E_VALUE, "%s: expected weight_hr of shape (proj_size, %lld)", op,
                     (long long)g->H);
    g->P = whr->sizes[0];
    if ((st = rnn_shape(op, "weight_hr", whr, 2, g->P, g->H)) != EM_OK) return st;
  }
  if ((st = rnn_shape(op, "weight_hh", whh, 2, g->G * g->H, g->P)) != EM_OK) return st;
  for (int i = EM_RNN_B_IH; i <= EM_RNN_B_HH; i++)
    if (in[i] && (st = rnn_shape(op, rnn_what[i], in[i], 1, g->G * g->H, 0)) != EM_OK) return st;
  if (in[EM_RNN_H0] && (st = rnn_shape(op, "h0", in[EM_RNN_H0], 2, g->N, g->P)) != EM_OK)
    return st;
  if (in[EM_RNN_C0] && (st = rnn_shape(op, "c0", in[EM_RNN_C0], 2, g->N, g->H)) != EM_OK)
    return st;
  if (g->L * g->N > INT_MAX || g->G * g->H > INT_MAX || g->I > INT_MAX || g->P > INT_MAX)
    return em_fail(EM_E_VALUE, "%s: sizes too large for one GEMM (L * N = %lld, 4 * hidden = "
                   "%lld)", op, (long long)(g->L * g->N), (long long)(g->G * g->H));
  if (!lengths) return EM_OK;
  if (lengths->dtype != EM_INT64 || lengths->ndim != 1 || lengths->sizes[0] != g->N)
    return em_fail(EM_E_VALUE, "%s: expected lengths to be an int64 tensor of %lld counts, got "
                   "%s with %d dims", op, (long long)g->N, em_dtype_name(lengths->dtype),
                   lengths->ndim);
  if (lengths->storage->device.type != EM_CPU)
    return em_fail(EM_E_VALUE, "%s: lengths must be on the cpu (they are read on the host)", op);
  if ((st = em_contiguous(lengths, lens)) != EM_OK) return st;
  const int64_t *lv = em_tensor_data(*lens);
  for (int64_t n = 0; n < g->N; n++) {
    if (lv[n] < 0 || lv[n] > g->L) {
      em_tensor_release(*lens);
      *lens = NULL;
      return em_fail(EM_E_VALUE, "%s: lengths[%lld] = %lld is outside 0..%lld (the sequence "
                     "length)", op, (long long)(n + 1), (long long)lv[n], (long long)g->L);
    }
  }
  g->lengths = lv;
  return EM_OK;
}

/* dense copies of the given operands into d[] (args view them) */
static em_status rnn_dense(const em_tensor *const *in, em_tensor **d, em_rnn_args *a) {
  em_status st = EM_OK;
  for (int i = 0; i < EM_RNN_NOPS && st == EM_OK; i++)
    if (in[i]) st = nn_dense(in[i], in[EM_RNN_X]->dtype, &d[i]);
  a->x = d[EM_RNN_X]; a->h0 = d[EM_RNN_H0]; a->c0 = d[EM_RNN_C0];
  a->w_ih = d[EM_RNN_W_IH]; a->w_hh = d[EM_RNN_W_HH]; a->b_ih = d[EM_RNN_B_IH];
  a->b_hh = d[EM_RNN_B_HH]; a->w_hr = d[EM_RNN_W_HR];
  return st;
}

static em_status rnn_run(em_rnn_mode mode, const em_tensor *const *in, const em_tensor *lengths,
                         int reverse, em_tensor **out, em_tensor **h_n, em_tensor **c_n,
                         em_tensor **ws_out, em_tensor **lens_out) {
  const char *op = rnn_op_name(mode);
  em_rnn_geo g;
  em_tensor *lens = NULL, *d[EM_RNN_NOPS] = {0}, *y = NULL, *hn = NULL, *cn = NULL, *ws = NULL;
  const em_nn_kernels *k = NULL;
  if (!in[EM_RNN_X]) return em_fail(EM_E_VALUE, "%s: the input is required", op);
  em_status st = nn_kernels(op, in[EM_RNN_X], &k);
  if (st == EM_OK) st = rnn_geo(op, mode, in, lengths, reverse, &g, &lens);
  if (st != EM_OK) return st;
  em_rnn_args a;
  const em_tensor *x = in[EM_RNN_X];
  em_dtype dt = x->dtype;
  int64_t ys[3] = {g.L, g.N, g.P}, hs[2] = {g.N, g.P}, cs[2] = {g.N, g.H};
  int64_t wn = em_rnn_ws_size(&g);
  if ((st = rnn_dense(in, d, &a)) != EM_OK) goto done;
  if ((st = nn_new(x, 3, ys, dt, 1, &y)) != EM_OK) goto done;
  if ((st = nn_new(x, 2, hs, dt, 0, &hn)) != EM_OK) goto done;
  if (mode == EM_RNN_LSTM && (st = nn_new(x, 2, cs, dt, 0, &cn)) != EM_OK) goto done;
  if ((st = nn_new(x, 1, &wn, dt, 1, &ws)) != EM_OK) goto done;
  if ((st = k->rnn_forward(op, &g, &a, y, hn, cn, ws)) != EM_OK) goto done;
  *out = y; y = NULL;
  *h_n = hn; hn = NULL;
  if (c_n) { *c_n = cn; cn = NULL; }
  if (ws_out) { *ws_out = ws; ws = NULL; }
  if (lens_out) { *lens_out = lens; lens = NULL; }
done:
  nn_release(EM_RNN_NOPS, d);
  {
    em_tensor *rel[5] = {lens, y, hn, cn, ws};
    nn_release(5, rel);
  }
  return st;
}

/* The time loop composed from ops (ops/rnn_math.c), recorded by autograd
** step by step: a device without the fused loop, or em_nn_force_math. */
static em_status rnn_composed(em_rnn_mode mode, const em_tensor *const *in,
                              const em_tensor *lengths, int reverse, em_tensor **out,
                              em_tensor **h_n, em_tensor **c_n) {
  const char *op = rnn_op_name(mode);
  em_rnn_geo g;
  em_tensor *lens = NULL, *cn = NULL;
  em_status st = rnn_geo(op, mode, in, lengths, reverse, &g, &lens);
  if (st != EM_OK) return st;
  st = em_rnn_math(&g, in, lens, out, h_n, mode == EM_RNN_LSTM ? &cn : NULL);
  if (lens) em_tensor_release(lens);
  nn_hand(cn, c_n);
  return st;
}

em_status em_rnn_layer(em_rnn_mode mode, const em_tensor *const *in, const em_tensor *lengths,
                       int reverse, em_tensor **out, em_tensor **h_n, em_tensor **c_n) {
  if (in[EM_RNN_X]) {
    const em_nn_kernels *k;
    em_status st = nn_kernels(rnn_op_name(mode), in[EM_RNN_X], &k);
    if (st != EM_OK) return st;
    if (em_nn_forced_math() || !k->rnn_forward || !k->rnn_backward)
      return rnn_composed(mode, in, lengths, reverse, out, h_n, c_n);
  }
  int on = em_ag_pause();
  em_tensor *ws = NULL, *lens = NULL, *cn = NULL;
  int lstm = mode == EM_RNN_LSTM;
  em_status st = rnn_run(mode, in, lengths, reverse, out, h_n, lstm ? &cn : NULL, &ws, &lens);
  em_ag_resume(on);
  if (st == EM_OK && on && em_ag_any(EM_RNN_NOPS, in)) {
    em_ag_params p;
    memset(&p, 0, sizeof p);
    p.op = EM_AG_NN_RNN;
    p.name = mode == EM_RNN_LSTM ? "LstmLayerBackward0"
           : mode == EM_RNN_GRU ? "GruLayerBackward0" : "RnnLayerBackward0";
    p.i[0] = mode;
    p.i[1] = reverse != 0;
    p.save_in = (1 << EM_RNN_NOPS) - 1;
    p.extra = lens;
    p.more[0] = ws;
    em_tensor *outs[3] = {*out, *h_n, cn};
    st = em_ag_record(EM_AG_NN, EM_RNN_NOPS, in, lstm ? 3 : 2, outs, &p);
    if (st != EM_OK) {
      em_tensor_release(*out);
      em_tensor_release(*h_n);
      *out = *h_n = NULL;
      if (cn) em_tensor_release(cn);
      cn = NULL;
    }
  }
  if (ws) em_tensor_release(ws);
  if (lens) em_tensor_release(lens);
  nn_hand(cn, c_n);
  return st;
}

em_status em_rnn_layer_backward(em_rnn_mode mode, const em_tensor *const *in,
                                const em_tensor *lengths, int reverse,
                                const em_tensor *workspace, const em_tensor *grad_out,
                                const em_tensor *grad_hn, const em_tensor *grad_cn, int want,
                                em_tensor **grads) {
  const char *op = mode == EM_RNN_LSTM ? "lstm_backward"
                 : mode == EM_RNN_GRU ? "gru_backward" : "rnn_backward";
  em_status st = nn_not_twice(op, grad_out, grad_hn, grad_cn);
  if (st != EM_OK) return st;
  em_rnn_geo g;
  em_tensor *lens = NULL, *d[EM_RNN_NOPS] = {0}, *gd[EM_RNN_NOPS] = {0};
  em_tensor *go = NULL, *gh = NULL, *gc = NULL, *w = NULL;
  const em_nn_kernels *k;
  if (!in[EM_RNN_X] || !workspace)
    return em_fail(EM_E_VALUE, "%s: input and workspace are required", op);
  if ((st = nn_kernels(op, in[EM_RNN_X], &k)) != EM_OK) return st;
  if (!k->rnn_backward) { /* its forward was composed: autograd's backward */
    char d[32];
    return em_fail(EM_E_RUNTIME, EM_MSG_DEVICE_UNSUPPORTED, op,
                   em_device_str(in[EM_RNN_X]->storage->device, d, sizeof d));
  }
  if ((st = rnn_geo(op, mode, in, lengths, reverse, &g, &lens)) != EM_OK) return st;
  const em_tensor *x = in[EM_RNN_X];
  em_dtype dt = x->dtype;
  int64_t ys[3] = {g.L, g.N, g.P}, hs[2] = {g.N, g.P}, cs[2] = {g.N, g.H};
  const em_tensor *gv[3] = {grad_out, grad_hn, grad_cn};
  const int64_t *gsz[3] = {ys, hs, cs};
  const char *gw[3] = {"grad_output", "grad_hn", "grad_cn"};
  em_tensor **gdst[3] = {&go, &gh, &gc};
  em_rnn_args a;
  em_rnn_grads gr;
  if ((st = nn_check_same(op, "workspace", x, workspace)) != EM_OK) goto done;
  if (em_tensor_numel(workspace) != em_rnn_ws_size(&g)) {
    st = em_fail(EM_E_VALUE, "%s: the workspace has %lld elements, expected %lld (the "
                 "forward's)", op, (long long)em_tensor_numel(workspace),
                 (long long)em_rnn_ws_size(&g));
    goto done;
  }
  if (grad_cn && mode != EM_RNN_LSTM) {
    st = em_fail(EM_E_VALUE, "%s: grad_cn is an LSTM's only", op);
    goto done;
  }
  for (int j = 0; j < 3; j++) {
    if (!gv[j]) continue;
    if ((st = nn_check_same(op, gw[j], x, gv[j])) != EM_OK) goto done;
    int nd = j ? 2 : 3;
    if (gv[j]->ndim != nd || memcmp(gv[j]->sizes, gsz[j], sizeof(int64_t) * (size_t)nd) != 0) {
      char s1[EM_SHAPE_BUF], s2[EM_SHAPE_BUF];
      st = em_fail(EM_E_VALUE, "%s: expected %s of shape %s, got %s", op, gw[j],
                   em_fmt_shape(s1, sizeof s1, nd, gsz[j]),
                   em_fmt_shape(s2, sizeof s2, gv[j]->ndim, gv[j]->sizes));
      goto done;
    }
    if ((st = nn_dense(gv[j], dt, gdst[j])) != EM_OK) goto done;
  }
  if ((st = nn_dense(workspace, dt, &w)) != EM_OK) goto done;
  if ((st = rnn_dense(in, d, &a)) != EM_OK) goto done;
  for (int i = 0; i < EM_RNN_NOPS; i++) {
    if (!in[i] || !(want >> i & 1)) continue;
    if ((st = nn_new(x, in[i]->ndim, in[i]->sizes, dt, 1, &gd[i])) != EM_OK) goto done;
  }
  gr.x = gd[EM_RNN_X]; gr.h0 = gd[EM_RNN_H0]; gr.c0 = gd[EM_RNN_C0];
  gr.w_ih = gd[EM_RNN_W_IH]; gr.w_hh = gd[EM_RNN_W_HH]; gr.b_ih = gd[EM_RNN_B_IH];
  gr.b_hh = gd[EM_RNN_B_HH]; gr.w_hr = gd[EM_RNN_W_HR];
  if ((st = k->rnn_backward(op, &g, &a, w, go, gh, gc, &gr)) != EM_OK) goto done;
  for (int i = 0; i < EM_RNN_NOPS; i++) {
    if (!(want >> i & 1)) continue;
    grads[i] = gd[i];
    gd[i] = NULL;
  }
done:
  nn_release(EM_RNN_NOPS, d);
  nn_release(EM_RNN_NOPS, gd);
  {
    em_tensor *rel[5] = {lens, go, gh, gc, w};
    nn_release(5, rel);
  }
  return st;
}
