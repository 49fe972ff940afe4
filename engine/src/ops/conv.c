/*
** ops/conv.c -- conv2d and conv1d with their three backward ops: the
** public ops over the nn family of the kernel table (core/kern_nn.h,
** em_nn_kernels.conv2d; cpu/conv.c has the CPU's im2col + GEMM).
**
** What holds:
** - float32/float64 only; input, weight and bias share one dtype and one
**   device. Inputs of any layout are read through a dense copy; results
**   are new contiguous tensors on the input's device.
** - Autograd: em_conv2d / em_conv1d record one ConvolutionBackward0 node
**   (saving input and weight) when grad mode is on and an input requires
**   grad; the backward ops record ConvolutionBackwardBackward0 nodes the
**   same way (they run in grad mode only when a backward is itself
**   recorded, create_graph), so convolution is differentiable to any
**   order. The formulas are in autograd/formulas.c.
** - backward_bias sums grad_out over N, oH, oW (em_reduce).
*/
#include "ops/nn_ops.h"
#include "ops/autocast.h"

#include <limits.h>

/* nd: the op's spatial dims as the user sees them (conv1d runs as a conv2d
** over a unit width: its messages show the 3-d shapes and one size) */
static em_status conv_geometry(const char *op, int nd, const int64_t *in, const int64_t *w,
                               const int64_t stride[2], const int64_t padding[2],
                               const int64_t dilation[2], int64_t groups, em_conv2d_geo *g) {
  for (int i = 0; i < 2; i++) {
    if (stride[i] < 1)
      return em_fail(EM_E_VALUE, "%s: stride should be positive, got %lld", op, (long long)stride[i]);
    if (padding[i] < 0)
      return em_fail(EM_E_VALUE, "%s: negative padding is not supported, got %lld", op,
                     (long long)padding[i]);
    if (dilation[i] < 1)
      return em_fail(EM_E_VALUE, "%s: dilation should be positive, got %lld", op,
                     (long long)dilation[i]);
    g->s[i] = stride[i];
    g->p[i] = padding[i];
    g->d[i] = dilation[i];
  }
  if (groups < 1) return em_fail(EM_E_VALUE, "%s: groups must be positive, got %lld", op, (long long)groups);
  g->N = in[0]; g->C = in[1]; g->H = in[2]; g->W = in[3];
  g->O = w[0]; g->Cg = w[1]; g->kH = w[2]; g->kW = w[3];
  g->groups = groups;
  if (g->O < groups) { /* PyTorch refuses 0 out channels, whatever the groups */
    char ws[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: Given groups=%lld, expected weight to be at least %lld at dimension 1, "
                   "but got weight of size %s instead", op, (long long)groups, (long long)groups,
                   em_fmt_shape(ws, sizeof ws, nd + 2, w));
  }
  if (g->O % groups != 0) {
    char ws[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: Given groups=%lld, expected weight to be divisible by %lld at dimension 0, "
                   "but got weight of size %s instead", op, (long long)groups, (long long)groups,
                   em_fmt_shape(ws, sizeof ws, nd + 2, w));
  }
  if (g->Cg * groups != g->C) {
    char ws[EM_SHAPE_BUF], is[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE,
                   "%s: Given groups=%lld, weight of size %s, expected input%s to have %lld "
                   "channels, but got %lld channels instead", op, (long long)groups,
                   em_fmt_shape(ws, sizeof ws, nd + 2, w), em_fmt_shape(is, sizeof is, nd + 2, in),
                   (long long)(g->Cg * groups), (long long)g->C);
  }
  int64_t eh = g->d[0] * (g->kH - 1) + 1, ew = g->d[1] * (g->kW - 1) + 1;
  int64_t ph = g->H + 2 * g->p[0], pw = g->W + 2 * g->p[1];
  if (g->kH < 1 || g->kW < 1 || ph < eh || pw < ew) {
    if (nd == 1)
      return em_fail(EM_E_VALUE,
                     "%s: kernel size (%lld) (dilated) can't be greater than the padded input size (%lld)",
                     op, (long long)eh, (long long)ph);
    return em_fail(EM_E_VALUE,
                   "%s: kernel size (%lld x %lld) (dilated) can't be greater than the padded "
                   "input size (%lld x %lld)", op, (long long)eh, (long long)ew,
                   (long long)ph, (long long)pw);
  }
  g->oH = (ph - eh) / g->s[0] + 1;
  g->oW = (pw - ew) / g->s[1] + 1;
  g->Og = g->O / groups;
  g->K = g->Cg * g->kH * g->kW;
  g->L = g->oH * g->oW;
  if (g->K > INT_MAX || g->L > INT_MAX || g->Og > INT_MAX)
    return em_fail(EM_E_VALUE, "%s: sizes too large for one GEMM", op);
  return EM_OK;
}

