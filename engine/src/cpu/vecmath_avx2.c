/*
** cpu/vecmath_avx2.c -- the AVX2 + FMA code of the transcendental functions,
** for cpu/vmath.c's dispatch: ember's own float32 exp, log, tanh, sigmoid,
** silu, erf (cpu/vecmath_impl.h's element functions, multiply-adds fused)
** and gelu (both forms; cpu/vecmath_fma.h's loops at 8 lanes), and
** SLEEF's AVX2 functions (libsleef, Boost Software License 1.0) when SLEEF
** was found (EMBER_HAVE_SLEEF). Built with -mavx2 -mfma on x86-64
** (CMakeLists.txt); nothing here runs unless vmath.c has seen AVX2 and FMA
** on the CPU.
**
** What holds:
** - out[i] = f(in[i]) for i < n; out may equal in. An element's result
**   depends only on its input (SLEEF's wrappers run the last n % 8 (n % 4)
**   elements through one padded vector), so not on its position or the run
**   length.
** - gelu (float32): cpu/gelu_simd.h, within 8 ulp of x Phi(x); the loops
**   of ember's own functions are cpu/vecmath_fma.h's, also built for
**   AVX-512 (cpu/vecmath_avx512.c).
** - gelu's tanh form: x / (1 + exp(y)), y = -2 sqrt(2 / pi) (x + 0.044715
**   x^3) computed in double and split into two floats, so exp is accurate
**   however large |y| (x e / (1 + e), e = exp(-y), for y > 0); within 4 ulp.
** - SLEEF's u10 functions (1.0 ulp bound, SLEEF's documentation) except erfc
**   (u15). float32 log1p above 1e38 is log(x) (SLEEF's log1pf gives inf
**   there; log1p(x) = log(x) to float precision). float64 sigmoid is 1 / (1 +
**   exp(-x)), gelu x erfc(-x / sqrt 2) / 2, the tanh form x / (1 + exp(-2v)).
*/
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

#include "cpu/vecmath.h"

/* ember's own loops (cpu/vecmath_fma.h) at 8 lanes */
#define VM_FN(name) em_avx2_##name##_f32
#define G_LANES 8
#define G_LOAD _mm256_loadu_ps
#define G_STORE _mm256_storeu_ps
#define GV __m256
#define GVI __m256i
#define G_SET _mm256_set1_ps
#define G_SETI _mm256_set1_epi32
#define G_ADD _mm256_add_ps
#define G_SUB _mm256_sub_ps
#define G_MUL _mm256_mul_ps
#define G_DIV _mm256_div_ps
#define G_MIN _mm256_min_ps
#define G_MAX _mm256_max_ps
#define G_FMA _mm256_fmadd_ps
#define G_FMS _mm256_fmsub_ps
#define G_FNMA _mm256_fnmadd_ps
#define G_ABS(v) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (v))
#define G_I _mm256_castps_si256
#define G_F _mm256_castsi256_ps
#define G_ISUB _mm256_sub_epi32
#define G_IADD _mm256_add_epi32
#define G_ISHL23(v) _mm256_slli_epi32((v), 23)
#define G_SEL_LT(x, y, a, b) _mm256_blendv_ps((a), (b), _mm256_cmp_ps((x), (y), _CMP_LT_OQ))
#define G_SEL_NEG(x, a, b) _mm256_blendv_ps((a), (b), (x))
#include "cpu/vecmath_fma.h"

#ifdef EMBER_HAVE_SLEEF
#include <sleef.h>

/* f: __m256 -> __m256 over n floats */
#define LOOP_F8(NAME, EXPR)                                                   \
  void NAME(float *out, const float *in, int64_t n) {                         \
    int64_t i = 0;                                                            \
    for (; i + 8 <= n; i += 8) {                                              \
      __m256 x = _mm256_loadu_ps(in + i);                                     \
      _mm256_storeu_ps(out + i, EXPR);                                        \
    }                                                                         \
    if (i < n) {                                                              \
      float buf[8] = {0};                                                     \
      for (int64_t j = 0; j < n - i; j++) buf[j] = in[i + j];                 \
      __m256 x = _mm256_loadu_ps(buf);                                        \
      _mm256_storeu_ps(buf, EXPR);                                            \
      for (int64_t j = 0; j < n - i; j++) out[i + j] = buf[j];                \
    }                                                                         \
  }
#define LOOP_D4(NAME, EXPR)                                                   \
  void NAME(double *out, const double *in, int64_t n) {                       \
    int64_t i = 0;                                                            \
    for (; i + 4 <= n; i += 4) {                                              \
      __m256d x = _mm256_loadu_pd(in + i);                                    \
      _mm256_storeu_pd(out + i, EXPR);                                        \
    }                                                                         \
    if (i < n) {                                                              \
      double buf[4] = {0};                                                    \
      for (int64_t j = 0; j < n - i; j++) buf[j] = in[i + j];                 \
      __m256d x = _mm256_loadu_pd(buf);                                       \
      _mm256_storeu_pd(buf, EXPR);                                            \
      for (int64_t j = 0; j < n - i; j++) out[i + j] = buf[j];                \
    }                                                                         \
  }

static inline __m256 log1p_f8(__m256 x) {
  __m256 big = _mm256_cmp_ps(x, _mm256_set1_ps(1e38f), _CMP_GT_OQ);
  return _mm256_blendv_ps(Sleef_log1pf8_u10avx2(x), Sleef_logf8_u10avx2(x), big);
}

