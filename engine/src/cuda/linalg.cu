// cuda/linalg.cu -- the small kernels cuda/solver.c puts around cuSOLVER's
// routines (cu_iface.h): pivots between int64 and int32, identities, the
// zeroed triangle of a Cholesky factor, V^H from V. Elements move as raw
// bytes (4, 8 or 16); a complex conjugate flips the sign bit of the
// imaginary part.
//
// COMPILED ONLY: no GPU has run this file.
#include "cuda/cu_common.cuh"

namespace {

__global__ void piv32to64_kernel(const int32_t *in, int64_t *out, int64_t n) {
  GRID_LOOP(n) out[lin] = in[lin];
}
__global__ void piv64to32_kernel(const int64_t *in, int32_t *out, int64_t n) {
  GRID_LOOP(n) out[lin] = (int32_t)in[lin];
}

// one = 1 of dt (the real part of a complex one), zero elsewhere
__device__ inline void put_unit(char *p, int dt, bool one) {
  switch (dt) {
    case F32: *(float *)p = one ? 1.0f : 0.0f; break;
    case F64: *(double *)p = one ? 1.0 : 0.0; break;
    case C64: ((float *)p)[0] = one ? 1.0f : 0.0f; ((float *)p)[1] = 0.0f; break;
    default: ((double *)p)[0] = one ? 1.0 : 0.0; ((double *)p)[1] = 0.0; break;
  }
}

// mode EYE: every element of each rows x cols matrix, 1 on the diagonal;
// ZERO_LOWER / ZERO_UPPER: only the strict triangle, set to 0
enum { EYE, ZERO_LOWER, ZERO_UPPER };
__global__ void pattern_kernel(int dt, char *a, int64_t batch, int64_t rows, int64_t cols,
                               int64_t lda, int64_t sa, int mode) {
  int es = elsize(dt);
  int64_t per = rows * cols;
  GRID_LOOP(batch * per) {
    int64_t b = lin / per, e = lin % per, r = e % rows, c = e / rows;
    if (mode == EYE || (mode == ZERO_LOWER ? r > c : r < c))
      put_unit(a + (b * sa + r + c * lda) * es, dt, mode == EYE && r == c);
  }
}

__global__ void conj_transpose_kernel(int dt, const char *v, int64_t sv, int64_t ldv,
                                      int64_t rows, int64_t cols, char *c, int64_t sc,
                                      int64_t ldc, int64_t batch) {
  int es = elsize(dt);
  int64_t per = rows * cols;
  GRID_LOOP(batch * per) {
    int64_t b = lin / per, e = lin % per, r = e % rows, q = e / rows;
    char *d = c + (b * sc + q + r * ldc) * es;
    copy_n(d, v + (b * sv + r + q * ldv) * es, es);
    if (dt == C64) ((float *)d)[1] = -((float *)d)[1];
    else if (dt == C128) ((double *)d)[1] = -((double *)d)[1];
  }
}

}  // namespace

extern "C" int emcu_la_piv32to64(const int32_t *in, int64_t *out, int64_t n, void *stream) {
  if (n <= 0) return 0;
  piv32to64_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(in, out, n);
  return (int)cudaGetLastError();
}

extern "C" int emcu_la_piv64to32(const int64_t *in, int32_t *out, int64_t n, void *stream) {
  if (n <= 0) return 0;
  piv64to32_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(in, out, n);
  return (int)cudaGetLastError();
}

extern "C" int emcu_la_eye(int dt, void *a, int64_t batch, int64_t rows, int64_t cols, int64_t lda,
                           int64_t sa, void *stream) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return 0;
  pattern_kernel<<<blocks_for(batch * rows * cols), 256, 0, (cudaStream_t)stream>>>(
      dt, (char *)a, batch, rows, cols, lda, sa, EYE);
  return (int)cudaGetLastError();
}

extern "C" int emcu_la_zero_triangle(int dt, void *a, int64_t batch, int64_t n, int64_t lda,
                                     int64_t sa, int zero_lower, void *stream) {
  if (batch <= 0 || n <= 1) return 0;
  pattern_kernel<<<blocks_for(batch * n * n), 256, 0, (cudaStream_t)stream>>>(
      dt, (char *)a, batch, n, n, lda, sa, zero_lower ? ZERO_LOWER : ZERO_UPPER);
  return (int)cudaGetLastError();
}

extern "C" int emcu_la_conj_transpose(int dt, const void *v, int64_t sv, int64_t ldv, int64_t rows,
                                      int64_t cols, void *c, int64_t sc, int64_t ldc, int64_t batch,
                                      void *stream) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return 0;
  conj_transpose_kernel<<<blocks_for(batch * rows * cols), 256, 0, (cudaStream_t)stream>>>(
      dt, (const char *)v, sv, ldv, rows, cols, (char *)c, sc, ldc, batch);
  return (int)cudaGetLastError();
}
