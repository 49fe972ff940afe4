// cuda/kernels.cu -- the CUDA backend's kernels (layer one: copies and
// casts, fill, ranges, a subset of the elementwise ops, where). Each is a
// grid-stride loop over an em_iter's geometry (cuda/cu_iface.h): a thread
// turns its linear position into each operand's byte offset (the offset
// calculator: div/mod over the coalesced dims, innermost first), in 32-bit
// arithmetic when the iteration has fewer than 2^31 elements.
//
// Compile time is kept small: the dtype of a copy is a run-time switch (one
// kernel for all 100 casts), the elementwise kernel is one template per
// dtype with the op a run-time switch (uniform across a launch, so no
// divergence). COMPILED ONLY: no GPU has run these yet (docs/cuda.md).
#include "cuda/cu_iface.h"
#include "cuda/cu_common.cuh"
#include "core/special_impl.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <limits>
#include <type_traits>

namespace {

// -- Values of any dtype, with docs/dtypes.md's conversions ------------------

// float -> integer: toward zero, NaN -> 0, saturating
template <typename T>
__device__ inline T sat(double v, T lo, T hi) {
  if (v != v) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (T)v;
}
__device__ inline void store_f(int dt, char *p, double v) {
  switch (dt) {
    case B8: *(bool *)p = v != 0; break;  // NaN is true
    case U8: *(uint8_t *)p = sat<uint8_t>(v, 0, UINT8_MAX); break;
    case I8: *(int8_t *)p = sat<int8_t>(v, INT8_MIN, INT8_MAX); break;
    case I16: *(int16_t *)p = sat<int16_t>(v, INT16_MIN, INT16_MAX); break;
    case I32: *(int32_t *)p = sat<int32_t>(v, INT32_MIN, INT32_MAX); break;
    case I64: *(int64_t *)p = sat<int64_t>(v, INT64_MIN, INT64_MAX); break;
    // through float, as the CPU and PyTorch round (a direct rounding of
    // the double differs near a tie: 1 + 2^-11 + 2^-40)
    case F16: *(__half *)p = __float2half_rn((float)v); break;
    case BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
    case F32: *(float *)p = (float)v; break;
    default: *(double *)p = v; break;
  }
}
__device__ inline void store_i(int dt, char *p, int64_t v) {
  switch (dt) {
    case B8: *(bool *)p = v != 0; break;
    case U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; break;  // integers wrap
    case I8: *(int8_t *)p = (int8_t)(uint64_t)v; break;
    case I16: *(int16_t *)p = (int16_t)(uint64_t)v; break;
    case I32: *(int32_t *)p = (int32_t)(uint64_t)v; break;
    case I64: *(int64_t *)p = v; break;
    case F16: *(__half *)p = __float2half_rn((float)v); break;
    case BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
    case F32: *(float *)p = (float)v; break;  // once: int64 -> float directly
    default: *(double *)p = (double)v; break;
  }
}

// -- copy, fill, ranges ---------------------------------------------------------

template <typename I>
__global__ void copy_kernel(emcu_geom g, int dst, int src) {
  GRID_STRIDE(I, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<I>(g, lin, off);
    const char *s = g.data[1] + off[1];
    char *d = g.data[0] + off[0];
    if (dst == src) {
      // the same dtype moves bytes, as cpu/copy.c's moves (NaN payloads,
      // -0.0 and bool bytes kept)
      copy_n(d, s, elsize(dst));
    } else if (is_complex(dst) || is_complex(src)) {
      // cpu/copy.c's complex casts: a real value becomes (value, 0) (an
      // integer through double, as the CPU loads it), a complex value
      // written to a real dtype keeps its real part, complex64 <->
      // complex128 converts both parts
      double re, im = 0;
      if (src == C64) re = ((const float *)s)[0], im = ((const float *)s)[1];
      else if (src == C128) re = ((const double *)s)[0], im = ((const double *)s)[1];
      else re = is_float(src) ? load_f(src, s) : (double)load_i(src, s);
      if (dst == C64) ((float *)d)[0] = (float)re, ((float *)d)[1] = (float)im;
      else if (dst == C128) ((double *)d)[0] = re, ((double *)d)[1] = im;
      else store_f(dst, d, re);
    } else if (is_float(src)) {
      store_f(dst, d, load_f(src, s));
    } else {
      store_i(dst, d, load_i(src, s));
    }
  }
}

template <typename I>
__global__ void fill_kernel(emcu_geom g, int size, uint64_t v, uint64_t v2) {
  GRID_STRIDE(I, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<I>(g, lin, off);
    char *d = g.data[0] + off[0];
    switch (size) {
      case 1: *(uint8_t *)d = (uint8_t)v; break;
      case 2: *(uint16_t *)d = (uint16_t)v; break;
      case 4: *(uint32_t *)d = (uint32_t)v; break;
      case 16: ((uint64_t *)d)[0] = v, ((uint64_t *)d)[1] = v2; break;  // complex128
      default: *(uint64_t *)d = v; break;
    }
  }
}

__global__ void range_kernel(char *out, int64_t n, int dt, emcu_range r) {
  GRID_STRIDE(int64_t, n) {
    char *d = out + lin * elsize(dt);
    if (r.kind == 0) {
      if (is_float(dt)) store_f(dt, d, fma(r.fstep, (double)lin, r.fstart));
      else store_i(dt, d, (int64_t)((uint64_t)r.istart + (uint64_t)r.istep * (uint64_t)lin));
    } else {
      double v = lin < r.halfway ? fma(r.lstep, (double)lin, r.lstart)
                                 : fma(-r.lstep, (double)(r.steps - 1 - lin), r.lend);
      if (r.kind == 2) v = pow(r.lbase, v);
      store_f(dt, d, v);
    }
  }
}

// -- elementwise ----------------------------------------------------------------

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<__half> { typedef float type; };
template <> struct Acc<__nv_bfloat16> { typedef float type; };

template <typename T> __device__ inline typename Acc<T>::type ld(const char *p) {
  return *(const T *)p;
}
template <> __device__ inline float ld<__half>(const char *p) { return __half2float(*(const __half *)p); }
template <> __device__ inline float ld<__nv_bfloat16>(const char *p) {
  return __bfloat162float(*(const __nv_bfloat16 *)p);
}
template <typename T> __device__ inline void st(char *p, typename Acc<T>::type v) { *(T *)p = (T)v; }
template <> __device__ inline void st<__half>(char *p, float v) { *(__half *)p = __float2half_rn(v); }
template <> __device__ inline void st<__nv_bfloat16>(char *p, float v) {
  *(__nv_bfloat16 *)p = __float2bfloat16_rn(v);
}

template <typename A> __device__ inline A nan_of() { return (A)NAN; }

// The ops of layer two, as cpu/elementwise.c computes them (integers in
// their own type with wrap-around, floats in the compute type A).
__device__ inline int64_t powi64(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b & 1) ? -1 : 1;
    return 0;
  }
  uint64_t r = 1, base = (uint64_t)a;
  while (b) {
    if (b & 1) r *= base;
    base *= base;
    b >>= 1;
  }
  return (int64_t)r;
}
__device__ inline uint64_t mag_u64(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }
__device__ inline uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}
template <typename A>
__device__ inline A round_dec(A x, int64_t d) {
  if (d == 0) return rint(x);
  A q = (A)pow(10.0, (double)(d < 0 ? -d : d));
  return d < 0 ? rint(x / q) * q : rint(x * q) / q;
}

template <typename A>
__device__ inline bool negv(A a) {
  if constexpr (std::is_signed<A>::value) return a < A(0);
  else return false;
}

