/*
** cuda/solver.c -- the LAPACK entry of the linalg family on the GPU
** (core/kern_linalg.h's lapack; docs/cuda.md "Linear algebra"): T.linalg's
** decompositions and solvers on cuSOLVER, the triangular solve on cuBLAS.
**
** - libcusolver is opened with dlopen on the first call, as cuBLAS, cuFFT
**   and cuDNN are (cuda/blas.c): a script that never decomposes on the GPU
**   never loads it. Handles (and their cusolverDnParams) per thread and
**   device, bound to the current stream before each job.
** - The 64-bit generic API (cusolverDnX*: one entry for the four dtypes)
**   where it has the routine: getrf, getrs, potrf, geqrf, syevd (heevd for
**   complex); the typed ones elsewhere: orgqr/ungqr, gesvdj (any m, n;
**   cusolverDn*gesvd takes m >= n only). cuBLAS's trsm for TRSM.
** - GELS, GEEV, SYTRF and SYTRS are not here (emcu_lapack_runs): lstsq,
**   eig and ldl_factor/ldl_solve run host-staged on cuda, as PyTorch runs
**   linalg.eig of a cuda tensor on the CPU.
** - Every buffer of the job is device memory: LAPACK's info goes straight
**   into the op's info tensor (the op copies it back to check it). Nothing
**   here waits for the device: a singular LU is still solved (GESV's b and
**   GETRI's a hold inf/NaN there; PyTorch's cuda path does the same).
** - Pivots: cuSOLVER's X routines take int64 pivots; they are converted
**   to and from the ops' int32 ones (both 1-based, as LAPACK's).
** - Workspaces come from the caching allocator (stream-ordered: freed as
**   soon as the routines are enqueued, reused only after them).
** - Matrices of a batch are one routine call each (no batched cuSOLVER
**   entries yet: a batch of many small matrices pays a launch per matrix).
**
** COMPILED ONLY: no GPU has run this file.
*/
#include "core/kern_linalg.h"
#include "core/errmsg.h"

#ifdef EMBER_HAVE_CUDA

#include "cuda/cuda.h"
#include "cuda/cu_iface.h"

#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one function pointer per symbol, of the header's own type */
#define SYM(name) __typeof__(&name) name
static struct {
  int ok;
  char why[256];
  SYM(cusolverDnCreate);
  SYM(cusolverDnSetStream);
  SYM(cusolverDnCreateParams);
  SYM(cusolverDnXgetrf_bufferSize);
  SYM(cusolverDnXgetrf);
  SYM(cusolverDnXgetrs);
  SYM(cusolverDnXpotrf_bufferSize);
  SYM(cusolverDnXpotrf);
  SYM(cusolverDnXgeqrf_bufferSize);
  SYM(cusolverDnXgeqrf);
  SYM(cusolverDnXsyevd_bufferSize);
  SYM(cusolverDnXsyevd);
  SYM(cusolverDnSorgqr_bufferSize);
  SYM(cusolverDnDorgqr_bufferSize);
  SYM(cusolverDnCungqr_bufferSize);
  SYM(cusolverDnZungqr_bufferSize);
  SYM(cusolverDnSorgqr);
  SYM(cusolverDnDorgqr);
  SYM(cusolverDnCungqr);
  SYM(cusolverDnZungqr);
  SYM(cusolverDnCreateGesvdjInfo);
  SYM(cusolverDnDestroyGesvdjInfo);
  SYM(cusolverDnSgesvdj_bufferSize);
  SYM(cusolverDnDgesvdj_bufferSize);
  SYM(cusolverDnCgesvdj_bufferSize);
  SYM(cusolverDnZgesvdj_bufferSize);
  SYM(cusolverDnSgesvdj);
  SYM(cusolverDnDgesvdj);
  SYM(cusolverDnCgesvdj);
  SYM(cusolverDnZgesvdj);
  SYM(cusolverDnSpotrfBatched);
  SYM(cusolverDnDpotrfBatched);
  SYM(cusolverDnCpotrfBatched);
  SYM(cusolverDnZpotrfBatched);
  SYM(cublasStrsm_v2);
  SYM(cublasDtrsm_v2);
  SYM(cublasCtrsm_v2);
  SYM(cublasZtrsm_v2);
  SYM(cublasSgetrfBatched);
  SYM(cublasDgetrfBatched);
  SYM(cublasCgetrfBatched);
  SYM(cublasZgetrfBatched);
  SYM(cublasSgetrsBatched);
  SYM(cublasDgetrsBatched);
  SYM(cublasCgetrsBatched);
  SYM(cublasZgetrsBatched);
  SYM(cublasStrsmBatched);
  SYM(cublasDtrsmBatched);
  SYM(cublasCtrsmBatched);
  SYM(cublasZtrsmBatched);
} lib;
#undef SYM
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

