/*
** cpu/pocketfft_f32.c -- the vendored pocketfft (engine/third_party/
** pocketfft, BSD-3-Clause) compiled for float: complex64 and float32
** transforms run in float, as PyTorch's (its pocketfft is templated on the
** type), at about 1.4x the speed of the double build on 2^20 points and a
** relative error of ~1e-7 against it (docs/fft.md). Every `double` of the
** source is `float` here (its twiddles are computed in float too); the
** public functions are renamed EM_PF32(in_*) and wrapped below with plain
** pointer types, so this build's plan structs never meet the double
** build's. cpu/pocketfft_f32_avx2.c includes this file again for AVX2 +
** FMA under other names; cpu/complex.c chooses between them.
*/
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef EM_PF32
#define EM_PF32(x) em_pf_f32_##x
#endif
#define make_cfft_plan EM_PF32(in_make_cfft_plan)
#define destroy_cfft_plan EM_PF32(in_destroy_cfft_plan)
#define cfft_backward EM_PF32(in_cfft_backward)
#define cfft_forward EM_PF32(in_cfft_forward)
#define cfft_length EM_PF32(in_cfft_length)
#define make_rfft_plan EM_PF32(in_make_rfft_plan)
#define destroy_rfft_plan EM_PF32(in_destroy_rfft_plan)
#define rfft_backward EM_PF32(in_rfft_backward)
#define rfft_forward EM_PF32(in_rfft_forward)
#define rfft_length EM_PF32(in_rfft_length)
#define rfft_forward_into EM_PF32(in_rfft_forward_into)
#define double float
#include "pocketfft/pocketfft.c"
#include "cpu/pocketfft_into.h"
#undef double

void *EM_PF32(make_c)(size_t n);
void EM_PF32(destroy_c)(void *p);
int EM_PF32(fwd_c)(void *p, float *c, float fct);
int EM_PF32(bwd_c)(void *p, float *c, float fct);
void *EM_PF32(make_r)(size_t n);
void EM_PF32(destroy_r)(void *p);
int EM_PF32(fwd_r)(void *p, float *c, float fct);
int EM_PF32(fwd_r_into)(void *p, const float *in, float *out, float fct);

void *EM_PF32(make_c)(size_t n) { return make_cfft_plan(n); }
void EM_PF32(destroy_c)(void *p) { destroy_cfft_plan(p); }
int EM_PF32(fwd_c)(void *p, float *c, float fct) { return cfft_forward(p, c, fct); }
int EM_PF32(bwd_c)(void *p, float *c, float fct) { return cfft_backward(p, c, fct); }
void *EM_PF32(make_r)(size_t n) { return make_rfft_plan(n); }
void EM_PF32(destroy_r)(void *p) { destroy_rfft_plan(p); }
int EM_PF32(fwd_r)(void *p, float *c, float fct) { return rfft_forward(p, c, fct); }
int EM_PF32(fwd_r_into)(void *p, const float *in, float *out, float fct) {
  return rfft_forward_into(p, in, out, fct);
}
