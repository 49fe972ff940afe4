/*
** cpu/reduce.c -- the reduce family of the CPU's kernels
** (core/kern_reduce.h): the reductions over dims (sum, prod, mean, amax,
** amin, all, any, nansum, nanmean, count_nonzero, var/std, norm,
** logsumexp), and the family's table (its lane ops are in cpu/lanes.c,
** its comparisons in cpu/compare.c).
**
** What holds:
** - Every reduction goes through the iterator: the accumulator (the op's
**   keepdim tensor, stride 0 on the reduced dims) is operand 0, the input
**   operand 1. The reduced dims go innermost unless the input's densest dim
**   is kept (then the iteration follows the input's layout; see run_reduce).
** - float32 input: unit-stride runs and row stacks (outputs innermost)
**   go to the float-lane kernels of cpu/vreduce.c (cascade sums in float
**   lanes, float extremes, double products and moments), whose results
**   land in the double accumulator. Other floating inputs accumulate in
**   double; each inner-loop run is summed pairwise (blocks of 8 partial
**   sums, halving above 128 elements), so the rounding error grows like
**   log n, not n. Integer and bool inputs accumulate in int64 with
**   wrap-around (PyTorch gives int64 sums).
** - Results do not depend on the number of threads: work is split by whole
**   outputs, or (one output) into chunks of a fixed size whose partials
**   combine in a fixed tree, by the combine the reduction's kind maps to.
*/
#include "core/kern_reduce.h"
#include "cpu/lanes.h"
#include "cpu/omp_if.h"
#include "cpu/reduce.h"
#include "cpu/vecmath.h"
#include "cpu/vreduce.h"

#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* -- Combining partial accumulators --------------------------------------------
** Two partial accumulators of one output: a <- a op p (ctx: the norm's p). */
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
  (void)c; *(int64_t *)a = em_wrap_add(*(int64_t *)a, *(const int64_t *)p);
}
static void cmb_mul_i(char *a, const char *p, const void *c) {
  (void)c; *(int64_t *)a = em_wrap_mul(*(int64_t *)a, *(const int64_t *)p);
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

/* Outputs innermost, float32 input (run_reduce): when the iteration is
** rows of contiguous inputs (dim 0: unit input stride, accumulators of
** width doubles side by side) stacked along a reduced dim 1, each row
** stack goes to the float-lane row kernel (cpu/vreduce.c) as a whole,
** its columns split into strips between threads (each column is computed
** the same way whatever the split). The dims above 1 are walked here.
** false: not that shape (nothing done). */
static bool run_rows(const em_iter *it, int kind, int width) {
  if (it->ndim < 2 || it->strides[0][1] != 4 || it->strides[0][0] != 8 * width ||
      it->strides[1][0] != 0 || it->strides[1][1] % 4 != 0)
    return false;
  int64_t ncols = it->shape[0], nrows = it->shape[1], rs = it->strides[1][1] / 4;
  int64_t outer = it->numel / (ncols * nrows);
  int nt = 1;
#ifdef _OPENMP
  if (!omp_in_parallel() && it->numel >= 2 * RED_CHUNK) nt = omp_get_max_threads();
#endif
  /* columns in nt strips of a multiple of 16 (when there are that many) */
  int64_t strip = (ncols + nt - 1) / nt;
  strip = strip < 16 ? 16 : (strip + 15) / 16 * 16;
  int64_t nstrips = (ncols + strip - 1) / strip;
  int64_t ntasks = outer * nstrips;
  EM_OMP_IF(nt > 1, parallel for schedule(static) num_threads(nt),
  for (int64_t task = 0; task < ntasks; task++) {
    /* outer position o (dims 2.. as an odometer), strip c */
    int64_t o = task / nstrips, c = task % nstrips;
    char *a = it->data[0];
    const char *in = it->data[1];
    for (int d = 2; d < it->ndim; d++) {
      int64_t i = o % it->shape[d];
      o /= it->shape[d];
      a += i * it->strides[d][0];
      in += i * it->strides[d][1];
    }
    int64_t c0 = c * strip, nc = ncols - c0 < strip ? ncols - c0 : strip;
    em_vred_rows_f32((em_vred_kind)kind, (double *)a + c0 * width, (const float *)in + c0,
                     rs, nrows, nc);
  });
  return true;
}

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
                            bool sums, combine_fn combine, int width, int rows) {
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
    if (rows >= 0 && !extra && t->dtype == EM_FLOAT32 && run_rows(&it, rows, width))
      return EM_OK;
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
  int nt = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) nt = omp_get_max_threads();
