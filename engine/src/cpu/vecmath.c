/*
** cpu/vecmath.c -- vectorisable float32 exp and the functions built on it
** (vecmath.h says what holds). The element functions exp_one, tanh_one and
** log_one live in cpu/vecmath_impl.h, shared with cpu/vecmath_avx2.c.
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

#include "cpu/vecmath_impl.h"

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

/* gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2, in double and
** rounded once: 1/2 + u P(u^2) / 2 near 0, 1 - erfc(u) / 2 or erfc(-u) / 2
** beyond (no cancellation on the negative side: gelu(-10) is the tiny exact
** value, not 0). gelu(inf) = inf, gelu(-inf) = NaN (-inf * 0, PyTorch's). */
static inline float gelu_one(float x) {
  double u = (double)x * 0.70710678118654752440, a = fabs(u);
  double small = 0.5 + 0.5 * u * erf_small(u * u);
  double e = 0.5 * erfc_big(a);
  double big = u < 0 ? e : 1.0 - e;
  double phi = a < ERF_T ? small : big;
  phi = x == -INFINITY ? 0.0 : phi;
  return (float)((double)x * phi);
}

/* PyTorch's tanh approximation, 0.5 x (1 + tanh(v)), v = sqrt(2 / pi) (x +
** 0.044715 x^3), as x / (1 + exp(-2 v)) in double (the same function,
** without the cancellation of 1 + tanh for x < 0), rounded once. At -inf
** the formula's -inf * 0 = NaN, as PyTorch. */
static inline float gelu_tanh_one(float x) {
  double d = (double)x;
  double v = 0.79788456080286535588 * (d + 0.044715 * d * d * d);
  double r = d / (1.0 + expd_one(-2.0 * v));
  r = x == -INFINITY ? (double)NAN : r;
  return (float)r;
}

EM_VEC_CLONES void em_vtanh_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = tanh_one(in[i]);
}

EM_VEC_CLONES void em_vlog_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = log_one(in[i]);
}

EM_VEC_CLONES void em_verf_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = erf_one(in[i]);
}

EM_VEC_CLONES void em_vgelu_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = gelu_one(in[i]);
}

EM_VEC_CLONES void em_vgelu_tanh_f32(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = gelu_tanh_one(in[i]);
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
