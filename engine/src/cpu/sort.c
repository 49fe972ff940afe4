/*
** sort.c -- sort, topk, unique, equal, isclose/allclose.
**
** Guarantees:
** - sort is stable (a merge sort over positions) in both directions: equal
**   values keep their original order, as PyTorch's stable=True. NaN sorts
**   as larger than every number (last ascending, first descending).
** - Integers compare as int64 (exact), floats as double; indices are
**   1-based int64.
** - Each lane is handled by the lane runner (reduce_impl.h); scratch memory
**   is allocated once per call, never inside the iterator.
*/
#include "reduce_impl.h"
#include "autograd/autograd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* -- Keys and the merge sort ----------------------------------------------- */

typedef struct sortctx {
  em_lane h;
  int descending;
  int is_float;
  int64_t k;          /* how many leading results to write (topk), else len */
  size_t isize;
  em_load_d_fn ldd;
  em_load_i_fn ldi;
  double *dkey;       /* len keys (floats) */
  int64_t *ikey;      /* len keys (ints) */
  int64_t *perm, *tmp;
  int64_t *heap;      /* k positions (topk selection), or NULL */
  bool use_heap;
} sortctx;

/* a goes strictly before b in the requested order */
static inline int before(const sortctx *c, int64_t a, int64_t b) {
  if (c->is_float) {
    double x = c->dkey[a], y = c->dkey[b];
    bool xn = x != x, yn = y != y;
    if (c->descending) return (xn && !yn) || (!xn && !yn && x > y);
    return (!xn && yn) || (!xn && !yn && x < y);
  }
  return c->descending ? c->ikey[a] > c->ikey[b] : c->ikey[a] < c->ikey[b];
}

/* Bottom-up merge sort of c->perm[0..n): stable, O(n log n). */
static void merge_sort(sortctx *c, int64_t n) {
  int64_t *src = c->perm, *dst = c->tmp;
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) dst[o++] = before(c, src[j], src[i]) ? src[j++] : src[i++];
      while (i < mid) dst[o++] = src[i++];
      while (j < hi) dst[o++] = src[j++];
    }
    int64_t *s = src; src = dst; dst = s;
  }
  if (src != c->perm) memcpy(c->perm, src, (size_t)n * sizeof *src);
}

/* a before b, ties broken by position: a total order */
static inline int before_pos(const sortctx *c, int64_t a, int64_t b) {
  return before(c, a, b) || (!before(c, b, a) && a < b);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* topk with k much smaller than the lane: keep the k best positions in a
** binary heap whose root is the worst kept (O(len log k)), then order them
** by position and merge-sort them, which gives exactly the first k of the
** stable full sort. Leaves the result in c->perm[0..k). */
static void select_k(sortctx *c, int64_t len) {
  int64_t *h = c->heap, k = c->k, hn = 0;
  for (int64_t j = 0; j < len; j++) {
    if (hn < k) {
      int64_t i = hn++;
      h[i] = j;
      while (i > 0 && before_pos(c, h[(i - 1) / 2], h[i])) {  /* worse child up */
        int64_t p = (i - 1) / 2, t = h[p];
        h[p] = h[i]; h[i] = t; i = p;
      }
    } else if (before_pos(c, j, h[0])) {
      h[0] = j;
      int64_t i = 0;
      for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < k && before_pos(c, h[w], h[l])) w = l;
        if (r < k && before_pos(c, h[w], h[r])) w = r;
        if (w == i) break;
        int64_t t = h[w]; h[w] = h[i]; h[i] = t; i = w;
      }
    }
  }
  qsort(h, (size_t)k, sizeof *h, cmp_i64);
  memcpy(c->perm, h, (size_t)k * sizeof *h);
  merge_sort(c, k);
}

