/*
** cpu/vmath.c -- which vector implementation of a transcendental function
** runs (cpu/vecmath.h, "Dispatch").
**
** What holds:
** - The choice depends only on the build (SLEEF found or not) and the CPU
**   (AVX2 and FMA, AVX-512, by __builtin_cpu_supports; the environment
**   variable EMBER_VM_NO_AVX512, read once), so one process always runs
**   the same code for a function: results do not depend on layout, run
**   length or thread count.
** - Per function, the faster of SLEEF and ember's own code measured on the
**   development machine (docs/math.md, "Speed"): float32 exp, log, tanh,
**   sigmoid, silu, erf and both gelus are ember's own: its AVX-512 build
**   (cpu/vecmath_avx512.c) where the CPU has AVX-512 F and DQ, its AVX2 +
**   FMA build (cpu/vecmath_avx2.c) where it has those, else
**   cpu/vecmath.c's (no FMA; AVX2 and baseline clones); float32 sin, cos,
**   log1p, expm1, pow and every float64 function are SLEEF's when
**   available, libm per element otherwise.
*/
#include "cpu/vecmath.h"

#include <stddef.h>
#include <stdlib.h>

/* ember's own float32 functions with FMA (cpu/vecmath_fma.h), built as
** em_avx2_<name>_f32 (cpu/vecmath_avx2.c) and em_avx512_<name>_f32
** (cpu/vecmath_avx512.c, 16 lanes, the same bits) */
#define OWN_FMA_F32(X) \
  X(EXP, exp) X(LOG, log) X(TANH, tanh) X(SIGMOID, sigmoid) X(SILU, silu) X(ERF, erf) \
  X(GELU, gelu) X(GELU_TANH, gelu_tanh)

#ifdef EMBER_VEC_AVX2
#define DECL_AVX2(E, name) void em_avx2_##name##_f32(float *, const float *, int64_t);
#define ENTRY_AVX2(E, name) [EM_VM_##E] = em_avx2_##name##_f32,
OWN_FMA_F32(DECL_AVX2)
static const em_vec_f32_fn avx2_f32[EM_VM_N] = {OWN_FMA_F32(ENTRY_AVX2)};

#ifdef EMBER_VEC_AVX512
#define DECL_AVX512(E, name) void em_avx512_##name##_f32(float *, const float *, int64_t);
#define ENTRY_AVX512(E, name) [EM_VM_##E] = em_avx512_##name##_f32,
OWN_FMA_F32(DECL_AVX512)
static const em_vec_f32_fn avx512_f32[EM_VM_N] = {OWN_FMA_F32(ENTRY_AVX512)};

/* __builtin_cpu_supports also checks that the OS saves the AVX-512 state.
** EMBER_VM_NO_AVX512=1 in the environment keeps the AVX2 code (the C tests
** compare the two). */
static int have_avx512(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  static int known = -1;
  if (known < 0) {
    const char *off = getenv("EMBER_VM_NO_AVX512");
    known = !(off && *off && *off != '0') && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
  }
  return known;
#else
  return 0;
#endif
}
#endif

static int have_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}
#endif

#ifdef EMBER_HAVE_SLEEF
void em_avx2_sin_f32(float *, const float *, int64_t);
void em_avx2_cos_f32(float *, const float *, int64_t);
void em_avx2_log1p_f32(float *, const float *, int64_t);
void em_avx2_expm1_f32(float *, const float *, int64_t);
void em_avx2_exp_f64(double *, const double *, int64_t);
void em_avx2_log_f64(double *, const double *, int64_t);
void em_avx2_log1p_f64(double *, const double *, int64_t);
void em_avx2_expm1_f64(double *, const double *, int64_t);
void em_avx2_sin_f64(double *, const double *, int64_t);
void em_avx2_cos_f64(double *, const double *, int64_t);
void em_avx2_tanh_f64(double *, const double *, int64_t);
void em_avx2_erf_f64(double *, const double *, int64_t);
void em_avx2_sigmoid_f64(double *, const double *, int64_t);
void em_avx2_gelu_f64(double *, const double *, int64_t);
void em_avx2_gelu_tanh_f64(double *, const double *, int64_t);
void em_avx2_pow_f32(float *, const float *, const float *, int64_t, int64_t);
void em_avx2_pow_f64(double *, const double *, const double *, int64_t, int64_t);

