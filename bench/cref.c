/* bench/cref.c: the C reference contender -- hand-written loops compiled
** with -O3 and cblas_sgemm called directly; same protocol as worker.lua.
** Per-call workloads have no C counterpart and answer "skip". */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <time.h>

static float *A, *B, *Cc;
static int64_t *IDX, *JDX;
static unsigned char *MASK;
static float *LIST[64];
static int64_t N, ROWS, NIDX, LROWS;
static char cur[64];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static float *frand(int64_t n) {
  float *p = malloc(sizeof(float) * n);
  for (int64_t i = 0; i < n; i++) p[i] = (float)rand() / RAND_MAX;
  return p;
}
static void freeall(void) {
  free(A); free(B); free(Cc); free(IDX); free(JDX); free(MASK);
  A = B = Cc = NULL; IDX = JDX = NULL; MASK = NULL;
  for (int i = 0; i < 64; i++) { free(LIST[i]); LIST[i] = NULL; }
}
static volatile float sink;

static void add(const float *a, const float *b, float *c, int64_t n) {
  for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
static float sum(const float *a, int64_t n) {
  float acc[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; k++) acc[k] += a[i + k];
  float s = 0;
  for (int k = 0; k < 16; k++) s += acc[k];
  for (; i < n; i++) s += a[i];
  return s;
}
/* The reduction rows' loops: 16 float lanes, one pass (the bandwidth
** floor; red_var's sum of squares is not a stable variance). */
static float prod(const float *a, int64_t n) {
  float acc[16];
  for (int k = 0; k < 16; k++) acc[k] = 1;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; k++) acc[k] *= a[i + k];
  float s = 1;
  for (int k = 0; k < 16; k++) s *= acc[k];
  for (; i < n; i++) s *= a[i];
  return s;
}
#define DEF_EXTREME(NAME, BETTER)                                              \
  __attribute__((optimize("no-trapping-math"))) static float NAME(const float *a, int64_t n) { \
    float acc[16];                                                             \
    for (int k = 0; k < 16; k++) acc[k] = a[0];                                \
    int64_t i = 0;                                                             \
    for (; i + 16 <= n; i += 16)                                               \
      for (int k = 0; k < 16; k++) acc[k] = a[i + k] BETTER acc[k] ? a[i + k] : acc[k]; \
    float s = acc[0];                                                          \
    for (int k = 0; k < 16; k++) s = acc[k] BETTER s ? acc[k] : s;             \
    for (; i < n; i++) s = a[i] BETTER s ? a[i] : s;                           \
    return s;                                                                  \
  }
DEF_EXTREME(maxf, >)
DEF_EXTREME(minf, <)
static float sumsq(const float *a, int64_t n, float *sum_out) {
  float acc[16] = {0}, acc2[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; k++) { acc[k] += a[i + k]; acc2[k] += a[i + k] * a[i + k]; }
  float s = 0, s2 = 0;
  for (int k = 0; k < 16; k++) { s += acc[k]; s2 += acc2[k]; }
  for (; i < n; i++) { s += a[i]; s2 += a[i] * a[i]; }
  *sum_out = s;
  return s2;
}
/* c[j] = sum over i of a[i * n + j]: rows added into a row of sums */
static void colsum(const float *a, float *c, int64_t n) {
  for (int64_t j = 0; j < n; j++) c[j] = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) c[j] += a[i * n + j];
}
static void bcast(const float *a, const float *b, float *c, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) c[i * n + j] = a[i] + b[j];
}
static void transpose(const float *a, float *c, int64_t n) {
  const int64_t bs = 32;
  for (int64_t i0 = 0; i0 < n; i0 += bs)
    for (int64_t j0 = 0; j0 < n; j0 += bs)
      for (int64_t i = i0; i < i0 + bs && i < n; i++)
        for (int64_t j = j0; j < j0 + bs && j < n; j++) c[j * n + i] = a[i * n + j];
}

