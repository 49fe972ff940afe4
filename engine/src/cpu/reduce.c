/*
** reduce.c -- reductions over dims (sum, prod, mean, amax, amin, all, any,
** nansum, nanmean, count_nonzero, var/std(+mean), norm, logsumexp) and the
** one-dim "lane" ops (max/min with indices, argmax/argmin, softmax,
** log_softmax, cumsum, cumprod, cummax, cummin).
**
** Guarantees:
** - Every reduction goes through the iterator: an accumulator tensor of the
**   keepdim shape is operand 0 (stride 0 on the reduced dims), the input is
**   operand 1. The reduced dims go innermost unless the input's densest dim
**   is kept (then the iteration follows the input's layout; see run_reduce).
** - Floating inputs accumulate in double; each inner-loop run is summed
**   pairwise (blocks of 8 partial sums, halving above 128 elements; a
**   unit-stride float32 run: blocks of 256 in 16 partial sums, combined
**   pairwise, vectorised in cpu/vecmath.c), so the rounding error grows
**   like log n, not n. Integer and bool inputs
**   accumulate in int64 with wrap-around (PyTorch gives int64 sums).
** - softmax/log_softmax of float32 into float32 along a contiguous dim
**   compute x - max and its exp in float (as PyTorch; cpu/vecmath.c), the
**   sum and the final scale in double; other cases compute in double.
** - Results do not depend on the number of threads: work is split by whole
**   outputs or lanes, or (one output) into chunks of a fixed size whose
**   partials combine in a fixed tree.
** - Lane ops see a whole dim at once: every operand is viewed with that dim
**   collapsed to size 1, the iterator runs over the remaining positions and
**   the kernel walks each lane with the lane stride kept in its context.
** - Dims are 1-based (negative from the end) in arguments and messages.
** - Results are written only on success; nothing leaks on failure.
*/
#include "core/iter.h"
#include "reduce_impl.h"
#include "autograd/autograd.h"
#include "vecmath.h"

#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* -- Per-dtype load/store helpers ----------------------------------------
** ld_d_x / ld_i_x read an element as double / int64; st_d_x / st_i_x write
** a double / int64 with the engine's conversion rules. */

static inline int64_t d2i(double v, double lo, double hi) { return em_sat_i64(v, lo, hi); }

#define LDI_b8(p) ((int64_t)(*(const bool *)(p)))
#define LDI_u8(p) ((int64_t)(*(const uint8_t *)(p)))
#define LDI_i8(p) ((int64_t)(*(const int8_t *)(p)))
#define LDI_i16(p) ((int64_t)(*(const int16_t *)(p)))
#define LDI_i32(p) ((int64_t)(*(const int32_t *)(p)))
#define LDI_i64(p) (*(const int64_t *)(p))
#define LDI_f16(p) ((int64_t)EM_LOAD_AS_F64_f16(p))
#define LDI_bf16(p) ((int64_t)EM_LOAD_AS_F64_bf16(p))
#define LDI_f32(p) ((int64_t)*(const float *)(p))
#define LDI_f64(p) ((int64_t)*(const double *)(p))

#define STD_b8(p, v) (*(bool *)(p) = ((v) != 0))
#define STD_u8(p, v) (*(uint8_t *)(p) = (uint8_t)d2i(v, 0, UINT8_MAX))
#define STD_i8(p, v) (*(int8_t *)(p) = (int8_t)d2i(v, INT8_MIN, INT8_MAX))
#define STD_i16(p, v) (*(int16_t *)(p) = (int16_t)d2i(v, INT16_MIN, INT16_MAX))
#define STD_i32(p, v) (*(int32_t *)(p) = (int32_t)d2i(v, INT32_MIN, INT32_MAX))
#define STD_i64(p, v) (*(int64_t *)(p) = d2i(v, (double)INT64_MIN, (double)INT64_MAX))
#define STD_f16(p, v) (*(em_half *)(p) = em_float_to_half((float)(v)))
#define STD_bf16(p, v) (*(em_bfloat16 *)(p) = em_float_to_bf16((float)(v)))
#define STD_f32(p, v) (*(float *)(p) = (float)(v))
#define STD_f64(p, v) (*(double *)(p) = (v))

#define STI_b8(p, v) (*(bool *)(p) = ((v) != 0))
#define STI_u8(p, v) (*(uint8_t *)(p) = (uint8_t)(v))
#define STI_i8(p, v) (*(int8_t *)(p) = (int8_t)(v))
#define STI_i16(p, v) (*(int16_t *)(p) = (int16_t)(v))
#define STI_i32(p, v) (*(int32_t *)(p) = (int32_t)(v))
#define STI_i64(p, v) (*(int64_t *)(p) = (v))
#define STI_f16(p, v) STD_f16(p, (double)(v))
#define STI_bf16(p, v) STD_bf16(p, (double)(v))
#define STI_f32(p, v) STD_f32(p, (double)(v))
#define STI_f64(p, v) STD_f64(p, (double)(v))

#define DEF_IO(S, E, CT, K)                                                   \
  static inline double ld_d_##S(const char *p) { return EM_LOAD_AS_F64_##S(p); } \
  static inline int64_t ld_i_##S(const char *p) { return LDI_##S(p); }       \
  static inline void st_d_##S(char *p, double v) { STD_##S(p, v); }          \
  static inline void st_i_##S(char *p, int64_t v) { STI_##S(p, v); }
EM_FOR_EACH_DTYPE(DEF_IO)

static inline int64_t wrap_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t wrap_mul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* -- Dims ----------------------------------------------------------------- */

em_status em_reduce_dims(const char *op, const em_tensor *t, int ndims,
                         const int64_t *dims, bool *mask) {
  int nd = t->ndim;
  for (int i = 0; i < EM_MAX_DIMS; i++) mask[i] = false;
  if (ndims <= 0 || dims == NULL) {
    for (int i = 0; i < nd; i++) mask[i] = true;
    return EM_OK;
  }
  for (int i = 0; i < ndims; i++) {
    int a;
    em_status st = em_wrap_dim(op, dims[i], nd, &a);
    if (st != EM_OK) return st;
    if (mask[a])
      return em_fail(EM_E_VALUE, "%s: dim %d appears multiple times in the list of dims",
                     op, a + 1);
    mask[a] = true;
  }
  return EM_OK;
}

/* Output sizes: reduced dims become 1 (keepdim) or disappear. */
static int out_shape(const em_tensor *t, const bool *mask, bool keepdim,
                     int64_t *sizes) {
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (mask[i]) {
      if (keepdim) sizes[n++] = 1;
    } else {
      sizes[n++] = t->sizes[i];
    }
  }
  return n;
}

/* A tensor struct on the stack sharing t's storage (no reference taken):
** for views that live only during one iterator run. */
static void stack_view(em_tensor *v, const em_tensor *t) { memcpy(v, t, sizeof *v); }

/* A fresh contiguous accumulator of the keepdim shape with `width` elements
** of dt per output position, every element set to init (as double or int64
** by dt's kind). Its element k of position i is at data[i * width + k]. */
static em_status new_acc(const em_tensor *t, const bool *mask, em_dtype dt,
                         int width, double dinit, int64_t iinit, em_tensor **out) {
  int64_t sizes[EM_MAX_DIMS] = {0}, strides[EM_MAX_DIMS] = {0};
  int n = out_shape(t, mask, true, sizes);
  int64_t numel;
  em_status st = em_numel_checked("reduce", n, sizes, &numel);
  if (st != EM_OK) return st;
  em_contiguous_strides(n, sizes, strides);
  for (int i = 0; i < n; i++) strides[i] *= width;
  em_storage *s;
  st = em_storage_new((size_t)(numel * width) * em_dtype_size(dt), em_cpu(), &s);
  if (st != EM_OK) return st;
  st = em_tensor_alloc(s, 0, n, sizes, strides, dt, out);
  em_storage_release(s);
  if (st != EM_OK) return st;
  if (dt == EM_FLOAT64) {
    double *d = em_storage_data(s);
    for (int64_t i = 0; i < numel * width; i++) d[i] = dinit;
  } else {
    int64_t *d = em_storage_data(s);
    for (int64_t i = 0; i < numel * width; i++) d[i] = iinit;
  }
  return EM_OK;
}

/* Work (elements times per-element cost) below which one thread does it. */
enum { PAR_GRAIN = 1 << 16 };

