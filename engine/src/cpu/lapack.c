/*
** cpu/lapack.c -- the LAPACK entry of the CPU's linalg family
** (core/kern_linalg.h): one routine of OpenBLAS's LAPACK per batch element.
**
** Guarantees:
** - the Fortran symbols of libopenblas (dgetrf_, sgesdd_, ...) are called
**   directly, with the hidden string-length arguments gfortran appends for
**   CHARACTER parameters; no LAPACKE, no extra package.
** - Workspace is asked of LAPACK once per job (lwork = -1 on the first
**   matrix) and allocated once per thread, not per matrix.
** - complex64/complex128 run the c/z routines (Hermitian ones where the
**   real routine is symmetric: heevd, ungqr; gels, gelsy, gelsd, gelss for
**   lstsq); their real workspace (rwork)
**   is asked for and allocated as the other workspaces are. Real geev's
**   eigenvalues (wr, wi) and eigenvectors (conjugate pairs in two real
**   columns) are made complex here, as PyTorch does.
** - A batch of small matrices runs in parallel over OpenMP threads with
**   OpenBLAS held at one thread meanwhile (restored after); a large matrix
**   runs alone, with OpenBLAS's own threads inside LAPACK.
*/
#include "core/kern_linalg.h"

#include <cblas.h>
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef int lp_int; /* OpenBLAS's LAPACK on Debian: 32-bit integers */
typedef size_t lp_len;

#define LAPACK_PROTOS(P, T)                                                                   \
  void P##getrf_(const lp_int *m, const lp_int *n, T *a, const lp_int *lda, lp_int *ipiv,     \
                 lp_int *info);                                                               \
  void P##getrs_(const char *tr, const lp_int *n, const lp_int *nrhs, const T *a,             \
                 const lp_int *lda, const lp_int *ipiv, T *b, const lp_int *ldb, lp_int *info, \
                 lp_len);                                                                     \
  void P##getri_(const lp_int *n, T *a, const lp_int *lda, const lp_int *ipiv, T *work,        \
                 const lp_int *lwork, lp_int *info);                                          \
  void P##potrf_(const char *uplo, const lp_int *n, T *a, const lp_int *lda, lp_int *info,    \
                 lp_len);                                                                     \
  void P##geqrf_(const lp_int *m, const lp_int *n, T *a, const lp_int *lda, T *tau, T *work,  \
                 const lp_int *lwork, lp_int *info);                                          \
  void P##orgqr_(const lp_int *m, const lp_int *n, const lp_int *k, T *a, const lp_int *lda,  \
                 const T *tau, T *work, const lp_int *lwork, lp_int *info);                   \
  void P##gesdd_(const char *jobz, const lp_int *m, const lp_int *n, T *a, const lp_int *lda, \
                 T *s, T *u, const lp_int *ldu, T *vt, const lp_int *ldvt, T *work,           \
                 const lp_int *lwork, lp_int *iwork, lp_int *info, lp_len);                   \
  void P##syevd_(const char *jobz, const char *uplo, const lp_int *n, T *a, const lp_int *lda, \
                 T *w, T *work, const lp_int *lwork, lp_int *iwork, const lp_int *liwork,     \
                 lp_int *info, lp_len, lp_len);                                               \
  void P##gels_(const char *tr, const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a,   \
                const lp_int *lda, T *b, const lp_int *ldb, T *work, const lp_int *lwork,     \
                lp_int *info, lp_len);                                                        \
  void P##gelsy_(const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a, const lp_int *lda, \
                 T *b, const lp_int *ldb, lp_int *jpvt, const T *rcond, lp_int *rank,         \
                 T *work, const lp_int *lwork, lp_int *info);                                 \
  void P##gelsd_(const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a, const lp_int *lda, \
                 T *b, const lp_int *ldb, T *s, const T *rcond, lp_int *rank, T *work,        \
                 const lp_int *lwork, lp_int *iwork, lp_int *info);                           \
  void P##gelss_(const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a, const lp_int *lda, \
                 T *b, const lp_int *ldb, T *s, const T *rcond, lp_int *rank, T *work,        \
                 const lp_int *lwork, lp_int *info);                                          \
  void P##geev_(const char *jvl, const char *jvr, const lp_int *n, T *a, const lp_int *lda,    \
                T *wr, T *wi, T *vl, const lp_int *ldvl, T *vr, const lp_int *ldvr, T *work,  \
                const lp_int *lwork, lp_int *info, lp_len, lp_len);

/* the symmetric indefinite (Bunch-Kaufman) factorization and its solve;
** for the complex types also the Hermitian ones (he*) */
#define LAPACK_PROTOS_SY(P, T)                                                                \
  void P##sytrf_(const char *uplo, const lp_int *n, T *a, const lp_int *lda, lp_int *ipiv,    \
                 T *work, const lp_int *lwork, lp_int *info, lp_len);                         \
  void P##sytrs_(const char *uplo, const lp_int *n, const lp_int *nrhs, const T *a,           \
                 const lp_int *lda, const lp_int *ipiv, T *b, const lp_int *ldb, lp_int *info, \
                 lp_len);

