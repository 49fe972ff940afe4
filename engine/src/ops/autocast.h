/*
** autocast.h -- automatic mixed precision at the ops (docs/amp.md): inside
** T.autocast(device, {dtype}) an op on the device's "lower precision" list
** casts its floating inputs (not float64) to the autocast dtype, and an op on
** the "fp32" list casts float16/bfloat16 inputs to float32, as PyTorch's
** autocast does at its dispatcher. The cast is em_to, recorded by autograd,
** so gradients flow back in the inputs' own dtypes.
**
** Each op on a list opens with
**     EM_AUTOCAST(EM_AC_MM, 2, in, em_mm(in[0], in[1], out));
** which, when autocast is on for the inputs' device and some input needs a
** cast, makes the casts, calls the op again on them and returns; otherwise
** it falls through at the cost of one thread-local read.
*/
#ifndef EMBER_OPS_AUTOCAST_H
#define EMBER_OPS_AUTOCAST_H

#include "core/core.h"

/* the op classes; each device's policy for a class is in autocast.c */
typedef enum em_ac_op {
  EM_AC_MM,        /* mm, bmm, matmul, addmm, baddbmm, linear */
  EM_AC_MV,        /* mv, addmv, dot (lower on cuda, untouched on the cpu) */
  EM_AC_CONV,      /* conv1d, conv2d */
  EM_AC_PROD,      /* prod (fp32 on both) */
  EM_AC_REDUCE,    /* sum, mean, cumsum, cumprod, softmax, log_softmax (fp32 on cuda) */
  EM_AC_NORM,      /* layer_norm (fp32 on cuda) */
  EM_AC_LOSS,      /* the losses (fp32 on both) */
  EM_AC_POINTWISE, /* exp, expm1, log, log2, log10, log1p, reciprocal, rsqrt, sinh, cosh,
                   ** tan, asin, acos, erfinv, pow, softplus (fp32 on cuda; untouched on
                   ** the cpu) */
  EM_AC_COUNT
} em_ac_op;

#define EM_AC_MAX_IN 4
typedef struct em_ac_scope {
  em_tensor *cast[EM_AC_MAX_IN];
  int n;
  int saved_any; /* em_half_begin: autocast is off inside the float32 call */
  em_status status;
} em_ac_scope;

extern _Thread_local int em_ac_any; /* some device has autocast on */

/* in[0..n-1] (NULL entries skipped): 1 when some were replaced by casts
** (release with em_ac_end), 0 when nothing is to cast, -1 on error
** (s->status set) */
int em_ac_begin(em_ac_scope *s, em_ac_op op, int n, const em_tensor **in);
/* Tests only (C._autocast_cpu_as_cuda): CPU tensors follow the cuda
** policy and dtype (this thread), so the cuda lists run without a device. */
void em_autocast_cpu_as_cuda(int on);
void em_ac_end(em_ac_scope *s);
#define EM_AUTOCAST(OP, N, IN, RECALL)                                        \
  do {                                                                        \
    if (em_ac_any) {                                                          \
      em_ac_scope ac_s_;                                                      \
      int ac_r_ = em_ac_begin(&ac_s_, (OP), (N), (IN));                       \
      if (ac_r_ < 0) return ac_s_.status;                                     \
      if (ac_r_ > 0) {                                                        \
        em_status ac_st_ = (RECALL);                                          \
        em_ac_end(&ac_s_);                                                    \
        return ac_st_;                                                        \
      }                                                                       \
    }                                                                         \
  } while (0)

/* Ops without float16/bfloat16 kernels (conv, layer_norm, the losses) take
** half inputs by computing in float32 and rounding the result (*out) back
** to the half dtype, as a half kernel with float32 accumulation does; the
** casts are em_to, so autograd sees them. Autocast is off inside the
** float32 call (it would cast the inputs straight back). */
int em_half_begin(em_ac_scope *s, int n, const em_tensor **in, em_dtype *half);
em_status em_half_end(em_ac_scope *s, em_status st, em_dtype half, em_tensor **out);

#define EM_HALF_VIA_F32(N, IN, RECALL, OUT)                                   \
  do {                                                                        \
    em_ac_scope hs_;                                                          \
    em_dtype hd_;                                                             \
    int hr_ = em_half_begin(&hs_, (N), (IN), &hd_);                           \
    if (hr_ < 0) return hs_.status;                                           \
    if (hr_ > 0) return em_half_end(&hs_, (RECALL), hd_, (OUT));              \
  } while (0)

#endif