template <typename A, bool F, bool B>
__device__ inline A ew_more(int op, A a, A b, const emcu_params &p) {
  if constexpr (F) {
    switch (op) {
      case EMCU_DIVTRUNC: return trunc(a / b);
      case EMCU_DIVFLOOR: {  // PyTorch's div_floor_floating
        if (b == 0) return a / b;
        A mod = fmod(a, b), div = (a - mod) / b;
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
        if (div != 0) {
          A r = floor(div);
          if (div - r > A(0.5)) r += 1;
          return r;
        }
        return copysign(A(0), a / b);
      }
      case EMCU_REMAINDER: {
        A m = fmod(a, b);
        return (m != 0 && (b < 0) != (m < 0)) ? m + b : m;
      }
      case EMCU_FMOD: return fmod(a, b);
      case EMCU_POW: return pow(a, b);
      case EMCU_ATAN2: return atan2(a, b);
      case EMCU_SIGN: return (A)((A(0) < a) - (a < A(0)));
      case EMCU_EXP2: return exp2(a);
      case EMCU_EXPM1: return expm1(a);
      case EMCU_LOG2: return log2(a);
      case EMCU_LOG10: return log10(a);
      case EMCU_LOG1P: return log1p(a);
      case EMCU_TAN: return tan(a);
      case EMCU_ASIN: return asin(a);
      case EMCU_ACOS: return acos(a);
      case EMCU_ATAN: return atan(a);
      case EMCU_ASINH: return asinh(a);
      case EMCU_ACOSH: return acosh(a);
      case EMCU_ATANH: return atanh(a);
      case EMCU_SINH: return sinh(a);
      case EMCU_COSH: return cosh(a);
      case EMCU_GELU:
        if (p.i0) return A(0.5) * a * (A(1) + tanh(A(0.7978845608028654) * (a + A(0.044715) * a * a * a)));
        return a * A(0.5) * (A(1) + erf(a * A(0.7071067811865476)));
      case EMCU_SILU: return a / (A(1) + exp(-a));
      case EMCU_SOFTPLUS: return a * (A)p.p0 > (A)p.p1 ? a : log1p(exp(a * (A)p.p0)) / (A)p.p0;
      case EMCU_ERF: return erf(a);
      case EMCU_ERFC: return erfc(a);
      case EMCU_FLOOR: return floor(a);
      case EMCU_CEIL: return ceil(a);
      case EMCU_ROUND: return round_dec(a, p.i0);
      case EMCU_TRUNC: return trunc(a);
      case EMCU_FRAC: return a - trunc(a);
      case EMCU_NAN_TO_NUM: return a != a ? (A)p.p0 : isinf(a) ? (a > 0 ? (A)p.p1 : (A)p.p2) : a;
      case EMCU_XLOGY: return b != b ? b : a == 0 ? A(0) : (A)((double)a * log((double)b));
      case EMCU_XLOG1PY: return b != b ? b : a == 0 ? A(0) : (A)((double)a * log1p((double)b));
      case EMCU_HYPOT: return hypot(a, b);
      case EMCU_COPYSIGN: return copysign(a, b);
      case EMCU_NEXTAFTER: return nextafter(a, b);
      case EMCU_HEAVISIDE: return a == 0 ? b : (A)(a > 0);
      // the special functions: the CPU's series (core/special_impl.h) in
      // double, the result rounded once (as cpu/elementwise.c's SPD)
      case EMCU_ERFINV: return (A)sp_erfinv((double)a);
      case EMCU_LGAMMA: return (A)sp_lgamma((double)a);
      case EMCU_DIGAMMA: return (A)sp_digamma((double)a);
      case EMCU_POLYGAMMA: return (A)sp_polygamma(p.i0, (double)a);
      case EMCU_I0: return (A)sp_i0((double)a);
      case EMCU_I0E: return (A)sp_i0e((double)a);
      case EMCU_I1: return (A)sp_i1((double)a);
      case EMCU_I1E: return (A)sp_i1e((double)a);
      case EMCU_NDTR: return (A)sp_ndtr((double)a);
      case EMCU_NDTRI: return (A)sp_ndtri((double)a);
      case EMCU_LOG_NDTR: return (A)sp_log_ndtr((double)a);
      case EMCU_SINC: return (A)sp_sinc((double)a);
      case EMCU_ENTR: return (A)sp_entr((double)a);
      case EMCU_LOGIT: return (A)sp_logit((double)a, p.flags & 1, p.p0);
      case EMCU_LOGADDEXP: return (A)sp_logaddexp((double)a, (double)b);
      case EMCU_LOGADDEXP2: return (A)sp_logaddexp2((double)a, (double)b);
      case EMCU_ZETA: return (A)sp_zeta((double)a, (double)b);
      case EMCU_GAMMAINC: return (A)sp_igamma((double)a, (double)b, 0);
      case EMCU_GAMMAINCC: return (A)sp_igamma((double)a, (double)b, 1);
      case EMCU_ERFCX: return (A)sp_erfcx((double)a);
      case EMCU_BESSEL_J0: return (A)j0((double)a);
      case EMCU_BESSEL_J1: return (A)j1((double)a);
      case EMCU_BESSEL_Y0: return (A)y0((double)a);
      case EMCU_BESSEL_Y1: return (A)y1((double)a);
      case EMCU_BESSEL_K0: return (A)sp_bessel_k(0, 0, (double)a);
      case EMCU_BESSEL_K1: return (A)sp_bessel_k(1, 0, (double)a);
      case EMCU_BESSEL_K0E: return (A)sp_bessel_k(0, 1, (double)a);
      case EMCU_BESSEL_K1E: return (A)sp_bessel_k(1, 1, (double)a);
      case EMCU_AIRY_AI: return (A)sp_airy_ai((double)a);
      case EMCU_SPHERICAL_J0: return (A)sp_spherical_j0((double)a);
      case EMCU_CHEB_T: return (A)sp_poly(0, (double)a, (double)b);
      case EMCU_CHEB_U: return (A)sp_poly(1, (double)a, (double)b);
      case EMCU_CHEB_V: return (A)sp_poly(2, (double)a, (double)b);
      case EMCU_CHEB_W: return (A)sp_poly(3, (double)a, (double)b);
      case EMCU_SCHEB_T: return (A)sp_poly(4, (double)a, (double)b);
      case EMCU_SCHEB_U: return (A)sp_poly(5, (double)a, (double)b);
      case EMCU_SCHEB_V: return (A)sp_poly(6, (double)a, (double)b);
      case EMCU_SCHEB_W: return (A)sp_poly(7, (double)a, (double)b);
      case EMCU_HERMITE_H: return (A)sp_poly(8, (double)a, (double)b);
      case EMCU_HERMITE_HE: return (A)sp_poly(9, (double)a, (double)b);
      case EMCU_LAGUERRE_L: return (A)sp_poly(10, (double)a, (double)b);
      case EMCU_LEGENDRE_P: return (A)sp_poly(11, (double)a, (double)b);
      default: return A(0);
    }
  } else if constexpr (B) {
    switch (op) {
      case EMCU_SIGN: case EMCU_NAN_TO_NUM: case EMCU_FLOOR: case EMCU_CEIL: case EMCU_ROUND:
      case EMCU_TRUNC:
        return a;
      case EMCU_HEAVISIDE: return a == 0 ? b : true;
      default: return a;
    }
  } else {
    constexpr bool S = std::is_signed<A>::value;
    constexpr int W = 8 * (int)sizeof(A);
    switch (op) {
      case EMCU_DIVTRUNC:
        if (S && b == (A)-1) return (A)((uint64_t)0 - (uint64_t)(int64_t)a);
        return (A)(a / b);
      case EMCU_DIVFLOOR:
        if (S && b == (A)-1) return (A)((uint64_t)0 - (uint64_t)(int64_t)a);
        return (negv(a) != negv(b) && a % b != 0) ? (A)(a / b - 1) : (A)(a / b);
      case EMCU_REMAINDER:
        if (S && b == (A)-1) return A(0);
        return (a % b != 0 && (negv((A)(a % b)) != negv(b))) ? (A)(a % b + b) : (A)(a % b);
      case EMCU_FMOD:
        if (S && b == (A)-1) return A(0);
        return (A)(a % b);
      case EMCU_POW: return (A)powi64((int64_t)a, (int64_t)b);
      case EMCU_LSHIFT:
        return ((int64_t)b < 0 || (int64_t)b >= W) ? A(0) : (A)((uint64_t)(int64_t)a << (int64_t)b);
      case EMCU_RSHIFT:
        return ((int64_t)b < 0 || (int64_t)b >= W) ? (A)(negv(a) ? -1 : 0) : (A)(a >> (int64_t)b);
      case EMCU_SIGN: return (A)((a > 0) - negv(a));
      case EMCU_FLOOR: case EMCU_CEIL: case EMCU_ROUND: case EMCU_TRUNC: case EMCU_NAN_TO_NUM:
        return a;
      case EMCU_GCD: return (A)gcd_u64(mag_u64((int64_t)a), mag_u64((int64_t)b));
      case EMCU_LCM: {
        uint64_t g = gcd_u64(mag_u64((int64_t)a), mag_u64((int64_t)b));
        return g == 0 ? A(0) : (A)(mag_u64((int64_t)a) / g * mag_u64((int64_t)b));
      }
      case EMCU_HEAVISIDE: return a == 0 ? b : (A)(a > 0);
      default: return A(0);
    }
  }
}

__global__ void any_zero_kernel(emcu_geom g, int es, int *flag) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    const char *x = g.data[0] + off[0];
    bool z;
    switch (es) {
      case 1: z = *(const uint8_t *)x == 0; break;
      case 2: z = *(const uint16_t *)x == 0; break;
      case 4: z = *(const uint32_t *)x == 0; break;
      default: z = *(const uint64_t *)x == 0; break;
    }
    if (z) *flag = 1;
  }
}