/* A blocked AVX2 transpose into a preallocated c (the C reference of
** out:copy_(t:t())): 8x8 blocks transposed in registers inside 32x32
** tiles, the rows of tiles split across OpenMP threads. n: a multiple of 8. */
#if defined(__AVX2__)
#include <immintrin.h>
static inline void tr8(const float *s, int64_t ss, float *d, int64_t ds) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(s + i * ss);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4) {
    u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps(d + i * ds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(d + (i + 4) * ds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}
#endif
static void transpose_avx2(const float *a, float *c, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i0 = 0; i0 < n; i0 += 32)
    for (int64_t j0 = 0; j0 < n; j0 += 32)
      for (int64_t i = i0; i < i0 + 32 && i < n; i += 8)
        for (int64_t j = j0; j < j0 + 32 && j < n; j += 8) {
#if defined(__AVX2__)
          tr8(a + i * n + j, n, c + j * n + i, n);
#else
          for (int64_t ii = i; ii < i + 8; ii++)
            for (int64_t jj = j; jj < j + 8; jj++) c[jj * n + ii] = a[ii * n + jj];
#endif
        }
}

/* the transcendental rows: libm per element into the preallocated Cc */
static float gelu_tanh_f(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}
static void vm_run(const char *name) {
  const float *a = A;
  float *c = Cc;
  if (!strcmp(name, "vm_exp")) for (int64_t i = 0; i < N; i++) c[i] = expf(a[i]);
  else if (!strcmp(name, "vm_log")) for (int64_t i = 0; i < N; i++) c[i] = logf(a[i]);
  else if (!strcmp(name, "vm_sin")) for (int64_t i = 0; i < N; i++) c[i] = sinf(a[i]);
  else if (!strcmp(name, "vm_tanh")) for (int64_t i = 0; i < N; i++) c[i] = tanhf(a[i]);
  else if (!strcmp(name, "vm_sigmoid"))
    for (int64_t i = 0; i < N; i++) c[i] = 1.0f / (1.0f + expf(-a[i]));
  else if (!strcmp(name, "vm_gelu"))
    for (int64_t i = 0; i < N; i++) c[i] = a[i] * 0.5f * (1.0f + erff(a[i] * (float)M_SQRT1_2));
  else if (!strcmp(name, "vm_gelu_tanh")) for (int64_t i = 0; i < N; i++) c[i] = gelu_tanh_f(a[i]);
  else if (!strcmp(name, "vm_erf")) for (int64_t i = 0; i < N; i++) c[i] = erff(a[i]);
  else if (!strcmp(name, "vm_pow")) for (int64_t i = 0; i < N; i++) c[i] = powf(a[i], 2.5f);
  else if (!strcmp(name, "vm_exp_f64")) {
    const double *ad = (const double *)A;
    double *cd = (double *)Cc;
    for (int64_t i = 0; i < N; i++) cd[i] = exp(ad[i]);
  }
}

/* -- The T.linalg rows (issue 19): the LAPACK routine called directly on a
** copy of the input (LAPACK overwrites it; any caller copies), float32. The
** row-major inputs are their column-major transposes: solve passes them as
** they lie (A^T x = b costs the same), cholesky and eigh read the other
** triangle, lstsq gets a transposed copy. */
typedef int lpi;
void sgesv_(const lpi *n, const lpi *nrhs, float *a, const lpi *lda, lpi *ipiv, float *b,
            const lpi *ldb, lpi *info);
void sgetrf_(const lpi *m, const lpi *n, float *a, const lpi *lda, lpi *ipiv, lpi *info);
void sgetri_(const lpi *n, float *a, const lpi *lda, const lpi *ipiv, float *work,
             const lpi *lwork, lpi *info);
void spotrf_(const char *uplo, const lpi *n, float *a, const lpi *lda, lpi *info, size_t);
void sgesdd_(const char *jobz, const lpi *m, const lpi *n, float *a, const lpi *lda, float *s,
             float *u, const lpi *ldu, float *vt, const lpi *ldvt, float *work, const lpi *lwork,
             lpi *iwork, lpi *info, size_t);
void ssyevd_(const char *jobz, const char *uplo, const lpi *n, float *a, const lpi *lda, float *w,
             float *work, const lpi *lwork, lpi *iwork, const lpi *liwork, lpi *info, size_t,
             size_t);
void sgelsy_(const lpi *m, const lpi *n, const lpi *nrhs, float *a, const lpi *lda, float *b,
             const lpi *ldb, lpi *jpvt, const float *rcond, lpi *rank, float *work,
             const lpi *lwork, lpi *info);
static int64_t LA_M, LA_N, LA_B;

static int la_setup(const char *name, int k) {
  if (strncmp(name, "la_", 3)) return 0;
  LA_B = 1;
  if (!strcmp(name, "la_solve_1024") || !strcmp(name, "la_inv_1024")) LA_M = LA_N = 1024 / k;
  else if (!strcmp(name, "la_cholesky_2048")) LA_M = LA_N = 2048 / k;
  else if (!strcmp(name, "la_svd_512") || !strcmp(name, "la_eigh_512")) LA_M = LA_N = 512 / k;
  else if (!strcmp(name, "la_lstsq_4096x256")) { LA_M = 4096 / k; LA_N = 256 / k; }
  else if (!strcmp(name, "la_solve_batch16")) { LA_M = LA_N = 16; LA_B = 1024 / k; }
  else return 0;
  int64_t m = LA_M, n = LA_N;
  A = frand(LA_B * m * n);
  B = frand(LA_B * m);
  /* the matrices the peers factor (worker.lua, worker_py.py): solve, inv and
  ** cholesky take rand + n I (cholesky symmetrised: positive definite, and
  ** its cost does not depend on the values); svd takes rand as it is and
  ** eigh rand + rand^T. The spectrum sets how much work gesdd's and syevd's
  ** divide and conquer deflates away: svd and eigh of rand + n I (whose
  ** values cluster near n) are not the peers' problem. */
  int boost = strcmp(name, "la_svd_512") && strcmp(name, "la_eigh_512");
  for (int64_t b = 0; b < LA_B && boost; b++)
    for (int64_t i = 0; i < m && m == n; i++) A[b * n * n + i * n + i] += (float)n;
  if (!strcmp(name, "la_cholesky_2048"))
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < i; j++) A[j * n + i] = A[i * n + j];
  if (!strcmp(name, "la_eigh_512"))
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) A[i * n + j] = A[j * n + i] = A[i * n + j] + A[j * n + i];
  return 1;
}

