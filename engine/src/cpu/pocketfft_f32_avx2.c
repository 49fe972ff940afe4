/*
** cpu/pocketfft_f32_avx2.c -- cpu/pocketfft_f32.c (pocketfft in float)
** compiled again for AVX2 + FMA (CMakeLists.txt gives this file -mavx2
** -mfma -O3), its functions named em_pf_f32avx2_*; cpu/complex.c calls
** them only on a CPU with both, as it does the double build's AVX2 twin
** (cpu/pocketfft_avx2.c).
*/
#if defined(__AVX2__) && defined(__FMA__)
#define EM_PF32(x) em_pf_f32avx2_##x
#include "cpu/pocketfft_f32.c"
#else
typedef int em_pocketfft_f32_avx2_unused; /* not an x86-64 AVX2 build */
#endif