#endif
  EM_OMP_IF(nt > 1, parallel for schedule(static) num_threads(nt),
  for (int64_t c = 0; c < nchunks; c++) {
    em_iter mine = it;
    mine.data[0] = parts + c * psize;
    int64_t end = (c + 1) * RED_CHUNK < it.numel ? (c + 1) * RED_CHUNK : it.numel;
    em_iter_run_range(&mine, c * RED_CHUNK, end, loop, ctx);
  });
  (void)nt;
  for (int64_t step = 1; step < nchunks; step *= 2)
    for (int64_t c = 0; c + step < nchunks; c += 2 * step)
      combine(parts + c * psize, parts + (c + step) * psize, ctx);
  /* the accumulator still holds the op's identity: fold the total in */
  combine(it.data[0], parts, ctx);
  free(parts);
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
    if (st[0] == 0 && E == EM_FLOAT32 && st[1] == 4) {                       \
      /* float lanes (cpu/vreduce.c) */                                      \
      double x = em_vred_ext_f32(START < 0 ? EM_VRED_MAX : EM_VRED_MIN,      \
                                 (const float *)d[1], n);                    \
      double a = *(double *)d[0];                                            \
      *(double *)d[0] = (a != a || a KEEP x) ? a : x;                        \
      return;                                                                \
    }                                                                        \
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

/* -- Reduction kernels ----------------------------------------------------
** data[0] is the accumulator (double or int64), data[1] the input. When
** st[0] == 0 the n inputs all fold into one accumulator; otherwise each
** input meets its own accumulator. */

/* The float-lane kind of a p-norm's elementwise step (EM_VRED_SUM: none) */
static em_vred_kind norm_vkind(double p) {
  if (p == 2) return EM_VRED_SUMSQ;
  if (p == 1) return EM_VRED_ASUM;
  if (p == INFINITY) return EM_VRED_MAXABS;
  if (p == -INFINITY) return EM_VRED_MINABS;
  return EM_VRED_SUM;
}

