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
**   with no fused multiply-add), so these functions' results are
**   bit-identical everywhere. (The dispatch below may pick FMA code
**   instead on a CPU with AVX2 + FMA: the same in one process, not across
**   CPUs.)
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

/* tanh (in double: a fitted odd polynomial below 0.625, 1 - 2 / (exp(2|x|)
** + 1) above) and natural log (Cephes' logf) */
void em_vtanh_f32(float *out, const float *in, int64_t n);
void em_vlog_f32(float *out, const float *in, int64_t n);

/* erf, gelu (x Phi(x)) and gelu's tanh approximation, evaluated in double
** (fitted polynomials, exp by a double Cody-Waite kernel) and rounded once:
** within 1 ulp of the exact value (tests/c/test_vecmath.c). */
void em_verf_f32(float *out, const float *in, int64_t n);
void em_vgelu_f32(float *out, const float *in, int64_t n);
void em_vgelu_tanh_f32(float *out, const float *in, int64_t n);

/* -- Dispatch (cpu/vmath.c) -------------------------------------------------
** The vector implementation of each function for float32 and float64 on
** this CPU, or NULL where there is none (the caller loops over libm). With
** SLEEF (EMBER_HAVE_SLEEF) and a CPU with AVX2 and FMA: SLEEF's AVX2
** functions (cpu/vecmath_avx2.c) where they are the faster; ember's own
** (above) for the rest. Without: ember's own float32 functions only. */
typedef enum em_vm_fn {
  EM_VM_NONE, EM_VM_EXP, EM_VM_LOG, EM_VM_LOG1P, EM_VM_EXPM1, EM_VM_SIN, EM_VM_COS,
  EM_VM_TANH, EM_VM_SIGMOID, EM_VM_SILU, EM_VM_ERF, EM_VM_GELU, EM_VM_GELU_TANH, EM_VM_N
} em_vm_fn;
typedef void (*em_vec_f64_fn)(double *out, const double *in, int64_t n);
/* pow: out[i] = x[i] ^ y[i * ystep] (ystep 0: one exponent for all) */
typedef void (*em_vpow_f32_fn)(float *out, const float *x, const float *y, int64_t ystep,
                               int64_t n);
typedef void (*em_vpow_f64_fn)(double *out, const double *x, const double *y, int64_t ystep,
                               int64_t n);
em_vec_f32_fn em_vm_f32(em_vm_fn f);
em_vec_f64_fn em_vm_f64(em_vm_fn f);
em_vpow_f32_fn em_vm_pow_f32(void);
em_vpow_f64_fn em_vm_pow_f64(void);
/* "sleef-avx2" when SLEEF's AVX2 functions are in use, else "ember" */
const char *em_vm_backend(void);

/* The sum of in[0..n) in double, pairwise over blocks (vecmath.c). */
double em_vsum_f32(const float *in, int64_t n);

#endif
