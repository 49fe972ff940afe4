/*
** tensor.c -- tensor objects: construction, refcounting, metadata queries.
** A tensor never addresses an element outside its storage: em_tensor_new and
** em_as_strided (ops/view.c) check it with em_check_bounds, and every view
** op builds on them. The constructors that fill (empty, zeros, full) are
** ops (ops/creation.c).
*/
#include "core/core.h"

#include <stdlib.h>

/* -- Sizes -------------------------------------------------------------- */

bool em_mul_overflow_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

em_status em_numel_checked(const char *op, int ndim, const int64_t *sizes,
                           int64_t *numel) {
  char buf[EM_SHAPE_BUF];
  if (ndim < 0 || ndim > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: %d dimensions requested, at most %d are supported",
                   op, ndim, (int)EM_MAX_DIMS);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    if (sizes[i] < 0)
      return em_fail(EM_E_VALUE, "%s: negative dimension %lld in size %s", op,
                     (long long)sizes[i], em_fmt_shape(buf, sizeof buf, ndim, sizes));
  for (int i = 0; i < ndim; i++)
    if (em_mul_overflow_i64(n, sizes[i], &n))
      return em_fail(EM_E_VALUE, "%s: size %s has too many elements (overflows int64)",
                     op, em_fmt_shape(buf, sizeof buf, ndim, sizes));
  *numel = n;
  return EM_OK;
}

void em_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
  /* Only an empty tensor can have sizes whose product overflows (numel is
  ** checked otherwise); its strides address nothing, so saturate. */
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    if (em_mul_overflow_i64(s, sizes[i] > 1 ? sizes[i] : 1, &s)) s = INT64_MAX;
  }
}

em_status em_wrap_dim(const char *op, int64_t dim, int ndim, int *axis) {
  int n = ndim > 0 ? ndim : 1;
  if (dim >= 1 && dim <= n) { *axis = (int)dim - 1; return EM_OK; }
  if (dim <= -1 && dim >= -n) { *axis = (int)(n + dim); return EM_OK; }
  if (dim == 0)
    return em_fail(EM_E_INDEX, "%s: dimension 0 is invalid: dimensions are 1-based "
                   "(expected to be in range of [%d, %d])", op, -n, n);
  return em_fail(EM_E_INDEX, "%s: dimension %lld out of range (expected to be in range of [%d, %d])",
                 op, (long long)dim, -n, n);
}

/* -- Objects ------------------------------------------------------------ */

/* Released headers go back to this thread's pool (pool.c) for the next
** tensor: a view or a small result is made and collected many times a
** second from a script. */
static em_tensor *hdr_get(void) {
  em_tensor *t = em_pool_get(EM_POOL_TENSOR);
  return t ? t : malloc(sizeof(em_tensor));
}
static void hdr_put(em_tensor *t) {
  if (!em_pool_put(EM_POOL_TENSOR, t)) free(t);
}
void em_tensor_cache_trim(void) { em_pool_trim(); }
int em_tensor_cache_count(void) { return em_pool_count(EM_POOL_TENSOR); }

em_status em_tensor_alloc(em_storage *s, int64_t offset, int ndim,
                          const int64_t *sizes, const int64_t *strides,
                          em_dtype dt, em_tensor **out) {
  em_tensor *t = hdr_get();
  if (!t) return em_fail(EM_E_NOMEM, "out of memory allocating a tensor");
  atomic_init(&t->refcount, 1);
  t->ndim = ndim;
  t->dtype = dt;
  t->storage = s;
  em_storage_retain(s);
  t->offset = offset;
  for (int i = 0; i < ndim; i++) {
    t->sizes[i] = sizes[i];
    t->strides[i] = strides[i];
  }
  t->requires_grad = false;
  t->nograd_view = false;
  t->multi_view = false;
  t->hook_view = false;
  t->autograd = NULL;
  t->view_base = NULL;
  t->view_version = 0;
  *out = t;
  return EM_OK;
}

