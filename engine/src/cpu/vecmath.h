/*
** cpu/vecmath.h -- float32 transcendental functions over contiguous arrays,
** written for the vectoriser (cpu/vecmath.c).
**
** What holds:
** - Each function computes out[i] = f(in[i]) for i < n; out may equal in
**   (in-place), other overlaps are not allowed.
** - Every element's result depends only on its input: the same value in any
**   position, run length, thread split or instruction set (the AVX2 and the
**   baseline clones do the same IEEE float operations in the same order,
**   with no fused multiply-add), so results are bit-identical everywhere.
** - Special values are those of C's expf: exp(+inf) = +inf, exp(-inf) = 0,
**   NaN stays NaN, overflow gives +inf and underflow subnormals or 0.
**   Accuracy against the exact result, over tests/c/test_vecmath.c's sweep
**   of every 4099th float (worst seen / bound tested): exp 0.88 / 1 ulp,
**   sigmoid and silu 1.98 / 4, tanh 1.2 / 2, log 0.75 / 2. tanh and log
**   give libm's values at 0, +-inf, NaN and negative inputs.
*/
#ifndef EMBER_CPU_VECMATH_H
#define EMBER_CPU_VECMATH_H

#include <stdint.h>

typedef void (*em_vec_f32_fn)(float *out, const float *in, int64_t n);

void em_vexp_f32(float *out, const float *in, int64_t n);
/* 1 / (1 + exp(-x)) */
void em_vsigmoid_f32(float *out, const float *in, int64_t n);
/* x / (1 + exp(-x)) */
void em_vsilu_f32(float *out, const float *in, int64_t n);

/* tanh (Cephes' tanhf) and natural log (Cephes' logf) */
void em_vtanh_f32(float *out, const float *in, int64_t n);
void em_vlog_f32(float *out, const float *in, int64_t n);

/* The sum of in[0..n) in double, pairwise over blocks (vecmath.c). */
double em_vsum_f32(const float *in, int64_t n);

#endif
