// cuda/complex.cu -- the complex family's elementwise kernels (core/
// kern_cplx.h, the CPU's cpu/complex.c) and the scaling the FFT's norm
// needs after cuFFT (cuda/fft.c). Arithmetic on thrust::complex (CCCL, in
// the CUDA Toolkit): its functions follow C99's Annex G special values as
// the CPU's glibc does, but not bit for bit; the cuda specs compare with
// the CPU's results within tolerances. Division is the exception: thrust's
// has no special-value recovery (1/(0+0j) is nan+nanj there), so cdiv
// below is libgcc's __divdc3 (what the CPU's C99 `/` calls): Smith's
// algorithm, then Annex G's infinities and zeros where it gave NaN+iNaN.
//
// COMPILED ONLY: no GPU has run this file.
#include "cuda/cu_iface.h"
#include "cuda/cu_common.cuh"

#include <thrust/complex.h>

namespace {

// parts are loaded one by one: an element's address is a multiple of its
// value size, not necessarily of the complex type's alignment
template <typename V>
__device__ inline thrust::complex<V> cload(const char *p) {
  const V *v = (const V *)p;
  return thrust::complex<V>(v[0], v[1]);
}
template <typename V>
__device__ inline void cstore(char *p, thrust::complex<V> z) {
  V *v = (V *)p;
  v[0] = z.real();
  v[1] = z.imag();
}

// x / y as libgcc's __divdc3 / __divsc3 (C99 Annex G special values)
template <typename V>
__device__ inline thrust::complex<V> cdiv(thrust::complex<V> x, thrust::complex<V> y) {
  V a = x.real(), b = x.imag(), c = y.real(), d = y.imag(), re, im;
  if (fabs(c) < fabs(d)) {
    V ratio = c / d, denom = c * ratio + d;
    re = (a * ratio + b) / denom;
    im = (b * ratio - a) / denom;
  } else {
    V ratio = d / c, denom = d * ratio + c;
    re = (b * ratio + a) / denom;
    im = (b - a * ratio) / denom;
  }
  if (isnan(re) && isnan(im)) {
    const V inf = (V)INFINITY;
    if (c == 0 && d == 0 && (!isnan(a) || !isnan(b))) {
      re = copysign(inf, c) * a;
      im = copysign(inf, c) * b;
    } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
      a = copysign(isinf(a) ? (V)1 : (V)0, a);
      b = copysign(isinf(b) ? (V)1 : (V)0, b);
      re = inf * (a * c + b * d);
      im = inf * (b * c - a * d);
    } else if ((isinf(c) || isinf(d)) && isfinite(a) && isfinite(b)) {
      c = copysign(isinf(c) ? (V)1 : (V)0, c);
      d = copysign(isinf(d) ? (V)1 : (V)0, d);
      re = (V)0 * (a * c + b * d);
      im = (V)0 * (b * c - a * d);
    }
  }
  return thrust::complex<V>(re, im);
}

template <typename V, typename I>
__global__ void cx_kernel(emcu_geom g, int op, V al) {
  typedef thrust::complex<V> C;
  const bool binary = op <= EMCU_CX_NE;
  GRID_STRIDE(I, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<I>(g, lin, off);
    char *o = g.data[0] + off[0];
    const C x = cload<V>(g.data[1] + off[1]);
    const C y = binary ? cload<V>(g.data[2] + off[2]) : C(0, 0);
    switch (op) {
      case EMCU_CX_ADD: cstore<V>(o, x + al * y); break;
      case EMCU_CX_SUB: cstore<V>(o, x - al * y); break;
      case EMCU_CX_MUL: cstore<V>(o, x * y); break;
      case EMCU_CX_DIV: cstore<V>(o, cdiv(x, y)); break;
      case EMCU_CX_POW: cstore<V>(o, y == C(0, 0) ? C(1, 0) : y == C(1, 0) ? x : thrust::pow(x, y)); break;
      case EMCU_CX_EQ: *(bool *)o = x == y; break;
      case EMCU_CX_NE: *(bool *)o = x != y; break;
      case EMCU_CX_NEG: cstore<V>(o, -x); break;
      case EMCU_CX_ABS: *(V *)o = thrust::abs(x); break;
      case EMCU_CX_ANGLE: *(V *)o = thrust::arg(x); break;
      case EMCU_CX_CONJ: cstore<V>(o, thrust::conj(x)); break;
      case EMCU_CX_SQRT: cstore<V>(o, thrust::sqrt(x)); break;
      case EMCU_CX_RECIPROCAL: cstore<V>(o, cdiv(C(1, 0), x)); break;
      case EMCU_CX_EXP: cstore<V>(o, thrust::exp(x)); break;
      case EMCU_CX_LOG: cstore<V>(o, thrust::log(x)); break;
      case EMCU_CX_SIN: cstore<V>(o, thrust::sin(x)); break;
      case EMCU_CX_COS: cstore<V>(o, thrust::cos(x)); break;
      case EMCU_CX_TANH: cstore<V>(o, thrust::tanh(x)); break;
      case EMCU_CX_ASIN: cstore<V>(o, thrust::asin(x)); break;
      case EMCU_CX_ACOS: cstore<V>(o, thrust::acos(x)); break;
      case EMCU_CX_ATAN: cstore<V>(o, thrust::atan(x)); break;
      case EMCU_CX_ASINH: cstore<V>(o, thrust::asinh(x)); break;
      case EMCU_CX_ACOSH: cstore<V>(o, thrust::acosh(x)); break;
      case EMCU_CX_ATANH: cstore<V>(o, thrust::atanh(x)); break;
      default: cstore<V>(o, x * x); break;  // EMCU_CX_SQUARE
    }
  }
}

template <typename V>
__global__ void scale_kernel(V *p, int64_t n, V f) {
  GRID_LOOP(n) p[lin] *= f;
}

}  // namespace

extern "C" int emcu_cx_ew(int op, int dt, const emcu_geom *g, double alpha, void *stream) {
  if (g->numel == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  const bool small = fits32(g);
  if (dt == C64) {
    if (small) cx_kernel<float, int32_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, op, (float)alpha);
    else cx_kernel<float, int64_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, op, (float)alpha);
  } else {
    if (small) cx_kernel<double, int32_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, op, alpha);
    else cx_kernel<double, int64_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, op, alpha);
  }
  return (int)cudaGetLastError();
}

extern "C" int emcu_scale(int dt, void *data, int64_t n, double fct, void *stream) {
  if (fct == 1) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  int64_t parts = is_complex(dt) ? 2 * n : n;
  if (parts == 0) return 0;
  if (dt == F32 || dt == C64) scale_kernel<float><<<blocks_for(parts), 256, 0, s>>>((float *)data, parts, (float)fct);
  else scale_kernel<double><<<blocks_for(parts), 256, 0, s>>>((double *)data, parts, fct);
  return (int)cudaGetLastError();
}
