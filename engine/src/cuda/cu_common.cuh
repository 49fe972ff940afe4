// cuda/cu_common.cuh -- what every .cu file of the backend shares: the
// dtype codes (em_dtype's values, cu_iface.h), element sizes, loads of any
// dtype as double or int64, raw element copies, and the launch geometry
// (a grid-stride loop over up to 65536 blocks of 256 threads). Included by
// kernels.cu, scan.cu, sort.cu, nn.cu and optim.cu only (nvcc, C++).
#ifndef EMBER_CUDA_CU_COMMON_CUH
#define EMBER_CUDA_CU_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/cu_iface.h"

namespace {

enum { B8, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64, C128 };

__host__ __device__ inline int elsize(int dt) {
  switch (dt) {
    case B8: case U8: case I8: return 1;
    case I16: case F16: case BF16: return 2;
    case I32: case F32: return 4;
    case C128: return 16;
    default: return 8;
  }
}
// real floating point (complex64/complex128 are not: they reach only the
// copy, fill, complex and byte-moving kernels)
__device__ inline bool is_float(int dt) { return dt >= F16 && dt <= F64; }
__host__ __device__ inline bool is_complex(int dt) { return dt == C64 || dt == C128; }

__device__ inline double load_f(int dt, const char *p) {
  switch (dt) {
    case F16: return (double)__half2float(*(const __half *)p);
    case BF16: return (double)__bfloat162float(*(const __nv_bfloat16 *)p);
    case F32: return (double)*(const float *)p;
    default: return *(const double *)p;
  }
}
__device__ inline int64_t load_i(int dt, const char *p) {
  switch (dt) {
    case B8: return *(const bool *)p ? 1 : 0;
    case U8: return *(const uint8_t *)p;
    case I8: return *(const int8_t *)p;
    case I16: return *(const int16_t *)p;
    case I32: return *(const int32_t *)p;
    default: return *(const int64_t *)p;
  }
}

// one element of es bytes (1, 2, 4, 8 or 16), as raw bits; a complex128
// element moves as two 8-byte words (its address is a multiple of 8, not
// necessarily of 16)
__device__ inline void copy_n(char *d, const char *s, int es) {
  switch (es) {
    case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
    case 16:
      ((uint64_t *)d)[0] = ((const uint64_t *)s)[0];
      ((uint64_t *)d)[1] = ((const uint64_t *)s)[1];
      break;
    default: *(uint64_t *)d = *(const uint64_t *)s; break;
  }
}

// the byte offsets of element lin (the iterator's order) in each operand;
// I is int32_t when the count fits, for cheaper divisions
template <typename I>
__device__ inline void offsets(const emcu_geom &g, I lin, int64_t *off) {
  for (int k = 0; k < EMCU_MAX_OPS; k++) off[k] = 0;
  for (int d = 0; d < g.ndim; d++) {
    I sz = (I)g.shape[d];
    I i = lin % sz;
    lin /= sz;
    for (int k = 0; k < g.nops; k++) off[k] += (int64_t)i * g.strides[d][k];
  }
}

// 32-bit element indices when the iteration fits them (cheaper divisions):
// GRID_STRIDE's last step adds the grid's width (at most 65536 x 256 =
// 2^24 threads) to an index below numel, which must not pass INT32_MAX
inline bool fits32(const emcu_geom *g) {
  return g->numel <= (int64_t)INT32_MAX - ((int64_t)65536 * 256);
}

inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

}  // namespace

// the same in index type I (int32_t when fits32)
#define GRID_STRIDE(I, n) \
  for (I lin = (I)(blockIdx.x * blockDim.x + threadIdx.x); lin < (I)(n); lin += (I)(gridDim.x * blockDim.x))

// for (lin = this thread's first position; lin < n; lin += the grid's width)
#define GRID_LOOP(n) \
  for (int64_t lin = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lin < (int64_t)(n); \
       lin += (int64_t)gridDim.x * blockDim.x)

#endif
