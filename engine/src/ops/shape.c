/*
** ops/shape.c -- joining, cutting and repeating tensors:
** cat/stack/hstack/vstack/dstack, split/chunk/tensor_split/unbind,
** repeat/tile/repeat_interleave, roll.
**
** Guarantees:
** - cat and stack return a new contiguous tensor of the operands' promoted
**   dtype (PyTorch's promote_types); every element is moved by em_copy_,
**   i.e. through the iterator and the cast kernels.
** - split/chunk/tensor_split/unbind return views: new tensors sharing the
**   input's storage (em_as_strided), never copies.
** - Shapes are checked before anything is allocated; messages name the
**   operation, the 1-based dim and the offending sizes.
** - Intermediate views handed to em_copy_ are stack headers (a copy of a
**   tensor struct with other sizes/strides/offset): em_copy_ never retains
**   its arguments, so nothing here is allocated per operand.
** - Results are made on the operands' device; operands on different
**   devices are an error naming both. Only repeat_interleave reads values
**   (its repeats), through the index kernels (core/kern_index.h): the
**   result's length is their sum, which a device without values (meta)
**   cannot know.
*/
#include "core/kern_index.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"

#include <stdlib.h>

/* -- Stack headers -------------------------------------------------------------- */

/* v = t's header with other sizes/strides/offset; only for em_copy_ and
** friends, which never retain their arguments. */
#define header em_stack_header

/* t with size-1 dims inserted: atleast_1d/2d/3d as NumPy and PyTorch
** define them (1-d [n] is [1, n] in 2-d and [1, n, 1] in 3-d). */
static void atleast(em_tensor *v, const em_tensor *t, int want) {
  int64_t sz[EM_MAX_DIMS], st[EM_MAX_DIMS];
  int nd = t->ndim;
  for (int i = 0; i < nd; i++) sz[i] = t->sizes[i], st[i] = t->strides[i];
  if (nd < want) {
    if (nd == 0) {
      for (int i = 0; i < want; i++) sz[i] = 1, st[i] = 1;
      nd = want;
    } else if (nd == 1) {  /* [n] -> [1, n] (-> [1, n, 1]) */
      sz[1] = sz[0], st[1] = st[0];
      sz[0] = 1, st[0] = 1;
      nd = 2;
      if (want == 3) sz[2] = 1, st[2] = 1, nd = 3;
    } else {  /* [m, n] -> [m, n, 1] */
      sz[2] = 1, st[2] = 1;
      nd = 3;
    }
  }
  header(v, t, nd, sz, st, t->offset);
}

/* t must be on ref's device, where the result is made. */
static em_status same_device(const char *op, const em_tensor *ref, const em_tensor *t) {
  return em_same_device_check(op, ref->storage->device, t->storage->device);
}

/* -- cat / stack ------------------------------------------------------------------ */

static bool legacy_empty(const em_tensor *t) {
  return t->ndim == 1 && t->sizes[0] == 0;
}