static void la_run(const char *name) {
  lpi m = (lpi)LA_M, n = (lpi)LA_N, one = 1, info = 0, lw = -1;
  float *a = malloc(4 * LA_B * LA_M * LA_N), *b = malloc(4 * LA_B * LA_M), wq = 0;
  lpi *ipiv = malloc(sizeof(lpi) * 8 * (LA_M > LA_N ? LA_M : LA_N) * LA_B);
  if (!strcmp(name, "la_lstsq_4096x256")) { /* column-major copy */
    for (int64_t i = 0; i < LA_M; i++)
      for (int64_t j = 0; j < LA_N; j++) a[j * LA_M + i] = A[i * LA_N + j];
  } else {
    memcpy(a, A, 4 * LA_B * LA_M * LA_N);
  }
  memcpy(b, B, 4 * LA_B * LA_M);
  if (!strcmp(name, "la_solve_1024") || !strcmp(name, "la_solve_batch16")) {
    for (int64_t i = 0; i < LA_B; i++) sgesv_(&n, &one, a + i * n * n, &n, ipiv + i * n, b + i * n, &n, &info);
  } else if (!strcmp(name, "la_inv_1024")) {
    sgetrf_(&n, &n, a, &n, ipiv, &info);
    sgetri_(&n, a, &n, ipiv, &wq, &lw, &info);
    lw = (lpi)wq;
    float *w = malloc(4 * (size_t)lw);
    sgetri_(&n, a, &n, ipiv, w, &lw, &info);
    free(w);
  } else if (!strcmp(name, "la_cholesky_2048")) {
    spotrf_("U", &n, a, &n, &info, 1);
  } else if (!strcmp(name, "la_svd_512")) {
    float *s = malloc(4 * n), *u = malloc(4 * (size_t)n * n), *vt = malloc(4 * (size_t)n * n);
    sgesdd_("S", &n, &n, a, &n, s, u, &n, vt, &n, &wq, &lw, ipiv, &info, 1);
    lw = (lpi)wq;
    float *w = malloc(4 * (size_t)lw);
    sgesdd_("S", &n, &n, a, &n, s, u, &n, vt, &n, w, &lw, ipiv, &info, 1);
    free(w); free(s); free(u); free(vt);
  } else if (!strcmp(name, "la_eigh_512")) {
    float *ev = malloc(4 * n);
    lpi iq = 0, liw = -1;
    ssyevd_("V", "U", &n, a, &n, ev, &wq, &lw, &iq, &liw, &info, 1, 1);
    lw = (lpi)wq; liw = iq;
    float *w = malloc(4 * (size_t)lw);
    lpi *iw = malloc(sizeof(lpi) * (size_t)liw);
    ssyevd_("V", "U", &n, a, &n, ev, w, &lw, iw, &liw, &info, 1, 1);
    free(w); free(iw); free(ev);
  } else if (!strcmp(name, "la_lstsq_4096x256")) {
    float rcond = 1.1920929e-07f * (float)m;
    lpi rank = 0;
    memset(ipiv, 0, sizeof(lpi) * n);
    sgelsy_(&m, &n, &one, a, &m, b, &m, ipiv, &rcond, &rank, &wq, &lw, &info);
    lw = (lpi)wq;
    float *w = malloc(4 * (size_t)lw);
    sgelsy_(&m, &n, &one, a, &m, b, &m, ipiv, &rcond, &rank, w, &lw, &info);
    free(w);
  }
  sink = a[1] + b[0];
  free(a); free(b); free(ipiv);
}

