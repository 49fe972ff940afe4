/*
** cpu/elementwise.c -- the elementwise family of the CPU's kernels
** (core/kern_ew.h): one loop per (kernel, dtype) over the iterator's 1-d
** inner runs.
**
** What holds:
** - float16/bfloat16 are loaded as float, computed in float and rounded
**   once on the store. Integer arithmetic wraps modulo 2^bits (it is done on
**   uint64_t, so there is no signed-overflow UB).
** - Every kernel is a 1-d inner loop of the iterator (iter.h) with a
**   contiguous path the compiler vectorises; each element is computed
**   independently, so results do not depend on the thread count. float32
**   and float64 exp, log, log1p, expm1, sin, cos, tanh, sigmoid, silu,
**   erf, gelu and pow hand their runs to the vector functions of
**   cpu/vecmath.h where there is one (float16/bfloat16 through float32;
**   strided runs through a buffer: the same bits for any layout).
** - Kernels are generated from EM_FOR_EACH_DTYPE and the lists of
**   core/kern_ew.h: one function per (kernel, dtype), named
**   em_<op>_<dtype> (em_add_f32, em_sqrt_bf16), for the dtype kinds the
**   kernel's mask allows; the dispatch table is filled by the same expansion.
*/
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "core/kern_ew.h"
#include "cpu/vecmath.h"
#include "cpu/special.h"

#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wbool-operation"
#pragma GCC diagnostic ignored "-Wint-in-bool-context"

