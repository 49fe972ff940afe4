/*
** ops/unique_math.c -- unique along a dim composed from sort, index and scan
** ops, for a device without the unique_dim kernels (cuda today): the
** slices' lexicographic order by stable sorts of one column at a time, last
** column first (a least-significant-digit radix sort: stability keeps the
** order of the later columns among equal earlier ones, and of the slices'
** positions among equal slices), then neighbours compared (any element not
** equal: a NaN equals nothing, -0 equals 0), group numbers by a running
** sum, the first slice of each group as its value, inverse and counts by
** scatter. The same results as cpu/sort.c's kernels (em_sort sorts NaN as
** the largest value, stably); tests/lua/sort_spec.lua's unique(dim=) cases
** run through it on the CPU with em_nn_force_math.
*/
#include "ops/composed.h"
#include "core/kernels.h"

#define TRY(e)                          \
  do {                                  \
    if ((st = (e)) != EM_OK) goto done; \
  } while (0)

static void drop(em_tensor **t) {
  if (*t) em_tensor_release(*t);
  *t = NULL;
}

em_status em_unique_dim_composed(const em_tensor *slices, em_tensor **values,
                                 em_tensor **inverse, em_tensor **counts) {
  em_device dev = slices->storage->device;
  const int64_t S = slices->sizes[0];
  const int64_t W = S ? em_tensor_numel(slices) / S : 0;
  em_tensor *flat = NULL, *order = NULL, *col = NULL, *colo = NULL, *sv = NULL, *si = NULL,
            *next = NULL, *sorted = NULL, *a = NULL, *b = NULL, *ne = NULL, *diff = NULL,
            *first = NULL, *newg = NULL, *gid = NULL, *pos = NULL, *starts = NULL,
            *u = NULL, *inv = NULL, *cnt = NULL, *ones = NULL;
  em_status st = EM_OK;
  int64_t shape2[2] = {S, W}, n = 0;
  em_scalar one = {EM_SCALAR_INT, 1, 0};
  em_scalar s1 = {EM_SCALAR_INT, S + 1, 0};
  TRY(em_reshape(slices, 2, shape2, &flat));
  /* the slices' order, 1-based positions */
  TRY(em_arange(one, s1, one, EM_INT64, dev, &order));
  for (int64_t w = W; w >= 1 && S > 1; w--) {
    TRY(em_select(flat, 2, w, &col));
    TRY(em_index_select(col, 1, order, &colo));
    TRY(em_sort(colo, 1, 0, &sv, &si));
    TRY(em_index_select(order, 1, si, &next));
    drop(&order);
    order = next;
    next = NULL;
    drop(&col);
    drop(&colo);
    drop(&sv);
    drop(&si);
  }
  TRY(em_index_select(flat, 1, order, &sorted));
  /* a new group where a slice differs from the one before it */
  TRY(em_full(1, &(int64_t){1}, (em_scalar){EM_SCALAR_BOOL, 1, 0}, EM_BOOL, dev, &first));
  if (S > 1) {
    int64_t last = 2;
    TRY(em_narrow(sorted, 1, 1, S - 1, &a));
    TRY(em_narrow(sorted, 1, 2, S - 1, &b));
    TRY(em_binary(EM_OP_NE, a, b, &ne));
    TRY(em_reduce(EM_REDUCE_ANY, ne, 1, &last, 0, -1, &diff)); /* an empty slice: false */
    const em_tensor *parts[2] = {first, diff};
    TRY(em_cat(2, parts, 1, &newg));
  } else {
    TRY(em_narrow(first, 1, 1, S, &newg)); /* S of 0 or 1 */
  }
  TRY(em_cumulative(newg, 1, 0, EM_INT64, &gid)); /* 1-based group numbers */
  if (S > 0) TRY(em_get_i64(gid, S - 1, &n));    /* the count: read back */
  TRY(em_arange(one, s1, one, EM_INT64, dev, &pos));
  TRY(em_masked_select(pos, newg, &starts));
  drop(&a);
  TRY(em_index_select(sorted, 1, starts, &a)); /* the first slice of each group */
  {
    int64_t vs[EM_MAX_DIMS];
    vs[0] = n;
    for (int d = 1; d < slices->ndim; d++) vs[d] = slices->sizes[d];
    TRY(em_reshape(a, slices->ndim, vs, &u));
  }
  if (inverse) {
    TRY(em_zeros(1, &(int64_t){S}, EM_INT64, dev, &inv));
    TRY(em_index_copy_(inv, 1, order, gid)); /* inv[order[i]] = gid[i] */
  }
  if (counts) {
    TRY(em_zeros(1, &n, EM_INT64, dev, &cnt));
    TRY(em_full(1, &(int64_t){S}, one, EM_INT64, dev, &ones));
    TRY(em_index_add_(cnt, 1, gid, ones, one));
  }
  *values = u;
  u = NULL;
  if (inverse) { *inverse = inv; inv = NULL; }
  if (counts) { *counts = cnt; cnt = NULL; }
done:
  drop(&flat); drop(&order); drop(&col); drop(&colo); drop(&sv); drop(&si); drop(&next);
  drop(&sorted); drop(&a); drop(&b); drop(&ne); drop(&diff); drop(&first); drop(&newg);
  drop(&gid); drop(&pos); drop(&starts); drop(&u); drop(&inv); drop(&cnt); drop(&ones);
  return st;
}
