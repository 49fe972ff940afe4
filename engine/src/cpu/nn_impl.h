/*
** nn_impl.h -- what cpu/conv.c and cpu/nn.c share: the floating dtypes the
** nn loops are generated for, and the convolution entry of the CPU's nn
** table (core/kern_nn.h; the table is in cpu/nn.c).
*/
#ifndef EMBER_CPU_NN_IMPL_H
#define EMBER_CPU_NN_IMPL_H

#include "core/kern_nn.h"

#include <math.h>
#include <stdlib.h>

/* The dtypes every nn loop is generated for: X(SUFFIX, ENUM, C_TYPE). */
#define EM_FOR_EACH_NN_DTYPE(X) \
  X(f32, EM_FLOAT32, float)     \
  X(f64, EM_FLOAT64, double)

/* em_nn_kernels.conv2d (cpu/conv.c). */
em_status em_cpu_conv2d(const char *op, em_conv_pass pass, const em_tensor *a,
                        const em_tensor *b, const em_tensor *bias, em_tensor *out,
                        const em_conv2d_geo *g);

/* em_nn_kernels.sdpa and sdpa_backward (cpu/attention.c). */
em_status em_cpu_sdpa(const char *op, const em_tensor *q, const em_tensor *k,
                      const em_tensor *v, const em_tensor *mask, em_tensor *out, em_tensor *lse,
                      const em_sdpa_params *p);
em_status em_cpu_sdpa_backward(const char *op, const em_tensor *grad_out, const em_tensor *q,
                               const em_tensor *k, const em_tensor *v, const em_tensor *mask,
                               const em_tensor *out, const em_tensor *lse, em_tensor *gq,
                               em_tensor *gk, em_tensor *gv, const em_sdpa_params *p);
/* C[M x N] = op(A) op(B) + beta C (op: transposed when ta / tb), row-major
** float32/float64 on OpenBLAS (cpu/conv.c; cpu/rnn.c uses it too). */
void em_cpu_nn_gemm(em_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                    int64_t lda, const void *B, int64_t ldb, double beta, void *Cm, int64_t ldc);

/* em_nn_kernels.rnn_forward / rnn_backward (cpu/rnn.c). */
em_status em_cpu_rnn_forward(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                             em_tensor *out, em_tensor *hn, em_tensor *cn, em_tensor *ws);
em_status em_cpu_rnn_backward(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                              const em_tensor *ws, const em_tensor *g_out, const em_tensor *g_hn,
                              const em_tensor *g_cn, const em_rnn_grads *gr);

#endif
