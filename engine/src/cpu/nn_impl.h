/*
** nn_impl.h -- helpers shared by conv.c and nn.c: the floating dtypes the
** nn kernels are generated for, and argument preparation (checks that name
** the op, dense copies in one dtype).
*/
#ifndef EMBER_NN_IMPL_H
#define EMBER_NN_IMPL_H

#include "core/core.h"

#include <math.h>
#include <stdlib.h>

/* The dtypes every nn kernel is generated for: X(SUFFIX, ENUM, C_TYPE). */
#define EM_FOR_EACH_NN_DTYPE(X) \
  X(f32, EM_FLOAT32, float)     \
  X(f64, EM_FLOAT64, double)

static inline em_status nn_check_float(const char *op, const char *what, const em_tensor *t) {
  if (t->storage->device.type != EM_CPU)
    return em_fail(EM_E_RUNTIME, "%s: only CPU tensors are supported", op);
  if (t->dtype != EM_FLOAT32 && t->dtype != EM_FLOAT64)
    return em_fail(EM_E_TYPE, "%s: expected %s of dtype float32 or float64, got %s", op, what,
                   em_dtype_name(t->dtype));
  return EM_OK;
}

/* Both float and the same dtype. */
static inline em_status nn_check_same(const char *op, const char *what, const em_tensor *a,
                                      const em_tensor *t) {
  em_status st = nn_check_float(op, what, t);
  if (st != EM_OK) return st;
  if (t->dtype != a->dtype)
    return em_fail(EM_E_TYPE, "%s: expected %s to have dtype %s (the input's), got %s", op,
                   what, em_dtype_name(a->dtype), em_dtype_name(t->dtype));
  return EM_OK;
}

/* A dense row-major tensor with t's values in dtype dt (a new reference;
** t itself when it already is one). */
static inline em_status nn_dense(const em_tensor *t, em_dtype dt, em_tensor **out) {
  if (t->dtype == dt) return em_contiguous(t, out);
  em_tensor *c;
  em_status st = em_to(t, dt, em_cpu(), 0, &c);  /* keeps t's layout */
  if (st != EM_OK) return st;
  st = em_contiguous(c, out);
  em_tensor_release(c);
  return st;
}

/* Releases up to n tensors (NULL entries skipped). */
static inline void nn_release(int n, em_tensor **ts) {
  for (int i = 0; i < n; i++)
    if (ts[i]) em_tensor_release(ts[i]);
}

static inline em_status nn_new(int ndim, const int64_t *sizes, em_dtype dt, int zero,
                               em_tensor **out) {
  return zero ? em_zeros(ndim, sizes, dt, em_cpu(), out) : em_empty(ndim, sizes, dt, em_cpu(), out);
}

#endif
