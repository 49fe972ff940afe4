/* linalg_gemm.c -- ember's em_mm against calling cblas_sgemm/dgemm directly
** on the same buffers, for square sizes. Prints the best of several runs
** and the ratio ember / cblas (1.00 = no overhead).
**   cc -O2 bench/linalg_gemm.c -Iengine/include build/libember.a \
**      $(pkg-config --cflags --libs openblas) -lm -lpthread -o /tmp/gemm
**   OPENBLAS_NUM_THREADS=1 /tmp/gemm */
#include <cblas.h>
#include <stdio.h>
#include <time.h>

#include "ember.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(em_dtype dt, int64_t n, int transposed) {
  int64_t sz[2] = {n, n};
  em_tensor *a, *b, *c;
  em_scalar one = {EM_SCALAR_FLOAT, 0, 0.5};
  em_full(2, sz, one, dt, em_cpu(), &a);
  em_full(2, sz, one, dt, em_cpu(), &b);
  em_tensor *bb = b;
  if (transposed) {  /* b seen transposed: strides (1, n), no copy needed */
    int64_t st[2] = {1, n};
    em_as_strided(b, 2, sz, st, 0, &bb);
  }
  int reps = n <= 256 ? 50 : n <= 512 ? 20 : 8;
  double best_e = 1e30, best_b = 1e30;
  em_tensor *cref;
  em_zeros(2, sz, dt, em_cpu(), &cref);
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    em_mm(a, bb, &c);
    double t1 = now();
    em_tensor_release(c);
    if (t1 - t0 < best_e) best_e = t1 - t0;
    t0 = now();
    if (dt == EM_FLOAT32)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, transposed ? CblasTrans : CblasNoTrans,
                  (int)n, (int)n, (int)n, 1.0f, em_tensor_data(a), (int)n,
                  em_tensor_data(b), (int)n, 0.0f, em_tensor_data(cref), (int)n);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, transposed ? CblasTrans : CblasNoTrans,
                  (int)n, (int)n, (int)n, 1.0, em_tensor_data(a), (int)n,
                  em_tensor_data(b), (int)n, 0.0, em_tensor_data(cref), (int)n);
    t1 = now();
    if (t1 - t0 < best_b) best_b = t1 - t0;
  }
  double gf = 2.0 * n * n * n / 1e9;
  printf("%-8s n=%-5lld %s ember %8.3f ms (%6.1f GFLOP/s)  cblas %8.3f ms (%6.1f GFLOP/s)  ratio %.3f\n",
         em_dtype_name(dt), (long long)n, transposed ? "B^T" : "B  ", best_e * 1e3, gf / best_e,
         best_b * 1e3, gf / best_b, best_e / best_b);
  if (bb != b) em_tensor_release(bb);
  em_tensor_release(a);
  em_tensor_release(b);
  em_tensor_release(cref);
}

int main(void) {
  int64_t ns[4] = {64, 256, 512, 1024};
  for (int i = 0; i < 4; i++) bench(EM_FLOAT32, ns[i], 0);
  for (int i = 0; i < 4; i++) bench(EM_FLOAT32, ns[i], 1);
  for (int i = 0; i < 4; i++) bench(EM_FLOAT64, ns[i], 0);
  return 0;
}
