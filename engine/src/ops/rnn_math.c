/*
** ops/rnn_math.c -- one layer and direction of a recurrent net composed from
** the device's other ops, for a device whose nn table has no fused time
** loop (rnn_forward NULL: cuda today): each step's matmul, gates and state
** update are ops, recorded by autograd as they run, so the gradient is
** autograd's backward through time (no fused node, no workspace).
**
** The formulas are PyTorch's (and cpu/rnn_body.h's): xw = x W_ih^T + b_ih
** once for all steps; per step hw = h W_hh^T + b_hh and
**   RNN   h' = tanh|relu(xw_t + hw)
**   LSTM  i, f, g, o = sigma, sigma, tanh, sigma of (xw_t + hw) in four
**         chunks; c' = f c + i g; h' = o tanh(c') (then h' W_hr^T with a
**         projection)
**   GRU   r = sigma(xr + hr), z = sigma(xz + hz), n = tanh(xn + r hn),
**         h' = (1 - z) n + z h
** reverse runs t = L .. 1. With lengths (host int64 counts), sequence n is
** active at step t when t <= lengths[n]: an inactive step keeps its state
** and outputs 0 (a reverse sequence starts at its own last step).
** tests/lua/rnn_math_spec.lua runs rnn_spec's cases with this path forced
** on the CPU (em_nn_force_math).
*/
#include "ops/nn_ops.h"

#include <stdlib.h>

/* *t = op(*t), the old *t released */
static em_status act(em_tensor **t, em_ew_op op) {
  em_tensor *r = NULL;
  em_status st = em_unary(op, *t, &r);
  if (st == EM_OK) {
    em_tensor_release(*t);
    *t = r;
  }
  return st;
}
/* a @ b^T (+ bias) */
static em_status linear(const em_tensor *a, const em_tensor *w, const em_tensor *b,
                        em_tensor **out) {
  em_tensor *wt = NULL;
  em_status st = em_t(w, &wt);
  if (st == EM_OK) st = em_matmul(a, wt, out);
  if (st == EM_OK && b) st = nn_update(out, EM_OP_ADD, b);
  nn_drop(&wt);
  return st;
}
/* chunk j (0-based) of H columns of the (N, G H) gates */
static em_status chunk(const em_tensor *gates, int64_t j, int64_t H, em_tensor **out) {
  return em_narrow(gates, 2, 1 + j * H, H, out);
}

/* Gate j's pre-activation of a GRU, xt's chunk plus hw's. */
static em_status sum_gate(const em_tensor *xt, const em_tensor *hw, int64_t j, int64_t H,
                          em_tensor **out) {
  em_tensor *x = NULL, *h = NULL;
  em_status st;
  NN_TRY(chunk(xt, j, H, &x));
  NN_TRY(chunk(hw, j, H, &h));
  st = em_binary(EM_OP_ADD, x, h, out);
done:
  nn_drop(&x);
  nn_drop(&h);
  return st;
}

/* One step: h', c' from the step's input projection xt and the state. */
static em_status step(const em_rnn_geo *g, const em_tensor *const *in, const em_tensor *xt,
                      const em_tensor *h, const em_tensor *c, em_tensor **hn, em_tensor **cn) {
  em_tensor *hw = NULL, *pre = NULL, *i = NULL, *f = NULL, *gg = NULL, *o = NULL, *x2 = NULL,
            *h2 = NULL, *r = NULL, *z = NULL, *nn = NULL, *omz = NULL, *tc = NULL;
  em_status st;
  const int64_t H = g->H;
  NN_TRY(linear(h, in[EM_RNN_W_HH], in[EM_RNN_B_HH], &hw));
  if (g->mode == EM_RNN_TANH || g->mode == EM_RNN_RELU) {
    NN_TRY(em_binary(EM_OP_ADD, xt, hw, &pre));
    NN_TRY(act(&pre, g->mode == EM_RNN_TANH ? EM_OP_TANH : EM_OP_RELU));
    *hn = pre;
    pre = NULL;
  } else if (g->mode == EM_RNN_LSTM) {
    NN_TRY(em_binary(EM_OP_ADD, xt, hw, &pre));
    em_tensor **gates[4] = {&i, &f, &gg, &o}; /* PyTorch's order: i f g o */
    for (int j = 0; j < 4; j++) {
      NN_TRY(chunk(pre, j, H, gates[j]));
      NN_TRY(act(gates[j], j == 2 ? EM_OP_TANH : EM_OP_SIGMOID));
    }
    NN_TRY(nn_update(&f, EM_OP_MUL, c));  /* f c */
    NN_TRY(nn_update(&i, EM_OP_MUL, gg)); /* i g */
    NN_TRY(em_binary(EM_OP_ADD, f, i, cn));
    NN_TRY(em_unary(EM_OP_TANH, *cn, &tc));
    NN_TRY(em_binary(EM_OP_MUL, o, tc, hn));
    if (in[EM_RNN_W_HR]) {
      em_tensor *p = NULL;
      NN_TRY(linear(*hn, in[EM_RNN_W_HR], NULL, &p));
      em_tensor_release(*hn);
      *hn = p;
    }
  } else { /* GRU: r z n */
    NN_TRY(sum_gate(xt, hw, 0, H, &r));
    NN_TRY(act(&r, EM_OP_SIGMOID));
    NN_TRY(sum_gate(xt, hw, 1, H, &z));
    NN_TRY(act(&z, EM_OP_SIGMOID));
    NN_TRY(chunk(xt, 2, H, &x2));
    NN_TRY(chunk(hw, 2, H, &h2));
    NN_TRY(nn_update(&h2, EM_OP_MUL, r)); /* r (W_hn h + b_hn) */
    NN_TRY(em_binary(EM_OP_ADD, x2, h2, &nn));
    NN_TRY(act(&nn, EM_OP_TANH));
    em_operand one_minus[2] = {{NULL, {EM_SCALAR_INT, 1, 0}}, {z, {EM_SCALAR_INT, 0, 0}}};
    NN_TRY(em_elementwise(EM_OP_SUB, 2, one_minus, NULL, NULL, &omz));
    NN_TRY(nn_update(&omz, EM_OP_MUL, nn)); /* (1 - z) n */
    NN_TRY(nn_update(&z, EM_OP_MUL, h));    /* z h */
    NN_TRY(em_binary(EM_OP_ADD, omz, z, hn));
  }
done:
  nn_drop(&hw);
  nn_drop(&pre);
  nn_drop(&i);
  nn_drop(&f);
  nn_drop(&gg);
  nn_drop(&o);
  nn_drop(&x2);
  nn_drop(&h2);
  nn_drop(&r);
  nn_drop(&z);
  nn_drop(&nn);
  nn_drop(&omz);
  nn_drop(&tc);
  return st;
}

