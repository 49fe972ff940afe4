/*
** cpu/linalg.c -- the linear-algebra family of the CPU's kernels
** (core/kern_linalg.h): one GEMM per batch element.
**
** Guarantees:
** - float32/float64 run on OpenBLAS (cblas_?gemm), each matrix handed over
**   in place with the transpose flag and leading dimension em_gemm_layout
**   finds for it.
** - complex64/complex128 run on cblas_cgemm / cblas_zgemm the same way
**   (alpha and beta real, passed as complex numbers with imaginary part 0).
** - int64 uses a blocked kernel; results wrap modulo 2^64.
** - A product with k == 0 scales C by beta here (BLAS is not asked to).
*/
#include "core/kern_linalg.h"
#include "cpu/omp_if.h"

#include <cblas.h>
#include <complex.h>

em_status em_cpu_lapack(const em_lapack_job *j);
#ifdef _OPENMP
#include <omp.h>
#endif

/* -- The per-batch GEMM kernels -----------------------------------------------
** data[0] C (contiguous m x n), data[1] A, data[2] B at the batch element. */

typedef struct gemmctx {
  int64_t m, n, k;
  int64_t as0, as1, bs0, bs1;  /* element strides of A and B */
  bool ta, tb;
  int64_t lda, ldb;
  double alpha, beta;
} gemmctx;

static void em_gemm_f32(char **d, const int64_t *st, int64_t cnt, void *vctx) {
  const gemmctx *c = vctx;
  for (int64_t i = 0; i < cnt; i++)
    cblas_sgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans,
                c->tb ? CblasTrans : CblasNoTrans, (blasint)c->m, (blasint)c->n,
                (blasint)c->k, (float)c->alpha, (const float *)(d[1] + i * st[1]),
                (blasint)c->lda, (const float *)(d[2] + i * st[2]), (blasint)c->ldb,
                (float)c->beta, (float *)(d[0] + i * st[0]), (blasint)(c->n > 1 ? c->n : 1));
}

static void em_gemm_f64(char **d, const int64_t *st, int64_t cnt, void *vctx) {
  const gemmctx *c = vctx;
  for (int64_t i = 0; i < cnt; i++)
    cblas_dgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans,
                c->tb ? CblasTrans : CblasNoTrans, (blasint)c->m, (blasint)c->n,
                (blasint)c->k, c->alpha, (const double *)(d[1] + i * st[1]),
                (blasint)c->lda, (const double *)(d[2] + i * st[2]), (blasint)c->ldb,
                c->beta, (double *)(d[0] + i * st[0]), (blasint)(c->n > 1 ? c->n : 1));
}

/* complex: cblas takes alpha and beta by address */
#define DEF_GEMM_CX(NAME, CT, FN)                                                      \
  static void NAME(char **d, const int64_t *st, int64_t cnt, void *vctx) {            \
    const gemmctx *c = vctx;                                                           \
    CT alpha = (CT)c->alpha, beta = (CT)c->beta;                                       \
    for (int64_t i = 0; i < cnt; i++)                                                  \
      FN(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans,                             \
         c->tb ? CblasTrans : CblasNoTrans, (blasint)c->m, (blasint)c->n, (blasint)c->k, \
         &alpha, d[1] + i * st[1], (blasint)c->lda, d[2] + i * st[2], (blasint)c->ldb,  \
         &beta, d[0] + i * st[0], (blasint)(c->n > 1 ? c->n : 1));                      \
  }
DEF_GEMM_CX(em_gemm_c64, float complex, cblas_cgemm)
DEF_GEMM_CX(em_gemm_c128, double complex, cblas_zgemm)

