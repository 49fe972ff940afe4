/*
** copy.c -- copy_, fill_, clone, contiguous, to, and element reads: the
** public ops over the copy family of the kernel table (core/kern_copy.h).
** One copy serves every assignment into a view: it broadcasts the source
** to the destination and converts between any two dtypes with the rules of
** core/core.h (docs/dtypes.md). Between devices, values move through the
** non-CPU device's transfer kernel; a meta tensor takes any values (it
** keeps none) and gives none.
*/
#include "core/kern_copy.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"

#include <stdlib.h>

/* -- copy_ -------------------------------------------------------------- */

/* dst = src across devices: the source is first made dst's dtype and a
** dense copy (on its own device), then moved by the transfer kernel of the
** device that is not the CPU, into dst directly when dst is dense, else
** into a dense temporary copied into dst. */
static em_status copy_across(em_tensor *dst, const em_tensor *src) {
  em_device dd = dst->storage->device, sd = src->storage->device;
  const em_kernels *k;
  em_status st = em_kernels_check("copy_", dd.type == EM_CPU ? sd : dd, &k);
  if (st != EM_OK) return st;
  em_tensor *ex = NULL, *s1 = NULL, *s2 = NULL, *tmp = NULL;
  /* src broadcast to dst's shape, in dst's dtype, contiguous */
  st = em_expand(src, dst->ndim, dst->sizes, &ex);
  if (st == EM_OK) st = em_to(ex, dst->dtype, sd, 0, &s1);
  if (st == EM_OK) st = em_contiguous(s1, &s2);
  if (st == EM_OK) {
    if (em_tensor_is_contiguous(dst)) {
      st = k->copy->transfer(dst, s2);
    } else {
      st = em_empty(dst->ndim, dst->sizes, dst->dtype, dd, &tmp);
      if (st == EM_OK) st = k->copy->transfer(tmp, s2);
      if (st == EM_OK) st = em_copy_(dst, tmp);
    }
  }
  em_tensor_release(ex);
  em_tensor_release(s1);
  em_tensor_release(s2);
  em_tensor_release(tmp);
  if (st == EM_OK) em_storage_bump_version(dst->storage);
  return st;
}

static em_status copy_nograd(em_tensor *dst, const em_tensor *src) {
  em_status st = em_check_writable("copy_", dst);
  if (st != EM_OK) return st;
  if (!em_device_equal(dst->storage->device, src->storage->device)) {
    /* the broadcast check as on one device (building reads no data) */
    em_iter it;
    const em_tensor *ops[2] = {dst, src};
    int was = em_iter_allow_complex(1);
    st = em_iter_build(&it, "copy_", 2, ops, dst->ndim, dst->sizes, false);
    em_iter_allow_complex(was);
    return st == EM_OK ? copy_across(dst, src) : st;
  }
  if (em_same_layout(dst, src)) return EM_OK;
  /* A source that partly overlaps the destination is read from a snapshot,
  ** so the result is as if all of src were read before any write. */
  em_tensor *tmp = NULL;
  if (em_may_overlap(dst, src)) {
    st = em_clone(src, &tmp);
    if (st != EM_OK) return st;
    src = tmp;
  }
  em_iter it;
  const em_tensor *ops[2] = {dst, src};
  int was = em_iter_allow_complex(1);  /* the cast loops include complex */
  st = em_iter_build(&it, "copy_", 2, ops, dst->ndim, dst->sizes, false);
  em_iter_allow_complex(was);
  if (st == EM_OK) {
    em_kernels_for(dst->storage->device)->copy->copy(&it, dst->dtype, src->dtype);
    em_storage_bump_version(dst->storage);
  }
  em_tensor_release(tmp);
  return st;
}

/* -- fill_ -------------------------------------------------------------- */

