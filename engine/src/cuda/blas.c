/*
** cuda/blas.c -- matrix products on the GPU through cuBLAS (issue 16 item
** 1; docs/cuda.md "Matrix products"). The linalg family's gemm entry: one
** em_gemm (m, n, k, A's and B's element strides, alpha, beta) over the
** iterator's batch, as the CPU's (cpu/linalg.c); the innermost batch dim
** goes to cublasGemmStridedBatchedEx in one call, outer ones loop here.
**
** libcublas is opened with dlopen on the first product, not linked: a
** build with CUDA still loads on a machine without the toolkit's
** libraries (as cudart, linked statically), and a script that never
** multiplies on the GPU never loads cuBLAS. Handles are per thread and
** device, bound to the current stream before each call.
**
** Row-major to cuBLAS's column-major: C (m x n, row-major) is C^T (n x m)
** column-major, and C^T = B^T A^T, so the call is gemm(opB, opA, n, m, k,
** B, A) where a row-major operand is op N and a transposed-stored one op T;
** transposes never copy. float16/bfloat16 operands come as they are
** (ops/linalg.c keeps them on cuda) and accumulate in float32
** (CUBLAS_COMPUTE_32F, alpha and beta as floats); TF32 is used for float32
** only when
** em_cuda_set_allow_tf32(1) (T.backends.cuda.matmul.allow_tf32 = true), as
** PyTorch's default is off. complex64/complex128 go as CUDA_C_32F/
** CUDA_C_64F (cgemm/zgemm's arithmetic; no TF32 for complex64).
**
** COMPILED ONLY: no GPU has run this file.
*/
#include "core/kern_linalg.h"
#include "core/errmsg.h"

#ifdef EMBER_HAVE_CUDA

#include "cuda/cuda.h"