template <typename T>
__global__ void ew_kernel(int op, emcu_geom g, emcu_params p) {
  typedef typename Acc<T>::type A;
  constexpr bool F = std::is_floating_point<A>::value;
  constexpr bool B = std::is_same<T, bool>::value;
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    char *o = g.data[0] + off[0];
    const char *p1 = g.data[1] + off[1];
    if (op == EMCU_WHERE) {
      bool c = *(const bool *)p1;
      *(T *)o = c ? *(const T *)(g.data[2] + off[2]) : *(const T *)(g.data[3] + off[3]);
      continue;
    }
    A a = ld<T>(p1);
    A b = g.nops > 2 ? ld<T>(g.data[2] + off[2]) : A(0);
    A c = g.nops > 3 ? ld<T>(g.data[3] + off[3]) : A(0);
    A r = A(0);
    switch (op) {
      // comparisons and logic: bool outputs
      case EMCU_EQ: *(bool *)o = a == b; continue;
      case EMCU_NE: *(bool *)o = a != b; continue;
      case EMCU_LT: *(bool *)o = a < b; continue;
      case EMCU_LE: *(bool *)o = a <= b; continue;
      case EMCU_GT: *(bool *)o = a > b; continue;
      case EMCU_GE: *(bool *)o = a >= b; continue;
      case EMCU_LAND: *(bool *)o = a && b; continue;
      case EMCU_LOR: *(bool *)o = a || b; continue;
      case EMCU_LXOR: *(bool *)o = (bool)a != (bool)b; continue;
      case EMCU_LNOT: *(bool *)o = !a; continue;
      case EMCU_ISNAN: *(bool *)o = F ? a != a : false; continue;
      case EMCU_ISINF:
        if constexpr (F) *(bool *)o = isinf(a); else *(bool *)o = false;
        continue;
      case EMCU_ISFINITE:
        if constexpr (F) *(bool *)o = isfinite(a); else *(bool *)o = true;
        continue;
      case EMCU_ADD:
        if constexpr (B) r = a || (p.ai != 0 && b);
        else if constexpr (F) r = a + (A)p.af * b;
        else r = (A)((uint64_t)(int64_t)a + (uint64_t)p.ai * (uint64_t)(int64_t)b);
        break;
      case EMCU_MUL:
        if constexpr (B) r = a && b;
        else if constexpr (F) r = a * b;
        else r = (A)((uint64_t)(int64_t)a * (uint64_t)(int64_t)b);
        break;
      case EMCU_DIV: r = a / b; break;
      case EMCU_MAXIMUM:
        if constexpr (F) r = (a != a || b != b) ? nan_of<A>() : (a > b ? a : b);
        else r = a > b ? a : b;
        break;
      case EMCU_MINIMUM:
        if constexpr (F) r = (a != a || b != b) ? nan_of<A>() : (a < b ? a : b);
        else r = a < b ? a : b;
        break;
      case EMCU_BAND:
        if constexpr (!F) r = (A)(a & b);
        break;
      case EMCU_BOR:
        if constexpr (!F) r = (A)(a | b);
        break;
      case EMCU_BXOR:
        if constexpr (!F) r = (A)(a ^ b);
        break;
      case EMCU_BNOT:
        if constexpr (B) r = !a;
        else if constexpr (!F) r = (A)~a;
        break;
      case EMCU_NEG:
        if constexpr (!B) r = (A)(A(0) - a);
        break;
      case EMCU_ABS:
        if constexpr (F) r = a < A(0) ? -a : (a == A(0) ? A(0) : a);
        else if constexpr (std::is_signed<A>::value) r = a < A(0) ? (A)(A(0) - a) : a;
        else r = a;
        break;
      case EMCU_SQUARE: r = (A)(a * a); break;
      case EMCU_RELU: r = (a > A(0) || a == A(0) || a != a) ? a : A(0); break;  // -0.0 and NaN stay, as the CPU and torch
      case EMCU_SQRT:
        if constexpr (F) r = sqrt(a);
        break;
      case EMCU_RSQRT:
        if constexpr (F) r = rsqrt(a);
        break;
      case EMCU_RECIPROCAL:
        if constexpr (F) r = A(1) / a;
        break;
      case EMCU_EXP:
        if constexpr (F) r = exp(a);
        break;
      case EMCU_LOG:
        if constexpr (F) r = log(a);
        break;
      case EMCU_SIN:
        if constexpr (F) r = sin(a);
        break;
      case EMCU_COS:
        if constexpr (F) r = cos(a);
        break;
      case EMCU_TANH:
        if constexpr (F) r = tanh(a);
        break;
      case EMCU_SIGMOID:
        if constexpr (F) r = A(1) / (A(1) + exp(-a));
        break;
      case EMCU_CLAMP:  // as cpu/elementwise.c: a NaN bound or value gives NaN
        r = a;
        if (p.flags & 1) r = (r != r || b != b) ? (A)(r + b) : (r < b ? b : r);
        if (p.flags & 2) r = (r != r || c != c) ? (A)(r + c) : (c < r ? c : r);
        break;
      case EMCU_LERP:
        if constexpr (F) r = (c < A(0.5) && c > A(-0.5)) ? a + c * (b - a) : b - (b - a) * (A(1) - c);
        break;
      default:
        r = ew_more<A, F, B>(op, a, b, p);
        break;
    }
    st<T>(o, r);
  }
}

template <typename T>
int launch_ew(int op, const emcu_geom *g, const emcu_params *p, void *stream) {
  ew_kernel<T><<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(op, *g, *p);
  return (int)cudaGetLastError();
}

}  // namespace

namespace {

// -- reductions over dims (emcu_red; core/kern_reduce.h's reduce entry) --------
// One block per output (a grid-stride loop over the outputs), 256 threads
// each folding a strided share of the output's inputs into a private state,
// then a tree in shared memory in a fixed order: the result does not depend
// on timing. float inputs fold in double, integer ones in int64 (sums and
// products wrap modulo 2^64, as the CPU's). var keeps (count, mean, M2) per
// thread and merges them by Chan's formula, as the CPU's pairwise path.
// A few outputs over many inputs (a full sum) still get one block each:
// splitting those across blocks is the next step for speed.

enum { R_SUM, R_PROD, R_MEAN, R_AMAX, R_AMIN, R_ALL, R_ANY, R_NANSUM, R_NANMEAN, R_NNZ, R_VAR, R_NORM };

struct rstate {
  double a, b, c;
  int64_t i;
};
static_assert(sizeof(rstate) == EMCU_RSTATE_BYTES, "cu_iface.h: EMCU_RSTATE_BYTES");

__device__ inline double fmax_nan(double a, double x) { return (a != a || a >= x) ? a : x; }
__device__ inline double fmin_nan(double a, double x) { return (a != a || a <= x) ? a : x; }

__device__ inline void r_init(const emcu_red &r, rstate &s) {
  s.a = s.b = s.c = 0;
  s.i = 0;
  switch (r.kind) {
    case R_PROD: s.a = 1; s.i = 1; break;
    case R_AMAX: s.a = -INFINITY; s.i = INT64_MIN; break;
    case R_AMIN: s.a = INFINITY; s.i = INT64_MAX; break;
    case R_ALL: s.i = 1; break;
    case R_NORM: s.a = r.p == -INFINITY ? INFINITY : 0; break;
    default: break;
  }
}

__device__ inline void r_fold(const emcu_red &r, rstate &s, const char *p) {
  if (r.acc_int) {
    int64_t v = is_float(r.dt) ? (load_f(r.dt, p) != 0) : load_i(r.dt, p);
    switch (r.kind) {
      case R_SUM: s.i = (int64_t)((uint64_t)s.i + (uint64_t)v); break;
      case R_PROD: s.i = (int64_t)((uint64_t)s.i * (uint64_t)v); break;
      case R_AMAX: s.i = v > s.i ? v : s.i; break;
      case R_AMIN: s.i = v < s.i ? v : s.i; break;
      case R_ALL: s.i = s.i && v != 0; break;
      case R_ANY: s.i = s.i || v != 0; break;
      default: s.i += v != 0; break;  // count_nonzero
    }
    return;
  }
  double x = is_float(r.dt) ? load_f(r.dt, p) : (double)load_i(r.dt, p);
  switch (r.kind) {
    case R_PROD: s.a *= x; break;
    case R_AMAX: s.a = fmax_nan(s.a, x); break;
    case R_AMIN: s.a = fmin_nan(s.a, x); break;
    case R_NANSUM: if (x == x) s.a += x; break;
    case R_NANMEAN: if (x == x) { s.a += x; s.b += 1; } break;
    case R_VAR: {  // Welford: a count, b mean, c M2
      s.a += 1;
      double d = x - s.b;
      s.b += d / s.a;
      s.c += d * (x - s.b);
      break;
    }
    case R_NORM: {
      double q = r.p, ax = fabs(x);
      if (q == INFINITY) s.a = fmax_nan(s.a, ax);
      else if (q == -INFINITY) s.a = fmin_nan(s.a, ax);
      else if (q == 0) s.a += ax != 0;
      else if (q == 1) s.a += ax;
      else if (q == 2) s.a += ax * ax;
      else s.a += pow(ax, q);
      break;
    }
    default: s.a += x; break;  // sum, mean
  }
}

__device__ inline void r_merge(const emcu_red &r, rstate &s, const rstate &o) {
  if (r.acc_int) {
    switch (r.kind) {
      case R_PROD: s.i = (int64_t)((uint64_t)s.i * (uint64_t)o.i); break;
      case R_AMAX: s.i = o.i > s.i ? o.i : s.i; break;
      case R_AMIN: s.i = o.i < s.i ? o.i : s.i; break;
      case R_ALL: s.i = s.i && o.i; break;
      case R_ANY: s.i = s.i || o.i; break;
      default: s.i = (int64_t)((uint64_t)s.i + (uint64_t)o.i); break;
    }
    return;
  }
  switch (r.kind) {
    case R_PROD: s.a *= o.a; break;
    case R_AMAX: s.a = fmax_nan(s.a, o.a); break;
    case R_AMIN: s.a = fmin_nan(s.a, o.a); break;
    case R_NANMEAN: s.a += o.a; s.b += o.b; break;
    case R_VAR: {
      double tot = s.a + o.a;
      if (tot == 0) break;
      double d = o.b - s.b;
      s.b += d * o.a / tot;
      s.c += o.c + d * d * s.a * o.a / tot;
      s.a = tot;
      break;
    }
    case R_NORM:
      if (r.p == INFINITY) s.a = fmax_nan(s.a, o.a);
      else if (r.p == -INFINITY) s.a = fmin_nan(s.a, o.a);
      else s.a += o.a;
      break;
    default: s.a += o.a; break;
  }
}

// output o's finished values from its state (mean divided, var/std,
// norm's root), as the CPU's entry leaves them
__device__ inline void r_finish(const emcu_red &r, int64_t o, const rstate &t) {
  if (r.acc_int) {
    ((int64_t *)r.acc)[o] = t.i;
    return;
  }
  double *a = (double *)r.acc + o * r.width;
  double cnt = (double)r.count;
  switch (r.kind) {
    case R_MEAN: a[0] = t.a / cnt; break;
    case R_NANMEAN: a[0] = t.a / t.b; a[1] = t.b; break;
    case R_VAR: {
      double den = cnt - r.correction > 0 ? cnt - r.correction : 0;
      double var = t.c / den;
      a[0] = r.take_sqrt ? sqrt(var) : var;
      a[1] = r.count == 0 ? NAN : t.b;
      a[2] = t.c;
      break;
    }
    case R_NORM: {
      double q = r.p;
      a[0] = q == 2 ? sqrt(t.a) : (q != 1 && q != 0 && !isinf(q)) ? pow(t.a, 1.0 / q) : t.a;
      break;
    }
    default: a[0] = t.a; break;
  }
}

// input j of the output whose first input is at base
__device__ inline double r_load(const emcu_red &r, const char *p) {
  return is_float(r.dt) ? load_f(r.dt, p) : (double)load_i(r.dt, p);
}
__device__ inline const char *r_at(const emcu_red &r, const char *base, int64_t j) {
  int64_t off = 0;
  for (int d = 0; d < r.rndim; d++) {
    off += (j % r.rshape[d]) * r.rstride[d];
    j /= r.rshape[d];
  }
  return base + off;
}

// the state of output o's inputs j0 <= j < j1 (a fixed-order tree over the
// block's threads); thread 0 gets it
__device__ inline rstate r_block(const emcu_red &r, rstate *sh, const char *base, int64_t j0,
                                 int64_t j1) {
  rstate s;
  r_init(r, s);
  for (int64_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) r_fold(r, s, r_at(r, base, j));
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) r_merge(r, sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  rstate t = sh[0];
  __syncthreads();
  return t;
}

// the first input of output o
__device__ inline const char *r_base(const emcu_red &r, int64_t o) {
  const char *base = r.in;
  for (int d = 0; d < r.ondim; d++) {
    base += (o % r.oshape[d]) * r.ostride[d];
    o /= r.oshape[d];
  }
  return base;
}

// a block per output
__global__ void reduce_kernel(emcu_red r) {
  __shared__ rstate sh[256];
  for (int64_t o = blockIdx.x; o < r.nout; o += gridDim.x) {
    rstate t = r_block(r, sh, r_base(r, o), 0, r.count);
    if (threadIdx.x == 0) r_finish(r, o, t);
  }
}

// few outputs over many inputs: G blocks per output, each over its own
// chunk of the inputs (parts[o G + g]), then a thread per output merges its
// G parts in order -- a fixed split, so the result does not depend on timing
__global__ void reduce_part_kernel(emcu_red r, int64_t G, rstate *parts) {
  __shared__ rstate sh[256];
  const int64_t chunk = (r.count + G - 1) / G;
  for (int64_t b = blockIdx.x; b < r.nout * G; b += gridDim.x) {
    const int64_t o = b / G, g = b % G;
    const int64_t j0 = g * chunk, j1 = j0 + chunk < r.count ? j0 + chunk : r.count;
    rstate t = r_block(r, sh, r_base(r, o), j0, j1);
    if (threadIdx.x == 0) parts[b] = t;
  }
}
__global__ void reduce_final_kernel(emcu_red r, int64_t G, const rstate *parts) {
  GRID_STRIDE(int64_t, r.nout) {
    rstate t = parts[lin * G];
    for (int64_t g = 1; g < G; g++) r_merge(r, t, parts[lin * G + g]);
    r_finish(r, lin, t);
  }
}

// -- logsumexp: one block per output, the max then the shifted sum of exps --


// a fixed-order tree over the block's 256 values (max with NaN kept, or sum)
__device__ inline double block_fold(double *sh, double v, bool is_max) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) {
      double a = sh[threadIdx.x], b = sh[threadIdx.x + w];
      sh[threadIdx.x] = is_max ? fmax_nan(a, b) : a + b;
    }
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

