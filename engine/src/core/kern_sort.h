/*
** kern_sort.h -- the sort family of the kernel table (core/kernels.h):
** sorting along a dim (sort, topk), picking by rank (kthvalue, median,
** nanmedian) and unique values or slices. The ops are in ops/sort.c: they
** check the arguments, shape the results and allocate every tensor an
** entry writes, on the inputs' device.
**
** What every entry may assume: the tensors are on this device; `axis` is a
** valid 0-based dim of t (0 for a 0-d t, which is one lane of length 1);
** the tensors written do not overlap the tensors read. Order: stable (equal
** values keep their positions' order); NaN sorts as larger than every
** number; integers compare exactly (as int64), floats as double. Indices
** written are 1-based int64. Failures are em_fail (out of scratch memory;
** a device without values); the tensors written are then undefined.
*/
#ifndef EMBER_KERN_SORT_H
#define EMBER_KERN_SORT_H

#include "core/core.h"

typedef enum em_pick_kind {
  EM_PICK_KTH,        /* the k-th smallest (k 0-based) */
  EM_PICK_MEDIAN,     /* the lower median; a lane holding NaN: its first NaN */
  EM_PICK_NANMEDIAN   /* the lower median of the non-NaN values (all NaN: a NaN) */
} em_pick_kind;

typedef struct em_sort_kernels {
  /* The first k entries of each lane of t sorted along axis (ascending, or
  ** descending): values (t's dtype) and their positions in t, both of t's
  ** sizes with size k along axis (0 <= k <= the lane length). */
  em_status (*sort)(const char *op, em_tensor *values, em_tensor *indices,
                    const em_tensor *t, int axis, int64_t k, int descending);
  /* One entry of each lane of t (length >= 1) sorted ascending, chosen by
  ** kind (k for EM_PICK_KTH, 0 <= k < the lane length): its value and
  ** position, both of t's sizes with axis of size 1. */
  em_status (*pick)(const char *op, em_tensor *values, em_tensor *indices,
                    const em_tensor *t, int axis, em_pick_kind kind, int64_t k);
  /* The number of distinct values in sorted (1-d, contiguous, ascending):
  ** neighbours equal as numbers are one value (-0 and 0; NaN equals
  ** nothing). The size of unique's result: a device without values
  ** cannot tell it. */
  em_status (*unique_count)(const em_tensor *sorted, int64_t *n);
  /* From sorted and perm (the 1-based positions that sorted them, int64,
  ** both 1-d contiguous of numel N): values (1-d contiguous, of the count
  ** above) = the distinct values in order; inverse (NULL, or int64
  ** contiguous of N elements) = for each original position, the 1-based
  ** position of its value in values; counts (NULL, or int64 contiguous,
  ** zeroed, of values' size) += how often each occurs. */
  em_status (*unique_write)(const em_tensor *sorted, const em_tensor *perm,
                            em_tensor *values, em_tensor *inverse, em_tensor *counts);
  /* slices: contiguous, its first dim (size S) indexes the slices. order:
  ** int64 contiguous of at least 2 * S elements (and 2). Sorts the slice
  ** positions lexicographically (stable; elements as numbers, NaN after
  ** every number) into order[0..S) (0-based; order[S..2S) is scratch) and
  ** sets *n to the number of distinct slices (equal neighbours merge; a
  ** slice holding NaN equals no other). */
  em_status (*unique_dim_sort)(const em_tensor *slices, em_tensor *order, int64_t *n);
  /* (This entry and the next may be NULL: the op then composes unique along
  ** a dim from the sort, index and scan ops: ops/unique_math.c.) */
  /* From slices and order (as unique_dim_sort left it): values (slices'
  ** sizes with n on the first dim, contiguous) = the distinct slices in
  ** order; inverse (NULL, or int64 of S) = each slice's 1-based position
  ** in values; counts (NULL, or int64 of n, zeroed) += the multiplicities. */
  em_status (*unique_dim_write)(const em_tensor *slices, const em_tensor *order,
                                em_tensor *values, em_tensor *inverse, em_tensor *counts);
} em_sort_kernels;

extern const em_sort_kernels em_cpu_sort_kernels, em_meta_sort_kernels;

#endif
