/*
** reduce_impl.h -- private helpers shared by reduce.c, sort.c and linalg.c:
** the lane runner (one whole dim per kernel call) and per-dtype element
** loaders/storers.
*/
#ifndef EMBER_REDUCE_IMPL_H
#define EMBER_REDUCE_IMPL_H

#include "core/iter.h"

/* Header of a lane kernel's context: lane length and each operand's step
** along the lane, in bytes. */
typedef struct em_lane {
  int64_t len;
  int64_t stride[EM_ITER_MAX_OPS];
} em_lane;

typedef struct em_smctx {
  em_lane h;
  int log;
  void (*store)(char *, double);
  double (*reload)(const char *);  /* softmax into f32/f64: reread the stored exp */
  int f32out;                      /* the output is float32 */
} em_smctx;

typedef struct em_cumctx {
  em_lane h;
  int prod;
} em_cumctx;

/* Kernels whose ctx needs scratch memory per thread: the runner copies the
** ctx (ctx_size bytes, at most EM_LANE_CTX_MAX) for each thread, calls init
** on the copy before its lanes and fini after. init fails with EM_E_NOMEM
** after em_fail. */
enum { EM_LANE_CTX_MAX = 512 };
typedef struct em_lane_scratch {
  size_t ctx_size;
  em_status (*init)(void *ctx);
  void (*fini)(void *ctx);
} em_lane_scratch;

/* Runs loop once per lane of `axis` (0-based) over operands ts (the last
** one defines the shape; the others agree with it on every other dim, and
** may have any size along axis). lane->len is set to len. With parallel,
** lanes may run on several threads when built with OpenMP (the kernel only
** reads its ctx, or gets a private copy through scratch); each lane is
** computed the same way on any thread. */
em_status em_run_lanes(const char *op, int nops, const em_tensor *const *ts, int axis,
                       int64_t len, em_loop1d loop, em_lane *lane, bool parallel,
                       const em_lane_scratch *scratch);

/* Runs the iteration in chunks whose boundaries are multiples of `block`
** (so that no two threads share a block), on several threads when built
** with OpenMP and the work (numel * work_per_element) is large enough. */
void em_run_blocks(const em_iter *it, int64_t block, int64_t work_per_element,
                   em_loop1d loop, void *ctx);

/* Marks the reduced axes of t for a list of 1-based dims (all when
** ndims <= 0); duplicate or out-of-range dims are errors. */
em_status em_reduce_dims(const char *op, const em_tensor *t, int ndims,
                         const int64_t *dims, bool *mask);

typedef double (*em_load_d_fn)(const char *);
typedef int64_t (*em_load_i_fn)(const char *);
typedef void (*em_store_d_fn)(char *, double);
em_load_d_fn em_load_d(em_dtype dt);
em_load_i_fn em_load_i(em_dtype dt);
em_store_d_fn em_store_d(em_dtype dt);

#endif
