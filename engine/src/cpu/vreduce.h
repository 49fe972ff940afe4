/*
** cpu/vreduce.h -- float32 reductions in float lanes (cpu/vreduce.c): of a
** contiguous run into one value, and of rows (a strided stack of contiguous
** rows) into a row of double accumulators. The reduce kernels
** (cpu/reduce.c) call them for float32 input.
**
** What holds:
** - Sums (of x, x*x or |x|) are cascades: blocks of EM_VRED_BLOCK
**   elements are summed in 32 float lanes (each lane: 4 pairwise sums of
**   4 elements, added in order) and folded to 8 lanes; the 4 blocks of a
**   leaf (EM_VRED_LEAF elements) are added pairwise and the 8 lanes folded
**   in a fixed tree; the leaf sums are combined pairwise in double by a
**   binary counter. Every element passes through at most
**   2 + 4 + 2 + 2 + 3 = 13 float additions and O(log n) double ones.
** - The order of every operation depends only on n (and, for rows, on the
**   row count), never on the data's address, a thread split or the
**   instruction set: the AVX2 and the baseline clones do the same IEEE
**   float operations in the same order (no fused multiply-add), so both
**   give the same bits (tests/c/test_vreduce.c).
** - Extremes propagate NaN (a NaN anywhere gives NaN); products and the
**   variance's moments are in double.
*/
#ifndef EMBER_CPU_VREDUCE_H
#define EMBER_CPU_VREDUCE_H

#include <stdint.h>

enum { EM_VRED_BLOCK = 512, EM_VRED_LEAF = 4 * EM_VRED_BLOCK };

/* What a run or a row stack reduces to. */
typedef enum em_vred_kind {
  EM_VRED_SUM,     /* sum of x */
  EM_VRED_SUMSQ,   /* sum of x * x (the 2-norm's) */
  EM_VRED_ASUM,    /* sum of |x| (the 1-norm's) */
  EM_VRED_MAX,     /* max of x */
  EM_VRED_MIN,
  EM_VRED_MAXABS,  /* max of |x| (the inf-norm's) */
  EM_VRED_MINABS,  /* min of |x| (the -inf-norm's) */
  EM_VRED_PROD,    /* product, in double */
  EM_VRED_VAR      /* {count, mean, M2} (rows only) */
} em_vred_kind;

/* The sum (SUM, SUMSQ, ASUM) or product (PROD) of the run p[0..n), in
** double; 0 (1) for n = 0. */
double em_vred_sum_f32(em_vred_kind k, const float *p, int64_t n);
/* The extreme (MAX, MIN, MAXABS, MINABS) of p[0..n): NaN if any element is
** NaN; -inf (max) or +inf (min) for n = 0. */
float em_vred_ext_f32(em_vred_kind k, const float *p, int64_t n);
/* The mean of p[0..n) and the sum of squared deviations from it (M2), in
** double: two passes over pieces that stay in cache, merged by Chan's
** formula. n >= 1. */
void em_vred_moments_f32(const float *p, int64_t n, double *mean, double *m2);
/* The product of p[0..n) by instruction-set version isa (0 baseline, 1
** AVX2, 2 AVX-512; < 0: the best this CPU runs); *ran (if not NULL) is 0
** when this CPU or build lacks that version (the result is then 1). Every
** version gives the same bits. */
double em_vred_prod_f32_isa(const float *p, int64_t n, int isa, int *ran);

/* Row stacks: for each column j < ncols, the nrows elements p[r * rs + j]
** (rs in elements) are folded into acc: acc[j] += (sums; summed in blocks
** of 16 rows in float, each block added in double), acc[j] *= (PROD),
** acc[j] = extreme of acc[j] and the column (MAX.., NaN-aware); for VAR
** acc[3j..3j+2] = {count, mean, M2} is merged with the column's (in
** double, two passes over blocks of 32 rows). Each column's result does
** not depend on ncols: callers may split the columns anywhere. */
void em_vred_rows_f32(em_vred_kind k, double *acc, const float *p, int64_t rs, int64_t nrows,
                      int64_t ncols);

#endif
