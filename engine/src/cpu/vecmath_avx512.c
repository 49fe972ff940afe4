/*
** cpu/vecmath_avx512.c -- ember's own float32 exp, log, tanh, sigmoid, silu,
** erf and gelu (both forms) at 16 lanes, and SLEEF's avx512f functions
** (cpu/vecmath_sleef.h) where SLEEF was found: cpu/vecmath_fma.h's loops built
** with -mavx512f -mavx512dq -mfma (CMakeLists.txt), for cpu/vmath.c's
** dispatch on a CPU (and OS) with AVX-512 F and DQ. The same operations as
** the AVX2 build (cpu/vecmath_avx2.c) in the same order, so the same bits (a NaN's sign aside);
** on a core that executes 512-bit vectors as two halves (AMD Zen 4) it
** still runs these loops about 1.3-2x faster than AVX2, fewer instructions
** in flight for the same work (docs/math.md, "Speed").
*/
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__FMA__)
#include <immintrin.h>
#include <math.h>

#include "cpu/vecmath.h"

#define VM_FN(name) em_avx512_##name##_f32
#define G_LANES 16
#define G_LOAD _mm512_loadu_ps
#define G_STORE _mm512_storeu_ps
#define GV __m512
#define GVI __m512i
#define G_SET _mm512_set1_ps
#define G_SETI _mm512_set1_epi32
#define G_ADD _mm512_add_ps
#define G_SUB _mm512_sub_ps
#define G_MUL _mm512_mul_ps
#define G_DIV _mm512_div_ps
#define G_MIN _mm512_min_ps
#define G_MAX _mm512_max_ps
#define G_FMA _mm512_fmadd_ps
#define G_FMS _mm512_fmsub_ps
#define G_FNMA _mm512_fnmadd_ps
#define G_ABS _mm512_abs_ps
#define G_I _mm512_castps_si512
#define G_F _mm512_castsi512_ps
#define G_ISUB _mm512_sub_epi32
#define G_IADD _mm512_add_epi32
#define G_ISHL23(v) _mm512_slli_epi32((v), 23)
#define G_SEL_LT(x, y, a, b) _mm512_mask_mov_ps((a), _mm512_cmp_ps_mask((x), (y), _CMP_LT_OQ), (b))
#define G_SEL_NEG(x, a, b) _mm512_mask_mov_ps((a), _mm512_movepi32_mask(_mm512_castps_si512(x)), (b))
#include "cpu/vecmath_fma.h"

#ifdef EMBER_HAVE_SLEEF
/* SLEEF's avx512f functions at 16 floats / 8 doubles (cpu/vecmath_sleef.h;
** the same bits as its avx2 ones, at about half the time on a core with
** full-width 512-bit units: docs/math.md, "Speed") */
#define SL_FN(name, t) em_avx512_##name##_##t
#define SL_F(f) Sleef_##f##f16_u10avx512f
#define SL_D(f) Sleef_##f##d8_u10avx512f
#define SL_D15(f) Sleef_##f##d8_u15avx512f
#define SL_VF __m512
#define SL_VD __m512d
#define SL_NF 16
#define SL_ND 8
#define SL_LDF _mm512_loadu_ps
#define SL_STF _mm512_storeu_ps
#define SL_LDD _mm512_loadu_pd
#define SL_STD _mm512_storeu_pd
#define SL_SETF _mm512_set1_ps
#define SL_SETD _mm512_set1_pd
#define SL_SELGT_F(x, c, a, b) _mm512_mask_blend_ps(_mm512_cmp_ps_mask((x), (c), _CMP_GT_OQ), (a), (b))
#define SL_SELGT_D(x, c, a, b) _mm512_mask_blend_pd(_mm512_cmp_pd_mask((x), (c), _CMP_GT_OQ), (a), (b))
#define SL_SELEQ_D(x, c, a, b) _mm512_mask_blend_pd(_mm512_cmp_pd_mask((x), (c), _CMP_EQ_OQ), (a), (b))
#define SL_ADDD _mm512_add_pd
#define SL_SUBD _mm512_sub_pd
#define SL_MULD _mm512_mul_pd
#define SL_DIVD _mm512_div_pd
#define SL_NO_TRIG_F64 /* float64 sin and cos: not the avx2 bits */
#include "cpu/vecmath_sleef.h"
#endif

#else
/* not an x86-64 GCC/Clang build: nothing to compile (ISO C wants a
** declaration) */
typedef int em_vecmath_avx512_unused;
#endif