void em_tensor_retain(em_tensor *t) {
  if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
}

void em_tensor_release(em_tensor *t) {
  if (!t) return;
  if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1)
    return;
  if (t->autograd) ((em_autograd_head *)t->autograd)->release(t);  /* grad, grad_fn */
  /* a view's base is never itself a view: this recursion is one level */
  if (t->view_base) em_tensor_release(t->view_base);
  em_storage_release(t->storage);
  hdr_put(t);
}

int em_tensor_refcount(const em_tensor *t) {
  return atomic_load(&((em_tensor *)t)->refcount);
}
int em_tensor_ndim(const em_tensor *t) { return t->ndim; }
const int64_t *em_tensor_sizes(const em_tensor *t) { return t->sizes; }
const int64_t *em_tensor_strides(const em_tensor *t) { return t->strides; }
int64_t em_tensor_offset(const em_tensor *t) { return t->offset; }
em_dtype em_tensor_dtype(const em_tensor *t) { return t->dtype; }
em_device em_tensor_device(const em_tensor *t) { return t->storage->device; }
em_storage *em_tensor_storage(const em_tensor *t) { return t->storage; }

int64_t em_tensor_numel(const em_tensor *t) {
  /* an empty view's other sizes may multiply past int64: a 0 decides */
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] == 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->sizes[i];
  return n;
}

void *em_tensor_data(const em_tensor *t) {
  if (!t->storage->data) return NULL;
  /* An empty tensor may carry any offset (PyTorch's as_strided allows it)
  ** and addresses nothing: past the storage's end its data pointer is the
  ** storage's start, not an address whose computation would overflow. */
  size_t sz = em_dtype_size(t->dtype);
  uint64_t bytes; /* offset > nbytes / sz, without a division per call */
  if (__builtin_mul_overflow((uint64_t)t->offset, (uint64_t)sz, &bytes) ||
      bytes > t->storage->nbytes)
    return t->storage->data;
  return (char *)t->storage->data + bytes;
}

int em_tensor_is_contiguous(const em_tensor *t) {
  /* an empty tensor is contiguous whatever its strides (PyTorch), whichever
  ** dim holds the 0 */
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] == 0) return 1;
  int64_t expected = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->sizes[i] == 1) continue;
    if (t->strides[i] != expected) return 0;
    expected *= t->sizes[i];
  }
  return 1;
}

static int64_t dense_key(const em_tensor *t, int d) {
  return t->sizes[d] < 2 ? INT64_MAX : t->strides[d];
}

int em_tensor_is_non_overlapping_and_dense(const em_tensor *t) {
  if (em_tensor_is_contiguous(t)) return 1;
  /* order dims by stride (singleton dims last), then require dense packing */
  int perm[EM_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) {
    int j = i;
    while (j > 0 && dense_key(t, perm[j - 1]) > dense_key(t, i)) {
      perm[j] = perm[j - 1];
      j--;
    }
    perm[j] = i;
  }
  int64_t expected = 1;
  for (int i = 0; i < t->ndim; i++) {
    int d = perm[i];
    if (t->sizes[d] == 0) return 1;
    if (t->sizes[d] == 1) continue;
    if (t->strides[d] != expected) return 0;
    expected *= t->sizes[d];
  }
  return 1;
}