/* Blocked int64 GEMM, C = beta*C + alpha*A*B with wrap-around. The i-k-j
** order keeps the innermost loop on a contiguous row of C; blocks of 32
** rows, 128 of k and 512 of j keep a panel of B in cache. */
enum { KB = 128, JB = 512, IB = 32 };
static void em_gemm_i64(char **d, const int64_t *st, int64_t cnt, void *vctx) {
  const gemmctx *c = vctx;
  const uint64_t alpha = (uint64_t)(int64_t)c->alpha, beta = (uint64_t)(int64_t)c->beta;
  for (int64_t bi = 0; bi < cnt; bi++) {
    uint64_t *C = (uint64_t *)(d[0] + bi * st[0]);
    const int64_t *A = (const int64_t *)(d[1] + bi * st[1]);
    const int64_t *B = (const int64_t *)(d[2] + bi * st[2]);
    for (int64_t x = 0; x < c->m * c->n; x++) C[x] = beta == 0 ? 0 : C[x] * beta;
    /* row blocks are independent: threads split them (exact either way) */
    int64_t nrb = (c->m + IB - 1) / IB;
    EM_OMP_IF(omp_get_max_threads() > 1 && c->m * c->n * c->k >= (1 << 18) && nrb > 1 && !omp_in_parallel(), parallel for schedule(static),
    for (int64_t rb = 0; rb < nrb; rb++)
    for (int64_t j0 = 0; j0 < c->n; j0 += JB) {
      int64_t j1 = j0 + JB < c->n ? j0 + JB : c->n;
      for (int64_t k0 = 0; k0 < c->k; k0 += KB) {
        int64_t k1 = k0 + KB < c->k ? k0 + KB : c->k;
        int64_t i1 = (rb + 1) * IB < c->m ? (rb + 1) * IB : c->m;
        for (int64_t i = rb * IB; i < i1; i++) {
          uint64_t *Ci = C + i * c->n;
          for (int64_t kk = k0; kk < k1; kk++) {
            uint64_t a = alpha * (uint64_t)A[i * c->as0 + kk * c->as1];
            const int64_t *Bk = B + kk * c->bs0;
            if (c->bs1 == 1)
              for (int64_t j = j0; j < j1; j++) Ci[j] += a * (uint64_t)Bk[j];
            else
              for (int64_t j = j0; j < j1; j++) Ci[j] += a * (uint64_t)Bk[j * c->bs1];
          }
        }
      }
    });
  }
}

/* Nothing to multiply (k == 0): C = beta * C, or 0 when beta is 0 (C is
** not read then); int64 wraps. */
#define DEF_SCALE(NAME, T, MUL)                                                \
  static void NAME(char **d, const int64_t *st, int64_t cnt, void *vctx) {    \
    const gemmctx *c = vctx;                                                   \
    const int64_t mn = c->m * c->n;                                            \
    for (int64_t bi = 0; bi < cnt; bi++) {                                     \
      T *p = (T *)(d[0] + bi * st[0]);                                         \
      for (int64_t i = 0; i < mn; i++) p[i] = c->beta == 0 ? 0 : MUL(p[i], c->beta); \
    }                                                                          \
  }
#define MUL_F32(v, b) ((v) * (float)(b))
#define MUL_F64(v, b) ((v) * (b))
#define MUL_I64(v, b) ((int64_t)((uint64_t)(v) * (uint64_t)(int64_t)(b)))
DEF_SCALE(em_scale_f32, float, MUL_F32)
DEF_SCALE(em_scale_f64, double, MUL_F64)
DEF_SCALE(em_scale_i64, int64_t, MUL_I64)
DEF_SCALE(em_scale_c64, float complex, MUL_F32)
DEF_SCALE(em_scale_c128, double complex, MUL_F64)

/* -- The table entry ------------------------------------------------------- */

static void cpu_gemm(const em_iter *it, em_dtype dt, const em_gemm *g) {
  if (it->numel == 0) return;
  gemmctx c;
  c.m = g->m; c.n = g->n; c.k = g->k;
  c.as0 = g->as0; c.as1 = g->as1;
  c.bs0 = g->bs0; c.bs1 = g->bs1;
  c.alpha = g->alpha;
  c.beta = g->beta;
  if (g->k == 0) {
    if (g->beta != 1)
      em_iter_run(it, dt == EM_FLOAT32 ? em_scale_f32 : dt == EM_FLOAT64 ? em_scale_f64
                      : dt == EM_COMPLEX64 ? em_scale_c64 : dt == EM_COMPLEX128 ? em_scale_c128
                                                                   : em_scale_i64,
                  &c);
    return;
  }
  em_gemm_layout(c.m, c.k, c.as0, c.as1, &c.ta, &c.lda);
  em_gemm_layout(c.k, c.n, c.bs0, c.bs1, &c.tb, &c.ldb);
  em_iter_run(it, dt == EM_FLOAT32 ? em_gemm_f32 : dt == EM_FLOAT64 ? em_gemm_f64
                  : dt == EM_COMPLEX64 ? em_gemm_c64 : dt == EM_COMPLEX128 ? em_gemm_c128
                                                               : em_gemm_i64,
              &c);
}

const em_linalg_kernels em_cpu_linalg_kernels = {
    .gemm = cpu_gemm,
    .lapack = em_cpu_lapack, /* cpu/lapack.c */
    .lapack_runs = em_lapack_runs_all,
};

/* -- OpenBLAS's threads (core/parallel.c sets them with the engine's) ------ */

void em_blas_set_num_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
int em_blas_get_num_threads(void) { return openblas_get_num_threads(); }