/* A fill writes one value, so an expanded tensor may be filled: its
** aliased elements get the same bytes (PyTorch's fill_, zero_,
** masked_fill_, index_fill_ and t[i] = v allow it too). Only the distinct
** locations are visited: the stride-0 dims are collapsed to size 1 (an
** expand to 2^40 elements of one float is one write; the fuzzer timed out
** on it when every alias was visited). An overlap that remains after that
** (as_strided with overlapping non-zero strides) is refused as before. */
static em_status fill_nograd(em_tensor *dst, em_scalar value) {
  int64_t sizes[EM_MAX_DIMS];
  for (int i = 0; i < dst->ndim; i++)
    sizes[i] = dst->strides[i] == 0 && dst->sizes[i] > 1 ? 1 : dst->sizes[i];
  em_tensor view;
  em_stack_header(&view, dst, dst->ndim, sizes, dst->strides, dst->offset);
  em_status st = em_check_writable("fill_", &view);
  if (st != EM_OK) return st;
  uint64_t bytes[2] = {0, 0};  /* EM_MAX_ELEM_BYTES */
  em_scalar_to_bytes(value, dst->dtype, bytes);
  em_iter it;
  const em_tensor *ops[1] = {&view};
  int was = em_iter_allow_complex(1);  /* a fill moves element bytes */
  st = em_iter_build(&it, "fill_", 1, ops, view.ndim, view.sizes, false);
  em_iter_allow_complex(was);
  if (st != EM_OK) return st;
  em_kernels_for(dst->storage->device)->copy->fill(&it, dst->dtype, bytes);
  em_storage_bump_version(dst->storage);
  return EM_OK;
}

/* -- clone / contiguous / to --------------------------------------------- */

/* A new tensor with t's sizes and dtype dt, laid out as t (preserve_format) */
static em_status empty_preserving(const em_tensor *t, em_dtype dt, em_device dev,
                                  em_tensor **out) {
  return em_empty_like_on(t, dt, dev, 0, out);
}

static em_status copy_into_new(const em_tensor *t, em_tensor *fresh, em_tensor **out) {
  em_status st = em_copy_(fresh, t);
  if (st != EM_OK) {
    em_tensor_release(fresh);
    return st;
  }
  *out = fresh;
  return EM_OK;
}

static em_status clone_nograd(const em_tensor *t, em_tensor **out) {
  em_tensor *fresh;
  em_status st = empty_preserving(t, t->dtype, t->storage->device, &fresh);
  if (st != EM_OK) return st;
  return copy_into_new(t, fresh, out);
}

/* A copy in row-major order with exactly the row-major strides (clone's
** memory_format = "contiguous") */
static em_status clone_contiguous_nograd(const em_tensor *t, em_tensor **out) {
  em_tensor *fresh;
  em_status st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &fresh);
  if (st != EM_OK) return st;
  return copy_into_new(t, fresh, out);
}

static em_status contiguous_nograd(const em_tensor *t, em_tensor **out) {
  if (em_tensor_is_contiguous(t)) {
    em_tensor_retain((em_tensor *)t);
    *out = (em_tensor *)t;
    return EM_OK;
  }
  em_tensor *fresh;
  em_status st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &fresh);
  if (st != EM_OK) return st;
  return copy_into_new(t, fresh, out);
}

static em_status to_nograd(const em_tensor *t, em_dtype dt, em_device dev, int copy,
                           em_tensor **out) {
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "to: invalid dtype %d", (int)dt);
  if (!copy && dt == t->dtype && em_device_equal(dev, t->storage->device)) {
    em_tensor_retain((em_tensor *)t);
    *out = (em_tensor *)t;
    return EM_OK;
  }
  const em_kernels *k;
  em_status kst = em_kernels_check("to", dev, &k);
  if (kst != EM_OK) return kst;
  em_tensor *fresh;
  em_status st = empty_preserving(t, dt, dev, &fresh);
  if (st != EM_OK) return st;
  return copy_into_new(t, fresh, out);
}

/* -- Element reads ------------------------------------------------------- */