static em_status check4(const char *op, const char *what, const em_tensor *t) {
  if (t->ndim != 4)
    return em_fail(EM_E_VALUE, "%s: expected %s to be 4-d, got %d-d", op, what, t->ndim);
  return EM_OK;
}

static em_status check_go(const char *op, const em_tensor *go, const em_conv2d_geo *g) {
  if (go->ndim != 4 || go->sizes[0] != g->N || go->sizes[1] != g->O || go->sizes[2] != g->oH ||
      go->sizes[3] != g->oW) {
    char a[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: expected grad_output of shape [%lld, %lld, %lld, %lld], got %s",
                   op, (long long)g->N, (long long)g->O, (long long)g->oH, (long long)g->oW,
                   em_fmt_shape(a, sizeof a, go->ndim, go->sizes));
  }
  return EM_OK;
}

/* -- the one driver of the three passes ---------------------------------- */

/* em_conv_pass says what a, b and the result (out_sizes) are. Runs with
** grad mode paused. */
static em_status conv_run(const em_nn_kernels *k, em_conv_pass pass, const char *op,
                          const em_tensor *a, const em_tensor *b, const em_tensor *bias,
                          const em_conv2d_geo *g, const int64_t *out_sizes, em_tensor **out) {
  em_dtype dt = a->dtype;
  em_tensor *ad = NULL, *bd = NULL, *biasd = NULL, *res = NULL;
  em_status st;
  if ((st = nn_dense(a, dt, &ad)) != EM_OK) goto done;
  if ((st = nn_dense(b, dt, &bd)) != EM_OK) goto done;
  if (bias && (st = nn_dense(bias, dt, &biasd)) != EM_OK) goto done;
  if ((st = nn_new(a, 4, out_sizes, dt, pass != EM_CONV_FORWARD, &res)) != EM_OK) goto done;
  if ((st = k->conv2d(op, pass, ad, bd, biasd, res, g)) != EM_OK) goto done;
  *out = res;
  res = NULL;
done:;
  em_tensor *rel[4] = {ad, bd, biasd, res};
  nn_release(4, rel);
  return st;
}

/* -- autograd ---------------------------------------------------------------- */

/* The node's parameters: list = stride, padding, dilation (pairs), groups;
** i[0]: the op is conv1d (its tensors lack the unit width dim). */
static void conv_params(em_ag_params *p, const int64_t s[2], const int64_t pd[2],
                        const int64_t d[2], int64_t groups, int is1d) {
  memset(p, 0, sizeof *p);
  p->nlist = 7;
  int64_t l[7] = {s[0], s[1], pd[0], pd[1], d[0], d[1], groups};
  memcpy(p->list, l, sizeof l);
  p->i[0] = is1d;
  p->save_in = 3;
}

/* -- forward ----------------------------------------------------------------- */