/* Per-thread scratch of a sortctx: keys, positions and the merge buffer for
** one lane (c->h.len entries), and the heap when topk selects (use_heap). */
static em_status sort_scratch_init(void *vctx) {
  sortctx *c = vctx;
  size_t n = (size_t)(c->h.len > 0 ? c->h.len : 1);
  c->dkey = malloc(n * sizeof(double));
  c->ikey = malloc(n * sizeof(int64_t));
  c->perm = malloc(n * sizeof(int64_t));
  c->tmp = malloc(n * sizeof(int64_t));
  c->heap = c->use_heap ? malloc((size_t)c->k * sizeof(int64_t)) : NULL;
  if (!c->dkey || !c->ikey || !c->perm || !c->tmp || (c->use_heap && !c->heap)) {
    free(c->dkey); free(c->ikey); free(c->perm); free(c->tmp); free(c->heap);
    return em_fail(EM_E_NOMEM, "sort: out of memory for a lane of %lld elements",
                   (long long)c->h.len);
  }
  return EM_OK;
}

static void sort_scratch_fini(void *vctx) {
  sortctx *c = vctx;
  free(c->dkey); free(c->ikey); free(c->perm); free(c->tmp); free(c->heap);
}

/* data[0] values out, data[1] indices out, data[2] input */
static void sort_lanes(char **d, const int64_t *st, int64_t n, void *vctx) {
  sortctx *c = vctx;
  const int64_t len = c->h.len, lv = c->h.stride[0], lx = c->h.stride[1],
                li = c->h.stride[2];
  for (int64_t i = 0; i < n; i++) {
    const char *x = d[2] + i * st[2];
    for (int64_t j = 0; j < len; j++) {
      if (c->is_float) c->dkey[j] = c->ldd(x + j * li);
      else c->ikey[j] = c->ldi(x + j * li);
      c->perm[j] = j;
    }
    if (c->heap) select_k(c, len);
    else merge_sort(c, len);
    char *v = d[0] + i * st[0], *ix = d[1] + i * st[1];
    for (int64_t j = 0; j < c->k; j++) {
      memcpy(v + j * lv, x + c->perm[j] * li, c->isize);
      *(int64_t *)(ix + j * lx) = c->perm[j] + 1;
    }
  }
}

static em_status sort_impl(const char *op, const em_tensor *t, int64_t dim, int descending,
                           int64_t k, bool check_k, em_tensor **values, em_tensor **indices) {
  int axis;
  if (t->storage->device.type != EM_CPU)
    return em_fail(EM_E_RUNTIME, "%s: expected a CPU tensor", op);
  em_status st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  int64_t len = t->ndim > 0 ? t->sizes[axis] : 1;
  if (!check_k) k = len;
  else if (k < 0 || k > len)
    return em_fail(EM_E_INDEX, "%s: k (%lld) is out of range: dimension %d has size %lld",
                   op, (long long)k, axis + 1, (long long)len);
  int64_t sizes[EM_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) sizes[i] = t->sizes[i];
  if (t->ndim > 0) sizes[axis] = k;
  em_tensor *v = NULL, *ix = NULL;
  sortctx c;
  memset(&c, 0, sizeof c);
  c.descending = descending;
  c.is_float = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT;
  c.k = k;
  c.isize = em_dtype_size(t->dtype);
  c.ldd = em_load_d(t->dtype);
  c.ldi = em_load_i(t->dtype);
  c.use_heap = check_k && k > 0 && k * 8 < len;
  if (st == EM_OK) st = em_empty(t->ndim, sizes, t->dtype, em_cpu(), &v);
  if (st == EM_OK) st = em_empty(t->ndim, sizes, EM_INT64, em_cpu(), &ix);
  if (st == EM_OK) {
    const em_tensor *ops[3] = {v, ix, t};
    em_lane_scratch sc = {sizeof c, sort_scratch_init, sort_scratch_fini};
    st = em_run_lanes(op, 3, ops, axis, len, sort_lanes, &c.h, true, &sc);
  }
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  *values = v;
  *indices = ix;
  return EM_OK;
}

