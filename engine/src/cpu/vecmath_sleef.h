/*
** cpu/vecmath_sleef.h -- the loops around SLEEF's vector functions
** (libsleef, Boost Software License 1.0), one source for two widths:
** included by cpu/vecmath_avx2.c (8 floats / 4 doubles, SLEEF's avx2
** versions) and cpu/vecmath_avx512.c (16 / 8, SLEEF's avx512f versions),
** each after defining:
**   SL_FN(name, t)   the loop's name (em_avx2_sin_f32, em_avx512_sin_f32, ...)
**   SL_F(f), SL_D(f) SLEEF's float / double function f at 1.0 ulp
**                    (Sleef_sinf8_u10avx2, Sleef_sind8_u10avx512f, ...);
**                    SL_D15(f) its 1.5 ulp version (erfc)
**   SL_VF, SL_VD     the vector types; SL_NF, SL_ND their lanes
**   SL_LDF, SL_STF, SL_LDD, SL_STD, SL_SETF, SL_SETD
**   SL_SELGT_F(x, c, a, b), SL_SELGT_D, SL_SELEQ_D: x > c (x == c) ? b : a
**   SL_ADDD, SL_SUBD, SL_MULD, SL_DIVD
** SLEEF computes each lane by the same operations at both widths (FMA in
** both), and so the two builds give the same bits, except float64 sin and
** cos, whose avx512f versions reduce large arguments another way (1 ulp
** apart for about 1 double in 20,000): the AVX-512 build leaves those two
** out (SL_NO_TRIG_F64) and cpu/vmath.c runs the avx2 ones, so a result
** does not depend on which of the two CPUs computed it
** (tests/c/test_vmath.c compares the dispatch with the avx2 build over a
** sweep of floats and of doubles).
**
** What holds:
** - out[i] = f(in[i]) for i < n; out may equal in. An element's result
**   depends only on its input (the last n % lanes elements go through one
**   padded vector), so not on its position or the run length.
** - SLEEF's u10 functions (1.0 ulp bound, SLEEF's documentation) except erfc
**   (u15). float32 log1p above 1e38 is log(x) (SLEEF's log1pf gives inf
**   there; log1p(x) = log(x) to float precision). float64 sigmoid is 1 / (1 +
**   exp(-x)), gelu x erfc(-x / sqrt 2) / 2, the tanh form x / (1 + exp(-2v)).
*/
#include <sleef.h>

/* f: vector -> vector over n elements of type T (N lanes) */
#define SL_LOOP(NAME, T, V, N, LD, ST, EXPR)                                  \
  void NAME(T *out, const T *in, int64_t n) {                                 \
    int64_t i = 0;                                                            \
    for (; i + (N) <= n; i += (N)) {                                          \
      V x = LD(in + i);                                                       \
      ST(out + i, EXPR);                                                      \
    }                                                                         \
    if (i < n) {                                                              \
      T buf[N] = {0};                                                         \
      for (int64_t j = 0; j < n - i; j++) buf[j] = in[i + j];                 \
      V x = LD(buf);                                                          \
      ST(buf, EXPR);                                                          \
      for (int64_t j = 0; j < n - i; j++) out[i + j] = buf[j];                \
    }                                                                         \
  }
#define SL_LOOP_F(name, EXPR) SL_LOOP(SL_FN(name, f32), float, SL_VF, SL_NF, SL_LDF, SL_STF, EXPR)
#define SL_LOOP_D(name, EXPR) SL_LOOP(SL_FN(name, f64), double, SL_VD, SL_ND, SL_LDD, SL_STD, EXPR)

static inline SL_VF sl_log1p_f(SL_VF x) {
  return SL_SELGT_F(x, SL_SETF(1e38f), SL_F(log1p)(x), SL_F(log)(x));
}
static inline SL_VD sl_log1p_d(SL_VD x) {
  return SL_SELGT_D(x, SL_SETD(1e307), SL_D(log1p)(x), SL_D(log)(x));
}
static inline SL_VD sl_sigmoid_d(SL_VD x) {
  SL_VD one = SL_SETD(1.0);
  SL_VD e = SL_D(exp)(SL_SUBD(SL_SETD(0.0), x));
  return SL_DIVD(one, SL_ADDD(one, e));
}
static inline SL_VD sl_gelu_d(SL_VD x) {
  SL_VD u = SL_MULD(x, SL_SETD(-0.70710678118654752440));
  SL_VD phi = SL_MULD(SL_D15(erfc)(u), SL_SETD(0.5));
  return SL_MULD(x, phi);
}
static inline SL_VD sl_gelu_tanh_d(SL_VD x) {
  SL_VD x3 = SL_MULD(SL_MULD(x, x), x);
  SL_VD v = SL_MULD(SL_ADDD(x, SL_MULD(x3, SL_SETD(0.044715))),
                    SL_SETD(-2 * 0.79788456080286535588));
  SL_VD r = SL_DIVD(x, SL_ADDD(SL_SETD(1.0), SL_D(exp)(v)));
  /* -inf: the formula's -inf * 0 = NaN, as PyTorch */
  return SL_SELEQ_D(x, SL_SETD(-__builtin_inf()), r, SL_SETD(__builtin_nan("")));
}

SL_LOOP_F(sin, SL_F(sin)(x))
SL_LOOP_F(cos, SL_F(cos)(x))
SL_LOOP_F(log1p, sl_log1p_f(x))
SL_LOOP_F(expm1, SL_F(expm1)(x))

SL_LOOP_D(exp, SL_D(exp)(x))
SL_LOOP_D(log, SL_D(log)(x))
SL_LOOP_D(log1p, sl_log1p_d(x))
SL_LOOP_D(expm1, SL_D(expm1)(x))
#ifndef SL_NO_TRIG_F64
SL_LOOP_D(sin, SL_D(sin)(x))
SL_LOOP_D(cos, SL_D(cos)(x))
#endif
SL_LOOP_D(tanh, SL_D(tanh)(x))
SL_LOOP_D(erf, SL_D(erf)(x))
SL_LOOP_D(sigmoid, sl_sigmoid_d(x))
SL_LOOP_D(gelu, sl_gelu_d(x))
SL_LOOP_D(gelu_tanh, sl_gelu_tanh_d(x))

/* pow: y[i] with ystep 1, y[0] for every element with ystep 0 */
#define SL_POW(NAME, T, V, N, LD, ST, SET, POW)                               \
  void NAME(T *out, const T *x, const T *y, int64_t ystep, int64_t n) {       \
    int64_t i = 0;                                                            \
    V ys = SET(y[0]);                                                         \
    for (; i + (N) <= n; i += (N)) {                                          \
      V yv = ystep ? LD(y + i) : ys;                                          \
      ST(out + i, POW(LD(x + i), yv));                                        \
    }                                                                         \
    if (i < n) {                                                              \
      T bx[N] = {0}, by[N] = {0};                                             \
      for (int64_t j = 0; j < n - i; j++) bx[j] = x[i + j], by[j] = y[ystep * (i + j)]; \
      ST(bx, POW(LD(bx), LD(by)));                                            \
      for (int64_t j = 0; j < n - i; j++) out[i + j] = bx[j];                 \
    }                                                                         \
  }
SL_POW(SL_FN(pow, f32), float, SL_VF, SL_NF, SL_LDF, SL_STF, SL_SETF, SL_F(pow))
SL_POW(SL_FN(pow, f64), double, SL_VD, SL_ND, SL_LDD, SL_STD, SL_SETD, SL_D(pow))
