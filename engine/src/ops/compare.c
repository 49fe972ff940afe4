/*
** ops/compare.c -- whole-tensor comparisons: equal (same shape and equal
** values), isclose (elementwise, broadcasting) and allclose. The checks,
** the result on the inputs' device; the values are compared by the
** device's reduce kernels (core/kern_reduce.h). NaN equals nothing (in
** isclose, another NaN only with equal_nan).
*/
#include "core/kern_reduce.h"
#include "core/kernels.h"
#include "core/errmsg.h"

/* Both operands on one device with kernels: that device's. */
static em_status same_device(const char *op, const em_tensor *a, const em_tensor *b,
                             const em_kernels **k) {
  em_status st = em_same_device_check(op, a->storage->device, b->storage->device);
  return st == EM_OK ? em_kernels_check(op, a->storage->device, k) : st;
}

em_status em_equal(const em_tensor *a, const em_tensor *b, int *result) {
  const em_kernels *k;
  em_status st = same_device("equal", a, b, &k);
  if (st != EM_OK) return st;
  /* shapes that differ, or no elements, answer without values */
  int eq = a->ndim == b->ndim;
  for (int i = 0; eq && i < a->ndim; i++) eq = a->sizes[i] == b->sizes[i];
  if (eq) {
    em_iter it;
    const em_tensor *ops[2] = {a, b};
    st = em_iter_build(&it, "equal", 2, ops, a->ndim, a->sizes, false);
    if (st == EM_OK && it.numel > 0) st = k->reduce->equal(&it, a->dtype, b->dtype, &eq);
    if (st != EM_OK) return st;
  }
  *result = eq;
  return EM_OK;
}

/* isclose of a and b, both on the device of kernels k */
static em_status isclose_on(const em_kernels *k, const em_tensor *a, const em_tensor *b,
                            double rtol, double atol, int equal_nan, em_tensor **out) {
  if (a->dtype != b->dtype)
    return em_fail(EM_E_TYPE, "isclose: expected a and b to have the same dtype, but got: "
                   "%s != %s", em_dtype_name(a->dtype), em_dtype_name(b->dtype));
  if (rtol < 0 || atol < 0)
    return em_fail(EM_E_VALUE, "isclose: rtol and atol must be non-negative, got rtol=%g "
                   "atol=%g", rtol, atol);
  const em_tensor *ins[2] = {a, b};
  int nd;
  int64_t shape[EM_MAX_DIMS];
  em_status st = em_broadcast_shapes("isclose", 2, ins, &nd, shape);
  if (st != EM_OK) return st;
  em_tensor *o;
  st = em_empty(nd, shape, EM_BOOL, a->storage->device, &o);
  if (st != EM_OK) return st;
  em_iter it;
  const em_tensor *ops[3] = {o, a, b};
  st = em_iter_build(&it, "isclose", 3, ops, nd, shape, false);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  em_close_params p = {rtol, atol, equal_nan};
  k->reduce->isclose(&it, a->dtype, &p);
  *out = o;
  return EM_OK;
}

em_status em_isclose(const em_tensor *a, const em_tensor *b, double rtol,
                     double atol, int equal_nan, em_tensor **out) {
  const em_kernels *k;
  em_status st = same_device("isclose", a, b, &k);
  if (st != EM_OK) return st;
  return isclose_on(k, a, b, rtol, atol, equal_nan, out);
}

/* isclose's checks and messages, then whether all are close */
em_status em_allclose(const em_tensor *a, const em_tensor *b, double rtol,
                      double atol, int equal_nan, int *result) {
  const em_kernels *k;
  em_status st = same_device("allclose", a, b, &k);
  if (st != EM_OK) return st;
  em_tensor *c;
  st = isclose_on(k, a, b, rtol, atol, equal_nan, &c);
  if (st != EM_OK) return st;
  int r = 1;  /* of no elements: true, without values */
  if (em_tensor_numel(c) > 0) st = k->reduce->all_true("allclose", c, &r);
  em_tensor_release(c);
  if (st != EM_OK) return st;
  *result = r;
  return EM_OK;
}