/* -- The T.fft rows: the vendored pocketfft called directly (the plan made
** once at setup), in the precision ember computes: float64 in the double
** build, float32 and complex64 in the float build (engine/src/cpu/
** pocketfft_f32.c, compiled into this program at -march=native, as ember
** runs its AVX2 twin on this kind of CPU). rfft: the values into the output
** and transformed there, then unpacked; fft2: each row in place, then the
** columns 16 at a time through a buffer. */
#include "pocketfft/pocketfft.h"
void *em_pf_f32_make_c(size_t);
void em_pf_f32_destroy_c(void *);
int em_pf_f32_fwd_c(void *, float *, float);
void *em_pf_f32_make_r(size_t);
void em_pf_f32_destroy_r(void *);
int em_pf_f32_fwd_r(void *, float *, float);
static rfft_plan FFT_R;
static void *FFT_FR, *FFT_FC;
static int64_t FFT_N;
static float *FFT_COL;
static void fft_free(void) {
  if (FFT_R) destroy_rfft_plan(FFT_R);
  if (FFT_FR) em_pf_f32_destroy_r(FFT_FR);
  if (FFT_FC) em_pf_f32_destroy_c(FFT_FC);
  free(FFT_COL);
  FFT_R = NULL; FFT_FR = FFT_FC = NULL; FFT_COL = NULL;
}
static int fft_setup(const char *name, int k) {
  if (strncmp(name, "fft_", 4)) return 0;
  fft_free();
  if (!strcmp(name, "fft_rfft_1m_f64")) {
    FFT_N = 1048576 / k;
    FFT_R = make_rfft_plan((size_t)FFT_N);
    A = frand(2 * FFT_N); /* FFT_N doubles */
    double *d = (double *)A;
    for (int64_t i = FFT_N - 1; i >= 0; i--) d[i] = A[i];
  } else if (!strcmp(name, "fft_rfft_1m") || !strcmp(name, "fft_rfft_1m_out")) {
    FFT_N = 1048576 / k;
    FFT_FR = em_pf_f32_make_r((size_t)FFT_N);
    A = frand(FFT_N);
  } else if (!strcmp(name, "fft_fft2_1024")) {
    FFT_N = 1024 / k;
    FFT_FC = em_pf_f32_make_c((size_t)FFT_N);
    FFT_COL = malloc(sizeof(float) * 2 * 16 * FFT_N);
    A = frand(2 * FFT_N * FFT_N);
  } else return 0;
  return 1;
}
static void fft_run(const char *name) {
  int64_t n = FFT_N, nh = n / 2 + 1;
  (void)name;
  if (FFT_R) { /* float64 */
    double *o = malloc(16 * nh);
    memcpy(o + 1, A, 8 * n);
    if (rfft_forward(FFT_R, o + 1, 1.0) != 0) abort();
    o[0] = o[1]; o[1] = 0; if (n % 2 == 0) o[n + 1] = 0;
    sink = (float)o[1];
    free(o);
    return;
  }
  if (FFT_FR) { /* float32 */
    float *o = malloc(8 * nh);
    memcpy(o + 1, A, 4 * n);
    if (em_pf_f32_fwd_r(FFT_FR, o + 1, 1.0f) != 0) abort();
    o[0] = o[1]; o[1] = 0; if (n % 2 == 0) o[n + 1] = 0;
    sink = o[1];
    free(o);
    return;
  }
  float *v = malloc(8 * n * n), *col = FFT_COL;
  memcpy(v, A, 8 * n * n);
  for (int64_t r = 0; r < n; r++) if (em_pf_f32_fwd_c(FFT_FC, v + 2 * r * n, 1.0f) != 0) abort();
  for (int64_t c0 = 0; c0 < n; c0 += 16) {
    int64_t nb = n - c0 < 16 ? n - c0 : 16;
    for (int64_t r = 0; r < n; r++)
      for (int64_t l = 0; l < nb; l++) {
        col[2 * (l * n + r)] = v[2 * (r * n + c0 + l)];
        col[2 * (l * n + r) + 1] = v[2 * (r * n + c0 + l) + 1];
      }
    for (int64_t l = 0; l < nb; l++) if (em_pf_f32_fwd_c(FFT_FC, col + 2 * l * n, 1.0f) != 0) abort();
    for (int64_t r = 0; r < n; r++)
      for (int64_t l = 0; l < nb; l++) {
        v[2 * (r * n + c0 + l)] = col[2 * (l * n + r)];
        v[2 * (r * n + c0 + l) + 1] = col[2 * (l * n + r) + 1];
      }
  }
  sink = v[1];
  free(v);
}

