/*
** iter.h -- the one strided N-d iterator (DESIGN §2).
** Operands are broadcast to the iteration shape (stride 0), dimensions are
** ordered by stride (innermost first) and coalesced for all operands
** together, and a kernel only ever sees a 1-d strided inner loop. A
** reduction is an operand 0 with stride 0 on the reduced dims. The iterator
** never allocates.
*/
#ifndef EMBER_ITER_H
#define EMBER_ITER_H

#include "core/core.h"

enum { EM_ITER_MAX_OPS = 8 };

/* data[k] points at operand k's current element; strides[k] is its step in
** bytes; n elements. ctx is the kernel's own state. */
typedef void (*em_loop1d)(char **data, const int64_t *strides, int64_t n,
                          void *ctx);

typedef struct em_iter {
  int nops;
  int ndim;                 /* >= 1 after build; dim 0 is the innermost */
  int64_t numel;
  int64_t shape[EM_MAX_DIMS];
  int64_t strides[EM_MAX_DIMS][EM_ITER_MAX_OPS];  /* bytes, [dim][operand] */
  char *data[EM_ITER_MAX_OPS];
  int perm[EM_MAX_DIMS];    /* iteration dim -> tensor axis (before coalescing) */
} em_iter;

/* The broadcast shape of n tensors (PyTorch's rule, aligned on the right).
** The message names both shapes and the 1-based dim. */
em_status em_broadcast_shapes(const char *op, int n, const em_tensor *const *ts,
                              int *ndim, int64_t *shape);

/* Builds an iteration over `shape` for nops operands, each of which must
** broadcast to it. is_reduction: operand 0 may have stride-0 dims, which
** are ordered innermost. */
em_status em_iter_build(em_iter *it, const char *op, int nops,
                        const em_tensor *const *ops, int ndim,
                        const int64_t *shape, bool is_reduction);
/* Complex operands: em_iter_build refuses them with
** EM_MSG_DTYPE_NOT_IMPLEMENTED naming op and the dtype, so an op whose
** kernels have no complex loops fails cleanly. An op that handles complex
** (copies, fills, the complex family) brackets its builds with
**   int was = em_iter_allow_complex(1); ... em_iter_allow_complex(was);
** (per thread; returns the previous setting). */
int em_iter_allow_complex(int on);

/* Runs loop over elements [begin, end) of the iteration order. */
void em_iter_run_range(const em_iter *it, int64_t begin, int64_t end,
                       em_loop1d loop, void *ctx);
void em_iter_run(const em_iter *it, em_loop1d loop, void *ctx);
/* Runs the whole iteration, cut into contiguous ranges over the engine's
** threads when it is large (parallel.c). The loop must write only through
** operand pointers of the range it is given. */
void em_iter_run_parallel(const em_iter *it, em_loop1d loop, void *ctx);

/* The strides (in elements) PyTorch's TensorIterator gives a new output of
** `shape` computed from these inputs: dense, with dims ordered as the
** inputs' strides order them (a transposed input gives a transposed
** output); contiguous when the inputs say nothing (all broadcast). */
void em_iter_output_strides(int nops, const em_tensor *const *ops, int ndim,
                            const int64_t *shape, int64_t *strides);

/* Does the tensor write some memory location through two positions (a
** stride-0 dim of size > 1, or overlapping strides)? Conservative: may say
** "maybe" (1) for exotic as_strided layouts that do not overlap. */
int em_has_internal_overlap(const em_tensor *t);
/* EM_OK, or the shared internal-overlap error naming op, when t may not be
** written (em_has_internal_overlap). */
em_status em_check_writable(const char *op, const em_tensor *t);
/* Could a and b touch the same bytes? (same storage and byte ranges meet) */
int em_may_overlap(const em_tensor *a, const em_tensor *b);
/* Same storage, offset, sizes and strides. */
int em_same_layout(const em_tensor *a, const em_tensor *b);

#endif
