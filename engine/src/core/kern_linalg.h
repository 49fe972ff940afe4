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

/* -- LAPACK (issue 19): the decompositions and solvers of T.linalg ----------
** One job runs one routine over a batch of matrices. Every matrix is
** column-major (LAPACK's layout) at base + i * stride elements for batch
** element i (0-based), leading dimension ld; the op (ops/linalg_lapack.c)
** makes these buffers (fresh, owned by it) and reads info per element
** after the call. dt is float32, float64, complex64 or complex128 (the c/z
** routines); vectors (w) are in dt too, except the singular values (GESDD,
** GELS) and Hermitian eigenvalues (SYEVD) of a complex dt, which are in its value type, and GEEV's, which are always complex. */
typedef enum em_lapack_op {
  EM_LAPACK_GETRF, /* a (m x n) -> LU, ipiv (min(m,n), 1-based), info */
  EM_LAPACK_GETRS, /* a = LU (n x n) with ipiv; b (n x nrhs) -> op(A)^-1 b; trans 'N', 'T'
                      or 'C' (the conjugate transpose) */
  EM_LAPACK_GESV,  /* a (n x n) -> LU, ipiv, info; b -> op(A)^-1 b (trans 'N' or 'T'; the
                      cpu solves singular factors too: inf/NaN, as PyTorch) */
  EM_LAPACK_GETRI, /* a (n x n) -> its inverse (getrf then getri), ipiv, info; where
                      info > 0 the cpu writes getrs(trans, LU, I), read as a is
                      (transposed for trans 'T'), PyTorch 1.13's inv_ex values */
  EM_LAPACK_POTRF, /* a (n x n) -> its uplo factor, the other triangle zeroed, info */
  EM_LAPACK_TRSM,  /* a triangular (uplo, trans, diag); b (m x n) -> op(A)^-1 b (side 'L')
                      or b op(A)^-1 (side 'R'), alpha 1; no info */
  EM_LAPACK_GEQRF, /* a (m x n) -> R and reflectors, w = tau (min(m,n)) */
  EM_LAPACK_ORGQR, /* a (m x n, n <= m) with k reflectors and tau in w -> Q */
  EM_LAPACK_GESDD, /* a (m x n) (destroyed), jobz 'N'/'S'/'A' -> w = S, b = U (ldb),
                      c = V^H (ldc), info */
  EM_LAPACK_SYEVD, /* a (n x n) symmetric, or Hermitian (heevd) (uplo) -> w eigenvalues ascending; jobz 'V':
                      a holds the eigenvectors; info */
  EM_LAPACK_GELS,  /* a (m x n), b (max(m,n) x nrhs) -> solution in b's first n rows;
                      driver gels/gelsy/gelsd/gelss; rcond; rank, w = S (gelsd/gelss) */
  EM_LAPACK_GEEV,  /* a (n x n) (destroyed) -> w eigenvalues (n, complex of dt's value
                      type); jobz 'V': b (n x n, complex, ld n) the right eigenvectors
                      (unit norm, as geev gives them); info */
  EM_LAPACK_SYTRF, /* a (n x n) symmetric, or Hermitian when herm (hetrf) (uplo) ->
                      Bunch-Kaufman's L D L^T factors in the uplo triangle, ipiv (n,
                      LAPACK's: 1-based, negative for a 2 x 2 block), info */
  EM_LAPACK_SYTRS  /* a and ipiv from SYTRF (uplo, herm); b (n x nrhs) -> A^-1 b */
} em_lapack_op;

typedef enum em_lstsq_driver {
  EM_LSTSQ_GELS, EM_LSTSQ_GELSY, EM_LSTSQ_GELSD, EM_LSTSQ_GELSS
} em_lstsq_driver;

typedef struct em_lapack_job {
  em_lapack_op op;
  em_dtype dt;
  int64_t batch;
  int m, n, k, nrhs;
  char uplo, trans, diag, jobz, side;
  int herm;       /* SYTRF/SYTRS of a complex dt: Hermitian (hetrf/hetrs), else symmetric */
  em_lstsq_driver driver;
  double rcond;
  void *a; int64_t sa; int lda;
  void *b; int64_t sb; int ldb;
  void *c; int64_t sc; int ldc;
  void *w; int64_t sw;
  int32_t *ipiv; int64_t sp;
  int32_t *info;  /* batch entries (NULL: the op needs none) */
  int64_t *rank;  /* batch entries (GELS with gelsy/gelsd/gelss) */
} em_lapack_job;

typedef struct em_linalg_kernels {
  /* For every position of it (the batch dims; it->numel may be 0), with
  ** operand 0 at C, 1 at A and 2 at B of that batch element: the product
  ** of g in compute dtype dt: float32, float64, complex64, complex128, or
  ** int64 (wrapping modulo 2^64). Each C is contiguous (row stride n) and no two positions share
  ** one; A and B are only read. k == 0 leaves C = beta * C (0 when
  ** beta == 0). */
  void (*gemm)(const em_iter *it, em_dtype dt, const em_gemm *g);
  /* One LAPACK routine over the batch of j (batch >= 0; every dim >= 0
  ** and every ld >= max(1, rows)). Fails only when it cannot allocate
  ** LAPACK's workspace; numerical failures are j->info's. Small matrices
  ** of a batch run in parallel (one BLAS thread each). Optional: a device
  ** that leaves it NULL gets T.linalg host-staged (the ops copy the
  ** inputs to the CPU, run the CPU op, copy the results back).
  ** A device's buffers (a, b, c, w, ipiv, info, rank) are in its memory:
  ** the op reads info back through a copy to the host. Where info > 0, a
  ** device may leave GESV's b and GETRI's a undefined (cuda solves the
  ** singular factors anyway, as PyTorch's cuda path does, rather than wait
  ** for info). */
  em_status (*lapack)(const em_lapack_job *j);
  /* Whether lapack runs routine op; one it does not (cuda's GELS and GEEV)
  ** runs host-staged. NULL exactly when lapack is. em_lapack_runs_all: every
  ** routine. */
  bool (*lapack_runs)(em_lapack_op op);
} em_linalg_kernels;

bool em_lapack_runs_all(em_lapack_op op);

extern const em_linalg_kernels em_cpu_linalg_kernels, em_meta_linalg_kernels;

#endif