__global__ void lse_kernel(emcu_red r, double *shift) {
  __shared__ double sh[256];
  for (int64_t o = blockIdx.x; o < r.nout; o += gridDim.x) {
    const char *base = r_base(r, o);
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < r.count; j += blockDim.x) m = fmax_nan(m, r_load(r, r_at(r, base, j)));
    m = block_fold(sh, m, true);
    if (isinf(m)) m = 0;  // as PyTorch: an infinite max shifts by 0
    double s = 0;
    for (int64_t j = threadIdx.x; j < r.count; j += blockDim.x) s += exp(r_load(r, r_at(r, base, j)) - m);
    s = block_fold(sh, s, false);
    if (threadIdx.x == 0) {
      shift[o] = m;
      ((double *)r.acc)[o] = log(s) + m;
    }
  }
}

// -- lane ops (emcu_lanes): max/min with indices and softmax a block per
// lane (fixed-order trees); cumulative sums/products and running extremes a
// thread per lane (a serial scan: CUB's block scans are the next step) -----

__device__ inline void lane_bases(const emcu_lanes &l, int64_t lane, char **b) {
  for (int k = 0; k < 3; k++) b[k] = l.data[k];
  for (int d = 0; d < l.ndim; d++) {
    int64_t i = lane % l.shape[d];
    lane /= l.shape[d];
    for (int k = 0; k < 3; k++) b[k] += i * l.stride[d][k];
  }
}
// (value, position) of the best so far: NaN is the extreme (the first NaN
// wins), equal values keep the first position; j < 0 is empty
struct best_t {
  double v;
  int64_t iv, j;
};
__device__ inline bool beats(bool fl, bool is_min, const best_t &o, const best_t &s) {
  if (o.j < 0) return false;
  if (s.j < 0) return true;
  if (fl) {
    bool on = o.v != o.v, sn = s.v != s.v;
    if (on || sn) return on && (!sn || o.j < s.j);
    if (o.v == s.v) return o.j < s.j;
    return is_min ? o.v < s.v : o.v > s.v;
  }
  if (o.iv == s.iv) return o.j < s.j;
  return is_min ? o.iv < s.iv : o.iv > s.iv;
}

__global__ void lane_block_kernel(emcu_lanes l) {
  __shared__ best_t shb[256];
  __shared__ double sh[256];
  const bool fl = is_float(l.dt);
  const int es = elsize(l.dt);
  for (int64_t lane = blockIdx.x; lane < l.nlanes; lane += gridDim.x) {
    char *b[3];
    lane_bases(l, lane, b);
    const char *x = b[2];
    if (l.kind == EMCU_LANE_MAX) {
      best_t s = {0, 0, -1};
      for (int64_t j = threadIdx.x; j < l.len; j += blockDim.x) {
        const char *p = x + j * l.lstride[2];
        best_t c = {fl ? load_f(l.dt, p) : 0, fl ? 0 : load_i(l.dt, p), j};
        if (beats(fl, l.flag, c, s)) s = c;
      }
      shb[threadIdx.x] = s;
      __syncthreads();
      for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w && beats(fl, l.flag, shb[threadIdx.x + w], shb[threadIdx.x]))
          shb[threadIdx.x] = shb[threadIdx.x + w];
        __syncthreads();
      }
      if (threadIdx.x == 0) {
        int64_t j = shb[0].j;
        copy_n(b[0], x + j * l.lstride[2], es);
        *(int64_t *)b[1] = j + 1;
      }
      __syncthreads();
      continue;
    }
    // softmax / log_softmax, in double
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < l.len; j += blockDim.x) {
      const char *p = x + j * l.lstride[2];
      m = fmax_nan(m, fl ? load_f(l.dt, p) : (double)load_i(l.dt, p));
    }
    m = block_fold(sh, m, true);
    if (isinf(m)) m = m > 0 ? m : 0;
    double s = 0;
    for (int64_t j = threadIdx.x; j < l.len; j += blockDim.x) {
      const char *p = x + j * l.lstride[2];
      s += exp((fl ? load_f(l.dt, p) : (double)load_i(l.dt, p)) - m);
    }
    s = block_fold(sh, s, false);
    double ls = log(s);
    for (int64_t j = threadIdx.x; j < l.len; j += blockDim.x) {
      const char *p = x + j * l.lstride[2];
      double v = (fl ? load_f(l.dt, p) : (double)load_i(l.dt, p)) - m;
      store_f(l.odt, b[0] + j * l.lstride[0], l.flag ? v - ls : exp(v) / s);
    }
  }
}