static em_status sort_nograd(const em_tensor *t, int64_t dim, int descending,
                  em_tensor **values, em_tensor **indices) {
  return sort_impl("sort", t, dim, descending, 0, false, values, indices);
}

static em_status topk_nograd(const em_tensor *t, int64_t k, int64_t dim, int largest,
                  em_tensor **values, em_tensor **indices) {
  return sort_impl("topk", t, dim, largest, k, true, values, indices);
}

/* -- kthvalue / median -------------------------------------------------------
** A lane is sorted ascending (stable) and one position is picked: k-1 for
** kthvalue; the lower median (n-1)/2 of the lane, or of its non-NaN values
** for nanmedian; a lane holding NaN has NaN as its median (the first NaN in
** the original order, whose index is reported). */
enum { PICK_KTH = 0, PICK_MEDIAN = 1, PICK_NANMEDIAN = 2 };
typedef struct pickctx {
  sortctx s;
  int mode;
  int64_t k;  /* 0-based, PICK_KTH */
} pickctx;

/* data[0] value out, data[1] index out, data[2] input */
static void pick_lanes(char **d, const int64_t *st, int64_t n, void *vctx) {
  pickctx *p = vctx;
  sortctx *c = &p->s;
  const int64_t len = c->h.len, li = c->h.stride[2];
  for (int64_t i = 0; i < n; i++) {
    const char *x = d[2] + i * st[2];
    int64_t valid = len;
    for (int64_t j = 0; j < len; j++) {
      if (c->is_float) {
        c->dkey[j] = c->ldd(x + j * li);
        if (c->dkey[j] != c->dkey[j]) valid--;
      } else {
        c->ikey[j] = c->ldi(x + j * li);
      }
      c->perm[j] = j;
    }
    merge_sort(c, len);
    int64_t pos;
    if (p->mode == PICK_KTH) pos = p->k;
    else if (p->mode == PICK_MEDIAN) pos = valid < len ? valid : (len - 1) / 2;
    else pos = valid > 0 ? (valid - 1) / 2 : 0;
    memcpy(d[0] + i * st[0], x + c->perm[pos] * li, c->isize);
    *(int64_t *)(d[1] + i * st[1]) = c->perm[pos] + 1;
  }
}

static em_status pick_impl(const char *op, const em_tensor *t, int64_t dim, int keepdim,
                           int mode, int64_t k, em_tensor **values, em_tensor **indices) {
  int axis;
  if (t->storage->device.type != EM_CPU)
    return em_fail(EM_E_RUNTIME, "%s: expected a CPU tensor", op);
  em_status st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  int64_t len = t->ndim > 0 ? t->sizes[axis] : 1;
  if (mode == PICK_KTH && (k < 1 || k > len))
    return em_fail(EM_E_INDEX, "%s: k (%lld) is out of range: dimension %d has size %lld",
                   op, (long long)k, axis + 1, (long long)len);
  if (len == 0)
    return em_fail(EM_E_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                   op, axis + 1);
  int64_t sizes[EM_MAX_DIMS], str[EM_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) sizes[i] = t->sizes[i];
  if (t->ndim > 0) sizes[axis] = 1;
  em_tensor *v = NULL, *ix = NULL;
  pickctx p;
  memset(&p, 0, sizeof p);
  p.mode = mode;
  p.k = k - 1;
  sortctx *c = &p.s;
  c->is_float = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT;
  c->isize = em_dtype_size(t->dtype);
  c->ldd = em_load_d(t->dtype);
  c->ldi = em_load_i(t->dtype);
  if (st == EM_OK) st = em_empty(t->ndim, sizes, t->dtype, em_cpu(), &v);
  if (st == EM_OK) st = em_empty(t->ndim, sizes, EM_INT64, em_cpu(), &ix);
  if (st == EM_OK) {
    const em_tensor *ops[3] = {v, ix, t};
    em_lane_scratch sc = {sizeof p, sort_scratch_init, sort_scratch_fini};
    st = em_run_lanes(op, 3, ops, axis, len, pick_lanes, &c->h, true, &sc);
  }
  if (st == EM_OK && !keepdim && t->ndim > 0) {
    /* drop the size-1 axis: a view of the same storages */
    int m = 0;
    for (int i = 0; i < t->ndim; i++)
      if (i != axis) sizes[m++] = t->sizes[i];
    em_contiguous_strides(m, sizes, str);
    em_tensor *v2 = NULL, *i2 = NULL;
    st = em_as_strided(v, m, sizes, str, 0, &v2);
    if (st == EM_OK) st = em_as_strided(ix, m, sizes, str, 0, &i2);
    em_tensor_release(v);
    em_tensor_release(ix);
    v = v2;
    ix = i2;
    if (st != EM_OK) { em_tensor_release(v2); v = ix = NULL; em_tensor_release(i2); }
  }
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  *values = v;
  if (indices) *indices = ix;
  else em_tensor_release(ix);
  return EM_OK;
}