#include <cublas_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*set_math_fn)(cublasHandle_t, cublasMath_t);
typedef const char *(*status_str_fn)(cublasStatus_t);
typedef cublasStatus_t (*gemm_sb_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                     const void *, const void *, cudaDataType, int, long long int, const void *,
                                     cudaDataType, int, long long int, const void *, void *, cudaDataType, int,
                                     long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

static struct {
  int tried, ok;
  char why[256];
  void *h; /* the dlopen handle */
  create_fn create;
  set_stream_fn set_stream;
  set_math_fn set_math;
  status_str_fn status_str;
  gemm_sb_fn gemm_sb;
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static atomic_int allow_tf32 = 0;

static void lib_open(void) {
  static const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
  void *h = emcu_dlopen_first(names, "libcublas", lib.why, sizeof lib.why);
  if (!h) return;
  lib.h = h;
  lib.create = (create_fn)dlsym(h, "cublasCreate_v2");
  lib.set_stream = (set_stream_fn)dlsym(h, "cublasSetStream_v2");
  lib.set_math = (set_math_fn)dlsym(h, "cublasSetMathMode");
  lib.status_str = (status_str_fn)dlsym(h, "cublasGetStatusString");
  lib.gemm_sb = (gemm_sb_fn)dlsym(h, "cublasGemmStridedBatchedEx");
  if (!lib.create || !lib.set_stream || !lib.set_math || !lib.gemm_sb) {
    snprintf(lib.why, sizeof lib.why, "libcublas lacks cublasGemmStridedBatchedEx or its set-up calls");
    return;
  }
  lib.ok = 1;
}

void em_cuda_set_allow_tf32(int on) { atomic_store(&allow_tf32, on != 0); }
int em_cuda_get_allow_tf32(void) { return atomic_load(&allow_tf32); }

#define MAX_HANDLES 64
static _Thread_local cublasHandle_t handles[MAX_HANDLES];

static const char *status(cublasStatus_t s) {
  static char b[32];
  if (lib.status_str) return lib.status_str(s);
  snprintf(b, sizeof b, "status %d", (int)s);
  return b;
}

/* the handle of this thread and device, on the current stream; NULL after
** noting why */
static cublasHandle_t handle(int dev) {
  pthread_once(&lib_once, lib_open);
  if (!lib.ok) {
    emcu_note("matmul: %s", lib.why);
    return NULL;
  }
  if (dev < 0 || dev >= MAX_HANDLES) {
    emcu_note("matmul: device %d is beyond the %d cuBLAS handles kept", dev, MAX_HANDLES);
    return NULL;
  }
  if (!handles[dev]) {
    cublasStatus_t s = lib.create(&handles[dev]);
    if (s != CUBLAS_STATUS_SUCCESS) {
      handles[dev] = NULL;
      emcu_note("matmul: cublasCreate: %s", status(s));
      return NULL;
    }
  }
  cublasStatus_t s = lib.set_stream(handles[dev], (cudaStream_t)emcu_stream(dev));
  if (s == CUBLAS_STATUS_SUCCESS)
    s = lib.set_math(handles[dev], atomic_load(&allow_tf32) ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  if (s != CUBLAS_STATUS_SUCCESS) {
    emcu_note("matmul: cublasSetStream: %s", status(s));
    return NULL;
  }
  return handles[dev];
}

void *emcu_cublas_handle(int dev) { return handle(dev); }

void *emcu_cublas_sym(const char *name) {
  pthread_once(&lib_once, lib_open);
  return lib.ok ? dlsym(lib.h, name) : NULL;
}

void emcu_gemm(const em_iter *it, em_dtype dt, const em_gemm *g) {
  if (it->numel == 0) return;
  cudaDataType t;
  cublasComputeType_t ct;
  size_t es;
  switch (dt) {
  case EM_FLOAT32:
    t = CUDA_R_32F, es = 4;
    ct = atomic_load(&allow_tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    break;
  case EM_FLOAT64: t = CUDA_R_64F, ct = CUBLAS_COMPUTE_64F, es = 8; break;
  case EM_FLOAT16: t = CUDA_R_16F, ct = CUBLAS_COMPUTE_32F, es = 2; break;
  case EM_BFLOAT16: t = CUDA_R_16BF, ct = CUBLAS_COMPUTE_32F, es = 2; break;
  /* complex: as cgemm/zgemm (no TF32 for complex64) */
  case EM_COMPLEX64: t = CUDA_C_32F, ct = CUBLAS_COMPUTE_32F, es = 8; break;
  case EM_COMPLEX128: t = CUDA_C_64F, ct = CUBLAS_COMPUTE_64F, es = 16; break;
  default:
    emcu_note("matmul: not implemented for %s on cuda (cuBLAS multiplies floating point types)",
              em_dtype_name(dt));
    return;
  }
  bool ta, tb;
  int64_t lda, ldb;
  if (!em_gemm_layout(g->m, g->k, g->as0, g->as1, &ta, &lda) ||
      !em_gemm_layout(g->k, g->n, g->bs0, g->bs1, &tb, &ldb)) {
    emcu_note("matmul: an operand's layout does not fit cuBLAS");
    return;
  }
  cublasHandle_t h = handle(emcu_device());
  if (!h) return;
  /* alpha and beta in the compute type; a complex type's as (value, 0) */
  float af[2] = {(float)g->alpha, 0}, bf[2] = {(float)g->beta, 0};
  double ad[2] = {g->alpha, 0}, bd[2] = {g->beta, 0};
  const void *alpha = ct == CUBLAS_COMPUTE_64F ? (const void *)ad : (const void *)af;
  const void *beta = ct == CUBLAS_COMPUTE_64F ? (const void *)bd : (const void *)bf;
  /* dim 0 of the iterator is the batch cuBLAS strides over; the rest loop */
  int64_t nb = it->ndim > 0 ? it->shape[0] : 1;
  long long sc = it->ndim > 0 ? it->strides[0][0] / (int64_t)es : 0;
  long long sa = it->ndim > 0 ? it->strides[0][1] / (int64_t)es : 0;
  long long sb = it->ndim > 0 ? it->strides[0][2] / (int64_t)es : 0;
  int64_t outer = nb ? it->numel / nb : 0;
  int64_t idx[EM_MAX_DIMS] = {0};
  for (int64_t o = 0; o < outer; o++) {
    char *p[3];
    for (int k = 0; k < 3; k++) {
      p[k] = it->data[k];
      for (int d = 1; d < it->ndim; d++) p[k] += idx[d] * it->strides[d][k];
    }
    for (int64_t b0 = 0; b0 < nb; b0 += 65535) { /* cuBLAS takes an int batch; keep it small */
      int cnt = (int)(nb - b0 < 65535 ? nb - b0 : 65535);
      cublasStatus_t s = lib.gemm_sb(
          h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g->n, (int)g->m, (int)g->k, alpha,
          p[2] + b0 * sb * (long long)es, t, (int)ldb, sb, p[1] + b0 * sa * (long long)es, t, (int)lda, sa, beta,
          p[0] + b0 * sc * (long long)es, t, (int)g->n, sc, cnt, ct, CUBLAS_GEMM_DEFAULT);
      if (s != CUBLAS_STATUS_SUCCESS) {
        emcu_note("matmul: cublasGemmStridedBatchedEx: %s", status(s));
        return;
      }
    }
    for (int d = 1; d < it->ndim; d++) {
      if (++idx[d] < it->shape[d]) break;
      idx[d] = 0;
    }
  }
}

/* Row-major C [M x N] = op(A) op(B) + beta C in float32 or float64 (the
** conv driver's GEMM, em_cpu_nn_gemm's contract): column-major cuBLAS
** computes C^T = op(B)^T op(A)^T. 0, or -1 after a note (the launch-error
** rule). */
int emcu_nn_gemm(em_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (M == 0 || N == 0) return 0;
  cublasHandle_t h = handle(emcu_device());
  if (!h) return -1;
  int f64 = dt == EM_FLOAT64;
  cudaDataType t = f64 ? CUDA_R_64F : CUDA_R_32F;
  cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F
                               : atomic_load(&allow_tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  float af = 1.0f, bf = (float)beta;
  double ad = 1.0, bd = beta;
  const void *alpha = f64 ? (const void *)&ad : (const void *)&af;
  const void *bet = f64 ? (const void *)&bd : (const void *)&bf;
  cublasStatus_t s = lib.gemm_sb(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N,
                                 (int)M, (int)K, alpha, B, t, (int)ldb, 0, A, t, (int)lda, 0, bet, C, t,
                                 (int)ldc, 0, 1, ct, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    emcu_note("conv2d: cublasGemmStridedBatchedEx: %s", status(s));
    return -1;
  }
  return 0;
}

#else

void em_cuda_set_allow_tf32(int on) { (void)on; }
int em_cuda_get_allow_tf32(void) { return 0; }

#endif
