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
**   available (its avx512f versions where the CPU has AVX-512 F and DQ,
**   the same bits as its avx2 ones at about half the time; float64 sin and
**   cos the avx2 ones everywhere, cpu/vecmath_sleef.h), libm per element
**   otherwise.
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
/* SLEEF's functions (cpu/vecmath_sleef.h) at each width: em_<isa>_<name>_<t> */
#define SLEEF_F32(X, isa) X(isa, SIN, sin, f32) X(isa, COS, cos, f32) \
  X(isa, LOG1P, log1p, f32) X(isa, EXPM1, expm1, f32)
#define SLEEF_F64(X, isa) X(isa, EXP, exp, f64) X(isa, LOG, log, f64) \
  X(isa, LOG1P, log1p, f64) X(isa, EXPM1, expm1, f64) X(isa, TANH, tanh, f64) \
  X(isa, ERF, erf, f64) X(isa, SIGMOID, sigmoid, f64) X(isa, GELU, gelu, f64) \
  X(isa, GELU_TANH, gelu_tanh, f64)
/* float64 sin and cos: the avx2 versions at every width (vecmath_sleef.h) */
#define SLEEF_TRIG_F64(X) X(avx2, SIN, sin, f64) X(avx2, COS, cos, f64)
#define SLEEF_DECL_F32(isa, E, name, t) void em_##isa##_##name##_##t(float *, const float *, int64_t);
#define SLEEF_DECL_F64(isa, E, name, t) void em_##isa##_##name##_##t(double *, const double *, int64_t);
#define SLEEF_ENTRY(isa, E, name, t) [EM_VM_##E] = em_##isa##_##name##_##t,
#define SLEEF_TABLES(isa)                                                      \
  SLEEF_F32(SLEEF_DECL_F32, isa)                                               \
  SLEEF_F64(SLEEF_DECL_F64, isa)                                               \
  void em_##isa##_pow_f32(float *, const float *, const float *, int64_t, int64_t); \
  void em_##isa##_pow_f64(double *, const double *, const double *, int64_t, int64_t); \
  static const em_vec_f32_fn isa##_sleef_f32[EM_VM_N] = {SLEEF_F32(SLEEF_ENTRY, isa)}; \
  static const em_vec_f64_fn isa##_sleef_f64[EM_VM_N] = {SLEEF_F64(SLEEF_ENTRY, isa) \
                                                        SLEEF_TRIG_F64(SLEEF_ENTRY)};
SLEEF_TRIG_F64(SLEEF_DECL_F64)
SLEEF_TABLES(avx2)
#ifdef EMBER_VEC_AVX512
SLEEF_TABLES(avx512)
#define SLEEF_512 (have_avx512())
#else
#define SLEEF_512 0
#endif
/* SLEEF's table at the widest width this CPU runs (AVX2 and FMA at least) */
#define SLEEF_PICK(t) (SLEEF_512 ? avx512_sleef_##t : avx2_sleef_##t)
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
  if (avx2_sleef_f32[f] && have_avx2()) return SLEEF_PICK(f32)[f];
#endif
  return own_f32[f];
}

em_vec_f64_fn em_vm_f64(em_vm_fn f) {
  if (f <= EM_VM_NONE || f >= EM_VM_N) return NULL;
#ifdef EMBER_HAVE_SLEEF
  if (have_avx2()) return SLEEF_PICK(f64)[f];
#endif
  return NULL;
}

em_vpow_f32_fn em_vm_pow_f32(void) {
#ifdef EMBER_HAVE_SLEEF
#ifdef EMBER_VEC_AVX512
  if (have_avx2() && have_avx512()) return em_avx512_pow_f32;
#endif
  if (have_avx2()) return em_avx2_pow_f32;
#endif
  return NULL;
}

em_vpow_f64_fn em_vm_pow_f64(void) {
#ifdef EMBER_HAVE_SLEEF
#ifdef EMBER_VEC_AVX512
  if (have_avx2() && have_avx512()) return em_avx512_pow_f64;
#endif
  if (have_avx2()) return em_avx2_pow_f64;
#endif
  return NULL;
}

const char *em_vm_backend(void) {
#if defined(EMBER_HAVE_SLEEF) && defined(EMBER_VEC_AVX512)
  if (have_avx2() && have_avx512()) return "sleef-avx512+ember-avx512";
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