static em_status kthvalue_nograd(const em_tensor *t, int64_t k, int64_t dim, int keepdim,
                      em_tensor **values, em_tensor **indices) {
  return pick_impl("kthvalue", t, dim, keepdim, PICK_KTH, k, values, indices);
}

static em_status median_nograd(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int ignore_nan, em_tensor **values, em_tensor **indices) {
  const char *op = ignore_nan ? "nanmedian" : "median";
  int mode = ignore_nan ? PICK_NANMEDIAN : PICK_MEDIAN;
  if (has_dim) return pick_impl(op, t, dim, keepdim, mode, 0, values, indices);
  int64_t numel = em_tensor_numel(t);
  if (numel == 0) {
    /* PyTorch: the median of nothing is NaN */
    em_scalar nan = {EM_SCALAR_FLOAT, 0, NAN};
    return em_full(0, NULL, nan, t->dtype, em_cpu(), values);
  }
  em_tensor *c;
  em_status st = em_contiguous(t, &c);
  if (st != EM_OK) return st;
  em_tensor flat;
  memcpy(&flat, c, sizeof flat);
  flat.ndim = 1;
  flat.sizes[0] = numel;
  flat.strides[0] = 1;
  st = pick_impl(op, &flat, 1, 0, mode, 0, values, indices);
  em_tensor_release(c);
  return st;
}

/* -- unique ------------------------------------------------------------------- */

/* Hands unique's results to the caller, or releases them all on failure. */
static em_status unique_hand(em_status st, em_tensor *v, em_tensor *inv, em_tensor *cnt,
                             em_tensor **values, em_tensor **inverse, em_tensor **counts) {
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(inv);
    em_tensor_release(cnt);
    return st;
  }
  *values = v;
  if (inverse) *inverse = inv;
  if (counts) *counts = cnt;
  return EM_OK;
}