void em_run_blocks(const em_iter *it, int64_t block, int64_t work_per_element,
                   em_loop1d loop, void *ctx) {
  int64_t total = it->numel;
  if (total <= 0) return;
#ifdef _OPENMP
  int64_t nblocks = total / block;
  int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (nt > 1 && nblocks > 1 && total * work_per_element >= PAR_GRAIN) {
    int64_t chunks = nblocks < 4 * (int64_t)nt ? nblocks : 4 * (int64_t)nt;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t c = 0; c < chunks; c++) {
      int64_t b0 = nblocks * c / chunks, b1 = nblocks * (c + 1) / chunks;
      em_iter_run_range(it, b0 * block, b1 * block, loop, ctx);
    }
    return;
  }
#else
  (void)block;
  (void)work_per_element;
#endif
  em_iter_run(it, loop, ctx);
}

/* Runs loop over (acc, extra..., t). Normally the reduced dims go innermost
** (reduction mode), so each kernel call folds a run of inputs into one
** accumulator (pairwise for sums). When the input's densest dim is not
** reduced (a column sum of a row-major matrix) that order strides through
** memory; then the iteration follows the input's layout and each kernel
** call adds a contiguous row into a row of accumulators. Sums of float64
** keep the pairwise order (their accumulator has no extra precision);
** every other dtype accumulates in double or int64, which absorbs the
** longer chains. */
/* Combining two partial accumulators of one output (a <- a op p). */
typedef void (*combine_fn)(char *a, const char *p, const void *ctx);
static void cmb_add_d(char *a, const char *p, const void *c) {
  (void)c; *(double *)a += *(const double *)p;
}
static void cmb_add2_d(char *a, const char *p, const void *c) {
  (void)c; ((double *)a)[0] += ((const double *)p)[0]; ((double *)a)[1] += ((const double *)p)[1];
}
static void cmb_mul_d(char *a, const char *p, const void *c) {
  (void)c; *(double *)a *= *(const double *)p;
}
static void cmb_max_d(char *a, const char *p, const void *c) {
  (void)c; double x = *(const double *)p, v = *(double *)a;
  *(double *)a = (v != v || v >= x) ? v : x;
}
static void cmb_min_d(char *a, const char *p, const void *c) {
  (void)c; double x = *(const double *)p, v = *(double *)a;
  *(double *)a = (v != v || v <= x) ? v : x;
}
static void cmb_add_i(char *a, const char *p, const void *c) {
  (void)c; *(int64_t *)a = wrap_add(*(int64_t *)a, *(const int64_t *)p);
}
static void cmb_mul_i(char *a, const char *p, const void *c) {
  (void)c; *(int64_t *)a = wrap_mul(*(int64_t *)a, *(const int64_t *)p);
}
static void cmb_max_i(char *a, const char *p, const void *c) {
  (void)c; if (*(const int64_t *)p > *(int64_t *)a) *(int64_t *)a = *(const int64_t *)p;
}
static void cmb_min_i(char *a, const char *p, const void *c) {
  (void)c; if (*(const int64_t *)p < *(int64_t *)a) *(int64_t *)a = *(const int64_t *)p;
}
static void cmb_and_i(char *a, const char *p, const void *c) {
  (void)c; *(int64_t *)a = *(int64_t *)a && *(const int64_t *)p;
}
static void cmb_or_i(char *a, const char *p, const void *c) {
  (void)c; *(int64_t *)a = *(int64_t *)a || *(const int64_t *)p;
}
/* Chan et al.: merge {count, mean, M2} summaries */
static void cmb_var(char *va, const char *vp, const void *c) {
  (void)c;
  double *a = (double *)va;
  const double *p = (const double *)vp;
  if (p[0] == 0) return;
  if (a[0] == 0) { a[0] = p[0]; a[1] = p[1]; a[2] = p[2]; return; }
  double tot = a[0] + p[0], delta = p[1] - a[1];
  a[1] += delta * p[0] / tot;
  a[2] += p[2] + delta * delta * a[0] * p[0] / tot;
  a[0] = tot;
}
static void cmb_norm(char *a, const char *p, const void *c) {
  double q = *(const double *)c;
  if (q == INFINITY) cmb_max_d(a, p, c);
  else if (q == -INFINITY) cmb_min_d(a, p, c);
  else cmb_add_d(a, p, c);
}

/* Inputs of one output are cut into fixed chunks of this many elements
** (never depending on the thread count), each reduced on its own and the
** partials combined in a fixed tree. */
enum { RED_CHUNK = 1 << 16 };

/* Runs loop over (acc, extra..., t). Normally the reduced dims go innermost
** (reduction mode), so each kernel call folds a run of inputs into one
** accumulator (pairwise for sums). When the input's densest dim is not
** reduced (a column sum of a row-major matrix) that order strides through
** memory; then the iteration follows the input's layout and each kernel
** call adds a contiguous row into a row of accumulators. Sums of float64
** keep the pairwise order (their accumulator has no extra precision);
** every other dtype accumulates in double or int64, which absorbs the
** longer chains.
** Threads: several outputs are split between threads by whole outputs; a
** single output over at least 2 * RED_CHUNK inputs is cut into chunks
** whose partials (width elements of 8 bytes each) are combined with
** combine. Either way the result is the same on any number of threads. */
static em_status run_reduce(const char *op, em_tensor *acc, const em_tensor *t,
                            const em_tensor *extra, em_loop1d loop, void *ctx,
                            bool sums, combine_fn combine, int width) {
  int dense = -1;
  for (int i = 0; i < t->ndim; i++) {
    if (t->sizes[i] <= 1) continue;
    int64_t s = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
    if (s == 0) continue;
    if (dense < 0 || s < (t->strides[dense] < 0 ? -t->strides[dense] : t->strides[dense]))
      dense = i;
  }
  bool reduction_order = true;
  if (dense >= 0 && acc->sizes[dense] > 1 && !(sums && t->dtype == EM_FLOAT64))
    reduction_order = false;
  em_iter it;
  const em_tensor *ops[3] = {acc, t, extra};
  em_status st = em_iter_build(&it, op, extra ? 3 : 2, ops, t->ndim, t->sizes,
                               reduction_order);
  if (st != EM_OK) return st;
  if (it.numel <= 0) return EM_OK;
  if (!reduction_order) {
    em_iter_run(&it, loop, ctx);  /* outputs innermost: chunks would share them */
    return EM_OK;
  }
  /* the reduced dims lead the iteration (acc stride 0): a block of that
  ** many elements belongs to one output */
  int64_t block = 1;
  for (int d = 0; d < it.ndim && it.strides[d][0] == 0; d++) block *= it.shape[d];
  if (block < it.numel || it.numel < 2 * RED_CHUNK || !combine) {
    em_run_blocks(&it, block, 1, loop, ctx);
    return EM_OK;
  }
  /* one output: every operand-0 stride is 0, so a copy of the iterator
  ** whose data[0] points at a private partial reduces any range into it */
  int64_t nchunks = (it.numel + RED_CHUNK - 1) / RED_CHUNK;
  size_t psize = (size_t)width * 8;
  char *parts = malloc((size_t)nchunks * psize);
  if (!parts) return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  for (int64_t c = 0; c < nchunks; c++) memcpy(parts + c * psize, it.data[0], psize);
#ifdef _OPENMP
  int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
#endif
  for (int64_t c = 0; c < nchunks; c++) {
    em_iter mine = it;
    mine.data[0] = parts + c * psize;
    int64_t end = (c + 1) * RED_CHUNK < it.numel ? (c + 1) * RED_CHUNK : it.numel;
    em_iter_run_range(&mine, c * RED_CHUNK, end, loop, ctx);
  }
  for (int64_t step = 1; step < nchunks; step *= 2)
    for (int64_t c = 0; c + step < nchunks; c += 2 * step)
      combine(parts + c * psize, parts + (c + step) * psize, ctx);
  /* the accumulator still holds the op's identity: fold the total in */
  combine(it.data[0], parts, ctx);
  free(parts);
  return EM_OK;
}

/* The accumulator (keepdim, width w) copied into a new tensor of dtype dt,
** with or without the reduced dims. */
static em_status acc_to_out(em_tensor *acc, const em_tensor *t, const bool *mask,
                            bool keepdim, em_dtype dt, em_tensor **out) {
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (mask[i] && !keepdim) continue;
    sizes[n] = acc->sizes[i];
    strides[n] = acc->strides[i];
    n++;
  }
  em_tensor v;
  stack_view(&v, acc);
  v.ndim = n;
  memcpy(v.sizes, sizes, sizeof sizes);
  memcpy(v.strides, strides, sizeof strides);
  em_tensor *o;
  em_status st = em_empty(n, sizes, dt, em_cpu(), &o);
  if (st != EM_OK) return st;
  st = em_copy_(o, &v);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

