/*
** ops/attention_math.c -- scaled_dot_product_attention composed from the
** device's other ops (PyTorch's "math" path), for a device whose nn table
** has no fused kernel (sdpa/sdpa_backward NULL: cuda today): the same
** contract as the fused entries of core/kern_nn.h, so ops/attention.c keeps
** one autograd node whichever runs.
**
** Forward: S = scale Q K^T + mask (-inf above the diagonal when causal),
** lse = logsumexp(S) over the keys, P = exp(S - lse) (NaN on a row whose
** keys are all masked, as the fused kernel's and PyTorch's), dropout keeps
** P[b, i, j] when the uniform the fused kernel reads for (b, i, j) -- the
** sampler's float32 uniforms of the same draw, element (b L + i) S + j --
** is at least ceil(p 2^24) / 2^24, and scales kept ones by 1 / (1 - p);
** out = P V. Backward recomputes P from the saved lse: dV = Pd^T dO,
** dPd = dO V^T, dP = dPd masked and scaled as Pd, D = rowsum(dO * out),
** dS = P (dP - D), dQ = scale dS K, dK = scale dS^T Q.
**
** It holds the (..., L, S) scores, probabilities and (with dropout) the
** uniforms whole: memory the fused CPU kernel never takes. Autograd is
** paused inside; the caller records the node. tests/lua/attention_spec.lua
** runs it on the CPU (em_nn_force_math) against the fused kernel.
*/
#include "ops/nn_ops.h"

#include <math.h>

/* em_nn_force_math: the composed paths on every device (tests) */
static int g_force_math;
void em_nn_force_math(int on) { g_force_math = on != 0; }
int em_nn_forced_math(void) { return g_force_math; }
int em_sdpa_use_math(const em_nn_kernels *kk) {
  return g_force_math || !kk->sdpa || !kk->sdpa_backward;
}

/* *t = op(*t, scalar) (the old one released) */
static em_status scale_by(em_tensor **t, em_ew_op op, double v) {
  em_operand in[2] = {{*t, {EM_SCALAR_INT, 0, 0}}, {NULL, {EM_SCALAR_FLOAT, 0, v}}};
  em_tensor *r = NULL;
  em_status st = em_elementwise(op, 2, in, NULL, NULL, &r);
  if (st == EM_OK) {
    em_tensor_release(*t);
    *t = r;
  }
  return st;
}
/* a @ b with the last two dims of a (ta) and b (tb) swapped first */
static em_status mm(const em_tensor *a, int ta, const em_tensor *b, int tb, em_tensor **out) {
  em_tensor *at = NULL, *bt = NULL;
  em_status st = EM_OK;
  if (ta) NN_TRY(em_transpose(a, -2, -1, &at));
  if (tb) NN_TRY(em_transpose(b, -2, -1, &bt));
  st = em_matmul(at ? at : a, bt ? bt : b, out);
done:
  if (at) em_tensor_release(at);
  if (bt) em_tensor_release(bt);
  return st;
}

/* The masked, scaled scores scale q k^T + mask, causal applied. */
static em_status scores(const em_tensor *q, const em_tensor *k, const em_tensor *m,
                        const em_sdpa_params *p, em_tensor **out) {
  em_tensor *s = NULL, *ii = NULL, *jj = NULL, *iic = NULL, *above = NULL;
  em_status st;
  NN_TRY(mm(q, 0, k, 1, &s));
  NN_TRY(scale_by(&s, EM_OP_MUL, p->scale));
  if (m) NN_TRY(nn_update(&s, EM_OP_ADD, m));
  if (p->causal) {
    em_device dev = q->storage->device;
    em_scalar zero = {EM_SCALAR_INT, 0, 0}, one = {EM_SCALAR_INT, 1, 0};
    em_scalar L = {EM_SCALAR_INT, p->L, 0}, S = {EM_SCALAR_INT, p->S, 0};
    em_scalar ninf = {EM_SCALAR_FLOAT, 0, -INFINITY};
    NN_TRY(em_arange(zero, L, one, EM_INT64, dev, &ii));
    NN_TRY(em_arange(zero, S, one, EM_INT64, dev, &jj));
    NN_TRY(em_unsqueeze(ii, 2, &iic)); /* (L, 1) */
    NN_TRY(em_binary(EM_OP_GT, jj, iic, &above)); /* (L, S): key j after query i */
    NN_TRY(em_masked_fill_(s, above, ninf));
  }
  *out = s;
  s = NULL;
done:
  nn_drop(&s);
  nn_drop(&ii);
  nn_drop(&jj);
  nn_drop(&iic);
  nn_drop(&above);
  return st;
}

