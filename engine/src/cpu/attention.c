/*
** cpu/attention.c -- scaled_dot_product_attention on the CPU: the nn
** family's sdpa and sdpa_backward entries (core/kern_nn.h).
**
** Guarantees:
** - The score matrix is never held whole: queries are cut into blocks of
**   BR rows and keys into blocks of BC, and each thread holds one BR x BC
**   tile of scores (FlashAttention-2). The forward keeps a running row
**   maximum and sum and rescales its accumulator when the maximum moves
**   (the online softmax); it saves each row's log-sum-exp. The backward
**   recomputes each tile's probabilities from q, k and that log-sum-exp.
** - The tile products are OpenBLAS's GEMM, each small enough
**   (BR * BC * max(E, Ev) <= 2^18) that OpenBLAS runs it on the calling
**   thread; the threads are OpenMP's, over (problem, query block) in the
**   forward and over problems in the backward, so no two write one row.
** - Dropout draws each kept/dropped decision from its own Philox counter
**   (kern_nn.h), so the backward regenerates the forward's mask and the
**   result does not depend on the thread count or the tiles.
** - Fails only when a thread's scratch (three tiles and a row of L) cannot
**   be allocated.
*/
#include "cpu/nn_impl.h"
#include "cpu/omp_if.h"
#include "cpu/vecmath.h"
#include "core/iter.h"

#include <cblas.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The offset of problem b's mask (row-major over the batch dims). */
static int64_t mask_off(const em_sdpa_params *p, int64_t b) {
  int64_t off = 0;
  for (int d = p->nb - 1; d >= 0; d--) {
    off += (b % p->bsize[d]) * p->bstride[d];
    b /= p->bsize[d];
  }
  return off;
}

/* Tile sizes: 64 x 64, halved while a tile product would exceed 2^18
** multiply-adds (OpenBLAS's single-thread limit), down to 8. */
static void tiles(const em_sdpa_params *p, int64_t *br, int64_t *bc) {
  int64_t d = p->E > p->Ev ? p->E : p->Ev, r = 64, c = 64;
  if (d < 1) d = 1;
  while (r * c * d > (INT64_C(1) << 18) && (r > 8 || c > 8)) {
    if (c >= r) c /= 2;
    else r /= 2;
  }
  *br = r;
  *bc = c;
}

#define AT_T float
#define AT_S f32
#define AT_GEMM cblas_sgemm
#define AT_VEXP em_vm_f32
#include "cpu/attention_tpl.h"
#undef AT_T
#undef AT_S
#undef AT_GEMM
#undef AT_VEXP
#define AT_T double
#define AT_S f64
#define AT_GEMM cblas_dgemm
#define AT_VEXP em_vm_f64
#include "cpu/attention_tpl.h"
#undef AT_T
#undef AT_S
#undef AT_GEMM
#undef AT_VEXP

#define D_(t) ((t) ? em_tensor_data(t) : NULL)

em_status em_cpu_sdpa(const char *op, const em_tensor *q, const em_tensor *k,
                      const em_tensor *v, const em_tensor *mask, em_tensor *out, em_tensor *lse,
                      const em_sdpa_params *p) {
  if (p->B == 0 || p->L == 0) return EM_OK;
  int64_t br, bc;
  tiles(p, &br, &bc);
  int nt = em_get_num_threads(), fail;
  if (q->dtype == EM_FLOAT32)
    fail = fwd_f32(D_(q), D_(k), D_(v), D_(mask), D_(out), D_(lse), p, br, bc, nt);
  else
    fail = fwd_f64(D_(q), D_(k), D_(v), D_(mask), D_(out), D_(lse), p, br, bc, nt);
  if (fail) return em_fail(EM_E_NOMEM, "%s: out of memory for the attention tiles", op);
  return EM_OK;
}

em_status em_cpu_sdpa_backward(const char *op, const em_tensor *grad_out, const em_tensor *q,
                               const em_tensor *k, const em_tensor *v, const em_tensor *mask,
                               const em_tensor *out, const em_tensor *lse, em_tensor *gq,
                               em_tensor *gk, em_tensor *gv, const em_sdpa_params *p) {
  if (p->B == 0 || p->L == 0 || p->S == 0) return EM_OK;
  int64_t br, bc;
  tiles(p, &br, &bc);
  int nt = em_get_num_threads(), fail;
  if (q->dtype == EM_FLOAT32)
    fail = bwd_f32(D_(grad_out), D_(q), D_(k), D_(v), D_(mask), D_(out), D_(lse), D_(gq),
                   D_(gk), D_(gv), p, br, bc, nt);
  else
    fail = bwd_f64(D_(grad_out), D_(q), D_(k), D_(v), D_(mask), D_(out), D_(lse), D_(gq),
                   D_(gk), D_(gv), p, br, bc, nt);
  if (fail) return em_fail(EM_E_NOMEM, "%s: out of memory for the attention tiles", op);
  return EM_OK;
}
