/*
** cpu/sort.c -- the sort family of the CPU's kernels (core/kern_sort.h):
** sort, topk, kthvalue/median, unique values and unique slices.
**
** What holds:
** - sort is stable (a merge sort over positions) in both directions: equal
**   values keep their original order, as PyTorch's stable=True. NaN sorts
**   as larger than every number (last ascending, first descending).
** - Integers compare as int64 (exact), floats as double; indices are
**   1-based int64.
** - Each lane is handled by the lane runner (cpu/lanes.h); scratch memory
**   is allocated once per thread and call, never inside the iterator.
*/
#include "core/kern_sort.h"
#include "cpu/lanes.h"

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

/* -- kthvalue / median -------------------------------------------------------
** kthvalue: PyTorch 1.13's quick_select_template (SortingUtils.h) on the
** lane's keys and positions, step for step (median of three, Hoare
** partition, NaN above every number), so among equal values it reports
** the index PyTorch's CPU kthvalue does. median/nanmedian: the lane is
** sorted ascending (stable) and one position is picked: the lower median
** (n-1)/2 of the lane, or of its non-NaN values for nanmedian; a lane
** holding NaN has NaN as its median (the first NaN in the original order,
** whose index is reported). */
typedef struct pickctx {
  sortctx s;
  em_pick_kind mode;
  int64_t k;  /* 0-based, PICK_KTH */
} pickctx;

/* key a > key b, or a is NaN and b is not (PyTorch's gt_or_nan) */
static inline int gt_or_nan(const sortctx *c, int64_t a, int64_t b) {
  if (c->is_float) {
    double x = c->dkey[a], y = c->dkey[b];
    return (x != x && y == y) || x > y;
  }
  return c->ikey[a] > c->ikey[b];
}

static inline void swap_at(sortctx *c, int64_t a, int64_t b) {
  if (c->is_float) {
    double t = c->dkey[a]; c->dkey[a] = c->dkey[b]; c->dkey[b] = t;
  } else {
    int64_t t = c->ikey[a]; c->ikey[a] = c->ikey[b]; c->ikey[b] = t;
  }
  int64_t t = c->perm[a]; c->perm[a] = c->perm[b]; c->perm[b] = t;
}

/* Leaves the k-th smallest (0-based) key at position k, its original
** position in perm[k]. The pivot stays at L during each partition (the
** scans stop at it), so comparing with position L is comparing with the
** pivot's value, as PyTorch's copy piv. */
static void quick_select(sortctx *c, int64_t n, int64_t k) {
  int64_t L = 0, R = n - 1;
  for (;;) {
    if (R <= L) return;
    if (R == L + 1) {
      if (gt_or_nan(c, L, R)) swap_at(c, L, R);
      return;
    }
    int64_t P = L + (R - L) / 2;
    swap_at(c, P, L + 1);
    if (gt_or_nan(c, L + 1, R)) swap_at(c, L + 1, R);
    if (gt_or_nan(c, L, R)) swap_at(c, L, R);
    if (gt_or_nan(c, L + 1, L)) swap_at(c, L + 1, L);
    int64_t i = L + 1, j = R;
    for (;;) {
      do i++; while (gt_or_nan(c, L, i));
      do j--; while (gt_or_nan(c, j, L));
      if (j < i) break;
      swap_at(c, i, j);
    }
    swap_at(c, L, j);
    if (j <= k) L = i;
    if (j >= k) R = j - 1;
  }
}

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
    if (p->mode == EM_PICK_KTH) quick_select(c, len, p->k);
    else merge_sort(c, len);
    int64_t pos;
    if (p->mode == EM_PICK_KTH) pos = p->k;
    else if (p->mode == EM_PICK_MEDIAN) pos = valid < len ? valid : (len - 1) / 2;
    else pos = valid > 0 ? (valid - 1) / 2 : 0;
    memcpy(d[0] + i * st[0], x + c->perm[pos] * li, c->isize);
    *(int64_t *)(d[1] + i * st[1]) = c->perm[pos] + 1;
  }
}

static void sort_setup(sortctx *c, const em_tensor *t) {
  memset(c, 0, sizeof *c);
  c->is_float = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT;
  c->isize = em_dtype_size(t->dtype);
  c->ldd = em_load_d(t->dtype);
  c->ldi = em_load_i(t->dtype);
}

static em_status cpu_sort(const char *op, em_tensor *values, em_tensor *indices,
                          const em_tensor *t, int axis, int64_t k, int descending) {
  int64_t len = em_lane_len(t, axis);
  sortctx c;
  sort_setup(&c, t);
  c.descending = descending;
  c.k = k;
  c.use_heap = k > 0 && k * 8 < len;  /* topk of a few: select, then sort */
  const em_tensor *ops[3] = {values, indices, t};
  em_lane_scratch sc = {sizeof c, sort_scratch_init, sort_scratch_fini};
  return em_run_lanes(op, 3, ops, axis, len, sort_lanes, &c.h, true, &sc);
}

static em_status cpu_pick(const char *op, em_tensor *values, em_tensor *indices,
                          const em_tensor *t, int axis, em_pick_kind kind, int64_t k) {
  pickctx p;
  sort_setup(&p.s, t);
  p.mode = kind;
  p.k = k;
  const em_tensor *ops[3] = {values, indices, t};
  em_lane_scratch sc = {sizeof p, sort_scratch_init, sort_scratch_fini};
  return em_run_lanes(op, 3, ops, axis, em_lane_len(t, axis), pick_lanes, &p.s.h, true, &sc);
}

