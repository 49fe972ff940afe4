/*
** cpu/complex.c -- the complex family of the CPU's kernels (core/kern_cplx.h):
** the elementwise loops of complex64/complex128 on C99's complex arithmetic
** (Annex G: division and the functions handle infinities as C specifies),
** and the FFT on pocketfft (engine/third_party/pocketfft, BSD-3-Clause, the
** C version NumPy 1.17-1.26 ships), batched over lanes with OpenMP.
*/
#include "core/kern_cplx.h"
#include "core/errmsg.h"

#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pocketfft/pocketfft.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* -- which pocketfft runs ------------------------------------------------------
** The baseline build (engine/third_party/pocketfft/pocketfft.c) or, on a CPU
** with AVX2 and FMA, the same source built for them (cpu/pocketfft_avx2.c,
** names em_pf_avx2_*): chosen once per process, plans and transforms from
** the same build. Results may differ in the last bits between the two. */
typedef struct pf_ops {
  cfft_plan (*make_c)(size_t);
  void (*destroy_c)(cfft_plan);
  int (*fwd_c)(cfft_plan, double *, double);
  int (*bwd_c)(cfft_plan, double *, double);
  rfft_plan (*make_r)(size_t);
  void (*destroy_r)(rfft_plan);
  int (*fwd_r)(rfft_plan, double *, double);
} pf_ops;

static const pf_ops pf_base = {make_cfft_plan, destroy_cfft_plan, cfft_forward, cfft_backward,
                               make_rfft_plan, destroy_rfft_plan, rfft_forward};

#ifdef EMBER_VEC_AVX2
cfft_plan em_pf_avx2_make_cfft_plan(size_t);
void em_pf_avx2_destroy_cfft_plan(cfft_plan);
int em_pf_avx2_cfft_forward(cfft_plan, double *, double);
int em_pf_avx2_cfft_backward(cfft_plan, double *, double);
rfft_plan em_pf_avx2_make_rfft_plan(size_t);
void em_pf_avx2_destroy_rfft_plan(rfft_plan);
int em_pf_avx2_rfft_forward(rfft_plan, double *, double);
static const pf_ops pf_avx2 = {em_pf_avx2_make_cfft_plan, em_pf_avx2_destroy_cfft_plan,
                               em_pf_avx2_cfft_forward,   em_pf_avx2_cfft_backward,
                               em_pf_avx2_make_rfft_plan, em_pf_avx2_destroy_rfft_plan,
                               em_pf_avx2_rfft_forward};
#endif

