/*
** ops/cumulative.c -- the cumulative ops along a dim: cumsum, cumprod,
** cummax, cummin. The checks, the result dtype, the results on the
** input's device, autograd; the values come from the device's reduce
** kernels (core/kern_reduce.h). cumsum/cumprod of integers and bool give
** int64 (PyTorch), computed in the result's dtype (the input is cast
** first).
*/
#include "core/kern_reduce.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"
#include "ops/autocast.h"

static em_status cumulative_nograd(const em_tensor *t, int64_t dim, int prod, int dtype,
                        em_tensor **out) {
  const char *op = prod ? "cumprod" : "cumsum";
  int axis;
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_dtype odt = dtype >= 0 ? (em_dtype)dtype
                            : (em_dtype_kindof(t->dtype) == EM_KIND_FLOAT ? t->dtype : EM_INT64);
  if (em_dtype_kindof(t->dtype) == EM_KIND_COMPLEX || em_dtype_kindof(odt) == EM_KIND_COMPLEX)
    return em_fail(EM_E_TYPE, EM_MSG_DTYPE_NOT_IMPLEMENTED, op,
                   em_dtype_name(em_dtype_kindof(odt) == EM_KIND_COMPLEX ? odt : t->dtype));
  em_tensor *src;
  st = em_to(t, odt, t->storage->device, 0, &src);
  if (st != EM_OK) return st;
  em_tensor *o;
  st = em_empty(t->ndim, t->sizes, odt, t->storage->device, &o);
  if (st == EM_OK) {
    st = kt->reduce->cumulative(op, o, src, axis, prod);
    if (st != EM_OK) em_tensor_release(o);
  }
  em_tensor_release(src);
  if (st != EM_OK) return st;
  *out = o;
  return EM_OK;
}

static em_status cumextreme_nograd(const em_tensor *t, int64_t dim, int is_min,
                        em_tensor **values, em_tensor **indices) {
  const char *op = is_min ? "cummin" : "cummax";
  int axis;
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_tensor *v = NULL, *ix = NULL;
  st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &v);
  if (st == EM_OK) st = em_empty(t->ndim, t->sizes, EM_INT64, t->storage->device, &ix);
  if (st == EM_OK) st = kt->reduce->cumextreme(op, v, ix, t, axis, is_min);
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  *values = v;
  *indices = ix;
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** Each entry point runs its kernel with grad mode paused and records the node
** (formulas in autograd/formulas.c). */

em_status em_cumulative(const em_tensor *t, int64_t dim, int prod, int dtype,
                        em_tensor **out) {
  if (dtype < 0) {
    const em_tensor *ac[1] = {t};
    EM_AUTOCAST(EM_AC_REDUCE, 1, ac, em_cumulative(ac[0], dim, prod, dtype, out));
  }
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = prod ? "CumprodBackward0" : "CumsumBackward0";
  p.i[0] = dim;
  p.i[1] = prod;
  if (prod) p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_CUMULATIVE, 1, in, out, &p, cumulative_nograd(t, dim, prod, dtype, out));
}

em_status em_cumextreme(const em_tensor *t, int64_t dim, int is_min,
                        em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = cumextreme_nograd(t, dim, is_min, values, indices);
  em_ag_resume(on);
  if (st == EM_OK && on && t->requires_grad) {
    st = em_ag_record_indexed(is_min ? "CumminBackward0" : "CummaxBackward0", t, dim, 1,
                              *indices, *values);
    if (st != EM_OK) {
      em_tensor_release(*values);
      em_tensor_release(*indices);
      *values = *indices = NULL;
    }
  }
  return st;
}