/* -- Pairwise summation ---------------------------------------------------
** pw_sum_x(p, stride, n): the sum of n elements as double. Blocks of at most
** 128 elements use 8 independent partial sums; longer runs split in half,
** so each element passes through O(log n) additions. */
#define DEF_PWSUM(S, E, CT, K)                                                 \
  static double pw_sum_##S(const char *p, int64_t st, int64_t n) {           \
    if (n <= 128) {                                                          \
      double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                \
      int64_t i = 0;                                                         \
      if (st == (int64_t)sizeof(CT)) /* unit stride: a vectorisable copy */  \
        for (; i + 8 <= n; i += 8)                                           \
          for (int j = 0; j < 8; j++)                                        \
            a[j] += ld_d_##S(p + (i + j) * (int64_t)sizeof(CT));             \
      for (; i + 8 <= n; i += 8)                                             \
        for (int j = 0; j < 8; j++) a[j] += ld_d_##S(p + (i + j) * st);      \
      double s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])); \
      for (; i < n; i++) s += ld_d_##S(p + i * st);                          \
      return s;                                                              \
    }                                                                        \
    int64_t h = (n / 2) & ~(int64_t)7;                                       \
    return pw_sum_##S(p, st, h) + pw_sum_##S(p + h * st, st, n - h);         \
  }
EM_FOR_EACH_DTYPE(DEF_PWSUM)

/* amax / amin of a run (data[0] the accumulator, data[1] the input): x
** BETTER v replaces v, v KEEP x keeps it, START is the identity. NaN
** propagates: once v is NaN it stays, and a NaN x replaces v. */
#define DEF_EXTREMUM(NAME, BETTER, KEEP, START, S, E, CT, K)                   \
  static void em_##NAME##_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    if (st[0] == 0 && K == EM_KIND_FLOAT && sizeof(CT) >= 4 &&               \
        st[1] == (int64_t)sizeof(CT)) {                                      \
      /* float32/float64, unit stride: compare in the dtype itself (exact), \
      ** 8 chains the vectoriser can keep in registers */                   \
      const CT *q = (const CT *)d[1];                                        \
      CT v[8];                                                               \
      for (int j = 0; j < 8; j++) v[j] = (CT)(START);                         \
      int64_t i = 0;                                                         \
      int nan = 0; /* NaN tracked apart keeps the loop branch-free */       \
      for (; i + 8 <= n; i += 8)                                             \
        for (int j = 0; j < 8; j++) {                                        \
          CT x = q[i + j];                                                   \
          v[j] = x BETTER v[j] ? x : v[j];                                    \
          nan |= x != x;                                                     \
        }                                                                    \
      double a = *(double *)d[0];                                            \
      for (int j = 0; j < 8; j++) a = (a != a || a KEEP v[j]) ? a : v[j];    \
      for (; i < n; i++) a = (a != a || a KEEP q[i]) ? a : q[i];             \
      *(double *)d[0] = nan ? NAN : a;                                       \
      return;                                                                \
    }                                                                        \
    if (st[0] == 0 && K == EM_KIND_FLOAT) {                                  \
      /* four independent chains; NaN is sticky in each */                   \
      double v[4] = {START, START, START, START};            \
      int64_t i = 0;                                                         \
      for (; i + 4 <= n; i += 4)                                             \
        for (int j = 0; j < 4; j++) {                                        \
          double x = ld_d_##S(d[1] + (i + j) * st[1]);                       \
          v[j] = (v[j] != v[j] || v[j] KEEP x) ? v[j] : x;                     \
        }                                                                    \
      for (; i < n; i++) {                                                   \
        double x = ld_d_##S(d[1] + i * st[1]);                               \
        v[0] = (v[0] != v[0] || v[0] KEEP x) ? v[0] : x;                       \
      }                                                                      \
      double a = *(double *)d[0];                                            \
      for (int j = 0; j < 4; j++) a = (a != a || a KEEP v[j]) ? a : v[j];      \
      *(double *)d[0] = a;                                                   \
      return;                                                                \
    }                                                                        \
    for (int64_t i = 0; i < n; i++) {                                        \
      char *a = d[0] + i * st[0];                                            \
      if (K == EM_KIND_FLOAT) {                                              \
        double x = ld_d_##S(d[1] + i * st[1]), v = *(double *)a;             \
        *(double *)a = (v != v || v KEEP x) ? v : x;                           \
      } else {                                                               \
        int64_t x = ld_i_##S(d[1] + i * st[1]);                              \
        if (x BETTER *(int64_t *)a) *(int64_t *)a = x;                            \
      }                                                                      \
    }                                                                        \
  }

/* softmax / log_softmax of contiguous float32 lanes into float32: the max
** as the general kernel takes it (NaN wins; an infinite max becomes 0 when
** negative), x - max in float, exp by the vector exp of cpu/vecmath.c
** written into the output, their sum in double (em_vsum_f32), then
** exp * (1 / sum) or x - max - log(sum) in double, rounded once. PyTorch
** computes x - max and exp in float as well. */
static void softmax_f32_lanes(char **d, const int64_t *st, int64_t n, int64_t len,
                              int log_) {
  for (int64_t i = 0; i < n; i++) {
    const float *x = (const float *)(d[1] + i * st[1]);
    float *o = (float *)(d[0] + i * st[0]);
    float mf = -INFINITY;
    int nan = 0;
    for (int64_t j = 0; j < len; j++) {
      mf = x[j] > mf ? x[j] : mf;
      nan |= x[j] != x[j];
    }
    if (nan) mf = NAN;
    if (isinf(mf) && mf < 0) mf = 0;
    for (int64_t j = 0; j < len; j++) o[j] = x[j] - mf;
    em_vexp_f32(o, o, len);
    double s = em_vsum_f32(o, len);
    if (log_) {
      double ls = log(s);
      for (int64_t j = 0; j < len; j++) o[j] = (float)((double)x[j] - (double)mf - ls);
    } else {
      double inv = 1.0 / s;
      for (int64_t j = 0; j < len; j++) o[j] = (float)((double)o[j] * inv);
    }
  }
}

/* -- Reduction kernels ----------------------------------------------------
** data[0] is the accumulator (double or int64), data[1] the input. When
** st[0] == 0 the n inputs all fold into one accumulator; otherwise each
** input meets its own accumulator. */