static const char *setup(const char *name, int k) {
  freeall();
  const int64_t M = 16 * 1024 * 1024;
  snprintf(cur, sizeof cur, "%s", name);
  if (!strncmp(name, "percall_", 8)) return "skip no C counterpart";
  fft_free();
  if (la_setup(name, k)) return "ok";
  if (fft_setup(name, k)) return "ok";
  if (!strcmp(name, "stream_add_out") || !strcmp(name, "stream_add_alloc")) {
    N = M / k; A = frand(N); B = frand(N); Cc = malloc(4 * N);
  } else if (!strcmp(name, "stream_exp") || !strcmp(name, "stream_sum")) {
    N = M / k; A = frand(N); Cc = malloc(4 * N);
  } else if (!strncmp(name, "red_sum_", 8)) {
    N = 4096 / k; A = frand(N * N); Cc = malloc(4 * N);
  } else if (!strncmp(name, "red_", 4)) {
    N = M / k; A = frand(N);
    if (!strcmp(name, "red_prod"))
      for (int64_t i = 0; i < N; i++) A[i] = A[i] / 1024 + (1 - 1.0f / 2048);
  } else if (!strncmp(name, "stream_bcast", 12) || !strncmp(name, "layout_", 7)) {
    N = 4096 / k;
    A = frand(!strncmp(name, "layout_", 7) ? N * N : N); B = frand(N); Cc = malloc(4 * N * N);
  } else if (!strcmp(name, "sel_index_select")) {
    ROWS = 4 * 1024 * 1024 / k; NIDX = 1024 * 1024 / k;
    A = frand(ROWS * 16); IDX = malloc(8 * NIDX);
    for (int64_t i = 0; i < NIDX; i++) IDX[i] = rand() % ROWS;
  } else if (!strcmp(name, "sel_masked_select") || !strncmp(name, "idx_mask_", 9)) {
    N = M / k; A = frand(N); MASK = malloc(N);
    for (int64_t i = 0; i < N; i++) MASK[i] = rand() & 1;
  } else if (!strncmp(name, "idx_rows_", 9) || !strcmp(name, "idx_gather2d")) {
    ROWS = 4 * 1024 * 1024 / k; NIDX = 1024 * 1024 / k;
    A = frand(ROWS * 16); B = frand(NIDX * 16); IDX = malloc(8 * NIDX); JDX = malloc(8 * NIDX);
    for (int64_t i = 0; i < NIDX; i++) { IDX[i] = rand() % ROWS; JDX[i] = rand() % 16; }
  } else if (!strncmp(name, "asm_", 4)) {
    LROWS = 16384 / k;
    for (int i = 0; i < 64; i++) LIST[i] = frand(LROWS * 16);
  } else if (!strncmp(name, "mm_", 3)) {
    N = atoi(name + 3); if (N > 256) N /= k;
    A = frand(N * N); B = frand(N * N); Cc = malloc(4 * N * N);
  } else if (!strcmp(name, "bmm_64x128")) {
    A = frand(64 * 128 * 128); B = frand(64 * 128 * 128); Cc = malloc(4 * 64 * 128 * 128);
  } else if (!strncmp(name, "vm_", 3)) { /* the transcendental rows: a libm loop */
    N = M / k; A = frand(N); Cc = malloc(8 * N);
    int sym = strstr("vm_tanh vm_sigmoid vm_gelu vm_gelu_tanh vm_erf", name) != NULL;
    if (sym) for (int64_t i = 0; i < N; i++) A[i] = A[i] * 8 - 4;
    if (!strcmp(name, "vm_exp_f64")) {
      double *d = malloc(8 * N);
      for (int64_t i = 0; i < N; i++) d[i] = A[i];
      free(A); A = (float *)d;
    }
  } else return "skip unknown workload";
  return "ok";
}