__global__ void lane_scan_kernel(emcu_lanes l) {
  const bool fl = is_float(l.dt);
  const int es = elsize(l.dt);
  for (int64_t lane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lane < l.nlanes;
       lane += (int64_t)gridDim.x * blockDim.x) {
    char *b[3];
    lane_bases(l, lane, b);
    const char *x = b[2];
    if (l.kind == EMCU_LANE_CUM) {
      double a = l.flag ? 1 : 0;
      int64_t ai = l.flag ? 1 : 0;
      for (int64_t j = 0; j < l.len; j++) {
        const char *p = x + j * l.lstride[2];
        char *o = b[0] + j * l.lstride[0];
        if (fl) {
          double v = load_f(l.dt, p);
          a = l.flag ? a * v : a + v;
          store_f(l.odt, o, a);
        } else {  // integers wrap modulo 2^64, then to the dtype
          uint64_t v = (uint64_t)load_i(l.dt, p);
          ai = (int64_t)(l.flag ? (uint64_t)ai * v : (uint64_t)ai + v);
          store_i(l.odt, o, ai);
        }
      }
      continue;
    }
    // cummax / cummin: the last of equal values; every NaN takes over
    int64_t best = 0;
    double bv = 0;
    int64_t bi = 0;
    for (int64_t j = 0; j < l.len; j++) {
      const char *p = x + j * l.lstride[2];
      bool take = j == 0;
      if (fl) {
        double a = load_f(l.dt, p);
        if (!take) take = a != a || (bv == bv && (l.flag ? a <= bv : a >= bv));
        if (take) bv = a;
      } else {
        int64_t a = load_i(l.dt, p);
        if (!take) take = l.flag ? a <= bi : a >= bi;
        if (take) bi = a;
      }
      if (take) best = j;
      copy_n(b[0] + j * l.lstride[0], x + best * l.lstride[2], es);
      *(int64_t *)(b[1] + j * l.lstride[1]) = best + 1;
    }
  }
}

// cumsum/cumprod of few long lanes: a block per lane, over tiles of 256 x 4
// elements: each thread scans its 4 in order, thread 0 scans the 256
// thread totals in order, and the tile's carry goes on to the next. In
// double (integers: modulo 2^64, exact as the serial scan), the sums in a
// fixed order: the same result every run, the last bits of a float sum
// may differ from the serial scan's.
enum { SCAN_ITEMS = 4 };
template <typename V>
__device__ inline V scan_op(bool prod, V a, V b) { return prod ? a * b : a + b; }
template <typename V>
__device__ inline V scan_load(const emcu_lanes &l, const char *p) {
  if constexpr (std::is_same<V, double>::value) return load_f(l.dt, p);
  else return (V)(uint64_t)load_i(l.dt, p);
}
template <typename V>
__device__ inline void scan_store(const emcu_lanes &l, char *o, V v) {
  if constexpr (std::is_same<V, double>::value) store_f(l.odt, o, v);
  else store_i(l.odt, o, (int64_t)v);
}
template <typename V>
__device__ void lane_scan_block(const emcu_lanes &l, char *const *b, V *sh) {
  const bool prod = l.flag != 0;
  const V id = prod ? V(1) : V(0);
  const int64_t tile = (int64_t)blockDim.x * SCAN_ITEMS;
  V carry = id;
  for (int64_t t0 = 0; t0 < l.len; t0 += tile) {
    const int64_t j0 = t0 + (int64_t)threadIdx.x * SCAN_ITEMS;
    V run[SCAN_ITEMS];
    V acc = id;
    for (int k = 0; k < SCAN_ITEMS; k++) {
      if (j0 + k < l.len) acc = scan_op(prod, acc, scan_load<V>(l, b[2] + (j0 + k) * l.lstride[2]));
      run[k] = acc;
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {  // exclusive prefixes of the thread totals, in order
      V c = carry;
      for (unsigned i = 0; i < blockDim.x; i++) {
        V v = sh[i];
        sh[i] = c;
        c = scan_op(prod, c, v);
      }
      sh[blockDim.x] = c;
    }
    __syncthreads();
    const V before = sh[threadIdx.x];
    for (int k = 0; k < SCAN_ITEMS; k++)
      if (j0 + k < l.len) scan_store<V>(l, b[0] + (j0 + k) * l.lstride[0], scan_op(prod, before, run[k]));
    carry = sh[blockDim.x];
    __syncthreads();
  }
}
__global__ void lane_scan_block_kernel(emcu_lanes l) {
  __shared__ double shd[257];
  __shared__ uint64_t shi[257];
  const bool fl = is_float(l.dt);
  for (int64_t lane = blockIdx.x; lane < l.nlanes; lane += gridDim.x) {
    char *b[3];
    lane_bases(l, lane, b);
    if (fl) lane_scan_block<double>(l, b, shd);
    else lane_scan_block<uint64_t>(l, b, shi);
  }
}

// -- comparisons ----------------------------------------------------------------

__device__ inline bool close1(double x, double y, double rtol, double atol, int equal_nan) {
  if (x == y) return true;
  if (x != x || y != y) return equal_nan && x != x && y != y;
  if (isinf(x) || isinf(y)) return false;
  return fabs(x - y) <= atol + rtol * fabs(y);
}

__global__ void isclose_kernel(emcu_geom g, int dt, double rtol, double atol, int equal_nan) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    const char *a = g.data[1] + off[1], *b = g.data[2] + off[2];
    bool r;
    if (is_float(dt)) {
      r = close1(load_f(dt, a), load_f(dt, b), rtol, atol, equal_nan);
    } else {
      int64_t x = load_i(dt, a), y = load_i(dt, b);
      /* |x - y| exactly in uint64 (past 2^53 the doubles' difference is lost) */
      uint64_t d = x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
      r = x == y || (double)d <= atol + rtol * fabs((double)y);
    }
    *(bool *)(g.data[0] + off[0]) = r;
  }
}

__global__ void unequal_kernel(emcu_geom g, int da, int db, int *flag) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    const char *a = g.data[0] + off[0], *b = g.data[1] + off[1];
    bool ne = (!is_float(da) && !is_float(db))
                  ? load_i(da, a) != load_i(db, b)
                  : !((is_float(da) ? load_f(da, a) : (double)load_i(da, a)) ==
                      (is_float(db) ? load_f(db, b) : (double)load_i(db, b)));
    if (ne) *flag = 1;  // every writer stores the same value
  }
}

__global__ void any_false_kernel(const bool *p, int64_t n, int *flag) {
  GRID_STRIDE(int64_t, n) {
    if (!p[lin]) *flag = 1;
  }
}

}  // namespace

extern "C" int64_t emcu_reduce_parts(const emcu_red *r) {
  // split when a block per output leaves the GPU mostly idle and each
  // output has many inputs: about 1024 blocks in all, 16K inputs at least
  if (r->nout == 0 || r->nout >= 512 || r->count < 65536) return 1;
  int64_t g = (r->count + 16383) / 16384, cap = 1024 / r->nout;
  if (cap < 2) cap = 2;
  return g < cap ? g : cap;
}

extern "C" int emcu_reduce(const emcu_red *r, int64_t parts, void *scratch, void *stream) {
  if (r->nout == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (parts > 1) {
    int64_t nb = r->nout * parts;
    unsigned blocks = (unsigned)(nb < 65535 ? nb : 65535);
    reduce_part_kernel<<<blocks, 256, 0, s>>>(*r, parts, (rstate *)scratch);
    reduce_final_kernel<<<blocks_for(r->nout), 256, 0, s>>>(*r, parts, (const rstate *)scratch);
    return (int)cudaGetLastError();
  }
  unsigned blocks = (unsigned)(r->nout < 65535 ? r->nout : 65535);
  reduce_kernel<<<blocks, 256, 0, s>>>(*r);
  return (int)cudaGetLastError();
}

extern "C" int emcu_copy(const emcu_geom *g, int dst, int src, void *stream) {
  if (g->numel == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  int es = elsize(dst);
  // the contiguous fast path: the copy engine
  if (dst == src && g->ndim == 1 && g->strides[0][0] == es && g->strides[0][1] == es)
    return (int)cudaMemcpyAsync(g->data[0], g->data[1], (size_t)g->numel * (size_t)es,
                                cudaMemcpyDeviceToDevice, s);
  if (fits32(g)) copy_kernel<int32_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, dst, src);
  else copy_kernel<int64_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, dst, src);
  return (int)cudaGetLastError();
}

extern "C" int emcu_fill(const emcu_geom *g, int size, const uint64_t value[2], void *stream) {
  if (g->numel == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (fits32(g)) fill_kernel<int32_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, size, value[0], value[1]);
  else fill_kernel<int64_t><<<blocks_for(g->numel), 256, 0, s>>>(*g, size, value[0], value[1]);
  return (int)cudaGetLastError();
}

extern "C" int emcu_range_fill(const emcu_geom *g, int dt, const emcu_range *r, void *stream) {
  if (g->numel == 0) return 0;
  range_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(g->data[0], g->numel, dt, *r);
  return (int)cudaGetLastError();
}

extern "C" int emcu_ew(int op, int dt, const emcu_geom *g, const emcu_params *p, void *stream) {
  if (g->numel == 0) return 0;
  switch (dt) {
    case B8: return launch_ew<bool>(op, g, p, stream);
    case U8: return launch_ew<uint8_t>(op, g, p, stream);
    case I8: return launch_ew<int8_t>(op, g, p, stream);
    case I16: return launch_ew<int16_t>(op, g, p, stream);
    case I32: return launch_ew<int32_t>(op, g, p, stream);
    case I64: return launch_ew<int64_t>(op, g, p, stream);
    case F16: return launch_ew<__half>(op, g, p, stream);
    case BF16: return launch_ew<__nv_bfloat16>(op, g, p, stream);
    case F32: return launch_ew<float>(op, g, p, stream);
    default: return launch_ew<double>(op, g, p, stream);
  }
}

