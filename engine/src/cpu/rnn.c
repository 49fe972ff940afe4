/*
** cpu/rnn.c -- the recurrent layers' time loops (em_nn_kernels.rnn_forward
** and rnn_backward; core/kern_nn.h): one GEMM for the input projection of
** the whole sequence, then per step one GEMM of the state (OpenBLAS) and
** the fused gate loop; the backward runs the steps in reverse from the
** saved states and gates, with one GEMM per step for the state's gradient
** and three at the end for the input's, w_ih's and w_hh's. The loops for float32
** and float64 are cpu/rnn_body.h, included once for each.
*/
#include "cpu/nn_impl.h"
#include "cpu/vecmath.h"

#include <string.h>

/* Offsets (elements) of the workspace's parts; em_rnn_ws_size the total. */
typedef struct rnn_ws_t {
  int64_t hs, cs, gates, hn;
} rnn_ws_t;

static rnn_ws_t rnn_ws(const em_rnn_geo *g) {
  rnn_ws_t w;
  w.hs = 0;
  w.cs = (g->L + 1) * g->N * g->P;
  w.gates = w.cs + (g->mode == EM_RNN_LSTM ? (g->L + 1) * g->N * g->H : 0);
  w.hn = w.gates + g->L * g->N * g->G * g->H;
  return w;
}

/* whether sequence n runs at time t */
static int rnn_active(const em_rnn_geo *g, int64_t n, int64_t t) {
  return !g->lengths || t < g->lengths[n];
}

#define RT float
#define SUF f32
#define EXPF expf
#define TANHF tanhf
#define VMFN em_vm_f32
#define VFN em_vec_f32_fn
#include "cpu/rnn_body.h"
#undef RT
#undef SUF
#undef EXPF
#undef TANHF
#undef VMFN
#undef VFN

#define RT double
#define SUF f64
#define EXPF exp
#define TANHF tanh
#define VMFN em_vm_f64
#define VFN em_vec_f64_fn
#include "cpu/rnn_body.h"
#undef RT
#undef SUF
#undef EXPF
#undef TANHF
#undef VMFN
#undef VFN

em_status em_cpu_rnn_forward(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                             em_tensor *out, em_tensor *hn, em_tensor *cn, em_tensor *ws) {
  return a->x->dtype == EM_FLOAT32 ? rnn_fwd_f32(op, g, a, out, hn, cn, ws)
                                   : rnn_fwd_f64(op, g, a, out, hn, cn, ws);
}

em_status em_cpu_rnn_backward(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                              const em_tensor *ws, const em_tensor *g_out, const em_tensor *g_hn,
                              const em_tensor *g_cn, const em_rnn_grads *gr) {
  return a->x->dtype == EM_FLOAT32 ? rnn_bwd_f32(op, g, a, ws, g_out, g_hn, g_cn, gr)
                                   : rnn_bwd_f64(op, g, a, ws, g_out, g_hn, g_cn, gr);
}