#define LAPACK_PROTOS_HE(P, T)                                                                \
  void P##hetrf_(const char *uplo, const lp_int *n, T *a, const lp_int *lda, lp_int *ipiv,    \
                 T *work, const lp_int *lwork, lp_int *info, lp_len);                         \
  void P##hetrs_(const char *uplo, const lp_int *n, const lp_int *nrhs, const T *a,           \
                 const lp_int *lda, const lp_int *ipiv, T *b, const lp_int *ldb, lp_int *info, \
                 lp_len);

LAPACK_PROTOS(s, float)
LAPACK_PROTOS(d, double)
LAPACK_PROTOS_SY(s, float)
LAPACK_PROTOS_SY(d, double)

/* the complex routines: T the complex type, R its value type */
#define LAPACK_PROTOS_CX(P, T, R)                                                             \
  void P##getrf_(const lp_int *m, const lp_int *n, T *a, const lp_int *lda, lp_int *ipiv,     \
                 lp_int *info);                                                               \
  void P##getrs_(const char *tr, const lp_int *n, const lp_int *nrhs, const T *a,             \
                 const lp_int *lda, const lp_int *ipiv, T *b, const lp_int *ldb, lp_int *info, \
                 lp_len);                                                                     \
  void P##getri_(const lp_int *n, T *a, const lp_int *lda, const lp_int *ipiv, T *work,        \
                 const lp_int *lwork, lp_int *info);                                          \
  void P##potrf_(const char *uplo, const lp_int *n, T *a, const lp_int *lda, lp_int *info,    \
                 lp_len);                                                                     \
  void P##geqrf_(const lp_int *m, const lp_int *n, T *a, const lp_int *lda, T *tau, T *work,  \
                 const lp_int *lwork, lp_int *info);                                          \
  void P##ungqr_(const lp_int *m, const lp_int *n, const lp_int *k, T *a, const lp_int *lda,  \
                 const T *tau, T *work, const lp_int *lwork, lp_int *info);                   \
  void P##gesdd_(const char *jobz, const lp_int *m, const lp_int *n, T *a, const lp_int *lda, \
                 R *s, T *u, const lp_int *ldu, T *vt, const lp_int *ldvt, T *work,           \
                 const lp_int *lwork, R *rwork, lp_int *iwork, lp_int *info, lp_len);         \
  void P##heevd_(const char *jobz, const char *uplo, const lp_int *n, T *a, const lp_int *lda, \
                 R *w, T *work, const lp_int *lwork, R *rwork, const lp_int *lrwork,          \
                 lp_int *iwork, const lp_int *liwork, lp_int *info, lp_len, lp_len);          \
  void P##geev_(const char *jvl, const char *jvr, const lp_int *n, T *a, const lp_int *lda,    \
                T *w, T *vl, const lp_int *ldvl, T *vr, const lp_int *ldvr, T *work,          \
                const lp_int *lwork, R *rwork, lp_int *info, lp_len, lp_len);                 \
  void P##gels_(const char *tr, const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a,   \
                const lp_int *lda, T *b, const lp_int *ldb, T *work, const lp_int *lwork,     \
                lp_int *info, lp_len);                                                        \
  void P##gelsy_(const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a, const lp_int *lda, \
                 T *b, const lp_int *ldb, lp_int *jpvt, const R *rcond, lp_int *rank,         \
                 T *work, const lp_int *lwork, R *rwork, lp_int *info);                       \
  void P##gelsd_(const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a, const lp_int *lda, \
                 T *b, const lp_int *ldb, R *s, const R *rcond, lp_int *rank, T *work,        \
                 const lp_int *lwork, R *rwork, lp_int *iwork, lp_int *info);                 \
  void P##gelss_(const lp_int *m, const lp_int *n, const lp_int *nrhs, T *a, const lp_int *lda, \
                 T *b, const lp_int *ldb, R *s, const R *rcond, lp_int *rank, T *work,        \
                 const lp_int *lwork, R *rwork, lp_int *info);

LAPACK_PROTOS_CX(c, float complex, float)
LAPACK_PROTOS_CX(z, double complex, double)
LAPACK_PROTOS_SY(c, float complex)
LAPACK_PROTOS_SY(z, double complex)
LAPACK_PROTOS_HE(c, float complex)
LAPACK_PROTOS_HE(z, double complex)

