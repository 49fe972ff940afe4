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
  NN_TRY(em_reshape(slices, 2, shape2, &flat));
  /* the slices' order, 1-based positions */
  NN_TRY(em_arange(one, s1, one, EM_INT64, dev, &order));
  for (int64_t w = W; w >= 1 && S > 1; w--) {
    NN_TRY(em_select(flat, 2, w, &col));
    NN_TRY(em_index_select(col, 1, order, &colo));
    NN_TRY(em_sort(colo, 1, 0, &sv, &si));
    NN_TRY(em_index_select(order, 1, si, &next));
    nn_drop(&order);
    order = next;
    next = NULL;
    nn_drop(&col);
    nn_drop(&colo);
    nn_drop(&sv);
    nn_drop(&si);
  }
  NN_TRY(em_index_select(flat, 1, order, &sorted));
  /* a new group where a slice differs from the one before it */
  NN_TRY(em_full(1, &(int64_t){1}, (em_scalar){EM_SCALAR_BOOL, 1, 0}, EM_BOOL, dev, &first));
  if (S > 1) {
    int64_t last = 2;
    NN_TRY(em_narrow(sorted, 1, 1, S - 1, &a));
    NN_TRY(em_narrow(sorted, 1, 2, S - 1, &b));
    NN_TRY(em_binary(EM_OP_NE, a, b, &ne));
    NN_TRY(em_reduce(EM_REDUCE_ANY, ne, 1, &last, 0, -1, &diff)); /* an empty slice: false */
    const em_tensor *parts[2] = {first, diff};
    NN_TRY(em_cat(2, parts, 1, &newg));
  } else {
    NN_TRY(em_narrow(first, 1, 1, S, &newg)); /* S of 0 or 1 */
  }
  NN_TRY(em_cumulative(newg, 1, 0, EM_INT64, &gid)); /* 1-based group numbers */
  if (S > 0) NN_TRY(em_get_i64(gid, S - 1, &n));    /* the count: read back */
  NN_TRY(em_arange(one, s1, one, EM_INT64, dev, &pos));
  NN_TRY(em_masked_select(pos, newg, &starts));
  nn_drop(&a);
  NN_TRY(em_index_select(sorted, 1, starts, &a)); /* the first slice of each group */
  {
    int64_t vs[EM_MAX_DIMS];
    vs[0] = n;
    for (int d = 1; d < slices->ndim; d++) vs[d] = slices->sizes[d];
    NN_TRY(em_reshape(a, slices->ndim, vs, &u));
  }
  if (inverse) {
    NN_TRY(em_zeros(1, &(int64_t){S}, EM_INT64, dev, &inv));
    NN_TRY(em_index_copy_(inv, 1, order, gid)); /* inv[order[i]] = gid[i] */
  }
  if (counts) {
    NN_TRY(em_zeros(1, &n, EM_INT64, dev, &cnt));
    NN_TRY(em_full(1, &(int64_t){S}, one, EM_INT64, dev, &ones));
    NN_TRY(em_index_add_(cnt, 1, gid, ones, one));
  }
  *values = u;
  u = NULL;
  if (inverse) { *inverse = inv; inv = NULL; }
  if (counts) { *counts = cnt; cnt = NULL; }
done:
  nn_drop(&flat); nn_drop(&order); nn_drop(&col); nn_drop(&colo); nn_drop(&sv); nn_drop(&si); nn_drop(&next);
  nn_drop(&sorted); nn_drop(&a); nn_drop(&b); nn_drop(&ne); nn_drop(&diff); nn_drop(&first); nn_drop(&newg);
  nn_drop(&gid); nn_drop(&pos); nn_drop(&starts); nn_drop(&u); nn_drop(&inv); nn_drop(&cnt); nn_drop(&ones);
  return st;
}
