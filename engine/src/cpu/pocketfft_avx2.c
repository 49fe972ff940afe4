/*
** cpu/pocketfft_avx2.c -- the vendored pocketfft (engine/third_party/
** pocketfft, BSD-3-Clause) compiled a second time, for AVX2 + FMA
** (CMakeLists.txt gives this file -mavx2 -mfma -O3), its public functions
** renamed em_pf_avx2_*. cpu/complex.c calls these instead of the baseline
** build's only on a CPU with both (__builtin_cpu_supports), chosen once
** per process, so one process always runs the same code: a transform's
** bits do not depend on layout or threads, but may differ (by rounding,
** FMA contracting multiply-adds) between an AVX2 machine and one without.
*/
#if defined(__AVX2__) && defined(__FMA__)
#define make_cfft_plan em_pf_avx2_make_cfft_plan
#define destroy_cfft_plan em_pf_avx2_destroy_cfft_plan
#define cfft_backward em_pf_avx2_cfft_backward
#define cfft_forward em_pf_avx2_cfft_forward
#define cfft_length em_pf_avx2_cfft_length
#define make_rfft_plan em_pf_avx2_make_rfft_plan
#define destroy_rfft_plan em_pf_avx2_destroy_rfft_plan
#define rfft_backward em_pf_avx2_rfft_backward
#define rfft_forward em_pf_avx2_rfft_forward
#define rfft_length em_pf_avx2_rfft_length
#define rfft_forward_into em_pf_avx2_rfft_forward_into
#include "pocketfft/pocketfft.c"
#include "cpu/pocketfft_into.h"
#else
typedef int em_pocketfft_avx2_unused; /* not an x86-64 AVX2 build */
#endif