/* The bytes a geometry reaches from the start of its storage (0 when it
** has no elements); *overflow set, and no error raised, when that count
** passes int64. The other errors (the element count, a negative offset or
** stride) are raised. */
static em_status extent(const char *op, int64_t offset, int ndim, const int64_t *sizes,
                        const int64_t *strides, em_dtype dt, int64_t *nbytes, int *overflow) {
  char b1[EM_SHAPE_BUF];
  int64_t numel;
  *nbytes = 0;
  *overflow = 0;
  em_status st = em_numel_checked(op, ndim, sizes, &numel);
  if (st != EM_OK) return st;
  if (offset < 0)
    return em_fail(EM_E_VALUE, "%s: negative storage offset %lld", op, (long long)offset);
  for (int i = 0; i < ndim; i++)
    if (strides[i] < 0)
      return em_fail(EM_E_VALUE, "%s: negative strides are not supported (strides %s)",
                     op, em_fmt_shape(b1, sizeof b1, ndim, strides));
  if (numel == 0) return EM_OK;
  int64_t last = offset, step;
  for (int i = 0; i < ndim; i++)
    if (em_mul_overflow_i64(sizes[i] - 1, strides[i], &step) ||
        __builtin_add_overflow(last, step, &last)) {
      *overflow = 1;
      return EM_OK;
    }
  if (__builtin_add_overflow(last, 1, &last) ||
      em_mul_overflow_i64(last, (int64_t)em_dtype_size(dt), nbytes))
    *overflow = 1;
  return EM_OK;
}

em_status em_extent_bytes(const char *op, int64_t offset, int ndim, const int64_t *sizes,
                          const int64_t *strides, em_dtype dt, int64_t *nbytes) {
  char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
  int overflow;
  em_status st = extent(op, offset, ndim, sizes, strides, dt, nbytes, &overflow);
  if (st != EM_OK || !overflow) return st;
  return em_fail(EM_E_VALUE, "%s: size %s with strides %s and offset %lld reaches past "
                 "2^63 bytes", op, em_fmt_shape(b1, sizeof b1, ndim, sizes),
                 em_fmt_shape(b2, sizeof b2, ndim, strides), (long long)offset);
}

em_status em_check_bounds(const char *op, const em_storage *s, int64_t offset,
                          int ndim, const int64_t *sizes, const int64_t *strides,
                          em_dtype dt) {
  char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
  int64_t need;
  int overflow;
  em_status st = extent(op, offset, ndim, sizes, strides, dt, &need, &overflow);
  if (st != EM_OK) return st;
  if (!overflow && (uint64_t)need <= s->nbytes) return EM_OK;
  return em_fail(EM_E_VALUE,
                 "%s: size %s with strides %s and offset %lld reaches outside the "
                 "storage of %zu elements",
                 op, em_fmt_shape(b1, sizeof b1, ndim, sizes),
                 em_fmt_shape(b2, sizeof b2, ndim, strides), (long long)offset,
                 s->nbytes / em_dtype_size(dt));
}

void em_tensor_rebind(em_tensor *t, em_storage *s, int64_t offset, int ndim,
                      const int64_t *sizes, const int64_t *strides) {
  em_storage_retain(s); /* first: s may be the storage t holds */
  em_storage *old = t->storage;
  t->storage = s;
  t->offset = offset;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    t->sizes[i] = sizes[i];
    t->strides[i] = strides[i];
  }
  em_storage_release(old);
}

em_status em_tensor_new(em_storage *s, int64_t offset, int ndim,
                        const int64_t *sizes, const int64_t *strides,
                        em_dtype dt, em_tensor **out) {
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "tensor_new: invalid dtype %d", (int)dt);
  em_status st = em_check_bounds("tensor_new", s, offset, ndim, sizes, strides, dt);
  if (st != EM_OK) return st;
  return em_tensor_alloc(s, offset, ndim, sizes, strides, dt, out);
}

/* -- Autograd flags ------------------------------------------------------ */

int em_tensor_requires_grad(const em_tensor *t) { return t->requires_grad; }

em_status em_tensor_set_requires_grad(em_tensor *t, int on) {
  em_dtype_kind k = em_dtype_kindof(t->dtype);
  if (on && k != EM_KIND_FLOAT && k != EM_KIND_COMPLEX)
    return em_fail(EM_E_TYPE,
                   "requires_grad: only tensors of floating point and complex dtype can "
                   "require gradients, got ember.%s", em_dtype_name(t->dtype));
  t->requires_grad = on != 0;
  return EM_OK;
}