/* Work sizes of one job: lwork elements of T, liwork ints, lrwork
** elements of T's value type (complex routines' rwork; real geev's wr, wi
** and eigenvectors). */
typedef struct lp_sizes {
  lp_int lwork, liwork;
  int64_t lrwork;
} lp_sizes;

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* Zeros the triangle LAPACK left untouched (strictly below the diagonal for
** uplo 'U', strictly above for 'L') of a column-major n x n matrix of
** elements of size el, column by column while it is cache-hot, as PyTorch
** returns potrf's and sytrf's factors. */
static void zero_other_triangle(void *a, int64_t lda, lp_int n, char uplo, size_t el) {
  char *c = a;
  for (lp_int col = 0; col < n; col++) {
    if (uplo == 'U' && col + 1 < n)
      memset(c + ((int64_t)col * lda + col + 1) * (int64_t)el, 0, (size_t)(n - col - 1) * el);
    else if (uplo == 'L' && col > 0)
      memset(c + (int64_t)col * lda * (int64_t)el, 0, (size_t)col * el);
  }
}

/* -- Small solves ------------------------------------------------------------
** A batch of small systems (n <= SMALL_N) spends more in LAPACK's per-call
** overhead (argument checks, OpenBLAS's buffer and thread bookkeeping) than
** in the arithmetic: for them GESV runs getf2's algorithm here on the
** column-major matrix LAPACK would be given (partial pivoting on the first
** largest |a| of the column, LAPACK's choice; the multipliers by the
** pivot's reciprocal), so ipiv and info are getrf's, then the two
** triangular solves of getrs for trans 'N' or 'T'. A singular matrix
** (info > 0) is restored from a copy and handed to LAPACK's getrf and
** getrs, which solve it anyway (inf/NaN), as PyTorch's solve_ex does. */
enum { SMALL_N = 32 };