#define DEF_RED_KERNELS(S, E, CT, K)                                           \
  static void em_sum_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    if (K == EM_KIND_FLOAT) {                                                \
      if (st[0] == 0 && E == EM_FLOAT32 && st[1] == 4) {                     \
        *(double *)d[0] += em_vsum_f32((const float *)d[1], n);              \
        return;                                                              \
      }                                                                      \
      if (st[0] == 0) { *(double *)d[0] += pw_sum_##S(d[1], st[1], n); return; } \
      for (int64_t i = 0; i < n; i++)                                        \
        *(double *)(d[0] + i * st[0]) += ld_d_##S(d[1] + i * st[1]);         \
    } else {                                                                 \
      int64_t *a = (int64_t *)d[0];                                          \
      if (st[0] == 0) {                                                      \
        int64_t s = *a;                                                      \
        for (int64_t i = 0; i < n; i++) s = wrap_add(s, ld_i_##S(d[1] + i * st[1])); \
        *a = s;                                                              \
        return;                                                              \
      }                                                                      \
      for (int64_t i = 0; i < n; i++) {                                      \
        int64_t *ai = (int64_t *)(d[0] + i * st[0]);                         \
        *ai = wrap_add(*ai, ld_i_##S(d[1] + i * st[1]));                     \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  static void em_prod_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++) {                                        \
      char *a = d[0] + i * st[0];                                            \
      if (K == EM_KIND_FLOAT) *(double *)a *= ld_d_##S(d[1] + i * st[1]);     \
      else *(int64_t *)a = wrap_mul(*(int64_t *)a, ld_i_##S(d[1] + i * st[1])); \
    }                                                                        \
  }                                                                          \
  DEF_EXTREMUM(amax, >, >=, -INFINITY, S, E, CT, K)                         \
  DEF_EXTREMUM(amin, <, <=, INFINITY, S, E, CT, K)                           \
  static void em_all_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++) {                                        \
      int64_t *a = (int64_t *)(d[0] + i * st[0]);                            \
      if (ld_d_##S(d[1] + i * st[1]) == 0) *a = 0;                           \
    }                                                                        \
  }                                                                          \
  static void em_any_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++) {                                        \
      int64_t *a = (int64_t *)(d[0] + i * st[0]);                            \
      if (ld_d_##S(d[1] + i * st[1]) != 0) *a = 1;                           \
    }                                                                        \
  }                                                                          \
  /* Welford/Chan: acc = {count, mean, M2}; a run is summarised exactly     \
  ** (two passes over it) and then merged. */                                \
  static void em_var_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    if (st[0] == 0) {                                                        \
      double *a = (double *)d[0];                                            \
      double m = pw_sum_##S(d[1], st[1], n) / (double)n, m2 = 0;             \
      for (int64_t i = 0; i < n; i++) {                                      \
        double x = ld_d_##S(d[1] + i * st[1]) - m;                           \
        m2 += x * x;                                                         \
      }                                                                      \
      double na = a[0], nb = (double)n, tot = na + nb, delta = m - a[1];     \
      a[1] += delta * nb / tot;                                              \
      a[2] += m2 + delta * delta * na * nb / tot;                            \
      a[0] = tot;                                                            \
      return;                                                                \
    }                                                                        \
    for (int64_t i = 0; i < n; i++) {                                        \
      double *a = (double *)(d[0] + i * st[0]);                              \
      double x = ld_d_##S(d[1] + i * st[1]);                                 \
      double tot = a[0] + 1, delta = x - a[1];                               \
      a[1] += delta / tot;                                                   \
      a[2] += delta * (x - a[1]);                                            \
      a[0] = tot;                                                            \
    }                                                                        \
  }                                                                          \
  static void em_norm_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    double p = *(const double *)ctx;                                         \
    for (int64_t i = 0; i < n; i++) {                                        \
      double *a = (double *)(d[0] + i * st[0]);                              \
      double x = fabs(ld_d_##S(d[1] + i * st[1]));                           \
      if (p == 2) *a += x * x;                                               \
      else if (p == 1) *a += x;                                              \
      else if (p == INFINITY) *a = (*a != *a || *a >= x) ? *a : x;           \
      else if (p == -INFINITY) *a = (*a != *a || *a <= x) ? *a : x;          \
      else if (p == 0) *a += (x != 0);                                       \
      else *a += pow(x, p);                                                  \
    }                                                                        \
  }                                                                          \
  static void em_nansum_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++) {                                        \
      double x = ld_d_##S(d[1] + i * st[1]);                                 \
      if (x == x) *(double *)(d[0] + i * st[0]) += x;                        \
    }                                                                        \
  }                                                                          \
  /* acc = {sum, count} of the non-NaN values */                             \
  static void em_nanmean_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++) {                                        \
      double x = ld_d_##S(d[1] + i * st[1]);                                 \
      double *a = (double *)(d[0] + i * st[0]);                              \
      if (x == x) { a[0] += x; a[1] += 1; }                                  \
    }                                                                        \
  }                                                                          \
  static void em_nnz_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++)                                          \
      *(int64_t *)(d[0] + i * st[0]) += ld_d_##S(d[1] + i * st[1]) != 0;     \
  }                                                                          \
  /* data[2] is the per-output shift (the max, 0 where infinite) */          \
  static void em_lse_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++)                                          \
      *(double *)(d[0] + i * st[0]) +=                                        \
          exp(ld_d_##S(d[1] + i * st[1]) - *(const double *)(d[2] + i * st[2])); \
  }
EM_FOR_EACH_DTYPE(DEF_RED_KERNELS)