LOOP_F8(em_avx2_sin_f32, Sleef_sinf8_u10avx2(x))
LOOP_F8(em_avx2_cos_f32, Sleef_cosf8_u10avx2(x))
LOOP_F8(em_avx2_log1p_f32, log1p_f8(x))
LOOP_F8(em_avx2_expm1_f32, Sleef_expm1f8_u10avx2(x))

static inline __m256d log1p_d4(__m256d x) {
  __m256d big = _mm256_cmp_pd(x, _mm256_set1_pd(1e307), _CMP_GT_OQ);
  return _mm256_blendv_pd(Sleef_log1pd4_u10avx2(x), Sleef_logd4_u10avx2(x), big);
}
static inline __m256d sigmoid_d4(__m256d x) {
  __m256d one = _mm256_set1_pd(1.0);
  __m256d e = Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_setzero_pd(), x));
  return _mm256_div_pd(one, _mm256_add_pd(one, e));
}
static inline __m256d gelu_d4(__m256d x) {
  __m256d u = _mm256_mul_pd(x, _mm256_set1_pd(-0.70710678118654752440));
  __m256d phi = _mm256_mul_pd(Sleef_erfcd4_u15avx2(u), _mm256_set1_pd(0.5));
  return _mm256_mul_pd(x, phi);
}
static inline __m256d gelu_tanh_d4(__m256d x) {
  __m256d x3 = _mm256_mul_pd(_mm256_mul_pd(x, x), x);
  __m256d v = _mm256_mul_pd(_mm256_add_pd(x, _mm256_mul_pd(x3, _mm256_set1_pd(0.044715))),
                            _mm256_set1_pd(-2 * 0.79788456080286535588));
  __m256d r = _mm256_div_pd(x, _mm256_add_pd(_mm256_set1_pd(1.0), Sleef_expd4_u10avx2(v)));
  /* -inf: the formula's -inf * 0 = NaN, as PyTorch */
  __m256d ninf = _mm256_cmp_pd(x, _mm256_set1_pd(-__builtin_inf()), _CMP_EQ_OQ);
  return _mm256_blendv_pd(r, _mm256_set1_pd(__builtin_nan("")), ninf);
}

LOOP_D4(em_avx2_exp_f64, Sleef_expd4_u10avx2(x))
LOOP_D4(em_avx2_log_f64, Sleef_logd4_u10avx2(x))
LOOP_D4(em_avx2_log1p_f64, log1p_d4(x))
LOOP_D4(em_avx2_expm1_f64, Sleef_expm1d4_u10avx2(x))
LOOP_D4(em_avx2_sin_f64, Sleef_sind4_u10avx2(x))
LOOP_D4(em_avx2_cos_f64, Sleef_cosd4_u10avx2(x))
LOOP_D4(em_avx2_tanh_f64, Sleef_tanhd4_u10avx2(x))
LOOP_D4(em_avx2_erf_f64, Sleef_erfd4_u10avx2(x))
LOOP_D4(em_avx2_sigmoid_f64, sigmoid_d4(x))
LOOP_D4(em_avx2_gelu_f64, gelu_d4(x))
LOOP_D4(em_avx2_gelu_tanh_f64, gelu_tanh_d4(x))

/* pow: y[i] with ystep 1, y[0] for every element with ystep 0 */
void em_avx2_pow_f32(float *out, const float *x, const float *y, int64_t ystep, int64_t n) {
  int64_t i = 0;
  __m256 ys = _mm256_set1_ps(y[0]);
  for (; i + 8 <= n; i += 8) {
    __m256 yv = ystep ? _mm256_loadu_ps(y + i) : ys;
    _mm256_storeu_ps(out + i, Sleef_powf8_u10avx2(_mm256_loadu_ps(x + i), yv));
  }
  if (i < n) {
    float bx[8] = {0}, by[8] = {0};
    for (int64_t j = 0; j < n - i; j++) bx[j] = x[i + j], by[j] = y[ystep * (i + j)];
    _mm256_storeu_ps(bx, Sleef_powf8_u10avx2(_mm256_loadu_ps(bx), _mm256_loadu_ps(by)));
    for (int64_t j = 0; j < n - i; j++) out[i + j] = bx[j];
  }
}
void em_avx2_pow_f64(double *out, const double *x, const double *y, int64_t ystep, int64_t n) {
  int64_t i = 0;
  __m256d ys = _mm256_set1_pd(y[0]);
  for (; i + 4 <= n; i += 4) {
    __m256d yv = ystep ? _mm256_loadu_pd(y + i) : ys;
    _mm256_storeu_pd(out + i, Sleef_powd4_u10avx2(_mm256_loadu_pd(x + i), yv));
  }
  if (i < n) {
    double bx[4] = {0}, by[4] = {0};
    for (int64_t j = 0; j < n - i; j++) bx[j] = x[i + j], by[j] = y[ystep * (i + j)];
    _mm256_storeu_pd(bx, Sleef_powd4_u10avx2(_mm256_loadu_pd(bx), _mm256_loadu_pd(by)));
    for (int64_t j = 0; j < n - i; j++) out[i + j] = bx[j];
  }
}
#endif /* EMBER_HAVE_SLEEF */
#else
typedef int em_vecmath_avx2_unused; /* not an AVX2 + FMA build: nothing here */
#endif
