/*
** cpu/parallel.c -- running the iterator on the CPU: one range on this
** thread (em_iter_run_range, em_iter_run), the engine's thread count and
** the parallel driver (core/iter.h declares them; core only builds). A large iteration is cut into contiguous ranges of the
** iteration order, one per thread, each run with em_iter_run_range. Every
** element is computed by exactly one thread with the same code, so
** elementwise results do not depend on the thread count. Built without
** OpenMP, everything runs on the calling thread and the count stays 1.
*/
#include "core/iter.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many elements a kernel runs on one thread: starting a team
** costs more than it saves. */
enum { EM_PARALLEL_GRAIN = 32768 };

static int g_threads = 0; /* 0: not set, use OpenMP's default */

/* -- Running an iteration on this thread ------------------------------- */

void em_iter_run_range(const em_iter *it, int64_t begin, int64_t end,
                       em_loop1d loop, void *ctx) {
  /* Copies into locals: the loop below is hot and it keeps the compiler
  ** from reloading through `it` after every call of `loop`. */
  const int nops = it->nops, ndim = it->ndim;
  const int64_t n0 = it->shape[0];
  int64_t counter[EM_MAX_DIMS];
  char *ptr[EM_ITER_MAX_OPS];
  int64_t inner[EM_ITER_MAX_OPS];
  if (begin >= end) return;
  int64_t rest = begin;
  for (int d = 0; d < ndim; d++) {
    counter[d] = rest % it->shape[d];
    rest /= it->shape[d];
  }
  for (int k = 0; k < nops; k++) {
    inner[k] = it->strides[0][k];
    ptr[k] = it->data[k];
    for (int d = 0; d < ndim; d++) ptr[k] += counter[d] * it->strides[d][k];
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = n0 - counter[0];
    if (n > end - pos) n = end - pos;
    loop(ptr, inner, n, ctx);
    pos += n;
    if (pos >= end) break;
    /* advance: dim 0 wrapped to its end, carry into outer dims */
    for (int k = 0; k < nops; k++) ptr[k] -= counter[0] * inner[k];
    counter[0] = 0;
    for (int d = 1; d < ndim; d++) {
      counter[d]++;
      for (int k = 0; k < nops; k++) ptr[k] += it->strides[d][k];
      if (counter[d] < it->shape[d]) break;
      for (int k = 0; k < nops; k++) ptr[k] -= counter[d] * it->strides[d][k];
      counter[d] = 0;
    }
  }
}

void em_iter_run(const em_iter *it, em_loop1d loop, void *ctx) {
  em_iter_run_range(it, 0, it->numel, loop, ctx);
}

/* -- Overlap ------------------------------------------------------------ */

/* -- Threads ------------------------------------------------------------ */

em_status em_set_num_threads(int n) {
  if (n < 1)
    return em_fail(EM_E_VALUE, "set_num_threads: expected a positive number of threads, got %d", n);
#ifdef _OPENMP
  g_threads = n;
  /* and the default team of the kernels' own parallel loops */
  omp_set_num_threads(n);
#else
  g_threads = 1;
#endif
  /* GEMM runs in OpenBLAS's own threads: keep them at the same count */
  em_blas_set_num_threads(n);
  return EM_OK;
}

int em_get_num_threads(void) {
#ifdef _OPENMP
  if (g_threads > 0) return g_threads;
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void em_iter_run_parallel(const em_iter *it, em_loop1d loop, void *ctx) {
#ifdef _OPENMP
  int nt = em_get_num_threads();
  int64_t numel = it->numel;
  if (nt > 1 && numel >= 2 * EM_PARALLEL_GRAIN && !omp_in_parallel()) {
    int64_t nchunks = numel / EM_PARALLEL_GRAIN;
    if (nchunks > nt) nchunks = nt;
#pragma omp parallel for num_threads((int)nchunks) schedule(static)
    for (int64_t c = 0; c < nchunks; c++)
      em_iter_run_range(it, numel * c / nchunks, numel * (c + 1) / nchunks, loop, ctx);
    return;
  }
#endif
  em_iter_run(it, loop, ctx);
}