#define DEF_SMALL(P, T, ABS)                                                                   \
  static lp_int small_gesv_##P(char trans, lp_int n, lp_int nrhs, T *a, lp_int lda,          \
                               lp_int *ipiv, T *b, lp_int ldb) {                              \
    T save[SMALL_N * SMALL_N];                                                                \
    for (lp_int c = 0; c < n; c++)                                                            \
      memcpy(save + (int64_t)c * n, a + (int64_t)c * lda, (size_t)n * sizeof(T));             \
    lp_int info = 0;                                                                          \
    for (lp_int jj = 0; jj < n; jj++) {                                                        \
      T *cj = a + (int64_t)jj * lda;                                                          \
      lp_int p = jj;                                                                          \
      T best = ABS(cj[jj]);                                                                   \
      for (lp_int i = jj + 1; i < n; i++)                                                     \
        if (ABS(cj[i]) > best) {                                                              \
          best = ABS(cj[i]);                                                                  \
          p = i;                                                                              \
        }                                                                                     \
      ipiv[jj] = p + 1;                                                                       \
      if (cj[p] == 0) {                                                                       \
        info = jj + 1;                                                                        \
        break;                                                                                \
      }                                                                                       \
      if (p != jj)                                                                            \
        for (lp_int k = 0; k < n; k++) {                                                      \
          T *ck = a + (int64_t)k * lda, t = ck[jj];                                           \
          ck[jj] = ck[p];                                                                     \
          ck[p] = t;                                                                          \
        }                                                                                     \
      T r = 1 / cj[jj];                                                                       \
      for (lp_int i = jj + 1; i < n; i++) cj[i] *= r;                                         \
      for (lp_int k = jj + 1; k < n; k++) {                                                   \
        T *ck = a + (int64_t)k * lda, f = ck[jj];                                             \
        for (lp_int i = jj + 1; i < n; i++) ck[i] -= cj[i] * f;                               \
      }                                                                                       \
    }                                                                                         \
    if (info) {                                                                               \
      for (lp_int c = 0; c < n; c++)                                                          \
        memcpy(a + (int64_t)c * lda, save + (int64_t)c * n, (size_t)n * sizeof(T));           \
      info = 0;                                                                               \
      P##getrf_(&n, &n, a, &lda, ipiv, &info);                                                \
      if (nrhs > 0) {                                                                         \
        lp_int i2 = 0;                                                                        \
        P##getrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &i2, 1);                         \
      }                                                                                       \
      return info;                                                                            \
    }                                                                                         \
    for (lp_int c = 0; c < nrhs; c++) {                                                       \
      T *x = b + (int64_t)c * ldb;                                                            \
      if (trans == 'N') { /* L U x = P^T b */                                                 \
        for (lp_int i = 0; i < n; i++) {                                                      \
          lp_int p = ipiv[i] - 1;                                                             \
          T t = x[i];                                                                         \
          x[i] = x[p];                                                                        \
          x[p] = t;                                                                           \
        }                                                                                     \
        for (lp_int k = 0; k < n; k++) {                                                      \
          const T *ck = a + (int64_t)k * lda;                                                 \
          for (lp_int i = k + 1; i < n; i++) x[i] -= ck[i] * x[k];                            \
        }                                                                                     \
        for (lp_int k = n - 1; k >= 0; k--) {                                                 \
          const T *ck = a + (int64_t)k * lda;                                                 \
          x[k] /= ck[k];                                                                      \
          for (lp_int i = 0; i < k; i++) x[i] -= ck[i] * x[k];                                \
        }                                                                                     \
      } else { /* U^T L^T P^T x = b */                                                        \
        for (lp_int i = 0; i < n; i++) {                                                      \
          const T *ci = a + (int64_t)i * lda;                                                 \
          T acc = 0;                                                                          \
          for (lp_int k = 0; k < i; k++) acc += ci[k] * x[k];                                 \
          x[i] = (x[i] - acc) / ci[i];                                                        \
        }                                                                                     \
        for (lp_int i = n - 1; i >= 0; i--) {                                                 \
          const T *ci = a + (int64_t)i * lda;                                                 \
          T acc = 0;                                                                          \
          for (lp_int k = i + 1; k < n; k++) acc += ci[k] * x[k];                             \
          x[i] -= acc;                                                                        \
        }                                                                                     \
        for (lp_int i = n - 1; i >= 0; i--) {                                                 \
          lp_int p = ipiv[i] - 1;                                                             \
          T t = x[i];                                                                         \
          x[i] = x[p];                                                                        \
          x[p] = t;                                                                           \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    return 0;                                                                                 \
  }

DEF_SMALL(s, float, fabsf)
DEF_SMALL(d, double, fabs)

/* One routine on batch element i with workspace (work, iwork); q: a
** workspace query (returns sizes in *sz, touches no data). The result is
** LAPACK's info. */
/* getri: the inverse from getrf's factors; on a singular matrix, PyTorch
** 1.13's inv_ex values (getrs on the factors against I). Shared by the real
** and complex kernels below (P: the LAPACK prefix, T: the element type). */
#define LAPACK_GETRI_CASE(P, T) \
  case EM_LAPACK_GETRI:                                                                  \
        if (q) {                                                                         \
          P##getri_(&n, a, &lda, ipiv, &wq, &lw, &info);                                 \
          if ((int64_t)n * n < 0x7ffffff0 && creal(wq) < (double)n * n) wq = (T)n * n;   \
          break;                                                                         \
        }                                                                                \
        P##getrf_(&n, &n, a, &lda, ipiv, &info);                                         \
        if (info == 0) {                                                                 \
          lp_int i2 = 0;                                                                 \
          P##getri_(&n, a, &lda, ipiv, work, &lw, &i2);                                  \
        } else if ((int64_t)lw >= (int64_t)n * n) {                                      \
          /* singular: PyTorch 1.13's inv_ex is solve_ex(A, I), getrs on the factors */  \
          /* (inf/NaN); trans 'T': a held A^T, so X is stored transposed */              \
          lp_int i2 = 0;                                                                 \
          memset(work, 0, (size_t)n * n * sizeof(T));                                    \
          for (lp_int c = 0; c < n; c++) work[(int64_t)c * n + c] = 1;                   \
          P##getrs_(&j->trans, &n, &n, a, &lda, ipiv, work, &n, &i2, 1);                 \
          for (lp_int c = 0; c < n; c++)                                                 \
            for (lp_int r = 0; r < n; r++)                                               \
              a[j->trans == 'T' ? (int64_t)r * lda + c : (int64_t)c * lda + r] =         \
                  work[(int64_t)c * n + r];                                              \
        }                                                                                \
        break;

#define DEF_ONE(P, T, CBLAS_TRSM)                                                              \
  static lp_int one_##P(const em_lapack_job *j, int64_t i, T *work, lp_int *iwork, T *rwork,  \
                        lp_sizes *sz, int q) {                                                \
    lp_int m = j->m, n = j->n, k = j->k, nrhs = j->nrhs, lda = j->lda, ldb = j->ldb,          \
           ldc = j->ldc, info = 0, lw = q ? -1 : sz->lwork, liw = q ? -1 : sz->liwork;        \
    T *a = (T *)j->a + i * j->sa;                                                             \
    T *b = j->b ? (T *)j->b + i * j->sb : NULL;                                               \
    T *c = j->c ? (T *)j->c + i * j->sc : NULL;                                               \
    T *w = j->w ? (T *)j->w + i * j->sw : NULL;                                               \
    lp_int *ipiv = j->ipiv ? (lp_int *)j->ipiv + i * j->sp : NULL;                            \
    T wq = 0;                                                                                 \
    lp_int iq = 0;                                                                            \
    T rcond = (T)j->rcond;                                                                    \
    switch (j->op) {                                                                          \
      case EM_LAPACK_GETRF:                                                                   \
        if (!q) P##getrf_(&m, &n, a, &lda, ipiv, &info);                                      \
        break;                                                                                \
      case EM_LAPACK_GETRS:                                                                   \
        if (!q) P##getrs_(&j->trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);            \
        break;                                                                                \
      case EM_LAPACK_GESV:                                                                    \
        if (q) break;                                                                         \
        if (n <= SMALL_N) {                                                                   \
          info = small_gesv_##P(j->trans, n, nrhs, a, lda, ipiv, b, ldb);                     \
          break;                                                                              \
        }                                                                                     \
        P##getrf_(&n, &n, a, &lda, ipiv, &info);                                              \
        if (nrhs > 0) { /* a singular A solved anyway (inf/NaN), as PyTorch */                 \
          lp_int i2 = 0;                                                                      \
          P##getrs_(&j->trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &i2, 1);                    \
        }                                                                                     \
        break;                                                                                \
      LAPACK_GETRI_CASE(P, T)                                                               \
      case EM_LAPACK_SYTRF:                                                                   \
        P##sytrf_(&j->uplo, &n, a, &lda, ipiv, q ? &wq : work, &lw, &info, 1);                \
        if (q) info = 0;                                                                      \
        if (!q) zero_other_triangle(a, lda, n, j->uplo, sizeof(T)); /* as PyTorch's LD */     \
        break;                                                                                \
      case EM_LAPACK_SYTRS:                                                                   \
        if (!q) P##sytrs_(&j->uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);             \
        break;                                                                                \
case EM_LAPACK_POTRF:                                                                   \
        if (q) break;                                                                         \
        P##potrf_(&j->uplo, &n, a, &lda, &info, 1);                                           \
        zero_other_triangle(a, lda, n, j->uplo, sizeof(T));                                   \
        break;                                                                                \
      case EM_LAPACK_TRSM:                                                                    \
        if (!q && m > 0 && n > 0)                                                             \
          CBLAS_TRSM(CblasColMajor, j->side == 'L' ? CblasLeft : CblasRight,                  \
                     j->uplo == 'U' ? CblasUpper : CblasLower,                                \
                     j->trans == 'T' ? CblasTrans : CblasNoTrans,                             \
                     j->diag == 'U' ? CblasUnit : CblasNonUnit, m, n, 1, a, lda, b, ldb);     \
        break;                                                                                \
      case EM_LAPACK_GEQRF:                                                                   \
        P##geqrf_(&m, &n, a, &lda, w, q ? &wq : work, &lw, &info);                            \
        break;                                                                                \
      case EM_LAPACK_ORGQR:                                                                   \
        P##orgqr_(&m, &n, &k, a, &lda, w, q ? &wq : work, &lw, &info);                        \
        break;                                                                                \
      case EM_LAPACK_GESDD:                                                                   \
        P##gesdd_(&j->jobz, &m, &n, a, &lda, w, b, &ldb, c, &ldc, q ? &wq : work, &lw, iwork,  \
                  &info, 1);                                                                  \
        if (q) iq = 8 * imax(1, imin(m, n));                                                  \
        break;                                                                                \
      case EM_LAPACK_SYEVD:                                                                   \
        P##syevd_(&j->jobz, &j->uplo, &n, a, &lda, w, q ? &wq : work, &lw, q ? &iq : iwork,   \
                  &liw, &info, 1, 1);                                                         \
        break;                                                                                \
      case EM_LAPACK_GELS:                                                                    \
        switch (j->driver) {                                                                  \
          case EM_LSTSQ_GELS:                                                                 \
            P##gels_("N", &m, &n, &nrhs, a, &lda, b, &ldb, q ? &wq : work, &lw, &info, 1);    \
            break;                                                                            \
          case EM_LSTSQ_GELSY: {                                                              \
            lp_int rank = 0;                                                                  \
            if (!q) memset(iwork, 0, (size_t)imax(1, n) * sizeof *iwork);                     \
            P##gelsy_(&m, &n, &nrhs, a, &lda, b, &ldb, iwork, &rcond, &rank,                  \
                      q ? &wq : work, &lw, &info);                                            \
            if (q) iq = imax(1, n);                                                           \
            else if (j->rank) j->rank[i] = rank;                                              \
            break;                                                                            \
          }                                                                                   \
          case EM_LSTSQ_GELSD: {                                                              \
            lp_int rank = 0;                                                                  \
            P##gelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, w, &rcond, &rank, q ? &wq : work, &lw,  \
                      q ? &iq : iwork, &info);                                                \
            if (q) iq = imax(1, iq);                                                          \
            else if (j->rank) j->rank[i] = rank;                                              \
            break;                                                                            \
          }                                                                                   \
          case EM_LSTSQ_GELSS: {                                                              \
            lp_int rank = 0;                                                                  \
            P##gelss_(&m, &n, &nrhs, a, &lda, b, &ldb, w, &rcond, &rank, q ? &wq : work, &lw,  \
                      &info);                                                                 \
            if (!q && j->rank) j->rank[i] = rank;                                             \
            break;                                                                            \
          }                                                                                   \
        }                                                                                     \
        break;                                                                                \
      case EM_LAPACK_GEEV: {                                                                  \
        /* rwork: wr, wi (n each), then the real eigenvectors (n x n) */                      \
        lp_int one = 1;                                                                       \
        T *wr = rwork, *wi = rwork ? rwork + n : NULL, *vr = rwork ? rwork + 2 * n : NULL;    \
        P##geev_("N", &j->jobz, &n, a, &lda, wr, wi, NULL, &one, vr, &lda, q ? &wq : work,    \
                 &lw, &info, 1, 1);                                                           \
        if (q) sz->lrwork = 2 * (int64_t)n + (int64_t)n * n;                                  \
        else if (info == 0)                                                                   \
          geev_complex_##P(n, wr, wi, j->jobz == 'V' ? vr : NULL,                             \
                           (T *)j->w + 2 * i * j->sw, j->b ? (T *)j->b + 2 * i * j->sb : NULL); \
        break;                                                                                \
      }                                                                                       \
      default:                                                                                \
        break;                                                                                \
    }                                                                                         \
    if (q) {                                                                                  \
      sz->lwork = imax(1, (lp_int)wq + 1);                                                    \
      sz->liwork = imax(1, iq);                                                               \
    }                                                                                         \
    return info;                                                                              \
  }

