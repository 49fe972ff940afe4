/*
** view.c -- view operations: narrow, select, transpose/t/T/mT, permute,
** movedim, view/reshape (PyTorch's stride-compatibility rule), flatten,
** unflatten, squeeze/unsqueeze, expand, unfold, diagonal, as_strided, alias;
** and flip (a copy).
**
** Guarantees: a view op writes only metadata. Its result shares t's storage
** (one new storage reference), and every element it addresses is an element
** t addresses, so it lies inside the storage without a new bounds check.
** em_reshape/em_flatten are views whenever em_view_strides allows one and
** contiguous copies otherwise. Dims and positions are 1-based (em_wrap_dim);
** messages name them that way. Outputs are written only on success.
*/
#include "core/iter.h"
#include "core/kernels.h"
#include "autograd/autograd.h"

#include <stdio.h>

/* a*b for strides of dims whose size makes the stride irrelevant when the
** product overflows (a size-1 dim, or a step longer than the dim): then a
** itself is kept, and no signed overflow happens. */
static inline int64_t stride_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? a : r;
}

/* A view of t's storage with new metadata. Callers derive the metadata from
** t's, so every addressable element is one t can address. */
static em_status make_view(const em_tensor *t, int ndim, const int64_t *sizes,
                           const int64_t *strides, int64_t offset,
                           em_tensor **out) {
  return em_tensor_alloc(t->storage, offset, ndim, sizes, strides, t->dtype, out);
}

/* -- narrow / select ------------------------------------------------------ */

static em_status narrow_nograd(const em_tensor *t, int64_t dim, int64_t start,
                    int64_t length, em_tensor **out) {
  int ax;
  if (t->ndim == 0)
    return em_fail(EM_E_VALUE, "narrow: cannot be applied to a 0-dim tensor");
  em_status st = em_wrap_dim("narrow", dim, t->ndim, &ax);
  if (st != EM_OK) return st;
  int64_t n = t->sizes[ax];
  int64_t s0; /* 0-based */
  if (start >= 1 && start <= n + 1) s0 = start - 1;
  else if (start <= -1 && start >= -n) s0 = n + start;
  else
    return em_fail(EM_E_INDEX,
                   "narrow: start %lld is out of range for dimension %d with size "
                   "%lld (expected 1..%lld or -%lld..-1)",
                   (long long)start, ax + 1, (long long)n, (long long)n + 1,
                   (long long)n);
  if (length < 0)
    return em_fail(EM_E_VALUE, "narrow: length must be non-negative, got %lld",
                   (long long)length);
  if (length > n - s0)
    return em_fail(EM_E_INDEX,
                   "narrow: start %lld with length %lld runs past the end of "
                   "dimension %d with size %lld",
                   (long long)start, (long long)length, ax + 1, (long long)n);
  int64_t sizes[EM_MAX_DIMS];
  memcpy(sizes, t->sizes, sizeof sizes);
  sizes[ax] = length;
  return make_view(t, t->ndim, sizes, t->strides, em_offset_step(t->offset, s0, t->strides[ax]), out);
}

static em_status select_nograd(const em_tensor *t, int64_t dim, int64_t index,
                    em_tensor **out) {
  int ax;
  if (t->ndim == 0)
    return em_fail(EM_E_INDEX, "select: cannot be applied to a 0-dim tensor");
  em_status st = em_wrap_dim("select", dim, t->ndim, &ax);
  if (st != EM_OK) return st;
  int64_t n = t->sizes[ax];
  int64_t k = index >= 1 ? index - 1 : n + index;
  if (index == 0 || k < 0 || k >= n)
    return em_fail(EM_E_INDEX, "select: index %lld is out of bounds for dimension %d "
                   "with size %lld%s", (long long)index, ax + 1, (long long)n,
                   index == 0 ? " (positions are 1-based)" : "");
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int m = 0;
  for (int i = 0; i < t->ndim; i++)
    if (i != ax) { sizes[m] = t->sizes[i]; strides[m] = t->strides[i]; m++; }
  return make_view(t, m, sizes, strides, em_offset_step(t->offset, k, t->strides[ax]), out);
}

/* -- transpose / permute / movedim ---------------------------------------- */

/* The view with axes in the order perm (0-based, a permutation). */
static em_status permuted(const em_tensor *t, const int *perm, em_tensor **out) {
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) {
    sizes[i] = t->sizes[perm[i]];
    strides[i] = t->strides[perm[i]];
  }
  return make_view(t, t->ndim, sizes, strides, t->offset, out);
}

static void identity_perm(int n, int *perm) {
  for (int i = 0; i < n; i++) perm[i] = i;
}

static em_status transpose_nograd(const em_tensor *t, int64_t dim0, int64_t dim1,
                       em_tensor **out) {
  int a, b, perm[EM_MAX_DIMS];
  em_status st = em_wrap_dim("transpose", dim0, t->ndim, &a);
  if (st == EM_OK) st = em_wrap_dim("transpose", dim1, t->ndim, &b);
  if (st != EM_OK) return st;
  if (t->ndim == 0) return em_alias(t, out);
  identity_perm(t->ndim, perm);
  perm[a] = b;
  perm[b] = a;
  return permuted(t, perm, out);
}

em_status em_t(const em_tensor *t, em_tensor **out) {
  if (t->ndim > 2)
    return em_fail(EM_E_VALUE, "t: expects a tensor with <= 2 dimensions, but it has "
                   "%d; use :transpose(dim1, dim2) or .mT", t->ndim);
  if (t->ndim < 2) return em_alias(t, out);
  em_status st = em_transpose(t, 1, 2, out);
  if (st == EM_OK) em_ag_rename(t, *out, "TBackward0");
  return st;
}

