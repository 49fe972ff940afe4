/*
** ops/fft.c -- the FFT's engine ops: one complex-to-complex transform along
** one dim (em_fft_c2c) and the real-input forward one (em_fft_r2c, rfft's
** fast path: half the work, no complex copy of the input); lua/ember/fft.lua builds T.fft's functions (sizes,
** norms, real and Hermitian forms, several dims) from it and the views
** (docs/fft.md).
*/
#include "core/kern_cplx.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include <string.h>

#include "autograd/autograd.h"
#include "ops/complex.h"

#include <string.h>

/* The checks every transform makes of x and its 1-based dim, in PyTorch's
** order and wording (op names it): sets the 0-based dim d, the kernels,
** and the sizes before and after d as outer and inner. */
static em_status fft_prepare(const char *op, const em_tensor *x, int64_t dim, int *d,
                             const em_kernels **kt, int64_t *outer, int64_t *inner) {
  int nd = x->ndim > 0 ? x->ndim : 1;
  if (dim < -nd || dim == 0 || dim > nd)
    return em_fail(EM_E_INDEX, "%s: dimension %lld out of range (expected to be in range of "
                   "[%d, %d])", op, (long long)dim, -nd, nd);
  if (x->ndim == 0)
    return em_fail(EM_E_VALUE, "%s: expected a tensor of at least 1 dim, got a 0-d tensor", op);
  *d = (int)(dim < 0 ? dim + x->ndim : dim - 1);
  em_status st = em_kernels_check(op, x->storage->device, kt);
  if (st != EM_OK) return st;
  if (x->sizes[*d] == 0)
    return em_fail(EM_E_VALUE, "%s: invalid number of data points (0) specified", op);
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < *d; i++) *outer *= x->sizes[i];
  for (int i = *d + 1; i < x->ndim; i++) *inner *= x->sizes[i];
  return EM_OK;
}

static em_status fft_check_complex(const em_tensor *x) {
  if (em_dtype_kindof(x->dtype) != EM_KIND_COMPLEX)
    return em_fail(EM_E_TYPE, "fft: expected a complex tensor, got %s", em_dtype_name(x->dtype));
  return EM_OK;
}

/* the transform along d of y's contiguous data, in place */
static em_status fft_run(const em_kernels *kt, em_tensor *y, int d, int64_t outer,
                         int64_t inner, int forward, double fct) {
  if (em_tensor_numel(y) == 0) return EM_OK;
  char *data = (char *)y->storage->data + y->offset * (int64_t)em_dtype_size(y->dtype);
  return kt->cplx->fft(y->dtype, data, outer, y->sizes[d], inner, forward, fct);
}

em_status em_fft_c2c_(em_tensor *y, int64_t dim, int forward, double fct) {
  int d = 0;  /* set by fft_prepare; initialised for GCC's flow analysis */
  const em_kernels *kt = NULL;
  int64_t outer = 1, inner = 1;
  em_status st = fft_check_complex(y);
  if (st == EM_OK) st = fft_prepare("fft", y, dim, &d, &kt, &outer, &inner);
  if (st != EM_OK) return st;
  if (!em_tensor_is_contiguous(y) || em_tensor_requires_grad(y))
    return em_fail(EM_E_VALUE, "fft: the in-place transform needs a contiguous tensor that "
                   "does not require grad");
  return fft_run(kt, y, d, outer, inner, forward, fct);
}

em_status em_fft_c2c(const em_tensor *x, int64_t dim, int forward, double fct,
                     em_tensor **out) {
  int d = 0;  /* set by fft_prepare; initialised for GCC's flow analysis */
  const em_kernels *kt = NULL;
  int64_t outer = 1, inner = 1;
  em_status st = fft_check_complex(x);
  if (st == EM_OK) st = fft_prepare("fft", x, dim, &d, &kt, &outer, &inner);
  if (st != EM_OK) return st;
  em_tensor *y = NULL;
  int on = em_ag_pause();
  st = em_empty(x->ndim, x->sizes, x->dtype, x->storage->device, &y);
  if (st == EM_OK) st = em_copy_(y, x);
  if (st == EM_OK) st = fft_run(kt, y, d, outer, inner, forward, fct);
  em_ag_resume(on);
  if (st != EM_OK) {
    em_tensor_release(y);
    return st;
  }
  /* backward: the adjoint of a scaled DFT is the opposite-direction DFT with
  ** the same scale (PyTorch's fft_c2c_backward) */
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.i[0] = d + 1;
  p.i[1] = forward != 0;
  p.d[0] = fct;
  const em_tensor *in[1] = {x};
  st = em_cx_record(on, EM_AG_CX_FFT, "FftC2CBackward0", 1, in, &p, &y);
  if (st == EM_OK) *out = y;
  return st;
}