/* Real geev's results made complex: w[j] = wr[j] + i wi[j]; a conjugate
** pair (wi[j] > 0, then wi[j+1] < 0) has eigenvectors vr[:, j] +- i
** vr[:, j+1]. w and v (n x n, column-major; NULL when not wanted) are
** complex of T. */
#define DEF_GEEV_COMPLEX(P, T, CT)                                                            \
  static void geev_complex_##P(lp_int n, const T *wr, const T *wi, const T *vr, void *wv,    \
                               void *vv) {                                                    \
    CT *w = wv, *v = vv;                                                                      \
    for (lp_int c = 0; c < n; c++) w[c] = wr[c] + wi[c] * I;                                  \
    if (!vr) return;                                                                          \
    for (lp_int c = 0; c < n; c++) {                                                          \
      const T *x = vr + (int64_t)c * n;                                                       \
      CT *o = v + (int64_t)c * n;                                                             \
      if (wi[c] != 0 && c + 1 < n) {                                                          \
        const T *y = x + n;                                                                   \
        for (lp_int r = 0; r < n; r++) {                                                      \
          o[r] = x[r] + y[r] * I;                                                             \
          o[r + n] = x[r] - y[r] * I;                                                         \
        }                                                                                     \
        c++;                                                                                  \
      } else {                                                                                \
        for (lp_int r = 0; r < n; r++) o[r] = x[r];                                           \
      }                                                                                       \
    }                                                                                         \
  }
