/*
** cpu/elementwise.c -- the elementwise ops: per-dtype kernels and the one
** dispatcher (em_elementwise) that types, allocates and runs them.
**
** What holds:
** - Types follow PyTorch: the result type is em_result_type of the inputs,
**   then the op's rule (true division and transcendental functions turn
**   integers into the default float, comparisons/tests give bool, logical
**   ops read their inputs as bool). Inputs are converted to the compute
**   dtype before the kernel runs, so each kernel reads one dtype.
** - float16/bfloat16 are loaded as float, computed in float and rounded
**   once on the store. Integer arithmetic wraps modulo 2^bits (it is done on
**   uint64_t, so there is no signed-overflow UB); integer division by zero
**   is an error found before anything is written.
** - Every kernel is a 1-d inner loop of the iterator (iter.h) with a
**   contiguous path the compiler vectorises; each element is computed
**   independently, so results do not depend on the thread count. float32
**   exp, sigmoid, silu, tanh and log hand their runs to cpu/vecmath.c
**   (strided runs through a buffer: the same bits for any layout).
** - Kernels are generated from EM_FOR_EACH_DTYPE: one function per
**   (op, dtype), named em_<op>_<dtype> (em_add_f32, em_sqrt_bf16), for the
**   dtype kinds the op supports; the dispatch tables are filled by the same
**   expansion, so an op/dtype pair without a kernel is a clean error.
*/
#include <float.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>

#include "core/iter.h"
#include "autograd/autograd.h"
#include "vecmath.h"

#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wbool-operation"
#pragma GCC diagnostic ignored "-Wint-in-bool-context"

/* -- Kernel state --------------------------------------------------------- */

typedef struct em_kctx {
  int64_t ai;      /* alpha as an integer (add/sub) */
  double af;       /* alpha as a float */
  double p0, p1, p2; /* softplus beta/threshold; nan_to_num nan/posinf/neginf */
  int64_t i0;      /* round: decimals; gelu: tanh approximation */
  int flags;       /* clamp: 1 has min, 2 has max */
} em_kctx;

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

/* The binary ops: X(name, kind mask, output class). */
#define BINARY_OPS(X, S, E, T, K)                                           \
  X(add, BIF, SAME, S, E, T, K) X(mul, BIF, SAME, S, E, T, K)               \
  X(div, F, SAME, S, E, T, K) X(divtrunc, IF, SAME, S, E, T, K)             \
  X(divfloor, IF, SAME, S, E, T, K) X(remainder, IF, SAME, S, E, T, K)      \
  X(fmod, IF, SAME, S, E, T, K) X(pow, IF, SAME, S, E, T, K)                \
  X(atan2, F, SAME, S, E, T, K) X(maximum, BIF, SAME, S, E, T, K)           \
  X(minimum, BIF, SAME, S, E, T, K) X(eq, BIF, BOOL, S, E, T, K)            \
  X(ne, BIF, BOOL, S, E, T, K) X(lt, BIF, BOOL, S, E, T, K)                 \
  X(le, BIF, BOOL, S, E, T, K) X(gt, BIF, BOOL, S, E, T, K)                 \
  X(ge, BIF, BOOL, S, E, T, K) X(land, B, BOOL, S, E, T, K)                 \
  X(lor, B, BOOL, S, E, T, K) X(lxor, B, BOOL, S, E, T, K)                  \
  X(band, BI, SAME, S, E, T, K) X(bor, BI, SAME, S, E, T, K)                \
  X(bxor, BI, SAME, S, E, T, K) X(lshift, I, SAME, S, E, T, K)              \
  X(rshift, I, SAME, S, E, T, K)

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

#define UNARY_OPS(X, S, E, T, K)                                                \
  X(neg, IF, SAME, S, E, T, K) X(abs, IF, SAME, S, E, T, K)                     \
  X(sign, BIF, SAME, S, E, T, K) X(sqrt, F, SAME, S, E, T, K)                   \
  X(rsqrt, F, SAME, S, E, T, K) X(square, IF, SAME, S, E, T, K)                 \
  X(reciprocal, F, SAME, S, E, T, K) X(exp, F, SAME, S, E, T, K)                \
  X(exp2, F, SAME, S, E, T, K) X(expm1, F, SAME, S, E, T, K)                    \
  X(log, F, SAME, S, E, T, K) X(log2, F, SAME, S, E, T, K)                      \
  X(log10, F, SAME, S, E, T, K) X(log1p, F, SAME, S, E, T, K)                   \
  X(sin, F, SAME, S, E, T, K) X(cos, F, SAME, S, E, T, K)                       \
  X(tan, F, SAME, S, E, T, K) X(asin, F, SAME, S, E, T, K)                      \
  X(acos, F, SAME, S, E, T, K) X(atan, F, SAME, S, E, T, K)                     \
  X(sinh, F, SAME, S, E, T, K) X(cosh, F, SAME, S, E, T, K)                     \
  X(tanh, F, SAME, S, E, T, K) X(sigmoid, F, SAME, S, E, T, K)                  \
  X(relu, IF, SAME, S, E, T, K) X(gelu, F, SAME, S, E, T, K)                    \
  X(silu, F, SAME, S, E, T, K) X(softplus, F, SAME, S, E, T, K)                 \
  X(erf, F, SAME, S, E, T, K) X(floor, IF, SAME, S, E, T, K)                    \
  X(ceil, IF, SAME, S, E, T, K) X(round, IF, SAME, S, E, T, K)                  \
  X(trunc, IF, SAME, S, E, T, K) X(frac, F, SAME, S, E, T, K)                   \
  X(nan_to_num, BIF, SAME, S, E, T, K) X(isnan, BIF, BOOL, S, E, T, K)          \
  X(isinf, BIF, BOOL, S, E, T, K) X(isfinite, BIF, BOOL, S, E, T, K)            \
  X(lnot, B, BOOL, S, E, T, K) X(bnot, BI, SAME, S, E, T, K)