// cummax/cummin of few long lanes: a block per lane over tiles of 256 x 4,
// as lane_scan_block. A state is (value, 0-based index) of the best so far;
// a later state S wins over an earlier P when S's value is NaN, or neither
// is NaN and S's is >= (cummax; <= cummin) P's: the serial rule's (the last
// of equal values, the last NaN), and associative, so thread totals fold
// in order to the same indices as the serial scan. Values are compared in
// double (integers as int64), the output element is copied from the input.
template <typename V>
struct ext_state {
  V v;
  int64_t i;
};
template <typename V>
__device__ inline bool ext_wins(bool mn, V s, V p) {
  if constexpr (std::is_same<V, double>::value) {
    if (s != s) return true;
    if (p != p) return false;
  }
  return mn ? s <= p : s >= p;
}
template <typename V>
__device__ inline ext_state<V> ext_join(bool mn, ext_state<V> p, ext_state<V> s) {
  if (s.i < 0) return p; // an empty run (a thread past the lane's end)
  return (p.i < 0 || ext_wins(mn, s.v, p.v)) ? s : p;
}
template <typename V>
__device__ void lane_ext_block(const emcu_lanes &l, char *const *b, ext_state<V> *sh, int es) {
  const bool mn = l.flag != 0;
  const int64_t tile = (int64_t)blockDim.x * SCAN_ITEMS;
  ext_state<V> carry = {V(0), -1}; // -1: nothing yet
  for (int64_t t0 = 0; t0 < l.len; t0 += tile) {
    const int64_t j0 = t0 + (int64_t)threadIdx.x * SCAN_ITEMS;
    ext_state<V> run[SCAN_ITEMS];
    ext_state<V> acc = {V(0), -1};
    for (int k = 0; k < SCAN_ITEMS; k++) {
      if (j0 + k < l.len) {
        const char *p = b[2] + (j0 + k) * l.lstride[2];
        V v;
        if constexpr (std::is_same<V, double>::value) v = load_f(l.dt, p);
        else v = load_i(l.dt, p);
        acc = ext_join(mn, acc, ext_state<V>{v, j0 + k});
      }
      run[k] = acc;
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {  // exclusive prefixes of the thread totals, in order
      ext_state<V> c = carry;
      for (unsigned i = 0; i < blockDim.x; i++) {
        ext_state<V> v = sh[i];
        sh[i] = c;
        c = ext_join(mn, c, v);
      }
      sh[blockDim.x] = c;
    }
    __syncthreads();
    const ext_state<V> before = sh[threadIdx.x];
    for (int k = 0; k < SCAN_ITEMS; k++)
      if (j0 + k < l.len) {
        const int64_t best = ext_join(mn, before, run[k]).i;
        copy_n(b[0] + (j0 + k) * l.lstride[0], b[2] + best * l.lstride[2], es);
        *(int64_t *)(b[1] + (j0 + k) * l.lstride[1]) = best + 1;
      }
    carry = sh[blockDim.x];
    __syncthreads();
  }
}
__global__ void lane_ext_block_kernel(emcu_lanes l) {
  __shared__ ext_state<double> shd[257];
  __shared__ ext_state<int64_t> shi[257];
  const bool fl = is_float(l.dt);
  const int es = elsize(l.dt);
  for (int64_t lane = blockIdx.x; lane < l.nlanes; lane += gridDim.x) {
    char *b[3];
    lane_bases(l, lane, b);
    if (fl) lane_ext_block<double>(l, b, shd, es);
    else lane_ext_block<int64_t>(l, b, shi, es);
  }
}

extern "C" int emcu_logsumexp(const emcu_red *r, double *shift, void *stream) {
  if (r->nout == 0) return 0;
  unsigned blocks = (unsigned)(r->nout < 65535 ? r->nout : 65535);
  lse_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>(*r, shift);
  return (int)cudaGetLastError();
}

extern "C" int emcu_lanes_run(const emcu_lanes *l, void *stream) {
  if (l->nlanes == 0 || l->len == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (l->kind == EMCU_LANE_MAX || l->kind == EMCU_LANE_SOFTMAX) {
    unsigned blocks = (unsigned)(l->nlanes < 65535 ? l->nlanes : 65535);
    lane_block_kernel<<<blocks, 256, 0, s>>>(*l);
  } else if (l->kind == EMCU_LANE_CUM && l->nlanes < 4096 && l->len >= 4096) {
    unsigned blocks = (unsigned)(l->nlanes < 65535 ? l->nlanes : 65535);
    lane_scan_block_kernel<<<blocks, 256, 0, s>>>(*l);
  } else if (l->kind == EMCU_LANE_CUMEXT && l->nlanes < 4096 && l->len >= 4096) {
    unsigned blocks = (unsigned)(l->nlanes < 65535 ? l->nlanes : 65535);
    lane_ext_block_kernel<<<blocks, 256, 0, s>>>(*l);
  } else {
    lane_scan_kernel<<<blocks_for(l->nlanes), 256, 0, s>>>(*l);
  }
  return (int)cudaGetLastError();
}

extern "C" int emcu_isclose(const emcu_geom *g, int dt, double rtol, double atol, int equal_nan,
                            void *stream) {
  if (g->numel == 0) return 0;
  isclose_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, dt, rtol, atol, equal_nan);
  return (int)cudaGetLastError();
}

extern "C" int emcu_unequal(const emcu_geom *g, int a, int b, int *flag, void *stream) {
  if (g->numel == 0) return 0;
  unequal_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, a, b, flag);
  return (int)cudaGetLastError();
}

extern "C" int emcu_any_false(const char *p, int64_t n, int *flag, void *stream) {
  if (n == 0) return 0;
  any_false_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>((const bool *)p, n, flag);
  return (int)cudaGetLastError();
}

// -- random numbers: cpu/random.c's Philox4x32-10 and samplers, per element ----

namespace {

__device__ inline void philox10(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
    const uint32_t r0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t r2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[1] = (uint32_t)p1;
    c[3] = (uint32_t)p0;
    c[0] = r0;
    c[2] = r2;
  }
}
__device__ inline void rblock(uint64_t idx, uint32_t d, const uint32_t *key, uint32_t w[4]) {
  w[0] = (uint32_t)idx;
  w[1] = (uint32_t)(idx >> 32);
  w[2] = d;
  w[3] = 0;
  philox10(w, key[0], key[1]);
}
__device__ inline double u53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}
// Lemire's multiply-shift with rejection, as cpu/random.c's bounded()
__device__ inline uint64_t rbounded(uint64_t idx, uint64_t range, const uint32_t *key) {
  uint32_t w[4];
  uint64_t thresh = (0 - range) % range;
  for (uint32_t d = 0;; d++) {
    rblock(idx, d, key, w);
    for (int h = 0; h < 2; h++) {
      uint64_t x = ((uint64_t)w[2 * h] << 32) | w[2 * h + 1];
      if (x * range >= thresh) return __umul64hi(x, range);
    }
  }
}

enum { S_UNIFORM, S_NORMAL, S_EXPONENTIAL, S_RANDOM, S_BERNOULLI };

__global__ void sample_kernel(char *out, int64_t n, emcu_sample s) {
  const int es = elsize(s.dt);
  const bool fl = is_float(s.dt);
  GRID_STRIDE(int64_t, n) {
    const uint64_t i = (uint64_t)lin, L = (uint64_t)s.lanes;
    const uint64_t b = s.offset + i / L;
    const int l = (int)(i % L);
    char *p = out + lin * es;
    if (s.kind == S_RANDOM) {
      store_i(s.dt, p, (int64_t)((uint64_t)s.low + rbounded(b, s.range, s.key)));
      continue;
    }
    uint32_t w[4];
    rblock(b, 0, s.key, w);
    double v;
    switch (s.kind) {
      case S_UNIFORM:
        if (L == 2) v = s.a + u53(w[2 * l], w[2 * l + 1]) * (s.b - s.a);
        else v = s.a + (double)(w[l] >> (32 - s.bits)) * s.scale * (s.b - s.a);
        break;
      case S_NORMAL: {
        double u1 = 1.0 - u53(w[0], w[1]), u2 = u53(w[2], w[3]);
        double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
        v = s.a + s.b * (l == 0 ? r * cos(th) : r * sin(th));
        break;
      }
      case S_EXPONENTIAL: v = -log1p(-u53(w[2 * l], w[2 * l + 1])) / s.a; break;
      default: v = u53(w[2 * l], w[2 * l + 1]) < s.a ? 1.0 : 0.0; break;  // bernoulli
    }
    if (!fl) {
      store_i(s.dt, p, (int64_t)v);
    } else if (s.dt == F16) {
      *(__half *)p = __float2half_rn((float)v);  // through float, as the CPU
    } else if (s.dt == BF16) {
      *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v);
    } else {
      store_f(s.dt, p, v);
    }
  }
}