/* EMBER_FFT_BASELINE=1 in the environment keeps the baseline build (the
** other path's results, for tests and for bits that match a machine
** without AVX2) */
static const pf_ops *pf_choose(void) {
#if defined(EMBER_VEC_AVX2) && defined(__x86_64__) && defined(__GNUC__)
  const char *e = getenv("EMBER_FFT_BASELINE");
  if ((!e || !*e || !strcmp(e, "0")) && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma"))
    return &pf_avx2;
#endif
  return &pf_base;
}

/* the process's choice (the same answer whichever thread asks first) */
static const pf_ops *pf(void) {
  static const pf_ops *volatile chosen;
  const pf_ops *c = chosen;
  if (!c) chosen = c = pf_choose();
  return c;
}

/* -- Elementwise ------------------------------------------------------------ */

typedef struct {
  em_cx_op op;
  double alpha;
} cx_ctx;

/* One loop per complex dtype: C the complex type, V its value type. The
** operation is chosen once per call of the loop, outside the element loop.
** Elements are moved with memcpy (a view's element need not be aligned to
** the complex type's alignment). */
#define CX_UNARY(EXPR, OT)                                                  \
  for (int64_t i = 0; i < n; i++, o += st[0], a += st[1]) {                \
    C x;                                                                   \
    memcpy(&x, a, sizeof x);                                               \
    OT r = (OT)(EXPR);                                                     \
    memcpy(o, &r, sizeof r);                                               \
  }                                                                        \
  break;
#define CX_BINARY(EXPR, OT)                                                 \
  for (int64_t i = 0; i < n; i++, o += st[0], a += st[1], b += st[2]) {    \
    C x, y;                                                                \
    memcpy(&x, a, sizeof x);                                               \
    memcpy(&y, b, sizeof y);                                               \
    OT r = (OT)(EXPR);                                                     \
    memcpy(o, &r, sizeof r);                                               \
  }                                                                        \
  break;

#define DEF_CX_LOOP(NAME, CT, VT, CABS, CARG, CSQRT, CEXP, CLOG, CPOW, CSIN, CCOS, CTANH, CONJ) \
  static void NAME(char **data, const int64_t *st, int64_t n, void *vctx) {  \
    typedef CT C;                                                            \
    typedef VT V;                                                            \
    const cx_ctx *c = vctx;                                                  \
    char *o = data[0];                                                       \
    const char *a = data[1], *b = data[2];                                   \
    const V al = (V)c->alpha;                                                \
    switch (c->op) {                                                         \
      case EM_CX_ADD: CX_BINARY(x + al * y, C)                               \
      case EM_CX_SUB: CX_BINARY(x - al * y, C)                               \
      case EM_CX_MUL: CX_BINARY(x * y, C)                                    \
      case EM_CX_DIV: CX_BINARY(x / y, C)                                    \
      case EM_CX_POW: CX_BINARY(y == 0 ? (C)1 : CPOW(x, y), C)               \
      case EM_CX_EQ: CX_BINARY(x == y, bool)                                 \
      case EM_CX_NE: CX_BINARY(x != y, bool)                                 \
      case EM_CX_NEG: CX_UNARY(-x, C)                                        \
      case EM_CX_ABS: CX_UNARY(CABS(x), V)                                   \
      case EM_CX_ANGLE: CX_UNARY(CARG(x), V)                                 \
      case EM_CX_CONJ: CX_UNARY(CONJ(x), C)                                  \
      case EM_CX_SQRT: CX_UNARY(CSQRT(x), C)                                 \
      case EM_CX_RECIPROCAL: CX_UNARY((C)1 / x, C)                           \
      case EM_CX_EXP: CX_UNARY(CEXP(x), C)                                   \
      case EM_CX_LOG: CX_UNARY(CLOG(x), C)                                   \
      case EM_CX_SIN: CX_UNARY(CSIN(x), C)                                   \
      case EM_CX_COS: CX_UNARY(CCOS(x), C)                                   \
      case EM_CX_TANH: CX_UNARY(CTANH(x), C)                                 \
      case EM_CX_SQUARE: CX_UNARY(x * x, C)                                  \
      default: break;                                                        \
    }                                                                        \
  }
DEF_CX_LOOP(cx_loop_c64, float complex, float, cabsf, cargf, csqrtf, cexpf, clogf, cpowf,
            csinf, ccosf, ctanhf, conjf)
DEF_CX_LOOP(cx_loop_c128, double complex, double, cabs, carg, csqrt, cexp, clog, cpow,
            csin, ccos, ctanh, conj)

static void cpu_cx_ew(em_cx_op op, em_dtype dt, const em_iter *it, double alpha) {
  if (it->numel == 0) return;
  cx_ctx c = {op, alpha};
  em_iter_run_parallel(it, dt == EM_COMPLEX64 ? cx_loop_c64 : cx_loop_c128, &c);
}

/* -- FFT ----------------------------------------------------------------------
** Lanes (one position of the outer and inner dims) go to pocketfft (which
** computes in double; complex64 is converted, as NumPy's pocketfft computes
** float32) through a per-thread buffer and are written back. A complex128
** lane that is already contiguous (inner == 1) is transformed in place.
** Lanes strided by inner > 1 are moved LANE_BLOCK adjacent ones at a time,
** so each read and write touches whole cache lines (a lane alone would
** touch one element per line). Blocks are split across the engine's
** threads; the plan is shared (pocketfft's plans are read-only while they
** run) and kept in a small cache, as planning a long transform (its
** twiddle factors) costs a good part of one transform. */

enum { LANE_BLOCK = 16, PLAN_CACHE = 4, PLAN_CACHE_MAX_N = 1 << 22 };

/* -- the plan cache: the last PLAN_CACHE plans by (kind, n); a plan in use
** (refs > 0) is never evicted: when every slot is held, a new plan is its
** caller's alone and freed after the call */
typedef struct plan_slot {
  int real;  /* 0: cfft_plan, 1: rfft_plan */
  size_t n;
  void *plan;
  int refs;
  unsigned long used;
} plan_slot;

static plan_slot plan_slots[PLAN_CACHE];
static pthread_mutex_t plan_mutex = PTHREAD_MUTEX_INITIALIZER;

static void destroy_plan(int real, void *plan) {
  if (real) pf()->destroy_r(plan);
  else pf()->destroy_c(plan);
}
static void plan_lock_take(void) { pthread_mutex_lock(&plan_mutex); }
static void plan_lock_give(void) { pthread_mutex_unlock(&plan_mutex); }

/* a plan for (real, n) with a reference taken; *slot for plan_release; NULL
** when out of memory */
static void *plan_get(int real, size_t n, plan_slot **slot) {
  static unsigned long tick;
  plan_lock_take();
  for (int i = 0; i < PLAN_CACHE; i++)
    if (plan_slots[i].plan && plan_slots[i].real == real && plan_slots[i].n == n) {
      plan_slots[i].refs++;
      plan_slots[i].used = ++tick;
      *slot = &plan_slots[i];
      plan_lock_give();
      return plan_slots[i].plan;
    }
  plan_lock_give();
  void *plan = real ? (void *)pf()->make_r(n) : (void *)pf()->make_c(n);
  if (!plan) return NULL;
  if (n > PLAN_CACHE_MAX_N) { /* not kept: its twiddles are large */
    *slot = NULL;
    return plan;
  }
  plan_lock_take();
  /* the least recently used slot that nobody holds */
  plan_slot *victim = NULL;
  for (int i = 0; i < PLAN_CACHE; i++)
    if (plan_slots[i].refs == 0 && (!victim || !plan_slots[i].plan ||
                                    (victim->plan && plan_slots[i].used < victim->used)))
      victim = &plan_slots[i];
  if (!victim) { /* all held: this plan is the caller's alone */
    plan_lock_give();
    *slot = NULL;
    return plan;
  }
  if (victim->plan) destroy_plan(victim->real, victim->plan);
  victim->real = real;
  victim->n = n;
  victim->plan = plan;
  victim->refs = 1;
  victim->used = ++tick;
  *slot = victim;
  plan_lock_give();
  return plan;
}

static void plan_release(int real, void *plan, plan_slot *slot) {
  if (!slot) {
    destroy_plan(real, plan);
    return;
  }
  plan_lock_take();
  slot->refs--;
  plan_lock_give();
}

/* count lanes of (outer, inner) as blocks of up to LANE_BLOCK adjacent
** inner positions: block b covers outer o, inner i0 .. i0 + nb - 1 */
static void lane_block(int64_t b, int64_t inner, int64_t *o, int64_t *i0, int64_t *nb) {
  int64_t per = (inner + LANE_BLOCK - 1) / LANE_BLOCK;
  *o = b / per;
  *i0 = (b % per) * LANE_BLOCK;
  *nb = inner - *i0 < LANE_BLOCK ? inner - *i0 : LANE_BLOCK;
}

/* doubles from one lane's start to the next in a block's buffer: 2 n and a
** cache line, so the LANE_BLOCK lanes (n a power of two: 16 KB apart at
** 1024) do not fall on the same L1 sets */
static inline int64_t lane_stride(int64_t n) { return 2 * n + 8; }

/* nb lanes of n complex values at base (element stride inner) into buf
** (lane l at buf + l * lane_stride(n)), as doubles */
static inline __attribute__((always_inline)) void load_lanes_n(
    em_dtype dt, const char *base, int64_t n, int64_t inner, int64_t nb, double *buf) {
  const int64_t ls = lane_stride(n);
  if (nb == 1 && dt == EM_COMPLEX64) { /* one lane: a plain conversion loop */
    const float *p = (const float *)base;
    if (inner == 1)
      for (int64_t k = 0; k < 2 * n; k++) buf[k] = p[k];
    else
      for (int64_t k = 0; k < n; k++) {
        buf[2 * k] = p[2 * k * inner];
        buf[2 * k + 1] = p[2 * k * inner + 1];
      }
    return;
  }
  if (dt == EM_COMPLEX64) {
    const float *p = (const float *)base;
    for (int64_t k = 0; k < n; k++)
      for (int64_t l = 0; l < nb; l++) {
        buf[l * ls + 2 * k] = p[2 * (k * inner + l)];
        buf[l * ls + 2 * k + 1] = p[2 * (k * inner + l) + 1];
      }
  } else {
    const double *p = (const double *)base;
    for (int64_t k = 0; k < n; k++)
      for (int64_t l = 0; l < nb; l++) {
        buf[l * ls + 2 * k] = p[2 * (k * inner + l)];
        buf[l * ls + 2 * k + 1] = p[2 * (k * inner + l) + 1];
      }
  }
}

static inline __attribute__((always_inline)) void store_lanes_n(
    em_dtype dt, char *base, int64_t n, int64_t inner, int64_t nb, const double *buf) {
  const int64_t ls = lane_stride(n);
  if (nb == 1 && dt == EM_COMPLEX64) {
    float *p = (float *)base;
    if (inner == 1)
      for (int64_t k = 0; k < 2 * n; k++) p[k] = (float)buf[k];
    else
      for (int64_t k = 0; k < n; k++) {
        p[2 * k * inner] = (float)buf[2 * k];
        p[2 * k * inner + 1] = (float)buf[2 * k + 1];
      }
    return;
  }
  if (dt == EM_COMPLEX64) {
    float *p = (float *)base;
    for (int64_t k = 0; k < n; k++)
      for (int64_t l = 0; l < nb; l++) {
        p[2 * (k * inner + l)] = (float)buf[l * ls + 2 * k];
        p[2 * (k * inner + l) + 1] = (float)buf[l * ls + 2 * k + 1];
      }
  } else {
    double *p = (double *)base;
    for (int64_t k = 0; k < n; k++)
      for (int64_t l = 0; l < nb; l++) {
        p[2 * (k * inner + l)] = buf[l * ls + 2 * k];
        p[2 * (k * inner + l) + 1] = buf[l * ls + 2 * k + 1];
      }
  }
}

/* a full block's lane count as a constant (the inner loops unrolled) */
static void load_lanes(em_dtype dt, const char *base, int64_t n, int64_t inner, int64_t nb,
                       double *buf) {
  if (nb == LANE_BLOCK) load_lanes_n(dt, base, n, inner, LANE_BLOCK, buf);
  else load_lanes_n(dt, base, n, inner, nb, buf);
}
static void store_lanes(em_dtype dt, char *base, int64_t n, int64_t inner, int64_t nb,
                        const double *buf) {
  if (nb == LANE_BLOCK) store_lanes_n(dt, base, n, inner, LANE_BLOCK, buf);
  else store_lanes_n(dt, base, n, inner, nb, buf);
}

/* A thread's lane buffer, kept between calls up to SCRATCH_KEEP bytes (a
** fresh multi-megabyte buffer per call costs its page faults, more than a
** tenth of a 2^20 transform): scratch_get returns at least `bytes`, NULL
** when out of memory; scratch_put frees it unless it is the kept one. */
enum { SCRATCH_KEEP = 64 << 20 };
static __thread double *scratch_buf;
static __thread size_t scratch_cap;
static double *scratch_get(size_t bytes) {
  if (bytes > SCRATCH_KEEP) return malloc(bytes);
  if (scratch_cap < bytes) {
    free(scratch_buf);
    scratch_buf = malloc(bytes);
    scratch_cap = scratch_buf ? bytes : 0;
  }
  return scratch_buf;
}
static void scratch_put(double *buf) {
  if (buf && buf != scratch_buf) free(buf);
}

/* whether to split `blocks` blocks of work `work` values over nt threads */
static int fft_parallel(int nt, int64_t blocks, int64_t work) {
#ifdef _OPENMP
  return nt > 1 && blocks > 1 && work >= 32768 && !omp_in_parallel();
#else
  (void)nt; (void)blocks; (void)work;
  return 0;
#endif
}

static em_status cpu_fft(em_dtype dt, void *data, int64_t outer, int64_t n, int64_t inner,
                         int forward, double fct) {
  if (outer == 0 || n == 0 || inner == 0) return EM_OK;
  plan_slot *slot = NULL;
  const pf_ops *ops = pf();
  cfft_plan plan = plan_get(0, (size_t)n, &slot);
  if (!plan) return em_fail(EM_E_NOMEM, "fft: out of memory planning a transform of size %lld",
                            (long long)n);
  const size_t esz = em_dtype_size(dt);
  const int direct = dt == EM_COMPLEX128 && inner == 1;
  const int64_t blocks = outer * ((inner + LANE_BLOCK - 1) / LANE_BLOCK);
  const int64_t width = inner < LANE_BLOCK ? inner : LANE_BLOCK;
  int failed = 0;
  int nt = em_get_num_threads();
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (fft_parallel(nt, blocks, outer * n * inner))
#endif
  {
    double *buf = direct ? NULL : scratch_get((size_t)(lane_stride(n) * width) * sizeof(double));
    if (!direct && !buf) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
      failed = 1;
    }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t b = 0; b < blocks; b++) {
      if (!direct && !buf) continue;
      int64_t o, i0, nb;
      lane_block(b, inner, &o, &i0, &nb);
      char *base = (char *)data + ((o * n) * inner + i0) * (int64_t)esz;
      if (!direct) load_lanes(dt, base, n, inner, nb, buf);
      for (int64_t l = 0; l < nb; l++) {
        double *v = direct ? (double *)base : buf + l * lane_stride(n);
        int r = forward ? ops->fwd_c(plan, v, fct) : ops->bwd_c(plan, v, fct);
        if (r != 0) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
          failed = 1;
        }
      }
      if (!direct) store_lanes(dt, base, n, inner, nb, buf);
    }
    scratch_put(buf);
  }
  plan_release(0, plan, slot);
  if (failed)
    return em_fail(EM_E_NOMEM, "fft: out of memory in a transform of size %lld",
                   (long long)n);
  return EM_OK;
}