static void run(const char *name) {
  if (!strncmp(name, "la_", 3)) la_run(name);
  else if (!strncmp(name, "fft_", 4)) fft_run(name);
  else if (!strcmp(name, "stream_add_out")) add(A, B, Cc, N);
  else if (!strcmp(name, "stream_add_alloc")) {
    float *c = malloc(4 * N); add(A, B, c, N); sink = c[N - 1]; free(c);
  } else if (!strcmp(name, "stream_exp")) for (int64_t i = 0; i < N; i++) Cc[i] = expf(A[i]);
  else if (!strcmp(name, "stream_sum") || !strcmp(name, "red_sum")) sink = sum(A, N);
  else if (!strcmp(name, "red_mean")) sink = sum(A, N) / N;
  else if (!strcmp(name, "red_prod")) sink = prod(A, N);
  else if (!strcmp(name, "red_amax")) sink = maxf(A, N);
  else if (!strcmp(name, "red_amin")) sink = minf(A, N);
  else if (!strcmp(name, "red_norm")) { float s; sink = sqrtf(sumsq(A, N, &s)); }
  else if (!strcmp(name, "red_var") || !strcmp(name, "red_std")) {
    float s, s2 = sumsq(A, N, &s), v = (s2 - s * s / N) / (N - 1);
    sink = name[5] == 's' ? sqrtf(v) : v;
  } else if (!strncmp(name, "red_sum_", 8)) { colsum(A, Cc, N); sink = Cc[1]; }
  else if (!strncmp(name, "vm_", 3)) vm_run(name);
  else if (!strcmp(name, "stream_bcast_out")) bcast(A, B, Cc, N);
  else if (!strcmp(name, "stream_bcast_alloc")) {
    float *c = malloc(4 * N * N); bcast(A, B, c, N); sink = c[N * N - 1]; free(c);
  } else if (!strcmp(name, "layout_transpose")) {
    float *c = malloc(4 * N * N); transpose(A, c, N); sink = c[1]; free(c);
  } else if (!strcmp(name, "layout_transpose_out")) {
    transpose_avx2(A, Cc, N); sink = Cc[1];
  } else if (!strcmp(name, "layout_clone_slice")) {
    int64_t h = (N + 1) / 2; float *c = malloc(4 * N * h);
    for (int64_t i = 0; i < N; i++) for (int64_t j = 0; j < h; j++) c[i * h + j] = A[i * N + 2 * j];
    sink = c[1]; free(c);
  } else if (!strcmp(name, "idx_mask_write") || !strcmp(name, "idx_mask_fill")) {
    /* a bit blend: written as a select, GCC turns it back into a branch */
    uint32_t *a = (uint32_t *)A;
    for (int64_t i = 0; i < N; i++) {
      uint32_t k = 0u - (uint32_t)(MASK[i] != 0);
      a[i] = (a[i] & ~k) | (0u & k);
    }
    sink = A[1];
  } else if (!strcmp(name, "idx_rows_write") || !strcmp(name, "idx_rows_put")) {
    for (int64_t i = 0; i < NIDX; i++) memcpy(A + 16 * IDX[i], B + 16 * i, 64);
    sink = A[1];
  } else if (!strcmp(name, "idx_gather2d")) {
    float *c = malloc(4 * NIDX);
    for (int64_t i = 0; i < NIDX; i++) c[i] = A[16 * IDX[i] + JDX[i]];
    sink = c[1]; free(c);
  } else if (!strcmp(name, "sel_index_select") || !strcmp(name, "idx_rows_read")) {
    float *c = malloc(4 * 16 * NIDX);
    for (int64_t i = 0; i < NIDX; i++) memcpy(c + 16 * i, A + 16 * IDX[i], 64);
    sink = c[1]; free(c);
  } else if (!strcmp(name, "sel_masked_select") || !strcmp(name, "idx_mask_read")) {
    float *c = malloc(4 * N); int64_t k = 0;
    for (int64_t i = 0; i < N; i++) { c[k] = A[i]; k += MASK[i]; }
    sink = c[0]; free(c);
  } else if (!strcmp(name, "asm_cat") || !strcmp(name, "asm_stack")) {
    float *c = malloc(4 * 64 * 16 * LROWS);
    for (int i = 0; i < 64; i++) memcpy(c + (int64_t)i * 16 * LROWS, LIST[i], 4 * 16 * LROWS);
    sink = c[1]; free(c);
  } else if (!strncmp(name, "mm_", 3)) {
    float *c = malloc(4 * N * N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)N, (int)N, 1.0f, A,
                (int)N, B, (int)N, 0.0f, c, (int)N);
    sink = c[1]; free(c);
  } else if (!strcmp(name, "bmm_64x128")) {
    float *c = malloc(4 * 64 * 128 * 128);
    for (int b = 0; b < 64; b++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 128, 128, 128, 1.0f,
                  A + b * 16384, 128, B + b * 16384, 128, 0.0f, c + b * 16384, 128);
    sink = c[1]; free(c);
  }
}

int main(void) {
  char line[256], cmd[32], a1[64];
  int a2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (fgets(line, sizeof line, stdin)) {
    a1[0] = 0; a2 = 1;
    if (sscanf(line, "%31s %63s %d", cmd, a1, &a2) < 1) continue;
    if (!strcmp(cmd, "quit")) break;
    if (!strcmp(cmd, "threads")) {
      openblas_set_num_threads(atoi(a1));
#ifdef _OPENMP
      omp_set_num_threads(atoi(a1));
#endif
      puts("ok");
    }
    else if (!strcmp(cmd, "setup")) puts(setup(a1, a2));
    else if (!strcmp(cmd, "time")) {
      double t0 = now();
      for (int i = 0; i < a2; i++) run(a1);
      printf("t %.9f\n", now() - t0);
    }
  }
  freeall();
  fft_free();
  return 0;
}