__global__ void bernoulli_lt_kernel(emcu_geom g) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    double *u = (double *)(g.data[0] + off[0]);
    *u = *u < *(const double *)(g.data[1] + off[1]) ? 1.0 : 0.0;
  }
}

__global__ void prob_bad_kernel(emcu_geom g, unsigned long long *first) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    double v = *(const double *)(g.data[0] + off[0]);
    if (!(v >= 0.0 && v <= 1.0)) atomicMin(first, (unsigned long long)lin);
  }
}
__global__ void prob_value_kernel(emcu_geom g, const unsigned long long *first, double *value) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long f = *first;
  if (f >= (unsigned long long)g.numel) return;
  int64_t off[EMCU_MAX_OPS];
  offsets<int64_t>(g, (int64_t)f, off);
  *value = *(const double *)(g.data[0] + off[0]);
}

// Fisher-Yates is sequential: the swaps in one thread, the draws in parallel
// first (each step's partner depends only on its counter)
__global__ void randperm_draw_kernel(int64_t *j, int64_t n, uint64_t offset, uint32_t k0, uint32_t k1) {
  const uint32_t key[2] = {k0, k1};
  GRID_STRIDE(int64_t, n) {
    j[lin] = lin == 0 ? 0 : (int64_t)rbounded(offset + (uint64_t)lin, (uint64_t)lin + 1, key);
  }
}
__global__ void randperm_swap_kernel(int64_t *perm, const int64_t *j, int64_t n) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  for (int64_t i = 0; i < n; i++) perm[i] = i + 1;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t k = j[i], t = perm[i];
    perm[i] = perm[k];
    perm[k] = t;
  }
}

// multinomial, as cpu/random.c: a thread per row for the checks and the
// cumulative sums (the CPU's order of additions), a thread per sample for
// the draws with replacement; without, a thread per key, then a thread per
// row picks the n largest keys (ties to the lower index: qsort's order)
__global__ void mn_check_kernel(const double *P, int64_t rows, int64_t cats,
                                unsigned long long *code) {
  GRID_STRIDE(int64_t, rows) {
    const double *p = P + lin * cats;
    double sum = 0;
    bool bad = false;
    for (int64_t j = 0; j < cats && !bad; j++) {
      double v = p[j];
      if (!(v >= 0.0) || isinf(v)) bad = true;
      sum += v;
    }
    if (bad) atomicMin(code, (unsigned long long)(2 * lin));
    else if (!(sum > 0.0)) atomicMin(code, (unsigned long long)(2 * lin + 1));
  }
}
__global__ void mn_cdf_kernel(const double *P, int64_t rows, int64_t cats, double *cdf,
                              double *total, double *last) {
  GRID_STRIDE(int64_t, rows) {
    const double *p = P + lin * cats;
    double acc = 0;
    int64_t lj = 0;
    for (int64_t j = 0; j < cats; j++) {
      acc += p[j];
      cdf[lin * cats + j] = acc;
      if (p[j] > 0) lj = j;
    }
    total[lin] = acc;
    last[lin] = (double)lj;
  }
}
__global__ void mn_draw_kernel(const double *cdf, const double *total, const double *last,
                               int64_t rows, int64_t cats, int64_t n, int64_t *R,
                               uint64_t offset, uint32_t k0, uint32_t k1) {
  const uint32_t key[2] = {k0, k1};
  GRID_STRIDE(int64_t, rows * n) {
    const int64_t r = lin / n;
    uint32_t w[4];
    rblock(offset + (uint64_t)lin, 0, key, w);
    const double u = u53(w[0], w[1]) * total[r];
    const double *c = cdf + r * cats;
    int64_t lo = 0, hi = cats - 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (c[mid] > u) hi = mid; else lo = mid + 1;
    }
    if (!(c[lo] > u)) lo = (int64_t)last[r];  // u rounded up to the total
    R[lin] = lo + 1;
  }
}
__global__ void mn_keys_kernel(const double *P, int64_t total, double *keys, uint64_t offset,
                               uint32_t k0, uint32_t k1) {
  const uint32_t key[2] = {k0, k1};
  GRID_STRIDE(int64_t, total) {
    uint32_t w[4];
    rblock(offset + (uint64_t)lin, 0, key, w);
    const double e = -log1p(-u53(w[0], w[1]));  // Exp(1); 0 only when u = 0
    const double p = P[lin];
    keys[lin] = p == 0.0 ? 0.0 : (e > 0 ? p / e : INFINITY);
  }
}
__global__ void mn_pick_kernel(double *keys, int64_t rows, int64_t cats, int64_t n, int64_t *R) {
  GRID_STRIDE(int64_t, rows) {
    double *k = keys + lin * cats;
    for (int64_t s = 0; s < n; s++) {
      int64_t best = -1;
      for (int64_t j = 0; j < cats; j++)  // keys are >= 0; a taken one is -1
        if (k[j] >= 0 && (best < 0 || k[j] > k[best])) best = j;
      R[lin * n + s] = best + 1;
      k[best] = -1;
    }
  }
}

}  // namespace

extern "C" int emcu_multinomial_check(const double *P, int64_t rows, int64_t cats,
                                      unsigned long long *code, void *stream) {
  if (rows == 0) return 0;
  mn_check_kernel<<<blocks_for(rows), 256, 0, (cudaStream_t)stream>>>(P, rows, cats, code);
  return (int)cudaGetLastError();
}

extern "C" int emcu_multinomial(const double *P, int64_t rows, int64_t cats, int64_t n,
                                int replacement, int64_t *R, double *scratch, uint64_t offset,
                                const uint32_t key[2], void *stream) {
  if (rows == 0 || n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (replacement) {
    double *cdf = scratch, *total = scratch + rows * cats, *last = total + rows;
    mn_cdf_kernel<<<blocks_for(rows), 256, 0, s>>>(P, rows, cats, cdf, total, last);
    mn_draw_kernel<<<blocks_for(rows * n), 256, 0, s>>>(cdf, total, last, rows, cats, n, R,
                                                         offset, key[0], key[1]);
  } else {
    mn_keys_kernel<<<blocks_for(rows * cats), 256, 0, s>>>(P, rows * cats, scratch, offset,
                                                           key[0], key[1]);
    mn_pick_kernel<<<blocks_for(rows), 256, 0, s>>>(scratch, rows, cats, n, R);
  }
  return (int)cudaGetLastError();
}

extern "C" int emcu_sample_run(char *out, int64_t n, const emcu_sample *s, void *stream) {
  if (n == 0) return 0;
  sample_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(out, n, *s);
  return (int)cudaGetLastError();
}

extern "C" int emcu_bernoulli_lt(const emcu_geom *g, void *stream) {
  if (g->numel == 0) return 0;
  bernoulli_lt_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g);
  return (int)cudaGetLastError();
}

extern "C" int emcu_prob_first_bad(const emcu_geom *g, unsigned long long *first, double *value,
                                   void *stream) {
  if (g->numel == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  prob_bad_kernel<<<blocks_for(g->numel), 256, 0, s>>>(*g, first);
  prob_value_kernel<<<1, 32, 0, s>>>(*g, first, value);
  return (int)cudaGetLastError();
}

extern "C" int emcu_randperm(int64_t *perm, int64_t *scratch, int64_t n, uint64_t offset,
                             const uint32_t key[2], void *stream) {
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  randperm_draw_kernel<<<blocks_for(n), 256, 0, s>>>(scratch, n, offset, key[0], key[1]);
  randperm_swap_kernel<<<1, 32, 0, s>>>(perm, scratch, n);
  return (int)cudaGetLastError();
}

// -- index family: positions, gather, select blocks, scatter (atomic
// reductions by compare-and-swap on the word holding the element), t[key] --

namespace {

__global__ void positions_kernel(emcu_geom g, int idx_dt, int64_t size, int64_t stride, int mode,
                                 unsigned long long *first) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    const char *x = g.data[1] + off[1];
    int64_t v = idx_dt == I64 ? *(const int64_t *)x : (int64_t) * (const int32_t *)x;
    int64_t k = v > 0 ? v - 1 : v + size;
    if (v == 0 || k < 0 || k >= size) {
      atomicMin(first, (unsigned long long)lin);
      continue;
    }
    int64_t *o = (int64_t *)(g.data[0] + off[0]);
    if (mode == 0) *o = k;
    else if (mode == 1) *o = k * stride;
    else *o += k * stride;
  }
}
__global__ void position_value_kernel(emcu_geom g, int idx_dt, const unsigned long long *first,
                                      int64_t *value) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long f = *first;
  if (f >= (unsigned long long)g.numel) return;
  int64_t off[EMCU_MAX_OPS];
  offsets<int64_t>(g, (int64_t)f, off);
  const char *x = g.data[1] + off[1];
  *value = idx_dt == I64 ? *(const int64_t *)x : (int64_t) * (const int32_t *)x;
}


__global__ void gather_kernel(emcu_geom g, int es, int64_t stride) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    int64_t k = *(const int64_t *)(g.data[2] + off[2]);
    copy_n(g.data[0] + off[0], g.data[1] + off[1] + k * stride, es);
  }
}

template <typename W>
__global__ void select_blocks_kernel(char *dst, const char *src, const int64_t *idx, int64_t len,
                                     int64_t words, int64_t inner, int64_t axis_bytes, int64_t total) {
  GRID_STRIDE(int64_t, total) {
    int64_t r = lin / words, w = lin - r * words;
    int64_t o = r / len, j = r - o * len;
    const W *s = (const W *)(src + o * axis_bytes + idx[j] * inner);
    ((W *)(dst + r * inner))[w] = s[w];
  }
}

