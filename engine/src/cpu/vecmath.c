/*
** cpu/vecmath.c -- vectorisable float32 exp and the functions built on it
** (vecmath.h says what holds).
**
** exp(x): k = round(x / ln 2) by the 1.5 * 2^23 trick, r = x - k ln 2 in two
** steps (Cody-Waite: ln 2's high part has 9 significant bits, so k * hi is
** exact for |k| < 2^15), exp(r) by Cephes' degree-7 polynomial on
** |r| <= ln 2 / 2 (its terms taken in pairs, Estrin's scheme), and the scale 2^k built from exponent bits as two factors
** 2^(k>>1) * 2^(k - (k>>1)), each a normal float for every k of the clamped
** range: results that overflow become +inf by the multiplication itself, and
** subnormal results are rounded once, by the last multiplication. The input
** is clamped to [-104, 89] first (exp is 0 below and +inf above in float),
** NaN is passed through at the end. Every step is a plain float operation
** or a select, so the loops vectorise with no branches.
**
** Each entry is cloned for AVX2 and for baseline x86-64
** (target_clones; the dynamic loader picks one by the CPU). Neither clone may
** fuse a multiply and an add (no "fma" target), so both give the same bits.
*/
#include "vecmath.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(EMBER_NO_CLONES)
#define EM_VEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EM_VEC_CLONES
#endif

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

/* Plain indexed loops: with -fno-trapping-math (CMakeLists.txt, this file
** only) the selects above if-convert and GCC vectorises the loop; out == in
** is a dependence distance of 0, which its alias check accepts. */
EM_VEC_CLONES void em_vexp_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = exp_one(in[i]);
}

EM_VEC_CLONES void em_vsigmoid_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = 1.0f / (1.0f + exp_one(-in[i]));
}

EM_VEC_CLONES void em_vsilu_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = in[i] / (1.0f + exp_one(-in[i]));
}

/* tanh of one float (Cephes' tanhf), on |x| with x's sign bit put back:
** an odd polynomial below 0.625, else 1 - 2 / (exp(2|x|) + 1) (exp = inf
** gives 1, NaN stays NaN). Both are computed and one is selected. */
static inline float tanh_one(float x) {
  uint32_t ux;
  memcpy(&ux, &x, 4);
  float ax = u2f(ux & 0x7fffffffu); /* the sign goes back on at the end */
  float z = ax * ax;
  float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                  1.33314422036e-1f) * z - 3.33332819422e-1f) * z * ax + ax;
  float big = 1.0f - 2.0f / (exp_one(ax + ax) + 1.0f);
  float r = ax < 0.625f ? small : big;
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

EM_VEC_CLONES void em_vtanh_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = tanh_one(in[i]);
}

EM_VEC_CLONES void em_vlog_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = log_one(in[i]);
}

/* -- Sum ------------------------------------------------------------------
** The sum of n floats in double: blocks of SUM_LEAF elements are each summed
** in SUM_W independent partial sums (the lanes the vectoriser keeps in
** registers), folded in a fixed tree; the block sums are combined pairwise
** by a binary counter (block 2j+1 joins block 2j, then pairs of pairs, ...),
** so every element passes through O(log n) additions in double. The order
** depends only on n, so both clones give the same bits. */
enum { SUM_LEAF = 256, SUM_W = 16 };

static inline double sum_leaf(const float *p, int n) { /* n <= SUM_LEAF */
  double a[SUM_W] = {0};
  int i = 0;
  for (; i + SUM_W <= n; i += SUM_W)
    for (int j = 0; j < SUM_W; j++) a[j] += (double)p[i + j];
  for (int w = SUM_W / 2; w > 0; w /= 2)
    for (int j = 0; j < w; j++) a[j] += a[j + w];
  double s = a[0];
  for (; i < n; i++) s += (double)p[i];
  return s;
}

EM_VEC_CLONES double em_vsum_f32(const float *p, int64_t n) {
  double stack[64]; /* one entry per bit of the block count */
  int depth = 0;
  uint64_t count = 0;
  int64_t i = 0;
  for (; n - i >= SUM_LEAF; i += SUM_LEAF) {
    double s = sum_leaf(p + i, SUM_LEAF);
    count++;
    for (uint64_t c = count; !(c & 1); c >>= 1) s = stack[--depth] + s;
    stack[depth++] = s;
  }
  double s = sum_leaf(p + i, (int)(n - i));
  while (depth) s = stack[--depth] + s;
  return s;
}
