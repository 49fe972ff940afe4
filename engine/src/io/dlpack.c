/*
** dlpack.c -- DLPack export and import (DLManagedTensor, DLPack v0.6 as
** shipped by Debian 12's libdlpack-dev, DLPACK_VERSION 60).
**
** What holds:
** - Export: the DLManagedTensor and its shape/strides arrays are one
**   allocation that also holds one reference to the tensor's storage; its
**   deleter releases that reference and frees the allocation, so the memory
**   stays valid until the consumer calls the deleter (exactly once, by the
**   DLPack contract).
** - Import: on success the producer's deleter becomes the storage's
**   deleter, so it runs exactly once, when the last view goes. On failure
**   nothing is taken: the caller still owns the DLManagedTensor.
** - Imported metadata is checked (ndim, sizes, strides, dtype, device,
**   alignment) before any view of the memory exists.
*/
#include "core/core.h"
#include "core/errmsg.h"

#include <dlpack/dlpack.h>
#include <stdlib.h>

/* DLPack >= 0.8 adds kDLBool = 6; the 0.6 header has no bool code. */
enum { EM_DL_BOOL = 6 };

static int to_dl_dtype(em_dtype dt, DLDataType *out) {
  out->lanes = 1;
  out->bits = (uint8_t)(em_dtype_size(dt) * 8);
  switch (dt) {
    case EM_BOOL: out->code = EM_DL_BOOL; return 1;
    case EM_UINT8: out->code = kDLUInt; return 1;
    case EM_INT8: case EM_INT16: case EM_INT32: case EM_INT64:
      out->code = kDLInt; return 1;
    case EM_FLOAT16: case EM_FLOAT32: case EM_FLOAT64:
      out->code = kDLFloat; return 1;
    case EM_BFLOAT16: out->code = kDLBfloat; return 1;
    case EM_COMPLEX64: case EM_COMPLEX128: out->code = kDLComplex; return 1;
    default: return 0;
  }
}

static int from_dl_dtype(DLDataType d, em_dtype *out) {
  if (d.lanes != 1) return 0;
  for (int i = 0; i < EM_NUM_DTYPES; i++) {
    DLDataType e;
    if (to_dl_dtype((em_dtype)i, &e) && e.code == d.code && e.bits == d.bits) {
      *out = (em_dtype)i;
      return 1;
    }
  }
  return 0;
}

/* -- Export -------------------------------------------------------------- */

typedef struct {
  DLManagedTensor m;
  em_storage *storage;  /* one reference, released by the deleter */
  int64_t shape[EM_MAX_DIMS];
  int64_t strides[EM_MAX_DIMS];
} export_ctx;

static void export_deleter(DLManagedTensor *self) {
  export_ctx *c = self->manager_ctx;
  em_storage_release(c->storage);
  free(c);
}

em_status em_to_dlpack(const em_tensor *t, struct DLManagedTensor **out) {
  em_status vst = em_tensor_check_values("to_dlpack", t);
  if (vst != EM_OK) return vst;
  if (t->storage->device.type != EM_CPU) {
    char d[32];
    return em_fail(EM_E_RUNTIME, EM_MSG_CPU_ONLY, "to_dlpack",
                   em_device_str(t->storage->device, d, sizeof d));
  }
  export_ctx *c = calloc(1, sizeof *c);
  if (!c) return em_fail(EM_E_NOMEM, "to_dlpack: out of memory");
  DLTensor *d = &c->m.dl_tensor;
  to_dl_dtype(t->dtype, &d->dtype);
  d->data = em_tensor_data(t);
  d->device.device_type = kDLCPU;
  d->device.device_id = 0;
  d->ndim = t->ndim;
  memcpy(c->shape, t->sizes, sizeof c->shape);
  memcpy(c->strides, t->strides, sizeof c->strides);
  d->shape = c->shape;
  d->strides = c->strides;
  d->byte_offset = 0;
  c->storage = t->storage;
  em_storage_retain(c->storage);
  c->m.manager_ctx = c;
  c->m.deleter = export_deleter;
  *out = &c->m;
  return EM_OK;
}

/* -- Import -------------------------------------------------------------- */

