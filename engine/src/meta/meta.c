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
#include "core/kern_reduce.h"
#include "core/kern_sort.h"
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

/* -- reduce ---------------------------------------------------------------- */
/* The results' shapes and dtypes are the op's; the values are none. */

static em_status meta_reduce(const char *op, em_red_kind k, em_tensor *acc,
                             const em_tensor *t, const em_red_params *p) {
  (void)op;
  (void)k;
  (void)acc;
  (void)t;
  (void)p;
  return EM_OK;
}
static em_status meta_logsumexp(const char *op, em_tensor *acc, em_tensor *shift,
                                const em_tensor *t) {
  (void)op;
  (void)acc;
  (void)shift;
  (void)t;
  return EM_OK;
}
/* max_dim and cumextreme */
static em_status meta_lanes_indexed(const char *op, em_tensor *values, em_tensor *indices,
                                    const em_tensor *t, int axis, int is_min) {
  (void)op;
  (void)values;
  (void)indices;
  (void)t;
  (void)axis;
  (void)is_min;
  return EM_OK;
}
/* softmax (log) and cumulative (prod) */
static em_status meta_lanes(const char *op, em_tensor *out, const em_tensor *t, int axis,
                            int flag) {
  (void)op;
  (void)out;
  (void)t;
  (void)axis;
  (void)flag;
  return EM_OK;
}
/* equal and allclose answer with a value */
static em_status meta_equal(const em_iter *it, em_dtype a, em_dtype b, int *equal) {
  (void)it;
  (void)a;
  (void)b;
  (void)equal;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, "equal");
}
static void meta_isclose(const em_iter *it, em_dtype dt, const em_close_params *p) {
  (void)it;
  (void)dt;
  (void)p;
}
static em_status meta_all_true(const char *op, const em_tensor *t, int *result) {
  (void)t;
  (void)result;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, op);
}

const em_reduce_kernels em_meta_reduce_kernels = {
    .reduce = meta_reduce,
    .logsumexp = meta_logsumexp,
    .max_dim = meta_lanes_indexed,
    .cumextreme = meta_lanes_indexed,
    .softmax = meta_lanes,
    .cumulative = meta_lanes,
    .equal = meta_equal,
    .isclose = meta_isclose,
    .all_true = meta_all_true,
};

/* -- sort ------------------------------------------------------------------ */
/* sort, topk, kthvalue and median have the op's shapes; unique's size is
** the number of distinct values, which only values tell. */

static em_status meta_sort(const char *op, em_tensor *values, em_tensor *indices,
                           const em_tensor *t, int axis, int64_t k, int descending) {
  (void)op;
  (void)values;
  (void)indices;
  (void)t;
  (void)axis;
  (void)k;
  (void)descending;
  return EM_OK;
}
static em_status meta_pick(const char *op, em_tensor *values, em_tensor *indices,
                           const em_tensor *t, int axis, em_pick_kind kind, int64_t k) {
  (void)op;
  (void)values;
  (void)indices;
  (void)t;
  (void)axis;
  (void)kind;
  (void)k;
  return EM_OK;
}
/* unique_count and unique_dim_sort */
static em_status meta_unique_count(const em_tensor *sorted, int64_t *n) {
  (void)sorted;
  (void)n;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, "unique");
}
static em_status meta_unique_dim_sort(const em_tensor *slices, em_tensor *order, int64_t *n) {
  (void)slices;
  (void)order;
  (void)n;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, "unique");
}
/* unique_write and unique_dim_write (never reached: the counts refuse) */
static em_status meta_unique_write(const em_tensor *sorted, const em_tensor *order,
                                   em_tensor *values, em_tensor *inverse, em_tensor *counts) {
  (void)sorted;
  (void)order;
  (void)values;
  (void)inverse;
  (void)counts;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, "unique");
}

const em_sort_kernels em_meta_sort_kernels = {
    .sort = meta_sort,
    .pick = meta_pick,
    .unique_count = meta_unique_count,
    .unique_write = meta_unique_write,
    .unique_dim_sort = meta_unique_dim_sort,
    .unique_dim_write = meta_unique_write,
};

/* -- The table --------------------------------------------------------------- */

const em_kernels em_meta_kernels = {
    .name = "meta",
    .type = EM_META,
    .alloc = meta_alloc,
    .free = meta_free,

    .copy = &em_meta_copy_kernels,

    .ew = &em_meta_ew_kernels,
    .reduce = &em_meta_reduce_kernels,
    .sort = &em_meta_sort_kernels,
};