#define DEF_RED_KERNELS(S, E, CT, K)                                           \
  static void em_sum_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    if (K == EM_KIND_FLOAT) {                                                \
      if (st[0] == 0 && E == EM_FLOAT32 && st[1] == 4) {                     \
        *(double *)d[0] += em_vred_sum_f32(EM_VRED_SUM, (const float *)d[1], n); \
        return;                                                              \
      }                                                                      \
      if (st[0] == 0) { *(double *)d[0] += pw_sum_##S(d[1], st[1], n); return; } \
      for (int64_t i = 0; i < n; i++)                                        \
        *(double *)(d[0] + i * st[0]) += ld_d_##S(d[1] + i * st[1]);         \
    } else {                                                                 \
      int64_t *a = (int64_t *)d[0];                                          \
      if (st[0] == 0) {                                                      \
        int64_t s = *a;                                                      \
        for (int64_t i = 0; i < n; i++) s = em_wrap_add(s, ld_i_##S(d[1] + i * st[1])); \
        *a = s;                                                              \
        return;                                                              \
      }                                                                      \
      for (int64_t i = 0; i < n; i++) {                                      \
        int64_t *ai = (int64_t *)(d[0] + i * st[0]);                         \
        *ai = em_wrap_add(*ai, ld_i_##S(d[1] + i * st[1]));                     \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  static void em_prod_##S(char **d, const int64_t *st, int64_t n, void *ctx) { \
    (void)ctx;                                                               \
    if (st[0] == 0 && E == EM_FLOAT32 && st[1] == 4) {                       \
      *(double *)d[0] *= em_vred_sum_f32(EM_VRED_PROD, (const float *)d[1], n); \
      return;                                                                \
    }                                                                        \
    for (int64_t i = 0; i < n; i++) {                                        \
      char *a = d[0] + i * st[0];                                            \
      if (K == EM_KIND_FLOAT) *(double *)a *= ld_d_##S(d[1] + i * st[1]);     \
      else *(int64_t *)a = em_wrap_mul(*(int64_t *)a, ld_i_##S(d[1] + i * st[1])); \
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
      double m, m2 = 0;                                                      \
      if (E == EM_FLOAT32 && st[1] == 4) {                                   \
        em_vred_moments_f32((const float *)d[1], n, &m, &m2);                \
      } else {                                                               \
        m = pw_sum_##S(d[1], st[1], n) / (double)n;                          \
        for (int64_t i = 0; i < n; i++) {                                    \
          double x = ld_d_##S(d[1] + i * st[1]) - m;                         \
          m2 += x * x;                                                       \
        }                                                                    \
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
    if (st[0] == 0 && E == EM_FLOAT32 && st[1] == 4 && p != 0) {             \
      em_vred_kind vk = norm_vkind(p);                                       \
      double *a = (double *)d[0];                                            \
      if (vk == EM_VRED_SUMSQ || vk == EM_VRED_ASUM) {                       \
        *a += em_vred_sum_f32(vk, (const float *)d[1], n);                   \
        return;                                                              \
      }                                                                      \
      if (vk != EM_VRED_SUM) {                                               \
        double x = em_vred_ext_f32(vk, (const float *)d[1], n);              \
        if (vk == EM_VRED_MAXABS) *a = (*a != *a || *a >= x) ? *a : x;       \
        else *a = (*a != *a || *a <= x) ? *a : x;                            \
        return;                                                              \
      }                                                                      \
    }                                                                        \
    if (st[0] == 0 && p != 1 && p != 2 && p != 0 && !isinf(p)) {             \
      double *a = (double *)d[0], s = 0;                                     \
      for (int64_t i = 0; i < n; i++) s += pow(fabs(ld_d_##S(d[1] + i * st[1])), p); \
      *a += s;                                                               \
      return;                                                                \
    }                                                                        \
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

/* -- Entries ----------------------------------------------------------------- */

/* The n elements of the accumulator (width of them per output) = the
** identity, as double or int64 by the accumulator's dtype. */
static void acc_init(void *acc, em_dtype dt, int64_t n, double dinit, int64_t iinit) {
  if (dt == EM_FLOAT64) {
    double *d = acc;
    for (int64_t i = 0; i < n; i++) d[i] = dinit;
  } else {
    int64_t *d = acc;
    for (int64_t i = 0; i < n; i++) d[i] = iinit;
  }
}

/* The number of outputs of an accumulator (the product of its sizes). */
static inline int64_t acc_outputs(const em_tensor *acc) {
  int64_t n = 1;
  for (int i = 0; i < acc->ndim; i++) n *= acc->sizes[i];
  return n;
}

static em_status cpu_reduce(const char *op, em_red_kind k, em_tensor *acc,
                            const em_tensor *t, const em_red_params *p) {
  em_dtype in = t->dtype;
  bool d = acc->dtype == EM_FLOAT64;
  int width = em_red_acc_width(k);
  double dinit = 0, q = p->p;
  int64_t iinit = 0;
  em_loop1d loop;
  combine_fn combine;
  bool sums = false;  /* sums keep the pairwise order (run_reduce) */
  int rows = -1;      /* the row-stack kernel of float32 input (run_rows) */
  switch (k) {
    case EM_RED_PROD:
      rows = EM_VRED_PROD;
      loop = prod_loops[in];
      dinit = 1;
      iinit = 1;
      combine = d ? cmb_mul_d : cmb_mul_i;
      break;
    case EM_RED_AMAX:
      rows = EM_VRED_MAX;
      loop = amax_loops[in];
      dinit = -INFINITY;
      iinit = INT64_MIN;
      combine = d ? cmb_max_d : cmb_max_i;
      break;
    case EM_RED_AMIN:
      rows = EM_VRED_MIN;
      loop = amin_loops[in];
      dinit = INFINITY;
      iinit = INT64_MAX;
      combine = d ? cmb_min_d : cmb_min_i;
      break;
    case EM_RED_ALL: loop = all_loops[in]; iinit = 1; combine = cmb_and_i; break;
    case EM_RED_ANY: loop = any_loops[in]; combine = cmb_or_i; break;
    case EM_RED_NANSUM: loop = nansum_loops[in]; combine = cmb_add_d; sums = true; break;
    case EM_RED_NANMEAN: loop = nanmean_loops[in]; combine = cmb_add2_d; sums = true; break;
    case EM_RED_COUNT_NONZERO: loop = nnz_loops[in]; combine = cmb_add_i; break;
    case EM_RED_VAR: rows = EM_VRED_VAR; loop = var_loops[in]; combine = cmb_var; break;
    case EM_RED_NORM:
      rows = norm_vkind(q) == EM_VRED_SUM ? -1 : (int)norm_vkind(q);
      loop = norm_loops[in];
      dinit = q == -INFINITY ? INFINITY : 0;
      combine = cmb_norm;
      sums = true;
      break;
    default: /* sum, mean */
      rows = EM_VRED_SUM;
      loop = sum_loops[in];
      combine = d ? cmb_add_d : cmb_add_i;
      sums = true;
      break;
  }
  int64_t n = acc_outputs(acc);
  double *a = em_tensor_data(acc);  /* the finishes below are of float64 ones */
  acc_init(a, acc->dtype, n * width, dinit, iinit);
  em_status st = run_reduce(op, acc, t, NULL, loop, k == EM_RED_NORM ? &q : NULL, sums,
                            combine, width, rows);
  if (st != EM_OK) return st;
  /* the finish: element 0 of each output becomes the result */
  if (k == EM_RED_MEAN) {
    double c = (double)p->count;
    for (int64_t i = 0; i < n; i++) a[i] /= c;
  } else if (k == EM_RED_NANMEAN) {
    for (int64_t i = 0; i < n; i++) a[2 * i] /= a[2 * i + 1];
  } else if (k == EM_RED_VAR) {
    /* {count, mean, M2} -> {var or std, mean, M2}. PyTorch: M2 / max(0, N -
    ** correction); N - correction <= 0 gives inf or nan by IEEE division.
    ** The mean of nothing is NaN. */
    double cnt = (double)p->count;
    double den = cnt - p->correction > 0 ? cnt - p->correction : 0;
    for (int64_t i = 0; i < n; i++) {
      double var = a[3 * i + 2] / den;
      a[3 * i] = p->take_sqrt ? sqrt(var) : var;
      if (cnt == 0) a[3 * i + 1] = NAN;
    }
  } else if (k == EM_RED_NORM) {
    for (int64_t i = 0; i < n; i++) {
      if (q == 2) a[i] = sqrt(a[i]);
      else if (q != 1 && q != 0 && !isinf(q)) a[i] = pow(a[i], 1.0 / q);
    }
  }
  return EM_OK;
}

static em_status cpu_logsumexp(const char *op, em_tensor *acc, em_tensor *shift,
                               const em_tensor *t) {
  bool fl = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT;
  /* the shift: amax as double; of an integer input, the int64 amax
  ** (through a view of shift's storage as int64), converted in place */
  em_tensor mx;
  memcpy(&mx, shift, sizeof mx);  /* on the stack, no reference */
  mx.dtype = fl ? EM_FLOAT64 : EM_INT64;
  int64_t n = acc_outputs(shift);
  double *m = em_tensor_data(shift), *a = em_tensor_data(acc);
  acc_init(m, mx.dtype, n, -INFINITY, INT64_MIN);
  em_status st = run_reduce(op, &mx, t, NULL, amax_loops[t->dtype], NULL, false,
                            fl ? cmb_max_d : cmb_max_i, 1, fl ? EM_VRED_MAX : -1);
  if (st != EM_OK) return st;
  if (!fl) {
    for (int64_t i = 0; i < n; i++) {
      int64_t v;
      memcpy(&v, &m[i], sizeof v);
      m[i] = (double)v;
    }
  }
  for (int64_t i = 0; i < n; i++)
    if (isinf(m[i])) m[i] = 0;  /* as PyTorch: an infinite max shifts by 0 */
  acc_init(a, EM_FLOAT64, n, 0, 0);
  st = run_reduce(op, acc, t, shift, lse_loops[t->dtype], NULL, true, cmb_add_d, 1, -1);
  if (st != EM_OK) return st;
  for (int64_t i = 0; i < n; i++) a[i] = log(a[i]) + m[i];
  return EM_OK;
}

const em_reduce_kernels em_cpu_reduce_kernels = {
    .reduce = cpu_reduce,
    .logsumexp = cpu_logsumexp,
    .max_dim = em_cpu_max_dim,
    .cumextreme = em_cpu_cumextreme,
    .softmax = em_cpu_softmax,
    .cumulative = em_cpu_cumulative,
    .equal = em_cpu_equal,
    .isclose = em_cpu_isclose,
    .all_true = em_cpu_all_true,
};