em_status em_unique(const em_tensor *t, em_tensor **values, em_tensor **inverse,
                    em_tensor **counts) {
  int64_t n = em_tensor_numel(t);
  em_tensor *c = NULL, *sv = NULL, *si = NULL, *v = NULL, *inv = NULL, *cnt = NULL;
  em_status st = em_contiguous(t, &c);
  if (st != EM_OK) return st;
  em_tensor flat;
  memcpy(&flat, c, sizeof flat);
  flat.ndim = 1;
  flat.sizes[0] = n;
  flat.strides[0] = 1;
  st = em_sort(&flat, 1, 0, &sv, &si);
  int64_t nu = 0;
  if (st == EM_OK) {
    /* count distinct runs in the sorted values (byte-equal neighbours, or
    ** equal as numbers: -0 and 0 are one value) */
    em_load_d_fn ldd = em_load_d(t->dtype);
    em_load_i_fn ldi = em_load_i(t->dtype);
    bool fl = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT;
    size_t isz = em_dtype_size(t->dtype);
    const char *s = em_tensor_data(sv);
    const int64_t *perm = em_tensor_data(si);
    for (int64_t i = 0; i < n; i++) {
      bool same = i > 0 && (fl ? ldd(s + i * isz) == ldd(s + (i - 1) * isz)
                               : ldi(s + i * isz) == ldi(s + (i - 1) * isz));
      if (!same) nu++;
    }
    int64_t usz[1] = {nu};
    st = em_empty(1, usz, t->dtype, em_cpu(), &v);
    if (st == EM_OK && counts) st = em_zeros(1, usz, EM_INT64, em_cpu(), &cnt);
    if (st == EM_OK && inverse) st = em_empty(t->ndim, t->sizes, EM_INT64, em_cpu(), &inv);
    if (st == EM_OK) {
      char *vd = em_tensor_data(v);
      int64_t *cd = cnt ? em_tensor_data(cnt) : NULL;
      int64_t *id = inv ? em_tensor_data(inv) : NULL;
      int64_t u = -1;
      for (int64_t i = 0; i < n; i++) {
        bool same = i > 0 && (fl ? ldd(s + i * isz) == ldd(s + (i - 1) * isz)
                                 : ldi(s + i * isz) == ldi(s + (i - 1) * isz));
        if (!same) { u++; memcpy(vd + u * isz, s + i * isz, isz); }
        if (cd) cd[u]++;
        if (id) id[perm[i] - 1] = u + 1;
      }
    }
  }
  em_tensor_release(c);
  em_tensor_release(sv);
  em_tensor_release(si);
  return unique_hand(st, v, inv, cnt, values, inverse, counts);
}

/* -- unique along a dim ----------------------------------------------------------
** The slices along dim (rows, after swapping dim with the first dim: PyTorch
** transposes rather than moves, which decides the lexicographic order of
** slices of 3 and more dims, and we keep its order) are sorted
** lexicographically and equal neighbours merged, as PyTorch's unique_dim:
** elements compare as numbers (-0 equals 0) and a NaN equals nothing, so a
** slice holding a NaN is never merged; for the sort NaN orders after every
** number, which keeps the order strict and weak. */

typedef struct rowcmp {
  const char *base;
  int64_t rowlen;
  size_t isz;
  bool fl;
  em_load_d_fn ldd;
  em_load_i_fn ldi;
} rowcmp;

/* -1/0/1 ordering of elements a and b; *eq cleared if they are not equal as
** numbers (NaN involved). */
static int elem_order(const rowcmp *c, const char *a, const char *b, bool *eq) {
  if (c->fl) {
    double x = c->ldd(a), y = c->ldd(b);
    if (x != x || y != y) {
      *eq = false;
      return (x != x) - (y != y);
    }
    return (x > y) - (x < y);
  }
  int64_t x = c->ldi(a), y = c->ldi(b);
  return (x > y) - (x < y);
}

static int row_order(const rowcmp *c, int64_t i, int64_t j, bool *eq) {
  const char *a = c->base + (size_t)i * c->rowlen * c->isz;
  const char *b = c->base + (size_t)j * c->rowlen * c->isz;
  *eq = true;
  for (int64_t k = 0; k < c->rowlen; k++) {
    int o = elem_order(c, a + k * c->isz, b + k * c->isz, eq);
    if (o) {
      *eq = false;
      return o;
    }
  }
  return 0;
}

/* Stable merge sort of the row positions a[0..n) by row_order (equal rows
** keep their positions' order), with scratch tmp of n entries. */
static void sort_rows(const rowcmp *c, int64_t *a, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  sort_rows(c, a, tmp, h);
  sort_rows(c, a + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  bool eq;
  while (i < h && j < n) tmp[k++] = row_order(c, a[j], a[i], &eq) < 0 ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, (size_t)n * sizeof *a);
}