/* -- unique ------------------------------------------------------------------- */

/* Element i of the sorted values s (isz bytes each) continues the run of
** element i - 1: byte-equal neighbours, or equal as numbers (-0 and 0 are
** one value; NaN equals nothing). The caller keeps the arguments in locals,
** so that the loads through ldd/ldi do not reload them. */
static inline bool same_as_previous(const char *s, size_t isz, bool fl, em_load_d_fn ldd,
                                    em_load_i_fn ldi, int64_t i) {
  return i > 0 && (fl ? ldd(s + i * isz) == ldd(s + (i - 1) * isz)
                      : ldi(s + i * isz) == ldi(s + (i - 1) * isz));
}

static em_status cpu_unique_count(const em_tensor *sorted, int64_t *n) {
  const char *s = em_tensor_data(sorted);
  const size_t isz = em_dtype_size(sorted->dtype);
  const bool fl = em_dtype_kindof(sorted->dtype) == EM_KIND_FLOAT;
  const em_load_d_fn ldd = em_load_d(sorted->dtype);
  const em_load_i_fn ldi = em_load_i(sorted->dtype);
  int64_t len = em_tensor_numel(sorted), nu = 0;
  for (int64_t i = 0; i < len; i++)
    if (!same_as_previous(s, isz, fl, ldd, ldi, i)) nu++;
  *n = nu;
  return EM_OK;
}

static em_status cpu_unique_write(const em_tensor *sorted, const em_tensor *perm,
                                  em_tensor *values, em_tensor *inverse, em_tensor *counts) {
  const char *s = em_tensor_data(sorted);
  const size_t isz = em_dtype_size(sorted->dtype);
  const bool fl = em_dtype_kindof(sorted->dtype) == EM_KIND_FLOAT;
  const em_load_d_fn ldd = em_load_d(sorted->dtype);
  const em_load_i_fn ldi = em_load_i(sorted->dtype);
  const int64_t len = em_tensor_numel(sorted), *pd = em_tensor_data(perm);
  char *vd = em_tensor_data(values);
  int64_t *cd = counts ? em_tensor_data(counts) : NULL;
  int64_t *id = inverse ? em_tensor_data(inverse) : NULL;
  int64_t u = -1;
  for (int64_t i = 0; i < len; i++) {
    if (!same_as_previous(s, isz, fl, ldd, ldi, i)) {
      u++;
      memcpy(vd + u * isz, s + i * isz, isz);
    }
    if (cd) cd[u]++;
    if (id) id[pd[i] - 1] = u + 1;
  }
  return EM_OK;
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

static rowcmp rows_of(const em_tensor *slices) {
  int64_t S = slices->sizes[0];
  rowcmp rc = {em_tensor_data(slices), S ? em_tensor_numel(slices) / S : 0,
               em_dtype_size(slices->dtype), em_dtype_kindof(slices->dtype) == EM_KIND_FLOAT,
               em_load_d(slices->dtype), em_load_i(slices->dtype)};
  return rc;
}

static em_status cpu_unique_dim_sort(const em_tensor *slices, em_tensor *order, int64_t *n) {
  rowcmp rc = rows_of(slices);
  int64_t S = slices->sizes[0], *ord = em_tensor_data(order);
  for (int64_t i = 0; i < S; i++) ord[i] = i;
  sort_rows(&rc, ord, ord + S, S);
  int64_t nu = 0;
  for (int64_t i = 0; i < S; i++) {
    bool eq = false;
    if (i > 0) row_order(&rc, ord[i - 1], ord[i], &eq);
    if (!eq) nu++;
  }
  *n = nu;
  return EM_OK;
}

static em_status cpu_unique_dim_write(const em_tensor *slices, const em_tensor *order,
                                      em_tensor *values, em_tensor *inverse,
                                      em_tensor *counts) {
  rowcmp rc = rows_of(slices);
  int64_t S = slices->sizes[0];
  const int64_t *ord = em_tensor_data(order);
  char *ud = em_tensor_data(values);
  int64_t *cd = counts ? em_tensor_data(counts) : NULL;
  int64_t *id = inverse ? em_tensor_data(inverse) : NULL;
  size_t rowbytes = (size_t)rc.rowlen * rc.isz;
  int64_t k = -1;
  for (int64_t i = 0; i < S; i++) {
    bool eq = false;
    if (i > 0) row_order(&rc, ord[i - 1], ord[i], &eq);
    if (!eq) {
      k++;
      if (rowbytes)
        memcpy(ud + (size_t)k * rowbytes, rc.base + (size_t)ord[i] * rowbytes, rowbytes);
    }
    if (cd) cd[k]++;
    if (id) id[ord[i]] = k + 1;
  }
  return EM_OK;
}

const em_sort_kernels em_cpu_sort_kernels = {
    .sort = cpu_sort,
    .pick = cpu_pick,
    .unique_count = cpu_unique_count,
    .unique_write = cpu_unique_write,
    .unique_dim_sort = cpu_unique_dim_sort,
    .unique_dim_write = cpu_unique_dim_write,
};
