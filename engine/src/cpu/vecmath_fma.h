/*
** cpu/vecmath_fma.h -- ember's own float32 element loops with FMA, written
** once and compiled by cpu/vecmath_avx2.c (AVX2, 8 lanes) and
** cpu/vecmath_avx512.c (AVX-512, 16 lanes) under their own flags. The
** includer defines VM_FN(name) (the exported name of a loop), G_LANES,
** G_LOAD, G_STORE and cpu/gelu_simd.h's lane macros. Both builds run the
** same operations in the same order (the compiler vectorises the element
** functions of cpu/vecmath_impl.h at its width; gelu is explicit), so a
** CPU gives the same bits whichever runs (a NaN's sign aside;
** tests/c/test_vmath.c compares them).
**
** What holds: out[i] = f(in[i]) for i < n; out may equal in; an element's
** result depends only on its input (gelu's last n % G_LANES elements go
** through one padded vector), not on its position or the run length.
*/
#ifndef EMBER_CPU_VECMATH_FMA_H
#define EMBER_CPU_VECMATH_FMA_H

#include <string.h>

#include "cpu/gelu_simd.h"
#include "cpu/vecmath_impl.h"

void VM_FN(exp)(float *, const float *, int64_t);
void VM_FN(sigmoid)(float *, const float *, int64_t);
void VM_FN(silu)(float *, const float *, int64_t);
void VM_FN(tanh)(float *, const float *, int64_t);
void VM_FN(log)(float *, const float *, int64_t);
void VM_FN(erf)(float *, const float *, int64_t);
void VM_FN(gelu)(float *, const float *, int64_t);
void VM_FN(gelu_tanh)(float *, const float *, int64_t);

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
void VM_FN(exp)(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = exp_one(in[i]);
}

void VM_FN(sigmoid)(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = 1.0f / (1.0f + exp_one(-in[i]));
}

void VM_FN(silu)(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = in[i] / (1.0f + exp_one(-in[i]));
}

void VM_FN(tanh)(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = tanh_one(in[i]);
}

void VM_FN(log)(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = log_one(in[i]);
}

void VM_FN(erf)(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = erf_one(in[i]);
}

void VM_FN(gelu)(float *out, const float *in, int64_t n) {
  int64_t i = 0;
  for (; i + G_LANES <= n; i += G_LANES) G_STORE(out + i, gelu_simd(G_LOAD(in + i)));
  if (i < n) { /* the tail through one padded vector */
    float b[G_LANES] = {0};
    memcpy(b, in + i, (size_t)(n - i) * sizeof(float));
    G_STORE(b, gelu_simd(G_LOAD(b)));
    memcpy(out + i, b, (size_t)(n - i) * sizeof(float));
  }
}

void VM_FN(gelu_tanh)(float *out, const float *in, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = gelu_tanh_fma_one(in[i]);
}

#endif