/* -- Half-type conversions, inlined into the loops --------------------------
** Bit-for-bit the conversions of dtype.c (em_half_to_float, ...; round to
** nearest even, NaN stays a quiet NaN); tests/c/test_math.c checks every
** half value and a sweep of floats against them. Inline so the loops over
** float16/bfloat16 do not pay a call per element. */
static inline uint32_t f2u_(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f_(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float ld_bf16(em_bfloat16 h) { return u2f_((uint32_t)h << 16); }
static inline em_bfloat16 st_bf16(float f) {
  uint32_t u = f2u_(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (em_bfloat16)((u >> 16) | 0x40);
  return (em_bfloat16)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static inline float ld_half(em_half h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return u2f_(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return u2f_(sign | ((exp + 112) << 23) | (man << 13));
}
static inline em_half st_half(float f) {
  uint32_t u = f2u_(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u)
    return (em_half)(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0));
  if (absu >= 0x477ff000u) return (em_half)(sign | 0x7c00);
  if (absu < 0x38800000u) {
    float a = u2f_(absu) * 0x1p24f;
    uint32_t m = (uint32_t)a;
    float rem = a - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
    return (em_half)(sign | m);
  }
  uint32_t base = absu - 0x38000000u;
  uint32_t half = base >> 13, rest = base & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;
  return (em_half)(sign | half);
}

/* -- Per-dtype traits: compute type, load, store ---------------------------
** Bool computes as int (0/1); integers compute in their own type; the half
** types compute in float. */
#define CT_b8 int
#define CT_u8 uint8_t
#define CT_i8 int8_t
#define CT_i16 int16_t
#define CT_i32 int32_t
#define CT_i64 int64_t
#define CT_f16 float
#define CT_bf16 float
#define CT_f32 float
#define CT_f64 double

#define LD_b8(v) ((int)(v))
#define LD_u8(v) (v)
#define LD_i8(v) (v)
#define LD_i16(v) (v)
#define LD_i32(v) (v)
#define LD_i64(v) (v)
#define LD_f16(v) ld_half(v)
#define LD_bf16(v) ld_bf16(v)
#define LD_f32(v) (v)
#define LD_f64(v) (v)

#define ST_b8(c) ((c) != 0)
#define ST_u8(c) ((uint8_t)(c))
#define ST_i8(c) ((int8_t)(c))
#define ST_i16(c) ((int16_t)(c))
#define ST_i32(c) ((int32_t)(c))
#define ST_i64(c) ((int64_t)(c))
#define ST_f16(c) st_half((float)(c))
#define ST_bf16(c) st_bf16((float)(c))
#define ST_f32(c) ((float)(c))
#define ST_f64(c) ((double)(c))

/* Output classes: SAME writes the input dtype, BOOL writes bool. */
#define OTYPE_SAME(T) T
#define OTYPE_BOOL(T) bool
#define STO_SAME(S, v) ST_##S(v)
#define STO_BOOL(S, v) ((v) != 0)

/* Kind masks: WHEN_<mask>_<kind>(...) keeps its argument when the dtype
** kind is in the mask (B bool, I integer, F floating). */
#define WHEN_BIF_EM_KIND_BOOL(...) __VA_ARGS__
#define WHEN_BIF_EM_KIND_INT(...) __VA_ARGS__
#define WHEN_BIF_EM_KIND_FLOAT(...) __VA_ARGS__
#define WHEN_IF_EM_KIND_BOOL(...)
#define WHEN_IF_EM_KIND_INT(...) __VA_ARGS__
#define WHEN_IF_EM_KIND_FLOAT(...) __VA_ARGS__
#define WHEN_BI_EM_KIND_BOOL(...) __VA_ARGS__
#define WHEN_BI_EM_KIND_INT(...) __VA_ARGS__
#define WHEN_BI_EM_KIND_FLOAT(...)
#define WHEN_I_EM_KIND_BOOL(...)
#define WHEN_I_EM_KIND_INT(...) __VA_ARGS__
#define WHEN_I_EM_KIND_FLOAT(...)
#define WHEN_F_EM_KIND_BOOL(...)
#define WHEN_F_EM_KIND_INT(...)
#define WHEN_F_EM_KIND_FLOAT(...) __VA_ARGS__
#define WHEN_B_EM_KIND_BOOL(...) __VA_ARGS__
#define WHEN_B_EM_KIND_INT(...)
#define WHEN_B_EM_KIND_FLOAT(...)

/* float or double libm function by the compute type */
#define FM(fn, x) _Generic((x), float: fn##f, default: fn)(x)
#define FM2(fn, x, y) _Generic((x), float: fn##f, default: fn)((x), (y))

/* Wrapping integer arithmetic. */
#define WADD(CT, x, y) ((CT)((uint64_t)(x) + (uint64_t)(y)))
#define WSUB(CT, x, y) ((CT)((uint64_t)(x) - (uint64_t)(y)))
#define WMUL(CT, x, y) ((CT)((uint64_t)(x) * (uint64_t)(y)))

static inline int64_t powi64(int64_t a, int64_t b) {
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

/* |v| as an unsigned 64-bit value (no overflow at the minimum) */
#define mag_u64(v) ((v) < 0 ? (uint64_t)0 - (uint64_t)(int64_t)(v) : (uint64_t)(v))
static inline uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* PyTorch's div_floor_floating (BinaryOps.h) */
#define DIVFLOOR_F(CT, a, b)                                             \
  ({                                                                     \
    CT a_ = (a), b_ = (b), r_;                                           \
    if (b_ == 0) r_ = a_ / b_;                                           \
    else {                                                               \
      CT mod_ = FM2(fmod, a_, b_);                                       \
      CT div_ = (a_ - mod_) / b_;                                        \
      if (mod_ != 0 && (b_ < 0) != (mod_ < 0)) div_ -= 1;               \
      if (div_ != 0) {                                                   \
        r_ = FM(floor, div_);                                            \
        if (div_ - r_ > (CT)0.5) r_ += 1;                                \
      } else                                                             \
        r_ = FM2(copysign, (CT)0, a_ / b_);                              \
    }                                                                    \
    r_;                                                                  \
  })

static inline float round_dec_f(float x, int64_t d) {
  if (d == 0) return nearbyintf(x);
  float p = (float)pow(10.0, (double)(d < 0 ? -d : d));
  return d < 0 ? nearbyintf(x / p) * p : nearbyintf(x * p) / p;
}
static inline double round_dec_d(double x, int64_t d) {
  if (d == 0) return nearbyint(x);
  double p = pow(10.0, (double)(d < 0 ? -d : d));
  return d < 0 ? nearbyint(x / p) * p : nearbyint(x * p) / p;
}
#define ROUND_DEC(x, d) _Generic((x), float: round_dec_f, default: round_dec_d)((x), (d))

/* Ops with a vector implementation (cpu/vecmath.h; which one runs is
** cpu/vmath.c's choice): their float32/float64 kernels hand each run to it,
** float16/bfloat16 convert through float32. A strided run goes through a
** small buffer, so an element's result does not depend on the layout. */
static const em_vm_fn vm_of[EM_EW_NKERNELS] = {
    [EM_K_exp] = EM_VM_EXP,     [EM_K_log] = EM_VM_LOG,         [EM_K_log1p] = EM_VM_LOG1P,
    [EM_K_expm1] = EM_VM_EXPM1, [EM_K_sin] = EM_VM_SIN,         [EM_K_cos] = EM_VM_COS,
    [EM_K_tanh] = EM_VM_TANH,   [EM_K_sigmoid] = EM_VM_SIGMOID, [EM_K_silu] = EM_VM_SILU,
    [EM_K_erf] = EM_VM_ERF,     [EM_K_gelu] = EM_VM_GELU};

enum { VBUF = 256 };

/* Runs the vector function of (kernel, options) over one run of dtype e;
** 0 when there is none for that dtype (the caller's loop runs). */
static int vec_run(em_ew_kernel kk, const em_kctx *k, em_dtype e, char *o, int64_t so,
                   const char *a, int64_t sa, int64_t n) {
  em_vm_fn f = vm_of[kk];
  if (kk == EM_K_gelu && k->i0) f = EM_VM_GELU_TANH;
  if (e == EM_FLOAT64) {
    em_vec_f64_fn fn = em_vm_f64(f);
    if (!fn) return 0;
    if (so == 8 && sa == 8) {
      fn((double *)o, (const double *)a, n);
      return 1;
    }
    double buf[VBUF];
    for (int64_t i0 = 0; i0 < n; i0 += VBUF) {
      int64_t m = n - i0 < VBUF ? n - i0 : VBUF;
      for (int64_t j = 0; j < m; j++) buf[j] = *(const double *)(a + (i0 + j) * sa);
      fn(buf, buf, m);
      for (int64_t j = 0; j < m; j++) *(double *)(o + (i0 + j) * so) = buf[j];
    }
    return 1;
  }
  em_vec_f32_fn fn = em_vm_f32(f);
  if (!fn || (e != EM_FLOAT32 && e != EM_FLOAT16 && e != EM_BFLOAT16)) return 0;
  if (e == EM_FLOAT32 && so == 4 && sa == 4) {
    fn((float *)o, (const float *)a, n);
    return 1;
  }
  float buf[VBUF];
  for (int64_t i0 = 0; i0 < n; i0 += VBUF) {
    int64_t m = n - i0 < VBUF ? n - i0 : VBUF;
    const char *ap = a + i0 * sa;
    char *op = o + i0 * so;
    if (e == EM_FLOAT32)
      for (int64_t j = 0; j < m; j++) buf[j] = *(const float *)(ap + j * sa);
    else if (e == EM_FLOAT16)
      for (int64_t j = 0; j < m; j++) buf[j] = ld_half(*(const em_half *)(ap + j * sa));
    else
      for (int64_t j = 0; j < m; j++) buf[j] = ld_bf16(*(const em_bfloat16 *)(ap + j * sa));
    fn(buf, buf, m);
    if (e == EM_FLOAT32)
      for (int64_t j = 0; j < m; j++) *(float *)(op + j * so) = buf[j];
    else if (e == EM_FLOAT16)
      for (int64_t j = 0; j < m; j++) *(em_half *)(op + j * so) = st_half(buf[j]);
    else
      for (int64_t j = 0; j < m; j++) *(em_bfloat16 *)(op + j * so) = st_bf16(buf[j]);
  }
  return 1;
}

/* pow of float32/float64 with a dense base and a dense or scalar exponent
** into a dense output, by the vector pow when there is one; 0 otherwise. */
static int vec_pow(em_dtype e, char *o, int64_t so, const char *a, int64_t sa, const char *b,
                   int64_t sb, int64_t n) {
  int64_t es = e == EM_FLOAT32 ? 4 : 8;
  if ((e != EM_FLOAT32 && e != EM_FLOAT64) || so != es || sa != es || (sb != 0 && sb != es))
    return 0;
  if (e == EM_FLOAT32) {
    em_vpow_f32_fn fn = em_vm_pow_f32();
    if (!fn) return 0;
    fn((float *)o, (const float *)a, (const float *)b, sb ? 1 : 0, n);
  } else {
    em_vpow_f64_fn fn = em_vm_pow_f64();
    if (!fn) return 0;
    fn((double *)o, (const double *)a, (const double *)b, sb ? 1 : 0, n);
  }
  return 1;
}

/* -- Binary expressions: BX_<op>_<kind>(x, y, CT) ---------------------------- */

/* alpha_ct: alpha in the compute type, hoisted out of the loop (ALPHA_x) */
#define ALPHA_EM_KIND_BOOL(kc, CT) ((CT)((kc).ai != 0))
#define ALPHA_EM_KIND_INT(kc, CT) ((CT)(kc).ai)
#define ALPHA_EM_KIND_FLOAT(kc, CT) ((CT)(kc).af)
#define BX_add_EM_KIND_BOOL(x, y, CT) ((x) || (alpha_ct && (y)))
#define BX_add_EM_KIND_INT(x, y, CT) ((CT)((uint64_t)(x) + (uint64_t)alpha_ct * (uint64_t)(y)))
#define BX_add_EM_KIND_FLOAT(x, y, CT) ((x) + alpha_ct * (y))
#define BX_mul_EM_KIND_BOOL(x, y, CT) ((x) && (y))
#define BX_mul_EM_KIND_INT(x, y, CT) WMUL(CT, x, y)
#define BX_mul_EM_KIND_FLOAT(x, y, CT) ((x) * (y))
#define BX_div_EM_KIND_FLOAT(x, y, CT) ((x) / (y))
/* y == -1 is done as a negation: INT_MIN / -1 overflows in C */
#define BX_divtrunc_EM_KIND_INT(x, y, CT) \
  ((y) == (CT)-1 && (CT)-1 < 0 ? WSUB(CT, 0, x) : (CT)((x) / (y)))
#define BX_divtrunc_EM_KIND_FLOAT(x, y, CT) FM(trunc, (x) / (y))
#define BX_divfloor_EM_KIND_INT(x, y, CT)                          \
  ((y) == (CT)-1 && (CT)-1 < 0 ? WSUB(CT, 0, x)                    \
   : ((((x) < 0) != ((y) < 0)) && (x) % (y) != 0) ? (CT)((x) / (y) - 1) \
                                                   : (CT)((x) / (y)))
#define BX_divfloor_EM_KIND_FLOAT(x, y, CT) DIVFLOOR_F(CT, x, y)
#define BX_remainder_EM_KIND_INT(x, y, CT)                          \
  ((y) == (CT)-1 && (CT)-1 < 0 ? (CT)0                              \
   : ((x) % (y) != 0 && (((x) % (y) < 0) != ((y) < 0))) ? (CT)((x) % (y) + (y)) \
                                                       : (CT)((x) % (y)))
#define BX_remainder_EM_KIND_FLOAT(x, y, CT)                         \
  ({ CT m_ = FM2(fmod, x, y); (m_ != 0 && ((y) < 0) != (m_ < 0)) ? m_ + (y) : m_; })
#define BX_fmod_EM_KIND_INT(x, y, CT) ((y) == (CT)-1 && (CT)-1 < 0 ? (CT)0 : (CT)((x) % (y)))
#define BX_fmod_EM_KIND_FLOAT(x, y, CT) FM2(fmod, x, y)
#define BX_pow_EM_KIND_INT(x, y, CT) ((CT)powi64((int64_t)(x), (int64_t)(y)))
#define BX_pow_EM_KIND_FLOAT(x, y, CT) FM2(pow, x, y)
#define BX_atan2_EM_KIND_FLOAT(x, y, CT) FM2(atan2, x, y)
#define BX_maximum_EM_KIND_BOOL(x, y, CT) ((x) < (y) ? (y) : (x))
#define BX_maximum_EM_KIND_INT(x, y, CT) ((x) < (y) ? (y) : (x))
#define BX_maximum_EM_KIND_FLOAT(x, y, CT) \
  (((x) != (x) || (y) != (y)) ? (x) + (y) : (x) < (y) ? (y) : (x))
#define BX_minimum_EM_KIND_BOOL(x, y, CT) ((y) < (x) ? (y) : (x))
#define BX_minimum_EM_KIND_INT(x, y, CT) ((y) < (x) ? (y) : (x))
#define BX_minimum_EM_KIND_FLOAT(x, y, CT) \
  (((x) != (x) || (y) != (y)) ? (x) + (y) : (y) < (x) ? (y) : (x))
#define BX_eq_EM_KIND_BOOL(x, y, CT) ((x) == (y))
#define BX_eq_EM_KIND_INT(x, y, CT) ((x) == (y))
#define BX_eq_EM_KIND_FLOAT(x, y, CT) ((x) == (y))
#define BX_ne_EM_KIND_BOOL(x, y, CT) ((x) != (y))
#define BX_ne_EM_KIND_INT(x, y, CT) ((x) != (y))
#define BX_ne_EM_KIND_FLOAT(x, y, CT) ((x) != (y))
#define BX_lt_EM_KIND_BOOL(x, y, CT) ((x) < (y))
#define BX_lt_EM_KIND_INT(x, y, CT) ((x) < (y))
#define BX_lt_EM_KIND_FLOAT(x, y, CT) ((x) < (y))
#define BX_le_EM_KIND_BOOL(x, y, CT) ((x) <= (y))
#define BX_le_EM_KIND_INT(x, y, CT) ((x) <= (y))
#define BX_le_EM_KIND_FLOAT(x, y, CT) ((x) <= (y))
#define BX_gt_EM_KIND_BOOL(x, y, CT) ((x) > (y))
#define BX_gt_EM_KIND_INT(x, y, CT) ((x) > (y))
#define BX_gt_EM_KIND_FLOAT(x, y, CT) ((x) > (y))
#define BX_ge_EM_KIND_BOOL(x, y, CT) ((x) >= (y))
#define BX_ge_EM_KIND_INT(x, y, CT) ((x) >= (y))
#define BX_ge_EM_KIND_FLOAT(x, y, CT) ((x) >= (y))
#define BX_land_EM_KIND_BOOL(x, y, CT) ((x) && (y))
#define BX_lor_EM_KIND_BOOL(x, y, CT) ((x) || (y))
#define BX_lxor_EM_KIND_BOOL(x, y, CT) ((!(x)) != (!(y)))
#define BX_band_EM_KIND_BOOL(x, y, CT) ((x) & (y))
#define BX_band_EM_KIND_INT(x, y, CT) ((CT)((x) & (y)))
#define BX_bor_EM_KIND_BOOL(x, y, CT) ((x) | (y))
#define BX_bor_EM_KIND_INT(x, y, CT) ((CT)((x) | (y)))
#define BX_bxor_EM_KIND_BOOL(x, y, CT) ((x) ^ (y))
#define BX_bxor_EM_KIND_INT(x, y, CT) ((CT)((x) ^ (y)))
/* Shifts by a negative count or by the width or more are defined as in
** PyTorch 2.x: left gives 0, right gives the sign fill. */
#define BX_lshift_EM_KIND_INT(x, y, CT) \
  (((y) < 0 || (int64_t)(y) >= (int64_t)(8 * sizeof(CT))) ? (CT)0 : (CT)((uint64_t)(x) << (y)))
#define BX_rshift_EM_KIND_INT(x, y, CT)                                    \
  (((y) < 0 || (int64_t)(y) >= (int64_t)(8 * sizeof(CT))) ? (CT)((x) < 0 ? -1 : 0) \
                                                          : (CT)((x) >> (y)))

/* The special functions (issue 19): computed in double (cpu/special.h),
** rounded once to the compute type. */
#define SPD(CT, e) ((CT)(e))
#define BX_xlogy_EM_KIND_FLOAT(x, y, CT) \
  ((y) != (y) ? (y) : (x) == 0 ? (CT)0 : (CT)((double)(x) * log((double)(y))))
#define BX_xlog1py_EM_KIND_FLOAT(x, y, CT) \
  ((y) != (y) ? (y) : (x) == 0 ? (CT)0 : (CT)((double)(x) * log1p((double)(y))))
#define BX_logaddexp_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_logaddexp(x, y))
#define BX_logaddexp2_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_logaddexp2(x, y))
#define BX_hypot_EM_KIND_FLOAT(x, y, CT) FM2(hypot, x, y)
#define BX_copysign_EM_KIND_FLOAT(x, y, CT) FM2(copysign, x, y)
#define BX_nextafter_EM_KIND_FLOAT(x, y, CT) FM2(nextafter, x, y)
#define BX_gcd_EM_KIND_INT(x, y, CT) ((CT)gcd_u64(mag_u64(x), mag_u64(y)))
/* PyTorch's abs(a / g * b) in the dtype: an overflowed product wraps, then
** its absolute value is taken (also wrapping: abs(INT_MIN) is INT_MIN) */
#define BX_lcm_EM_KIND_INT(x, y, CT) \
  ({ uint64_t g_ = gcd_u64(mag_u64(x), mag_u64(y)); \
     CT r_ = g_ == 0 ? (CT)0 : (CT)(mag_u64(x) / g_ * mag_u64(y)); \
     (CT)((int64_t)r_ < 0 ? 0 - (uint64_t)(int64_t)r_ : (uint64_t)(int64_t)r_); })
#define BX_heaviside_EM_KIND_BOOL(x, y, CT) ((x) == 0 ? (y) : 1)
#define BX_heaviside_EM_KIND_INT(x, y, CT) ((x) == 0 ? (y) : (CT)((x) > 0))
#define BX_heaviside_EM_KIND_FLOAT(x, y, CT) ((x) == 0 ? (y) : (CT)((x) > 0))
#define BX_zeta_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_zeta(x, y))
#define BX_gammainc_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_igamma(x, y, 0))
#define BX_gammaincc_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_igamma(x, y, 1))
#define BX_cheb_t_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(0, x, y))
#define BX_cheb_u_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(1, x, y))
#define BX_cheb_v_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(2, x, y))
#define BX_cheb_w_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(3, x, y))
#define BX_scheb_t_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(4, x, y))
#define BX_scheb_u_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(5, x, y))
#define BX_scheb_v_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(6, x, y))
#define BX_scheb_w_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(7, x, y))
#define BX_hermite_h_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(8, x, y))
#define BX_hermite_he_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(9, x, y))
#define BX_laguerre_l_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(10, x, y))
#define BX_legendre_p_EM_KIND_FLOAT(x, y, CT) SPD(CT, em_sp_poly(11, x, y))

/* The binary ops: X(name, kind mask, output class). */
/* The binary ops: X(name, kind mask, output class), from core/kern_ew.h. */
#define BINARY_OPS(X, S, E, T, K) EM_EW_BINARY_KERNELS(X, S, E, T, K)

/* A binary loop: operands (out, a, b). Three contiguous paths (both
** inputs dense, or one of them a broadcast scalar) are plain indexed loops
** the compiler vectorises; anything else walks the byte strides. */
#define DEF_BINARY(OP, M, OUTC, S, E, T, K)                                     \
  WHEN_##M##_##K(                                                               \
  static void em_##OP##_##S(char **data, const int64_t *st, int64_t n, void *vk) { \
    const em_kctx kc = *(const em_kctx *)vk, *k = &kc;                          \
    const CT_##S alpha_ct = ALPHA_##K(kc, CT_##S);                              \
    typedef OTYPE_##OUTC(T) OT_;                                                \
    char *o = data[0];                                                          \
    const char *a = data[1], *b = data[2];                                      \
    const int64_t so = st[0], sa = st[1], sb = st[2];                           \
    (void)k; (void)alpha_ct;                                                    \
    if (EM_K_##OP == EM_K_pow && K == EM_KIND_FLOAT && vec_pow(E, o, so, a, sa, b, sb, n)) \
      return;                                                                   \
    if (so == (int64_t)sizeof(OT_) && sa == (int64_t)sizeof(T) &&               \
        sb == (int64_t)sizeof(T)) {                                             \
      OT_ *op = (OT_ *)o;                                                       \
      const T *ap = (const T *)a, *bp = (const T *)b;                           \
      for (int64_t i = 0; i < n; i++) {                                         \
        const CT_##S x = LD_##S(ap[i]), y = LD_##S(bp[i]);                      \
        op[i] = STO_##OUTC(S, BX_##OP##_##K(x, y, CT_##S));                     \
      }                                                                         \
    } else if (so == (int64_t)sizeof(OT_) && sa == (int64_t)sizeof(T) && sb == 0) { \
      OT_ *op = (OT_ *)o;                                                       \
      const T *ap = (const T *)a;                                               \
      const CT_##S y = LD_##S(*(const T *)b);                                   \
      for (int64_t i = 0; i < n; i++) {                                         \
        const CT_##S x = LD_##S(ap[i]);                                         \
        op[i] = STO_##OUTC(S, BX_##OP##_##K(x, y, CT_##S));                     \
      }                                                                         \
    } else if (so == (int64_t)sizeof(OT_) && sa == 0 && sb == (int64_t)sizeof(T)) { \
      OT_ *op = (OT_ *)o;                                                       \
      const T *bp = (const T *)b;                                               \
      const CT_##S x = LD_##S(*(const T *)a);                                   \
      for (int64_t i = 0; i < n; i++) {                                         \
        const CT_##S y = LD_##S(bp[i]);                                         \
        op[i] = STO_##OUTC(S, BX_##OP##_##K(x, y, CT_##S));                     \
      }                                                                         \
    } else {                                                                    \
      for (int64_t i = 0; i < n; i++, o += so, a += sa, b += sb) {              \
        const CT_##S x = LD_##S(*(const T *)a), y = LD_##S(*(const T *)b);      \
        *(OT_ *)o = STO_##OUTC(S, BX_##OP##_##K(x, y, CT_##S));                 \
      }                                                                         \
    }                                                                           \
  })

#define DEF_BINARIES(S, E, T, K) BINARY_OPS(DEF_BINARY, S, E, T, K)
EM_FOR_EACH_DTYPE(DEF_BINARIES)

/* -- Unary expressions: UX_<op>_<kind>(x, CT) ------------------------------ */

#define UX_neg_EM_KIND_INT(x, CT) WSUB(CT, 0, x)
#define UX_neg_EM_KIND_FLOAT(x, CT) (-(x))
#define UX_abs_EM_KIND_INT(x, CT) ((x) < 0 ? WSUB(CT, 0, x) : (x))
#define UX_abs_EM_KIND_FLOAT(x, CT) FM(fabs, x)
#define UX_sign_EM_KIND_BOOL(x, CT) (x)
#define UX_sign_EM_KIND_INT(x, CT) ((CT)(((x) > 0) - ((x) < 0)))
#define UX_sign_EM_KIND_FLOAT(x, CT) ((CT)((0 < (x)) - ((x) < 0)))
#define UX_sqrt_EM_KIND_FLOAT(x, CT) FM(sqrt, x)
#define UX_rsqrt_EM_KIND_FLOAT(x, CT) ((CT)1 / FM(sqrt, x))
#define UX_square_EM_KIND_INT(x, CT) WMUL(CT, x, x)
#define UX_square_EM_KIND_FLOAT(x, CT) ((x) * (x))
#define UX_reciprocal_EM_KIND_FLOAT(x, CT) ((CT)1 / (x))
#define UX_exp_EM_KIND_FLOAT(x, CT) FM(exp, x)
#define UX_exp2_EM_KIND_FLOAT(x, CT) FM(exp2, x)
#define UX_expm1_EM_KIND_FLOAT(x, CT) FM(expm1, x)
#define UX_log_EM_KIND_FLOAT(x, CT) FM(log, x)
#define UX_log2_EM_KIND_FLOAT(x, CT) FM(log2, x)
#define UX_log10_EM_KIND_FLOAT(x, CT) FM(log10, x)
#define UX_log1p_EM_KIND_FLOAT(x, CT) FM(log1p, x)
#define UX_sin_EM_KIND_FLOAT(x, CT) FM(sin, x)
#define UX_cos_EM_KIND_FLOAT(x, CT) FM(cos, x)
#define UX_tan_EM_KIND_FLOAT(x, CT) FM(tan, x)
#define UX_asin_EM_KIND_FLOAT(x, CT) FM(asin, x)
#define UX_acos_EM_KIND_FLOAT(x, CT) FM(acos, x)
#define UX_atan_EM_KIND_FLOAT(x, CT) FM(atan, x)
#define UX_asinh_EM_KIND_FLOAT(x, CT) FM(asinh, x)
#define UX_acosh_EM_KIND_FLOAT(x, CT) FM(acosh, x)
#define UX_atanh_EM_KIND_FLOAT(x, CT) FM(atanh, x)
#define UX_erfcx_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_erfcx(x))
#define UX_bessel_j0_EM_KIND_FLOAT(x, CT) SPD(CT, j0((double)(x)))
#define UX_bessel_j1_EM_KIND_FLOAT(x, CT) SPD(CT, j1((double)(x)))
#define UX_bessel_y0_EM_KIND_FLOAT(x, CT) SPD(CT, y0((double)(x)))
#define UX_bessel_y1_EM_KIND_FLOAT(x, CT) SPD(CT, y1((double)(x)))
#define UX_bessel_k0_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_bessel_k(0, 0, x))
#define UX_bessel_k1_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_bessel_k(1, 0, x))
#define UX_bessel_k0e_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_bessel_k(0, 1, x))
#define UX_bessel_k1e_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_bessel_k(1, 1, x))
#define UX_airy_ai_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_airy_ai(x))
#define UX_spherical_j0_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_spherical_j0(x))
#define UX_sinh_EM_KIND_FLOAT(x, CT) FM(sinh, x)
#define UX_cosh_EM_KIND_FLOAT(x, CT) FM(cosh, x)
#define UX_tanh_EM_KIND_FLOAT(x, CT) FM(tanh, x)
#define UX_sigmoid_EM_KIND_FLOAT(x, CT) ((CT)1 / ((CT)1 + FM(exp, -(x))))
#define UX_relu_EM_KIND_INT(x, CT) ((x) < 0 ? (CT)0 : (x))
#define UX_relu_EM_KIND_FLOAT(x, CT) ((x) < 0 ? (CT)0 : (x))
#define UX_gelu_EM_KIND_FLOAT(x, CT)                                               \
  (k->i0 ? (CT)0.5 * (x) *                                                         \
               ((CT)1 + FM(tanh, (CT)(M_SQRT2 * M_2_SQRTPI * 0.5) *                \
                                     ((x) + (CT)0.044715 * (x) * (x) * (x))))      \
         : (x) * (CT)0.5 * ((CT)1 + FM(erf, (x) * (CT)M_SQRT1_2)))
#define UX_silu_EM_KIND_FLOAT(x, CT) ((x) / ((CT)1 + FM(exp, -(x))))
#define UX_softplus_EM_KIND_FLOAT(x, CT) \
  ((x) * (CT)k->p0 > (CT)k->p1 ? (x) : FM(log1p, FM(exp, (x) * (CT)k->p0)) / (CT)k->p0)
#define UX_erf_EM_KIND_FLOAT(x, CT) FM(erf, x)
#define UX_floor_EM_KIND_INT(x, CT) (x)
#define UX_floor_EM_KIND_FLOAT(x, CT) FM(floor, x)
#define UX_ceil_EM_KIND_INT(x, CT) (x)
#define UX_ceil_EM_KIND_FLOAT(x, CT) FM(ceil, x)
#define UX_round_EM_KIND_INT(x, CT) (x)
#define UX_round_EM_KIND_FLOAT(x, CT) ROUND_DEC(x, k->i0)
#define UX_trunc_EM_KIND_INT(x, CT) (x)
#define UX_trunc_EM_KIND_FLOAT(x, CT) FM(trunc, x)
#define UX_frac_EM_KIND_FLOAT(x, CT) ((x) - FM(trunc, x))
#define UX_nan_to_num_EM_KIND_BOOL(x, CT) (x)
#define UX_nan_to_num_EM_KIND_INT(x, CT) (x)
#define UX_nan_to_num_EM_KIND_FLOAT(x, CT)                                    \
  ((x) != (x) ? (CT)k->p0                                                     \
   : isinf(x) ? ((x) > 0 ? (CT)k->p1 : (CT)k->p2) : (x))
#define UX_isnan_EM_KIND_BOOL(x, CT) ((void)(x), 0)
#define UX_isnan_EM_KIND_INT(x, CT) ((void)(x), 0)
#define UX_isnan_EM_KIND_FLOAT(x, CT) ((x) != (x))
#define UX_isinf_EM_KIND_BOOL(x, CT) ((void)(x), 0)
#define UX_isinf_EM_KIND_INT(x, CT) ((void)(x), 0)
#define UX_isinf_EM_KIND_FLOAT(x, CT) (isinf(x) != 0)
#define UX_isfinite_EM_KIND_BOOL(x, CT) ((void)(x), 1)
#define UX_isfinite_EM_KIND_INT(x, CT) ((void)(x), 1)
#define UX_isfinite_EM_KIND_FLOAT(x, CT) (isfinite(x) != 0)
#define UX_lnot_EM_KIND_BOOL(x, CT) (!(x))
#define UX_bnot_EM_KIND_BOOL(x, CT) (!(x))
#define UX_bnot_EM_KIND_INT(x, CT) ((CT)~(x))
#define UX_erfc_EM_KIND_FLOAT(x, CT) FM(erfc, x)
#define UX_erfinv_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_erfinv(x))
#define UX_lgamma_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_lgamma(x))
#define UX_digamma_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_digamma(x))
#define UX_polygamma_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_polygamma(k->i0, x))
#define UX_i0_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_i0(x))
#define UX_i0e_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_i0e(x))
#define UX_i1_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_i1(x))
#define UX_i1e_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_i1e(x))
#define UX_ndtr_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_ndtr(x))
#define UX_ndtri_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_ndtri(x))
#define UX_log_ndtr_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_log_ndtr(x))
#define UX_sinc_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_sinc(x))
#define UX_entr_EM_KIND_FLOAT(x, CT) SPD(CT, em_sp_entr(x))
/* logit with eps: PyTorch clamps to [eps, 1 - eps] with the bounds in the
** compute type (float32's 1 - 1e-6 is 0.99999899), as its scalar kernel:
** x < lo ? lo : x > hi ? hi : x */
static inline double logit_clamp(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}
#define UX_logit_EM_KIND_FLOAT(x, CT)                                                  \
  SPD(CT, (k->flags & 1) ? em_sp_logit(logit_clamp((double)(x), (double)(CT)k->p0,    \
                                                   (double)((CT)1 - (CT)k->p0)), 0, 0) \
                         : em_sp_logit(x, 0, 0))

#define UNARY_OPS(X, S, E, T, K) EM_EW_UNARY_KERNELS(X, S, E, T, K)

#define TERNARY_OPS(X, S, E, T, K) EM_EW_TERNARY_KERNELS(X, S, E, T, K)


#define DEF_UNARY(OP, M, OUTC, S, E, T, K)                                      \
  WHEN_##M##_##K(                                                               \
  static void em_##OP##_##S(char **data, const int64_t *st, int64_t n, void *vk) { \
    const em_kctx kc = *(const em_kctx *)vk, *k = &kc;                          \
    typedef OTYPE_##OUTC(T) OT_;                                                \
    char *o = data[0];                                                          \
    const char *a = data[1];                                                    \
    const int64_t so = st[0], sa = st[1];                                       \
    (void)k;                                                                    \
    if (K == EM_KIND_FLOAT && vm_of[EM_K_##OP] && vec_run(EM_K_##OP, k, E, o, so, a, sa, n)) \
      return;                                                                   \
    if (so == (int64_t)sizeof(OT_) && sa == (int64_t)sizeof(T)) {               \
      OT_ *op = (OT_ *)o;                                                       \
      const T *ap = (const T *)a;                                               \
      for (int64_t i = 0; i < n; i++) {                                         \
        const CT_##S x = LD_##S(ap[i]);                                         \
        op[i] = STO_##OUTC(S, UX_##OP##_##K(x, CT_##S));                        \
      }                                                                         \
    } else {                                                                    \
      for (int64_t i = 0; i < n; i++, o += so, a += sa) {                       \
        const CT_##S x = LD_##S(*(const T *)a);                                 \
        *(OT_ *)o = STO_##OUTC(S, UX_##OP##_##K(x, CT_##S));                    \
      }                                                                         \
    }                                                                           \
  })

#define DEF_UNARIES(S, E, T, K) UNARY_OPS(DEF_UNARY, S, E, T, K)
EM_FOR_EACH_DTYPE(DEF_UNARIES)

/* -- Ternary: lerp (out, start, end, weight), clamp (out, x, lo, hi) -------- */

/* PyTorch's lerp: the formula is chosen by |weight| < 0.5 so both ends are
** exact. */
#define TX_lerp_EM_KIND_FLOAT(x, y, w, CT)                                  \
  (FM(fabs, w) < (CT)0.5 ? (x) + (w) * ((y) - (x)) : (y) - ((y) - (x)) * ((CT)1 - (w)))
/* clamp: a NaN in the value or a bound gives NaN (PyTorch's vectorised
** maximum/minimum); min > max gives max. */
#define CLAMP_STEP_LO(r, lo) (((r) != (r) || (lo) != (lo)) ? (r) + (lo) : (r) < (lo) ? (lo) : (r))
#define CLAMP_STEP_HI(r, hi) (((r) != (r) || (hi) != (hi)) ? (r) + (hi) : (hi) < (r) ? (hi) : (r))
#define TX_clamp_ANY(x, lo, hi, CT)                                          \
  ({ CT r_ = (x);                                                            \
     if (k->flags & 1) r_ = (CT)CLAMP_STEP_LO(r_, lo);                       \
     if (k->flags & 2) r_ = (CT)CLAMP_STEP_HI(r_, hi);                       \
     r_; })
#define TX_clamp_EM_KIND_INT TX_clamp_ANY
#define TX_clamp_EM_KIND_FLOAT TX_clamp_ANY

#define DEF_TERNARY(OP, M, OUTC, S, E, T, K)                                    \
  WHEN_##M##_##K(                                                               \
  static void em_##OP##_##S(char **data, const int64_t *st, int64_t n, void *vk) { \
    const em_kctx kc = *(const em_kctx *)vk, *k = &kc;                          \
    typedef OTYPE_##OUTC(T) OT_;                                                \
    char *o = data[0];                                                          \
    const char *a = data[1], *b = data[2], *c = data[3];                        \
    const int64_t so = st[0], sa = st[1], sb = st[2], sc = st[3];               \
    (void)k;                                                                    \
    if (so == (int64_t)sizeof(OT_) && sa == (int64_t)sizeof(T) && sb == 0 &&    \
        sc == 0) { /* scalar bounds / end and weight: hoisted */                \
      OT_ *op = (OT_ *)o;                                                       \
      const T *ap = (const T *)a;                                               \
      const CT_##S y = LD_##S(*(const T *)b), z = LD_##S(*(const T *)c);        \
      for (int64_t i = 0; i < n; i++) {                                         \
        const CT_##S x = LD_##S(ap[i]);                                         \
        op[i] = STO_##OUTC(S, TX_##OP##_##K(x, y, z, CT_##S));                  \
      }                                                                         \
      return;                                                                   \
    }                                                                           \
    for (int64_t i = 0; i < n; i++, o += so, a += sa, b += sb, c += sc) {       \
      const CT_##S x = LD_##S(*(const T *)a), y = LD_##S(*(const T *)b),        \
                   z = LD_##S(*(const T *)c);                                   \
      *(OT_ *)o = STO_##OUTC(S, TX_##OP##_##K(x, y, z, CT_##S));                \
    }                                                                           \
  })

#define DEF_TERNARIES(S, E, T, K) TERNARY_OPS(DEF_TERNARY, S, E, T, K)
EM_FOR_EACH_DTYPE(DEF_TERNARIES)

/* -- Dispatch tables: [kernel][dtype], NULL where the kind is unsupported -- */

#define TAB_K(OP, M, OUTC, S, E, T, K) WHEN_##M##_##K([EM_K_##OP][E] = em_##OP##_##S, )
#define TAB_ALL(S, E, T, K)                                      \
  BINARY_OPS(TAB_K, S, E, T, K) UNARY_OPS(TAB_K, S, E, T, K)     \
  TERNARY_OPS(TAB_K, S, E, T, K)
static const em_loop1d kernels[EM_EW_NKERNELS][EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(TAB_ALL)};

/* -- Zero scan for integer division ---------------------------------------- */

#define DEF_ANYZERO(NAME, UT)                                                 \
  static void NAME(char **data, const int64_t *st, int64_t n, void *ctx) {     \
    const char *p = data[0];                                                  \
    int found = 0;                                                            \
    for (int64_t i = 0; i < n; i++, p += st[0]) found |= *(const UT *)p == 0;  \
    if (found) *(int *)ctx = 1;                                               \
  }
DEF_ANYZERO(anyzero1, uint8_t)
DEF_ANYZERO(anyzero2, uint16_t)
DEF_ANYZERO(anyzero4, uint32_t)
DEF_ANYZERO(anyzero8, uint64_t)

static int cpu_any_zero(const em_iter *it, em_dtype dt) {
  int found = 0;
  if (it->numel == 0) return 0;
  em_loop1d f = em_dtype_size(dt) == 1   ? anyzero1
                : em_dtype_size(dt) == 2 ? anyzero2
                : em_dtype_size(dt) == 4 ? anyzero4
                                         : anyzero8;
  em_iter_run(it, f, &found);
  return found;
}

/* A small 1-d iteration (ops/elementwise.c's flat path: every operand
** contiguous) is one call of the loop; anything else is cut over the
** engine's threads when large (parallel.c). */
enum { EW_SERIAL_MAX = 16384 };
static void cpu_ew_run(em_ew_kernel k, em_dtype dt, const em_iter *it, const em_kctx *ctx) {
  if (it->numel == 0) return;
  em_loop1d loop = kernels[k][dt];
  if (it->ndim == 1 && it->numel < EW_SERIAL_MAX) {
    /* dim 0's strides are one row of it->strides; the loops only read data[] */
    loop((char **)it->data, it->strides[0], it->numel, (void *)ctx);
    return;
  }
  em_iter_run_parallel(it, loop, (void *)ctx);
}

const em_ew_kernels em_cpu_ew_kernels = {
    .run = cpu_ew_run,
    .any_zero = cpu_any_zero,
};