/* The real-input transform: in (real dt, contiguous (outer, n, inner)) to
** out (the matching complex dtype, contiguous (outer, n / 2 + 1, inner)),
** the non-negative frequencies of the forward transform, times fct. On
** pocketfft's real plan (half the work of a complex transform); its
** packed result (r0, r1, i1, r2, i2, ...) is unpacked as NumPy does. */
static em_status cpu_rfft(em_dtype dt, const void *in, void *out, int64_t outer, int64_t n,
                          int64_t inner, double fct) {
  if (outer == 0 || n == 0 || inner == 0) return EM_OK;
  plan_slot *slot = NULL;
  const pf_ops *ops = pf();
  rfft_plan plan = plan_get(1, (size_t)n, &slot);
  if (!plan) return em_fail(EM_E_NOMEM, "fft: out of memory planning a transform of size %lld",
                            (long long)n);
  const int64_t nh = n / 2 + 1, stride = n + 2;
  const int64_t blocks = outer * ((inner + LANE_BLOCK - 1) / LANE_BLOCK);
  const int64_t width = inner < LANE_BLOCK ? inner : LANE_BLOCK;
  const int f32 = dt == EM_FLOAT32;
  int failed = 0;
  int nt = em_get_num_threads();
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (fft_parallel(nt, blocks, outer * n * inner))
#endif
  {
    double *buf = scratch_get((size_t)(stride * width) * sizeof(double));
    if (!buf) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
      failed = 1;
    }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t b = 0; b < blocks; b++) {
      if (!buf) continue;
      int64_t o, i0, nb;
      lane_block(b, inner, &o, &i0, &nb);
      int64_t ioff = o * n * inner + i0, ooff = o * nh * inner + i0;
      /* lane l's values at buf + l * stride + 1 */
      if (nb == 1 && f32) { /* one lane: plain conversion loops */
        const float *p = (const float *)in + ioff;
        double *v = buf + 1;
        if (inner == 1) for (int64_t k = 0; k < n; k++) v[k] = p[k];
        else for (int64_t k = 0; k < n; k++) v[k] = p[k * inner];
      } else if (nb == 1) {
        const double *p = (const double *)in + ioff;
        double *v = buf + 1;
        if (inner == 1) memcpy(v, p, (size_t)n * sizeof(double));
        else for (int64_t k = 0; k < n; k++) v[k] = p[k * inner];
      } else if (f32) {
        for (int64_t k = 0; k < n; k++)
          for (int64_t l = 0; l < nb; l++)
            buf[l * stride + 1 + k] = ((const float *)in)[ioff + k * inner + l];
      } else {
        for (int64_t k = 0; k < n; k++)
          for (int64_t l = 0; l < nb; l++)
            buf[l * stride + 1 + k] = ((const double *)in)[ioff + k * inner + l];
      }
      for (int64_t l = 0; l < nb; l++) {
        double *v = buf + l * stride;
        if (ops->fwd_r(plan, v + 1, fct) != 0) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
          failed = 1;
        }
        /* (r0, r1, i1, ...) at v + 1 -> (r0, 0, r1, i1, ...) at v */
        v[0] = v[1];
        v[1] = 0;
        if (n % 2 == 0) v[n + 1] = 0;
      }
      if (nb == 1 && inner == 1) { /* one contiguous lane */
        if (f32) {
          float *p = (float *)out + 2 * ooff;
          for (int64_t k = 0; k < 2 * nh; k++) p[k] = (float)buf[k];
        } else {
          memcpy((double *)out + 2 * ooff, buf, (size_t)(2 * nh) * sizeof(double));
        }
        continue;
      }
      for (int64_t k = 0; k < nh; k++)
        for (int64_t l = 0; l < nb; l++) {
          const double *v = buf + l * stride + 2 * k;
          if (f32) {
            float *p = (float *)out + 2 * (ooff + k * inner + l);
            p[0] = (float)v[0];
            p[1] = (float)v[1];
          } else {
            double *p = (double *)out + 2 * (ooff + k * inner + l);
            p[0] = v[0];
            p[1] = v[1];
          }
        }
    }
    scratch_put(buf);
  }
  plan_release(1, plan, slot);
  if (failed)
    return em_fail(EM_E_NOMEM, "fft: out of memory in a transform of size %lld",
                   (long long)n);
  return EM_OK;
}

const em_cplx_kernels em_cpu_cplx_kernels = {
    .ew = cpu_cx_ew,
    .fft = cpu_fft,
    .rfft = cpu_rfft,
};