#define KROW(NAME) \
  {em_##NAME##_b8, em_##NAME##_u8, em_##NAME##_i8, em_##NAME##_i16, em_##NAME##_i32, \
   em_##NAME##_i64, em_##NAME##_f16, em_##NAME##_bf16, em_##NAME##_f32, em_##NAME##_f64}
static const em_loop1d sum_loops[EM_NUM_DTYPES] = KROW(sum);
static const em_loop1d prod_loops[EM_NUM_DTYPES] = KROW(prod);
static const em_loop1d amax_loops[EM_NUM_DTYPES] = KROW(amax);
static const em_loop1d amin_loops[EM_NUM_DTYPES] = KROW(amin);
static const em_loop1d all_loops[EM_NUM_DTYPES] = KROW(all);
static const em_loop1d any_loops[EM_NUM_DTYPES] = KROW(any);
static const em_loop1d var_loops[EM_NUM_DTYPES] = KROW(var);
static const em_loop1d norm_loops[EM_NUM_DTYPES] = KROW(norm);
static const em_loop1d lse_loops[EM_NUM_DTYPES] = KROW(lse);
static const em_loop1d nansum_loops[EM_NUM_DTYPES] = KROW(nansum);
static const em_loop1d nanmean_loops[EM_NUM_DTYPES] = KROW(nanmean);
static const em_loop1d nnz_loops[EM_NUM_DTYPES] = KROW(nnz);

/* -- Shared checks ---------------------------------------------------------- */

static em_status check_cpu(const char *op, const em_tensor *t) {
  if (t->storage->device.type != EM_CPU)
    return em_fail(EM_E_RUNTIME, "%s: expected a CPU tensor, got one on cuda:%d", op,
                   t->storage->device.index);
  return EM_OK;
}

/* PyTorch's message for max/amax/argmax over an empty dim, dims 1-based. */
static em_status check_nonempty(const char *op, const em_tensor *t, const bool *mask,
                                bool all_dims) {
  if (all_dims) {
    if (em_tensor_numel(t) == 0)
      return em_fail(EM_E_INDEX,
                     "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                     "Specify the reduction dim with the 'dim' argument.", op);
    return EM_OK;
  }
  for (int i = 0; i < t->ndim; i++)
    if (mask[i] && t->sizes[i] == 0)
      return em_fail(EM_E_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                     op, i + 1);
  return EM_OK;
}

static const char *torch_name(em_dtype dt) {
  static const char *const names[EM_NUM_DTYPES] = {
      "Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double"};
  return names[dt];
}

static int64_t reduced_count(const em_tensor *t, const bool *mask) {
  /* the count only overflows for an empty tensor (another dim is 0),
  ** whose reduction computes no output element: saturate */
  int64_t c = 1;
  for (int i = 0; i < t->ndim; i++)
    if (mask[i] && em_mul_overflow_i64(c, t->sizes[i], &c)) return INT64_MAX;
  return c;
}

/* -- em_reduce ------------------------------------------------------------- */

static em_status reduce_nograd(em_reduce_op rop, const em_tensor *t, int ndims,
                    const int64_t *dims, int keepdim, int dtype, em_tensor **out) {
  static const char *const names[] = {"sum", "prod", "mean", "amax", "amin", "all",
                                      "any", "nansum", "nanmean", "count_nonzero"};
  if ((unsigned)rop > EM_REDUCE_COUNT_NONZERO)
    return em_fail(EM_E_VALUE, "reduce: unknown reduction %d", (int)rop);
  const char *op = names[rop];
  bool mask[EM_MAX_DIMS];
  em_status st = check_cpu(op, t);
  if (st == EM_OK) st = em_reduce_dims(op, t, ndims, dims, mask);
  if (st != EM_OK) return st;
  if (dtype >= EM_NUM_DTYPES) return em_fail(EM_E_TYPE, "%s: invalid dtype %d", op, dtype);
  em_dtype in = t->dtype;
  em_dtype odt;
  switch (rop) {
    case EM_REDUCE_SUM:
    case EM_REDUCE_PROD:
      odt = dtype >= 0 ? (em_dtype)dtype
                       : (em_dtype_kindof(in) == EM_KIND_FLOAT ? in : EM_INT64);
      break;
    case EM_REDUCE_NANSUM:
      if (em_dtype_kindof(dtype >= 0 ? (em_dtype)dtype : in) != EM_KIND_FLOAT) {
        rop = EM_REDUCE_SUM;  /* integers hold no NaN */
        op = "nansum";
      }
      odt = dtype >= 0 ? (em_dtype)dtype
                       : (em_dtype_kindof(in) == EM_KIND_FLOAT ? in : EM_INT64);
      break;
    case EM_REDUCE_COUNT_NONZERO:
      if (dtype >= 0)
        return em_fail(EM_E_VALUE, "count_nonzero: takes no dtype");
      odt = EM_INT64;
      break;
    case EM_REDUCE_MEAN:
    case EM_REDUCE_NANMEAN:
      if (dtype >= 0 && em_dtype_kindof((em_dtype)dtype) != EM_KIND_FLOAT)
        return em_fail(EM_E_TYPE,
                       "%s(): could not infer output dtype. Optional dtype must be "
                       "either a floating point or complex dtype. Got: %s",
                       op, torch_name((em_dtype)dtype));
      if (dtype < 0 && em_dtype_kindof(in) != EM_KIND_FLOAT)
        return em_fail(EM_E_TYPE,
                       "%s(): could not infer output dtype. Input dtype must be "
                       "either a floating point or complex dtype. Got: %s",
                       op, torch_name(in));
      odt = dtype >= 0 ? (em_dtype)dtype : in;
      break;
    case EM_REDUCE_AMAX:
    case EM_REDUCE_AMIN:
      st = check_nonempty(op, t, mask, ndims <= 0);
      if (st != EM_OK) return st;
      odt = in;
      break;
    default: /* all, any: bool, except uint8 stays uint8 (PyTorch) */
      odt = in == EM_UINT8 ? EM_UINT8 : EM_BOOL;
      break;
  }
  /* A dtype option casts the input first, as PyTorch does. */
  em_tensor *src = NULL;
  if (dtype >= 0 && (em_dtype)dtype != in) {
    st = em_to(t, (em_dtype)dtype, em_cpu(), 0, &src);
    if (st != EM_OK) return st;
    t = src;
    in = t->dtype;
  }
  bool fl = em_dtype_kindof(in) == EM_KIND_FLOAT;
  em_dtype adt = (fl && rop != EM_REDUCE_ALL && rop != EM_REDUCE_ANY &&
                  rop != EM_REDUCE_COUNT_NONZERO) ? EM_FLOAT64 : EM_INT64;
  int width = rop == EM_REDUCE_NANMEAN ? 2 : 1;
  double dinit = 0;
  int64_t iinit = 0;
  em_loop1d loop;
  switch (rop) {
    case EM_REDUCE_SUM: case EM_REDUCE_MEAN: loop = sum_loops[in]; break;
    case EM_REDUCE_PROD: loop = prod_loops[in]; dinit = 1; iinit = 1; break;
    case EM_REDUCE_AMAX: loop = amax_loops[in]; dinit = -INFINITY; iinit = INT64_MIN; break;
    case EM_REDUCE_AMIN: loop = amin_loops[in]; dinit = INFINITY; iinit = INT64_MAX; break;
    case EM_REDUCE_ALL: loop = all_loops[in]; iinit = 1; break;
    case EM_REDUCE_NANSUM: loop = nansum_loops[in]; break;
    case EM_REDUCE_NANMEAN: loop = nanmean_loops[in]; break;
    case EM_REDUCE_COUNT_NONZERO: loop = nnz_loops[in]; break;
    default: loop = any_loops[in]; break;
  }
  bool d = adt == EM_FLOAT64;
  combine_fn combine;
  switch (rop) {
    case EM_REDUCE_PROD: combine = d ? cmb_mul_d : cmb_mul_i; break;
    case EM_REDUCE_AMAX: combine = d ? cmb_max_d : cmb_max_i; break;
    case EM_REDUCE_AMIN: combine = d ? cmb_min_d : cmb_min_i; break;
    case EM_REDUCE_ALL: combine = cmb_and_i; break;
    case EM_REDUCE_ANY: combine = cmb_or_i; break;
    case EM_REDUCE_NANMEAN: combine = cmb_add2_d; break;
    default: combine = d ? cmb_add_d : cmb_add_i; break;  /* sums, count_nonzero */
  }
  em_tensor *acc = NULL;
  st = new_acc(t, mask, adt, width, dinit, iinit, &acc);
  if (st == EM_OK)
    st = run_reduce(op, acc, t, NULL, loop, NULL,
                    rop == EM_REDUCE_SUM || rop == EM_REDUCE_MEAN || rop == EM_REDUCE_NANSUM ||
                    rop == EM_REDUCE_NANMEAN, combine, width);
  if (st == EM_OK && rop == EM_REDUCE_MEAN) {
    double c = (double)reduced_count(t, mask);
    double *a = em_storage_data(acc->storage);
    int64_t n = em_tensor_numel(acc);
    for (int64_t i = 0; i < n; i++) a[i] /= c;
  }
  if (st == EM_OK && rop == EM_REDUCE_NANMEAN) {
    double *a = em_storage_data(acc->storage);
    int64_t n = em_tensor_numel(acc);
    for (int64_t i = 0; i < n; i++) a[2 * i] /= a[2 * i + 1];
  }
  if (st == EM_OK) st = acc_to_out(acc, t, mask, keepdim, odt, out);
  em_tensor_release(acc);
  em_tensor_release(src);
  return st;
}

/* -- var / std ---------------------------------------------------------------- */

static em_status var_impl(const em_tensor *t, int ndims, const int64_t *dims,
                          double correction, int keepdim, int take_sqrt,
                          em_tensor **out, em_tensor **mean) {
  const char *op = mean ? (take_sqrt ? "std_mean" : "var_mean") : (take_sqrt ? "std" : "var");
  bool mask[EM_MAX_DIMS];
  em_status st = check_cpu(op, t);
  if (st == EM_OK) st = em_reduce_dims(op, t, ndims, dims, mask);
  if (st != EM_OK) return st;
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: std and var only support floating point and complex "
                   "dtypes, got %s", op, em_dtype_name(t->dtype));
  em_tensor *acc;
  st = new_acc(t, mask, EM_FLOAT64, 3, 0, 0, &acc);
  if (st != EM_OK) return st;
  st = run_reduce(op, acc, t, NULL, var_loops[t->dtype], NULL, false, cmb_var, 3);
  em_tensor *v = NULL, *m = NULL;
  if (st == EM_OK) {
    double *a = em_storage_data(acc->storage);
    int64_t n = em_tensor_numel(acc);
    double cnt = (double)reduced_count(t, mask);
    /* PyTorch: M2 / max(0, N - correction); N - correction <= 0 gives inf or
    ** nan by IEEE division. The mean of nothing is NaN. */
    double den = cnt - correction > 0 ? cnt - correction : 0;
    for (int64_t i = 0; i < n; i++) {
      double var = a[3 * i + 2] / den;
      a[3 * i] = take_sqrt ? sqrt(var) : var;
      if (cnt == 0) a[3 * i + 1] = NAN;
    }
    st = acc_to_out(acc, t, mask, keepdim, t->dtype, &v);
    if (st == EM_OK && mean) {
      acc->offset = 1;  /* element 1 of each triple: the mean */
      st = acc_to_out(acc, t, mask, keepdim, t->dtype, &m);
    }
  }
  em_tensor_release(acc);
  if (st != EM_OK) {
    em_tensor_release(v);
    return st;
  }
  *out = v;
  if (mean) *mean = m;
  return EM_OK;
}

static em_status var_nograd(const em_tensor *t, int ndims, const int64_t *dims,
                 double correction, int keepdim, int take_sqrt, em_tensor **out) {
  return var_impl(t, ndims, dims, correction, keepdim, take_sqrt, out, NULL);
}

static em_status var_mean_nograd(const em_tensor *t, int ndims, const int64_t *dims,
                      double correction, int keepdim, int take_sqrt,
                      em_tensor **var, em_tensor **mean) {
  return var_impl(t, ndims, dims, correction, keepdim, take_sqrt, var, mean);
}

/* -- norm -------------------------------------------------------------------- */

static em_status norm_nograd(const em_tensor *t, double p, int ndims, const int64_t *dims,
                  int keepdim, int dtype, em_tensor **out) {
  bool mask[EM_MAX_DIMS];
  em_status st = check_cpu("norm", t);
  if (st == EM_OK) st = em_reduce_dims("norm", t, ndims, dims, mask);
  if (st != EM_OK) return st;
  em_dtype odt = dtype >= 0 ? (em_dtype)dtype : t->dtype;
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT || em_dtype_kindof(odt) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "norm(): input dtype should be either floating point or "
                   "complex. Got %s instead.", torch_name(em_dtype_kindof(t->dtype) != EM_KIND_FLOAT ? t->dtype : odt));
  if (p != p) return em_fail(EM_E_VALUE, "norm: p must not be NaN");
  if (p == -INFINITY || p < 0) {
    st = check_nonempty("norm", t, mask, false);
    if (st != EM_OK) return st;
  }
  double init = p == INFINITY ? 0 : p == -INFINITY ? INFINITY : 0;
  em_tensor *acc;
  st = new_acc(t, mask, EM_FLOAT64, 1, init, 0, &acc);
  if (st != EM_OK) return st;
  st = run_reduce("norm", acc, t, NULL, norm_loops[t->dtype], &p, true, cmb_norm, 1);
  if (st == EM_OK) {
    double *a = em_storage_data(acc->storage);
    int64_t n = em_tensor_numel(acc);
    for (int64_t i = 0; i < n; i++) {
      if (p == 2) a[i] = sqrt(a[i]);
      else if (p != 1 && p != 0 && !isinf(p)) a[i] = pow(a[i], 1.0 / p);
    }
    st = acc_to_out(acc, t, mask, keepdim, odt, out);
  }
  em_tensor_release(acc);
  return st;
}