DEF_GEEV_COMPLEX(s, float, float complex)
DEF_GEEV_COMPLEX(d, double, double complex)

DEF_ONE(s, float, cblas_strsm)
DEF_ONE(d, double, cblas_dtrsm)

/* The complex routines on batch element i (as DEF_ONE; rwork: the real
** workspace of gesdd, heevd and geev). */
#define DEF_ONE_CX(P, T, R, CBLAS_TRSM)                                                        \
  static lp_int one_##P(const em_lapack_job *j, int64_t i, T *work, lp_int *iwork, R *rwork,  \
                        lp_sizes *sz, int q) {                                                \
    lp_int m = j->m, n = j->n, k = j->k, nrhs = j->nrhs, lda = j->lda, ldb = j->ldb,          \
           ldc = j->ldc, info = 0, lw = q ? -1 : sz->lwork, liw = q ? -1 : sz->liwork;        \
    lp_int lrw = q ? -1 : (lp_int)sz->lrwork;                                                 \
    T *a = (T *)j->a + i * j->sa;                                                             \
    T *b = j->b ? (T *)j->b + i * j->sb : NULL;                                               \
    T *c = j->c ? (T *)j->c + i * j->sc : NULL;                                               \
    lp_int *ipiv = j->ipiv ? (lp_int *)j->ipiv + i * j->sp : NULL;                            \
    T wq = 0;                                                                                 \
    R rq = 0;                                                                                 \
    lp_int iq = 0;                                                                            \
    int64_t mn = imin(m, n), mx = imax(m, n);                                                 \
    switch (j->op) {                                                                          \
      case EM_LAPACK_GETRF:                                                                   \
        if (!q) P##getrf_(&m, &n, a, &lda, ipiv, &info);                                      \
        break;                                                                                \
      case EM_LAPACK_GETRS:                                                                   \
        if (!q) P##getrs_(&j->trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);            \
        break;                                                                                \
      case EM_LAPACK_GESV:                                                                    \
        if (q) break;                                                                         \
        P##getrf_(&n, &n, a, &lda, ipiv, &info);                                              \
        if (nrhs > 0) { /* a singular A solved anyway (inf/NaN), as PyTorch */                 \
          lp_int i2 = 0;                                                                      \
          P##getrs_(&j->trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &i2, 1);                    \
        }                                                                                     \
        break;                                                                                \
      LAPACK_GETRI_CASE(P, T)                                                               \
      case EM_LAPACK_SYTRF:                                                                   \
        if (j->herm) P##hetrf_(&j->uplo, &n, a, &lda, ipiv, q ? &wq : work, &lw, &info, 1);   \
        else P##sytrf_(&j->uplo, &n, a, &lda, ipiv, q ? &wq : work, &lw, &info, 1);          \
        if (q) info = 0;                                                                      \
        if (!q) zero_other_triangle(a, lda, n, j->uplo, sizeof(T)); /* as PyTorch's LD */     \
        break;                                                                                \
      case EM_LAPACK_SYTRS:                                                                   \
        if (q) break;                                                                         \
        if (j->herm) P##hetrs_(&j->uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);        \
        else P##sytrs_(&j->uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);                \
        break;                                                                                \
case EM_LAPACK_POTRF:                                                                   \
        if (q) break;                                                                         \
        P##potrf_(&j->uplo, &n, a, &lda, &info, 1);                                           \
        zero_other_triangle(a, lda, n, j->uplo, sizeof(T));                                   \
        break;                                                                                \
      case EM_LAPACK_TRSM:                                                                    \
        if (!q && m > 0 && n > 0) {                                                           \
          T one = 1;                                                                          \
          CBLAS_TRSM(CblasColMajor, j->side == 'L' ? CblasLeft : CblasRight,                  \
                     j->uplo == 'U' ? CblasUpper : CblasLower,                                \
                     j->trans == 'T' ? CblasTrans : j->trans == 'C' ? CblasConjTrans          \
                                                                    : CblasNoTrans,           \
                     j->diag == 'U' ? CblasUnit : CblasNonUnit, m, n, &one, a, lda, b, ldb);  \
        }                                                                                     \
        break;                                                                                \
      case EM_LAPACK_GEQRF:                                                                   \
        P##geqrf_(&m, &n, a, &lda, (T *)j->w + i * j->sw, q ? &wq : work, &lw, &info);        \
        break;                                                                                \
      case EM_LAPACK_ORGQR:                                                                   \
        P##ungqr_(&m, &n, &k, a, &lda, (T *)j->w + i * j->sw, q ? &wq : work, &lw, &info);    \
        break;                                                                                \
      case EM_LAPACK_GESDD:                                                                   \
        P##gesdd_(&j->jobz, &m, &n, a, &lda, (R *)j->w + i * j->sw, b, &ldb, c, &ldc,         \
                  q ? &wq : work, &lw, q ? &rq : rwork, iwork, &info, 1);                     \
        if (q) {                                                                              \
          iq = 8 * imax(1, mn);                                                               \
          sz->lrwork = j->jobz == 'N' ? 7 * mn                                                \
                                      : mn * (5 * mn + 7 > 2 * mx + 2 * mn + 1                \
                                                  ? 5 * mn + 7 : 2 * mx + 2 * mn + 1);        \
        }                                                                                     \
        break;                                                                                \
      case EM_LAPACK_SYEVD:                                                                   \
        P##heevd_(&j->jobz, &j->uplo, &n, a, &lda, (R *)j->w + i * j->sw, q ? &wq : work, &lw, \
                  q ? &rq : rwork, &lrw, q ? &iq : iwork, &liw, &info, 1, 1);                 \
        if (q) sz->lrwork = (int64_t)rq + 1;                                                  \
        break;                                                                                \
      case EM_LAPACK_GEEV: {                                                                  \
        lp_int one = 1;                                                                       \
        P##geev_("N", &j->jobz, &n, a, &lda, (T *)j->w + i * j->sw, NULL, &one,               \
                 j->jobz == 'V' ? b : NULL, &lda, q ? &wq : work, &lw, q ? &rq : rwork, &info, \
                 1, 1);                                                                       \
        if (q) sz->lrwork = 2 * (int64_t)n;                                                   \
        break;                                                                                \
      }                                                                                       \
      case EM_LAPACK_GELS: {                                                                  \
        /* rwork: gelsy 2n, gelss 5 min(m, n), gelsd as its query says */                   \
        R rcond = (R)j->rcond, *s = j->w ? (R *)j->w + i * j->sw : NULL;                      \
        lp_int rank = 0;                                                                      \
        switch (j->driver) {                                                                  \
          case EM_LSTSQ_GELS:                                                                 \
            P##gels_("N", &m, &n, &nrhs, a, &lda, b, &ldb, q ? &wq : work, &lw, &info, 1);    \
            break;                                                                            \
          case EM_LSTSQ_GELSY:                                                                \
            if (!q) memset(iwork, 0, (size_t)imax(1, n) * sizeof *iwork);                     \
            P##gelsy_(&m, &n, &nrhs, a, &lda, b, &ldb, iwork, &rcond, &rank, q ? &wq : work,  \
                      &lw, rwork, &info);                                                     \
            if (q) {                                                                          \
              iq = imax(1, n);                                                                \
              sz->lrwork = 2 * (int64_t)n;                                                    \
            }                                                                                 \
            break;                                                                            \
          case EM_LSTSQ_GELSD:                                                                \
            P##gelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, &rank, q ? &wq : work, &lw, \
                      q ? &rq : rwork, q ? &iq : iwork, &info);                               \
            if (q) {                                                                          \
              iq = imax(1, iq);                                                               \
              sz->lrwork = (int64_t)rq + 1;                                                   \
            }                                                                                 \
            break;                                                                            \
          case EM_LSTSQ_GELSS:                                                                \
            P##gelss_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, &rank, q ? &wq : work, &lw, \
                      rwork, &info);                                                          \
            if (q) sz->lrwork = 5 * mn;                                                       \
            break;                                                                            \
        }                                                                                     \
        if (!q && j->rank && j->driver != EM_LSTSQ_GELS) j->rank[i] = rank;                  \
        break;                                                                                \
      }                                                                                       \
      default:                                                                                \
        info = -1;                                                                            \
        break;                                                                                \
    }                                                                                         \
    (void)ldc; (void)c; (void)k;                                                              \
    if (q) {                                                                                  \
      sz->lwork = imax(1, (lp_int)creal(wq) + 1);                                             \
      sz->liwork = imax(1, iq);                                                               \
      if (sz->lrwork < 1) sz->lrwork = 1;                                                     \
    }                                                                                         \
    return info;                                                                              \
  }

