/*
** ops/gather_scatter.c -- reads and writes at index positions along a dim:
** index_select, gather, take (reads), scatter_/scatter_add/scatter_reduce_,
** put_ and index_fill_/index_copy_/index_add_ (writes), over the index
** family of the kernel table (core/kern_index.h).
**
** What holds:
** - Index tensors are int64 or int32 and hold 1-based positions (negative
**   ones count from the end). Every index is normalised and bounds-checked
**   by the device (the normalize kernel) into a private 0-based int64 copy
**   BEFORE any element is read or written, so a bad index never reads out
**   of bounds and an in-place op that fails leaves its destination
**   untouched. A device without values (meta) cannot check bounds: there,
**   as in PyTorch's meta kernels, the ops give shapes only.
** - An indexed operand reaches the kernels "restrided" (kern_index.h): the
**   iteration shape is the index's, the indexed dim has stride 0.
** - Every operand is on one device, where the result is made; mixed
**   devices are an error naming both.
** - Writes of a source that overlaps the destination read a snapshot.
*/
#include "ops/index_checks.h"
#include "autograd/autograd.h"

#include <math.h>

/* -- Index normalisation --------------------------------------------------------- */

/* A contiguous int64 copy of idx (on its device) with every value turned
** into a 0-based offset in [0, size). dim1 > 0 names the dimension in the
** message; 0 means positions in t read as 1-d (take/put_). */
static em_status normalize_index(const char *op, const em_index_kernels *k,
                                 const em_tensor *idx, int64_t size, int dim1,
                                 em_tensor **out) {
  em_tensor *c;
  em_status st = check_index_dtype(op, idx);
  if (st != EM_OK) return st;
  st = em_empty(idx->ndim, idx->sizes, EM_INT64, idx->storage->device, &c);
  if (st != EM_OK) return st;
  em_iter it;
  const em_tensor *ops[2] = {c, idx};
  st = em_iter_build(&it, op, 2, ops, idx->ndim, idx->sizes, false);
  if (st != EM_OK) { em_tensor_release(c); return st; }
  em_index_bad bad;
  k->normalize(&it, idx->dtype, size, &bad);
  if (bad.found) {
    int64_t x = bad.value;
    const char *hint = x == 0 ? " (positions are 1-based)" : "";
    em_tensor_release(c);
    if (dim1 > 0)
      return em_fail(EM_E_INDEX,
                     "%s: index %lld is out of bounds for dimension %d with size %lld%s",
                     op, (long long)x, dim1, (long long)size, hint);
    return em_fail(EM_E_INDEX,
                   "%s: index %lld is out of bounds for a tensor of %lld elements%s",
                   op, (long long)x, (long long)size, hint);
  }
  *out = c;
  return EM_OK;
}

/* The size and stride (elements) of t along axis; a 0-d tensor reads as
** one element. */
static int64_t dim_size(const em_tensor *t, int axis) {
  return t->ndim == 0 ? 1 : t->sizes[axis];
}
static int64_t dim_stride(const em_tensor *t, int axis) {
  return t->ndim == 0 ? 0 : t->strides[axis];
}

/* A 0-d tensor of dtype dt holding value on t's device (for value forms:
** stride 0). */
static em_status scalar_tensor(const em_tensor *t, em_scalar value, em_dtype dt,
                               em_tensor **out) {
  return em_full(0, NULL, value, dt, t->storage->device, out);
}