static em_status cat_core(const char *op, int64_t n, const em_tensor *const *ts,
                          int64_t dim, em_tensor **out) {
  if (n <= 0) return em_fail(EM_E_VALUE, "%s: expected a non-empty list of tensors", op);
  em_dtype dt = ts[0]->dtype;
  const em_tensor *ref = NULL;
  int64_t refi = 0;
  for (int64_t i = 0; i < n; i++) {
    em_status st = same_device(op, ts[0], ts[i]);
    if (st != EM_OK) return st;
    if (ts[i]->ndim == 0)
      return em_fail(EM_E_VALUE,
                     "%s: zero-dimensional tensor (tensor %lld) cannot be concatenated",
                     op, (long long)i + 1);
    dt = em_promote_types(dt, ts[i]->dtype);
    if (!ref && !legacy_empty(ts[i])) ref = ts[i], refi = i;
  }
  if (!ref) ref = ts[0];
  int axis;
  em_status st = em_wrap_dim(op, dim, ref->ndim, &axis);
  if (st != EM_OK) return st;
  int nd = ref->ndim;
  int64_t shape[EM_MAX_DIMS];
  memcpy(shape, ref->sizes, sizeof(int64_t) * (size_t)nd);
  shape[axis] = 0;
  for (int64_t i = 0; i < n; i++) {
    const em_tensor *t = ts[i];
    if (legacy_empty(t) && t != ref) continue;
    if (t->ndim != nd)
      return em_fail(EM_E_VALUE,
                     "%s: tensors must have the same number of dimensions: tensor "
                     "%lld has %d, tensor %lld has %d", op, (long long)refi + 1, nd,
                     (long long)i + 1, t->ndim);
    for (int d = 0; d < nd; d++)
      if (d != axis && t->sizes[d] != ref->sizes[d])
        return em_fail(EM_E_VALUE,
                       "%s: sizes of tensors must match except in dimension %d, but "
                       "in dimension %d tensor %lld has size %lld and tensor %lld "
                       "has size %lld", op, axis + 1, d + 1, (long long)refi + 1,
                       (long long)ref->sizes[d], (long long)i + 1,
                       (long long)t->sizes[d]);
    shape[axis] += t->sizes[axis];
  }
  em_tensor *o;
  st = em_empty(nd, shape, dt, ts[0]->storage->device, &o);
  if (st != EM_OK) return st;
  int64_t at = 0;
  for (int64_t i = 0; i < n && st == EM_OK; i++) {
    const em_tensor *t = ts[i];
    if (legacy_empty(t) && t != ref) continue;
    em_tensor part;
    header(&part, o, nd, t->sizes, o->strides, o->offset + at * o->strides[axis]);
    st = em_copy_(&part, t);
    at += t->sizes[axis];
  }
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

static em_status cat_nograd(int64_t n, const em_tensor *const *ts, int64_t dim,
                 em_tensor **out) {
  return cat_core("cat", n, ts, dim, out);
}

/* Applies atleast(want) to every operand, then cat along dim (0 means:
** hstack's rule, 1 if the first operand is 1-d, else 2). */
static em_status cat_atleast(const char *op, int64_t n, const em_tensor *const *ts,
                             int want, int64_t dim, em_tensor **out) {
  if (n <= 0) return em_fail(EM_E_VALUE, "%s: expected a non-empty list of tensors", op);
  em_tensor *views = malloc(sizeof(em_tensor) * (size_t)n);
  const em_tensor **ptrs = malloc(sizeof(em_tensor *) * (size_t)n);
  if (!views || !ptrs) {
    free(views);
    free(ptrs);
    return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  }
  for (int64_t i = 0; i < n; i++) {
    atleast(&views[i], ts[i], want);
    ptrs[i] = &views[i];
  }
  if (dim == 0) dim = views[0].ndim == 1 ? 1 : 2;
  em_status st = cat_core(op, n, ptrs, dim, out);
  free(views);
  free(ptrs);
  return st;
}

static em_status hstack_nograd(int64_t n, const em_tensor *const *ts, em_tensor **out) {
  return cat_atleast("hstack", n, ts, 1, 0, out);
}
static em_status vstack_nograd(int64_t n, const em_tensor *const *ts, em_tensor **out) {
  return cat_atleast("vstack", n, ts, 2, 1, out);
}
static em_status dstack_nograd(int64_t n, const em_tensor *const *ts, em_tensor **out) {
  return cat_atleast("dstack", n, ts, 3, 3, out);
}

static em_status stack_nograd(int64_t n, const em_tensor *const *ts, int64_t dim,
                   em_tensor **out) {
  const char *op = "stack";
  if (n <= 0) return em_fail(EM_E_VALUE, "%s: expected a non-empty list of tensors", op);
  const em_tensor *ref = ts[0];
  int nd = ref->ndim;
  em_dtype dt = ref->dtype;
  for (int64_t i = 0; i < n; i++) {
    const em_tensor *t = ts[i];
    em_status st = same_device(op, ref, t);
    if (st != EM_OK) return st;
    bool same = t->ndim == nd;
    for (int d = 0; same && d < nd; d++) same = t->sizes[d] == ref->sizes[d];
    if (!same) {
      char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
      return em_fail(EM_E_VALUE,
                     "%s: expects each tensor to be equal size, but got %s at entry 1 "
                     "and %s at entry %lld", op,
                     em_fmt_shape(b1, sizeof b1, nd, ref->sizes),
                     em_fmt_shape(b2, sizeof b2, t->ndim, t->sizes), (long long)i + 1);
    }
    dt = em_promote_types(dt, t->dtype);
  }
  if (nd + 1 > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: the result would have more than %d dimensions", op,
                   (int)EM_MAX_DIMS);
  int axis;
  em_status st = em_wrap_dim(op, dim, nd + 1, &axis);
  if (st != EM_OK) return st;
  int64_t shape[EM_MAX_DIMS];
  for (int d = 0, k = 0; d <= nd; d++) shape[d] = d == axis ? n : ref->sizes[k++];
  em_tensor *o;
  st = em_empty(nd + 1, shape, dt, ref->storage->device, &o);
  if (st != EM_OK) return st;
  int64_t ost[EM_MAX_DIMS];
  for (int d = 0, k = 0; d <= nd; d++)
    if (d != axis) ost[k++] = o->strides[d];
  for (int64_t i = 0; i < n && st == EM_OK; i++) {
    em_tensor part;
    header(&part, o, nd, ref->sizes, ost, o->offset + i * o->strides[axis]);
    st = em_copy_(&part, ts[i]);
  }
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

/* -- split family --------------------------------------------------------------------- */

/* A view of t narrowed along axis to [start, start + len). */
static em_status narrow_view(const em_tensor *t, int axis, int64_t start, int64_t len,
                             em_tensor **out) {
  int64_t sz[EM_MAX_DIMS];
  memcpy(sz, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
  sz[axis] = len;
  /* an empty piece keeps the offset of where it starts, as PyTorch's slice
  ** (x:split({7, 0})[2]:storage_offset() is 7) */
  return em_as_strided(t, t->ndim, sz, t->strides,
                       em_offset_step(t->offset, start, t->strides[axis]), out);
}

static void release_all(em_tensor **outs, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    em_tensor_release(outs[i]);
    outs[i] = NULL;
  }
}

/* Views of consecutive pieces of the given sizes (already checked). */
static em_status pieces(const em_tensor *t, int axis, int64_t n, const int64_t *sizes,
                        em_tensor **outs) {
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    em_status st = narrow_view(t, axis, at, sizes[i], &outs[i]);
    if (st != EM_OK) { release_all(outs, i); return st; }
    at += sizes[i];
  }
  return EM_OK;
}

static em_status split_axis(const char *op, const em_tensor *t, int64_t dim, int *axis) {
  if (t->ndim == 0)
    return em_fail(EM_E_VALUE, "%s: a 0-d tensor cannot be split", op);
  return em_wrap_dim(op, dim, t->ndim, axis);
}

static em_status split_with_sizes_nograd(const em_tensor *t, int64_t dim, int64_t n,
                              const int64_t *sizes, em_tensor **outs) {
  const char *op = "split";
  int axis;
  em_status st = split_axis(op, t, dim, &axis);
  if (st != EM_OK) return st;
  int64_t sum = 0;
  for (int64_t i = 0; i < n; i++) {
    if (sizes[i] < 0)
      return em_fail(EM_E_VALUE, "%s: split sizes must be non-negative, got %lld "
                     "(entry %lld)", op, (long long)sizes[i], (long long)i + 1);
    if (__builtin_add_overflow(sum, sizes[i], &sum))
      return em_fail(EM_E_VALUE, "%s: split sizes overflow int64", op);
  }
  if (sum != t->sizes[axis])
    return em_fail(EM_E_VALUE,
                   "%s: split sizes must sum exactly to %lld (the size of dimension "
                   "%d), but they sum to %lld", op, (long long)t->sizes[axis],
                   axis + 1, (long long)sum);
  return pieces(t, axis, n, sizes, outs);
}

em_status em_split_sizes(int64_t dim_size, int64_t split_size, int64_t *n,
                         int64_t *sizes) {
  if (split_size < 0)
    return em_fail(EM_E_VALUE, "split: split_size must be non-negative, got %lld",
                   (long long)split_size);
  if (split_size == 0) {
    if (dim_size != 0)
      return em_fail(EM_E_VALUE,
                     "split: split_size can only be 0 if dimension size is 0, but "
                     "got dimension size of %lld", (long long)dim_size);
    *n = 1;
    if (sizes) sizes[0] = 0;
    return EM_OK;
  }
  int64_t k = dim_size / split_size + (dim_size % split_size != 0); /* ceil, no overflow */
  if (k < 1) k = 1;
  *n = k;
  if (sizes) {
    for (int64_t i = 0; i < k - 1; i++) sizes[i] = split_size;
    sizes[k - 1] = dim_size - split_size * (k - 1);
  }
  return EM_OK;
}

em_status em_chunk_sizes(int64_t dim_size, int64_t chunks, int64_t *n, int64_t *sizes) {
  if (chunks <= 0)
    return em_fail(EM_E_VALUE, "chunk: number of chunks must be greater than 0, got %lld",
                   (long long)chunks);
  int64_t split_size = dim_size / chunks + (dim_size % chunks != 0);
  if (split_size == 0 && dim_size == 0) { /* PyTorch: `chunks` empty pieces */
    *n = chunks;
    if (sizes)
      for (int64_t i = 0; i < chunks; i++) sizes[i] = 0;
    return EM_OK;
  }
  return em_split_sizes(dim_size, split_size, n, sizes);
}

em_status em_sections_sizes(int64_t dim_size, int64_t sections, int64_t *n,
                            int64_t *sizes) {
  if (sections <= 0)
    return em_fail(EM_E_VALUE,
                   "tensor_split: number of sections must be greater than 0, got %lld",
                   (long long)sections);
  *n = sections;
  if (sizes) {
    int64_t q = dim_size / sections, r = dim_size % sections;
    for (int64_t i = 0; i < sections; i++) sizes[i] = q + (i < r ? 1 : 0);
  }
  return EM_OK;
}

static em_status tensor_split_at_nograd(const em_tensor *t, int64_t dim, int64_t npos,
                             const int64_t *positions, em_tensor **outs) {
  const char *op = "tensor_split";
  int axis;
  em_status st = split_axis(op, t, dim, &axis);
  if (st != EM_OK) return st;
  int64_t size = t->sizes[axis];
  for (int64_t i = 0; i < npos; i++)
    if (positions[i] == 0)
      return em_fail(EM_E_VALUE, "%s: position 0 is invalid: positions are 1-based "
                     "(split before element p)", op);
  int64_t start = 0;
  for (int64_t i = 0; i <= npos; i++) {
    int64_t end = size;
    if (i < npos) {  /* before element p: 0-based p - 1; negative from the end */
      int64_t p = positions[i];
      end = p > 0 ? p - 1 : p + size;
      if (end < 0) end = 0;
      if (end > size) end = size;
    }
    /* each piece is the slice [previous bound, this bound) on its own, as
    ** in PyTorch: out-of-order positions give empty (or overlapping)
    ** pieces */
    int64_t len = end > start ? end - start : 0;
    st = narrow_view(t, axis, start, len, &outs[i]);
    if (st != EM_OK) { release_all(outs, i); return st; }
    start = end;
  }
  return EM_OK;
}

static em_status unbind_nograd(const em_tensor *t, int64_t dim, em_tensor **outs) {
  const char *op = "unbind";
  int axis;
  em_status st = split_axis(op, t, dim, &axis);
  if (st != EM_OK) return st;
  int64_t sz[EM_MAX_DIMS], str[EM_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != axis) sz[nd] = t->sizes[d], str[nd++] = t->strides[d];
  for (int64_t i = 0; i < t->sizes[axis]; i++) {
    st = em_as_strided(t, nd, sz, str, em_offset_step(t->offset, i, t->strides[axis]), &outs[i]);
    if (st != EM_OK) { release_all(outs, i); return st; }
  }
  return EM_OK;
}

/* -- repeat / tile / repeat_interleave ------------------------------------------------- */

static em_status repeat_nograd(const em_tensor *t, int nreps, const int64_t *reps,
                    em_tensor **out) {
  const char *op = "repeat";
  if (nreps < t->ndim)
    return em_fail(EM_E_VALUE,
                   "%s: number of dimensions of repeat dims (%d) can not be smaller "
                   "than number of dimensions of tensor (%d)", op, nreps, t->ndim);
  if (nreps > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: %d repeat dims, at most %d are supported", op,
                   nreps, (int)EM_MAX_DIMS);
  int lead = nreps - t->ndim;
  int64_t src_sz[EM_MAX_DIMS], src_st[EM_MAX_DIMS], shape[EM_MAX_DIMS];
  for (int i = 0; i < nreps; i++) {
    if (reps[i] < 0)
      return em_fail(EM_E_VALUE, "%s: repeats must be non-negative, got %lld (entry %d)",
                     op, (long long)reps[i], i + 1);
    src_sz[i] = i < lead ? 1 : t->sizes[i - lead];
    src_st[i] = i < lead ? 0 : t->strides[i - lead];
  }
  for (int i = 0; i < nreps; i++) shape[i] = src_sz[i];
  int64_t numel;
  for (int i = 0; i < nreps; i++)
    if (em_mul_overflow_i64(shape[i], reps[i], &shape[i]))
      return em_fail(EM_E_VALUE, "%s: the result is too large", op);
  em_status st = em_numel_checked(op, nreps, shape, &numel);
  if (st != EM_OK) return st;
  em_tensor *o;
  st = em_empty(nreps, shape, t->dtype, t->storage->device, &o);
  if (st != EM_OK) return st;
  if (numel > 0) {
    /* out dim i (size r*s, stride OS) read as (r, s) with strides (s*OS, OS);
    ** the source as (r, s) with strides (0, its stride). Pairs with r == 1
    ** or s == 1 need one dim only. */
    int64_t vs[EM_MAX_DIMS], os[EM_MAX_DIMS], ss[EM_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < nreps && st == EM_OK; i++) {
      int need = (reps[i] != 1) + (src_sz[i] != 1);
      if (need == 0) need = 1;
      if (k + need > EM_MAX_DIMS) {
        st = em_fail(EM_E_VALUE,
                     "%s: too many repeated dimensions (the copy needs more than %d)",
                     op, (int)EM_MAX_DIMS);
        break;
      }
      if (reps[i] != 1) vs[k] = reps[i], os[k] = src_sz[i] * o->strides[i], ss[k++] = 0;
      if (src_sz[i] != 1 || reps[i] == 1)
        vs[k] = src_sz[i], os[k] = o->strides[i], ss[k++] = src_st[i];
    }
    if (st == EM_OK) {
      em_tensor dv, sv;
      header(&dv, o, k, vs, os, o->offset);
      header(&sv, t, k, vs, ss, t->offset);
      st = em_copy_(&dv, &sv);
    }
  }
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

static em_status tile_nograd(const em_tensor *t, int nreps, const int64_t *reps, em_tensor **out) {
  int64_t full[EM_MAX_DIMS];
  for (int i = 0; i < nreps; i++)
    if (reps[i] < 0)
      return em_fail(EM_E_VALUE, "tile: repeats must be non-negative, got %lld (entry %d)",
                     (long long)reps[i], i + 1);
  if (nreps >= t->ndim) return em_repeat(t, nreps, reps, out);
  int lead = t->ndim - nreps;
  for (int i = 0; i < t->ndim; i++) full[i] = i < lead ? 1 : reps[i - lead];
  return em_repeat(t, t->ndim, full, out);
}

/* The source of repeat_interleave along dim (0: t flattened row-major, as
** one dim): the tensor to select from (*flat holds a reference when it is a
** flattened copy), its 0-based axis and the length n along it. */
static em_status interleave_source(const char *op, const em_tensor *t, int64_t dim,
                                   const em_tensor **src, em_tensor **flat, int *axis,
                                   int64_t *n) {
  *src = t;
  *flat = NULL;
  *axis = 0;
  if (dim == 0) {
    em_tensor *c;
    em_status st = em_contiguous(t, &c);
    if (st != EM_OK) return st;
    int64_t sz[1] = {em_tensor_numel(c)}, one[1] = {1};
    st = em_as_strided(c, 1, sz, one, c->offset, flat);
    em_tensor_release(c);
    if (st != EM_OK) return st;
    *src = *flat;
    *n = sz[0];
    return EM_OK;
  }
  /* PyTorch: a 0-d tensor has no dim to repeat along (without dim it is
  ** flattened above) */
  if (t->ndim == 0)
    return em_fail(EM_E_INDEX, "%s: Dimension specified as %lld but tensor has no dimensions",
                   op, (long long)dim);
  em_status st = em_wrap_dim(op, dim, t->ndim, axis);
  if (st != EM_OK) return st;
  *n = t->sizes[*axis];
  return EM_OK;
}

static em_status repeat_interleave_nograd(const em_tensor *t, const em_tensor *repeats,
                               int64_t dim, em_tensor **out) {
  const char *op = "repeat_interleave";
  if (repeats->dtype != EM_INT64 && repeats->dtype != EM_INT32)
    return em_fail(EM_E_TYPE, "%s: repeats must be an int64 or int32 tensor, got %s",
                   op, em_dtype_name(repeats->dtype));
  if (repeats->ndim > 1)
    return em_fail(EM_E_VALUE, "%s: repeats must be 0-d or 1-d, got %d dimensions", op,
                   repeats->ndim);
  if (!t && repeats->ndim != 1) /* torch 1.13: the one-tensor form takes a vector only */
    return em_fail(EM_E_VALUE, "%s: repeats alone must be a 1-d tensor, got a 0-d tensor", op);
  const em_kernels *k;
  em_status st = t ? same_device(op, t, repeats) : EM_OK;
  if (st == EM_OK) st = em_kernels_check(op, repeats->storage->device, &k);
  if (st != EM_OK) return st;
  em_device dev = repeats->storage->device;
  em_tensor *flat = NULL, *rc = NULL, *idx = NULL;
  const em_tensor *src = t;
  int axis = 0;
  int64_t n;
  if (!t) { /* repeat_interleave(repeats): positions 1..n, each repeated */
    n = em_tensor_numel(repeats);
  } else {
    st = interleave_source(op, t, dim, &src, &flat, &axis, &n);
    if (st != EM_OK) return st;
  }
  int64_t nrep = em_tensor_numel(repeats);
  if (t && nrep != 1 && nrep != n) {
    em_tensor_release(flat);
    return em_fail(EM_E_VALUE,
                   "%s: repeats must have one element or as many as the dimension "
                   "(%lld), got %lld", op, (long long)n, (long long)nrep);
  }
  st = em_empty(repeats->ndim, repeats->sizes, EM_INT64, dev, &rc);
  if (st == EM_OK) st = em_copy_(rc, repeats);
  int64_t isz[1] = {0};
  em_index_bad bad = {0, 0};
  if (st == EM_OK) st = k->index->repeat_total(op, rc, n, &isz[0], &bad);
  if (st == EM_OK && bad.found == EM_BAD_VALUE)
    st = em_fail(EM_E_VALUE, "%s: repeats can not be negative, got %lld", op,
                 (long long)bad.value);
  else if (st == EM_OK && bad.found == EM_BAD_OVERFLOW)
    st = em_fail(EM_E_VALUE, "%s: the result is too large", op);
  if (st == EM_OK) st = em_empty(1, isz, EM_INT64, dev, &idx);
  if (st == EM_OK) {
    k->index->repeat_positions(idx, rc, n);
    if (!t && repeats->dtype == EM_INT64) {
      *out = idx;
      idx = NULL;
    } else if (!t) { /* PyTorch: the positions have the repeats' dtype */
      em_tensor *r = NULL;
      st = em_empty(1, isz, repeats->dtype, dev, &r);
      if (st == EM_OK) st = em_copy_(r, idx);
      if (st == EM_OK) *out = r;
      else em_tensor_release(r);
    } else {
      st = em_index_select(src, axis + 1, idx, out);
    }
  }
  em_tensor_release(idx);
  em_tensor_release(rc);
  em_tensor_release(flat);
  return st;
}

/* repeat_interleave with one count for every position: the result's shape
** is known from the arguments (so it is on meta too), and the positions
** are (0..n*r-1) // r + 1, made with the ops on t's device. */
static em_status repeat_interleave_int_nograd(const em_tensor *t, int64_t repeats,
                                              int64_t dim, em_tensor **out) {
  const char *op = "repeat_interleave";
  if (repeats < 0)
    return em_fail(EM_E_VALUE, "%s: repeats can not be negative, got %lld", op,
                   (long long)repeats);
  const em_tensor *src;
  em_tensor *flat = NULL, *ar = NULL, *q = NULL, *idx = NULL;
  int axis;
  int64_t n, total;
  em_status st = interleave_source(op, t, dim, &src, &flat, &axis, &n);
  if (st == EM_OK && __builtin_mul_overflow(n, repeats, &total))
    st = em_fail(EM_E_VALUE, "%s: the result is too large", op);
  em_scalar zero = {EM_SCALAR_INT, 0, 0}, one = {EM_SCALAR_INT, 1, 0};
  if (st == EM_OK) {
    em_scalar end = {EM_SCALAR_INT, total, 0};
    st = em_arange(zero, end, one, EM_INT64, t->storage->device, &ar);
  }
  if (st == EM_OK && repeats > 0) {
    em_operand ops[2] = {{ar, zero}, {NULL, {EM_SCALAR_INT, repeats, 0}}};
    em_ew_opts o = em_ew_defaults();
    o.rounding = EM_ROUND_FLOOR;
    o.name = op;
    st = em_elementwise(EM_OP_DIV, 2, ops, &o, NULL, &q);
  }
  if (st == EM_OK) {
    em_operand ops[2] = {{q ? q : ar, zero}, {NULL, one}};
    st = em_elementwise(EM_OP_ADD, 2, ops, NULL, NULL, &idx);
  }
  if (st == EM_OK) st = em_index_select(src, axis + 1, idx, out);
  em_tensor_release(idx);
  em_tensor_release(q);
  em_tensor_release(ar);
  em_tensor_release(flat);
  return st;
}

/* -- roll ------------------------------------------------------------------------------ */

/* dst = src rolled by shift along axis (same shapes, distinct storages). */
static em_status roll_one(em_tensor *dst, const em_tensor *src, int axis, int64_t shift) {
  int64_t n = src->sizes[axis];
  int64_t s = n ? ((shift % n) + n) % n : 0;
  if (s == 0) return em_copy_(dst, src);
  int64_t sz[EM_MAX_DIMS];
  memcpy(sz, src->sizes, sizeof(int64_t) * (size_t)src->ndim);
  em_tensor d, v;
  /* dst[s:] = src[:n-s] */
  sz[axis] = n - s;
  header(&d, dst, dst->ndim, sz, dst->strides, dst->offset + s * dst->strides[axis]);
  header(&v, src, src->ndim, sz, src->strides, src->offset);
  em_status st = em_copy_(&d, &v);
  if (st != EM_OK) return st;
  /* dst[:s] = src[n-s:] */
  sz[axis] = s;
  header(&d, dst, dst->ndim, sz, dst->strides, dst->offset);
  header(&v, src, src->ndim, sz, src->strides, src->offset + (n - s) * src->strides[axis]);
  return em_copy_(&d, &v);
}

static em_status roll_nograd(const em_tensor *t, int nshifts, const int64_t *shifts, int ndims,
                  const int64_t *dims, em_tensor **out) {
  const char *op = "roll";
  em_status st;
  if (nshifts < 1)
    return em_fail(EM_E_VALUE, "%s: expected at least one shift", op);
  if (ndims == 0 && nshifts != 1)
    return em_fail(EM_E_VALUE, "%s: without dims, expected one shift, got %d", op,
                   nshifts);
  if (ndims != 0 && ndims != nshifts)
    return em_fail(EM_E_VALUE, "%s: shifts and dimensions must align: %d shifts, %d dims",
                   op, nshifts, ndims);
  int axes[EM_MAX_DIMS];
  for (int i = 0; i < ndims; i++) {
    if (t->ndim == 0)
      return em_fail(EM_E_VALUE, "%s: a 0-d tensor has no dimension to roll", op);
    st = em_wrap_dim(op, dims[i], t->ndim, &axes[i]);
    if (st != EM_OK) return st;
  }
  em_tensor *o;
  st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &o);
  if (st != EM_OK) return st;
  if (ndims == 0) { /* t flattened: roll a contiguous copy as 1-d */
    em_tensor *c;
    st = em_contiguous(t, &c);
    if (st == EM_OK) {
      em_tensor fs, fd;
      int64_t sz[1] = {em_tensor_numel(t)}, one[1] = {1};
      header(&fs, c, 1, sz, one, c->offset);
      header(&fd, o, 1, sz, one, o->offset);
      st = em_tensor_numel(t) ? roll_one(&fd, &fs, 0, shifts[0]) : EM_OK;
      em_tensor_release(c);
    }
  } else { /* one pass per dim, ping-ponging through a temporary */
    em_tensor *tmp = NULL;
    const em_tensor *cur = t;
    for (int i = 0; i < ndims && st == EM_OK; i++) {
      em_tensor *dst = o;
      if (i + 1 < ndims) {
        /* the last pass writes o; earlier ones write a fresh temporary */
        em_tensor *nt;
        st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &nt);
        if (st != EM_OK) break;
        dst = nt;
        st = roll_one(dst, cur, axes[i], shifts[i]);
        em_tensor_release(tmp);
        tmp = nt;
        cur = nt;
      } else {
        st = roll_one(dst, cur, axes[i], shifts[i]);
      }
    }
    em_tensor_release(tmp);
  }
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** cat/stack (and the h/v/dstack forms) record one node over all operands;
** the split family records each piece as a view; repeats and rolls are
** gathers (autograd.h). */

static em_status join(em_ag_kind kind, const char *name, int64_t n,
                      const em_tensor *const *ts, int64_t dim, em_tensor **out,
                      em_status (*run)(int64_t, const em_tensor *const *, int64_t, em_tensor **),
                      em_status (*run0)(int64_t, const em_tensor *const *, em_tensor **)) {
  int on = em_ag_pause();
  em_status st = run ? run(n, ts, dim, out) : run0(n, ts, out);
  em_ag_resume(on);
  if (st != EM_OK || !on || n <= 0 || n > INT32_MAX || !em_ag_any((int)n, ts)) return st;
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = name;
  p.i[0] = dim;
  st = em_ag_record(kind, (int)n, ts, 1, out, &p);
  if (st != EM_OK) {
    em_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

em_status em_cat(int64_t n, const em_tensor *const *ts, int64_t dim, em_tensor **out) {
  return join(EM_AG_CAT, "CatBackward0", n, ts, dim, out, cat_nograd, NULL);
}
em_status em_stack(int64_t n, const em_tensor *const *ts, int64_t dim, em_tensor **out) {
  return join(EM_AG_STACK, "StackBackward0", n, ts, dim, out, stack_nograd, NULL);
}
em_status em_hstack(int64_t n, const em_tensor *const *ts, em_tensor **out) {
  int64_t dim = n > 0 && ts[0]->ndim <= 1 ? 1 : 2;
  return join(EM_AG_CAT, "CatBackward0", n, ts, dim, out, NULL, hstack_nograd);
}
em_status em_vstack(int64_t n, const em_tensor *const *ts, em_tensor **out) {
  return join(EM_AG_CAT, "CatBackward0", n, ts, 1, out, NULL, vstack_nograd);
}
em_status em_dstack(int64_t n, const em_tensor *const *ts, em_tensor **out) {
  return join(EM_AG_CAT, "CatBackward0", n, ts, 3, out, NULL, dstack_nograd);
}

/* The pieces, and when recording the same pieces of an arange: where each
** piece's elements lie in t. */
#define PIECES(NAME, T, NOUT, OUTS, CALL)                                     \
  do {                                                                      \
    const em_tensor *ag_src_ = (T);                                         \
    em_tensor **ag_dst_ = (OUTS);                                           \
    int on = em_ag_pause();                                                 \
    em_status st = (CALL);                                                  \
    if (st == EM_OK && on && (T)->requires_grad) {                          \
      int64_t k = (NOUT);                                                   \
      em_tensor *ar = NULL, **pos = calloc((size_t)k + 1, sizeof *pos);     \
      if (!pos) st = em_fail(EM_E_NOMEM, "%s: out of memory", NAME);        \
      if (st == EM_OK) st = em_ag_arange_like((T), &ar);                    \
      if (st == EM_OK) {                                                    \
        ag_src_ = ar;                                                       \
        ag_dst_ = pos;                                                      \
        st = (CALL);                                                        \
      }                                                                     \
      em_ag_resume(on);                                                     \
      for (int64_t i = 0; i < k && st == EM_OK; i++) {                      \
        st = em_ag_set_base((OUTS)[i], (T));                                \
        if (st == EM_OK) st = em_ag_record_gather(NAME, (T), pos[i], (OUTS)[i]); \
        /* made in grad mode: one of several views, not a no_grad view */  \
        if (st == EM_OK && !(T)->nograd_view) {                             \
          (OUTS)[i]->nograd_view = false;                                   \
          (OUTS)[i]->multi_view = true;                                     \
        }                                                                   \
      }                                                                     \
      for (int64_t i = 0; pos && i < k; i++) em_tensor_release(pos[i]);     \
      free(pos);                                                            \
      em_tensor_release(ar);                                                \
      if (st != EM_OK) release_all((OUTS), k);                              \
    }                                                                       \
    em_ag_resume(on);                                                       \
    return st;                                                              \
  } while (0)

em_status em_split_with_sizes(const em_tensor *t, int64_t dim, int64_t n,
                              const int64_t *sizes, em_tensor **outs) {
  PIECES("SplitWithSizesBackward0", t, n, outs,
         split_with_sizes_nograd(ag_src_, dim, n, sizes, ag_dst_));
}
em_status em_tensor_split_at(const em_tensor *t, int64_t dim, int64_t npos,
                             const int64_t *positions, em_tensor **outs) {
  PIECES("SliceBackward0", t, npos + 1, outs,
         tensor_split_at_nograd(ag_src_, dim, npos, positions, ag_dst_));
}
em_status em_unbind(const em_tensor *t, int64_t dim, em_tensor **outs) {
  int axis;
  if (t->ndim == 0 || em_wrap_dim("unbind", dim, t->ndim, &axis) != EM_OK)
    return unbind_nograd(t, dim, outs);
  PIECES("UnbindBackward0", t, t->sizes[axis], outs, unbind_nograd(ag_src_, dim, ag_dst_));
}

em_status em_repeat(const em_tensor *t, int nreps, const int64_t *reps, em_tensor **out) {
  EM_AG_GATHER("RepeatBackward0", t, out, repeat_nograd(ag_src_, nreps, reps, ag_dst_));
}
em_status em_tile(const em_tensor *t, int nreps, const int64_t *reps, em_tensor **out) {
  EM_AG_GATHER("RepeatBackward0", t, out, tile_nograd(ag_src_, nreps, reps, ag_dst_));
}
em_status em_repeat_interleave(const em_tensor *t, const em_tensor *repeats, int64_t dim,
                               em_tensor **out) {
  if (!t) return repeat_interleave_nograd(t, repeats, dim, out);  /* repeats only */
  EM_AG_GATHER("RepeatInterleaveBackward0", t, out,
               repeat_interleave_nograd(ag_src_, repeats, dim, ag_dst_));
}
em_status em_repeat_interleave_int(const em_tensor *t, int64_t repeats, int64_t dim,
                                   em_tensor **out) {
  EM_AG_GATHER("RepeatInterleaveBackward0", t, out,
               repeat_interleave_int_nograd(ag_src_, repeats, dim, ag_dst_));
}
em_status em_roll(const em_tensor *t, int nshifts, const int64_t *shifts, int ndims,
                  const int64_t *dims, em_tensor **out) {
  EM_AG_GATHER("RollBackward0", t, out,
               roll_nograd(ag_src_, nshifts, shifts, ndims, dims, ag_dst_));
}