static void import_deleter(void *ctx, void *data, size_t nbytes) {
  DLManagedTensor *m = ctx;
  if (m->deleter) m->deleter(m);
  (void)data; (void)nbytes;
}

static const char *dl_device_name(int type) {
  switch (type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLOpenCL: return "opencl";
    case kDLVulkan: return "vulkan";
    case kDLMetal: return "metal";
    case kDLVPI: return "vpi";
    case kDLROCM: return "rocm";
    case kDLROCMHost: return "rocm_host";
    case kDLExtDev: return "ext_dev";
    case kDLCUDAManaged: return "cuda_managed";
    default: return "unknown";
  }
}

em_status em_from_dlpack(struct DLManagedTensor *m, em_tensor **out) {
  const char *op = "from_dlpack";
  if (!m) return em_fail(EM_E_VALUE, "%s: NULL DLManagedTensor", op);
  const DLTensor *d = &m->dl_tensor;
  /* host memory the CPU can address directly */
  int dev = (int)d->device.device_type;
  if (dev != kDLCPU && dev != kDLCUDAHost && dev != kDLROCMHost)
    return em_fail(EM_E_RUNTIME,
                   "%s: unsupported device %s:%d (ember imports CPU memory only)",
                   op, dl_device_name(dev), d->device.device_id);
  em_dtype dt;
  if (!from_dl_dtype(d->dtype, &dt))
    return em_fail(EM_E_TYPE,
                   "%s: unsupported dtype (code %u, bits %u, lanes %u)", op,
                   (unsigned)d->dtype.code, (unsigned)d->dtype.bits,
                   (unsigned)d->dtype.lanes);
  if (d->ndim < 0 || d->ndim > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: %d dimensions (ember supports 0 to %d)", op,
                   d->ndim, (int)EM_MAX_DIMS);
  if (d->ndim > 0 && !d->shape)
    return em_fail(EM_E_VALUE, "%s: NULL shape", op);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS], numel;
  for (int i = 0; i < d->ndim; i++) sizes[i] = d->shape[i];
  em_status st = em_numel_checked(op, d->ndim, sizes, &numel);
  if (st != EM_OK) return st;
  if (d->strides) {
    for (int i = 0; i < d->ndim; i++) {
      strides[i] = d->strides[i];
      if (strides[i] < 0 && sizes[i] > 1) {
        char b[EM_SHAPE_BUF];
        return em_fail(EM_E_VALUE, "%s: negative strides %s are not supported", op,
                       em_fmt_shape(b, sizeof b, d->ndim, strides));
      }
      if (strides[i] < 0) strides[i] = 0;  /* unused: the size is 0 or 1 */
    }
  } else {
    em_contiguous_strides(d->ndim, sizes, strides);
  }
  size_t itemsize = em_dtype_size(dt);
  /* the storage spans exactly the elements the view can reach */
  int64_t extent = 0;
  if (numel > 0) {
    int64_t last = 0, step;
    for (int i = 0; i < d->ndim; i++)
      if (em_mul_overflow_i64(sizes[i] - 1, strides[i], &step) ||
          __builtin_add_overflow(last, step, &last))
        return em_fail(EM_E_VALUE, "%s: sizes and strides overflow", op);
    if (em_mul_overflow_i64(last + 1, (int64_t)itemsize, &extent))
      return em_fail(EM_E_VALUE, "%s: sizes and strides overflow", op);
  }
  char *data = (char *)d->data;
  if (numel > 0 && !data) return em_fail(EM_E_VALUE, "%s: NULL data", op);
  if (data) data += d->byte_offset;
  if ((uintptr_t)data % itemsize != 0)
    return em_fail(EM_E_VALUE, "%s: data %p is not aligned for %s", op, (void *)data,
                   em_dtype_name(dt));
  /* The storage takes the producer's deleter only once the tensor exists,
  ** so a failure leaves m with the caller. */
  em_storage *s;
  st = em_storage_wrap(numel > 0 ? data : NULL, (size_t)extent, em_cpu(), NULL,
                       NULL, &s);
  if (st != EM_OK) return st;
  st = em_tensor_new(s, 0, d->ndim, sizes, strides, dt, out);
  if (st == EM_OK) {
    s->deleter = import_deleter;
    s->deleter_ctx = m;
  }
  em_storage_release(s);
  return st;
}