DEF_ONE_CX(c, float complex, float, cblas_ctrsm)
DEF_ONE_CX(z, double complex, double, cblas_ztrsm)

/* one element of any dtype */
static lp_int one_any(const em_lapack_job *j, int64_t i, void *work, lp_int *iwork, void *rwork,
                      lp_sizes *sz, int q) {
  switch (j->dt) {
    case EM_FLOAT32: return one_s(j, i, work, iwork, rwork, sz, q);
    case EM_FLOAT64: return one_d(j, i, work, iwork, rwork, sz, q);
    case EM_COMPLEX64: return one_c(j, i, work, iwork, rwork, sz, q);
    default: return one_z(j, i, work, iwork, rwork, sz, q);
  }
}

/* Runs elements [0, batch) of j with a workspace of its own; inside a
** parallel region each thread takes a share (the `omp for` binds to it),
** outside one this thread runs them all. */
static void batch_share(const em_lapack_job *j, const lp_sizes *sz, int *failed) {
  size_t esz = em_dtype_size(j->dt);
  size_t rsz = j->dt == EM_FLOAT32 || j->dt == EM_COMPLEX64 ? sizeof(float) : sizeof(double);
  /* 128 bytes of slack after each: OpenBLAS's vectorised kernels may read
  ** a little past the end of a vector (ops/linalg_lapack.c, padded_empty) */
  void *work = malloc((size_t)sz->lwork * esz + 128);
  lp_int *iwork = malloc((size_t)sz->liwork * sizeof(lp_int) + 128);
  void *rwork = malloc((size_t)sz->lrwork * rsz + 128);
  if (!work || !iwork || !rwork) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
    *failed = 1;
  }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
  for (int64_t i = 0; i < j->batch; i++) {
    if (!work || !iwork || !rwork) continue;
    lp_sizes s = *sz;
    lp_int info = one_any(j, i, work, iwork, rwork, &s, 0);
    if (j->info) j->info[i] = info;
  }
  free(work);
  free(iwork);
  free(rwork);
}