/* P = exp(s - lse): NaN on a row whose keys are all masked (lse -inf), as
** the fused kernel and PyTorch give */
static em_status probs(const em_tensor *s, const em_tensor *lse, em_tensor **out) {
  em_tensor *lu = NULL, *d = NULL;
  em_status st;
  NN_TRY(em_unsqueeze(lse, -1, &lu));
  NN_TRY(em_binary(EM_OP_SUB, s, lu, &d));
  NN_TRY(em_unary(EM_OP_EXP, d, out));
done:
  nn_drop(&lu);
  nn_drop(&d);
  return st;
}

/* With dropout, *t times the fused kernel's keep mask, times 1 / (1 - p). */
static em_status dropped(em_tensor **t, const em_sdpa_params *p) {
  if (!(p->dropout_p > 0)) return EM_OK;
  em_tensor *u = NULL, *keep = NULL;
  em_status st;
  NN_TRY(em_empty((*t)->ndim, (*t)->sizes, EM_FLOAT32, (*t)->storage->device, &u));
  NN_TRY(em_uniform_draw_(u, &p->draw));
  const double thr = p->dropout_p >= 1 ? 1.0 : ceil(p->dropout_p * 16777216.0) / 16777216.0;
  em_operand in[2] = {{u, {EM_SCALAR_INT, 0, 0}}, {NULL, {EM_SCALAR_FLOAT, 0, thr}}};
  NN_TRY(em_elementwise(EM_OP_GE, 2, in, NULL, NULL, &keep));
  NN_TRY(nn_update(t, EM_OP_MUL, keep));
  NN_TRY(scale_by(t, EM_OP_MUL, p->dropout_p >= 1 ? 0.0 : 1.0 / (1.0 - p->dropout_p)));
done:
  nn_drop(&u);
  nn_drop(&keep);
  return st;
}

em_status em_sdpa_math(const em_tensor *q, const em_tensor *k, const em_tensor *v,
                       const em_tensor *m, em_tensor *out, em_tensor *lse,
                       const em_sdpa_params *p) {
  int on = em_ag_pause();
  em_tensor *s = NULL, *l = NULL, *pr = NULL, *y = NULL;
  em_status st;
  int64_t last = -1;
  NN_TRY(scores(q, k, m, p, &s));
  NN_TRY(em_logsumexp(s, 1, &last, 0, &l));
  NN_TRY(probs(s, l, &pr));
  nn_drop(&s);
  NN_TRY(dropped(&pr, p));
  NN_TRY(em_matmul(pr, v, &y));
  NN_TRY(em_copy_(out, y));
  NN_TRY(em_copy_(lse, l));
done:
  nn_drop(&s);
  nn_drop(&l);
  nn_drop(&pr);
  nn_drop(&y);
  em_ag_resume(on);
  return st;
}

em_status em_sdpa_math_backward(const em_tensor *go, const em_tensor *q, const em_tensor *k,
                                const em_tensor *v, const em_tensor *m, const em_tensor *o,
                                const em_tensor *lse, em_tensor *gq, em_tensor *gk,
                                em_tensor *gv, const em_sdpa_params *p) {
  int on = em_ag_pause();
  em_tensor *s = NULL, *pr = NULL, *pd = NULL, *dv = NULL, *dp = NULL, *prod = NULL,
            *dd = NULL, *ds = NULL, *dq = NULL, *dk = NULL;
  em_status st;
  int64_t last = -1;
  NN_TRY(scores(q, k, m, p, &s));
  NN_TRY(probs(s, lse, &pr));
  nn_drop(&s);
  pd = pr;
  em_tensor_retain(pd);
  NN_TRY(dropped(&pd, p));
  NN_TRY(mm(pd, 1, go, 0, &dv));
  nn_drop(&pd);
  NN_TRY(mm(go, 0, v, 1, &dp));
  NN_TRY(dropped(&dp, p)); /* the same mask and scale: the same draw */
  NN_TRY(em_binary(EM_OP_MUL, go, o, &prod));
  NN_TRY(em_reduce(EM_REDUCE_SUM, prod, 1, &last, 1, -1, &dd));
  NN_TRY(nn_update(&dp, EM_OP_SUB, dd));
  NN_TRY(em_binary(EM_OP_MUL, pr, dp, &ds));
  NN_TRY(mm(ds, 0, k, 0, &dq));
  NN_TRY(scale_by(&dq, EM_OP_MUL, p->scale));
  NN_TRY(mm(ds, 1, q, 0, &dk));
  NN_TRY(scale_by(&dk, EM_OP_MUL, p->scale));
  NN_TRY(em_copy_(gq, dq));
  NN_TRY(em_copy_(gk, dk));
  NN_TRY(em_copy_(gv, dv));
done:
  nn_drop(&s);
  nn_drop(&pr);
  nn_drop(&pd);
  nn_drop(&dv);
  nn_drop(&dp);
  nn_drop(&prod);
  nn_drop(&dd);
  nn_drop(&ds);
  nn_drop(&dq);
  nn_drop(&dk);
  em_ag_resume(on);
  return st;
}