static em_status unique_dim_impl(const em_tensor *t, int64_t dim, em_tensor **values,
                                 em_tensor **inverse, em_tensor **counts) {
  char buf[EM_SHAPE_BUF];
  if (t->ndim == 0)
    return em_fail(EM_E_VALUE, "unique: a 0-d tensor has no dim to take unique slices along");
  int ax;
  em_status st = em_wrap_dim("unique", dim, t->ndim, &ax);
  if (st != EM_OK) return st;
  int64_t S = t->sizes[ax];
  for (int i = 0; i < t->ndim; i++)
    if (i != ax && t->sizes[i] == 0 && S != 0)
      return em_fail(EM_E_VALUE, "unique: the tensor of size %s has a dim of size 0 other "
                     "than dim %lld, so unique along dim %lld cannot be applied",
                     em_fmt_shape(buf, sizeof buf, t->ndim, t->sizes), (long long)dim,
                     (long long)dim);
  int64_t src = ax + 1, front = 1;
  em_tensor *m = NULL, *c = NULL, *u = NULL, *v = NULL, *inv = NULL, *cnt = NULL;
  int64_t *order = NULL;
  st = em_transpose(t, front, src, &m);
  if (st == EM_OK) st = em_contiguous(m, &c);
  if (st != EM_OK) goto done;
  int64_t rowlen = S ? em_tensor_numel(c) / S : 0;
  size_t isz = em_dtype_size(t->dtype);
  rowcmp rc = {em_tensor_data(c), rowlen, isz, em_dtype_kindof(t->dtype) == EM_KIND_FLOAT,
               em_load_d(t->dtype), em_load_i(t->dtype)};
  order = malloc((size_t)(S ? S : 1) * 2 * sizeof *order);
  if (!order) {
    st = em_fail(EM_E_NOMEM, "unique: out of memory sorting %lld slices", (long long)S);
    goto done;
  }
  for (int64_t i = 0; i < S; i++) order[i] = i;
  sort_rows(&rc, order, order + S, S);
  int64_t nu = 0;
  for (int64_t i = 0; i < S; i++) {
    bool eq = false;
    if (i > 0) row_order(&rc, order[i - 1], order[i], &eq);
    if (!eq) nu++;
  }
  int64_t usz[EM_MAX_DIMS];
  for (int i = 0; i < c->ndim; i++) usz[i] = c->sizes[i];
  usz[0] = nu;
  st = em_empty(c->ndim, usz, t->dtype, em_cpu(), &u);
  if (st == EM_OK && counts) st = em_zeros(1, &nu, EM_INT64, em_cpu(), &cnt);
  if (st == EM_OK && inverse) st = em_empty(1, &S, EM_INT64, em_cpu(), &inv);
  if (st != EM_OK) goto done;
  char *ud = em_tensor_data(u);
  int64_t *cd = cnt ? em_tensor_data(cnt) : NULL, *id = inv ? em_tensor_data(inv) : NULL;
  size_t rowbytes = (size_t)rowlen * isz;
  int64_t k = -1;
  for (int64_t i = 0; i < S; i++) {
    bool eq = false;
    if (i > 0) row_order(&rc, order[i - 1], order[i], &eq);
    if (!eq) {
      k++;
      if (rowbytes) memcpy(ud + (size_t)k * rowbytes, rc.base + (size_t)order[i] * rowbytes, rowbytes);
    }
    if (cd) cd[k]++;
    if (id) id[order[i]] = k + 1;
  }
  em_tensor *back = NULL;
  st = em_transpose(u, front, src, &back);
  if (st == EM_OK) {
    st = em_contiguous(back, &v);
    em_tensor_release(back);
  }
done:
  free(order);
  em_tensor_release(m);
  em_tensor_release(c);
  em_tensor_release(u);
  return unique_hand(st, v, inv, cnt, values, inverse, counts);
}

em_status em_unique_dim(const em_tensor *t, int64_t dim, em_tensor **values,
                        em_tensor **inverse, em_tensor **counts) {
  int on = em_ag_pause(); /* unique is not differentiable: no history */
  em_status st = unique_dim_impl(t, dim, values, inverse, counts);
  em_ag_resume(on);
  return st;
}