/* -- Gather-like reads --------------------------------------------------------
** gather_core: out (contiguous, shape n/sizes) = src[..idx..] where src is
** t restrided (t's strides, indexed axis stride 0) and idx is given with
** its own strides over the same shape. */
static em_status gather_core(const char *op, const em_index_kernels *k,
                             const em_tensor *t, const em_tensor *idx,
                             const int64_t *idx_strides, int ndim, const int64_t *shape,
                             const int64_t *src_strides, int64_t elem_stride,
                             em_tensor **out) {
  em_tensor *o;
  em_status st = em_empty(ndim, shape, t->dtype, t->storage->device, &o);
  if (st != EM_OK) return st;
  em_tensor sv, iv;
  restride(&sv, t, ndim, shape, src_strides);
  restride(&iv, idx, ndim, shape, idx_strides);
  em_iter it;
  const em_tensor *ops[3] = {o, &sv, &iv};
  st = em_iter_build(&it, op, 3, ops, ndim, shape, false);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  k->gather(&it, t->dtype, elem_stride * (int64_t)em_dtype_size(t->dtype));
  *out = o;
  return EM_OK;
}

static em_status check_vector_index(const char *op, const em_tensor *index) {
  if (index->ndim > 1)
    return em_fail(EM_E_VALUE, "%s: index must be 1-d or 0-d, got %d dimensions",
                   op, index->ndim);
  return EM_OK;
}