static em_status reverse_dims_nograd(const em_tensor *t, em_tensor **out) {
  int perm[EM_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) perm[i] = t->ndim - 1 - i;
  return permuted(t, perm, out);
}

em_status em_mT(const em_tensor *t, em_tensor **out) {
  if (t->ndim < 2)
    return em_fail(EM_E_VALUE, "mT: expects a tensor with at least 2 dimensions, "
                   "but it has %d", t->ndim);
  return em_transpose(t, -2, -1, out);
}

/* Wraps n dims into axes, rejecting repeats; op names the caller. */
static em_status wrap_dims(const char *op, int n, const int64_t *dims, int ndim,
                           int *axes) {
  bool seen[EM_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    em_status st = em_wrap_dim(op, dims[i], ndim, &axes[i]);
    if (st != EM_OK) return st;
    if (seen[axes[i]])
      return em_fail(EM_E_VALUE, "%s: dimension %d appears more than once in the "
                     "list of dims", op, axes[i] + 1);
    seen[axes[i]] = true;
  }
  return EM_OK;
}

static em_status permute_nograd(const em_tensor *t, int n, const int64_t *dims,
                     em_tensor **out) {
  int perm[EM_MAX_DIMS];
  if (n != t->ndim)
    return em_fail(EM_E_VALUE, "permute: the number of dims (%d) does not match the "
                   "tensor's number of dimensions (%d)", n, t->ndim);
  em_status st = wrap_dims("permute", n, dims, t->ndim, perm);
  if (st != EM_OK) return st;
  return permuted(t, perm, out);
}

static em_status movedim_nograd(const em_tensor *t, int n, const int64_t *src,
                     const int64_t *dst, em_tensor **out) {
  int s[EM_MAX_DIMS], d[EM_MAX_DIMS], perm[EM_MAX_DIMS];
  if (n > t->ndim && t->ndim > 0)
    return em_fail(EM_E_VALUE, "movedim: %d dims given for a tensor of %d dimensions",
                   n, t->ndim);
  em_status st = wrap_dims("movedim", n, src, t->ndim, s);
  if (st == EM_OK) st = wrap_dims("movedim", n, dst, t->ndim, d);
  if (st != EM_OK) return st;
  if (t->ndim == 0) return em_alias(t, out);
  /* place the moved dims, then the rest in their order */
  bool taken_src[EM_MAX_DIMS] = {false}, taken_dst[EM_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    perm[d[i]] = s[i];
    taken_src[s[i]] = taken_dst[d[i]] = true;
  }
  int next = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (taken_dst[i]) continue;
    while (taken_src[next]) next++;
    perm[i] = next++;
  }
  return permuted(t, perm, out);
}

/* -- view / reshape ------------------------------------------------------- */

/* PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): the old dims are
** split into chunks that are each contiguous in memory; every new dim must
** lie inside one chunk. */
int em_view_strides(int old_ndim, const int64_t *old_sizes,
                    const int64_t *old_strides, int new_ndim,
                    const int64_t *new_sizes, int64_t *new_strides) {
  if (old_ndim == 0) {
    for (int i = 0; i < new_ndim; i++) new_strides[i] = 1;
    return 1;
  }
  /* (an empty shape's sizes may multiply past int64: test for a 0 first) */
  int64_t numel = 1;
  for (int i = 0; i < old_ndim; i++)
    if (old_sizes[i] == 0) numel = 0;
  for (int i = 0; i < old_ndim && numel; i++) numel *= old_sizes[i];
  if (numel == 0) {
    bool same = old_ndim == new_ndim;
    for (int i = 0; same && i < old_ndim; i++) same = old_sizes[i] == new_sizes[i];
    if (same) {
      for (int i = 0; i < old_ndim; i++) new_strides[i] = old_strides[i];
      return 1;
    }
    em_contiguous_strides(new_ndim, new_sizes, new_strides); /* saturating */
    return 1;
  }
  int view_d = new_ndim - 1;
  int64_t chunk_base_stride = old_strides[old_ndim - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = old_ndim - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 ||
        (old_sizes[tensor_d - 1] != 1 &&
         old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        /* only as_strided's size-1 dims can carry strides this large */
        if (em_mul_overflow_i64(view_numel, chunk_base_stride, &new_strides[view_d]))
          return 0;
        view_numel *= new_sizes[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return 0;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

/* Resolves one -1 in sizes against numel (PyTorch's infer_size). */
static em_status infer_size(const char *op, int ndim, const int64_t *sizes,
                            int64_t numel, int64_t *out) {
  char buf[EM_SHAPE_BUF];
  int infer = -1;
  int64_t prod = 1;
  if (ndim < 0 || ndim > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: %d dimensions requested, at most %d are supported",
                   op, ndim, (int)EM_MAX_DIMS);
  for (int i = 0; i < ndim; i++) {
    out[i] = sizes[i];
    if (sizes[i] == -1) {
      if (infer >= 0)
        return em_fail(EM_E_VALUE, "%s: only one dimension can be inferred (-1), "
                       "got shape %s", op, em_fmt_shape(buf, sizeof buf, ndim, sizes));
      infer = i;
    } else if (sizes[i] < 0) {
      return em_fail(EM_E_VALUE, "%s: invalid shape dimension %lld in shape %s", op,
                     (long long)sizes[i], em_fmt_shape(buf, sizeof buf, ndim, sizes));
    } else if (em_mul_overflow_i64(prod, sizes[i], &prod)) {
      goto invalid;
    }
  }
  if (infer >= 0) {
    if (prod == 0) {
      if (numel == 0)
        return em_fail(EM_E_VALUE,
                       "%s: cannot reshape a tensor of 0 elements into shape %s "
                       "because the unspecified dimension size -1 can be any value "
                       "and is ambiguous", op, em_fmt_shape(buf, sizeof buf, ndim, sizes));
      goto invalid;
    }
    if (numel % prod != 0) goto invalid;
    out[infer] = numel / prod;
    return EM_OK;
  }
  if (prod == numel) return EM_OK;
invalid:
  return em_fail(EM_E_VALUE, "%s: shape %s is invalid for input of size %lld", op,
                 em_fmt_shape(buf, sizeof buf, ndim, sizes), (long long)numel);
}

static em_status view_impl(const char *op, const em_tensor *t, int ndim,
                           const int64_t *sizes, em_tensor **out) {
  int64_t shape[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  em_status st = infer_size(op, ndim, sizes, em_tensor_numel(t), shape);
  if (st != EM_OK) return st;
  if (!em_view_strides(t->ndim, t->sizes, t->strides, ndim, shape, strides)) {
    char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF], b3[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE,
                   "%s: shape %s is not compatible with the input's size %s and "
                   "strides %s (at least one dimension spans across two contiguous "
                   "subspaces); use :reshape(...) instead",
                   op, em_fmt_shape(b1, sizeof b1, ndim, shape),
                   em_fmt_shape(b2, sizeof b2, t->ndim, t->sizes),
                   em_fmt_shape(b3, sizeof b3, t->ndim, t->strides));
  }
  return make_view(t, ndim, shape, strides, t->offset, out);
}

static em_status view_nograd(const em_tensor *t, int ndim, const int64_t *sizes,
                  em_tensor **out) {
  return view_impl("view", t, ndim, sizes, out);
}

static em_status reshape_impl(const char *op, const em_tensor *t, int ndim,
                              const int64_t *sizes, em_tensor **out) {
  int64_t shape[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  em_status st = infer_size(op, ndim, sizes, em_tensor_numel(t), shape);
  if (st != EM_OK) return st;
  if (em_view_strides(t->ndim, t->sizes, t->strides, ndim, shape, strides))
    return make_view(t, ndim, shape, strides, t->offset, out);
  /* no view is possible: a contiguous copy, viewed */
  em_tensor *fresh;
  st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &fresh);
  if (st != EM_OK) return st;
  st = em_copy_(fresh, t);
  if (st == EM_OK) {
    em_contiguous_strides(ndim, shape, strides);
    st = make_view(fresh, ndim, shape, strides, 0, out);
  }
  em_tensor_release(fresh);
  return st;
}

static em_status reshape_nograd(const em_tensor *t, int ndim, const int64_t *sizes,
                     em_tensor **out) {
  return reshape_impl("reshape", t, ndim, sizes, out);
}

static em_status flatten_nograd(const em_tensor *t, int64_t start, int64_t end,
                     em_tensor **out) {
  int a, b;
  em_status st = em_wrap_dim("flatten", start, t->ndim, &a);
  if (st == EM_OK) st = em_wrap_dim("flatten", end, t->ndim, &b);
  if (st != EM_OK) return st;
  if (t->ndim == 0) {
    int64_t one = 1;
    return reshape_impl("flatten", t, 1, &one, out);
  }
  if (a > b)
    return em_fail(EM_E_VALUE, "flatten: start dim %lld comes after end dim %lld",
                   (long long)start, (long long)end);
  if (a == b) return em_alias(t, out);
  int64_t shape[EM_MAX_DIMS];
  int m = 0;
  for (int i = 0; i < a; i++) shape[m++] = t->sizes[i];
  int64_t merged = 1;
  for (int i = a; i <= b; i++)
    if (em_mul_overflow_i64(merged, t->sizes[i], &merged)) {
      /* only an empty tensor (another dim is 0) gets here */
      char buf[EM_SHAPE_BUF];
      return em_fail(EM_E_VALUE, "flatten: merging dims %lld..%lld of size %s overflows int64",
                     (long long)start, (long long)end,
                     em_fmt_shape(buf, sizeof buf, t->ndim, t->sizes));
    }
  shape[m++] = merged;
  for (int i = b + 1; i < t->ndim; i++) shape[m++] = t->sizes[i];
  return reshape_impl("flatten", t, m, shape, out);
}

static em_status unflatten_nograd(const em_tensor *t, int64_t dim, int n,
                       const int64_t *sizes, em_tensor **out) {
  int ax;
  char buf[EM_SHAPE_BUF];
  if (t->ndim == 0)
    return em_fail(EM_E_VALUE, "unflatten: cannot be applied to a 0-dim tensor");
  em_status st = em_wrap_dim("unflatten", dim, t->ndim, &ax);
  if (st != EM_OK) return st;
  if (n == 0)
    return em_fail(EM_E_VALUE, "unflatten: sizes must be non-empty");
  if (t->ndim - 1 + n > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "unflatten: the result would have %d dimensions, at "
                   "most %d are supported", t->ndim - 1 + n, (int)EM_MAX_DIMS);
  int64_t inner[EM_MAX_DIMS];
  st = infer_size("unflatten", n, sizes, t->sizes[ax], inner);
  if (st != EM_OK)
    return em_fail(EM_E_VALUE, "unflatten: sizes %s do not multiply to the size %lld "
                   "of dimension %d (%s)", em_fmt_shape(buf, sizeof buf, n, sizes),
                   (long long)t->sizes[ax], ax + 1, em_last_error());
  int64_t shape[EM_MAX_DIMS];
  int m = 0;
  for (int i = 0; i < ax; i++) shape[m++] = t->sizes[i];
  for (int i = 0; i < n; i++) shape[m++] = inner[i];
  for (int i = ax + 1; i < t->ndim; i++) shape[m++] = t->sizes[i];
  return view_impl("unflatten", t, m, shape, out);
}

/* -- squeeze / unsqueeze / expand ----------------------------------------- */

static em_status squeeze_nograd(const em_tensor *t, int n, const int64_t *dims,
                     em_tensor **out) {
  bool drop[EM_MAX_DIMS] = {false};
  if (dims == NULL) {
    for (int i = 0; i < t->ndim; i++) drop[i] = t->sizes[i] == 1;
  } else {
    int axes[EM_MAX_DIMS];
    if (n > EM_MAX_DIMS)
      return em_fail(EM_E_VALUE, "squeeze: too many dims (%d)", n);
    em_status st = wrap_dims("squeeze", n, dims, t->ndim, axes);
    if (st != EM_OK) return st;
    for (int i = 0; i < n; i++)
      if (t->ndim > 0) drop[axes[i]] = t->sizes[axes[i]] == 1;
  }
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int m = 0;
  for (int i = 0; i < t->ndim; i++)
    if (!drop[i]) { sizes[m] = t->sizes[i]; strides[m] = t->strides[i]; m++; }
  return make_view(t, m, sizes, strides, t->offset, out);
}

static em_status unsqueeze_nograd(const em_tensor *t, int64_t dim, em_tensor **out) {
  int ax;
  if (t->ndim >= EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "unsqueeze: a tensor of %d dimensions cannot get "
                   "another (at most %d are supported)", t->ndim, (int)EM_MAX_DIMS);
  em_status st = em_wrap_dim("unsqueeze", dim, t->ndim + 1, &ax);
  if (st != EM_OK) return st;
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int m = 0;
  for (int i = 0; i <= t->ndim; i++) {
    if (i == ax) {
      sizes[m] = 1;
      strides[m] = ax < t->ndim ? stride_mul(t->strides[ax], t->sizes[ax]) : 1;
      m++;
    }
    if (i < t->ndim) { sizes[m] = t->sizes[i]; strides[m] = t->strides[i]; m++; }
  }
  return make_view(t, m, sizes, strides, t->offset, out);
}

/* PyTorch's inferExpandGeometry; op names the caller in messages. */
static em_status expand_impl(const char *op, const em_tensor *t, int ndim,
                             const int64_t *target, em_tensor **out) {
  char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
  if (ndim < t->ndim)
    return em_fail(EM_E_VALUE, "%s: the number of sizes provided (%d) must be "
                   "greater or equal to the number of dimensions in the tensor (%d)",
                   op, ndim, t->ndim);
  if (ndim > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: %d dimensions requested, at most %d are "
                   "supported", op, ndim, (int)EM_MAX_DIMS);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  for (int i = ndim - 1; i >= 0; i--) {
    int d = t->ndim - (ndim - i);
    int64_t size = d >= 0 ? t->sizes[d] : 1;
    /* a new leading dim gets the stride unsqueeze would give it; for a 0-d
    ** tensor the innermost new dim gets 0, as PyTorch 1.13 reports */
    int64_t stride = d >= 0 ? t->strides[d]
                            : (i == ndim - 1 ? 0 : stride_mul(strides[i + 1], sizes[i + 1]));
    int64_t want = target[i];
    if (want == -1) {
      if (d < 0)
        return em_fail(EM_E_VALUE, "%s: the expanded size -1 is not allowed in a "
                       "leading, non-existing dimension %d", op, i + 1);
      want = size;
    }
    if (want < 0)
      return em_fail(EM_E_VALUE, "%s: invalid size %lld in %s", op, (long long)want,
                     em_fmt_shape(b1, sizeof b1, ndim, target));
    if (size != want) {
      if (size != 1)
        return em_fail(EM_E_VALUE,
                       "%s: the expanded size of the tensor (%lld) must match the "
                       "existing size (%lld) at non-singleton dimension %d; target "
                       "sizes %s, tensor sizes %s",
                       op, (long long)want, (long long)size, i + 1,
                       em_fmt_shape(b1, sizeof b1, ndim, target),
                       em_fmt_shape(b2, sizeof b2, t->ndim, t->sizes));
      size = want;
      stride = 0;
    }
    sizes[i] = size;
    strides[i] = stride;
  }
  int64_t numel;
  em_status st = em_numel_checked(op, ndim, sizes, &numel);
  if (st != EM_OK) return st;
  return make_view(t, ndim, sizes, strides, t->offset, out);
}

static em_status expand_nograd(const em_tensor *t, int ndim, const int64_t *sizes,
                    em_tensor **out) {
  return expand_impl("expand", t, ndim, sizes, out);
}

static em_status broadcast_to_nograd(const em_tensor *t, int ndim, const int64_t *sizes,
                          em_tensor **out) {
  return expand_impl("broadcast_to", t, ndim, sizes, out);
}

/* -- unfold / diagonal ---------------------------------------------------- */

static em_status unfold_nograd(const em_tensor *t, int64_t dim, int64_t size, int64_t step,
                    em_tensor **out) {
  int ax;
  em_status st = em_wrap_dim("unfold", dim, t->ndim, &ax);
  if (st != EM_OK) return st;
  int64_t n = t->ndim == 0 ? 1 : t->sizes[ax];
  int64_t stride = t->ndim == 0 ? 1 : t->strides[ax];
  if (size < 0 || size > n)
    return em_fail(EM_E_VALUE, "unfold: maximum size for dimension %d is %lld but "
                   "size is %lld", ax + 1, (long long)n, (long long)size);
  if (step <= 0)
    return em_fail(EM_E_VALUE, "unfold: step is %lld but must be > 0", (long long)step);
  if (t->ndim >= EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "unfold: the result would have more than %d dimensions",
                   (int)EM_MAX_DIMS);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int m = t->ndim;
  for (int i = 0; i < m; i++) { sizes[i] = t->sizes[i]; strides[i] = t->strides[i]; }
  if (m > 0) {
    sizes[ax] = (n - size) / step + 1;
    strides[ax] = stride_mul(stride, step);
  }
  sizes[m] = size;
  strides[m] = stride;
  /* overlapping windows of a huge (expanded) dim can number more elements
  ** than int64 holds */
  int64_t numel;
  st = em_numel_checked("unfold", m + 1, sizes, &numel);
  if (st != EM_OK) return st;
  return make_view(t, m + 1, sizes, strides, t->offset, out);
}

static em_status diagonal_nograd(const em_tensor *t, int64_t offset, int64_t dim1,
                      int64_t dim2, em_tensor **out) {
  int a, b;
  if (t->ndim < 2)
    return em_fail(EM_E_VALUE, "diagonal: expects a tensor with at least 2 "
                   "dimensions, but it has %d", t->ndim);
  em_status st = em_wrap_dim("diagonal", dim1, t->ndim, &a);
  if (st == EM_OK) st = em_wrap_dim("diagonal", dim2, t->ndim, &b);
  if (st != EM_OK) return st;
  if (a == b)
    return em_fail(EM_E_VALUE, "diagonal: dimensions cannot be identical (%lld, %lld)",
                   (long long)dim1, (long long)dim2);
  int64_t len, off = t->offset;
  if (offset >= 0) {
    len = t->sizes[a] < t->sizes[b] - offset ? t->sizes[a] : t->sizes[b] - offset;
  } else {
    len = t->sizes[a] + offset < t->sizes[b] ? t->sizes[a] + offset : t->sizes[b];
  }
  if (len <= 0) len = 0;
  else if (offset >= 0) off = em_offset_step(off, offset, t->strides[b]);
  else off = em_offset_step(off, -offset, t->strides[a]);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int m = 0;
  for (int i = 0; i < t->ndim; i++)
    if (i != a && i != b) { sizes[m] = t->sizes[i]; strides[m] = t->strides[i]; m++; }
  sizes[m] = len;
  /* (a sum past int64 needs huge strides, which only an empty view or a
  ** size-1 dim can carry: either way the stride is never used, so it
  ** saturates) */
  if (__builtin_add_overflow(t->strides[a], t->strides[b], &strides[m]))
    strides[m] = INT64_MAX;
  return make_view(t, m + 1, sizes, strides, off, out);
}

/* -- flip ----------------------------------------------------------------- */

/* The output is a fresh tensor; the source is read through a
** stack-local descriptor with negated strides on the flipped dims (starting
** at their last element), so the one copy kernel does the work. The
** descriptor is never handed out: negative strides exist only here. */
static em_status flip_nograd(const em_tensor *t, int n, const int64_t *dims, em_tensor **out) {
  int axes[EM_MAX_DIMS];
  if (n > EM_MAX_DIMS) return em_fail(EM_E_VALUE, "flip: too many dims (%d)", n);
  em_status st = wrap_dims("flip", n, dims, t->ndim, axes);
  if (st != EM_OK) return st;
  em_tensor src = {0};
  src.ndim = t->ndim;
  src.dtype = t->dtype;
  src.storage = t->storage;
  src.offset = t->offset;
  for (int i = 0; i < t->ndim; i++) {
    src.sizes[i] = t->sizes[i];
    src.strides[i] = t->strides[i];
  }
  bool empty = em_tensor_numel(t) == 0;
  for (int i = 0; i < n && t->ndim > 0 && !empty; i++) {
    int a = axes[i];
    src.offset += (t->sizes[a] - 1) * t->strides[a];
    src.strides[a] = -t->strides[a];
  }
  /* the output is laid out as PyTorch's flip lays it out (empty_like,
  ** preserve_format) */
  em_tensor *fresh;
  st = em_empty_like_on(t, t->dtype, t->storage->device, 0, &fresh);
  if (st != EM_OK) return st;
  st = em_copy_(fresh, &src);
  if (st != EM_OK) {
    em_tensor_release(fresh);
    return st;
  }
  *out = fresh;
  return EM_OK;
}

/* -- as_strided / alias ----------------------------------------------------
** Any metadata over t's storage (as_strided checks that it stays inside).
** Recorded for autograd: as_strided by where each of its elements lies in t
** (found through the shared storage), an alias as the identity (autograd.c). */
em_status em_as_strided(const em_tensor *t, int ndim, const int64_t *sizes,
                        const int64_t *strides, int64_t offset, em_tensor **out) {
  em_status st = em_check_bounds("as_strided", t->storage, offset, ndim, sizes,
                                 strides, t->dtype);
  if (st != EM_OK) return st;
  st = em_tensor_alloc(t->storage, offset, ndim, sizes, strides, t->dtype, out);
  if (st == EM_OK) em_ag_mark_nograd_view(em_grad_enabled(), t, *out);
  if (st != EM_OK || !em_grad_enabled() || !t->requires_grad) return st;
  st = em_ag_set_base(*out, t);
  if (st == EM_OK) {
    em_tensor *pos = NULL;
    st = em_ag_view_positions(t, *out, &pos);
    if (st == EM_OK) st = em_ag_record_gather("AsStridedBackward0", t, pos, *out);
    em_tensor_release(pos);
  }
  if (st != EM_OK) {
    em_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* In place: t itself takes the geometry (PyTorch's as_strided_, and the
** in-place view ops squeeze_/unsqueeze_/t_/transpose_ built on it). In grad
** mode a tensor that requires grad must be a non-leaf (PyTorch's in-place
** rule); the change is recorded as the out-of-place as_strided of t, whose
** node t then takes (em_ag_take_history). */
em_status em_as_strided_(em_tensor *t, int ndim, const int64_t *sizes, const int64_t *strides,
                         int64_t offset) {
  if (ndim < 0 || ndim > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "as_strided_: %d dimensions (at most %d)", ndim, (int)EM_MAX_DIMS);
  em_status st = em_check_bounds("as_strided_", t->storage, offset, ndim, sizes, strides,
                                 t->dtype);
  if (st != EM_OK) return st;
  if (em_grad_enabled() && t->requires_grad) {
    em_tensor *v = NULL;
    st = em_ag_check_inplace("as_strided_", t);
    if (st == EM_OK) st = em_as_strided(t, ndim, sizes, strides, offset, &v);
    if (st == EM_OK) st = em_ag_take_history(t, v);
    em_tensor_release(v);
    if (st != EM_OK) return st;
  }
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    t->sizes[i] = sizes[i];
    t->strides[i] = strides[i];
  }
  t->offset = offset;
  return EM_OK;
}

/* -- resize_ / set_ ----------------------------------------------------------
** PyTorch's in-place geometry changes that may grow the storage: every
** tensor on that storage sees the grown bytes (the old ones kept, the new
** ones uninitialised, or filled in deterministic mode). Only the engine's
** own storages grow; wrapped memory is refused as PyTorch refuses a
** non-resizable storage. dt: the dtype whose elements the grown bytes are
** filled with in deterministic mode (em_fill_uninitialized). */
static em_status grow_storage(const char *op, em_storage *s, int64_t need, em_dtype dt) {
  if ((uint64_t)need <= s->nbytes) return EM_OK;
  if (!em_storage_resizable(s))
    return em_fail(EM_E_VALUE, "%s: Trying to resize storage that is not resizable (it holds "
                   "memory ember did not allocate: from_ffi, a file mapping or another "
                   "library's array), from %zu to %lld bytes", op, s->nbytes, (long long)need);
  em_storage *fresh = NULL;
  em_status st = em_storage_new_movable((size_t)need, s->device, &fresh);
  if (st == EM_E_NOMEM)
    return em_fail(EM_E_NOMEM, "%s: out of memory: tried to grow a storage from %zu to %lld "
                   "bytes", op, s->nbytes, (long long)need);
  if (st != EM_OK) return st;
  size_t old_n = s->nbytes;
  if (old_n > 0 && s->data) {
    if (s->device.type == EM_CPU) {
      memcpy(fresh->data, s->data, old_n);
    } else { /* another device's bytes, through its copy kernel */
      int64_t n = (int64_t)old_n, one = 1;
      em_tensor *dst = NULL, *src = NULL;
      st = em_tensor_alloc(fresh, 0, 1, &n, &one, EM_UINT8, &dst);
      if (st == EM_OK) st = em_tensor_alloc(s, 0, 1, &n, &one, EM_UINT8, &src);
      int on = em_ag_pause();
      if (st == EM_OK) st = em_copy_(dst, src);
      em_ag_resume(on);
      em_tensor_release(dst);
      em_tensor_release(src);
      if (st != EM_OK) {
        em_storage_release(fresh);
        return st;
      }
    }
  }
  em_storage_adopt(s, fresh);
  em_storage_release(fresh);
  if (em_get_deterministic()) { /* the elements past the old bytes */
    int64_t el = (int64_t)em_dtype_size(dt);
    int64_t from = ((int64_t)old_n + el - 1) / el, n = need / el - from, one = 1;
    em_tensor *tail = NULL;
    if (n > 0 && em_tensor_alloc(s, from, 1, &n, &one, dt, &tail) == EM_OK) {
      int on = em_ag_pause();
      em_fill_uninitialized(tail);
      em_ag_resume(on);
      em_tensor_release(tail);
    }
  }
  return EM_OK;
}

em_status em_resize_(em_tensor *t, int ndim, const int64_t *sizes) {
  char a[EM_SHAPE_BUF];
  if (ndim < 0 || ndim > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "resize_: %d dimensions (at most %d)", ndim, (int)EM_MAX_DIMS);
  for (int i = 0; i < ndim; i++)
    if (sizes[i] < 0)
      return em_fail(EM_E_VALUE, "resize_: negative dimension %lld in size %s",
                     (long long)sizes[i], em_fmt_shape(a, sizeof a, ndim, sizes));
  if (t->requires_grad) return em_fail(EM_E_VALUE, "resize_: cannot resize variables that require grad");
  int same = ndim == t->ndim;
  for (int i = 0; same && i < ndim; i++) same = sizes[i] == t->sizes[i];
  if (same) return EM_OK; /* as PyTorch: the same sizes keep the strides */
  int64_t strides[EM_MAX_DIMS], need;
  em_contiguous_strides(ndim, sizes, strides);
  em_status st = em_extent_bytes("resize_", t->offset, ndim, sizes, strides, t->dtype, &need);
  if (st != EM_OK) return st;
  st = grow_storage("resize_", t->storage, need, t->dtype);
  if (st != EM_OK) return st;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    t->sizes[i] = sizes[i];
    t->strides[i] = strides[i];
  }
  /* a saved tensor whose shape changed under autograd is caught at
  ** backward (PyTorch's would fail there on the shapes instead) */
  em_storage_bump_version(t->storage);
  return EM_OK;
}

/* After set_, t views nothing it viewed before: a view's link to its base
** (and the in-place restrictions of the view it was) go. */
static void set_unview(em_tensor *t) {
  if (t->view_base) em_tensor_release(t->view_base);
  t->view_base = NULL;
  t->view_version = 0;
  t->nograd_view = t->multi_view = t->hook_view = false;
}

/* In grad mode: a leaf that requires grad is refused as any in-place op
** on it; otherwise, where t or the source requires grad, set_ is refused:
** PyTorch records a node whose backward fails ("derivative for set_ is
** not implemented"), ember says so at the call. */
static em_status set_check(const em_tensor *t, const em_tensor *src) {
  if (!em_grad_enabled() || !(t->requires_grad || (src && src->requires_grad))) return EM_OK;
  em_status st = t->requires_grad ? em_ag_check_inplace("set_", (em_tensor *)t) : EM_OK;
  if (st != EM_OK) return st;
  return em_fail(EM_E_VALUE, "set_: the derivative of set_ is not implemented (PyTorch's "
                 "backward through it fails too): call it under T.no_grad or on detached "
                 "tensors");
}

em_status em_set_(em_tensor *t, const em_tensor *src) {
  if (src->dtype != t->dtype)
    return em_fail(EM_E_TYPE, "set_: expected a source of dtype ember.%s (the tensor's), got "
                   "ember.%s", em_dtype_name(t->dtype), em_dtype_name(src->dtype));
  em_status st = em_same_device_check("set_", t->storage->device, src->storage->device);
  if (st == EM_OK) st = set_check(t, src);
  if (st != EM_OK) return st;
  if (t == src) return EM_OK;
  em_tensor_rebind(t, src->storage, src->offset, src->ndim, src->sizes, src->strides);
  set_unview(t);
  em_storage_bump_version(t->storage);
  return EM_OK;
}

em_status em_set_storage_(em_tensor *t, em_storage *s, int64_t offset, int ndim,
                          const int64_t *sizes, const int64_t *strides) {
  if (ndim < 0 || ndim > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "set_: %d dimensions (at most %d)", ndim, (int)EM_MAX_DIMS);
  int64_t need, cstrides[EM_MAX_DIMS];
  if (!strides) {
    em_contiguous_strides(ndim, sizes, cstrides);
    strides = cstrides;
  }
  em_status st = em_same_device_check("set_", t->storage->device, s->device);
  if (st == EM_OK) st = em_extent_bytes("set_", offset, ndim, sizes, strides, t->dtype, &need);
  if (st == EM_OK) st = set_check(t, NULL);
  /* PyTorch 1.13 grows a storage too small */
  if (st == EM_OK) st = grow_storage("set_", s, need, t->dtype);
  if (st != EM_OK) return st;
  em_tensor_rebind(t, s, offset, ndim, sizes, strides);
  set_unview(t);
  em_storage_bump_version(t->storage);
  return EM_OK;
}

/* t:view(dtype): the same bytes read as another dtype (PyTorch's
** Tensor.view(dtype)). Equal element sizes keep the geometry; otherwise the
** last dim (stride 1) is split or joined and the other strides and the
** offset scaled, each divisible where it is divided. Not differentiable;
** bool is refused as the target of another dtype (its bytes must be 0/1). */
em_status em_view_dtype(const em_tensor *t, em_dtype dt, em_tensor **out) {
  char a[32], b[32];
  snprintf(a, sizeof a, "%s", em_dtype_name(t->dtype));
  snprintf(b, sizeof b, "%s", em_dtype_name(dt));
  if ((unsigned)dt >= EM_NUM_DTYPES) return em_fail(EM_E_VALUE, "view: unknown dtype");
  if (dt == EM_BOOL && t->dtype != EM_BOOL)
    return em_fail(EM_E_TYPE, "view: viewing %s as bool is refused (a bool's bytes must be 0 or "
                   "1): use t:ne(0)", a);
  int64_t from = (int64_t)em_dtype_size(t->dtype), to = (int64_t)em_dtype_size(dt);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS], offset = t->offset;
  for (int i = 0; i < t->ndim; i++) {
    sizes[i] = t->sizes[i];
    strides[i] = t->strides[i];
  }
  if (from != to) {
    int last = t->ndim - 1;
    if (t->ndim == 0)
      return em_fail(EM_E_VALUE, "view: a 0-d tensor cannot be viewed as %s from %s "
                     "(different element sizes)", b, a);
    if (t->strides[last] != 1)
      return em_fail(EM_E_VALUE, "view: the last dim's stride must be 1 to view %s as %s "
                     "(different element sizes), got %lld", a, b, (long long)t->strides[last]);
    if (from > to) {
      int64_t r = from / to;
      if (em_mul_overflow_i64(sizes[last], r, &sizes[last]) ||
          em_mul_overflow_i64(offset, r, &offset))
        return em_fail(EM_E_VALUE, "view: the sizes overflow");
      for (int i = 0; i < last; i++)
        if (em_mul_overflow_i64(strides[i], r, &strides[i]))
          return em_fail(EM_E_VALUE, "view: the strides overflow");
    } else {
      int64_t r = to / from;
      if (sizes[last] % r)
        return em_fail(EM_E_VALUE, "view: the last dim's size must be divisible by %lld to view "
                       "%s as %s (different element sizes), got %lld", (long long)r, a, b,
                       (long long)sizes[last]);
      if (offset % r)
        return em_fail(EM_E_VALUE, "view: the storage offset must be divisible by %lld to view "
                       "%s as %s (different element sizes), got %lld", (long long)r, a, b,
                       (long long)offset);
      for (int i = 0; i < last; i++)
        if (strides[i] % r)
          return em_fail(EM_E_VALUE, "view: the stride of dim %d must be divisible by %lld to "
                         "view %s as %s (different element sizes), got %lld", i + 1,
                         (long long)r, a, b, (long long)strides[i]);
      sizes[last] /= r;
      offset /= r;
      for (int i = 0; i < last; i++) strides[i] /= r;
    }
  }
  return em_tensor_alloc(t->storage, offset, t->ndim, sizes, strides, dt, out);
}

em_status em_alias(const em_tensor *t, em_tensor **out) {
  em_status st = em_tensor_alloc(t->storage, t->offset, t->ndim, t->sizes, t->strides,
                                 t->dtype, out);
  if (st == EM_OK) em_ag_mark_nograd_view(em_grad_enabled(), t, *out);
  if (st != EM_OK || !em_grad_enabled() || !t->requires_grad) return st;
  st = em_ag_set_base(*out, t);
  if (st == EM_OK) {
    em_ag_params p;
    memset(&p, 0, sizeof p);
    p.name = "AliasBackward0";
    const em_tensor *in[1] = {t};
    st = em_ag_record(EM_AG_IDENTITY, 1, in, 1, out, &p);
  }
  if (st != EM_OK) {
    em_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* -- Autograd recording ---------------------------------------------------------
** Views that keep the elements in order (view/reshape/squeeze/...) record a
** reshape back; the others record where each element came from, found by
** running the same view over an arange (autograd.h, EM_AG_GATHER). */

#define RESHAPE_VIEW(NAME, CALL)                                             \
  em_ag_params p;                                                            \
  memset(&p, 0, sizeof p);                                                   \
  p.name = NAME;                                                             \
  const em_tensor *in[1] = {t};                                              \
  EM_AG_CALL(EM_AG_RESHAPE, 1, in, out, &p, CALL)

em_status em_narrow(const em_tensor *t, int64_t dim, int64_t start, int64_t length,
                    em_tensor **out) {
  EM_AG_GATHER("SliceBackward0", t, out, narrow_nograd(ag_src_, dim, start, length, ag_dst_));
}
em_status em_select(const em_tensor *t, int64_t dim, int64_t index, em_tensor **out) {
  EM_AG_GATHER("SelectBackward0", t, out, select_nograd(ag_src_, dim, index, ag_dst_));
}
em_status em_transpose(const em_tensor *t, int64_t dim0, int64_t dim1, em_tensor **out) {
  EM_AG_GATHER("TransposeBackward0", t, out, transpose_nograd(ag_src_, dim0, dim1, ag_dst_));
}
em_status em_reverse_dims(const em_tensor *t, em_tensor **out) {
  EM_AG_GATHER("PermuteBackward0", t, out, reverse_dims_nograd(ag_src_, ag_dst_));
}
em_status em_permute(const em_tensor *t, int n, const int64_t *dims, em_tensor **out) {
  EM_AG_GATHER("PermuteBackward0", t, out, permute_nograd(ag_src_, n, dims, ag_dst_));
}
em_status em_movedim(const em_tensor *t, int n, const int64_t *src, const int64_t *dst,
                     em_tensor **out) {
  EM_AG_GATHER("PermuteBackward0", t, out, movedim_nograd(ag_src_, n, src, dst, ag_dst_));
}
em_status em_unfold(const em_tensor *t, int64_t dim, int64_t size, int64_t step,
                    em_tensor **out) {
  EM_AG_GATHER("UnfoldBackward0", t, out, unfold_nograd(ag_src_, dim, size, step, ag_dst_));
}
em_status em_diagonal(const em_tensor *t, int64_t offset, int64_t dim1, int64_t dim2,
                      em_tensor **out) {
  EM_AG_GATHER("DiagonalBackward0", t, out,
               diagonal_nograd(ag_src_, offset, dim1, dim2, ag_dst_));
}
em_status em_flip(const em_tensor *t, int n, const int64_t *dims, em_tensor **out) {
  EM_AG_GATHER("FlipBackward0", t, out, flip_nograd(ag_src_, n, dims, ag_dst_));
}
em_status em_view(const em_tensor *t, int ndim, const int64_t *sizes, em_tensor **out) {
  RESHAPE_VIEW("ViewBackward0", view_nograd(t, ndim, sizes, out));
}
/* reshape and flatten: PyTorch's _reshape_alias when they could view, an
** unsafe view of a copy when they could not */
static em_status reshape_named(const em_tensor *t, em_tensor **out, em_status st) {
  if (st == EM_OK)
    em_ag_rename(t, *out, (*out)->storage == t->storage ? "ReshapeAliasBackward0"
                                                        : "UnsafeViewBackward0");
  return st;
}
static em_status reshape_recorded(const em_tensor *t, int ndim, const int64_t *sizes,
                                  em_tensor **out) {
  RESHAPE_VIEW("ViewBackward0", reshape_nograd(t, ndim, sizes, out));
}
static em_status flatten_recorded(const em_tensor *t, int64_t start, int64_t end,
                                  em_tensor **out) {
  RESHAPE_VIEW("ViewBackward0", flatten_nograd(t, start, end, out));
}
em_status em_reshape(const em_tensor *t, int ndim, const int64_t *sizes, em_tensor **out) {
  return reshape_named(t, out, reshape_recorded(t, ndim, sizes, out));
}
em_status em_flatten(const em_tensor *t, int64_t start, int64_t end, em_tensor **out) {
  return reshape_named(t, out, flatten_recorded(t, start, end, out));
}
em_status em_unflatten(const em_tensor *t, int64_t dim, int n, const int64_t *sizes,
                       em_tensor **out) {
  RESHAPE_VIEW("ViewBackward0", unflatten_nograd(t, dim, n, sizes, out));
}
em_status em_squeeze(const em_tensor *t, int n, const int64_t *dims, em_tensor **out) {
  /* one dim: PyTorch's squeeze.dim */
  RESHAPE_VIEW(n == 1 ? "SqueezeBackward1" : "SqueezeBackward0",
               squeeze_nograd(t, n, dims, out));
}
em_status em_unsqueeze(const em_tensor *t, int64_t dim, em_tensor **out) {
  RESHAPE_VIEW("UnsqueezeBackward0", unsqueeze_nograd(t, dim, out));
}
/* expand: the engine sums the gradient back over the expanded dims */
em_status em_expand(const em_tensor *t, int ndim, const int64_t *sizes, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "ExpandBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, expand_nograd(t, ndim, sizes, out));
}
em_status em_broadcast_to(const em_tensor *t, int ndim, const int64_t *sizes,
                          em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "ExpandBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, broadcast_to_nograd(t, ndim, sizes, out));
}
