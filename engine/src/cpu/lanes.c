/*
** cpu/lanes.c -- the lane runner (cpu/lanes.h) and the lane ops of the
** reduce family (core/kern_reduce.h): max/min along a dim, softmax,
** log_softmax, cumsum, cumprod, cummax, cummin.
**
** What holds:
** - A lane op sees a whole dim at once: every operand is viewed with that
**   dim collapsed to size 1, the iterator runs over the remaining
**   positions and the kernel walks each lane with the lane stride kept in
**   its context.
** - Lanes are split between threads by whole lanes, so results do not
**   depend on the number of threads.
** - softmax/log_softmax of float32 into float32 along a contiguous dim
**   compute x - max and its exp in float (as PyTorch; cpu/vecmath.c), the
**   sum and the final scale in double; other cases compute in double.
*/
#include "core/kern_reduce.h"
#include "cpu/lanes.h"
#include "cpu/reduce.h"
#include "cpu/vecmath.h"

#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* -- Runners ------------------------------------------------------------------ */

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

/* run_lanes views every operand with `axis` collapsed to size 1 (on the
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
    memcpy(&views[k], ts[k], sizeof views[k]);  /* on the stack, no reference */
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

/* -- Lane kernels --------------------------------------------------------------- */

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

/* max/min along a lane: data[0] values (input dtype), data[1] indices
** (int64, 1-based), data[2] input. NaN wins and the first extreme wins.
** cummax/cummin take the same context. */
typedef struct { em_lane h; int is_min; } maxctx;

/* softmax: the output's store, and the reread of a stored exp (softmax
** into float32/float64: exp once, kept in the output) */
typedef struct smctx {
  em_lane h;
  int log;
  void (*store)(char *, double);
  double (*reload)(const char *);
  int f32out;                      /* the output is float32 */
} smctx;

typedef struct cumctx {
  em_lane h;
  int prod;
} cumctx;

#define KROW(NAME) \
  {em_##NAME##_b8, em_##NAME##_u8, em_##NAME##_i8, em_##NAME##_i16, em_##NAME##_i32, \
   em_##NAME##_i64, em_##NAME##_f16, em_##NAME##_bf16, em_##NAME##_f32, em_##NAME##_f64}

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
    const smctx *c = vctx;                                                \
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
  /* cumsum/cumprod: in and out share dtype S; ctx: cumctx */             \
  static void em_cum_##S(char **d, const int64_t *st, int64_t n, void *vctx) { \
    const cumctx *c = vctx;                                               \
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
          a = c->prod ? em_wrap_mul(a, v) : em_wrap_add(a, v);                     \
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

/* -- Entries ----------------------------------------------------------------------- */

em_status em_cpu_max_dim(const char *op, em_tensor *values, em_tensor *indices,
                         const em_tensor *t, int axis, int is_min) {
  maxctx c;
  c.is_min = is_min;
  const em_tensor *ops[3] = {values, indices, t};
  return em_run_lanes(op, 3, ops, axis, em_lane_len(t, axis), maxlane_loops[t->dtype], &c.h,
                      true, NULL);
}

em_status em_cpu_cumextreme(const char *op, em_tensor *values, em_tensor *indices,
                            const em_tensor *t, int axis, int is_min) {
  maxctx c;
  c.is_min = is_min;
  const em_tensor *ops[3] = {values, indices, t};
  return em_run_lanes(op, 3, ops, axis, em_lane_len(t, axis), cumext_loops[t->dtype], &c.h,
                      true, NULL);
}

em_status em_cpu_softmax(const char *op, em_tensor *out, const em_tensor *t, int axis,
                         int log) {
  em_dtype odt = out->dtype;
  smctx c;
  c.log = log;
  c.store = store_d[odt];
  c.reload = !log && (odt == EM_FLOAT32 || odt == EM_FLOAT64) ? em_load_d(odt) : NULL;
  c.f32out = odt == EM_FLOAT32;
  const em_tensor *ops[2] = {out, t};
  return em_run_lanes(op, 2, ops, axis, em_lane_len(t, axis), softmax_loops[t->dtype], &c.h,
                      true, NULL);
}

em_status em_cpu_cumulative(const char *op, em_tensor *out, const em_tensor *t, int axis,
                            int prod) {
  cumctx c;
  c.prod = prod;
  const em_tensor *ops[2] = {out, t};
  return em_run_lanes(op, 2, ops, axis, em_lane_len(t, axis), cum_loops[out->dtype], &c.h,
                      true, NULL);
}
