/*
** ops/softmax.c -- softmax and log_softmax along a dim: the checks, the
** result dtype, the result on the input's device, autograd; the values
** come from the device's reduce kernels (core/kern_reduce.h).
** The result is floating: the input's dtype, or the dtype option (PyTorch
** refuses an integer result as its kernel does, named in the message).
*/
#include "core/kern_reduce.h"
#include "core/kernels.h"
#include "autograd/autograd.h"
#include "ops/autocast.h"

static em_status softmax_nograd(const em_tensor *t, int64_t dim, int log, int dtype,
                     em_tensor **out) {
  const char *op = log ? "log_softmax" : "softmax";
  int axis;
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_dtype odt = dtype >= 0 ? (em_dtype)dtype : t->dtype;
  if (em_dtype_kindof(odt) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: \"%s_lastdim_kernel_impl\" not implemented for '%s' "
                   "(pass a floating dtype, e.g. {dtype = ember.float32})",
                   op, op, em_dtype_pt_name(odt));
  em_tensor *o;
  st = em_empty(t->ndim, t->sizes, odt, t->storage->device, &o);
  if (st != EM_OK) return st;
  st = kt->reduce->softmax(op, o, t, axis, log);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

em_status em_softmax(const em_tensor *t, int64_t dim, int log, int dtype,
                     em_tensor **out) {
  if (dtype < 0) {
    const em_tensor *ac[1] = {t};
    EM_AUTOCAST(EM_AC_REDUCE, 1, ac, em_softmax(ac[0], dim, log, dtype, out));
  }
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = log ? "LogSoftmaxBackward0" : "SoftmaxBackward0";
  p.i[0] = dim;
  p.i[1] = log;
  p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_SOFTMAX, 1, in, out, &p, softmax_nograd(t, dim, log, dtype, out));
}
