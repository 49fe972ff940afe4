/*
** bench/cuda_ref.c -- the C reference of the GPU rows (bench/workloads_cuda.txt,
** bench/bench_cuda.py): the CUDA runtime and cuBLAS called directly, over
** bench/protocol.lua's line protocol (setup NAME SCALE / time NAME INNER /
** threads N / peak / quit; answers ok, skip REASON, t SECONDS). Rows:
** cu_copy (cudaMemcpyAsync device to device), cu_h2d_pinned (cudaMemcpyAsync
** from cudaHostAlloc'd memory), cu_sgemm_4096 and cu_mm_256 (cublasGemmEx,
** float32, CUBLAS_COMPUTE_32F: no TF32), cu_bf16_gemm_4096 (bfloat16 in and
** out, CUBLAS_COMPUTE_32F). Every timing ends with cudaDeviceSynchronize.
** The others skip. Without a device every setup skips, saying why.
*/
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *A, *B, *C, *H; /* device buffers; pinned host memory */
static size_t bytes;
static int n_mm;
static cublasHandle_t blas;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void release(void) {
  if (A) cudaFree(A);
  if (B) cudaFree(B);
  if (C) cudaFree(C);
  if (H) cudaFreeHost(H);
  A = B = C = H = NULL;
}

/* NULL when the row was set up, else why not (static text) */
static const char *setup(const char *name, int k) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  if (count == 0) return "no CUDA device";
  release();
  if (!blas && cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) return "cublasCreate failed";
  cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH); /* no TF32, as PyTorch's and ember's default */
  if (!strcmp(name, "cu_copy")) {
    bytes = (size_t)(256u << 20) * 4 / (size_t)k;
    if (cudaMalloc(&A, bytes) || cudaMalloc(&B, bytes)) return "cudaMalloc failed";
    cudaMemset(A, 0, bytes);
  } else if (!strcmp(name, "cu_h2d_pinned")) {
    bytes = (size_t)(64u << 20) * 4 / (size_t)k;
    if (cudaHostAlloc(&H, bytes, cudaHostAllocDefault) || cudaMalloc(&A, bytes))
      return "cudaHostAlloc/cudaMalloc failed";
    memset(H, 0, bytes);
  } else if (!strcmp(name, "cu_sgemm_4096") || !strcmp(name, "cu_mm_256") ||
             !strcmp(name, "cu_bf16_gemm_4096")) {
    n_mm = !strcmp(name, "cu_mm_256") ? 256 : 4096 / k;
    size_t es = !strcmp(name, "cu_bf16_gemm_4096") ? 2 : 4;
    bytes = (size_t)n_mm * (size_t)n_mm * es;
    if (cudaMalloc(&A, bytes) || cudaMalloc(&B, bytes) || cudaMalloc(&C, bytes))
      return "cudaMalloc failed";
    cudaMemset(A, 0, bytes); /* zeros: a GEMM's time does not depend on the values */
    cudaMemset(B, 0, bytes);
  } else {
    return "no C reference for this row";
  }
  return cudaDeviceSynchronize() == cudaSuccess ? NULL : "cudaDeviceSynchronize failed";
}

static int run(const char *name, long n) {
  const float one = 1.0f, zero = 0.0f;
  for (long i = 0; i < n; i++) {
    if (!strcmp(name, "cu_copy")) {
      if (cudaMemcpyAsync(B, A, bytes, cudaMemcpyDeviceToDevice, 0)) return 1;
    } else if (!strcmp(name, "cu_h2d_pinned")) {
      if (cudaMemcpyAsync(A, H, bytes, cudaMemcpyHostToDevice, 0)) return 1;
    } else {
      int bf = !strcmp(name, "cu_bf16_gemm_4096");
      cudaDataType t = bf ? CUDA_R_16BF : CUDA_R_32F;
      if (cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n_mm, n_mm, n_mm, &one, B, t, n_mm, A, t,
                       n_mm, &zero, C, t, n_mm, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
        return 1;
    }
  }
  return cudaDeviceSynchronize() != cudaSuccess;
}

int main(void) {
  char line[256], cmd[32], name[64];
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (fgets(line, sizeof line, stdin)) {
    long a = 1;
    name[0] = 0;
    if (sscanf(line, "%31s %63s %ld", cmd, name, &a) < 1) continue;
    if (!strcmp(cmd, "quit")) break;
    if (!strcmp(cmd, "threads")) {
      puts("ok");
    } else if (!strcmp(cmd, "setup")) {
      const char *why = setup(name, a > 0 ? (int)a : 1);
      if (why) printf("skip %s\n", why);
      else puts("ok");
    } else if (!strcmp(cmd, "time")) {
      double t0 = now();
      int bad = run(name, a);
      double t1 = now();
      if (bad) printf("skip %s: a CUDA call failed\n", name);
      else printf("t %.9f\n", t1 - t0);
    } else {
      printf("skip %s is not the C reference's\n", cmd);
    }
  }
  release();
  if (blas) cublasDestroy(blas);
  return 0;
}