/* -- logsumexp ----------------------------------------------------------------- */

static em_status logsumexp_nograd(const em_tensor *t, int ndims, const int64_t *dims,
                       int keepdim, em_tensor **out) {
  bool mask[EM_MAX_DIMS];
  em_status st = check_cpu("logsumexp", t);
  if (st == EM_OK) st = em_reduce_dims("logsumexp", t, ndims, dims, mask);
  if (st != EM_OK) return st;
  /* integers give the default float (PyTorch 1.13 gives float32) */
  em_dtype odt = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT ? t->dtype : EM_FLOAT32;
  em_tensor *mx = NULL, *acc = NULL;
  bool fl = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT;
  /* the shift: amax as double (int inputs: converted after the int amax) */
  st = new_acc(t, mask, fl ? EM_FLOAT64 : EM_INT64, 1, -INFINITY, INT64_MIN, &mx);
  if (st == EM_OK)
    st = run_reduce("logsumexp", mx, t, NULL, amax_loops[t->dtype], NULL, false,
                    fl ? cmb_max_d : cmb_max_i, 1);
  if (st == EM_OK && !fl) {
    /* reinterpret the int64 maxima as doubles, in place */
    int64_t *m = em_storage_data(mx->storage);
    int64_t n = em_tensor_numel(mx);
    for (int64_t i = 0; i < n; i++) {
      double d = (double)m[i];
      memcpy(&m[i], &d, sizeof d);
    }
    mx->dtype = EM_FLOAT64;
  }
  if (st == EM_OK) {
    double *m = em_storage_data(mx->storage);
    int64_t n = em_tensor_numel(mx);
    for (int64_t i = 0; i < n; i++)
      if (isinf(m[i])) m[i] = 0;  /* as PyTorch: an infinite max shifts by 0 */
    st = new_acc(t, mask, EM_FLOAT64, 1, 0, 0, &acc);
  }
  if (st == EM_OK)
    st = run_reduce("logsumexp", acc, t, mx, lse_loops[t->dtype], NULL, true, cmb_add_d, 1);
  if (st == EM_OK) {
    double *a = em_storage_data(acc->storage);
    const double *m = em_storage_data(mx->storage);
    int64_t n = em_tensor_numel(acc);
    for (int64_t i = 0; i < n; i++) a[i] = log(a[i]) + m[i];
    st = acc_to_out(acc, t, mask, keepdim, odt, out);
  }
  em_tensor_release(mx);
  em_tensor_release(acc);
  return st;
}

/* -- Lanes ------------------------------------------------------------------------
** run_lanes views every operand with `axis` collapsed to size 1 (on the
** stack, no reference) and runs loop over the remaining positions; the
** loop's ctx starts with an em_lane header holding the lane length and each
** operand's lane stride in bytes. Operands must agree on every other dim. */

em_status em_run_lanes(const char *op, int nops, const em_tensor *const *ts, int axis,
                       int64_t len, em_loop1d loop, em_lane *lane, bool parallel,
                       const em_lane_scratch *scratch) {
  em_tensor views[EM_ITER_MAX_OPS];
  const em_tensor *ops[EM_ITER_MAX_OPS];
  const em_tensor *t = ts[nops - 1];
  int nd = t->ndim;
  int64_t shape[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) shape[i] = t->sizes[i];
  if (nd > 0) shape[axis] = 1;
  lane->len = len;
  for (int k = 0; k < nops; k++) {
    stack_view(&views[k], ts[k]);
    if (nd > 0) {
      lane->stride[k] = ts[k]->strides[axis] * (int64_t)em_dtype_size(ts[k]->dtype);
      views[k].sizes[axis] = 1;
    } else {
      lane->stride[k] = 0;
    }
    ops[k] = &views[k];
  }
  em_iter it;
  em_status st = em_iter_build(&it, op, nops, ops, nd, shape, false);
  if (st != EM_OK) return st;
  if (it.numel <= 0) return EM_OK;
  if (!scratch) {
    if (parallel) em_run_blocks(&it, 1, len > 0 ? len : 1, loop, lane);
    else em_iter_run(&it, loop, lane);
    return EM_OK;
  }
  if (scratch->ctx_size > EM_LANE_CTX_MAX)
    return em_fail(EM_E_RUNTIME, "%s: lane context too large", op);
#ifdef _OPENMP
  int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  int64_t work = it.numel * (len > 0 ? len : 1);
  if (parallel && nt > 1 && it.numel > 1 && work >= PAR_GRAIN) {
    int64_t chunks = it.numel < 4 * (int64_t)nt ? it.numel : 4 * (int64_t)nt;
    int failed = 0;
#pragma omp parallel num_threads(nt)
    {
      _Alignas(16) char local[EM_LANE_CTX_MAX];
      memcpy(local, lane, scratch->ctx_size);
      int ok = scratch->init(local) == EM_OK;
      if (!ok) {
#pragma omp atomic write
        failed = 1;
      }
#pragma omp for schedule(static)
      for (int64_t c = 0; c < chunks; c++)
        if (ok) em_iter_run_range(&it, it.numel * c / chunks, it.numel * (c + 1) / chunks,
                                  loop, local);
      if (ok) scratch->fini(local);
    }
    /* a thread without scratch left its lanes undone: say so */
    if (failed) return em_fail(EM_E_NOMEM, "%s: out of memory", op);
    return EM_OK;
  }
#endif
  st = scratch->init(lane);
  if (st != EM_OK) return st;
  em_iter_run(&it, loop, lane);
  scratch->fini(lane);
  return EM_OK;
}

/* max/min along a lane: data[0] values (input dtype), data[1] indices
** (int64, 1-based), data[2] input. NaN wins and the first extreme wins. */
typedef struct { em_lane h; int is_min; } maxctx;