/* Runs elements [0, batch) of j, in a parallel region only when parallel:
** inside even an inactive one (`if (0)`) an OpenMP-built OpenBLAS's own
** regions are nested, and libgomp starts fresh threads for each nested
** team (gesdd of 512² took 3x its time creating threads).
** Returns 0, or -1 when a workspace could not be allocated. */
static int run_batch(const em_lapack_job *j, const lp_sizes *sz, int parallel) {
  int failed = 0;
  if (parallel) {
#ifdef _OPENMP
#pragma omp parallel
#endif
    batch_share(j, sz, &failed);
  } else {
    batch_share(j, sz, &failed);
  }
  return failed ? -1 : 0;
}

em_status em_cpu_lapack(const em_lapack_job *j) {
  if (j->batch == 0) return EM_OK;
  lp_sizes sz = {1, 1, 1};
  one_any(j, 0, NULL, NULL, NULL, &sz, 1);
  /* small matrices of a batch: one matrix per OpenMP thread, one BLAS
  ** thread each */
  int64_t dim = j->m > j->n ? j->m : j->n;
  int parallel = 0;
#ifdef _OPENMP
  parallel = j->batch > 1 && dim <= 128 && omp_get_max_threads() > 1 && !omp_in_parallel();
#endif
  /* The pthread build of OpenBLAS is told to run one thread per call
  ** meanwhile; the OpenMP build (openblas_get_parallel() == 2) does so by
  ** itself inside a parallel region, and its set_num_threads would set this
  ** thread's OpenMP team size to 1 before the region starts. */
  int blas_threads = 0, pin = parallel && openblas_get_parallel() != 2;
  if (pin) {
    blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
  }
  int r = run_batch(j, &sz, parallel);
  if (pin) openblas_set_num_threads(blas_threads);
  if (r != 0)
    return em_fail(EM_E_NOMEM, "out of memory: LAPACK workspace of %lld elements",
                   (long long)sz.lwork);
  return EM_OK;
}
