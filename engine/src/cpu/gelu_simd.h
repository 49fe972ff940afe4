/*
** cpu/gelu_simd.h -- gelu (erf form) of one float vector with FMA, written
** once over a few lane macros and included by cpu/vecmath_avx2.c (8
** lanes) and cpu/vecmath_avx512.c (16 lanes), which define:
**   GV, GVI          the float and int32 vector types
**   G_SET(c), G_SETI(c), G_ADD, G_SUB, G_MUL, G_DIV, G_MIN, G_MAX,
**   G_FMA(a, b, c) = a b + c, G_FMS(a, b, c) = a b - c,
**   G_FNMA(a, b, c) = c - a b, G_ABS, G_I(v) / G_F(v) (bit casts),
**   G_ISUB, G_IADD, G_ISHL23,
**   G_SEL_LT(x, y, a, b) = x < y ? b : a, G_SEL_NEG(x, a, b) = sign bit of
**   x ? b : a.
** The two builds run the same operations in the same order, so they give
** the same bits.
**
** gelu(x) = x Phi(x), Phi(x) = erfc(-u) / 2, u = x / sqrt 2:
** erfc(|u|) = exp(-x^2 / 2) R(t), t = 1 / (1 + |u| / 2), R fitted on
** [0, 10.5] (relative error 5.2 ulp once its coefficients are floats);
** -x^2 / 2 is split exactly into two floats by FMA so exp's argument is
** exact; with w = x erfc(|u|) / 2 (rounded once, also when subnormal),
** gelu = w for x < 0 (no cancellation: gelu(-10) is the tiny exact value)
** and x - w above. x is clamped to [-14.4, 14.4] inside, which keeps
** exp(-x^2 / 2) 2^24 normal (one scale by 2^(k + 24)); below -14.4 the
** result rounds to -0, and -inf gives NaN (PyTorch's -inf * 0). Within 8
** ulp of x Phi(x) (tests/c/test_vmath.c).
*/
#ifndef EMBER_CPU_GELU_SIMD_H
#define EMBER_CPU_GELU_SIMD_H

static inline GV gelu_simd(GV x) {
  const GV lim = G_SET(14.4f), nlim = G_SET(-14.4f);
  /* max(-14.4, x): a NaN x comes through (the second operand wins) */
  GV xc = G_MIN(lim, G_MAX(nlim, x));
  GV m = G_MUL(xc, G_SET(-0.5f));
  GV y = G_MUL(xc, m); /* -x^2 / 2 = y + l exactly */
  GV l = G_FMS(xc, m, y);
  /* exp(y) 2^24, y = k ln 2 + r (exp_one's reduction and polynomial) */
  const GV magic = G_SET(0x1.8p23f);
  GV km = G_FMA(y, G_SET(0x1.715476p+0f), magic);
  GV kf = G_SUB(km, magic);
  GVI k = G_ISUB(G_I(km), G_SETI(0x4bc00000 - 24)); /* round(y / ln 2) + 24 */
  GV r = G_FNMA(kf, G_SET(0.693359375f), y);
  r = G_FNMA(kf, G_SET(-2.12194440e-4f), r);
  GV z = G_MUL(r, r);
  GV a01 = G_FMA(G_SET(1.6666665459e-1f), r, G_SET(5.0000001201e-1f));
  GV a23 = G_FMA(G_SET(8.3334519073e-3f), r, G_SET(4.1665795894e-2f));
  GV a45 = G_FMA(G_SET(1.9875691500e-4f), r, G_SET(1.3981999507e-3f));
  GV p = G_FMA(a45, z, a23);
  p = G_FMA(p, z, a01);
  p = G_FMA(p, z, r);
  p = G_ADD(p, G_SET(1.0f));
  GV e = G_F(G_IADD(G_I(p), G_ISHL23(k))); /* p 2^(k + 24), normal */
  e = G_FMA(e, l, e);                       /* exp(-x^2 / 2) 2^24 */
  GV t = G_DIV(G_SET(1.0f), G_FMA(G_ABS(xc), G_SET(0.353553390593273762f), G_SET(1.0f)));
  /* R / 2 */
  GV q = G_SET(-0.05065286532044411f * 0.5f);
  q = G_FMA(q, t, G_SET(0.2418069988489151f * 0.5f));
  q = G_FMA(q, t, G_SET(-0.39392155408859253f * 0.5f));
  q = G_FMA(q, t, G_SET(0.16385337710380554f * 0.5f));
  q = G_FMA(q, t, G_SET(0.059586044400930405f * 0.5f));
  q = G_FMA(q, t, G_SET(0.16123642027378082f * 0.5f));
  q = G_FMA(q, t, G_SET(0.255753755569458f * 0.5f));
  q = G_FMA(q, t, G_SET(0.2800194323062897f * 0.5f));
  q = G_FMA(q, t, G_SET(0.28232887387275696f * 0.5f));
  q = G_FMA(q, t, G_SET(-1.0495987226022407e-05f * 0.5f));
  GV w = G_MUL(G_MUL(xc, G_MUL(e, q)), G_SET(0x1p-24f)); /* x erfc(|u|) / 2 */
  w = G_SEL_LT(x, nlim, w, G_MUL(x, G_SET(0.0f)));
  return G_SEL_NEG(x, G_SUB(x, w), w); /* -0 and -NaN by the sign bit too */
}

#endif