/* -- equal / isclose ------------------------------------------------------------ */

typedef struct cmpctx {
  em_load_d_fn lda, ldb;
  em_load_i_fn lia, lib;
  bool ints;
  double rtol, atol;
  int equal_nan;
  int64_t unequal;
} cmpctx;

static void equal_loop(char **d, const int64_t *st, int64_t n, void *vctx) {
  cmpctx *c = vctx;
  for (int64_t i = 0; i < n && !c->unequal; i++) {
    const char *a = d[0] + i * st[0], *b = d[1] + i * st[1];
    if (c->ints ? c->lia(a) != c->lib(b) : !(c->lda(a) == c->ldb(b))) c->unequal = 1;
  }
}

em_status em_equal(const em_tensor *a, const em_tensor *b, int *result) {
  if (!em_device_equal(a->storage->device, b->storage->device))
    return em_fail(EM_E_RUNTIME, "equal: expected both tensors on the same device");
  *result = 0;
  if (a->ndim != b->ndim) return EM_OK;
  for (int i = 0; i < a->ndim; i++)
    if (a->sizes[i] != b->sizes[i]) return EM_OK;
  cmpctx c = {em_load_d(a->dtype), em_load_d(b->dtype), em_load_i(a->dtype),
              em_load_i(b->dtype),
              em_dtype_kindof(a->dtype) != EM_KIND_FLOAT &&
                  em_dtype_kindof(b->dtype) != EM_KIND_FLOAT,
              0, 0, 0, 0};
  em_iter it;
  const em_tensor *ops[2] = {a, b};
  em_status st = em_iter_build(&it, "equal", 2, ops, a->ndim, a->sizes, false);
  if (st != EM_OK) return st;
  if (it.numel > 0) em_iter_run(&it, equal_loop, &c);
  *result = !c.unequal;
  return EM_OK;
}

static inline bool close1(const cmpctx *c, double x, double y) {
  if (x == y) return true;  /* equal infinities too */
  if (x != x || y != y) return c->equal_nan && x != x && y != y;
  if (isinf(x) || isinf(y)) return false;
  return fabs(x - y) <= c->atol + c->rtol * fabs(y);
}

/* data[0] bool out, data[1] a, data[2] b */
static void isclose_loop(char **d, const int64_t *st, int64_t n, void *vctx) {
  cmpctx *c = vctx;
  for (int64_t i = 0; i < n; i++) {
    const char *a = d[1] + i * st[1], *b = d[2] + i * st[2];
    bool r = c->ints ? (c->lia(a) == c->lib(b) ||
                        fabs((double)c->lia(a) - (double)c->lib(b)) <=
                            c->atol + c->rtol * fabs((double)c->lib(b)))
                     : close1(c, c->lda(a), c->ldb(b));
    *(bool *)(d[0] + i * st[0]) = r;
  }
}

em_status em_isclose(const em_tensor *a, const em_tensor *b, double rtol,
                     double atol, int equal_nan, em_tensor **out) {
  if (!em_device_equal(a->storage->device, b->storage->device))
    return em_fail(EM_E_RUNTIME, "isclose: expected both tensors on the same device");
  if (a->dtype != b->dtype)
    return em_fail(EM_E_TYPE, "isclose: expected a and b to have the same dtype, but got: "
                   "%s != %s", em_dtype_name(a->dtype), em_dtype_name(b->dtype));
  if (rtol < 0 || atol < 0)
    return em_fail(EM_E_VALUE, "isclose: rtol and atol must be non-negative, got rtol=%g "
                   "atol=%g", rtol, atol);
  const em_tensor *ins[2] = {a, b};
  int nd;
  int64_t shape[EM_MAX_DIMS];
  em_status st = em_broadcast_shapes("isclose", 2, ins, &nd, shape);
  if (st != EM_OK) return st;
  em_tensor *o;
  st = em_empty(nd, shape, EM_BOOL, em_cpu(), &o);
  if (st != EM_OK) return st;
  cmpctx c = {em_load_d(a->dtype), em_load_d(b->dtype), em_load_i(a->dtype),
              em_load_i(b->dtype), em_dtype_kindof(a->dtype) != EM_KIND_FLOAT,
              rtol, atol, equal_nan, 0};
  em_iter it;
  const em_tensor *ops[3] = {o, a, b};
  st = em_iter_build(&it, "isclose", 3, ops, nd, shape, false);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  if (it.numel > 0) em_iter_run(&it, isclose_loop, &c);
  *out = o;
  return EM_OK;
}