static em_status element_ptr(const char *op, const em_tensor *t, int64_t pos,
                             const char **p) {
  int64_t numel = em_tensor_numel(t);
  if (pos < 0 || pos >= numel)
    return em_fail(EM_E_INDEX, "%s: element %lld is out of range for a tensor of %lld elements",
                   op, (long long)pos + 1, (long long)numel);
  int64_t off = t->offset;
  for (int i = t->ndim - 1; i >= 0; i--) {
    off += (pos % t->sizes[i]) * t->strides[i];
    pos /= t->sizes[i];
  }
  /* a device without data (meta) has no addresses: its read kernel refuses */
  *p = t->storage->data ? (const char *)t->storage->data + off * (int64_t)em_dtype_size(t->dtype)
                        : NULL;
  return EM_OK;
}

/* The element's bytes, read through the device's kernel. */
static em_status read_element(const em_tensor *t, int64_t pos, uint64_t bytes[2]) {
  const char *p;
  em_status st = element_ptr("get", t, pos, &p);
  if (st != EM_OK) return st;
  bytes[0] = bytes[1] = 0;
  return em_kernels_for(t->storage->device)
      ->copy->read("get", p, em_dtype_size(t->dtype), bytes);
}

em_status em_get_f64(const em_tensor *t, int64_t pos, double *out) {
  uint64_t bytes[2];
  em_status st = read_element(t, pos, bytes);
  if (st == EM_OK) *out = em_bytes_to_f64(t->dtype, bytes);
  return st;
}

em_status em_get_i64(const em_tensor *t, int64_t pos, int64_t *out) {
  uint64_t bytes[2];
  em_status st = read_element(t, pos, bytes);
  if (st == EM_OK) *out = em_bytes_to_i64(t->dtype, bytes);
  return st;
}

em_status em_get_complex(const em_tensor *t, int64_t pos, double out[2]) {
  uint64_t bytes[2];
  em_status st = read_element(t, pos, bytes);
  if (st != EM_OK) return st;
  if (t->dtype == EM_COMPLEX64) {
    float c[2];
    memcpy(c, bytes, sizeof c);
    out[0] = c[0];
    out[1] = c[1];
  } else if (t->dtype == EM_COMPLEX128) {
    memcpy(out, bytes, 2 * sizeof(double));
  } else {
    out[0] = em_bytes_to_f64(t->dtype, bytes);
    out[1] = 0.0;
  }
  return EM_OK;
}

em_status em_set_complex(em_tensor *t, int64_t pos, double re, double im) {
  if (em_dtype_kindof(t->dtype) != EM_KIND_COMPLEX) {
    if (im != 0.0)
      return em_fail(EM_E_TYPE, "set: can't write a complex value (imaginary part %g) into "
                     "a %s tensor", im, em_dtype_name(t->dtype));
    em_scalar v = {EM_SCALAR_FLOAT, 0, re};
    return em_set_flat(t, pos, v);
  }
  const char *p;
  em_status st = element_ptr("set", t, pos, &p);
  if (st != EM_OK) return st;
  uint64_t bytes[2] = {0, 0};
  if (t->dtype == EM_COMPLEX64) {
    float c[2] = {(float)re, (float)im};
    memcpy(bytes, c, sizeof c);
  } else {
    double c[2] = {re, im};
    memcpy(bytes, c, sizeof c);
  }
  st = em_kernels_for(t->storage->device)
      ->copy->write("set", (void *)p, em_dtype_size(t->dtype), bytes);
  if (st == EM_OK) em_storage_bump_version(t->storage);
  return st;
}

em_status em_set_flat(em_tensor *t, int64_t pos, em_scalar v) {
  const char *p;
  em_status st = element_ptr("set", t, pos, &p);
  if (st != EM_OK) return st;
  uint64_t bytes[2] = {0, 0};
  em_scalar_to_bytes(v, t->dtype, bytes);
  st = em_kernels_for(t->storage->device)
      ->copy->write("set", (void *)p, em_dtype_size(t->dtype), bytes);
  if (st == EM_OK) em_storage_bump_version(t->storage);
  return st;
}

/* -- Autograd recording ---------------------------------------------------------
** copy_/fill_ overwrite dst (its old values get no gradient; copy_'s src gets
** dst's, cast and summed over the broadcast); clone/contiguous/to pass the
** gradient through (cast back by the engine). */