/* rfft of x along its dim d (fft_prepare's d, kt, outer, inner) into the
** contiguous dst of the result's shape and dtype */
static em_status r2c_into(const em_tensor *x, int d, const em_kernels *kt, int64_t outer,
                          int64_t inner, double fct, em_tensor *dst) {
  if (em_tensor_numel(dst) == 0) return EM_OK;
  em_tensor *c = NULL;
  em_status st = em_contiguous(x, &c);
  if (st == EM_OK)
    st = kt->cplx->rfft(x->dtype, (const char *)c->storage->data +
                                      c->offset * (int64_t)em_dtype_size(c->dtype),
                        (char *)dst->storage->data +
                            dst->offset * (int64_t)em_dtype_size(dst->dtype),
                        outer, x->sizes[d], inner, fct);
  em_tensor_release(c);
  return st;
}

em_status em_fft_r2c(const em_tensor *x, int64_t dim, double fct, em_tensor **out) {
  if (x->dtype != EM_FLOAT32 && x->dtype != EM_FLOAT64)
    return em_fail(EM_E_TYPE, "rfft: expected a float32 or float64 tensor, got %s",
                   em_dtype_name(x->dtype));
  if (em_grad_enabled() && x->requires_grad)
    return em_fail(EM_E_TYPE, "rfft: autograd through the FFT is not implemented");
  int d = 0;  /* set by fft_prepare; initialised for GCC's flow analysis */
  const em_kernels *kt = NULL;
  int64_t outer = 1, inner = 1;
  em_status st = fft_prepare("rfft", x, dim, &d, &kt, &outer, &inner);
  if (st != EM_OK) return st;
  em_tensor *y = NULL;
  int64_t sh[EM_MAX_DIMS];
  memcpy(sh, x->sizes, (size_t)x->ndim * sizeof *sh);
  sh[d] = x->sizes[d] / 2 + 1;
  st = em_empty(x->ndim, sh, x->dtype == EM_FLOAT32 ? EM_COMPLEX64 : EM_COMPLEX128,
                x->storage->device, &y);
  if (st == EM_OK) st = r2c_into(x, d, kt, outer, inner, fct, y);
  if (st != EM_OK) {
    em_tensor_release(y);
    return st;
  }
  *out = y;
  return EM_OK;
}

em_status em_fft_r2c_out(const em_tensor *x, int64_t dim, double fct, em_tensor *out) {
  int d = 0;
  const em_kernels *kt = NULL;
  int64_t outer = 1, inner = 1;
  em_status chk = em_check_out("rfft", out);
  if (chk != EM_OK) return chk;
  int direct = (x->dtype == EM_FLOAT32 || x->dtype == EM_FLOAT64) &&
               !(em_grad_enabled() && x->requires_grad) && !out->view_base &&
               out->storage != x->storage && out->ndim == x->ndim &&
               out->dtype == (x->dtype == EM_FLOAT32 ? EM_COMPLEX64 : EM_COMPLEX128) &&
               out->storage->device.type == x->storage->device.type &&
               out->storage->device.index == x->storage->device.index &&
               em_tensor_is_contiguous(out);
  if (direct) {
    em_status st = fft_prepare("rfft", x, dim, &d, &kt, &outer, &inner);
    if (st != EM_OK) return st;
    for (int i = 0; direct && i < x->ndim; i++)
      direct = out->sizes[i] == (i == d ? x->sizes[d] / 2 + 1 : x->sizes[i]);
  }
  if (!direct) {
    em_tensor *y = NULL;
    em_status st = em_fft_r2c(x, dim, fct, &y);
    if (st == EM_OK) st = em_write_out("rfft", y, out);
    em_tensor_release(y);
    return st;
  }
  em_status st = r2c_into(x, d, kt, outer, inner, fct, out);
  if (st == EM_OK) em_storage_bump_version(out->storage);
  return st;
}
