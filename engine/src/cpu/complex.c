/*
** cpu/complex.c -- the complex family of the CPU's kernels (core/kern_cplx.h):
** the elementwise loops of complex64/complex128 on C99's complex arithmetic
** (Annex G: division and the functions handle infinities as C specifies),
** and the FFT on pocketfft (engine/third_party/pocketfft, BSD-3-Clause, the
** C version NumPy 1.17-1.26 ships), batched over lanes with OpenMP.
*/
#include "core/kern_cplx.h"
#include "cpu/omp_if.h"
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
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* -- which pocketfft runs ------------------------------------------------------
** The baseline build (engine/third_party/pocketfft/pocketfft.c) or, on a CPU
** with AVX2 and FMA, the same source built for them (cpu/pocketfft_avx2.c,
** names em_pf_avx2_*): chosen once per process, plans and transforms from
** the same build. Results may differ in the last bits between the two.
** Each has a float twin (cpu/pocketfft_f32.c, cpu/pocketfft_f32_avx2.c):
** complex64 and float32 transforms run in float, as PyTorch's do. */
typedef struct pf_ops {
  cfft_plan (*make_c)(size_t);
  void (*destroy_c)(cfft_plan);
  int (*fwd_c)(cfft_plan, double *, double);
  int (*bwd_c)(cfft_plan, double *, double);
  rfft_plan (*make_r)(size_t);
  void (*destroy_r)(rfft_plan);
  int (*fwd_r)(rfft_plan, const double *, double *, double); /* in to out */
  /* the float build's */
  void *(*make_fc)(size_t);
  void (*destroy_fc)(void *);
  int (*fwd_fc)(void *, float *, float);
  int (*bwd_fc)(void *, float *, float);
  void *(*make_fr)(size_t);
  void (*destroy_fr)(void *);
  int (*fwd_fr)(void *, const float *, float *, float);
} pf_ops;

#define PF32_DECLS(P)                              \
  void *P##make_c(size_t);                         \
  void P##destroy_c(void *);                       \
  int P##fwd_c(void *, float *, float);            \
  int P##bwd_c(void *, float *, float);            \
  void *P##make_r(size_t);                         \
  void P##destroy_r(void *);                       \
  int P##fwd_r_into(void *, const float *, float *, float);
#define PF32_OPS(P) P##make_c, P##destroy_c, P##fwd_c, P##bwd_c, P##make_r, P##destroy_r, P##fwd_r_into
PF32_DECLS(em_pf_f32_)
/* cpu/pocketfft_into.h: rfft_forward from in to out (the same bits) */
int rfft_forward_into(rfft_plan, const double *, double *, double);

static const pf_ops pf_base = {make_cfft_plan, destroy_cfft_plan, cfft_forward, cfft_backward,
                               make_rfft_plan, destroy_rfft_plan, rfft_forward_into,
                               PF32_OPS(em_pf_f32_)};

#ifdef EMBER_VEC_AVX2
cfft_plan em_pf_avx2_make_cfft_plan(size_t);
void em_pf_avx2_destroy_cfft_plan(cfft_plan);
int em_pf_avx2_cfft_forward(cfft_plan, double *, double);
int em_pf_avx2_cfft_backward(cfft_plan, double *, double);
rfft_plan em_pf_avx2_make_rfft_plan(size_t);
void em_pf_avx2_destroy_rfft_plan(rfft_plan);
int em_pf_avx2_rfft_forward_into(rfft_plan, const double *, double *, double);
PF32_DECLS(em_pf_f32avx2_)
static const pf_ops pf_avx2 = {em_pf_avx2_make_cfft_plan, em_pf_avx2_destroy_cfft_plan,
                               em_pf_avx2_cfft_forward,   em_pf_avx2_cfft_backward,
                               em_pf_avx2_make_rfft_plan, em_pf_avx2_destroy_rfft_plan,
                               em_pf_avx2_rfft_forward_into, PF32_OPS(em_pf_f32avx2_)};
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

