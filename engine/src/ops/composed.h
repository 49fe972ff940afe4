/*
** ops/composed.h -- ops a device may leave to its other ops: what a device
** without the fused or special kernel gets (ops/attention_math.c,
** ops/rnn_math.c, ops/unique_math.c), and the switch that forces those
** paths on every device (em_nn_force_math: the tests that hold them
** against the kernels on the CPU, from Lua C._nn_force_math).
*/
#ifndef EMBER_OPS_COMPOSED_H
#define EMBER_OPS_COMPOSED_H

#include "core/core.h"

/* What the composed paths share (ops/attention_math.c, rnn_math.c,
** unique_math.c):
** NN_TRY(e) leaves for `done` with st set when e fails; nn_drop releases
** *t and clears it; nn_update replaces *t by *t op u (releasing the old). */
#define NN_TRY(e)                       \
  do {                                  \
    if ((st = (e)) != EM_OK) goto done; \
  } while (0)
static inline void nn_drop(em_tensor **t) {
  if (*t) em_tensor_release(*t);
  *t = NULL;
}
static inline em_status nn_update(em_tensor **t, em_ew_op op, const em_tensor *u) {
  em_tensor *r = NULL;
  em_status st = em_binary(op, *t, u, &r);
  if (st == EM_OK) {
    em_tensor_release(*t);
    *t = r;
  }
  return st;
}

void em_nn_force_math(int on);
int em_nn_forced_math(void);
/* how many T.linalg calls ran host-staged (ops/linalg_lapack.c): on a
** device without LAPACK kernels, or on the CPU under em_nn_force_math */
int64_t em_linalg_staged_calls(void);

/* unique along the first dim of slices (contiguous, [S, ...]): the distinct
** slices in lexicographic order (elements as numbers, NaN after every
** number and equal to nothing; stable) as values [n, ...]; inverse (when
** asked: int64 [S], each slice's 1-based position in values) and counts
** (when asked: int64 [n]). The unique_dim_sort/unique_dim_write kernels'
** results, from sort, index and scan ops. */
em_status em_unique_dim_composed(const em_tensor *slices, em_tensor **values,
                                 em_tensor **inverse, em_tensor **counts);

#endif