static em_status conv2d_checked(const char *op, int nd, const em_tensor *input, const em_tensor *weight,
                                const em_tensor *bias, const int64_t stride[2],
                                const int64_t padding[2], const int64_t dilation[2],
                                int64_t groups, em_tensor **out) {
  const em_nn_kernels *k;
  em_status st;
  if ((st = nn_kernels(op, input, &k)) != EM_OK) return st;
  if ((st = nn_check_float(op, "input", input)) != EM_OK) return st;
  if ((st = nn_check_same(op, "weight", input, weight)) != EM_OK) return st;
  if (bias && (st = nn_check_same(op, "bias", input, bias)) != EM_OK) return st;
  if ((st = check4(op, "input", input)) != EM_OK) return st;
  if ((st = check4(op, "weight", weight)) != EM_OK) return st;
  em_conv2d_geo g;
  if ((st = conv_geometry(op, nd, input->sizes, weight->sizes, stride, padding, dilation, groups,
                          &g)) != EM_OK)
    return st;
  if (bias && (bias->ndim != 1 || bias->sizes[0] != g.O)) {
    char ws[EM_SHAPE_BUF], bs[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: Given weight of size %s, expected bias to be 1-dimensional with %lld "
                   "elements, but got bias of size %s instead", op,
                   em_fmt_shape(ws, sizeof ws, nd + 2, weight->sizes), (long long)g.O,
                   em_fmt_shape(bs, sizeof bs, bias->ndim, bias->sizes));
  }
  int64_t osz[4] = {g.N, g.O, g.oH, g.oW};
  return conv_run(k, EM_CONV_FORWARD, op, input, weight, bias, &g, osz, out);
}

em_status em_conv2d(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                    const int64_t stride[2], const int64_t padding[2],
                    const int64_t dilation[2], int64_t groups, em_tensor **out) {
  const em_tensor *ac[3] = {input, weight, bias};
  EM_AUTOCAST(EM_AC_CONV, 3, ac, em_conv2d(ac[0], ac[1], ac[2], stride, padding, dilation, groups, out));
  EM_HALF_VIA_F32(3, ac, em_conv2d(ac[0], ac[1], ac[2], stride, padding, dilation, groups, out), out);
  int on = em_ag_pause();
  em_status st = conv2d_checked("conv2d", 2, input, weight, bias, stride, padding, dilation,
                                groups, out);
  em_ag_resume(on);
  em_ag_params p;
  conv_params(&p, stride, padding, dilation, groups, 0);
  const em_tensor *in[3] = {input, weight, bias};
  return nn_record(on, st, 3, in, out, &p, EM_AG_NN_CONV, "ConvolutionBackward0");
}

em_status em_conv1d(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                    int64_t stride, int64_t padding, int64_t dilation, int64_t groups,
                    em_tensor **out) {
  const char *op = "conv1d";
  const em_tensor *ac[3] = {input, weight, bias};
  EM_AUTOCAST(EM_AC_CONV, 3, ac, em_conv1d(ac[0], ac[1], ac[2], stride, padding, dilation, groups, out));
  EM_HALF_VIA_F32(3, ac, em_conv1d(ac[0], ac[1], ac[2], stride, padding, dilation, groups, out), out);
  if (input->ndim != 3)
    return em_fail(EM_E_VALUE, "%s: expected input to be 3-d, got %d-d", op, input->ndim);
  if (weight->ndim != 3)
    return em_fail(EM_E_VALUE, "%s: expected weight to be 3-d, got %d-d", op, weight->ndim);
  if (groups >= 1 && weight->sizes[0] < groups) { /* conv_geometry's check, with the 3-d shape */
    char ws[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: Given groups=%lld, expected weight to be at least %lld at dimension 1, "
                   "but got weight of size %s instead", op, (long long)groups, (long long)groups,
                   em_fmt_shape(ws, sizeof ws, 3, weight->sizes));
  }
  int on = em_ag_pause();
  em_tensor *x4 = NULL, *w4 = NULL, *o4 = NULL;
  em_status st = em_unsqueeze(input, 4, &x4); /* [N, C, L, 1] */
  if (st == EM_OK) st = em_unsqueeze(weight, 4, &w4);
  int64_t s[2] = {stride, 1}, p[2] = {padding, 0}, d[2] = {dilation, 1};
  if (st == EM_OK) st = conv2d_checked(op, 1, x4, w4, bias, s, p, d, groups, &o4);
  if (st == EM_OK) {
    int64_t sz[3] = {o4->sizes[0], o4->sizes[1], o4->sizes[2]};
    st = em_view(o4, 3, sz, out);
  }
  em_ag_resume(on);
  em_tensor *rel[3] = {x4, w4, o4};
  nn_release(3, rel);
  em_ag_params pr;
  conv_params(&pr, s, p, d, groups, 1);
  const em_tensor *in[3] = {input, weight, bias};
  return nn_record(on, st, 3, in, out, &pr, EM_AG_NN_CONV, "ConvolutionBackward0");
}

