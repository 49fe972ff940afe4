/*
** kern_linalg.h -- the linear-algebra family of the kernel table
** (core/kernels.h): one strided-batched matrix product. The ops of
** ops/linalg.c (mm, bmm, mv, dot, outer, matmul, addmm, addmv, baddbmm,
** linear) check shapes and dtypes, convert the operands to the compute
** dtype, give them layouts a GEMM takes (em_gemm_layout), allocate the
** result, and call it once over the batch.
*/
#ifndef EMBER_KERN_LINALG_H
#define EMBER_KERN_LINALG_H

#include "core/iter.h"

#include <limits.h>

/* Can a rows x cols matrix with element strides (s0, s1) go to a GEMM as
** is (BLAS's and cuBLAS's layouts)? Row-major with leading dimension *ld
** (*trans false), or stored transposed, i.e. column-major (*trans true);
** a dim of size 1 takes any stride; *ld fits in an int. */
static inline bool em_gemm_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1,
                                  bool *trans, int64_t *ld) {
  int64_t rc = cols > 1 ? cols : 1, rr = rows > 1 ? rows : 1;
  if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= rc)) {
    *trans = false;
    *ld = rows == 1 ? rc : s0;
    return *ld <= INT_MAX;
  }
  if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= rr)) {
    *trans = true;
    *ld = cols == 1 ? rr : s1;
    return *ld <= INT_MAX;
  }
  return false;
}

/* One product of the batch: C (m x n) = alpha * A (m x k) @ B (k x n) +
** beta * C. m, n >= 1 and k >= 0, all at most INT_MAX. A's element strides
** (as0 along its rows' index, as1 along its columns') and B's (bs0, bs1)
** pass em_gemm_layout. beta == 0: C is not read (it may hold anything). */
typedef struct em_gemm {
  int64_t m, n, k;
  int64_t as0, as1, bs0, bs1;
  double alpha, beta;
} em_gemm;

typedef struct em_linalg_kernels {
  /* For every position of it (the batch dims; it->numel may be 0), with
  ** operand 0 at C, 1 at A and 2 at B of that batch element: the product
  ** of g in compute dtype dt: float32, float64, or int64 (wrapping modulo
  ** 2^64). Each C is contiguous (row stride n) and no two positions share
  ** one; A and B are only read. k == 0 leaves C = beta * C (0 when
  ** beta == 0). */
  void (*gemm)(const em_iter *it, em_dtype dt, const em_gemm *g);
} em_linalg_kernels;

extern const em_linalg_kernels em_cpu_linalg_kernels, em_meta_linalg_kernels;

#endif