static const em_vec_f32_fn sleef_f32[EM_VM_N] = {
    [EM_VM_SIN] = em_avx2_sin_f32, [EM_VM_COS] = em_avx2_cos_f32,
    [EM_VM_LOG1P] = em_avx2_log1p_f32, [EM_VM_EXPM1] = em_avx2_expm1_f32};
static const em_vec_f64_fn sleef_f64[EM_VM_N] = {
    [EM_VM_EXP] = em_avx2_exp_f64,         [EM_VM_LOG] = em_avx2_log_f64,
    [EM_VM_LOG1P] = em_avx2_log1p_f64,     [EM_VM_EXPM1] = em_avx2_expm1_f64,
    [EM_VM_SIN] = em_avx2_sin_f64,         [EM_VM_COS] = em_avx2_cos_f64,
    [EM_VM_TANH] = em_avx2_tanh_f64,       [EM_VM_ERF] = em_avx2_erf_f64,
    [EM_VM_SIGMOID] = em_avx2_sigmoid_f64, [EM_VM_GELU] = em_avx2_gelu_f64,
    [EM_VM_GELU_TANH] = em_avx2_gelu_tanh_f64};

#endif

static const em_vec_f32_fn own_f32[EM_VM_N] = {
    [EM_VM_EXP] = em_vexp_f32,   [EM_VM_LOG] = em_vlog_f32,         [EM_VM_TANH] = em_vtanh_f32,
    [EM_VM_SIGMOID] = em_vsigmoid_f32, [EM_VM_SILU] = em_vsilu_f32, [EM_VM_ERF] = em_verf_f32,
    [EM_VM_GELU] = em_vgelu_f32, [EM_VM_GELU_TANH] = em_vgelu_tanh_f32};

em_vec_f32_fn em_vm_f32(em_vm_fn f) {
  if (f <= EM_VM_NONE || f >= EM_VM_N) return NULL;
#ifdef EMBER_VEC_AVX512
  if (avx512_f32[f] && have_avx512()) return avx512_f32[f];
#endif
#ifdef EMBER_VEC_AVX2
  if (avx2_f32[f] && have_avx2()) return avx2_f32[f];
#endif
#ifdef EMBER_HAVE_SLEEF
  if (sleef_f32[f] && have_avx2()) return sleef_f32[f];
#endif
  return own_f32[f];
}

em_vec_f64_fn em_vm_f64(em_vm_fn f) {
  if (f <= EM_VM_NONE || f >= EM_VM_N) return NULL;
#ifdef EMBER_HAVE_SLEEF
  if (have_avx2()) return sleef_f64[f];
#endif
  return NULL;
}

em_vpow_f32_fn em_vm_pow_f32(void) {
#ifdef EMBER_HAVE_SLEEF
  if (have_avx2()) return em_avx2_pow_f32;
#endif
  return NULL;
}

em_vpow_f64_fn em_vm_pow_f64(void) {
#ifdef EMBER_HAVE_SLEEF
  if (have_avx2()) return em_avx2_pow_f64;
#endif
  return NULL;
}

const char *em_vm_backend(void) {
#if defined(EMBER_HAVE_SLEEF) && defined(EMBER_VEC_AVX512)
  if (have_avx2() && have_avx512()) return "sleef-avx2+ember-avx512";
#endif
#ifdef EMBER_HAVE_SLEEF
  if (have_avx2()) return "sleef-avx2";
#endif
#ifdef EMBER_VEC_AVX512
  if (have_avx512()) return "ember-avx512";
#endif
#ifdef EMBER_VEC_AVX2
  if (have_avx2()) return "ember-avx2";
#endif
  return "ember";
}