#define TERNARY_OPS(X, S, E, T, K) \
  X(lerp, F, SAME, S, E, T, K) X(clamp, IF, SAME, S, E, T, K)

/* The kernel numbers: rows of the dispatch table (below). */
#define ENUM_K(OP, M, OUTC, S, E, T, K) KERN_##OP,
enum { BINARY_OPS(ENUM_K, _, _, _, _) UNARY_OPS(ENUM_K, _, _, _, _)
       TERNARY_OPS(ENUM_K, _, _, _, _) KERN_COUNT };

/* float32 ops with a vector implementation (cpu/vecmath.c): their kernels
** hand each run to it. A strided run goes through a small buffer, so an
** element's result does not depend on the layout either. */
static const em_vec_f32_fn vec_f32[KERN_COUNT] = {
    [KERN_exp] = em_vexp_f32, [KERN_sigmoid] = em_vsigmoid_f32,
    [KERN_silu] = em_vsilu_f32, [KERN_tanh] = em_vtanh_f32, [KERN_log] = em_vlog_f32};

static void vec_run_f32(em_vec_f32_fn fn, char *o, int64_t so, const char *a,
                        int64_t sa, int64_t n) {
  if (so == 4 && sa == 4) {
    fn((float *)o, (const float *)a, n);
    return;
  }
  float buf[256];
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    int64_t m = n - i0 < 256 ? n - i0 : 256;
    for (int64_t j = 0; j < m; j++) buf[j] = *(const float *)(a + (i0 + j) * sa);
    fn(buf, buf, m);
    for (int64_t j = 0; j < m; j++) *(float *)(o + (i0 + j) * so) = buf[j];
  }
}

