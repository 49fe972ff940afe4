/*
** cpu/vecmath_avx2.c -- the AVX2 + FMA code of the transcendental functions,
** for cpu/vmath.c's dispatch: ember's own float32 exp, log, tanh, sigmoid,
** silu, erf (cpu/vecmath_impl.h's element functions, multiply-adds fused)
** and gelu (both forms; cpu/vecmath_fma.h's loops at 8 lanes), and
** SLEEF's AVX2 functions (libsleef, Boost Software License 1.0) when SLEEF
** was found (EMBER_HAVE_SLEEF). Built with -mavx2 -mfma on x86-64
** (CMakeLists.txt); nothing here runs unless vmath.c has seen AVX2 and FMA
** on the CPU.
**
** What holds:
** - out[i] = f(in[i]) for i < n; out may equal in.
** - gelu (float32): cpu/gelu_simd.h, within 8 ulp of x Phi(x); the loops
**   of ember's own functions are cpu/vecmath_fma.h's, also built for
**   AVX-512 (cpu/vecmath_avx512.c).
** - gelu's tanh form: x / (1 + exp(y)), y = -2 sqrt(2 / pi) (x + 0.044715
**   x^3) computed in double and split into two floats, so exp is accurate
**   however large |y| (x e / (1 + e), e = exp(-y), for y > 0); within 4 ulp.
** - SLEEF's functions: cpu/vecmath_sleef.h (also built for AVX-512).
*/
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

#include "cpu/vecmath.h"

/* ember's own loops (cpu/vecmath_fma.h) at 8 lanes */
#define VM_FN(name) em_avx2_##name##_f32
#define G_LANES 8
#define G_LOAD _mm256_loadu_ps
#define G_STORE _mm256_storeu_ps
#define GV __m256
#define GVI __m256i
#define G_SET _mm256_set1_ps
#define G_SETI _mm256_set1_epi32
#define G_ADD _mm256_add_ps
#define G_SUB _mm256_sub_ps
#define G_MUL _mm256_mul_ps
#define G_DIV _mm256_div_ps
#define G_MIN _mm256_min_ps
#define G_MAX _mm256_max_ps
#define G_FMA _mm256_fmadd_ps
#define G_FMS _mm256_fmsub_ps
#define G_FNMA _mm256_fnmadd_ps
#define G_ABS(v) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (v))
#define G_I _mm256_castps_si256
#define G_F _mm256_castsi256_ps
#define G_ISUB _mm256_sub_epi32
#define G_IADD _mm256_add_epi32
#define G_ISHL23(v) _mm256_slli_epi32((v), 23)
#define G_SEL_LT(x, y, a, b) _mm256_blendv_ps((a), (b), _mm256_cmp_ps((x), (y), _CMP_LT_OQ))
#define G_SEL_NEG(x, a, b) _mm256_blendv_ps((a), (b), (x))
#include "cpu/vecmath_fma.h"

#ifdef EMBER_HAVE_SLEEF
/* SLEEF's avx2 functions at 8 floats / 4 doubles (cpu/vecmath_sleef.h) */
#define SL_FN(name, t) em_avx2_##name##_##t
#define SL_F(f) Sleef_##f##f8_u10avx2
#define SL_D(f) Sleef_##f##d4_u10avx2
#define SL_D15(f) Sleef_##f##d4_u15avx2
#define SL_VF __m256
#define SL_VD __m256d
#define SL_NF 8
#define SL_ND 4
#define SL_LDF _mm256_loadu_ps
#define SL_STF _mm256_storeu_ps
#define SL_LDD _mm256_loadu_pd
#define SL_STD _mm256_storeu_pd
#define SL_SETF _mm256_set1_ps
#define SL_SETD _mm256_set1_pd
#define SL_SELGT_F(x, c, a, b) _mm256_blendv_ps((a), (b), _mm256_cmp_ps((x), (c), _CMP_GT_OQ))
#define SL_SELGT_D(x, c, a, b) _mm256_blendv_pd((a), (b), _mm256_cmp_pd((x), (c), _CMP_GT_OQ))
#define SL_SELEQ_D(x, c, a, b) _mm256_blendv_pd((a), (b), _mm256_cmp_pd((x), (c), _CMP_EQ_OQ))
#define SL_ADDD _mm256_add_pd
#define SL_SUBD _mm256_sub_pd
#define SL_MULD _mm256_mul_pd
#define SL_DIVD _mm256_div_pd
#include "cpu/vecmath_sleef.h"
#endif /* EMBER_HAVE_SLEEF */
#else
typedef int em_vecmath_avx2_unused; /* not an AVX2 + FMA build: nothing here */
#endif
