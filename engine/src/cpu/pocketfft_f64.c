/*
** cpu/pocketfft_f64.c -- the vendored pocketfft (engine/third_party/
** pocketfft, BSD-3-Clause) as released, built for double (complex128,
** float64) on every CPU, with ember's addition rfft_forward_into
** (cpu/pocketfft_into.h). cpu/pocketfft_avx2.c is the same for AVX2 + FMA.
*/
#include "pocketfft/pocketfft.c"
#include "cpu/pocketfft_into.h"
