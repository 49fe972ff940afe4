/*
** kern_reduce.h -- the reduction family of the kernel table
** (core/kernels.h): reductions over dims, the one-dim "lane" ops (max/min
** along a dim, softmax, cumulative sums and extremes), and the comparisons
** (equal, isclose, allclose). The ops are in ops/reduce.c, ops/softmax.c,
** ops/cumulative.c and ops/compare.c: they check the arguments, type the
** result and allocate every tensor an entry writes, on the inputs' device.
**
** What every entry may assume: the tensors are on this device; `axis` is a
** valid 0-based dim of t (0 for a 0-d t, which is one lane of length 1);
** the tensors written do not overlap the tensors read. Entries that return
** em_status fail only with em_fail (out of scratch memory, or a device
** without values); the tensors written are then undefined.
*/
#ifndef EMBER_KERN_REDUCE_H
#define EMBER_KERN_REDUCE_H

#include "core/iter.h"

/* -- Reductions over dims --------------------------------------------------- */

typedef enum em_red_kind {
  EM_RED_SUM,
  EM_RED_PROD,
  EM_RED_MEAN,          /* t floating */
  EM_RED_AMAX,          /* NaN propagates */
  EM_RED_AMIN,
  EM_RED_ALL,           /* 1 when no element is zero */
  EM_RED_ANY,
  EM_RED_NANSUM,        /* t floating: the sum of the non-NaN elements */
  EM_RED_NANMEAN,       /* t floating */
  EM_RED_COUNT_NONZERO,
  EM_RED_VAR,           /* t floating */
  EM_RED_NORM           /* t floating */
} em_red_kind;

/* A reduction writes an accumulator that the op then casts into the
** result (a copy_): a tensor of t's sizes with the reduced dims of size 1
** (keepdim), of dtype em_red_acc_dtype, holding em_red_acc_width elements
** per output position: contiguous strides times the width, offset 0, so
** element j of output i is at data[i * width + j]. */
static inline em_dtype em_red_acc_dtype(em_red_kind k, em_dtype in) {
  if (k == EM_RED_ALL || k == EM_RED_ANY || k == EM_RED_COUNT_NONZERO) return EM_INT64;
  return em_dtype_kindof(in) == EM_KIND_FLOAT ? EM_FLOAT64 : EM_INT64;
}
static inline int em_red_acc_width(em_red_kind k) {
  return k == EM_RED_NANMEAN ? 2 : k == EM_RED_VAR ? 3 : 1;
}

typedef struct em_red_params {
  int64_t count;       /* inputs per output: the product of the reduced sizes */
  double p;            /* NORM: the order (not NaN) */
  double correction;   /* VAR: the divisor is max(0, count - correction) */
  int take_sqrt;       /* VAR: the standard deviation */
} em_red_params;

/* -- Comparisons ------------------------------------------------------------- */

typedef struct em_close_params {
  double rtol, atol;   /* both >= 0 */
  int equal_nan;
} em_close_params;

typedef struct em_reduce_kernels {
  /* Reduction k of t into acc (the layout above; its contents on entry
  ** are undefined). The entry sets every output to the identity, folds
  ** in every element of t (none: the identity stays) and leaves in
  ** element 0 of each output: the sum, product, extreme, 0/1 (all, any),
  ** count (count_nonzero), sum / count (mean), the sum of the non-NaN
  ** values / their count (nanmean; element 1: that count), the variance
  ** or, with take_sqrt, the standard deviation (var; element 1: the mean,
  ** NaN when count is 0; element 2: the sum of squared deviations), the
  ** p-norm. Integer sums and products wrap modulo 2^64. Results do not
  ** depend on the thread count. */
  em_status (*reduce)(const char *op, em_red_kind k, em_tensor *acc, const em_tensor *t,
                      const em_red_params *p);
  /* logsumexp of t: acc and shift are float64 accumulators of width 1
  ** (the layout above). shift gets each output's max over its inputs (0
  ** where infinite), acc gets log(sum(exp(x - shift))) + shift. */
  em_status (*logsumexp)(const char *op, em_tensor *acc, em_tensor *shift, const em_tensor *t);

  /* -- Lane ops: one whole dim of t per output lane ------------------------ */

  /* max (is_min 0) or min of each lane of t (of length >= 1): values (t's
  ** dtype) and 1-based int64 indices, both t's sizes with axis of size 1.
  ** NaN counts as the extreme; the first extreme wins. */
  em_status (*max_dim)(const char *op, em_tensor *values, em_tensor *indices,
                       const em_tensor *t, int axis, int is_min);
  /* cummax / cummin along axis: the running extremes (t's dtype) and the
  ** 1-based position where each was reached (int64; the last of equal
  ** values; each NaN takes over and stays), both of t's sizes. */
  em_status (*cumextreme)(const char *op, em_tensor *values, em_tensor *indices,
                          const em_tensor *t, int axis, int is_min);
  /* softmax or log_softmax (log) of t along axis into out (t's sizes, a
  ** floating dtype; t any dtype). */
  em_status (*softmax)(const char *op, em_tensor *out, const em_tensor *t, int axis, int log);
  /* cumsum or cumprod (prod) along axis into out (t's sizes and dtype). */
  em_status (*cumulative)(const char *op, em_tensor *out, const em_tensor *t, int axis,
                          int prod);

  /* -- Comparisons (ops/compare.c) ------------------------------------------ */

  /* *equal = 1 when every element of operand 0 of it (dtype a) equals the
  ** one of operand 1 (dtype b) as numbers (NaN equals nothing), else 0.
  ** it->numel > 0. */
  em_status (*equal)(const em_iter *it, em_dtype a, em_dtype b, int *equal);
  /* Operand 0 of it (bool) = whether operands 1 and 2 (both dtype dt) are
  ** close: |a - b| <= atol + rtol * |b|, equal values (infinities too)
  ** always, NaNs only to each other and only with equal_nan. it->numel
  ** may be 0. */
  void (*isclose)(const em_iter *it, em_dtype dt, const em_close_params *p);
  /* *result = 1 when every element of t (bool, contiguous, numel > 0) is
  ** true. */
  em_status (*all_true)(const char *op, const em_tensor *t, int *result);
} em_reduce_kernels;

extern const em_reduce_kernels em_cpu_reduce_kernels, em_meta_reduce_kernels;

#endif