/* -- backward ---------------------------------------------------------------- */

/* The input (BACKWARD_INPUT: t is the weight, sizes the input's) or weight
** (BACKWARD_WEIGHT: t is the input, sizes the weight's) gradient, recorded
** as a ConvolutionBackwardBackward0 node over (grad_out, t). */
static em_status conv_backward(em_conv_pass pass, const em_tensor *grad_out, const em_tensor *t,
                               const int64_t sizes[4], const int64_t stride[2],
                               const int64_t padding[2], const int64_t dilation[2],
                               int64_t groups, em_tensor **res) {
  int in_pass = pass == EM_CONV_BACKWARD_INPUT;
  const char *op = in_pass ? "conv2d_backward_input" : "conv2d_backward_weight";
  const char *what = in_pass ? "weight" : "input";
  const em_nn_kernels *k;
  em_status st;
  if ((st = nn_kernels(op, grad_out, &k)) != EM_OK) return st;
  if ((st = nn_check_float(op, "grad_output", grad_out)) != EM_OK) return st;
  if ((st = nn_check_same(op, what, grad_out, t)) != EM_OK) return st;
  if ((st = check4(op, what, t)) != EM_OK) return st;
  em_conv2d_geo g;
  if ((st = conv_geometry(op, 2, in_pass ? sizes : t->sizes, in_pass ? t->sizes : sizes, stride,
                          padding, dilation, groups, &g)) != EM_OK)
    return st;
  if ((st = check_go(op, grad_out, &g)) != EM_OK) return st;
  int on = em_ag_pause();
  st = conv_run(k, pass, op, grad_out, t, NULL, &g, sizes, res);
  em_ag_resume(on);
  em_ag_params p;
  conv_params(&p, stride, padding, dilation, groups, 0);
  const em_tensor *in[2] = {grad_out, t};
  return nn_record(on, st, 2, in, res, &p,
                   in_pass ? EM_AG_NN_CONV_BWD_INPUT : EM_AG_NN_CONV_BWD_WEIGHT,
                   "ConvolutionBackwardBackward0");
}

em_status em_conv2d_backward_input(const em_tensor *grad_out, const em_tensor *weight,
                                   const int64_t input_sizes[4], const int64_t stride[2],
                                   const int64_t padding[2], const int64_t dilation[2],
                                   int64_t groups, em_tensor **grad_input) {
  /* conv_transpose's op: half types in float32, rounded once, as conv2d */
  const em_tensor *ac[2] = {grad_out, weight};
  EM_HALF_VIA_F32(2, ac, em_conv2d_backward_input(ac[0], ac[1], input_sizes, stride, padding, dilation,
                                                  groups, grad_input), grad_input);
  return conv_backward(EM_CONV_BACKWARD_INPUT, grad_out, weight, input_sizes, stride, padding,
                       dilation, groups, grad_input);
}

em_status em_conv2d_backward_weight(const em_tensor *grad_out, const em_tensor *input,
                                    const int64_t weight_sizes[4], const int64_t stride[2],
                                    const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups, em_tensor **grad_weight) {
  return conv_backward(EM_CONV_BACKWARD_WEIGHT, grad_out, input, weight_sizes, stride, padding,
                       dilation, groups, grad_weight);
}

/* A sum (em_reduce), recorded like any reduction. */
em_status em_conv2d_backward_bias(const em_tensor *grad_out, em_tensor **grad_bias) {
  const char *op = "conv2d_backward_bias";
  em_status st;
  if ((st = nn_check_float(op, "grad_output", grad_out)) != EM_OK) return st;
  if ((st = check4(op, "grad_output", grad_out)) != EM_OK) return st;
  int64_t dims[3] = {1, 3, 4};
  return em_reduce(EM_REDUCE_SUM, grad_out, 3, dims, 0, -1, grad_bias);
}
