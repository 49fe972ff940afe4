/*
** nn_ops.h -- what the nn ops share (ops/conv.c, ops/nn.c, ops/norm.c,
** ops/loss.c): argument checks that name the op, dense copies and new
** tensors on the inputs' device, and the one way an nn op records its
** autograd node. The kernels they call are the nn family of the device's
** table (core/kern_nn.h).
*/
#ifndef EMBER_NN_OPS_H
#define EMBER_NN_OPS_H

#include "core/kern_nn.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"
#include "ops/composed.h"

/* The nn kernels of t's device (the device check of every nn op). */
static inline em_status nn_kernels(const char *op, const em_tensor *t,
                                   const em_nn_kernels **out) {
  const em_kernels *k;
  em_status st = em_kernels_check(op, t->storage->device, &k);
  if (st == EM_OK) *out = k->nn;
  return st;
}

/* t on a's device. */
static inline em_status nn_check_device(const char *op, const em_tensor *a,
                                        const em_tensor *t) {
  return em_same_device_check(op, a->storage->device, t->storage->device);
}

static inline em_status nn_check_float(const char *op, const char *what, const em_tensor *t) {
  if (t->dtype != EM_FLOAT32 && t->dtype != EM_FLOAT64)
    return em_fail(EM_E_TYPE, EM_MSG_EXPECTED_FLOAT, op, what, em_dtype_name(t->dtype));
  return EM_OK;
}

/* On a's device, float and of a's dtype. */
static inline em_status nn_check_same(const char *op, const char *what, const em_tensor *a,
                                      const em_tensor *t) {
  em_status st = nn_check_device(op, a, t);
  if (st == EM_OK) st = nn_check_float(op, what, t);
  if (st != EM_OK) return st;
  if (t->dtype != a->dtype)
    return em_fail(EM_E_TYPE, "%s: expected %s to have dtype %s (the input's), got %s", op,
                   what, em_dtype_name(a->dtype), em_dtype_name(t->dtype));
  return EM_OK;
}

/* torch 1.13 has bfloat16 but no float16 CPU kernels for the pools and
** conv_transpose: float16 on the CPU is refused there (CUDA takes both) */
static inline em_status nn_no_cpu_f16(const char *op, const em_tensor *t) {
  if (t && t->dtype == EM_FLOAT16 && t->storage->device.type == EM_CPU)
    return em_fail(EM_E_TYPE, "%s: float16 input is not supported on the CPU (as torch 1.13); "
                   "bfloat16, float32 and float64 are", op);
  return EM_OK;
}

static inline em_status nn_check_reduction(const char *op, em_reduction r) {
  if (r != EM_REDUCTION_NONE && r != EM_REDUCTION_MEAN && r != EM_REDUCTION_SUM)
    return em_fail(EM_E_VALUE, "%s: invalid reduction %d", op, (int)r);
  return EM_OK;
}

static inline int64_t nn_prod(int n, const int64_t *s) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

/* A dense row-major tensor with t's values in dtype dt, on t's device (a
** new reference; t itself when it already is one). */
static inline em_status nn_dense(const em_tensor *t, em_dtype dt, em_tensor **out) {
  if (t->dtype == dt) return em_contiguous(t, out);
  em_tensor *c;
  em_status st = em_to(t, dt, t->storage->device, 0, &c);  /* keeps t's layout */
  if (st != EM_OK) return st;
  st = em_contiguous(c, out);
  em_tensor_release(c);
  return st;
}

/* A new contiguous tensor on on's device: zeros, or uninitialised (every
** element is written by the kernel). */
static inline em_status nn_new(const em_tensor *on, int ndim, const int64_t *sizes,
                               em_dtype dt, int zero, em_tensor **out) {
  em_device dev = on->storage->device;
  return zero ? em_zeros(ndim, sizes, dt, dev, out) : em_empty(ndim, sizes, dt, dev, out);
}

/* Releases up to n tensors (NULL entries skipped). */
static inline void nn_release(int n, em_tensor **ts) {
  for (int i = 0; i < n; i++)
    if (ts[i]) em_tensor_release(ts[i]);
}

/* The backward kernels that are fused and not themselves recorded: called
** in grad mode on tensors that require grad (a backward being recorded),
** they refuse rather than give a result without history. The engine's own
** formulas use them only outside grad mode. */
static inline em_status nn_not_twice(const char *op, const em_tensor *a, const em_tensor *b,
                                     const em_tensor *c) {
  if (!em_grad_enabled()) return EM_OK;
  if (!((a && a->requires_grad) || (b && b->requires_grad) || (c && c->requires_grad)))
    return EM_OK;
  return em_fail(EM_E_RUNTIME, "%s: this fused backward kernel is not differentiable; "
                 "differentiate the forward op's graph instead (its backward is recorded "
                 "with create_graph)", op);
}

/* An nn node: op, name, over in[0..nin) for *out; on failure *out is
** released. Recorded when grad mode was on (on) and an input requires
** grad. */
static inline em_status nn_record(int on, em_status st, int nin, const em_tensor *const *in,
                                  em_tensor **out, em_ag_params *p, em_ag_nn_op op,
                                  const char *name) {
  if (st != EM_OK || !on || !em_ag_any(nin, in)) return st;
  p->op = op;
  p->name = name;
  st = em_ag_record(EM_AG_NN, nin, in, 1, out, p);
  if (st != EM_OK) {
    em_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* An output the caller may not want: handed out or released (nothing is
** written on failure, when t is NULL). */
static inline void nn_hand(em_tensor *t, em_tensor **to) {
  if (to && t) *to = t;
  else if (t) em_tensor_release(t);
}

/* The nn ops composed from other ops, for a device without the fused
** kernels (or on any device after em_nn_force_math(1), which tests use):
** scaled_dot_product_attention with the fused entries' contract
** (ops/attention_math.c), a recurrent layer's time loop recorded op by op
** (ops/rnn_math.c). */
int em_sdpa_use_math(const em_nn_kernels *kk);
em_status em_sdpa_math(const em_tensor *q, const em_tensor *k, const em_tensor *v,
                       const em_tensor *m, em_tensor *out, em_tensor *lse,
                       const em_sdpa_params *p);
em_status em_sdpa_math_backward(const em_tensor *go, const em_tensor *q, const em_tensor *k,
                                const em_tensor *v, const em_tensor *m, const em_tensor *o,
                                const em_tensor *lse, em_tensor *gq, em_tensor *gk,
                                em_tensor *gv, const em_sdpa_params *p);
em_status em_rnn_math(const em_rnn_geo *g, const em_tensor *const *in, const em_tensor *lens,
                      em_tensor **out, em_tensor **h_n, em_tensor **c_n);

#endif