// The CPU's stores (half types through float, integers wrapping)
__device__ inline void st_cpu(int dt, char *p, double v) {
  if (dt == F16) *(__half *)p = __float2half_rn((float)v);
  else if (dt == BF16) *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v);
  else store_f(dt, p, v);
}

// new value of an element (bytes at cur) combined with src (bytes at b);
// returns false when it stays
__device__ inline bool combine(int dt, int mode, const char *cur, const char *b, double af,
                               int64_t ai, char *out) {
  if (is_float(dt)) {
    double x = load_f(dt, cur), y = load_f(dt, b), r;
    switch (mode) {
      case 2: r = x * y; break;                               // prod
      case 4: if (!(y != y || y > x)) return false; r = y; break;  // amax: NaN wins
      case 5: if (!(y != y || y < x)) return false; r = y; break;  // amin
      default: r = x + af * y; break;                         // sum, mean
    }
    st_cpu(dt, out, r);
    return true;
  }
  int64_t x = load_i(dt, cur), y = load_i(dt, b), r;
  switch (mode) {
    case 2: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
    case 4: if (!(y > x)) return false; r = y; break;
    case 5: if (!(y < x)) return false; r = y; break;
    default: r = (int64_t)((uint64_t)x + (uint64_t)ai * (uint64_t)y); break;
  }
  store_i(dt, out, r);
  return true;
}

// *p (mode)= *b atomically: a compare-and-swap loop on the aligned word
// that holds the element (32 bits for elements of 1, 2 and 4 bytes)
__device__ inline void atomic_combine(char *p, int dt, int mode, const char *b, double af, int64_t ai) {
  const int es = elsize(dt);
  if (es == 8) {
    unsigned long long *w = (unsigned long long *)p, old = *w, assumed;
    do {
      assumed = old;
      char nv[8];
      if (!combine(dt, mode, (const char *)&assumed, b, af, ai, nv)) return;
      unsigned long long n;
      memcpy(&n, nv, 8);
      old = atomicCAS(w, assumed, n);
    } while (old != assumed);
    return;
  }
  uintptr_t a = (uintptr_t)p;
  unsigned int *w = (unsigned int *)(a & ~(uintptr_t)3);
  const int shift = (int)(a & 3) * 8;
  const unsigned int mask = es == 4 ? 0xffffffffu : ((1u << (es * 8)) - 1u) << shift;
  unsigned int old = *w, assumed;
  do {
    assumed = old;
    unsigned int curv = (assumed & mask) >> shift;
    char cur[4], nv[4] = {0, 0, 0, 0};
    memcpy(cur, &curv, 4);
    if (!combine(dt, mode, cur, b, af, ai, nv)) return;
    unsigned int n;
    memcpy(&n, nv, 4);
    if (es < 4) n &= (1u << (es * 8)) - 1u;
    old = atomicCAS(w, assumed, (assumed & ~mask) | (n << shift));
  } while (old != assumed);
}

__global__ void scatter_kernel(emcu_geom g, int dt, int mode, int64_t stride, double af, int64_t ai) {
  const int es = elsize(dt);
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    int64_t k = *(const int64_t *)(g.data[1] + off[1]);
    char *d = g.data[0] + off[0] + k * stride;
    const char *src = g.data[2] + off[2];
    if (mode == 0) copy_n(d, src, es);  // duplicates: one of them wins
    else atomic_combine(d, dt, mode, src, af, ai);
  }
}

__global__ void mean_div_kernel(emcu_geom g, int dt) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    int64_t cnt = *(const int64_t *)(g.data[1] + off[1]);
    if (cnt <= 1) continue;
    char *d = g.data[0] + off[0];
    if (is_float(dt)) {
      st_cpu(dt, d, load_f(dt, d) / (double)cnt);
    } else {
      int64_t a = load_i(dt, d), q = a / cnt;
      if ((a % cnt != 0) && (a < 0)) q--;
      store_i(dt, d, q);
    }
  }
}

__global__ void masked_fill_kernel(emcu_geom g, int es, uint64_t v) {
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    if (*(const bool *)(g.data[1] + off[1])) copy_n(g.data[0] + off[0], (const char *)&v, es);
  }
}

__global__ void key_accumulate_kernel(emcu_geom g, int dt) {
  const int es = elsize(dt);
  GRID_STRIDE(int64_t, g.numel) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    int64_t k = *(const int64_t *)(g.data[2] + off[2]);
    atomic_combine(g.data[0] + off[0] + k * es, dt, 1, g.data[1] + off[1], 1.0, 1);
  }
}

// t[key]: element (o..., b, i...) of the layout, innermost last
__global__ void key_copy_kernel(char *view, char *other, const int64_t *offs, emcu_key k,
                                int64_t total) {
  GRID_STRIDE(int64_t, total) {
    int64_t rest = lin, vo = 0, oo = 0;
    for (int d = k.nouter + k.ninner - 1; d >= k.nouter; d--) {
      int64_t i = rest % k.sizes[d];
      rest /= k.sizes[d];
      vo += i * k.vstrides[d];
      oo += i * k.ostrides[d];
    }
    int64_t b = rest % k.nb;
    rest /= k.nb;
    vo += offs[b];
    oo += b * k.ob;
    for (int d = k.nouter - 1; d >= 0; d--) {
      int64_t i = rest % k.sizes[d];
      rest /= k.sizes[d];
      vo += i * k.vstrides[d];
      oo += i * k.ostrides[d];
    }
    char *vp = view + vo * k.elsize, *op = other + oo * k.elsize;
    if (k.put) copy_n(vp, op, k.elsize);
    else copy_n(op, vp, k.elsize);
  }
}

}  // namespace

extern "C" int emcu_index_positions(const emcu_geom *g, int idx_dt, int64_t size, int64_t stride,
                                    int mode, unsigned long long *first, int64_t *value,
                                    void *stream) {
  if (g->numel == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  positions_kernel<<<blocks_for(g->numel), 256, 0, s>>>(*g, idx_dt, size, stride, mode, first);
  position_value_kernel<<<1, 32, 0, s>>>(*g, idx_dt, first, value);
  return (int)cudaGetLastError();
}

extern "C" int emcu_gather(const emcu_geom *g, int es, int64_t stride, void *stream) {
  if (g->numel == 0) return 0;
  gather_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, es, stride);
  return (int)cudaGetLastError();
}

extern "C" int emcu_select_blocks(char *dst, const char *src, const int64_t *idx, int64_t outer,
                                  int64_t len, int64_t inner, int64_t axis_bytes, void *stream) {
  int64_t rows = outer * len;
  if (rows == 0 || inner == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  uintptr_t al = (uintptr_t)dst | (uintptr_t)src | (uintptr_t)inner | (uintptr_t)axis_bytes;
  if (al % 8 == 0) {
    int64_t words = inner / 8, total = rows * words;
    select_blocks_kernel<uint64_t><<<blocks_for(total), 256, 0, s>>>(dst, src, idx, len, words, inner, axis_bytes, total);
  } else if (al % 4 == 0) {
    int64_t words = inner / 4, total = rows * words;
    select_blocks_kernel<uint32_t><<<blocks_for(total), 256, 0, s>>>(dst, src, idx, len, words, inner, axis_bytes, total);
  } else {
    int64_t total = rows * inner;
    select_blocks_kernel<uint8_t><<<blocks_for(total), 256, 0, s>>>(dst, src, idx, len, inner, inner, axis_bytes, total);
  }
  return (int)cudaGetLastError();
}

extern "C" int emcu_scatter(const emcu_geom *g, int dt, int mode, int64_t stride, double alpha_f,
                            int64_t alpha_i, void *stream) {
  if (g->numel == 0) return 0;
  scatter_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, dt, mode, stride, alpha_f, alpha_i);
  return (int)cudaGetLastError();
}

extern "C" int emcu_mean_div(const emcu_geom *g, int dt, void *stream) {
  if (g->numel == 0) return 0;
  mean_div_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, dt);
  return (int)cudaGetLastError();
}

extern "C" int emcu_masked_fill(const emcu_geom *g, int es, uint64_t value, void *stream) {
  if (g->numel == 0) return 0;
  masked_fill_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, es, value);
  return (int)cudaGetLastError();
}

extern "C" int emcu_key_accumulate(const emcu_geom *g, int dt, void *stream) {
  if (g->numel == 0) return 0;
  key_accumulate_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, dt);
  return (int)cudaGetLastError();
}

extern "C" int emcu_key_copy(char *view, char *other, const int64_t *offsets, const emcu_key *k,
                             void *stream) {
  int64_t total = k->nb;
  for (int d = 0; d < k->nouter + k->ninner; d++) total *= k->sizes[d];
  if (total == 0) return 0;
  key_copy_kernel<<<blocks_for(total), 256, 0, (cudaStream_t)stream>>>(view, other, offsets, *k, total);
  return (int)cudaGetLastError();
}

extern "C" int emcu_any_zero(const emcu_geom *g, int es, int *flag, void *stream) {
  if (g->numel == 0) return 0;
  any_zero_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, es, flag);
  return (int)cudaGetLastError();
}