em_status em_allclose(const em_tensor *a, const em_tensor *b, double rtol,
                      double atol, int equal_nan, int *result) {
  em_tensor *c;
  em_status st = em_isclose(a, b, rtol, atol, equal_nan, &c);
  if (st != EM_OK) return st;
  const bool *p = em_tensor_data(c);
  int64_t n = em_tensor_numel(c);
  int r = 1;
  for (int64_t i = 0; i < n && r; i++) r = p[i];
  em_tensor_release(c);
  *result = r;
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** The values are t's elements at the returned indices: the gradient goes
** back to those places (autograd.c, em_ag_record_indexed). */

static em_status record_picked(const char *name, const em_tensor *t, int64_t dim,
                               int keepdim, em_tensor **values, em_tensor **indices,
                               em_status st, int on) {
  if (st == EM_OK && on && t->requires_grad)
    st = em_ag_record_indexed(name, t, dim, keepdim, *indices, *values);
  if (st != EM_OK && on && t->requires_grad && *values) {
    em_tensor_release(*values);
    em_tensor_release(*indices);
    *values = *indices = NULL;
  }
  return st;
}

em_status em_sort(const em_tensor *t, int64_t dim, int descending, em_tensor **values,
                  em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = sort_nograd(t, dim, descending, values, indices);
  em_ag_resume(on);
  return record_picked("SortBackward0", t, dim, 1, values, indices, st, on);
}
em_status em_topk(const em_tensor *t, int64_t k, int64_t dim, int largest,
                  em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = topk_nograd(t, k, dim, largest, values, indices);
  em_ag_resume(on);
  return record_picked("TopkBackward0", t, dim, 1, values, indices, st, on);
}
em_status em_kthvalue(const em_tensor *t, int64_t k, int64_t dim, int keepdim,
                      em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = kthvalue_nograd(t, k, dim, keepdim, values, indices);
  em_ag_resume(on);
  return record_picked("KthvalueBackward0", t, dim, keepdim, values, indices, st, on);
}
em_status em_median(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int ignore_nan, em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_tensor *own = NULL;
  int rec = on && t->requires_grad;
  em_status st = median_nograd(t, has_dim, dim, keepdim, ignore_nan, values,
                               indices ? indices : rec ? &own : NULL);
  em_ag_resume(on);
  if (!rec || st != EM_OK) return st;
  const char *name = ignore_nan ? "NanmedianBackward0" : "MedianBackward0";
  em_tensor *ix = indices ? *indices : own;
  if (has_dim) {
    st = em_ag_record_indexed(name, t, dim, keepdim, ix, *values);
  } else {
    /* the whole tensor: the index is the flat position */
    em_tensor *pos = NULL;
    on = em_ag_pause();
    st = em_reshape(ix, (*values)->ndim, (*values)->sizes, &pos);
    em_ag_resume(on);
    if (st == EM_OK) st = em_ag_record_gather(name, t, pos, *values);
    em_tensor_release(pos);
  }
  em_tensor_release(own);
  if (st != EM_OK) {
    em_tensor_release(*values);
    *values = NULL;
    if (indices) {
      em_tensor_release(*indices);
      *indices = NULL;
    }
  }
  return st;
}