static em_status overwrite(const char *op, em_tensor *dst, const em_tensor *src,
                           em_status (*run)(em_tensor *, const em_tensor *, em_scalar),
                           em_scalar value) {
  int on = em_ag_pause();
  em_status st = EM_OK;
  int any = on && (dst->requires_grad || (src && src->requires_grad));
  if (any || (on && dst->nograd_view)) st = em_ag_check_inplace(op, dst);
  if (st == EM_OK) st = run(dst, src, value);
  em_ag_resume(on);
  em_dtype_kind kind = em_dtype_kindof(dst->dtype);
  if (st != EM_OK || !any || (kind != EM_KIND_FLOAT && kind != EM_KIND_COMPLEX)) return st;
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = src ? "CopyBackwards" : "FillBackward0";
  const em_tensor *in[2] = {dst, src};
  return em_ag_record(EM_AG_OVERWRITE, src ? 2 : 1, in, 1, &dst, &p);
}
static em_status run_copy(em_tensor *dst, const em_tensor *src, em_scalar v) {
  (void)v;
  return copy_nograd(dst, src);
}
static em_status run_fill(em_tensor *dst, const em_tensor *src, em_scalar v) {
  (void)src;
  return fill_nograd(dst, v);
}

em_status em_copy_(em_tensor *dst, const em_tensor *src) {
  em_scalar none = {EM_SCALAR_INT, 0, 0};
  return overwrite("copy_", dst, src, run_copy, none);
}
em_status em_fill_(em_tensor *dst, em_scalar value) {
  return overwrite("fill_", dst, NULL, run_fill, value);
}

/* out= of ops that compute a fresh result first (reductions): the result's
** history may not flow into out (as PyTorch: out= is not differentiable);
** dtypes must match exactly (the caller computed in out's dtype where the op
** takes one); an empty out is given the result's shape with fresh
** contiguous storage, any other shape is an error (docs/math.md). */
em_status em_write_out(const char *op, const em_tensor *result, em_tensor *out) {
  char a[EM_SHAPE_BUF], b[EM_SHAPE_BUF];
  if (em_grad_enabled() && result->requires_grad)
    return em_fail(EM_E_VALUE, EM_MSG_OUT_NOT_DIFFERENTIABLE, op);
  em_status chk = em_check_out(op, out);
  if (chk != EM_OK) return chk;
  em_status dst = em_same_device_check(op, result->storage->device, out->storage->device);
  if (dst != EM_OK) return dst;
  if (out->dtype != result->dtype)
    return em_fail(EM_E_TYPE, "%s: expected out to have dtype ember.%s, got ember.%s", op,
                   em_dtype_name(result->dtype), em_dtype_name(out->dtype));
  int same = out->ndim == result->ndim;
  for (int i = 0; same && i < out->ndim; i++) same = out->sizes[i] == result->sizes[i];
  if (!same) {
    if (em_tensor_numel(out) != 0)
      return em_fail(EM_E_VALUE, "%s: output with shape %s doesn't match the result shape %s "
                     "(only an empty out tensor is resized)", op,
                     em_fmt_shape(a, sizeof a, out->ndim, out->sizes),
                     em_fmt_shape(b, sizeof b, result->ndim, result->sizes));
    em_tensor *fresh = NULL;
    em_status st = em_empty(result->ndim, result->sizes, out->dtype, out->storage->device, &fresh);
    if (st != EM_OK) return st;
    em_tensor_rebind(out, fresh->storage, 0, fresh->ndim, fresh->sizes, fresh->strides);
    em_tensor_release(fresh);
  }
  return em_copy_(out, result);
}

em_status em_clone(const em_tensor *t, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "CloneBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, clone_nograd(t, out));
}
em_status em_clone_contiguous(const em_tensor *t, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "CloneBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, clone_contiguous_nograd(t, out));
}
em_status em_contiguous(const em_tensor *t, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "CloneBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, contiguous_nograd(t, out));
}
em_status em_to(const em_tensor *t, em_dtype dt, em_device dev, int copy, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "ToCopyBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, to_nograd(t, dt, dev, copy, out));
}