/* fn of complex x in x's precision: fnf for float complex */
#define CFN(fn, x) _Generic((x), float complex: fn##f, default: fn)(x)

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
      case EM_CX_POW: CX_BINARY(y == 0 ? (C)1 : y == 1 ? x : CPOW(x, y), C)  \
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
      case EM_CX_ASIN: CX_UNARY(CFN(casin, x), C)                            \
      case EM_CX_ACOS: CX_UNARY(CFN(cacos, x), C)                            \
      case EM_CX_ATAN: CX_UNARY(CFN(catan, x), C)                            \
      case EM_CX_ASINH: CX_UNARY(CFN(casinh, x), C)                          \
      case EM_CX_ACOSH: CX_UNARY(CFN(cacosh, x), C)                          \
      case EM_CX_ATANH: CX_UNARY(CFN(catanh, x), C)                          \
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
** Lanes (one position of the outer and inner dims) go to pocketfft through a
** per-thread buffer and are written back: complex128/float64 to the double
** build, complex64/float32 to the float build (as PyTorch computes them; it
** was the double build with conversions, as NumPy does: 1.4x the time at
** 2^20 points, docs/fft.md). A lane that is already contiguous (inner == 1)
** is transformed in place (rfft: in its output). Lanes strided by inner > 1
** are moved LANE_BLOCK adjacent ones at a time, so each read and write
** touches whole cache lines (a lane alone would touch one element per
** line). Blocks are split across the engine's threads; the plan is shared
** (pocketfft's plans are read-only while they run) and kept in a small
** cache, as planning a long transform (its twiddle factors) costs a good
** part of one transform. */

enum { LANE_BLOCK = 16, PLAN_CACHE = 8, PLAN_CACHE_MAX_N = 1 << 22 };
/* the plan kinds: complex and real, of the double and the float build; the
** four-step transform's twiddle factors (fs_table) in double and in float */
enum { PK_C, PK_R, PK_FC, PK_FR, PK_T4D, PK_T4F };

/* The roots of unity W^j = exp(-2 pi i j / n), 0 <= j < n, as
** lo[j % L] * hi[j / L] (L = ceil(sqrt n): two tables of about sqrt(n)
** complex doubles instead of n); for the four-step transform
** (cpu/fft_fourstep_tpl.h) */
typedef struct rou_table {
  int64_t L;
  double *lo, *hi; /* (re, im) pairs: L and n / L + 1 of them */
} rou_table;

/* W^j, each angle reduced to [0, pi/2] first (accurate to ~1e-16) */
static void rou_exact(int64_t n, int64_t j, double *re, double *im) {
  int conj = 0, flip = 0;
  if (2 * j > n) {
    j = n - j; /* W^(n - j) = conj W^j */
    conj = 1;
  }
  double th;
  if (4 * j > n) { /* theta = pi - theta', theta' = pi (n - 2j) / n */
    th = (double)(n - 2 * j) * (3.14159265358979323846 / (double)n);
    flip = 1;
  } else {
    th = (double)j * (6.28318530717958647692 / (double)n);
  }
  double c = cos(th), sn = sin(th);
  if (flip) c = -c;
  *re = c;
  *im = conj ? sn : -sn;
}
static void rou_destroy(rou_table *t) {
  if (!t) return;
  free(t->lo);
  free(t->hi);
  free(t);
}
static rou_table *rou_make(int64_t n) {
  rou_table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  int64_t L = (int64_t)sqrt((double)n);
  while (L * L < n) L++;
  const int64_t nh = n / L + 1;
  t->L = L;
  t->lo = malloc((size_t)(2 * L) * sizeof(double));
  t->hi = malloc((size_t)(2 * nh) * sizeof(double));
  if (!t->lo || !t->hi) {
    rou_destroy(t);
    return NULL;
  }
  for (int64_t r = 0; r < L; r++) rou_exact(n, r, &t->lo[2 * r], &t->lo[2 * r + 1]);
  for (int64_t q = 0; q < nh; q++) rou_exact(n, (q * L) % n, &t->hi[2 * q], &t->hi[2 * q + 1]);
  return t;
}
/* W^j = lo[j % L] hi[j / L] */
static void rou_at(const rou_table *t, int64_t j, double *re, double *im) {
  const int64_t q = j / t->L, r = j % t->L;
  const double ar = t->lo[2 * r], ai = t->lo[2 * r + 1], br = t->hi[2 * q], bi = t->hi[2 * q + 1];
  *re = ar * br - ai * bi;
  *im = ar * bi + ai * br;
}

static int fourstep_split(int64_t m, int64_t *m1, int64_t *m2);

/* The four-step transform's twiddle factors for m complex points, in the
** order the column pass reads them (cpu/fft_fourstep_tpl.h): column block
** n2 = 16 b starts at n2 m1, then W_m^((n2 + l) k1) at l m1 + k1;
** and rfft's W_(2m)^(k1 + m1 k2) at k1 m2 + k2, rows k1 <= m1 / 2 (the pass
** that untangles rows k1 and m1 - k1 reads a row at a time). Exact in double (rou_table), then
** rounded to the build's type: about m + m / 2 complex values, as many as
** pocketfft's own plan of that length holds. */
typedef struct fs_table {
  void *col, *unt; /* (re, im) pairs of double (PK_T4D) or float (PK_T4F) */
} fs_table;
static void fs_destroy(fs_table *t) {
  if (!t) return;
  free(t->col);
  free(t->unt);
  free(t);
}
static fs_table *fs_make(int64_t m, int dbl) {
  int64_t m1, m2;
  if (!fourstep_split(m, &m1, &m2)) return NULL;
  fs_table *t = calloc(1, sizeof *t);
  rou_table *rm = rou_make(m), *r2 = rou_make(2 * m);
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  if (t) {
    t->col = malloc((size_t)(2 * m) * es);
    t->unt = malloc((size_t)(2 * (m1 / 2 + 1) * m2) * es); /* (m1 / 2 + 1) rows of m2 */
  }
  if (!t || !rm || !r2 || !t->col || !t->unt) {
    rou_destroy(rm);
    rou_destroy(r2);
    fs_destroy(t);
    return NULL;
  }
  double *cd = t->col, *ud = t->unt;
  float *cf = t->col, *uf = t->unt;
  int64_t i = 0;
  for (int64_t n2 = 0; n2 < m2; n2++) /* = block, lane l = n2 % 16, k1 */
    for (int64_t k1 = 0; k1 < m1; k1++, i++) {
      double re, im;
      rou_at(rm, (n2 * k1) % m, &re, &im);
      if (dbl) cd[2 * i] = re, cd[2 * i + 1] = im;
      else cf[2 * i] = (float)re, cf[2 * i + 1] = (float)im;
    }
  i = 0;
  for (int64_t k1 = 0; k1 <= m1 / 2; k1++)
    for (int64_t k2 = 0; k2 < m2; k2++, i++) {
      double re, im;
      rou_at(r2, k1 + m1 * k2, &re, &im);
      if (dbl) ud[2 * i] = re, ud[2 * i + 1] = im;
      else uf[2 * i] = (float)re, uf[2 * i + 1] = (float)im;
    }
  rou_destroy(rm);
  rou_destroy(r2);
  return t;
}

/* -- the plan cache: the last PLAN_CACHE plans by (kind, n); a plan in use
** (refs > 0) is never evicted: when every slot is held, a new plan is its
** caller's alone and freed after the call */
typedef struct plan_slot {
  int kind; /* PK_* */
  size_t n;
  void *plan;
  int refs;
  unsigned long used;
} plan_slot;

static plan_slot plan_slots[PLAN_CACHE];
static pthread_mutex_t plan_mutex = PTHREAD_MUTEX_INITIALIZER;

static void destroy_plan(int kind, void *plan) {
  switch (kind) {
    case PK_C: pf()->destroy_c(plan); break;
    case PK_R: pf()->destroy_r(plan); break;
    case PK_FC: pf()->destroy_fc(plan); break;
    case PK_T4D:
    case PK_T4F: fs_destroy(plan); break;
    default: pf()->destroy_fr(plan); break;
  }
}
static void *make_plan(int kind, size_t n) {
  switch (kind) {
    case PK_C: return pf()->make_c(n);
    case PK_R: return pf()->make_r(n);
    case PK_FC: return pf()->make_fc(n);
    case PK_T4D: return fs_make((int64_t)n, 1);
    case PK_T4F: return fs_make((int64_t)n, 0);
    default: return pf()->make_fr(n);
  }
}
static void plan_lock_take(void) { pthread_mutex_lock(&plan_mutex); }
static void plan_lock_give(void) { pthread_mutex_unlock(&plan_mutex); }

/* a plan of kind for n with a reference taken; *slot for plan_release;
** NULL when out of memory */
static void *plan_get(int kind, size_t n, plan_slot **slot) {
  static unsigned long tick;
  plan_lock_take();
  for (int i = 0; i < PLAN_CACHE; i++)
    if (plan_slots[i].plan && plan_slots[i].kind == kind && plan_slots[i].n == n) {
      plan_slots[i].refs++;
      plan_slots[i].used = ++tick;
      *slot = &plan_slots[i];
      plan_lock_give();
      return plan_slots[i].plan;
    }
  plan_lock_give();
  void *plan = make_plan(kind, n);
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
  if (victim->plan) destroy_plan(victim->kind, victim->plan);
  victim->kind = kind;
  victim->n = n;
  victim->plan = plan;
  victim->refs = 1;
  victim->used = ++tick;
  *slot = victim;
  plan_lock_give();
  return plan;
}

static void plan_release(int kind, void *plan, plan_slot *slot) {
  if (!slot) {
    destroy_plan(kind, plan);
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

/* values from one lane's start to the next in a block's buffer: 2 n and 8
** more, so the LANE_BLOCK lanes (n a power of two: 16 KB apart at 1024 in
** double) do not fall on the same L1 sets */
static inline int64_t lane_stride(int64_t n) { return 2 * n + 8; }

/* A thread's lane buffer, kept between calls up to SCRATCH_KEEP bytes (a
** fresh multi-megabyte buffer per call costs its page faults, more than a
** tenth of a 2^20 transform): scratch_get returns at least `bytes`, NULL
** when out of memory; scratch_put frees it unless it is the kept one. */
enum { SCRATCH_KEEP = 64 << 20 };
typedef struct kept_buf {
  void *buf;
  size_t cap;
} kept_buf;
/* two slots per thread: the lane buffer, and the four-step transform's
** scratch (all of a transform's values; its caller also takes a lane
** buffer) */
static __thread kept_buf lane_kept, big_kept;
static void *kept_get(kept_buf *k, size_t bytes) {
  if (bytes > SCRATCH_KEEP) return malloc(bytes);
  if (k->cap < bytes) {
    free(k->buf);
    k->buf = malloc(bytes);
    k->cap = k->buf ? bytes : 0;
  }
  return k->buf;
}
static void kept_put(kept_buf *k, void *buf) {
  if (buf && buf != k->buf) free(buf);
}
static void *scratch_get(size_t bytes) { return kept_get(&lane_kept, bytes); }
static void scratch_put(void *buf) { kept_put(&lane_kept, buf); }
static void *big_scratch_get(size_t bytes) { return kept_get(&big_kept, bytes); }
static void big_scratch_put(void *buf) { kept_put(&big_kept, buf); }

/* Whether m complex points go through the four-step transform, and as
** which m1 x m2: m at least FOURSTEP_MIN (below, one pocketfft call is in
** cache anyway) with a divisor m1 of at least 32 up to sqrt(m) (the
** largest such; m2 = m / m1). EMBER_FFT_FOURSTEP=0 in the environment
** turns it off (for A/B runs and tests). */
enum { FOURSTEP_MIN = 1 << 15 };
/* columns (and rows) per block of the four-step passes: 512 bytes of each
** row of the matrix at a time (64 complex64 or 32 complex128 values: every
** strided read or write a run of whole cache lines, and the block's lanes in
** L2); 16 and 32 complex64 values took 1.25x and 1.15x the time at 2^20 */
#define FS_BLOCK ((int64_t)(256 / sizeof(R)))
static int fourstep_split(int64_t m, int64_t *m1, int64_t *m2) {
  static volatile int off = -1;
  if (off < 0) {
    const char *e = getenv("EMBER_FFT_FOURSTEP");
    off = e && !strcmp(e, "0");
  }
  if (off || m < FOURSTEP_MIN) return 0;
  int64_t d = (int64_t)sqrt((double)m);
  while (d * d > m) d--;
  for (; d >= 32; d--)
    if (m % d == 0) {
      *m1 = d;
      *m2 = m / d;
      return 1;
    }
  return 0;
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

/* *plan: a plan of kind for n (plan_get); out of memory is the error */
static em_status plan_or_fail(int kind, int64_t n, void **plan, plan_slot **slot) {
  *plan = plan_get(kind, (size_t)n, slot);
  if (!*plan)
    return em_fail(EM_E_NOMEM, "fft: out of memory planning a transform of size %lld", (long long)n);
  return EM_OK;
}
/* a transform's end: its plan released, a lane's failure as the error */
static em_status plan_done(int kind, void *plan, plan_slot *slot, int failed, int64_t n) {
  plan_release(kind, plan, slot);
  if (failed)
    return em_fail(EM_E_NOMEM, "fft: out of memory in a transform of size %lld", (long long)n);
  return EM_OK;
}

/* a lane's failure, written by any thread of the team */
#ifdef _OPENMP
#define FFT_FAIL(flag) do { EM_OMP_PRAGMA(omp atomic write) flag = 1; } while (0)
#else
#define FFT_FAIL(flag) ((flag) = 1)
#endif
#define EMCAT2(a, b) a##b
#define EMCAT(a, b) EMCAT2(a, b)
#define R double
#define SFX d
#define KIND_C PK_C
#define KIND_R PK_R
#define KIND_T4 PK_T4D
#define FWD_C(o, p, v, f) (o)->fwd_c(p, v, f)
#define BWD_C(o, p, v, f) (o)->bwd_c(p, v, f)
#define FWD_R(o, p, i, v, f) (o)->fwd_r(p, i, v, f)
#include "cpu/fft_lanes_tpl.h"
#include "cpu/fft_fourstep_tpl.h"
#undef R
#undef SFX
#undef FWD_C
#undef BWD_C
#undef FWD_R
#undef KIND_C
#undef KIND_R
#undef KIND_T4
#define R float
#define SFX f
#define FWD_C(o, p, v, f) (o)->fwd_fc(p, v, f)
#define BWD_C(o, p, v, f) (o)->bwd_fc(p, v, f)
#define FWD_R(o, p, i, v, f) (o)->fwd_fr(p, i, v, f)
#define KIND_C PK_FC
#define KIND_R PK_FR
#define KIND_T4 PK_T4F
#include "cpu/fft_lanes_tpl.h"
#include "cpu/fft_fourstep_tpl.h"
#undef KIND_C
#undef KIND_R
#undef KIND_T4
#undef R
#undef SFX
#undef FWD_C
#undef BWD_C
#undef FWD_R

static em_status cpu_fft(em_dtype dt, void *data, int64_t outer, int64_t n, int64_t inner,
                         int forward, double fct) {
  if (outer == 0 || n == 0 || inner == 0) return EM_OK;
  int64_t m1, m2;
  if (inner == 1 && fourstep_split(n, &m1, &m2)) /* each lane long and contiguous */
    return dt == EM_COMPLEX64
               ? cpu_fft4_f(data, 2 * n, data, 2 * n, outer, m1, m2, forward, fct, 0)
               : cpu_fft4_d(data, 2 * n, data, 2 * n, outer, m1, m2, forward, fct, 0);
  if (dt == EM_COMPLEX64) return cpu_fft_f(data, outer, n, inner, forward, fct);
  return cpu_fft_d(data, outer, n, inner, forward, fct);
}

/* The real-input transform: in (real dt, contiguous (outer, n, inner)) to
** out (the matching complex dtype, contiguous (outer, n / 2 + 1, inner)) */
static em_status cpu_rfft(em_dtype dt, const void *in, void *out, int64_t outer, int64_t n,
                          int64_t inner, double fct) {
  if (outer == 0 || n == 0 || inner == 0) return EM_OK;
  int64_t m1, m2;
  if (inner == 1 && n % 2 == 0 && fourstep_split(n / 2, &m1, &m2))
    return dt == EM_FLOAT32 ? cpu_fft4_f(in, n, out, 2 * (n / 2 + 1), outer, m1, m2, 1, fct, 1)
                            : cpu_fft4_d(in, n, out, 2 * (n / 2 + 1), outer, m1, m2, 1, fct, 1);
  if (dt == EM_FLOAT32) return cpu_rfft_f(in, out, outer, n, inner, fct);
  return cpu_rfft_d(in, out, outer, n, inner, fct);
}

const em_cplx_kernels em_cpu_cplx_kernels = {
    .ew = cpu_cx_ew,
    .fft = cpu_fft,
    .rfft = cpu_rfft,
};
