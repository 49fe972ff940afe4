/*
** cpu/vecmath_impl.h -- the element functions shared by cpu/vecmath.c
** (built for AVX2 and baseline x86-64, no FMA) and cpu/vecmath_avx2.c
** (AVX2 with FMA): static inline, so each file compiles them with its own
** flags. Private to those two files.
*/
#ifndef EMBER_CPU_VECMATH_IMPL_H
#define EMBER_CPU_VECMATH_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* exp of one float, branch-free; vecmath.h's guarantees */
static inline float exp_one(float x) {
  float xc = x > -104.0f ? x : -104.0f; /* NaN goes to -104 here ... */
  xc = xc < 89.0f ? xc : 89.0f;
  float kf = (xc * 0x1.715476p+0f + 0x1.8p23f) - 0x1.8p23f; /* round(x/ln2) */
  int32_t k = (int32_t)kf;                                    /* |k| <= 151 */
  float r = (xc - kf * 0.693359375f) - kf * -2.12194440e-4f;
  float z = r * r;
  /* the polynomial in pairs (Estrin), a shorter dependency chain than
  ** Horner's: more elements in flight */
  float a01 = 1.6666665459e-1f * r + 5.0000001201e-1f;
  float a23 = 8.3334519073e-3f * r + 4.1665795894e-2f;
  float a45 = 1.9875691500e-4f * r + 1.3981999507e-3f;
  float p = ((a45 * z + a23) * z + a01) * z + r + 1.0f;
  int32_t k1 = k >> 1, k2 = k - k1; /* both in [-76, 64] */
  float s1 = u2f((uint32_t)(k1 + 127) << 23), s2 = u2f((uint32_t)(k2 + 127) << 23);
  float res = (p * s1) * s2;
  return x != x ? x + x : res; /* ... and comes back as NaN */
}

/* exp(x) * 2^24 for x <= 0, the scale keeping results down to e^-121
** normal (the callers multiply by 2^-24 last, rounding once into the
** subnormal range); 0 below -121. The steps are exp_one's. */
static inline float exp_one_x2p24(float x) {
  float xc = x > -121.0f ? x : -121.0f;
  xc = xc < 0.0f ? xc : 0.0f;
  float kf = (xc * 0x1.715476p+0f + 0x1.8p23f) - 0x1.8p23f;
  int32_t k = (int32_t)kf + 24; /* in [-151, 24] */
  float r = (xc - kf * 0.693359375f) - kf * -2.12194440e-4f;
  float z = r * r;
  float a01 = 1.6666665459e-1f * r + 5.0000001201e-1f;
  float a23 = 8.3334519073e-3f * r + 4.1665795894e-2f;
  float a45 = 1.9875691500e-4f * r + 1.3981999507e-3f;
  float p = ((a45 * z + a23) * z + a01) * z + r + 1.0f;
  int32_t k1 = k >> 1, k2 = k - k1; /* both in [-76, 12] */
  float s1 = u2f((uint32_t)(k1 + 127) << 23), s2 = u2f((uint32_t)(k2 + 127) << 23);
  return x > -121.0f ? (p * s1) * s2 : 0.0f;
}

static inline uint64_t d2u(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static inline double u2d(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* tanh of one float, evaluated in double and rounded once, on |x| with x's
** sign bit put back: below 0.625 a + a^3 P(a^2) (P fitted to (tanh(a) - a)
** / a^3 on Chebyshev nodes, relative error 2.4e-11), else 1 - 2 / (e + 1)
** with e = exp(2a) from exp_one (its 0.88 ulp shrinks to <= 0.35 ulp of
** the result; the rest is exact or double rounding). exp = inf gives 1,
** NaN stays NaN. Both are computed and one is selected. */
static inline float tanh_one(float x) {
  uint32_t ux;
  memcpy(&ux, &x, 4);
  float ax = u2f(ux & 0x7fffffffu); /* the sign goes back on at the end */
  double a = (double)ax, z = a * a;
  double small =
      ((((((-0.0008638960159668449 * z + 0.0033082696605124724) * z - 0.00879192722115774) * z +
          0.02186009338450088) * z - 0.05396765945597545) * z + 0.13333331925585223) * z -
       0.3333333332820369) * z * a + a;
  double big = 1.0 - 2.0 / ((double)exp_one(ax + ax) + 1.0);
  float r = (float)(ax < 0.625f ? small : big);
  uint32_t ur;
  memcpy(&ur, &r, 4);
  return u2f(ur | (ux & 0x80000000u)); /* tanh is odd; tanh(-0) = -0 */
}

/* log of one float (Cephes' logf): x = m * 2^e with m in [sqrt(1/2),
** sqrt(2)), log(m) by a polynomial in m - 1, e * ln 2 added in two parts.
** Subnormal inputs are scaled by 2^23 first. Special values by selects at
** the end: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays. */
static inline float log_one(float x) {
  int sub = x < 0x1p-126f;
  float xs = sub ? x * 0x1p23f : x;
  uint32_t u;
  memcpy(&u, &xs, 4);
  int32_t e = (int32_t)((u >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  float m = u2f((u & 0x7fffffu) | 0x3f000000u); /* [0.5, 1) */
  int lo = m < 0.707106781186547524f;
  e -= lo;
  float f = lo ? m + m - 1.0f : m - 1.0f;
  float z = f * f;
  float y = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f -
                  1.2420140846e-1f) * f + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f +
               2.0000714765e-1f) * f - 2.4999993993e-1f) * f + 3.3333331174e-1f) * f * z;
  float ef = (float)e;
  y += -2.12194440e-4f * ef;
  y += -0.5f * z;
  float r = (f + y) + 0.693359375f * ef;
  r = x == 0 ? -INFINITY : r;
  r = x < 0 ? NAN : r;
  r = x == INFINITY ? x : r;
  return x != x ? x + x : r;
}