#define DEF_UNARY(OP, M, OUTC, S, E, T, K)                                      \
  WHEN_##M##_##K(                                                               \
  static void em_##OP##_##S(char **data, const int64_t *st, int64_t n, void *vk) { \
    const em_kctx kc = *(const em_kctx *)vk, *k = &kc;                          \
    typedef OTYPE_##OUTC(T) OT_;                                                \
    char *o = data[0];                                                          \
    const char *a = data[1];                                                    \
    const int64_t so = st[0], sa = st[1];                                       \
    (void)k;                                                                    \
    if (E == EM_FLOAT32 && vec_f32[KERN_##OP]) {                                \
      vec_run_f32(vec_f32[KERN_##OP], o, so, a, sa, n);                         \
      return;                                                                   \
    }                                                                           \
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

#define TAB_K(OP, M, OUTC, S, E, T, K) WHEN_##M##_##K([KERN_##OP][E] = em_##OP##_##S, )
#define TAB_ALL(S, E, T, K)                                      \
  BINARY_OPS(TAB_K, S, E, T, K) UNARY_OPS(TAB_K, S, E, T, K)     \
  TERNARY_OPS(TAB_K, S, E, T, K)
static const em_loop1d kernels[KERN_COUNT][EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(TAB_ALL)};

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

static em_status has_zero(const em_tensor *t, int *found) {
  em_iter it;
  const em_tensor *ops[1] = {t};
  *found = 0;
  em_status st = em_iter_build(&it, "div", 1, ops, t->ndim, t->sizes, false);
  if (st != EM_OK || it.numel == 0) return st;
  em_loop1d f = em_dtype_size(t->dtype) == 1   ? anyzero1
                : em_dtype_size(t->dtype) == 2 ? anyzero2
                : em_dtype_size(t->dtype) == 4 ? anyzero4
                                               : anyzero8;
  em_iter_run(&it, f, found);
  return EM_OK;
}

/* -- The op table ----------------------------------------------------------- */

typedef enum {
  R_SAME,    /* compute and result in result_type */
  R_FLOAT,   /* integers and bool become the default float */
  R_CMP,     /* compute in result_type, result bool */
  R_LOGICAL, /* inputs read as bool, result bool */
  R_TEST,    /* compute in the input's dtype, result bool */
  R_LERP     /* all tensor operands share one floating dtype */
} type_rule;

typedef struct {
  const char *name;
  int arity;
  type_rule rule;
  int kernel;
} op_info;

static const op_info op_table[EM_OP_COUNT] = {
    [EM_OP_ADD] = {"add", 2, R_SAME, KERN_add},
    [EM_OP_SUB] = {"sub", 2, R_SAME, KERN_add},
    [EM_OP_MUL] = {"mul", 2, R_SAME, KERN_mul},
    [EM_OP_DIV] = {"div", 2, R_FLOAT, KERN_div},
    [EM_OP_REMAINDER] = {"remainder", 2, R_SAME, KERN_remainder},
    [EM_OP_FMOD] = {"fmod", 2, R_SAME, KERN_fmod},
    [EM_OP_POW] = {"pow", 2, R_SAME, KERN_pow},
    [EM_OP_ATAN2] = {"atan2", 2, R_FLOAT, KERN_atan2},
    [EM_OP_MAXIMUM] = {"maximum", 2, R_SAME, KERN_maximum},
    [EM_OP_MINIMUM] = {"minimum", 2, R_SAME, KERN_minimum},
    [EM_OP_EQ] = {"eq", 2, R_CMP, KERN_eq},
    [EM_OP_NE] = {"ne", 2, R_CMP, KERN_ne},
    [EM_OP_LT] = {"lt", 2, R_CMP, KERN_lt},
    [EM_OP_LE] = {"le", 2, R_CMP, KERN_le},
    [EM_OP_GT] = {"gt", 2, R_CMP, KERN_gt},
    [EM_OP_GE] = {"ge", 2, R_CMP, KERN_ge},
    [EM_OP_LOGICAL_AND] = {"logical_and", 2, R_LOGICAL, KERN_land},
    [EM_OP_LOGICAL_OR] = {"logical_or", 2, R_LOGICAL, KERN_lor},
    [EM_OP_LOGICAL_XOR] = {"logical_xor", 2, R_LOGICAL, KERN_lxor},
    [EM_OP_BITWISE_AND] = {"bitwise_and", 2, R_SAME, KERN_band},
    [EM_OP_BITWISE_OR] = {"bitwise_or", 2, R_SAME, KERN_bor},
    [EM_OP_BITWISE_XOR] = {"bitwise_xor", 2, R_SAME, KERN_bxor},
    [EM_OP_LSHIFT] = {"bitwise_left_shift", 2, R_SAME, KERN_lshift},
    [EM_OP_RSHIFT] = {"bitwise_right_shift", 2, R_SAME, KERN_rshift},
    [EM_OP_NEG] = {"neg", 1, R_SAME, KERN_neg},
    [EM_OP_ABS] = {"abs", 1, R_SAME, KERN_abs},
    [EM_OP_SIGN] = {"sign", 1, R_SAME, KERN_sign},
    [EM_OP_SQRT] = {"sqrt", 1, R_FLOAT, KERN_sqrt},
    [EM_OP_RSQRT] = {"rsqrt", 1, R_FLOAT, KERN_rsqrt},
    [EM_OP_SQUARE] = {"square", 1, R_SAME, KERN_square},
    [EM_OP_RECIPROCAL] = {"reciprocal", 1, R_FLOAT, KERN_reciprocal},
    [EM_OP_EXP] = {"exp", 1, R_FLOAT, KERN_exp},
    [EM_OP_EXP2] = {"exp2", 1, R_FLOAT, KERN_exp2},
    [EM_OP_EXPM1] = {"expm1", 1, R_FLOAT, KERN_expm1},
    [EM_OP_LOG] = {"log", 1, R_FLOAT, KERN_log},
    [EM_OP_LOG2] = {"log2", 1, R_FLOAT, KERN_log2},
    [EM_OP_LOG10] = {"log10", 1, R_FLOAT, KERN_log10},
    [EM_OP_LOG1P] = {"log1p", 1, R_FLOAT, KERN_log1p},
    [EM_OP_SIN] = {"sin", 1, R_FLOAT, KERN_sin},
    [EM_OP_COS] = {"cos", 1, R_FLOAT, KERN_cos},
    [EM_OP_TAN] = {"tan", 1, R_FLOAT, KERN_tan},
    [EM_OP_ASIN] = {"asin", 1, R_FLOAT, KERN_asin},
    [EM_OP_ACOS] = {"acos", 1, R_FLOAT, KERN_acos},
    [EM_OP_ATAN] = {"atan", 1, R_FLOAT, KERN_atan},
    [EM_OP_SINH] = {"sinh", 1, R_FLOAT, KERN_sinh},
    [EM_OP_COSH] = {"cosh", 1, R_FLOAT, KERN_cosh},
    [EM_OP_TANH] = {"tanh", 1, R_FLOAT, KERN_tanh},
    [EM_OP_SIGMOID] = {"sigmoid", 1, R_FLOAT, KERN_sigmoid},
    [EM_OP_RELU] = {"relu", 1, R_SAME, KERN_relu},
    [EM_OP_GELU] = {"gelu", 1, R_SAME, KERN_gelu},
    [EM_OP_SILU] = {"silu", 1, R_SAME, KERN_silu},
    [EM_OP_SOFTPLUS] = {"softplus", 1, R_SAME, KERN_softplus},
    [EM_OP_ERF] = {"erf", 1, R_FLOAT, KERN_erf},
    [EM_OP_FLOOR] = {"floor", 1, R_SAME, KERN_floor},
    [EM_OP_CEIL] = {"ceil", 1, R_SAME, KERN_ceil},
    [EM_OP_ROUND] = {"round", 1, R_SAME, KERN_round},
    [EM_OP_TRUNC] = {"trunc", 1, R_SAME, KERN_trunc},
    [EM_OP_FRAC] = {"frac", 1, R_SAME, KERN_frac},
    [EM_OP_NAN_TO_NUM] = {"nan_to_num", 1, R_SAME, KERN_nan_to_num},
    [EM_OP_ISNAN] = {"isnan", 1, R_TEST, KERN_isnan},
    [EM_OP_ISINF] = {"isinf", 1, R_TEST, KERN_isinf},
    [EM_OP_ISFINITE] = {"isfinite", 1, R_TEST, KERN_isfinite},
    [EM_OP_LOGICAL_NOT] = {"logical_not", 1, R_LOGICAL, KERN_lnot},
    [EM_OP_BITWISE_NOT] = {"bitwise_not", 1, R_SAME, KERN_bnot},
    [EM_OP_LERP] = {"lerp", 3, R_LERP, KERN_lerp},
    [EM_OP_CLAMP] = {"clamp", 3, R_SAME, KERN_clamp},
};

const char *em_ew_op_name(em_ew_op op) {
  return (unsigned)op < EM_OP_COUNT ? op_table[op].name : "invalid op";
}
int em_ew_op_arity(em_ew_op op) {
  return (unsigned)op < EM_OP_COUNT ? op_table[op].arity : 0;
}

/* One constant, copied: building the struct field by field on every call
** (every operator call from Lua starts here) stalled on its own stores */
static const em_ew_opts ew_defaults = {
    .alpha = {EM_SCALAR_INT, 1, 1.0},
    .rounding = EM_ROUND_NONE,
    .beta = 1.0,
    .threshold = 20.0,
    .has_min = 1,
    .has_max = 1,
    .default_float = EM_FLOAT32,
};
em_ew_opts em_ew_defaults(void) { return ew_defaults; }

/* -- Helpers ----------------------------------------------------------------- */

static double dtype_max(em_dtype dt) {
  switch (dt) {
    case EM_FLOAT16: return 65504.0;
    case EM_BFLOAT16: return 3.3895313892515355e38;
    case EM_FLOAT32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

/* A 0-d tensor of dtype dt holding v (converted with the cast rules). */
static em_status scalar_tensor(em_scalar v, em_dtype dt, em_tensor **out) {
  return em_full(0, NULL, v, dt, em_cpu(), out);
}

/* A new tensor of `shape` laid out as TensorIterator would lay it out for
** these inputs; contents uninitialised (every element is written next). */
static em_status alloc_like_inputs(int nin, const em_tensor *const *ins, int ndim,
                                   const int64_t *shape, em_dtype dt, em_device dev,
                                   em_tensor **out) {
  int64_t strides[EM_MAX_DIMS], numel;
  em_status st = em_numel_checked("elementwise", ndim, shape, &numel);
  if (st != EM_OK) return st;
  em_iter_output_strides(nin, ins, ndim, shape, strides);
  em_storage *s;
  st = em_storage_new((size_t)numel * em_dtype_size(dt), dev, &s);
  if (st != EM_OK) return st;
  st = em_tensor_alloc(s, 0, ndim, shape, strides, dt, out);
  em_storage_release(s);
  return st;
}

/* Gives an empty out tensor the result's shape with fresh storage (as
** PyTorch resizes an empty out=). Other views of its old storage keep it. */
static em_status resize_out(em_tensor *out, int nin, const em_tensor *const *ins,
                            int ndim, const int64_t *shape) {
  em_tensor *fresh;
  em_status st = alloc_like_inputs(nin, ins, ndim, shape, out->dtype,
                                   out->storage->device, &fresh);
  if (st != EM_OK) return st;
  em_storage *old = out->storage;
  out->storage = fresh->storage;
  em_storage_retain(out->storage);
  out->offset = 0;
  out->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    out->sizes[i] = fresh->sizes[i];
    out->strides[i] = fresh->strides[i];
  }
  em_storage_release(old);
  em_tensor_release(fresh);
  return EM_OK;
}

static int same_shape(const em_tensor *t, int ndim, const int64_t *shape) {
  if (t->ndim != ndim) return 0;
  for (int i = 0; i < ndim; i++)
    if (t->sizes[i] != shape[i]) return 0;
  return 1;
}

static em_status dev_name(em_device d, char *buf, size_t n) {
  if (d.type == EM_CPU) snprintf(buf, n, "cpu");
  else snprintf(buf, n, "cuda:%d", d.index);
  return EM_OK;
}

/* -- The small same-shape path ---------------------------------------------
** Per-call cost (docs/performance.md): for operands of one shape that are
** all contiguous, the iteration is one flat run of numel elements in every
** operand's memory order, which is what em_iter_build would find after
** ordering and coalescing. Below EW_FLAT_MAX elements em_iter_run_parallel
** runs serially anyway, so the kernel is called once, directly. */
enum { EW_FLAT_MAX = 16384 };

static int ew_same_shapes(int n, const em_tensor *const *ts) {
  for (int i = 1; i < n; i++)
    if (!same_shape(ts[i], ts[0]->ndim, ts[0]->sizes)) return 0;
  return 1;
}

/* ops[0] is the written tensor; every operand has ops[0]'s shape and is
** contiguous (so flat position p is the same element in each) */
static int ew_flat(int nops, const em_tensor *const *ops) {
  if (em_tensor_numel(ops[0]) >= EW_FLAT_MAX) return 0;
  for (int i = 0; i < nops; i++) {
    if (i > 0 && !same_shape(ops[i], ops[0]->ndim, ops[0]->sizes)) return 0;
    if (!em_tensor_is_contiguous(ops[i])) return 0;
  }
  return 1;
}

static void ew_run_flat(int nops, const em_tensor *const *ops, em_loop1d loop,
                        void *ctx) {
  int64_t n = em_tensor_numel(ops[0]);
  if (n == 0) return;
  char *data[EM_ITER_MAX_OPS];
  int64_t strides[EM_ITER_MAX_OPS];
  for (int i = 0; i < nops; i++) {
    data[i] = em_tensor_data(ops[i]);
    strides[i] = (int64_t)em_dtype_size(ops[i]->dtype);
  }
  loop(data, strides, n, ctx);
}

/* -- em_elementwise ------------------------------------------------------- */

/* add/sub's scale of the second operand (sub negates it) in the kernel state */
static void ew_alpha(em_ew_op op, em_scalar alpha, em_kctx *k) {
  k->ai = alpha.kind == EM_SCALAR_FLOAT ? 0 : alpha.i;
  k->af = alpha.kind == EM_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  if (op == EM_OP_SUB) {
    k->ai = (int64_t)(0 - (uint64_t)k->ai);
    k->af = -k->af;
  }
}

/* The per-call case of `a + b` from a script: add/sub/mul/div of two small
** float tensors of one dtype and one shape, both contiguous with exactly
** the contiguous strides, no out, default options, nothing for autograd to
** record. Everything the general path decides is then known: the result
** type is the operands' dtype, there is no broadcasting, no cast, no
** overlap, no error to raise, and the result is allocated by the same
** routine and computed by the same kernel over the flat range (ew_flat's
** path). Skipping the general path's setup saves about 1,200 instructions
** of a 1-element add. Returns 0 (touching nothing) when the case does not
** apply; then the general path runs. */
static int ew_small_binary(em_ew_op op, int n, const em_operand *in,
                           const em_ew_opts *opts, em_tensor *out,
                           em_tensor **result, em_status *st) {
  if (out || !result || n != 2) return 0;
  if (op != EM_OP_ADD && op != EM_OP_SUB && op != EM_OP_MUL && op != EM_OP_DIV) return 0;
  em_scalar alpha = {EM_SCALAR_INT, 1, 1.0};
  if (opts) {
    if (opts->rounding != EM_ROUND_NONE) return 0;
    if (op == EM_OP_ADD || op == EM_OP_SUB) alpha = opts->alpha;
  }
  const em_tensor *a = in[0].tensor, *b = in[1].tensor;
  if (!a || !b || a->dtype != b->dtype) return 0;
  if (a->dtype != EM_FLOAT32 && a->dtype != EM_FLOAT64) return 0;
  if (alpha.kind == EM_SCALAR_BOOL) return 0;  /* the general path's error */
  if (a->storage->device.type != EM_CPU || b->storage->device.type != EM_CPU) return 0;
  if (a->ndim != b->ndim) return 0;
  int64_t strides[EM_MAX_DIMS], numel = 1;
  em_contiguous_strides(a->ndim, a->sizes, strides);
  for (int i = 0; i < a->ndim; i++) {
    if (a->sizes[i] != b->sizes[i] || a->strides[i] != strides[i] ||
        b->strides[i] != strides[i])
      return 0;
    numel *= a->sizes[i];
    if (numel >= EW_FLAT_MAX) return 0;
  }
  em_loop1d kern = kernels[op_table[op].kernel][a->dtype];
  if (!kern) return 0;
  const em_tensor *ins[2] = {a, b};
  int on = em_ag_pause();
  int any = on && em_ag_any(2, ins);  /* as em_elementwise: stale views catch up */
  em_ag_resume(on);
  if (any) return 0;
  /* the result: contiguous, as em_iter_output_strides makes it for operands
  ** with exactly the contiguous strides (test_math checks both agree) */
  em_tensor *target = NULL;
  em_storage *s;
  *st = em_storage_new((size_t)numel * em_dtype_size(a->dtype), em_cpu(), &s);
  if (*st == EM_OK) {
    *st = em_tensor_alloc(s, 0, a->ndim, a->sizes, strides, a->dtype, &target);
    em_storage_release(s);
  }
  if (*st == EM_OK) {
    em_kctx k;
    memset(&k, 0, sizeof k);
    if (op == EM_OP_ADD || op == EM_OP_SUB) ew_alpha(op, alpha, &k);
    const em_tensor *ops[3] = {target, a, b};
    ew_run_flat(3, ops, kern, &k);
    *result = target;
  }
  return 1;
}


static em_status elementwise_nograd(em_ew_op op, int n, const em_operand *inputs,
                                    const em_ew_opts *opts, em_tensor *out,
                                    em_tensor **result) {
  if ((unsigned)op >= EM_OP_COUNT)
    return em_fail(EM_E_VALUE, "elementwise: invalid op %d", (int)op);
  const op_info *oi = &op_table[op];
  em_ew_opts o = opts ? *opts : em_ew_defaults();
  const char *name = o.name ? o.name : oi->name;
  if (n != oi->arity)
    return em_fail(EM_E_VALUE, "%s: expected %d operands, got %d", name, oi->arity, n);
  if (em_dtype_kindof(o.default_float) != EM_KIND_FLOAT) o.default_float = EM_FLOAT32;

  /* present operands: clamp may lack a bound */
  int present[3] = {1, n > 1, n > 2};
  if (op == EM_OP_CLAMP) {
    present[1] = o.has_min;
    present[2] = o.has_max;
    if (!o.has_min && !o.has_max)
      return em_fail(EM_E_VALUE, "%s: at least one of 'min' or 'max' must not be nil", name);
  }
  em_operand ops[3];
  const em_tensor *tens[4];
  int nops = 0, ntens = 0;
  for (int i = 0; i < n; i++) {
    if (!present[i]) continue;
    ops[nops++] = inputs[i];
    if (inputs[i].tensor) tens[ntens++] = inputs[i].tensor;
  }
  if (ntens == 0)
    return em_fail(EM_E_VALUE, "%s: expected at least one tensor operand", name);

  /* devices: all tensors (and out) on one device; kernels are CPU only */
  em_device dev = tens[0]->storage->device;
  for (int i = 0; i <= ntens; i++) {
    const em_tensor *t = i < ntens ? tens[i] : out;
    if (!t) continue;
    if (!em_device_equal(t->storage->device, dev)) {
      char d1[32], d2[32];
      dev_name(dev, d1, sizeof d1);
      dev_name(t->storage->device, d2, sizeof d2);
      return em_fail(EM_E_RUNTIME,
                     "%s: expected all tensors to be on the same device, but found at "
                     "least two devices, %s and %s", name, d1, d2);
    }
  }
  if (dev.type != EM_CPU)
    return em_fail(EM_E_RUNTIME, "%s: not implemented for device cuda:%d", name, dev.index);

  /* -- types */
  em_dtype rt = em_result_type(nops, ops, o.default_float);
  em_dtype compute, outdt;
  int kernel = oi->kernel;
  if (op == EM_OP_DIV && o.rounding != EM_ROUND_NONE)
    kernel = o.rounding == EM_ROUND_TRUNC ? KERN_divtrunc : KERN_divfloor;
  switch (oi->rule) {
    case R_FLOAT:
      compute = (op == EM_OP_DIV && o.rounding != EM_ROUND_NONE) ? rt
                : em_dtype_kindof(rt) == EM_KIND_FLOAT ? rt : o.default_float;
      outdt = compute;
      break;
    case R_CMP: compute = rt; outdt = EM_BOOL; break;
    case R_LOGICAL: compute = EM_BOOL; outdt = EM_BOOL; break;
    case R_TEST: compute = rt; outdt = EM_BOOL; break;
    case R_LERP: {
      em_dtype d0 = ops[0].tensor ? ops[0].tensor->dtype : rt;
      static const char *const what[3] = {"self", "end", "weight"};
      for (int i = 1; i < 3; i++)
        if (ops[i].tensor && ops[i].tensor->dtype != d0)
          return em_fail(EM_E_TYPE, "%s: expected dtype %s for `%s` but got dtype %s",
                         name, em_dtype_name(d0), what[i],
                         em_dtype_name(ops[i].tensor->dtype));
      compute = outdt = d0;
      break;
    }
    default: compute = outdt = rt; break;
  }
  if (op == EM_OP_SQUARE && compute == EM_BOOL) compute = outdt = EM_INT64;
  if (op == EM_OP_SUB) { /* PyTorch's sub_check: any bool operand */
    int nbool = 0;
    for (int i = 0; i < nops; i++)
      nbool += ops[i].tensor ? ops[i].tensor->dtype == EM_BOOL
                             : ops[i].scalar.kind == EM_SCALAR_BOOL;
    if (nbool == 2)
      return em_fail(EM_E_TYPE, "%s: subtraction, the `-` operator, with two bool tensors "
                     "is not supported; use logical_xor() instead", name);
    if (nbool)
      return em_fail(EM_E_TYPE, "%s: subtraction, the `-` operator, with a bool tensor is "
                     "not supported; to invert a mask use logical_not() instead", name);
  }
  if (op == EM_OP_NEG && compute == EM_BOOL)
    return em_fail(EM_E_TYPE, "%s: negation, the `-` operator, on a bool tensor is not "
                   "supported; to invert a mask use logical_not() instead", name);
  if (op == EM_OP_ROUND && o.decimals != 0 && em_dtype_kindof(compute) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: decimals are not supported for %s tensors", name,
                   em_dtype_name(compute));
  if (!kernels[kernel][compute])
    return em_fail(EM_E_TYPE, "%s: not implemented for %s tensors", name,
                   em_dtype_name(compute));

  /* -- kernel state */
  em_kctx k;
  memset(&k, 0, sizeof k);
  if (op == EM_OP_ADD || op == EM_OP_SUB) {
    if (o.alpha.kind == EM_SCALAR_FLOAT && em_dtype_kindof(compute) != EM_KIND_FLOAT)
      return em_fail(EM_E_TYPE, "%s: for integral input tensors, argument alpha must not "
                     "be a floating point number", name);
    if (o.alpha.kind == EM_SCALAR_BOOL && compute != EM_BOOL)
      return em_fail(EM_E_TYPE, "%s: boolean alpha only supported for boolean results", name);
    ew_alpha(op, o.alpha, &k);
  }
  if (op == EM_OP_SOFTPLUS) { k.p0 = o.beta; k.p1 = o.threshold; }
  if (op == EM_OP_GELU) k.i0 = o.gelu_tanh != 0;
  if (op == EM_OP_ROUND) k.i0 = o.decimals;
  if (op == EM_OP_NAN_TO_NUM) {
    k.p0 = o.has_nan ? o.nan : 0.0;
    k.p1 = o.has_posinf ? o.posinf : dtype_max(compute);
    k.p2 = o.has_neginf ? o.neginf : -dtype_max(compute);
  }
  if (op == EM_OP_CLAMP) k.flags = (o.has_min ? 1 : 0) | (o.has_max ? 2 : 0);
  if (op == EM_OP_POW && em_dtype_kindof(compute) != EM_KIND_FLOAT && !ops[1].tensor &&
      ((ops[1].scalar.kind == EM_SCALAR_INT && ops[1].scalar.i < 0)))
    return em_fail(EM_E_VALUE, "%s: integers to negative integer powers are not allowed", name);

  /* -- shape (tensors of one shape need no broadcasting rule: the common
  **    case of a per-call op, so the general routine is skipped) */
  int ndim;
  int64_t shape[EM_MAX_DIMS];
  em_status st = EM_OK;
  if (ew_same_shapes(ntens, tens)) {
    ndim = tens[0]->ndim;
    for (int i = 0; i < ndim; i++) shape[i] = tens[0]->sizes[i];
  } else {
    st = em_broadcast_shapes(name, ntens, tens, &ndim, shape);
    if (st != EM_OK) return st;
  }

  /* -- out checks */
  int inplace = out && inputs[0].tensor == out;
  if (out) {
    if (!em_can_cast(outdt, out->dtype))
      return em_fail(EM_E_TYPE, "%s: result type %s can't be cast to the desired output "
                     "type %s", name, em_dtype_pt_name(outdt), em_dtype_pt_name(out->dtype));
    if (!same_shape(out, ndim, shape)) {
      char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
      if (inplace || em_tensor_numel(out) != 0)
        return em_fail(EM_E_VALUE, "%s: output with shape %s doesn't match the broadcast "
                       "shape %s%s", name, em_fmt_shape(b1, sizeof b1, out->ndim, out->sizes),
                       em_fmt_shape(b2, sizeof b2, ndim, shape),
                       inplace ? "" : " (only an empty out tensor is resized)");
      st = resize_out(out, ntens, tens, ndim, shape);
      if (st != EM_OK) return st;
    }
    if (em_has_internal_overlap(out))
      return em_fail(EM_E_VALUE, "%s: unsupported operation: more than one element of the "
                     "written-to tensor refers to a single memory location; clone() the "
                     "tensor before performing the operation", name);
  }

  /* -- operands in the compute dtype; snapshots of inputs that partly
  **    overlap out (same layout is fine: each element is read before it is
  **    written, by the same step) */
  em_tensor *owned[3] = {NULL, NULL, NULL};
  const em_tensor *in[3];
  em_tensor *target = NULL;
  for (int i = 0; i < nops && st == EM_OK; i++) {
    const em_tensor *t = ops[i].tensor;
    if (!t) {
      st = scalar_tensor(ops[i].scalar, compute, &owned[i]);
    } else if (t->dtype != compute) {
      st = em_to(t, compute, dev, 1, &owned[i]);
    } else if (out && em_may_overlap(out, t) && !em_same_layout(out, t)) {
      st = em_clone(t, &owned[i]);
    }
    in[i] = owned[i] ? owned[i] : t;
  }
  /* clamp without one bound: the kernel ignores that operand; pass the
  ** other bound (a scalar bound keeps the loop on its hoisted path) */
  const em_tensor *kin[3];
  if (op == EM_OP_CLAMP) {
    int j = 0;
    kin[0] = in[j++];
    kin[1] = o.has_min ? in[j++] : NULL;
    kin[2] = o.has_max ? in[j++] : kin[1];
    if (!kin[1]) kin[1] = kin[2];
  } else {
    for (int i = 0; i < nops; i++) kin[i] = in[i];
  }
  int nk = oi->arity;

  /* integer division by zero is an error, as in PyTorch (ZeroDivisionError);
  ** it is found before anything is written */
  if (st == EM_OK && em_dtype_kindof(compute) != EM_KIND_FLOAT &&
      (op == EM_OP_REMAINDER || op == EM_OP_FMOD ||
       (op == EM_OP_DIV && o.rounding != EM_ROUND_NONE))) {
    int zero = 0;
    st = has_zero(kin[1], &zero);
    if (st == EM_OK && zero)
      st = em_fail(EM_E_VALUE, "%s: integer division by zero (ZeroDivisionError)", name);
  }

  /* -- target: out itself when it has the result dtype, else a temporary */
  if (st == EM_OK) {
    if (out && out->dtype == outdt) {
      target = out;
      em_tensor_retain(target);
    } else {
      st = alloc_like_inputs(ntens, tens, ndim, shape, outdt, dev, &target);
    }
  }
  if (st == EM_OK) {
    const em_tensor *itops[4] = {target, kin[0], nk > 1 ? kin[1] : NULL,
                                 nk > 2 ? kin[2] : NULL};
    if (ew_flat(nk + 1, itops)) {
      ew_run_flat(nk + 1, itops, kernels[kernel][compute], &k);
    } else {
      em_iter it;
      st = em_iter_build(&it, name, nk + 1, itops, ndim, shape, false);
      if (st == EM_OK && it.numel > 0)
        em_iter_run_parallel(&it, kernels[kernel][compute], &k);
    }
    if (st == EM_OK && target == out) em_storage_bump_version(out->storage);
  }
  if (st == EM_OK && out && target != out) st = em_copy_(out, target);
  for (int i = 0; i < 3; i++) em_tensor_release(owned[i]);
  if (st != EM_OK) {
    em_tensor_release(target);
    return st;
  }
  if (out) {
    em_tensor_release(target);
    if (result) {
      em_tensor_retain(out);
      *result = out;
    }
  } else {
    *result = target;
  }
  return EM_OK;
}

/* The public entry: the kernel above with grad mode paused, then the node
** for backward (autograd.h). In-place ops check that the written tensor may
** be written (not a leaf that requires grad) and keep the old value when the
** formula needs it; out= is not differentiable, as in PyTorch. */
em_status em_elementwise(em_ew_op op, int n, const em_operand *inputs,
                         const em_ew_opts *opts, em_tensor *out,
                         em_tensor **result) {
  em_status fast_st;
  if (inputs && ew_small_binary(op, n, inputs, opts, out, result, &fast_st)) return fast_st;
  if ((unsigned)op >= EM_OP_COUNT || !inputs || n != op_table[op].arity || n > 3)
    return elementwise_nograd(op, n, inputs, opts, out, result);
  em_ew_opts o = opts ? *opts : em_ew_defaults();
  const char *name = o.name ? o.name : op_table[op].name;
  const em_tensor *ins[3] = {NULL, NULL, NULL};
  for (int i = 0; i < n; i++) ins[i] = inputs[i].tensor;
  if (op == EM_OP_CLAMP && n == 3) {  /* an absent bound is no operand */
    if (!o.has_min) ins[1] = NULL;
    if (!o.has_max) ins[2] = NULL;
  }
  int on = em_ag_pause();
  int any = on && em_ag_any(n, ins);
  int inplace = out && inputs[0].tensor == out;
  int save_in = 0, save_out = 0;
  em_ag_ew_saves(op, &save_in, &save_out);
  em_status st = EM_OK;
  em_tensor *pre = NULL;
  if (on && inplace) st = em_ag_check_inplace(name, out);
  if (st == EM_OK && any && out && !inplace)
    st = em_fail(EM_E_VALUE, "%s: functions with out= arguments don't support automatic "
                 "differentiation, but one of the arguments requires grad", name);
  if (st == EM_OK && any && inplace && (save_in & 1)) {
    em_ag_resume(on);  /* recorded: the old value keeps its history */
    st = em_clone(out, &pre);
    em_ag_pause();
  }
  if (st == EM_OK) st = elementwise_nograd(op, n, inputs, opts, out, result);
  em_ag_resume(on);
  if (st == EM_OK && any) {
    em_ag_params p;
    memset(&p, 0, sizeof p);
    p.name = em_ag_ew_name(op, n > 1 && inputs[1].tensor != NULL);
    p.op = op;
    p.ew = o;
    for (int i = 0; i < n; i++) p.sc[i] = inputs[i].scalar;
    p.save_in = save_in;
    p.save_out = save_out;
    p.pre[0] = pre;
    em_tensor *res = out ? out : *result;
    st = em_ag_record(EM_AG_EW, n, ins, 1, &res, &p);
    if (st != EM_OK && !out) {
      em_tensor_release(*result);
      *result = NULL;
    }
    if (st != EM_OK && out && result) {
      em_tensor_release(*result);
      *result = NULL;
    }
  }
  em_tensor_release(pre);
  return st;
}

em_status em_binary(em_ew_op op, const em_tensor *a, const em_tensor *b,
                    em_tensor **result) {
  em_operand ops[2] = {{a, {EM_SCALAR_INT, 0, 0}}, {b, {EM_SCALAR_INT, 0, 0}}};
  return em_elementwise(op, 2, ops, NULL, NULL, result);
}

em_status em_unary(em_ew_op op, const em_tensor *x, em_tensor **result) {
  em_operand ops[1] = {{x, {EM_SCALAR_INT, 0, 0}}};
  return em_elementwise(op, 1, ops, NULL, NULL, result);
}
