/*
** meta/meta.c -- the meta device (PyTorch's): tensors with sizes, strides
** and dtype and no data. Its kernel table is the CPU's in shape: every
** family, every entry; each entry computes no values. The public ops above
** have already checked the arguments, typed and shaped the result, so a
** meta tensor's metadata is exactly what the CPU would produce. Entries
** that would read values refuse with EM_MSG_META_NO_DATA; those whose
** result's shape depends on values, with EM_MSG_META_DATA_DEPENDENT.
** This is the template for a new device (docs/architecture.md).
*/
#include "core/kernels.h"
#include "core/kern_copy.h"
#include "core/kern_ew.h"
#include "core/kern_optim.h"
#include "core/errmsg.h"

/* -- Memory: a storage of nbytes that holds none -------------------------- */

static em_status meta_alloc(em_device dev, size_t nbytes, void **data) {
  (void)dev;
  (void)nbytes;
  *data = NULL;
  return EM_OK;
}
static void meta_free(em_device dev, void *data, size_t nbytes) {
  (void)dev;
  (void)data;
  (void)nbytes;
}

/* -- copy ------------------------------------------------------------------ */

static void meta_copy(const em_iter *it, em_dtype dst, em_dtype src) {
  (void)it;
  (void)dst;
  (void)src;
}
static void meta_fill(const em_iter *it, em_dtype dt, const void *value) {
  (void)it;
  (void)dt;
  (void)value;
}
/* Into meta: nothing to keep. Out of meta: there are no values. */
static em_status meta_transfer(em_tensor *dst, const em_tensor *src) {
  (void)src;
  if (em_tensor_device(dst).type == EM_META) return EM_OK;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, "copy_");
}
static em_status meta_read(const char *op, const void *p, size_t elsize, void *out) {
  (void)p;
  (void)elsize;
  (void)out;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, op);
}
static em_status meta_write(const char *op, void *p, size_t elsize, const void *in) {
  (void)p;
  (void)elsize;
  (void)in;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, op);
}

const em_copy_kernels em_meta_copy_kernels = {
    .copy = meta_copy,
    .fill = meta_fill,
    .transfer = meta_transfer,
    .read = meta_read,
    .write = meta_write,
};

/* -- ew -------------------------------------------------------------------- */

static void meta_ew_run(em_ew_kernel kernel, em_dtype dt, const em_iter *it, const em_kctx *k) {
  (void)kernel;
  (void)dt;
  (void)it;
  (void)k;
}
/* integer division by zero cannot be seen without values (PyTorch's meta
** kernels do not check it either) */
static int meta_any_zero(const em_iter *it, em_dtype dt) {
  (void)it;
  (void)dt;
  return 0;
}

const em_ew_kernels em_meta_ew_kernels = {
    .run = meta_ew_run,
    .any_zero = meta_any_zero,
};

/* -- optim ----------------------------------------------------------------- */

/* A step on meta parameters is its checks (and the state it makes). */
static void meta_optim_step(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  (void)it;
  (void)dt;
  (void)p;
}

const em_optim_kernels em_meta_optim_kernels = {
    .sgd = meta_optim_step,
    .adam = meta_optim_step,
    .rmsprop = meta_optim_step,
};

/* -- The table --------------------------------------------------------------- */

const em_kernels em_meta_kernels = {
    .name = "meta",
    .type = EM_META,
    .alloc = meta_alloc,
    .free = meta_free,

    .copy = &em_meta_copy_kernels,

    .ew = &em_meta_ew_kernels,
    .optim = &em_meta_optim_kernels,
};