/* exp of a double y, for the float functions that evaluate in double
** (erf, gelu): y clamped to [-745, 709], k = round(y / ln 2), r = y - k ln 2
** (ln 2 in two parts, the high one with 32 trailing zero bits, so k * hi is
** exact), exp(r) by its Taylor polynomial of degree 11 (relative error
** below 1e-14 on |r| <= ln 2 / 2), times 2^k as two factors built from
** exponent bits (each a normal double). Relative error ~1e-15; no
** conversion to a 64-bit integer, so it vectorises on AVX2. */
static inline double expd_one(double y) {
  double yc = y > -745.0 ? y : -745.0;
  yc = yc < 709.0 ? yc : 709.0;
  double kf = (yc * 0x1.71547652b82fep0 + 0x1.8p52) - 0x1.8p52;
  double r = (yc - kf * 6.93147180369123816490e-01) - kf * 1.90821492927058770002e-10;
  double p = 1.0 / 39916800;
  p = p * r + 1.0 / 3628800;
  p = p * r + 1.0 / 362880;
  p = p * r + 1.0 / 40320;
  p = p * r + 1.0 / 5040;
  p = p * r + 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  double k1 = (kf * 0.5 + 0x1.8p52) - 0x1.8p52, k2 = kf - k1; /* both in [-538, 512] */
  double s1 = u2d(d2u(k1 + (0x1.8p52 + 1023)) << 52);
  double s2 = u2d(d2u(k2 + (0x1.8p52 + 1023)) << 52);
  return (p * s1) * s2;
}

/* erfc(a) for a >= ERF_T, 0 above 10.5 (below the smallest double that
** matters here): exp(-a^2) R(a), R = erfc exp(a^2) fitted in t = 1 / (1 +
** a / 2) (relative error 1.2e-11 on [0.875, 10.5]). a^2 of a float is exact
** in double. */
#define ERF_T 0.875
static inline double erfc_big(double a) {
  double ac = a < 10.5 ? a : 10.5;
  double t = 1.0 / (1.0 + 0.5 * ac);
  double s = t * 3.733766233766234 - 1.5974025974025976;
  double r = 3.7425635791584655e-08;
  r = r * s - 6.521588256705918e-08;
  r = r * s - 6.209698260082913e-07;
  r = r * s + 1.8950067560726458e-06;
  r = r * s + 1.0059070626342944e-05;
  r = r * s - 4.176943304332285e-05;
  r = r * s - 0.00025802440495816133;
  r = r * s + 0.0006929977384024693;
  r = r * s + 0.011593042826980276;
  r = r * s + 0.05971658566288818;
  r = r * s + 0.1940653477801336;
  r = r * s + 0.19853209771542338;
  double e = expd_one(-(ac * ac)) * r;
  return a > 10.5 ? 0.0 : e;
}

/* erf(u) / u for |u| < ERF_T: P(u^2) fitted on Chebyshev nodes (relative
** error 4.6e-12). */
static inline double erf_small(double z) {
  double p = -1.069429397126986e-05;
  p = p * z + 0.00011560403834807179;
  p = p * z - 0.0008517245705072286;
  p = p * z + 0.005222882775562291;
  p = p * z - 0.026865959908756076;
  p = p * z + 0.11283789672034752;
  p = p * z - 0.3761263883080452;
  p = p * z + 1.128379167091209;
  return p;
}

/* erf of one float, in double: u P(u^2) below 0.875, else +-(1 - erfc);
** rounded once. erf(+-inf) = +-1, erf(-0) = -0, NaN stays NaN. */
static inline float erf_one(float x) {
  double u = (double)x, a = fabs(u);
  double small = u * erf_small(u * u);
  double big = 1.0 - erfc_big(a < 6.0 ? a : 6.0);
  big = u < 0 ? -big : big;
  float r = (float)(a < ERF_T ? small : big);
  return x != x ? x + x : r;
}

#endif
