/*
** cpu/vecmath_avx2.c -- the AVX2 + FMA code of the transcendental functions,
** for cpu/vmath.c's dispatch: ember's own float32 exp, log, tanh, sigmoid,
** silu, erf (cpu/vecmath_impl.h's element functions, multiply-adds fused)
** and gelu (both forms, below), and
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
** - gelu (float32): x Phi(x), Phi(x) = erfc(-u) / 2, u = x / sqrt 2, in
**   float with FMA: erfc(|u|) = exp(-x^2 / 2) R(t), t = 1 / (1 + |u| / 2),
**   R fitted on [0, 10.5] (relative error 5.2 ulp once its coefficients
**   are floats), x^2 split exactly into two floats by FMA so exp's argument
**   is exact, and Phi = erfc / 2 or 1 - erfc / 2 by the sign of x. Within
**   8 ulp of the exact value (tests/c/test_vmath.c), the tail x < 0
**   included (no cancellation: gelu(-10) is the tiny exact value, PyTorch's
**   is 0).
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
#include "cpu/vecmath_impl.h"

/* gelu of one float with FMA (the header says how) */
static inline float gelu_fma_one(float x) {
  float u = x * 0.707106781186547524f, a = fabsf(u);
  /* erfc(|u|) = exp(-x^2 / 2) R(t), kept times 2^24 (x clamped where Phi is
  ** 0 or 1 in float) */
  float xc = x > -15.0f ? x : -15.0f; /* selects, not fminf: they vectorise */
  xc = xc < 15.0f ? xc : 15.0f;
  float h = xc * xc, l = fmaf(xc, xc, -h); /* x^2 = h + l */
  float e = exp_one_x2p24(-0.5f * h);
  e = fmaf(e, -0.5f * l, e); /* exp(-(h + l) / 2) 2^24 */
  float t = 1.0f / fmaf(0.5f, a < 10.7f ? a : 10.7f, 1.0f);
  float r = -0.05065286532044411f;
  r = fmaf(r, t, 0.2418069988489151f);
  r = fmaf(r, t, -0.39392155408859253f);
  r = fmaf(r, t, 0.16385337710380554f);
  r = fmaf(r, t, 0.059586044400930405f);
  r = fmaf(r, t, 0.16123642027378082f);
  r = fmaf(r, t, 0.255753755569458f);
  r = fmaf(r, t, 0.2800194323062897f);
  r = fmaf(r, t, 0.28232887387275696f);
  r = fmaf(r, t, -1.0495987226022407e-05f);
  float ec = e * r; /* erfc(|u|) 2^24 */
  float neg = (x * (0.5f * ec)) * 0x1p-24f; /* rounded once, also when subnormal */
  neg = x < -15.0f ? x * 0.0f : neg; /* -0, and NaN at -inf (-inf * 0, PyTorch's) */
  float pos = x * fmaf(-0x1p-25f, ec, 1.0f);
  return u < 0 ? neg : pos; /* NaN stays NaN */
}

/* gelu's tanh form with FMA: with y = -2v, x / (1 + exp(y)) for y <= 0 and
** x exp(-y) / (1 + exp(-y)) above (so a result in the subnormal range is
** not lost to exp(y) = inf); -|y| in double, split into two floats. */
static inline float gelu_tanh_fma_one(float x) {
  double d = (double)x;
  double y = d * (-1.5957691216057308 - 0.07135481627260025 * (d * d));
  double yn = -fabs(y);
  yn = yn > -200.0 ? yn : -200.0; /* NaN goes to -200 */
  float yh = (float)yn, yl = (float)(yn - (double)yh);
  float es = exp_one_x2p24(yh);
  es = fmaf(es, yl, es); /* exp(-|y|) 2^24 */
  float den = fmaf(es, 0x1p-24f, 1.0f);
  float r = y > 0 ? ((x * es) / den) * 0x1p-24f : x / den;
  return x == -INFINITY ? x * 0.0f : r; /* the formula's -inf * 0 = NaN */
}

/* exp, sigmoid, silu, tanh, log: cpu/vecmath.c's element functions
** (cpu/vecmath_impl.h) with their multiply-adds fused */
void em_avx2_exp_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = exp_one(in[i]);
}

void em_avx2_sigmoid_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = 1.0f / (1.0f + exp_one(-in[i]));
}

void em_avx2_silu_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = in[i] / (1.0f + exp_one(-in[i]));
}

void em_avx2_tanh_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = tanh_one(in[i]);
}

void em_avx2_log_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = log_one(in[i]);
}

void em_avx2_erf_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = erf_one(in[i]);
}

void em_avx2_gelu_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = gelu_fma_one(in[i]);
}

void em_avx2_gelu_tanh_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = gelu_tanh_fma_one(in[i]);
}

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