/* where(active, a, b) into *t (the old *t released) */
static em_status keep_where(const em_tensor *active, em_tensor **t, const em_tensor *b) {
  em_tensor *r = NULL;
  em_status st = em_where(active, *t, b, (*t)->dtype, &r);
  if (st == EM_OK) {
    em_tensor_release(*t);
    *t = r;
  }
  return st;
}

em_status em_rnn_math(const em_rnn_geo *g, const em_tensor *const *in, const em_tensor *lens,
                      em_tensor **out, em_tensor **h_n, em_tensor **c_n) {
  const em_tensor *x = in[EM_RNN_X];
  em_device dev = x->storage->device;
  em_dtype dt = x->dtype;
  const int lstm = g->mode == EM_RNN_LSTM;
  em_tensor *h = NULL, *c = NULL, *xw = NULL, *ld = NULL, *zero = NULL, *xt = NULL,
            *hn = NULL, *cn = NULL, *ot = NULL, *a1 = NULL, *active = NULL;
  em_tensor **outs = calloc((size_t)(g->L > 0 ? g->L : 1), sizeof *outs);
  em_status st = EM_OK;
  if (!outs) return em_fail(EM_E_NOMEM, "%s: out of memory for %lld steps", "rnn",
                            (long long)g->L);
  int64_t hs[2] = {g->N, g->P}, cs[2] = {g->N, g->H};
  if (in[EM_RNN_H0]) {
    h = (em_tensor *)in[EM_RNN_H0];
    em_tensor_retain(h);
  } else {
    NN_TRY(em_zeros(2, hs, dt, dev, &h));
  }
  if (lstm) {
    if (in[EM_RNN_C0]) {
      c = (em_tensor *)in[EM_RNN_C0];
      em_tensor_retain(c);
    } else {
      NN_TRY(em_zeros(2, cs, dt, dev, &c));
    }
  }
  NN_TRY(linear(x, in[EM_RNN_W_IH], in[EM_RNN_B_IH], &xw)); /* (L, N, G H) */
  if (lens) {
    NN_TRY(em_to(lens, EM_INT64, dev, 0, &ld));
    NN_TRY(em_zeros(0, NULL, dt, dev, &zero));
  }
  for (int64_t s = 0; s < g->L; s++) {
    const int64_t t = g->reverse ? g->L - 1 - s : s; /* 0-based */
    NN_TRY(em_select(xw, 1, t + 1, &xt));
    NN_TRY(step(g, in, xt, h, c, &hn, lstm ? &cn : NULL));
    nn_drop(&xt);
    if (ld) { /* active: t < lengths[n], as (N, 1) */
      em_operand cmp[2] = {{ld, {EM_SCALAR_INT, 0, 0}}, {NULL, {EM_SCALAR_INT, t, 0}}};
      NN_TRY(em_elementwise(EM_OP_GT, 2, cmp, NULL, NULL, &a1));
      NN_TRY(em_unsqueeze(a1, 2, &active));
      nn_drop(&a1);
      NN_TRY(em_where(active, hn, zero, dt, &ot));
      NN_TRY(keep_where(active, &hn, h));
      if (lstm) NN_TRY(keep_where(active, &cn, c));
      nn_drop(&active);
    } else {
      ot = hn;
      em_tensor_retain(ot);
    }
    outs[t] = ot;
    ot = NULL;
    em_tensor_release(h);
    h = hn;
    hn = NULL;
    if (lstm) {
      em_tensor_release(c);
      c = cn;
      cn = NULL;
    }
  }
  if (g->L > 0) {
    NN_TRY(em_stack(g->L, (const em_tensor *const *)outs, 1, out));
  } else {
    int64_t ys[3] = {0, g->N, g->P};
    NN_TRY(em_zeros(3, ys, dt, dev, out));
  }
  *h_n = h;
  h = NULL;
  if (lstm && c_n) {
    *c_n = c;
    c = NULL;
  }
done:
  for (int64_t s = 0; s < g->L; s++) nn_drop(&outs[s]);
  free(outs);
  nn_drop(&h);
  nn_drop(&c);
  nn_drop(&xw);
  nn_drop(&ld);
  nn_drop(&zero);
  nn_drop(&xt);
  nn_drop(&hn);
  nn_drop(&cn);
  nn_drop(&ot);
  nn_drop(&a1);
  nn_drop(&active);
  return st;
}