static em_status index_select_nograd(const em_tensor *t, int64_t dim,
                                     const em_tensor *index, em_tensor **out) {
  const char *op = "index_select";
  const em_index_kernels *k;
  const em_tensor *all[2] = {t, index};
  int axis;
  em_status st = index_kernels(op, 2, all, &k);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = check_vector_index(op, index);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_tensor *idx;
  st = normalize_index(op, k, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  int64_t len = em_tensor_numel(idx);
  int nd = t->ndim;
  int64_t shape[EM_MAX_DIMS], ss[EM_MAX_DIMS], is[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    shape[i] = i == axis ? len : t->sizes[i];
    ss[i] = i == axis ? 0 : t->strides[i];
    is[i] = i == axis ? 1 : 0;
  }
  if (nd == 0) { /* a 0-d tensor: index holds one position, result 0-d */
    if (len != 1) {
      em_tensor_release(idx);
      return em_fail(EM_E_VALUE, "%s: a 0-d tensor takes exactly one index, got %lld",
                     op, (long long)len);
    }
  }
  if (nd > 0 && em_tensor_is_contiguous(t)) { /* fast path: block copies */
    em_tensor *o;
    st = em_empty(nd, shape, t->dtype, t->storage->device, &o);
    if (st == EM_OK) {
      k->select_blocks(o, t, idx, axis);
      *out = o;
    }
    em_tensor_release(idx);
    return st;
  }
  if (nd > 0 && (t->dtype == EM_COMPLEX64 || t->dtype == EM_COMPLEX128)) {
    /* the gather loops have no complex rows: a contiguous copy takes the
    ** block path (complex elements move as bytes) */
    em_tensor *c = NULL;
    st = em_contiguous(t, &c);
    if (st == EM_OK) st = index_select_nograd(c, dim, index, out);
    em_tensor_release(c);
    em_tensor_release(idx);
    return st;
  }
  st = gather_core(op, k, t, idx, is, nd, shape, ss, dim_stride(t, axis), out);
  em_tensor_release(idx);
  return st;
}

static em_status gather_nograd(const em_tensor *t, int64_t dim, const em_tensor *index,
                               em_tensor **out) {
  const char *op = "gather";
  const em_index_kernels *k;
  const em_tensor *all[2] = {t, index};
  int axis;
  em_status st = index_kernels(op, 2, all, &k);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  /* an empty index gathers nothing whatever its rank (PyTorch checks the
     shapes only when the index has elements) */
  if (em_tensor_numel(index) == 0)
    return em_empty(index->ndim, index->sizes, t->dtype, t->storage->device, out);
  int tnd = t->ndim ? t->ndim : 1, ind = index->ndim ? index->ndim : 1;
  if (tnd != ind)
    return em_fail(EM_E_VALUE,
                   "%s: index tensor must have the same number of dimensions as "
                   "input tensor (%d), got %d", op, t->ndim, index->ndim);
  for (int i = 0; i < index->ndim; i++)
    if (i != axis && index->sizes[i] > dim_size(t, i))
      return em_fail(EM_E_VALUE,
                     "%s: size of index (%lld) exceeds the size of input (%lld) "
                     "in dimension %d", op, (long long)index->sizes[i],
                     (long long)dim_size(t, i), i + 1);
  em_tensor *idx;
  st = normalize_index(op, k, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  int nd = index->ndim;
  int64_t ss[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) ss[i] = i == axis ? 0 : t->strides[i];
  st = gather_core(op, k, t, idx, idx->strides, nd, idx->sizes, ss,
                   dim_stride(t, axis), out);
  em_tensor_release(idx);
  return st;
}

static em_status take_nograd(const em_tensor *t, const em_tensor *index, em_tensor **out) {
  const char *op = "take";
  const em_index_kernels *k;
  const em_tensor *all[2] = {t, index};
  em_status st = index_kernels(op, 2, all, &k);
  if (st != EM_OK) return st;
  em_tensor *idx, *tc;
  st = normalize_index(op, k, index, em_tensor_numel(t), 0, &idx);
  if (st != EM_OK) return st;
  st = em_contiguous(t, &tc);
  if (st != EM_OK) { em_tensor_release(idx); return st; }
  int64_t zero[EM_MAX_DIMS] = {0};
  st = gather_core(op, k, tc, idx, idx->strides, idx->ndim, idx->sizes, zero, 1, out);
  em_tensor_release(tc);
  em_tensor_release(idx);
  return st;
}

/* -- Scatter-like writes ------------------------------------------------------
** scatter_core: dst is t restrided to shape (indexed axis stride 0), idx
** and src are given over the same shape. */
static em_status scatter_core(const char *op, const em_index_kernels *k, em_tensor *t,
                              int ndim, const int64_t *shape, const int64_t *dst_strides,
                              const em_tensor *idx, const int64_t *idx_strides,
                              const em_tensor *src, const int64_t *src_strides,
                              int64_t elem_stride, em_scatter_mode r, em_scalar alpha) {
  em_tensor dv, iv, sv;
  restride(&dv, t, ndim, shape, dst_strides);
  restride(&iv, idx, ndim, shape, idx_strides);
  restride(&sv, src, ndim, shape, src_strides);
  em_scatter_params c;
  c.stride = elem_stride * (int64_t)em_dtype_size(t->dtype);
  c.alpha_f = alpha.kind == EM_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  c.alpha_i = alpha.kind == EM_SCALAR_FLOAT ? (int64_t)alpha.f : alpha.i;
  em_iter it;
  const em_tensor *ops[3] = {&dv, &iv, &sv};
  em_status st = em_iter_build(&it, op, 3, ops, ndim, shape, false);
  if (st == EM_OK) k->scatter(&it, t->dtype, r, &c);
  return st;
}

static const em_scalar ONE = {EM_SCALAR_INT, 1, 1.0};

/* The checks scatter, scatter_add and scatter_reduce share. */
static em_status scatter_checks(const char *op, const em_tensor *t, int64_t dim,
                                const em_tensor *index, const em_tensor *src,
                                const em_index_kernels **k, int *axis) {
  const em_tensor *all[3] = {t, index, src};
  em_status st = index_kernels(op, 3, all, k);
  if (st == EM_OK) st = em_check_writable(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK && src) st = check_same_dtype(op, t, src, "src");
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, axis);
  if (st != EM_OK) return st;
  /* an empty index writes nothing whatever its rank (as PyTorch); the
     callers return before touching t */
  if (em_tensor_numel(index) == 0) return EM_OK;
  int tnd = t->ndim ? t->ndim : 1, ind = index->ndim ? index->ndim : 1;
  if (tnd != ind)
    return em_fail(EM_E_VALUE,
                   "%s: index tensor must have the same number of dimensions as "
                   "self tensor (%d), got %d", op, t->ndim, index->ndim);
  if (src) {
    int snd = src->ndim ? src->ndim : 1;
    if (snd != ind)
      return em_fail(EM_E_VALUE,
                     "%s: index tensor must have the same number of dimensions as "
                     "src tensor (%d), got %d", op, src->ndim, index->ndim);
  }
  for (int i = 0; i < index->ndim; i++) {
    if (i != *axis && index->sizes[i] > dim_size(t, i))
      return em_fail(EM_E_VALUE,
                     "%s: size of index (%lld) exceeds the size of self (%lld) in "
                     "dimension %d", op, (long long)index->sizes[i],
                     (long long)dim_size(t, i), i + 1);
    if (src && index->sizes[i] > dim_size(src, i))
      return em_fail(EM_E_VALUE,
                     "%s: size of index (%lld) exceeds the size of src (%lld) in "
                     "dimension %d", op, (long long)index->sizes[i],
                     (long long)dim_size(src, i), i + 1);
  }
  return EM_OK;
}

/* Runs one scatter pass of src (a tensor, or the 0-d value tensor) into t
** with reduction r; idx is normalised. */
static em_status scatter_pass(const char *op, const em_index_kernels *k, em_tensor *t,
                              int axis, const em_tensor *idx, const em_tensor *src,
                              em_scatter_mode r) {
  int nd = idx->ndim;
  int64_t ds[EM_MAX_DIMS], ss[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    ds[i] = i == axis ? 0 : t->strides[i];
    ss[i] = src->ndim == 0 ? 0 : src->strides[i];
  }
  return scatter_core(op, k, t, nd, idx->sizes, ds, idx, idx->strides, src, ss,
                      dim_stride(t, axis), r, ONE);
}

static em_status scatter_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                                const em_tensor *src, em_scalar value,
                                em_scatter_mode reduce) {
  const char *op = "scatter_";
  const em_index_kernels *k;
  int axis;
  if (reduce != EM_SCATTER_NONE && reduce != EM_SCATTER_SUM && reduce != EM_SCATTER_PROD)
    return em_fail(EM_E_VALUE, "%s: reduce must be 'add' or 'multiply'", op);
  em_status st = scatter_checks(op, t, dim, index, src, &k, &axis);
  if (st != EM_OK || em_tensor_numel(index) == 0) return st;
  em_tensor *idx, *snap = NULL, *vt = NULL;
  st = normalize_index(op, k, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  if (src) st = snapshot(t, &src, &snap);
  else st = scalar_tensor(t, value, t->dtype, &vt), src = vt;
  if (st == EM_OK) st = scatter_pass(op, k, t, axis, idx, src, reduce);
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(snap);
  em_tensor_release(vt);
  em_tensor_release(idx);
  return st;
}

/* The identity of a reduction, written where include_self = 0 applies. */
static em_scalar reduce_identity(em_scatter_mode r, em_dtype dt) {
  em_scalar s = {EM_SCALAR_INT, 0, 0.0};
  if (r == EM_SCATTER_PROD) s.i = 1, s.f = 1.0;
  if (r == EM_SCATTER_AMAX || r == EM_SCATTER_AMIN) {
    if (dt == EM_BOOL) {
      s.i = r == EM_SCATTER_AMIN;
    } else { /* +-inf saturates to the integer dtypes' extremes */
      s.kind = EM_SCALAR_FLOAT;
      s.f = r == EM_SCATTER_AMAX ? -INFINITY : INFINITY;
    }
  }
  return s;
}

static em_status scatter_reduce_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                                       const em_tensor *src, em_scatter_mode reduce,
                                       int include_self) {
  const char *op = "scatter_reduce";
  const em_index_kernels *k;
  int axis;
  if (reduce == EM_SCATTER_NONE || (unsigned)reduce > EM_SCATTER_AMIN)
    return em_fail(EM_E_VALUE,
                   "%s: reduce must be one of 'sum', 'prod', 'mean', 'amax', 'amin'", op);
  if (!src) return em_fail(EM_E_VALUE, "%s: src must be a tensor", op);
  /* a bool mean has no meaning (PyTorch has no bool kernel for it) */
  if (reduce == EM_SCATTER_MEAN && t->dtype == EM_BOOL)
    return em_fail(EM_E_TYPE, "%s: reduce 'mean' is not supported for bool tensors", op);
  em_status st = scatter_checks(op, t, dim, index, src, &k, &axis);
  if (st != EM_OK || em_tensor_numel(index) == 0) return st;
  em_tensor *idx, *snap = NULL, *idt = NULL, *cnt = NULL, *one = NULL;
  st = normalize_index(op, k, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  st = snapshot(t, &src, &snap);
  if (st == EM_OK && !include_self) {
    st = scalar_tensor(t, reduce_identity(reduce, t->dtype), t->dtype, &idt);
    if (st == EM_OK) st = scatter_pass(op, k, t, axis, idx, idt, EM_SCATTER_NONE);
  }
  if (st == EM_OK && reduce == EM_SCATTER_MEAN) {
    /* count[pos] = (include_self ? 1 : 0) + contributions at pos */
    em_scalar base = {EM_SCALAR_INT, include_self ? 1 : 0, 0.0};
    st = em_full(t->ndim, t->sizes, base, EM_INT64, t->storage->device, &cnt);
    if (st == EM_OK) st = scalar_tensor(t, ONE, EM_INT64, &one);
    if (st == EM_OK) {
      int nd = idx->ndim;
      int64_t ds[EM_MAX_DIMS], zs[EM_MAX_DIMS] = {0};
      for (int i = 0; i < nd; i++) ds[i] = i == axis ? 0 : cnt->strides[i];
      st = scatter_core(op, k, cnt, nd, idx->sizes, ds, idx, idx->strides, one, zs,
                        dim_stride(cnt, axis), EM_SCATTER_SUM, ONE);
    }
  }
  if (st == EM_OK) st = scatter_pass(op, k, t, axis, idx, src, reduce);
  if (st == EM_OK && reduce == EM_SCATTER_MEAN) {
    em_iter it;
    const em_tensor *ops[2] = {t, cnt};
    st = em_iter_build(&it, op, 2, ops, t->ndim, t->sizes, false);
    if (st == EM_OK) k->scatter_mean_div(&it, t->dtype);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(snap);
  em_tensor_release(idt);
  em_tensor_release(cnt);
  em_tensor_release(one);
  em_tensor_release(idx);
  return st;
}

/* -- put_ ----------------------------------------------------------------------- */

static em_status put_nograd(em_tensor *t, const em_tensor *index, const em_tensor *src,
                            int accumulate) {
  const char *op = "put_";
  const em_index_kernels *k;
  const em_tensor *all[3] = {t, index, src};
  em_status st = index_kernels(op, 3, all, &k);
  if (st == EM_OK) st = em_check_writable(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = check_same_dtype(op, t, src, "source");
  if (st != EM_OK) return st;
  int64_t n = em_tensor_numel(index);
  if (em_tensor_numel(src) != n)
    return em_fail(EM_E_VALUE,
                   "%s: expected source and index to have the same number of "
                   "elements, but got %lld and %lld", op,
                   (long long)em_tensor_numel(src), (long long)n);
  em_tensor *idx, *sc = NULL, *work = NULL;
  st = normalize_index(op, k, index, em_tensor_numel(t), 0, &idx);
  if (st != EM_OK) return st;
  /* positions are row-major: work on t itself when contiguous, else on a
  ** contiguous copy that is written back */
  if (em_tensor_is_contiguous(t)) {
    em_tensor_retain(t);
    work = t;
  } else {
    st = em_contiguous(t, &work);
  }
  /* a contiguous copy of the source, read in row-major order (and a
  ** snapshot, should it share bytes with t) */
  if (st == EM_OK)
    st = em_empty(src->ndim, src->sizes, src->dtype, src->storage->device, &sc);
  if (st == EM_OK) st = em_copy_(sc, src);
  if (st == EM_OK && n > 0) {
    int64_t shape[1] = {n}, zero[1] = {0}, one[1] = {1};
    st = scatter_core(op, k, work, 1, shape, zero, idx, one, sc, one, 1,
                      accumulate ? EM_SCATTER_SUM : EM_SCATTER_NONE, ONE);
    if (st == EM_OK && work != t) st = em_copy_(t, work);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(sc);
  em_tensor_release(work);
  em_tensor_release(idx);
  return st;
}

/* -- index_fill_ / index_copy_ / index_add_ -------------------------------------- */

/* index_copy_ and index_fill_: the slices of src (or the 0-d value) put
** at the positions, as rows of t[key]'s key_put (blocks, split among
** threads). idx (normalised, private) becomes the offsets in place. */
static em_status put_rows(const em_index_kernels *k, em_tensor *t, int axis, em_tensor *idx,
                          const em_tensor *src) {
  em_operand in[2] = {{idx, {0}}, {NULL, {EM_SCALAR_INT, t->strides[axis], 0.0}}};
  em_status st = em_elementwise(EM_OP_MUL, 2, in, NULL, idx, NULL);
  if (st != EM_OK) return st;
  em_key_layout l;
  l.nouter = axis;
  l.ninner = t->ndim - axis - 1;
  l.nb = em_tensor_numel(idx);
  l.ob = src->ndim == 0 ? 0 : src->strides[axis];
  for (int i = 0, j = 0; i < t->ndim; i++) {
    if (i == axis) continue;
    l.sizes[j] = t->sizes[i];
    l.vstrides[j] = t->strides[i];
    l.ostrides[j] = src->ndim == 0 ? 0 : src->strides[i];
    j++;
  }
  k->key_put(t, src, idx, &l);
  return EM_OK;
}

/* dst[.., idx[i], ..] (op)= src[.., i, ..] along axis, src shaped like t
** with the index's length at axis (or a 0-d value tensor). */
static em_status index_write(const char *op, em_tensor *t, int64_t dim,
                             const em_tensor *index, const em_tensor *src,
                             em_scalar value, em_scatter_mode r, em_scalar alpha) {
  const em_index_kernels *k;
  const em_tensor *all[3] = {t, index, src};
  int axis;
  em_status st = index_kernels(op, 3, all, &k);
  /* a value fill (index_fill_) may write into an expanded t (fill_nograd) */
  if (st == EM_OK && (src || r != EM_SCATTER_NONE)) st = em_check_writable(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = check_vector_index(op, index);
  if (st == EM_OK && src) st = check_same_dtype(op, t, src, "source");
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  int64_t len = em_tensor_numel(index);
  int nd = t->ndim;
  int64_t shape[EM_MAX_DIMS], ds[EM_MAX_DIMS], is[EM_MAX_DIMS], ss[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    shape[i] = i == axis ? len : t->sizes[i];
    ds[i] = i == axis ? 0 : t->strides[i];
    is[i] = i == axis ? 1 : 0;
  }
  if (src && !(src->ndim == 0 && em_tensor_numel(index) == 1 && nd <= 1)) {
    bool ok = src->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = src->sizes[i] == shape[i];
    if (!ok) {
      char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
      return em_fail(EM_E_VALUE,
                     "%s: source of shape %s does not match the expected shape %s "
                     "(self's shape with the index's length %lld in dimension %d)",
                     op, em_fmt_shape(b1, sizeof b1, src->ndim, src->sizes),
                     em_fmt_shape(b2, sizeof b2, nd, shape), (long long)len, axis + 1);
    }
  }
  if (nd == 0 && len != 1)
    return em_fail(EM_E_VALUE, "%s: a 0-d tensor takes exactly one index, got %lld",
                   op, (long long)len);
  em_tensor *idx, *snap = NULL, *vt = NULL;
  st = normalize_index(op, k, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  if (src) st = snapshot(t, &src, &snap);
  else st = scalar_tensor(t, value, t->dtype, &vt), src = vt;
  if (st == EM_OK && r == EM_SCATTER_NONE && nd > 0) {
    st = put_rows(k, t, axis, idx, src);
  } else if (st == EM_OK) {
    for (int i = 0; i < nd; i++) ss[i] = src->ndim == 0 ? 0 : src->strides[i];
    st = scatter_core(op, k, t, nd, shape, ds, idx, is, src, ss, dim_stride(t, axis),
                      r, alpha);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(snap);
  em_tensor_release(vt);
  em_tensor_release(idx);
  return st;
}

static em_status index_fill_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                                   em_scalar value) {
  return index_write("index_fill_", t, dim, index, NULL, value, EM_SCATTER_NONE, ONE);
}

static em_status index_copy_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                                   const em_tensor *src) {
  if (!src) return em_fail(EM_E_VALUE, "index_copy_: source must be a tensor");
  return index_write("index_copy_", t, dim, index, src, ONE, EM_SCATTER_NONE, ONE);
}

static em_status index_add_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                                  const em_tensor *src, em_scalar alpha) {
  if (!src) return em_fail(EM_E_VALUE, "index_add_: source must be a tensor");
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT && alpha.kind == EM_SCALAR_FLOAT)
    return em_fail(EM_E_TYPE,
                   "index_add_: for an integral self (%s), alpha must be an integer, "
                   "got %g", em_dtype_name(t->dtype), alpha.f);
  return index_write("index_add_", t, dim, index, src, ONE, EM_SCATTER_SUM, alpha);
}

/* -- Autograd recording ---------------------------------------------------------
** Reads are gathers: where each output element came from is found by running
** the op over an arange of t's shape. Writes record the positions they
** wrote (autograd.h, EM_AG_INPLACE). */

static double scalar_value(em_scalar v) {
  return v.kind == EM_SCALAR_FLOAT ? v.f : (double)v.i;
}

em_status em_index_select(const em_tensor *t, int64_t dim, const em_tensor *index,
                          em_tensor **out) {
  EM_AG_GATHER("IndexSelectBackward0", t, out,
               index_select_nograd(ag_src_, dim, index, ag_dst_));
}
em_status em_gather(const em_tensor *t, int64_t dim, const em_tensor *index,
                    em_tensor **out) {
  EM_AG_GATHER("GatherBackward0", t, out, gather_nograd(ag_src_, dim, index, ag_dst_));
}
em_status em_take(const em_tensor *t, const em_tensor *index, em_tensor **out) {
  EM_AG_GATHER("TakeBackward0", t, out, take_nograd(ag_src_, index, ag_dst_));
}

/* put_'s written positions in src's shape (index only has src's number of
** elements): src's gradient is the output gradient at these positions */
static em_status put_positions(const em_tensor *ar, const em_tensor *index,
                               const em_tensor *src, em_tensor **pos) {
  em_tensor *p;
  em_status st = take_nograd(ar, index, &p);
  if (st != EM_OK) return st;
  st = em_reshape(p, src->ndim, src->sizes, pos);
  em_tensor_release(p);
  return st;
}

em_status em_put_(em_tensor *t, const em_tensor *index, const em_tensor *src,
                  int accumulate) {
  EM_AG_INPLACE("put_", "PutBackward0", t, src, accumulate, 1.0,
                put_nograd(t, index, src, accumulate),
                put_positions(ag_ar_, index, src, &ag_pos_));
}

em_status em_scatter_(em_tensor *t, int64_t dim, const em_tensor *index,
                      const em_tensor *src, em_scalar value, em_scatter_mode reduce) {
  if (reduce != EM_SCATTER_NONE && reduce != EM_SCATTER_SUM) {
    em_status st = em_ag_unsupported("scatter_", t, src);
    if (st != EM_OK) return st;
  }
  EM_AG_INPLACE("scatter_", reduce == EM_SCATTER_SUM ? "ScatterAddBackward0" : "ScatterBackward0",
                t, src, reduce == EM_SCATTER_SUM, 1.0,
                scatter_nograd(t, dim, index, src, value, reduce),
                gather_nograd(ag_ar_, dim, index, &ag_pos_));
}

em_status em_scatter_reduce_(em_tensor *t, int64_t dim, const em_tensor *index,
                             const em_tensor *src, em_scatter_mode reduce,
                             int include_self) {
  if (reduce != EM_SCATTER_SUM || !include_self) {
    em_status st = em_ag_unsupported("scatter_reduce_", t, src);
    if (st != EM_OK) return st;
  }
  EM_AG_INPLACE("scatter_reduce_", "ScatterReduceBackward0", t, src, 1, 1.0,
                scatter_reduce_nograd(t, dim, index, src, reduce, include_self),
                gather_nograd(ag_ar_, dim, index, &ag_pos_));
}

/* index_fill_/index_copy_/index_add_ into a 0-d t write into the 1-element
** 1-d tensor it views, as PyTorch: any number of positions (each 1 or -1),
** a 1-d source with one element per position. *tv is that view when the op
** needs it (more than one position, or a 1-d source), else NULL. */
static em_status vector_view(const char *op, em_tensor *t, int64_t dim,
                             const em_tensor *index, const em_tensor *src, em_tensor **tv) {
  *tv = NULL;
  if (t->ndim != 0 || !index || index->ndim > 1) return EM_OK;
  if (em_tensor_numel(index) == 1 && !(src && src->ndim == 1)) return EM_OK;
  int axis;
  em_status st = em_wrap_dim(op, dim, 0, &axis);
  if (st != EM_OK) return st;
  const int64_t one = 1;
  return em_reshape(t, 1, &one, tv);
}
/* The prologue of the three: on the 1-d view when vector_view gives one,
** CALL being the same op on tv. */
#define ON_VECTOR_VIEW(op, src, CALL)                                   \
  em_tensor *tv;                                                        \
  em_status st = vector_view(op, t, dim, index, src, &tv);              \
  if (st != EM_OK || tv) {                                              \
    if (st == EM_OK) st = CALL;                                         \
    em_tensor_release(tv);                                              \
    return st;                                                          \
  }

em_status em_index_fill_(em_tensor *t, int64_t dim, const em_tensor *index,
                         em_scalar value) {
  ON_VECTOR_VIEW("index_fill_", NULL, em_index_fill_(tv, dim, index, value))
  EM_AG_INPLACE("index_fill_", "IndexFillBackward0", t, NULL, 0, 1.0,
                index_fill_nograd(t, dim, index, value),
                index_select_nograd(ag_ar_, dim, index, &ag_pos_));
}
em_status em_index_copy_(em_tensor *t, int64_t dim, const em_tensor *index,
                         const em_tensor *src) {
  ON_VECTOR_VIEW("index_copy_", src, em_index_copy_(tv, dim, index, src))
  EM_AG_INPLACE("index_copy_", "IndexCopyBackward0", t, src, 0, 1.0,
                index_copy_nograd(t, dim, index, src),
                index_select_nograd(ag_ar_, dim, index, &ag_pos_));
}
em_status em_index_add_(em_tensor *t, int64_t dim, const em_tensor *index,
                        const em_tensor *src, em_scalar alpha) {
  ON_VECTOR_VIEW("index_add_", src, em_index_add_(tv, dim, index, src, alpha))
  EM_AG_INPLACE("index_add_", "IndexAddBackward0", t, src, 1, scalar_value(alpha),
                index_add_nograd(t, dim, index, src, alpha),
                index_select_nograd(ag_ar_, dim, index, &ag_pos_));
}