/* lib.name = p; a NULL p ends lib_open with lib.why naming the symbol */
#define TAKE(p, libname, name)                                                   \
  do {                                                                           \
    void *p_ = (p);                                                              \
    if (!p_) {                                                                   \
      snprintf(lib.why, sizeof lib.why, "%s lacks %s (or cannot be loaded)", libname, #name); \
      return;                                                                    \
    }                                                                            \
    memcpy(&lib.name, &p_, sizeof p_);                                           \
  } while (0)
#define LOAD(h, name) TAKE(dlsym(h, #name), "libcusolver", name)
#define LOAD_BLAS(name) TAKE(emcu_cublas_sym(#name), "libcublas", name)

static void lib_open(void) {
  static const char *names[] = {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so", NULL};
  void *h = emcu_dlopen_first(names, "libcusolver", lib.why, sizeof lib.why);
  if (!h) return;
  LOAD(h, cusolverDnCreate);
  LOAD(h, cusolverDnSetStream);
  LOAD(h, cusolverDnCreateParams);
  LOAD(h, cusolverDnXgetrf_bufferSize);
  LOAD(h, cusolverDnXgetrf);
  LOAD(h, cusolverDnXgetrs);
  LOAD(h, cusolverDnXpotrf_bufferSize);
  LOAD(h, cusolverDnXpotrf);
  LOAD(h, cusolverDnXgeqrf_bufferSize);
  LOAD(h, cusolverDnXgeqrf);
  LOAD(h, cusolverDnXsyevd_bufferSize);
  LOAD(h, cusolverDnXsyevd);
  LOAD(h, cusolverDnSorgqr_bufferSize);
  LOAD(h, cusolverDnDorgqr_bufferSize);
  LOAD(h, cusolverDnCungqr_bufferSize);
  LOAD(h, cusolverDnZungqr_bufferSize);
  LOAD(h, cusolverDnSorgqr);
  LOAD(h, cusolverDnDorgqr);
  LOAD(h, cusolverDnCungqr);
  LOAD(h, cusolverDnZungqr);
  LOAD(h, cusolverDnCreateGesvdjInfo);
  LOAD(h, cusolverDnDestroyGesvdjInfo);
  LOAD(h, cusolverDnSgesvdj_bufferSize);
  LOAD(h, cusolverDnDgesvdj_bufferSize);
  LOAD(h, cusolverDnCgesvdj_bufferSize);
  LOAD(h, cusolverDnZgesvdj_bufferSize);
  LOAD(h, cusolverDnSgesvdj);
  LOAD(h, cusolverDnDgesvdj);
  LOAD(h, cusolverDnCgesvdj);
  LOAD(h, cusolverDnZgesvdj);
  LOAD(h, cusolverDnSpotrfBatched);
  LOAD(h, cusolverDnDpotrfBatched);
  LOAD(h, cusolverDnCpotrfBatched);
  LOAD(h, cusolverDnZpotrfBatched);
  LOAD_BLAS(cublasStrsm_v2);
  LOAD_BLAS(cublasDtrsm_v2);
  LOAD_BLAS(cublasCtrsm_v2);
  LOAD_BLAS(cublasZtrsm_v2);
  LOAD_BLAS(cublasSgetrfBatched);
  LOAD_BLAS(cublasDgetrfBatched);
  LOAD_BLAS(cublasCgetrfBatched);
  LOAD_BLAS(cublasZgetrfBatched);
  LOAD_BLAS(cublasSgetrsBatched);
  LOAD_BLAS(cublasDgetrsBatched);
  LOAD_BLAS(cublasCgetrsBatched);
  LOAD_BLAS(cublasZgetrsBatched);
  LOAD_BLAS(cublasStrsmBatched);
  LOAD_BLAS(cublasDtrsmBatched);
  LOAD_BLAS(cublasCtrsmBatched);
  LOAD_BLAS(cublasZtrsmBatched);
  lib.ok = 1;
}
#undef LOAD_BLAS
#undef LOAD
#undef TAKE

#define MAX_HANDLES 64
static _Thread_local struct {
  cusolverDnHandle_t h;
  cusolverDnParams_t params;
} handles[MAX_HANDLES];

static const char *op_name(em_lapack_op op) {
  static const char *const names[] = {"getrf", "getrs", "gesv", "getri", "potrf", "trsm",
                                      "geqrf", "orgqr", "gesvd", "syevd", "gels", "geev", "sytrf",
                                      "sytrs"};
  return (unsigned)op < sizeof names / sizeof *names ? names[op] : "lapack";
}

static em_status solver_fail(const char *what, int status) {
  return em_fail(EM_E_RUNTIME, "linalg: cuSOLVER %s failed (status %d)", what, status);
}

/* The handle of this thread and device, on the current stream. */
static em_status solver_for(int dev, cusolverDnHandle_t *h, cusolverDnParams_t *params) {
  if (dev < 0 || dev >= MAX_HANDLES)
    return em_fail(EM_E_RUNTIME, "linalg: device %d is beyond the %d cuSOLVER handles kept", dev,
                   MAX_HANDLES);
  cusolverStatus_t s;
  if (!handles[dev].h && (s = lib.cusolverDnCreate(&handles[dev].h)) != CUSOLVER_STATUS_SUCCESS) {
    handles[dev].h = NULL;
    return solver_fail("cusolverDnCreate", (int)s);
  }
  if (!handles[dev].params &&
      (s = lib.cusolverDnCreateParams(&handles[dev].params)) != CUSOLVER_STATUS_SUCCESS) {
    handles[dev].params = NULL;
    return solver_fail("cusolverDnCreateParams", (int)s);
  }
  s = lib.cusolverDnSetStream(handles[dev].h, (cudaStream_t)emcu_stream(dev));
  if (s != CUSOLVER_STATUS_SUCCESS) return solver_fail("cusolverDnSetStream", (int)s);
  *h = handles[dev].h;
  *params = handles[dev].params;
  return EM_OK;
}

/* -- Scratch: device blocks from the caching allocator, one host block ---- */

typedef struct scratch {
  em_device d;
  void *p[6];
  size_t n[6];
  int used;
  void *host;
} scratch;

static em_status dev_block(scratch *s, size_t bytes, void **out) {
  if (s->used == 6) return em_fail(EM_E_RUNTIME, "linalg: too many scratch blocks"); /* not reached */
  if (bytes == 0) bytes = 16;
  em_status st = emcu_alloc(s->d, bytes, &s->p[s->used]);
  if (st != EM_OK) return st;
  s->n[s->used] = bytes;
  *out = s->p[s->used++];
  return EM_OK;
}

static em_status host_block(scratch *s, size_t bytes) {
  if (bytes == 0) return EM_OK;
  s->host = malloc(bytes);
  return s->host ? EM_OK : em_fail(EM_E_NOMEM, "linalg: cannot allocate %zu bytes of host "
                                                "workspace", bytes);
}

/* stream-ordered: the routines enqueued before this still get the blocks */
static void scratch_free(scratch *s) {
  for (int i = 0; i < s->used; i++) emcu_free(s->d, s->p[i], s->n[i]);
  free(s->host);
}

/* -- The routines ------------------------------------------------------------ */

static cudaDataType data_type(em_dtype dt) {
  switch (dt) {
    case EM_FLOAT32: return CUDA_R_32F;
    case EM_FLOAT64: return CUDA_R_64F;
    case EM_COMPLEX64: return CUDA_C_32F;
    default: return CUDA_C_64F;
  }
}

static cudaDataType value_type(em_dtype dt) {
  return dt == EM_FLOAT32 || dt == EM_COMPLEX64 ? CUDA_R_32F : CUDA_R_64F;
}
/* bytes of that value type (the singular values and eigenvalues) */
static size_t value_bytes(em_dtype dt) { return value_type(dt) == CUDA_R_32F ? 4 : 8; }

static cublasFillMode_t fill(char uplo) {
  return uplo == 'U' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
}

static cublasOperation_t trans_op(char t) {
  return t == 'T' ? CUBLAS_OP_T : t == 'C' ? CUBLAS_OP_C : CUBLAS_OP_N;
}

typedef struct ctx {
  const em_lapack_job *j;
  cusolverDnHandle_t h;
  cusolverDnParams_t prm;
  cudaDataType cdt;
  size_t es; /* bytes per element of dt */
  void *stream;
  scratch s;
} ctx;

/* element i's matrix of buffer p (stride st elements of es bytes) */
static void *at(void *p, int64_t i, int64_t st, size_t es) {
  return p ? (char *)p + (size_t)(i * st) * es : NULL;
}

#define CALL(what, expr)                                     \
  do {                                                       \
    cusolverStatus_t s_ = (expr);                            \
    if (s_ != CUSOLVER_STATUS_SUCCESS) return solver_fail(what, (int)s_); \
  } while (0)

#define LAUNCHED(what, expr)                                 \
  do {                                                       \
    int e_ = (expr);                                         \
    if (e_) return emcu_fail("linalg", what, e_);            \
  } while (0)

#define CALLB(what, expr)                                    \
  do {                                                       \
    cublasStatus_t s_ = (expr);                              \
    if (s_ != CUBLAS_STATUS_SUCCESS)                         \
      return em_fail(EM_E_RUNTIME, "linalg: cuBLAS %s failed (status %d)", what, (int)s_); \
  } while (0)

/* The typed entry PRE{S,D,C,Z}FN of dt. Pointer arguments go as void *
** (which converts to each entry's own pointer types). */
#define TYPED(dt, PRE, FN, ...)                                  \
  ((dt) == EM_FLOAT32     ? lib.PRE##S##FN(__VA_ARGS__)          \
   : (dt) == EM_FLOAT64   ? lib.PRE##D##FN(__VA_ARGS__)          \
   : (dt) == EM_COMPLEX64 ? lib.PRE##C##FN(__VA_ARGS__)          \
                          : lib.PRE##Z##FN(__VA_ARGS__))

/* 1 of dt, for the alpha of trsm (read through the member dt names) */
typedef union one_of {
  float f;
  double d;
  cuComplex c;
  cuDoubleComplex z;
} one_of;

static one_of one_for(em_dtype dt) {
  one_of o;
  memset(&o, 0, sizeof o);
  switch (dt) {
    case EM_FLOAT32: o.f = 1; break;
    case EM_FLOAT64: o.d = 1; break;
    case EM_COMPLEX64: o.c.x = 1; break;
    default: o.z.x = 1; break;
  }
  return o;
}

/* A batch of small matrices (order <= SMALL_N) goes to the batched
** entries of cuBLAS/cuSOLVER: one launch for the whole batch where the
** loop would launch per matrix (PyTorch does the same for small LU). */
enum { SMALL_N = 32 };
static int small_batch(const em_lapack_job *j, int order) {
  return j->batch >= 2 && j->batch <= INT_MAX && order <= SMALL_N;
}

/* a device array of the batch's matrix addresses (base + i * stride) */
static em_status ptr_array(ctx *c, void *base, int64_t stride, void **out) {
  size_t bytes = (size_t)c->j->batch * sizeof(void *);
  void **host = malloc(bytes);
  if (!host) return em_fail(EM_E_NOMEM, "linalg: cannot allocate %zu bytes of host memory", bytes);
  for (int64_t i = 0; i < c->j->batch; i++) host[i] = at(base, i, stride, c->es);
  em_status st = dev_block(&c->s, bytes, out);
  /* from pageable memory: staged before the call returns, so host may go */
  cudaError_t e = st == EM_OK ? cudaMemcpyAsync(*out, host, bytes, cudaMemcpyHostToDevice,
                                                (cudaStream_t)c->stream)
                              : cudaSuccess;
  free(host);
  if (st == EM_OK && e != cudaSuccess) return emcu_fail("linalg", "cudaMemcpyAsync", e);
  return st;
}

/* This thread's cuBLAS handle on the current stream, or the noted error. */
static em_status blas_for(const char *op, cublasHandle_t *bh) {
  int dev = emcu_device();
  *bh = (cublasHandle_t)emcu_cublas_handle(dev);
  return *bh ? EM_OK : em_cuda_check(op, dev); /* raises what blas.c noted */
}

/* getrf over the batch into a; the int64 pivots in *piv64 (batch x sp) */
static em_status run_getrf(ctx *c, int m, int n, int64_t **piv64) {
  const em_lapack_job *j = c->j;
  size_t db = 0, hb = 0;
  void *wd = NULL;
  CALL("getrf_bufferSize", lib.cusolverDnXgetrf_bufferSize(c->h, c->prm, m, n, c->cdt, j->a, j->lda,
                                                           c->cdt, &db, &hb));
  em_status st = dev_block(&c->s, db, &wd);
  if (st == EM_OK) st = host_block(&c->s, hb);
  if (st == EM_OK) st = dev_block(&c->s, (size_t)(j->batch * j->sp) * sizeof(int64_t), (void **)piv64);
  if (st != EM_OK) return st;
  for (int64_t i = 0; i < j->batch; i++)
    CALL("getrf", lib.cusolverDnXgetrf(c->h, c->prm, m, n, c->cdt, at(j->a, i, j->sa, c->es), j->lda,
                                       *piv64 + i * j->sp, c->cdt, wd, db, c->s.host, hb,
                                       j->info + i));
  return EM_OK;
}

/* getrs over the batch: b_i (n x nrhs) = op(A_i)^-1 b_i from a's LU and piv64 */
static em_status run_getrs(ctx *c, char trans, const int64_t *piv64, void *b, int64_t sb, int ldb,
                           int nrhs) {
  const em_lapack_job *j = c->j;
  int *dinfo = NULL;
  em_status st = dev_block(&c->s, sizeof(int), (void **)&dinfo);
  if (st != EM_OK) return st;
  for (int64_t i = 0; i < j->batch; i++)
    CALL("getrs", lib.cusolverDnXgetrs(c->h, c->prm, trans_op(trans), j->n, nrhs, c->cdt,
                                       at(j->a, i, j->sa, c->es), j->lda, piv64 + i * j->sp, c->cdt,
                                       at(b, i, sb, c->es), ldb, dinfo));
  return EM_OK;
}

static em_status piv_out(ctx *c, const int64_t *piv64) {
  LAUNCHED("pivots", emcu_la_piv64to32(piv64, c->j->ipiv, c->j->batch * c->j->sp, c->stream));
  return EM_OK;
}

/* GETRI's last step: the inverses in x (contiguous n x n) over a */
static em_status copy_over_a(ctx *c, const void *x) {
  const em_lapack_job *j = c->j;
  int64_t nn = (int64_t)j->n * j->n;
  cudaStream_t s = (cudaStream_t)c->stream;
  cudaError_t e = cudaSuccess;
  if (j->lda == j->n && j->sa == nn)
    e = cudaMemcpyAsync(j->a, x, (size_t)(j->batch * nn) * c->es, cudaMemcpyDeviceToDevice, s);
  else
    for (int64_t i = 0; e == cudaSuccess && i < j->batch; i++)
      e = cudaMemcpy2DAsync(at(j->a, i, j->sa, c->es), (size_t)j->lda * c->es,
                            at((void *)x, i, nn, c->es), (size_t)j->n * c->es,
                            (size_t)j->n * c->es, (size_t)j->n, cudaMemcpyDeviceToDevice, s);
  return e == cudaSuccess ? EM_OK : emcu_fail("linalg", "cudaMemcpyAsync", e);
}

/* GETRI's right-hand sides: batch identities (contiguous n x n) */
static em_status identities(ctx *c, void **x) {
  const em_lapack_job *j = c->j;
  em_status st = dev_block(&c->s, (size_t)(j->batch * j->n * j->n) * c->es, x);
  if (st != EM_OK) return st;
  int64_t nn = (int64_t)j->n * j->n;
  LAUNCHED("eye", emcu_la_eye((int)j->dt, *x, j->batch, j->n, j->n, j->n, nn, c->stream));
  return EM_OK;
}

/* The LU family on a batch of small square matrices: cuBLAS's batched
** getrf/getrs, the op's int32 pivots (stride n) and info used directly. */
static em_status lu_batched(ctx *c) {
  const em_lapack_job *j = c->j;
  int n = j->n, nb = (int)j->batch, hinfo = 0;
  cublasHandle_t bh;
  void *A = NULL, *B = NULL, *x = j->b;
  em_status st = blas_for("linalg", &bh);
  if (st == EM_OK) st = ptr_array(c, j->a, j->sa, &A);
  if (st != EM_OK) return st;
  if (j->op != EM_LAPACK_GETRS)
    CALLB("getrfBatched", TYPED(j->dt, cublas, getrfBatched, bh, n, A, j->lda, (void *)j->ipiv,
                                (void *)j->info, nb));
  if (j->op == EM_LAPACK_GETRF) return EM_OK;
  int64_t sx = j->sb;
  int ldx = j->ldb, nrhs = j->nrhs;
  char tr = j->trans;
  if (j->op == EM_LAPACK_GETRI) {
    st = identities(c, &x);
    if (st != EM_OK) return st;
    sx = (int64_t)n * n, ldx = n, nrhs = n, tr = 'N';
  }
  if (nrhs > 0) {
    st = ptr_array(c, x, sx, &B);
    if (st != EM_OK) return st;
    CALLB("getrsBatched", TYPED(j->dt, cublas, getrsBatched, bh, trans_op(tr), n, nrhs, A, j->lda,
                                (const void *)j->ipiv, B, ldx, &hinfo, nb));
  }
  return j->op == EM_LAPACK_GETRI ? copy_over_a(c, x) : EM_OK;
}

static em_status lu_family(ctx *c) {
  const em_lapack_job *j = c->j;
  int64_t *piv = NULL;
  em_status st;
  if ((j->op != EM_LAPACK_GETRF || j->m == j->n) && j->sp == j->n && small_batch(j, j->n))
    return lu_batched(c);
  switch (j->op) {
    case EM_LAPACK_GETRF:
      st = run_getrf(c, j->m, j->n, &piv);
      return st == EM_OK ? piv_out(c, piv) : st;
    case EM_LAPACK_GETRS:
      st = dev_block(&c->s, (size_t)(j->batch * j->sp) * sizeof(int64_t), (void **)&piv);
      if (st != EM_OK) return st;
      LAUNCHED("pivots", emcu_la_piv32to64(j->ipiv, piv, j->batch * j->sp, c->stream));
      return run_getrs(c, j->trans, piv, j->b, j->sb, j->ldb, j->nrhs);
    case EM_LAPACK_GESV:
      st = run_getrf(c, j->n, j->n, &piv);
      if (st == EM_OK && j->nrhs > 0) st = run_getrs(c, j->trans, piv, j->b, j->sb, j->ldb, j->nrhs);
      return st == EM_OK ? piv_out(c, piv) : st;
    default: { /* GETRI: a^-1 = getrs(LU, I), copied over a */
      void *x = NULL;
      st = run_getrf(c, j->n, j->n, &piv);
      if (st == EM_OK) st = identities(c, &x);
      if (st == EM_OK) st = run_getrs(c, 'N', piv, x, (int64_t)j->n * j->n, j->n, j->n);
      if (st == EM_OK) st = copy_over_a(c, x);
      return st == EM_OK ? piv_out(c, piv) : st;
    }
  }
}

static em_status potrf(ctx *c) {
  const em_lapack_job *j = c->j;
  if (small_batch(j, j->n)) {
    void *A = NULL;
    em_status st = ptr_array(c, j->a, j->sa, &A);
    if (st != EM_OK) return st;
    CALL("potrfBatched", TYPED(j->dt, cusolverDn, potrfBatched, c->h, fill(j->uplo), j->n, A,
                               j->lda, (void *)j->info, (int)j->batch));
  } else {
    size_t db = 0, hb = 0;
    void *wd = NULL;
    CALL("potrf_bufferSize", lib.cusolverDnXpotrf_bufferSize(c->h, c->prm, fill(j->uplo), j->n,
                                                             c->cdt, j->a, j->lda, c->cdt, &db, &hb));
    em_status st = dev_block(&c->s, db, &wd);
    if (st == EM_OK) st = host_block(&c->s, hb);
    if (st != EM_OK) return st;
    for (int64_t i = 0; i < j->batch; i++)
      CALL("potrf", lib.cusolverDnXpotrf(c->h, c->prm, fill(j->uplo), j->n, c->cdt,
                                         at(j->a, i, j->sa, c->es), j->lda, c->cdt, wd, db,
                                         c->s.host, hb, j->info + i));
  }
  /* the other triangle: zeros (LAPACK leaves it as it was) */
  LAUNCHED("zero_triangle", emcu_la_zero_triangle((int)j->dt, j->a, j->batch, j->n, j->lda, j->sa,
                                                  j->uplo == 'U', c->stream));
  return EM_OK;
}

static em_status trsm(ctx *c) {
  const em_lapack_job *j = c->j;
  cublasHandle_t bh;
  em_status st = blas_for("linalg.solve_triangular", &bh);
  if (st != EM_OK) return st;
  cublasSideMode_t side = j->side == 'L' ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
  cublasFillMode_t uplo = fill(j->uplo);
  cublasOperation_t tr = trans_op(j->trans);
  cublasDiagType_t diag = j->diag == 'U' ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
  one_of one = one_for(j->dt);
  if (small_batch(j, j->side == 'L' ? j->m : j->n)) {
    void *A = NULL, *B = NULL;
    st = ptr_array(c, j->a, j->sa, &A);
    if (st == EM_OK) st = ptr_array(c, j->b, j->sb, &B);
    if (st != EM_OK) return st;
    CALLB("trsmBatched", TYPED(j->dt, cublas, trsmBatched, bh, side, uplo, tr, diag, j->m, j->n,
                               (const void *)&one, A, j->lda, B, j->ldb, (int)j->batch));
    return EM_OK;
  }
  for (int64_t i = 0; i < j->batch; i++)
    CALLB("trsm", TYPED(j->dt, cublas, trsm_v2, bh, side, uplo, tr, diag, j->m, j->n,
                        (const void *)&one, at(j->a, i, j->sa, c->es), j->lda,
                        at(j->b, i, j->sb, c->es), j->ldb));
  return EM_OK;
}

static em_status geqrf(ctx *c) {
  const em_lapack_job *j = c->j;
  size_t db = 0, hb = 0;
  void *wd = NULL;
  int *dinfo = NULL;
  CALL("geqrf_bufferSize", lib.cusolverDnXgeqrf_bufferSize(c->h, c->prm, j->m, j->n, c->cdt, j->a,
                                                           j->lda, c->cdt, j->w, c->cdt, &db, &hb));
  em_status st = dev_block(&c->s, db, &wd);
  if (st == EM_OK) st = host_block(&c->s, hb);
  if (st == EM_OK) st = dev_block(&c->s, sizeof(int), (void **)&dinfo);
  if (st != EM_OK) return st;
  for (int64_t i = 0; i < j->batch; i++)
    CALL("geqrf", lib.cusolverDnXgeqrf(c->h, c->prm, j->m, j->n, c->cdt, at(j->a, i, j->sa, c->es),
                                       j->lda, c->cdt, at(j->w, i, j->sw, c->es), c->cdt, wd, db,
                                       c->s.host, hb, dinfo));
  return EM_OK;
}

/* orgqr/ungqr: the typed entries, T the element type */
#define ORGQR(FN, T)                                                                       \
  do {                                                                                     \
    CALL(#FN "_bufferSize", lib.FN##_bufferSize(c->h, j->m, j->n, j->k, (const T *)j->a,   \
                                                j->lda, (const T *)j->w, &lwork));         \
    st = dev_block(&c->s, (size_t)(lwork > 0 ? lwork : 1) * sizeof(T), &wd);               \
    if (st == EM_OK) st = dev_block(&c->s, sizeof(int), (void **)&dinfo);                  \
    if (st != EM_OK) return st;                                                            \
    for (int64_t i = 0; i < j->batch; i++)                                                 \
      CALL(#FN, lib.FN(c->h, j->m, j->n, j->k, (T *)at(j->a, i, j->sa, c->es), j->lda,     \
                       (const T *)at(j->w, i, j->sw, c->es), (T *)wd, lwork, dinfo));      \
  } while (0)

static em_status orgqr(ctx *c) {
  const em_lapack_job *j = c->j;
  int lwork = 0, *dinfo = NULL;
  void *wd = NULL;
  em_status st;
  if (j->k == 0) { /* no reflectors: Q is the identity's first n columns, as
                      LAPACK gives it (cuSOLVER computes nothing then) */
    LAUNCHED("eye", emcu_la_eye((int)j->dt, j->a, j->batch, j->m, j->n, j->lda, j->sa, c->stream));
    return EM_OK;
  }
  switch (j->dt) {
    case EM_FLOAT32: ORGQR(cusolverDnSorgqr, float); break;
    case EM_FLOAT64: ORGQR(cusolverDnDorgqr, double); break;
    case EM_COMPLEX64: ORGQR(cusolverDnCungqr, cuComplex); break;
    default: ORGQR(cusolverDnZungqr, cuDoubleComplex); break;
  }
  return EM_OK;
}
#undef ORGQR

/* The SVD by gesvdj (one-sided Jacobi; any m, n): S into w (value type),
** U into b, V into a scratch, then V^H into c. jobz 'S' is gesvdj's econ. */
static em_status gesvdj(ctx *c) {
  const em_lapack_job *j = c->j;
  int m = j->m, n = j->n, mn = m < n ? m : n;
  int vectors = j->jobz != 'N', econ = j->jobz == 'S';
  int kv = econ ? mn : n; /* V's columns */
  cusolverEigMode_t mode = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  size_t res = value_bytes(j->dt);
  int ldu = vectors ? j->ldb : (m > 1 ? m : 1), ldv = n > 1 ? n : 1, lwork = 0;
  void *v = NULL, *u0 = NULL, *wd = NULL;
  em_status st = EM_OK;
  /* without vectors gesvdj still gets buffers of their economy sizes (U
  ** m x min(m,n), V n x min(m,n)) and econ: PyTorch found it fails given
  ** none, and it may use them as scratch; one U serves the whole batch */
  if (!vectors) econ = 1, kv = mn;
  st = dev_block(&c->s, (size_t)((int64_t)n * kv * (vectors ? j->batch : 1)) * c->es, &v);
  if (st == EM_OK && !vectors) st = dev_block(&c->s, (size_t)((int64_t)m * mn) * c->es, &u0);
  if (st != EM_OK) return st;
  gesvdjInfo_t info = NULL;
  CALL("CreateGesvdjInfo", lib.cusolverDnCreateGesvdjInfo(&info));
  void *u = vectors ? j->b : u0;
  cusolverStatus_t q = TYPED(j->dt, cusolverDn, gesvdj_bufferSize, c->h, mode, econ, m, n, j->a,
                             j->lda, j->w, u, ldu, v, ldv, &lwork, info);
  if (q != CUSOLVER_STATUS_SUCCESS) st = solver_fail("gesvdj_bufferSize", (int)q);
  if (st == EM_OK) st = dev_block(&c->s, (size_t)(lwork > 0 ? lwork : 1) * c->es, &wd);
  for (int64_t i = 0; st == EM_OK && i < j->batch; i++) {
    q = TYPED(j->dt, cusolverDn, gesvdj, c->h, mode, econ, m, n, at(j->a, i, j->sa, c->es), j->lda,
              at(j->w, i, j->sw, res), vectors ? at(u, i, j->sb, c->es) : u, ldu,
              vectors ? at(v, i, (int64_t)n * kv, c->es) : v, ldv, wd, lwork, j->info + i, info);
    if (q != CUSOLVER_STATUS_SUCCESS) st = solver_fail("gesvdj", (int)q);
  }
  /* gesvdjInfo holds only parameters: destroying it does not wait */
  lib.cusolverDnDestroyGesvdjInfo(info);
  if (st != EM_OK || !vectors) return st;
  LAUNCHED("conj_transpose", emcu_la_conj_transpose((int)j->dt, v, (int64_t)n * kv, n, n, kv, j->c,
                                                    j->sc, j->ldc, j->batch, c->stream));
  return EM_OK;
}

static em_status syevd(ctx *c) {
  const em_lapack_job *j = c->j;
  size_t db = 0, hb = 0, res = value_bytes(j->dt);
  void *wd = NULL;
  cusolverEigMode_t mode = j->jobz == 'V' ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  cudaDataType wt = value_type(j->dt);
  CALL("syevd_bufferSize", lib.cusolverDnXsyevd_bufferSize(c->h, c->prm, mode, fill(j->uplo), j->n,
                                                           c->cdt, j->a, j->lda, wt, j->w, c->cdt,
                                                           &db, &hb));
  em_status st = dev_block(&c->s, db, &wd);
  if (st == EM_OK) st = host_block(&c->s, hb);
  if (st != EM_OK) return st;
  for (int64_t i = 0; i < j->batch; i++)
    CALL("syevd", lib.cusolverDnXsyevd(c->h, c->prm, mode, fill(j->uplo), j->n, c->cdt,
                                       at(j->a, i, j->sa, c->es), j->lda, wt, at(j->w, i, j->sw, res),
                                       c->cdt, wd, db, c->s.host, hb, j->info + i));
  return EM_OK;
}

bool emcu_lapack_runs(em_lapack_op op) {
  return op != EM_LAPACK_GELS && op != EM_LAPACK_GEEV && op != EM_LAPACK_SYTRF &&
         op != EM_LAPACK_SYTRS;
}

em_status emcu_lapack(const em_lapack_job *j) {
  pthread_once(&lib_once, lib_open);
  if (!lib.ok) return em_fail(EM_E_RUNTIME, "linalg: %s", lib.why);
  if (j->batch == 0) return EM_OK;
  if (j->dt != EM_FLOAT32 && j->dt != EM_FLOAT64 && j->dt != EM_COMPLEX64 && j->dt != EM_COMPLEX128)
    return em_fail(EM_E_TYPE, "linalg: %s: not implemented for %s on cuda", op_name(j->op),
                   em_dtype_name(j->dt));
  int dev = emcu_device();
  ctx c = {0};
  c.j = j;
  c.cdt = data_type(j->dt);
  c.es = em_dtype_size(j->dt);
  c.stream = emcu_stream(dev);
  c.s.d = (em_device){EM_CUDA, dev};
  em_status st = solver_for(dev, &c.h, &c.prm);
  if (st != EM_OK) return st;
  switch (j->op) {
    case EM_LAPACK_GETRF:
    case EM_LAPACK_GETRS:
    case EM_LAPACK_GESV:
    case EM_LAPACK_GETRI: st = lu_family(&c); break;
    case EM_LAPACK_POTRF: st = potrf(&c); break;
    case EM_LAPACK_TRSM: st = trsm(&c); break;
    case EM_LAPACK_GEQRF: st = geqrf(&c); break;
    case EM_LAPACK_ORGQR: st = orgqr(&c); break;
    case EM_LAPACK_GESDD: st = gesvdj(&c); break;
    case EM_LAPACK_SYEVD: st = syevd(&c); break;
    default:
      st = em_fail(EM_E_RUNTIME, "linalg: %s has no cuda kernel (the op runs host-staged)",
                   op_name(j->op));
      break;
  }
  scratch_free(&c.s);
  return st;
}

#endif