#define DEF_LANE_KERNELS(S, E, CT, K)                                          \
  static void em_maxlane_##S(char **d, const int64_t *st, int64_t n, void *vctx) { \
    const maxctx *c = vctx;                                                  \
    const int64_t len = c->h.len, ls = c->h.stride[2];                       \
    for (int64_t i = 0; i < n; i++) {                                        \
      const char *x = d[2] + i * st[2];                                      \
      int64_t best = 0;                                                      \
      if (K == EM_KIND_FLOAT) {                                              \
        double bv = ld_d_##S(x);                                             \
        for (int64_t j = 1; j < len && bv == bv; j++) {                       \
          double v = ld_d_##S(x + j * ls);                                   \
          if (v != v || (c->is_min ? v < bv : v > bv)) { bv = v; best = j; } \
        }                                                                    \
      } else {                                                               \
        int64_t bv = ld_i_##S(x);                                            \
        for (int64_t j = 1; j < len; j++) {                                  \
          int64_t v = ld_i_##S(x + j * ls);                                  \
          if (c->is_min ? v < bv : v > bv) { bv = v; best = j; }             \
        }                                                                    \
      }                                                                      \
      memcpy(d[0] + i * st[0], x + best * ls, sizeof(CT));         \
      *(int64_t *)(d[1] + i * st[1]) = best + 1;                             \
    }                                                                        \
  }                                                                          \
  /* softmax: data[0] out (dtype od), data[1] input; ctx: smctx */           \
  static void em_softmax_##S(char **d, const int64_t *st, int64_t n, void *vctx) { \
    const em_smctx *c = vctx;                                                \
    const int64_t len = c->h.len, lo = c->h.stride[0], li = c->h.stride[1];  \
    if (E == EM_FLOAT32 && c->f32out && li == 4 && lo == 4) {               \
      softmax_f32_lanes(d, st, n, len, c->log);                              \
      return;                                                                \
    }                                                                        \
    for (int64_t i = 0; i < n; i++) {                                        \
      const char *x = d[1] + i * st[1];                                      \
      char *o = d[0] + i * st[0];                                            \
      double m = -INFINITY;                                                  \
      for (int64_t j = 0; j < len; j++) {                                    \
        double v = ld_d_##S(x + j * li);                                     \
        m = (m != m || m >= v) ? m : v;                                      \
      }                                                                      \
      if (isinf(m)) m = m > 0 ? m : 0;                                       \
      double s = 0;                                                          \
      if (c->reload) {                                                       \
        /* softmax into float32/float64: exp once, kept in the output */     \
        for (int64_t j = 0; j < len; j++) {                                  \
          double e = exp(ld_d_##S(x + j * li) - m);                          \
          s += e;                                                            \
          c->store(o + j * lo, e);                                           \
        }                                                                    \
        double inv = 1.0 / s;                                                \
        for (int64_t j = 0; j < len; j++)                                    \
          c->store(o + j * lo, c->reload(o + j * lo) * inv);                 \
        continue;                                                            \
      }                                                                      \
      for (int64_t j = 0; j < len; j++) s += exp(ld_d_##S(x + j * li) - m);  \
      double ls = log(s);                                                    \
      for (int64_t j = 0; j < len; j++) {                                    \
        double v = ld_d_##S(x + j * li) - m;                                 \
        c->store(o + j * lo, c->log ? v - ls : exp(v) / s);                  \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  /* cumsum/cumprod: in and out share dtype S; ctx: em_cumctx */             \
  static void em_cum_##S(char **d, const int64_t *st, int64_t n, void *vctx) { \
    const em_cumctx *c = vctx;                                               \
    const int64_t len = c->h.len, lo = c->h.stride[0], li = c->h.stride[1];  \
    for (int64_t i = 0; i < n; i++) {                                        \
      const char *x = d[1] + i * st[1];                                      \
      char *o = d[0] + i * st[0];                                            \
      if (K == EM_KIND_FLOAT) {                                              \
        double a = c->prod ? 1 : 0;                                          \
        for (int64_t j = 0; j < len; j++) {                                  \
          double v = ld_d_##S(x + j * li);                                   \
          a = c->prod ? a * v : a + v;                                       \
          st_d_##S(o + j * lo, a);                                           \
        }                                                                    \
      } else {                                                               \
        int64_t a = c->prod ? 1 : 0;                                         \
        for (int64_t j = 0; j < len; j++) {                                  \
          int64_t v = ld_i_##S(x + j * li);                                  \
          a = c->prod ? wrap_mul(a, v) : wrap_add(a, v);                     \
          st_i_##S(o + j * lo, a);                                           \
        }                                                                    \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  /* cummax/cummin: data[0] values, data[1] indices (int64), data[2] input */ \
  static void em_cumext_##S(char **d, const int64_t *st, int64_t n, void *vctx) { \
    const maxctx *c = vctx;                                                  \
    const int64_t len = c->h.len, lv = c->h.stride[0], lx = c->h.stride[1],  \
                  li = c->h.stride[2];                                       \
    for (int64_t i = 0; i < n; i++) {                                        \
      const char *x = d[2] + i * st[2];                                      \
      char *v = d[0] + i * st[0], *ix = d[1] + i * st[1];                    \
      int64_t best = 0;                                                      \
      for (int64_t j = 0; j < len; j++) {                                    \
        if (j > 0) {                                                         \
          bool take;                                                         \
          if (K == EM_KIND_FLOAT) {                                          \
            double a = ld_d_##S(x + j * li), b = ld_d_##S(x + best * li);    \
            /* PyTorch: every NaN takes over; nothing replaces a NaN */     \
            take = a != a || (b == b && (c->is_min ? a <= b : a >= b));      \
          } else {                                                           \
            int64_t a = ld_i_##S(x + j * li), b = ld_i_##S(x + best * li);   \
            take = c->is_min ? a <= b : a >= b;                              \
          }                                                                  \
          if (take) best = j;                                                \
        }                                                                    \
        memcpy(v + j * lv, x + best * li, sizeof(CT));                       \
        *(int64_t *)(ix + j * lx) = best + 1;                                \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  static void em_store_d_##S(char *p, double v) { st_d_##S(p, v); }
EM_FOR_EACH_DTYPE(DEF_LANE_KERNELS)

static const em_loop1d maxlane_loops[EM_NUM_DTYPES] = KROW(maxlane);
static const em_loop1d softmax_loops[EM_NUM_DTYPES] = KROW(softmax);
static const em_loop1d cum_loops[EM_NUM_DTYPES] = KROW(cum);
static const em_loop1d cumext_loops[EM_NUM_DTYPES] = KROW(cumext);
static void (*const store_d[EM_NUM_DTYPES])(char *, double) = KROW(store_d);

em_load_d_fn em_load_d(em_dtype dt) {
#define LDROW(S, E, CT, K) [E] = ld_d_##S,
  static const em_load_d_fn f[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(LDROW)};
  return f[dt];
}
em_load_i_fn em_load_i(em_dtype dt) {
#define LIROW(S, E, CT, K) [E] = ld_i_##S,
  static const em_load_i_fn f[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(LIROW)};
  return f[dt];
}
em_store_d_fn em_store_d(em_dtype dt) { return store_d[dt]; }

/* Sizes of t with the axis set to 1 (keepdim) or removed. */
static int lane_out_shape(const em_tensor *t, int axis, bool keepdim, int64_t *sizes) {
  bool mask[EM_MAX_DIMS] = {false};
  if (t->ndim > 0) mask[axis] = true;
  return out_shape(t, mask, keepdim, sizes);
}

/* Drops the size-1 axis of a keepdim result (a view of the same storage). */
static em_status squeeze_axis(em_tensor **t, int axis) {
  em_tensor *x = *t;
  if (x->ndim == 0) return EM_OK;
  int64_t sz[EM_MAX_DIMS], str[EM_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < x->ndim; i++)
    if (i != axis) { sz[n] = x->sizes[i]; str[n] = x->strides[i]; n++; }
  em_tensor *v;
  em_status st = em_as_strided(x, n, sz, str, x->offset, &v);
  if (st != EM_OK) return st;
  em_tensor_release(x);
  *t = v;
  return EM_OK;
}

static em_status max_dim_nograd(const em_tensor *t, int64_t dim, int keepdim, int is_min,
                     em_tensor **values, em_tensor **indices) {
  const char *op = is_min ? "min" : "max";
  if (!values) op = is_min ? "argmin" : "argmax";
  int axis;
  em_status st = check_cpu(op, t);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  bool mask[EM_MAX_DIMS] = {false};
  mask[axis] = t->ndim > 0;
  st = check_nonempty(op, t, mask, false);
  if (st != EM_OK) return st;
  int64_t sizes[EM_MAX_DIMS];
  int n = lane_out_shape(t, axis, true, sizes);
  em_tensor *v = NULL, *ix = NULL;
  if (values) st = em_empty(n, sizes, t->dtype, em_cpu(), &v);
  if (st == EM_OK) st = em_empty(n, sizes, EM_INT64, em_cpu(), &ix);
  /* argmax/argmin alone still need somewhere to put the values: a scratch */
  em_tensor *vals = v;
  if (st == EM_OK && !vals) st = em_empty(n, sizes, t->dtype, em_cpu(), &vals);
  if (st == EM_OK) {
    maxctx c;
    c.is_min = is_min;
    const em_tensor *ops[3] = {vals, ix, t};
    st = em_run_lanes(op, 3, ops, axis, t->ndim > 0 ? t->sizes[axis] : 1,
                      maxlane_loops[t->dtype], &c.h, true, NULL);
  }
  if (!v) em_tensor_release(vals);
  if (st == EM_OK && !keepdim) {
    if (v) st = squeeze_axis(&v, axis);
    if (st == EM_OK) st = squeeze_axis(&ix, axis);
  }
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  if (values) *values = v;
  *indices = ix;
  return EM_OK;
}

em_status em_argmax(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int is_min, em_tensor **out) {
  if (has_dim) return em_max_dim(t, dim, keepdim, is_min, NULL, out);
  const char *op = is_min ? "argmin" : "argmax";
  em_status st = check_cpu(op, t);
  if (st == EM_OK) st = check_nonempty(op, t, NULL, true);
  if (st != EM_OK) return st;
  /* over the flattened tensor: a contiguous 1-d view */
  em_tensor *c;
  st = em_contiguous(t, &c);
  if (st != EM_OK) return st;
  em_tensor flat;
  stack_view(&flat, c);
  flat.ndim = 1;
  flat.sizes[0] = em_tensor_numel(c);
  flat.strides[0] = 1;
  em_tensor *ix = NULL;
  st = em_max_dim(&flat, 1, 0, is_min, NULL, &ix);
  em_tensor_release(c);
  if (st != EM_OK) return st;
  if (keepdim && t->ndim > 0) {
    int64_t ones[EM_MAX_DIMS], zs[EM_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) { ones[i] = 1; zs[i] = 0; }
    em_tensor *v;
    st = em_as_strided(ix, t->ndim, ones, zs, ix->offset, &v);
    em_tensor_release(ix);
    if (st != EM_OK) return st;
    ix = v;
  }
  *out = ix;
  return EM_OK;
}

static em_status softmax_nograd(const em_tensor *t, int64_t dim, int log, int dtype,
                     em_tensor **out) {
  const char *op = log ? "log_softmax" : "softmax";
  int axis;
  em_status st = check_cpu(op, t);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_dtype odt = dtype >= 0 ? (em_dtype)dtype : t->dtype;
  if (em_dtype_kindof(odt) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: \"%s_lastdim_kernel_impl\" not implemented for '%s' "
                   "(pass a floating dtype, e.g. {dtype = ember.float32})",
                   op, op, torch_name(odt));
  em_tensor *o;
  st = em_empty(t->ndim, t->sizes, odt, em_cpu(), &o);
  if (st != EM_OK) return st;
  em_smctx c;
  c.log = log;
  c.store = store_d[odt];
  c.reload = !log && (odt == EM_FLOAT32 || odt == EM_FLOAT64) ? em_load_d(odt) : NULL;
  c.f32out = odt == EM_FLOAT32;
  const em_tensor *ops[2] = {o, t};
  st = em_run_lanes(op, 2, ops, axis, t->ndim > 0 ? t->sizes[axis] : 1,
                    softmax_loops[t->dtype], &c.h, true, NULL);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

static em_status cumulative_nograd(const em_tensor *t, int64_t dim, int prod, int dtype,
                        em_tensor **out) {
  const char *op = prod ? "cumprod" : "cumsum";
  int axis;
  em_status st = check_cpu(op, t);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_dtype odt = dtype >= 0 ? (em_dtype)dtype
                            : (em_dtype_kindof(t->dtype) == EM_KIND_FLOAT ? t->dtype : EM_INT64);
  em_tensor *src;
  st = em_to(t, odt, em_cpu(), 0, &src);
  if (st != EM_OK) return st;
  em_tensor *o;
  st = em_empty(t->ndim, t->sizes, odt, em_cpu(), &o);
  if (st == EM_OK) {
    em_cumctx c;
    c.prod = prod;
    const em_tensor *ops[2] = {o, src};
    st = em_run_lanes(op, 2, ops, axis, t->ndim > 0 ? t->sizes[axis] : 1,
                      cum_loops[odt], &c.h, true, NULL);
    if (st != EM_OK) em_tensor_release(o);
  }
  em_tensor_release(src);
  if (st != EM_OK) return st;
  *out = o;
  return EM_OK;
}

static em_status cumextreme_nograd(const em_tensor *t, int64_t dim, int is_min,
                        em_tensor **values, em_tensor **indices) {
  const char *op = is_min ? "cummin" : "cummax";
  int axis;
  em_status st = check_cpu(op, t);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_tensor *v = NULL, *ix = NULL;
  st = em_empty(t->ndim, t->sizes, t->dtype, em_cpu(), &v);
  if (st == EM_OK) st = em_empty(t->ndim, t->sizes, EM_INT64, em_cpu(), &ix);
  if (st == EM_OK) {
    maxctx c;
    c.is_min = is_min;
    const em_tensor *ops[3] = {v, ix, t};
    st = em_run_lanes(op, 3, ops, axis, t->ndim > 0 ? t->sizes[axis] : 1,
                      cumext_loops[t->dtype], &c.h, true, NULL);
  }
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  *values = v;
  *indices = ix;
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** Each entry point runs its kernel with grad mode paused and records the node
** (formulas in autograd/formulas.c). */

static em_ag_params reduce_params(int op, int ndims, const int64_t *dims, int keepdim) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.nlist = ndims > 0 && dims ? ndims : 0;
  for (int i = 0; i < p.nlist && i < EM_MAX_DIMS; i++) p.list[i] = dims[i];
  p.i[0] = keepdim;
  return p;
}

em_status em_reduce(em_reduce_op rop, const em_tensor *t, int ndims,
                    const int64_t *dims, int keepdim, int dtype, em_tensor **out) {
  static const char *const names[] = {"SumBackward1", "ProdBackward1", "MeanBackward1",
                                      "AmaxBackward0", "AminBackward0", NULL, NULL,
                                      "NansumBackward0", "NanmeanBackward0", NULL};
  em_ag_params p = reduce_params(rop, ndims, dims, keepdim);
  static const char *const all_names[] = {"SumBackward0", "ProdBackward0", "MeanBackward0"};
  if ((unsigned)rop <= EM_REDUCE_COUNT_NONZERO) p.name = names[rop];
  if (rop <= EM_REDUCE_MEAN && p.nlist == 0 && !keepdim) p.name = all_names[rop];
  if (rop == EM_REDUCE_PROD || rop == EM_REDUCE_NANSUM || rop == EM_REDUCE_NANMEAN)
    p.save_in = 1;
  if (rop == EM_REDUCE_AMAX || rop == EM_REDUCE_AMIN) p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_REDUCE, 1, in, out, &p,
             reduce_nograd(rop, t, ndims, dims, keepdim, dtype, out));
}

em_status em_var(const em_tensor *t, int ndims, const int64_t *dims,
                 double correction, int keepdim, int take_sqrt, em_tensor **out) {
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.name = take_sqrt ? "StdBackward0" : "VarBackward0";
  p.d[0] = correction;
  p.i[1] = take_sqrt;
  p.save_in = 1;
  p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_VAR, 1, in, out, &p,
             var_nograd(t, ndims, dims, correction, keepdim, take_sqrt, out));
}

em_status em_var_mean(const em_tensor *t, int ndims, const int64_t *dims,
                      double correction, int keepdim, int take_sqrt,
                      em_tensor **var, em_tensor **mean) {
  int on = em_ag_pause();
  em_status st = var_mean_nograd(t, ndims, dims, correction, keepdim, take_sqrt, var, mean);
  em_ag_resume(on);
  if (st != EM_OK || !on || !t->requires_grad) return st;
  const em_tensor *in[1] = {t};
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.name = take_sqrt ? "StdMeanBackward0" : "VarMeanBackward0";
  p.d[0] = correction;
  p.i[1] = take_sqrt;
  p.save_in = p.save_out = 1;
  st = em_ag_record(EM_AG_VAR, 1, in, 1, var, &p);
  if (st == EM_OK && mean) {
    em_ag_params q = reduce_params(EM_REDUCE_MEAN, ndims, dims, keepdim);
    q.name = p.name;
    st = em_ag_record(EM_AG_REDUCE, 1, in, 1, mean, &q);
  }
  if (st != EM_OK) {
    em_tensor_release(*var);
    *var = NULL;
    if (mean) {
      em_tensor_release(*mean);
      *mean = NULL;
    }
  }
  return st;
}

em_status em_norm(const em_tensor *t, double p_, int ndims, const int64_t *dims,
                  int keepdim, int dtype, em_tensor **out) {
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.name = "NormBackward1";
  p.d[0] = p_;
  p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_NORM, 1, in, out, &p, norm_nograd(t, p_, ndims, dims, keepdim, dtype, out));
}

em_status em_logsumexp(const em_tensor *t, int ndims, const int64_t *dims,
                       int keepdim, em_tensor **out) {
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_LOGSUMEXP, 1, in, out, &p,
             logsumexp_nograd(t, ndims, dims, keepdim, out));
}

em_status em_max_dim(const em_tensor *t, int64_t dim, int keepdim, int is_min,
                     em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = max_dim_nograd(t, dim, keepdim, is_min, values, indices);
  em_ag_resume(on);
  if (st == EM_OK && on && values && t->requires_grad) {
    st = em_ag_record_indexed(is_min ? "MinBackward0" : "MaxBackward0", t, dim, keepdim,
                              *indices, *values);
    if (st != EM_OK) {
      em_tensor_release(*values);
      em_tensor_release(*indices);
      *values = *indices = NULL;
    }
  }
  return st;
}

em_status em_cumextreme(const em_tensor *t, int64_t dim, int is_min,
                        em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = cumextreme_nograd(t, dim, is_min, values, indices);
  em_ag_resume(on);
  if (st == EM_OK && on && t->requires_grad) {
    st = em_ag_record_indexed(is_min ? "CumminBackward0" : "CummaxBackward0", t, dim, 1,
                              *indices, *values);
    if (st != EM_OK) {
      em_tensor_release(*values);
      em_tensor_release(*indices);
      *values = *indices = NULL;
    }
  }
  return st;
}

em_status em_softmax(const em_tensor *t, int64_t dim, int log, int dtype,
                     em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = log ? "LogSoftmaxBackward0" : "SoftmaxBackward0";
  p.i[0] = dim;
  p.i[1] = log;
  p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_SOFTMAX, 1, in, out, &p, softmax_nograd(t, dim, log, dtype, out));
}

em_status em_cumulative(const em_tensor *t, int64_t dim, int prod, int dtype,
                        em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = prod ? "CumprodBackward0" : "CumsumBackward0";
  p.i[0] = dim;
  p.i[1] = prod;
  if (prod) p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_CUMULATIVE, 1, in, out, &p, cumulative_nograd(t, dim, prod, dtype, out));
}
