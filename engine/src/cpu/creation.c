/*
** cpu/creation.c -- the creation family of the CPU's kernels
** (core/kern_creation.h): zeroed storage and the range fills. Each range
** element is computed from its own index (never by accumulating), so the
** result does not depend on how the work is split: start + step * i in one
** fused multiply-add (the exact value rounded to double once, as PyTorch's
** compiled loop and the CUDA kernel compute it), then rounded to the dtype.
*/
#include "core/kern_creation.h"

#include <math.h>

/* Stores are core/core.h's EM_STORE_x: doubles convert with the engine's
** cast rules (truncate toward zero, saturate, NaN -> 0); int64 values wrap
** modulo 2^bits like integer casts, and round once to a float dtype. */

/* -- Loops -----------------------------------------------------------------
** The output is contiguous, so an element's row-major index is its byte
** offset from the first element divided by the element size. */

/* the range by value: the loops read its fields as they read the base */
typedef struct {
  const char *base;
  int64_t itemsize;
  em_range r;
} range_ctx;

static inline double lin_value(const em_range *c, int64_t i) {
  double v = i < c->halfway ? fma(c->lstep, (double)i, c->lstart)
                            : fma(-c->lstep, (double)(c->steps - i - 1), c->lend);
  return c->log ? pow(c->lbase, v) : v;
}

/* Integer arithmetic wraps, as int64 accumulation does in PyTorch. */
static inline int64_t wrap_madd(int64_t a, int64_t b, int64_t i) {
  return (int64_t)((uint64_t)a + (uint64_t)b * (uint64_t)i);
}

#define DEF_RANGE_KERNELS(S, E, CT, K)                                         \
  static void em_arange_float_##S(char **data, const int64_t *st, int64_t n,   \
                                  void *ctx) {                                 \
    const range_ctx *c = ctx;                                                  \
    const em_range *r = &c->r;                                                 \
    char *p = data[0];                                                         \
    int64_t i = (p - c->base) / c->itemsize;                                   \
    for (int64_t k = 0; k < n; k++, p += st[0], i++)                           \
      EM_STORE_##S(p, fma(r->fstep, (double)i, r->fstart));                   \
  }                                                                            \
  static void em_arange_int_##S(char **data, const int64_t *st, int64_t n,     \
                                void *ctx) {                                   \
    const range_ctx *c = ctx;                                                  \
    const em_range *r = &c->r;                                                 \
    char *p = data[0];                                                         \
    int64_t i = (p - c->base) / c->itemsize;                                   \
    for (int64_t k = 0; k < n; k++, p += st[0], i++)                           \
      EM_STORE_##S(p, wrap_madd(r->istart, r->istep, i));                      \
  }                                                                            \
  static void em_linspace_##S(char **data, const int64_t *st, int64_t n,       \
                              void *ctx) {                                     \
    const range_ctx *c = ctx;                                                  \
    char *p = data[0];                                                         \
    int64_t i = (p - c->base) / c->itemsize;                                   \
    for (int64_t k = 0; k < n; k++, p += st[0], i++)                           \
      EM_STORE_##S(p, (double)lin_value(&c->r, i));                             \
  }
EM_FOR_EACH_DTYPE(DEF_RANGE_KERNELS)

#define ARANGE_FLOAT_ROW(S, E, CT, K) [E] = em_arange_float_##S,
#define ARANGE_INT_ROW(S, E, CT, K) [E] = em_arange_int_##S,
#define LINSPACE_ROW(S, E, CT, K) [E] = em_linspace_##S,
static const em_loop1d arange_float_loops[EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(ARANGE_FLOAT_ROW)};
static const em_loop1d arange_int_loops[EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(ARANGE_INT_ROW)};
static const em_loop1d linspace_loops[EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(LINSPACE_ROW)};

static void run_range(const em_iter *it, em_loop1d loop, em_dtype dt, const em_range *r) {
  if (it->numel == 0) return;
  range_ctx c = {it->data[0], (int64_t)em_dtype_size(dt), *r};
  em_iter_run(it, loop, &c);
}

/* -- The table entries ----------------------------------------------------- */

static void cpu_zero(em_tensor *t) {
  if (t->storage->data) memset(t->storage->data, 0, t->storage->nbytes);
}

/* integer dtypes compute in int64 (PyTorch's accscalar type) */
static void cpu_arange(const em_iter *it, em_dtype dt, const em_range *r) {
  run_range(it, em_dtype_kindof(dt) == EM_KIND_INT ? arange_int_loops[dt]
                                                   : arange_float_loops[dt], dt, r);
}

static void cpu_linspace(const em_iter *it, em_dtype dt, const em_range *r) {
  run_range(it, linspace_loops[dt], dt, r);
}

const em_creation_kernels em_cpu_creation_kernels = {
    .zero = cpu_zero,
    .arange = cpu_arange,
    .linspace = cpu_linspace,
};
