/*
** random.c -- the random generator and the samplers built on it.
** Guarantees: the generator is counter-based (Philox4x32-10 keyed by the
** 64-bit seed). Every number an operation draws for element i (row-major,
** 0-based) comes from lane i % L of the block Philox(counter =
** (offset + i / L, draw, 0), key = seed), L elements per block (4 for
** float32 and narrower uniforms, 1 for integers, else 2), and the operation
** then advances offset by its block count. So the same seed gives the same
** numbers on every machine, for every layout of the destination and for
** any thread count. Algorithms
** (docs/random.md): uniform floats take the top mantissa-many bits of a
** word (k / 2^bits, so [0, 1) never rounds up to 1); normals use Box-Muller
** on two 53-bit uniforms (cos and sin halves for the two lanes); integers use Lemire's multiply-shift with
** rejection (no modulo bias), a rejected draw moving to the next "draw"
** counter of the same element.
*/
#include "core/iter.h"
#include "autograd/autograd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* -- Philox4x32-10 --------------------------------------------------------- */

static inline void philox_round(uint32_t c[4], const uint32_t k[2]) {
  const uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
  const uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
  const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t r0 = hi1 ^ c[1] ^ k[0];
  uint32_t r2 = hi0 ^ c[3] ^ k[1];
  c[0] = r0;
  c[1] = lo1;
  c[2] = r2;
  c[3] = lo0;
}

/* Inlined into every sampler loop: the ten rounds then stay in registers. */
static inline void philox10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  philox_round(c, k);
  for (int r = 1; r < 10; r++) {
    k[0] += 0x9E3779B9u;
    k[1] += 0xBB67AE85u;
    philox_round(c, k);
  }
  out[0] = c[0]; out[1] = c[1]; out[2] = c[2]; out[3] = c[3];
}

void em_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  philox10(ctr, key, out);
}

/* -- The generator ---------------------------------------------------------
** seed and offset are atomics: an operation reserves its counters with one
** fetch_add, so concurrent callers never share numbers. The first use
** seeds from the OS, as PyTorch's default generator does. */

static _Atomic uint64_t g_seed, g_offset;
static atomic_int g_seeded;

static uint64_t entropy_seed(void) {
  uint64_t s = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (f) {
    if (fread(&s, sizeof s, 1, f) != 1) s = 0;
    fclose(f);
  }
  if (s == 0) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    s = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&s;
  }
  return s & ((UINT64_C(1) << 53) - 1);  /* exact as a Lua number */
}

static void ensure_seeded(void) {
  if (atomic_load(&g_seeded)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&g_seeded, &expected, 1)) {
    atomic_store(&g_seed, entropy_seed());
    atomic_store(&g_offset, 0);
  }
}

void em_manual_seed(uint64_t seed) {
  atomic_store(&g_seeded, 1);
  atomic_store(&g_seed, seed);
  atomic_store(&g_offset, 0);
}

uint64_t em_initial_seed(void) {
  ensure_seeded();
  return atomic_load(&g_seed);
}

uint64_t em_seed(void) {
  uint64_t s = entropy_seed();
  em_manual_seed(s);
  return s;
}

em_rng_state em_get_rng_state(void) {
  ensure_seeded();
  em_rng_state s = {atomic_load(&g_seed), atomic_load(&g_offset)};
  return s;
}

void em_set_rng_state(em_rng_state s) {
  atomic_store(&g_seeded, 1);
  atomic_store(&g_seed, s.seed);
  atomic_store(&g_offset, s.offset);
}

/* Reserves n counters; returns the first. */
static uint64_t reserve(uint64_t n, uint32_t key[2]) {
  ensure_seeded();
  uint64_t seed = atomic_load(&g_seed);
  key[0] = (uint32_t)seed;
  key[1] = (uint32_t)(seed >> 32);
  return atomic_fetch_add(&g_offset, n);
}

/* The block for element index idx, draw number d. */
static inline void block(uint64_t idx, uint32_t d, const uint32_t key[2], uint32_t out[4]) {
  const uint32_t ctr[4] = {(uint32_t)idx, (uint32_t)(idx >> 32), d, 0};
  philox10(ctr, key, out);
}

/* nb <= PB consecutive blocks (indices first .. first + nb - 1, draw 0)
** at once: the same ten rounds as philox10, with the PB counters as
** struct-of-arrays so the compiler runs the rounds in vector registers
** (32 x 32 -> 64-bit multiplies are vector instructions from SSE2 on). The
** words are the ones block() gives, word j of block first + b at w[b][j]. */
enum { PB = 32 };

static void philox_blocks(uint64_t first, int nb, const uint32_t key[2], uint32_t w[PB][4]) {
  uint32_t c0[PB], c1[PB], c2[PB], c3[PB];
  for (int b = 0; b < nb; b++) {
    uint64_t idx = first + (uint64_t)b;
    c0[b] = (uint32_t)idx;
    c1[b] = (uint32_t)(idx >> 32);
    c2[b] = 0;
    c3[b] = 0;
  }
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    for (int b = 0; b < nb; b++) {
      const uint64_t p0 = (uint64_t)0xD2511F53u * c0[b];
      const uint64_t p1 = (uint64_t)0xCD9E8D57u * c2[b];
      const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[b] ^ k0;
      const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[b] ^ k1;
      c1[b] = (uint32_t)p1;
      c3[b] = (uint32_t)p0;
      c0[b] = n0;
      c2[b] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int b = 0; b < nb; b++) {
    w[b][0] = c0[b];
    w[b][1] = c1[b];
    w[b][2] = c2[b];
    w[b][3] = c3[b];
  }
}

/* -- Bits to numbers ----------------------------------------------------- */

static inline double u53(uint32_t hi, uint32_t lo) {  /* [0, 1) */
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

/* Uniform in [0, 1) with `bits` random bits: k / 2^bits (scale = 2^-bits). */
static inline double ubits(uint32_t w, int bits, double scale) {
  return (double)(w >> (32 - bits)) * scale;
}

/* Lemire's unbiased multiply-shift for [0, range) (range > 0, 64-bit):
** a draw whose low product half falls below 2^64 mod range is rejected and
** the element takes its next draw counter. */
static inline uint64_t bounded(uint64_t idx, uint64_t range, const uint32_t key[2]) {
  uint32_t w[4];
  uint64_t thresh = (0 - range) % range;
  for (uint32_t d = 0;; d++) {
    block(idx, d, key, w);
    for (int h = 0; h < 2; h++) {
      uint64_t x = ((uint64_t)w[2 * h] << 32) | w[2 * h + 1];
      unsigned __int128 m = (unsigned __int128)x * range;
      if ((uint64_t)m >= thresh) return (uint64_t)(m >> 64);
    }
  }
}

/* -- Sampling kernels -------------------------------------------------------
** Each writes into a contiguous tensor; an element's index i is its byte
** offset from the first element over the element size. One Philox block
** (four 32-bit words) serves `lanes` consecutive elements: element i uses
** lane i % lanes of block offset + i / lanes (docs/random.md has the table).
** The kernel turns a block into its lanes' values once and reuses them. */

typedef enum { S_UNIFORM, S_NORMAL, S_EXPONENTIAL, S_RANDOM, S_BERNOULLI } sampler;

typedef struct {
  const char *base;
  int64_t itemsize;
  uint64_t offset;   /* first block of this operation */
  uint32_t key[2];
  sampler kind;
  int lanes;         /* elements per block: 4, 2 or 1 */
  int ints;          /* integer or bool destination: the values' int64 too */
  int bits;          /* uniform bits for the dtype (24 float32, 53 float64, ...) */
  double scale;      /* 2^-bits */
  double a, b;       /* uniform from/to; normal mean/std; exponential lambda; p */
  int64_t low;       /* random_ */
  uint64_t range;
} sample_ctx;

static int lanes_for(sampler kind, int bits) {
  if (kind == S_RANDOM) return 1;
  if (kind == S_UNIFORM && bits < 53) return 4;
  return 2;
}

/* The values of a kernel's elements, PB blocks at a time: philox_blocks
** makes the words, then one loop per sampler turns them into the lanes'
** values (v; iv, the int64 of each, only for integer destinations). */
typedef struct {
  uint64_t vfirst, vend;  /* element indices (from the op's first) in v */
  uint64_t end;           /* one past the last block the kernel call needs */
  uint32_t w[PB][4];
  double v[PB * 4];
  int64_t iv[PB * 4];
} value_batch;

/* Fills bt with the values of blocks b, b + 1, ... (at most PB, not past
** bt->end). */
static void fill_values(const sample_ctx *c, value_batch *bt, uint64_t b) {
  uint64_t left = bt->end > b ? bt->end - b : 1;
  const int nb = left < PB ? (int)left : PB, L = c->lanes;
  double *v = bt->v;
  if (c->kind == S_RANDOM) {
    for (int j = 0; j < nb; j++) {
      bt->iv[j] = (int64_t)((uint64_t)c->low + bounded(c->offset + b + (uint64_t)j, c->range, c->key));
      v[j] = (double)bt->iv[j];
    }
  } else {
    uint32_t (*w)[4] = bt->w;
    philox_blocks(c->offset + b, nb, c->key, w);
    const double a = c->a, span = c->b - c->a;
    switch (c->kind) {
      case S_UNIFORM:
        if (L == 2) {
          for (int j = 0; j < nb; j++) {
            v[2 * j] = a + u53(w[j][0], w[j][1]) * span;
            v[2 * j + 1] = a + u53(w[j][2], w[j][3]) * span;
          }
        } else {
          for (int j = 0; j < nb; j++)
            for (int l = 0; l < 4; l++) v[4 * j + l] = a + ubits(w[j][l], c->bits, c->scale) * span;
        }
        break;
      case S_NORMAL:
        /* Box-Muller: both halves of the pair, cos for lane 0, sin for lane 1 */
        for (int j = 0; j < nb; j++) {
          double u1 = 1.0 - u53(w[j][0], w[j][1]);  /* (0, 1]: log is finite */
          double u2 = u53(w[j][2], w[j][3]);
          double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
          v[2 * j] = c->a + c->b * (r * cos(th));
          v[2 * j + 1] = c->a + c->b * (r * sin(th));
        }
        break;
      case S_EXPONENTIAL:
        for (int j = 0; j < nb; j++) {
          v[2 * j] = -log1p(-u53(w[j][0], w[j][1])) / c->a;
          v[2 * j + 1] = -log1p(-u53(w[j][2], w[j][3])) / c->a;
        }
        break;
      default: /* S_BERNOULLI */
        for (int j = 0; j < nb; j++) {
          v[2 * j] = u53(w[j][0], w[j][1]) < a ? 1.0 : 0.0;
          v[2 * j + 1] = u53(w[j][2], w[j][3]) < a ? 1.0 : 0.0;
        }
        break;
    }
    if (c->ints)
      for (int k = 0; k < nb * L; k++) bt->iv[k] = (int64_t)v[k];
  }
  bt->vfirst = b * (uint64_t)L;
  bt->vend = (b + (uint64_t)nb) * (uint64_t)L;
}

/* Stores: floating dtypes take the double (rounded once); integer dtypes
** the int64 (random_) or the 0/1 of bernoulli. */
#define RS_F_f16(p, v) (*(em_half *)(p) = em_float_to_half((float)(v)))
#define RS_F_bf16(p, v) (*(em_bfloat16 *)(p) = em_float_to_bf16((float)(v)))
#define RS_F_f32(p, v) (*(float *)(p) = (float)(v))
#define RS_F_f64(p, v) (*(double *)(p) = (v))
#define RS_STORE_b8(p, v, iv) (*(bool *)(p) = (iv) != 0)
#define RS_STORE_u8(p, v, iv) (*(uint8_t *)(p) = (uint8_t)(iv))
#define RS_STORE_i8(p, v, iv) (*(int8_t *)(p) = (int8_t)(iv))
#define RS_STORE_i16(p, v, iv) (*(int16_t *)(p) = (int16_t)(iv))
#define RS_STORE_i32(p, v, iv) (*(int32_t *)(p) = (int32_t)(iv))
#define RS_STORE_i64(p, v, iv) (*(int64_t *)(p) = (iv))
#define RS_STORE_f16(p, v, iv) RS_F_f16(p, v)
#define RS_STORE_bf16(p, v, iv) RS_F_bf16(p, v)
#define RS_STORE_f32(p, v, iv) RS_F_f32(p, v)
#define RS_STORE_f64(p, v, iv) RS_F_f64(p, v)

#define DEF_SAMPLE(S, E, CT, K)                                                \
  static void em_sample_##S(char **data, const int64_t *st, int64_t n,         \
                            void *ctx) {                                       \
    const sample_ctx *c = ctx;                                                 \
    char *p = data[0];                                                         \
    const int64_t step = st[0];                                                \
    const uint64_t lanes = (uint64_t)c->lanes;                                 \
    uint64_t i = (uint64_t)((p - c->base) / c->itemsize);                      \
    value_batch bt;                                                            \
    bt.vfirst = bt.vend = 0;                                                   \
    bt.end = (i + (uint64_t)n + lanes - 1) / lanes;                            \
    for (int64_t k = 0; k < n; k++, p += step, i++) {                          \
      if (i < bt.vfirst || i >= bt.vend) fill_values(c, &bt, i / lanes);       \
      RS_STORE_##S(p, bt.v[i - bt.vfirst], bt.iv[i - bt.vfirst]);              \
    }                                                                          \
  }
EM_FOR_EACH_DTYPE(DEF_SAMPLE)
#define SAMPLE_ROW(S, E, CT, K) [E] = em_sample_##S,
static const em_loop1d sample_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(SAMPLE_ROW)};

/* Chunks of this many elements (a multiple of 4, so no block is split
** between chunks) run in parallel where OpenMP is built in; the numbers do
** not depend on it (each element draws from its index). */
enum { SAMPLE_GRAIN = 1 << 15 };

static void run_contiguous(em_tensor *t, sample_ctx *c) {
  int64_t n = em_tensor_numel(t);
  c->base = em_tensor_data(t);
  c->itemsize = (int64_t)em_dtype_size(t->dtype);
  c->ints = em_dtype_kindof(t->dtype) != EM_KIND_FLOAT;
  em_iter it;
  const em_tensor *ops[1] = {t};
  if (em_iter_build(&it, "sample", 1, ops, t->ndim, t->sizes, false) != EM_OK) return;
  em_loop1d loop = sample_loops[t->dtype];
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n > 4 * SAMPLE_GRAIN)
#endif
  for (int64_t b = 0; b < n; b += SAMPLE_GRAIN)
    em_iter_run_range(&it, b, b + SAMPLE_GRAIN < n ? b + SAMPLE_GRAIN : n, loop, c);
}

/* Fills t with c's sampler: directly when t is contiguous, else through a
** contiguous temporary copied in (so element i is always row-major i). */
static em_status sample_into_nograd(const char *op, em_tensor *t, sample_ctx *c) {
  if (em_has_internal_overlap(t))
    return em_fail(EM_E_VALUE,
                   "%s: unsupported operation: more than one element of the "
                   "written-to tensor refers to a single memory location "
                   "(an expanded tensor?); clone() it before writing", op);
  int64_t n = em_tensor_numel(t);
  c->lanes = lanes_for(c->kind, c->bits);
  c->offset = reserve(((uint64_t)n + (uint64_t)c->lanes - 1) / (uint64_t)c->lanes, c->key);
  if (n == 0) return EM_OK;
  if (em_tensor_is_contiguous(t)) {
    run_contiguous(t, c);
    em_storage_bump_version(t->storage);
    return EM_OK;
  }
  em_tensor *tmp;
  em_status st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &tmp);
  if (st != EM_OK) return st;
  run_contiguous(tmp, c);
  st = em_copy_(t, tmp);
  em_tensor_release(tmp);
  return st;
}

static int uniform_bits(em_dtype dt) {
  switch (dt) {
    case EM_FLOAT16: return 11;
    case EM_BFLOAT16: return 8;
    case EM_FLOAT32: return 24;
    default: return 53;
  }
}

static em_status need_float(const char *op, const em_tensor *t) {
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: expects a floating-point tensor, got ember.%s", op,
                   em_dtype_name(t->dtype));
  return EM_OK;
}

/* Autograd: filling a leaf that requires grad is an error in grad mode; a
** filled non-leaf gets no gradient from its old values (autograd.h). */
static em_status ag_fill(const char *op, em_tensor *t, int on) {
  if (!on || !t->requires_grad || em_dtype_kindof(t->dtype) != EM_KIND_FLOAT) return EM_OK;
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "FillBackward0";
  const em_tensor *in[1] = {t};
  return em_ag_record(EM_AG_OVERWRITE, 1, in, 1, &t, &p);
}

static em_status sample_into(const char *op, em_tensor *t, sample_ctx *c) {
  int on = em_grad_enabled();
  em_status st = on && t->requires_grad ? em_ag_check_inplace(op, t) : EM_OK;
  if (st == EM_OK) st = sample_into_nograd(op, t, c);
  if (st == EM_OK) st = ag_fill(op, t, on);
  return st;
}

em_status em_uniform_(em_tensor *t, double from, double to) {
  em_status st = need_float("uniform_", t);
  if (st != EM_OK) return st;
  if (!isfinite(from) || !isfinite(to))
    return em_fail(EM_E_VALUE, "uniform_: from and to must be finite, got from=%g, to=%g",
                   from, to);
  if (from > to)
    return em_fail(EM_E_VALUE,
                   "uniform_: expects to return a [from, to) range, but found "
                   "from=%g > to=%g", from, to);
  sample_ctx c = {0};
  c.kind = S_UNIFORM;
  c.bits = uniform_bits(t->dtype);
  c.scale = ldexp(1.0, -c.bits);
  c.a = from;
  c.b = to;
  return sample_into("uniform_", t, &c);
}

em_status em_normal_(em_tensor *t, double mean, double std) {
  em_status st = need_float("normal_", t);
  if (st != EM_OK) return st;
  if (!(std >= 0.0))
    return em_fail(EM_E_VALUE, "normal_: expects std >= 0.0, but found std %g", std);
  sample_ctx c = {0};
  c.kind = S_NORMAL;
  c.a = mean;
  c.b = std;
  return sample_into("normal_", t, &c);
}

em_status em_exponential_(em_tensor *t, double lambd) {
  em_status st = need_float("exponential_", t);
  if (st != EM_OK) return st;
  if (!(lambd >= 0.0))
    return em_fail(EM_E_VALUE, "exponential_: expects lambda >= 0.0, but found lambda=%g",
                   lambd);
  sample_ctx c = {0};
  c.kind = S_EXPONENTIAL;
  c.a = lambd;
  return sample_into("exponential_", t, &c);
}

/* The integers exactly representable in dt, as PyTorch bounds random_. */
static void dtype_int_range(em_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
    case EM_BOOL: *lo = 0; *hi = 1; break;
    case EM_UINT8: *lo = 0; *hi = UINT8_MAX; break;
    case EM_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case EM_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case EM_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case EM_FLOAT16: *lo = -(1 << 11); *hi = 1 << 11; break;
    case EM_BFLOAT16: *lo = -(1 << 8); *hi = 1 << 8; break;
    case EM_FLOAT32: *lo = -(1 << 24); *hi = 1 << 24; break;
    case EM_FLOAT64: *lo = -(INT64_C(1) << 53); *hi = INT64_C(1) << 53; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
  }
}

em_status em_random_(em_tensor *t, int64_t low, int64_t high) {
  if (low >= high)
    return em_fail(EM_E_VALUE,
                   "random_: expects 'from' to be less than 'to', but got from=%lld "
                   ">= to=%lld", (long long)low, (long long)high);
  int64_t lo, hi;
  dtype_int_range(t->dtype, &lo, &hi);
  if (low < lo || low > hi)
    return em_fail(EM_E_VALUE, "random_: from=%lld is out of bounds for ember.%s",
                   (long long)low, em_dtype_name(t->dtype));
  if (high - 1 > hi)
    return em_fail(EM_E_VALUE, "random_: to - 1 = %lld is out of bounds for ember.%s",
                   (long long)(high - 1), em_dtype_name(t->dtype));
  sample_ctx c = {0};
  c.kind = S_RANDOM;
  c.low = low;
  c.range = (uint64_t)high - (uint64_t)low;
  return sample_into("random_", t, &c);
}

em_status em_bernoulli_(em_tensor *t, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    return em_fail(EM_E_VALUE, "bernoulli_: expects p to be in [0, 1], but got p=%g", p);
  sample_ctx c = {0};
  c.kind = S_BERNOULLI;
  c.a = p;
  return sample_into("bernoulli_", t, &c);
}

/* -- bernoulli with a tensor of probabilities --------------------------------
** u (float64 uniforms, one per element of t) is compared with p broadcast
** to t's shape. */

typedef struct { int bad; double badv; } pcheck_ctx;

static void em_check_prob_f64(char **data, const int64_t *st, int64_t n, void *ctx) {
  pcheck_ctx *c = ctx;
  const char *p = data[0];
  for (int64_t k = 0; k < n; k++, p += st[0]) {
    double v = *(const double *)p;
    if (!(v >= 0.0 && v <= 1.0) && !c->bad) { c->bad = 1; c->badv = v; }
  }
}

/* u (in place) becomes 1.0 where u < p, else 0.0; the cast copy then
** writes it into t's dtype. */
static void em_bernoulli_lt_f64(char **data, const int64_t *st, int64_t n, void *ctx) {
  char *u = data[0];
  const char *p = data[1];
  (void)ctx;
  for (int64_t k = 0; k < n; k++, u += st[0], p += st[1])
    *(double *)u = *(const double *)u < *(const double *)p ? 1.0 : 0.0;
}

static em_status bernoulli_tensor_nograd(em_tensor *t, const em_tensor *p) {
  if (em_dtype_kindof(p->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "bernoulli_: expects floating-point probabilities, got ember.%s",
                   em_dtype_name(p->dtype));
  if (em_has_internal_overlap(t))
    return em_fail(EM_E_VALUE,
                   "bernoulli_: unsupported operation: more than one element of the "
                   "written-to tensor refers to a single memory location "
                   "(an expanded tensor?); clone() it before writing");
  em_tensor *pd = NULL, *u = NULL;
  em_status st = em_to(p, EM_FLOAT64, p->storage->device, 0, &pd);
  if (st != EM_OK) return st;
  /* check every probability before writing anything */
  em_iter it;
  const em_tensor *pops[1] = {pd};
  st = em_iter_build(&it, "bernoulli_", 1, pops, pd->ndim, pd->sizes, false);
  if (st != EM_OK) goto done;
  pcheck_ctx pc = {0, 0};
  if (it.numel > 0) em_iter_run(&it, em_check_prob_f64, &pc);
  if (pc.bad) {
    st = em_fail(EM_E_VALUE, "bernoulli_: expects all probabilities to be in [0, 1], got %g",
                 pc.badv);
    goto done;
  }
  st = em_empty(t->ndim, t->sizes, EM_FLOAT64, t->storage->device, &u);
  if (st != EM_OK) goto done;
  const em_tensor *ops[2] = {u, pd};
  st = em_iter_build(&it, "bernoulli_", 2, ops, t->ndim, t->sizes, false);
  if (st != EM_OK) goto done;
  st = em_uniform_(u, 0.0, 1.0);
  if (st != EM_OK) goto done;
  if (it.numel > 0) em_iter_run(&it, em_bernoulli_lt_f64, NULL);
  st = em_copy_(t, u);
done:
  em_tensor_release(pd);
  em_tensor_release(u);
  return st;
}

/* -- randperm ----------------------------------------------------------------
** Fisher-Yates from the top: step i (n-1 down to 1) swaps position i with
** a position drawn uniformly from [0, i] at counter offset + i. Sequential
** by nature, so the same on any thread count. */

em_status em_randperm(int64_t n, em_dtype dt, em_device dev, em_tensor **out) {
  if (n < 0)
    return em_fail(EM_E_VALUE, "randperm: n must be non-negative, got %lld", (long long)n);
  int64_t lo, hi;
  dtype_int_range(dt, &lo, &hi);
  if (dt == EM_BOOL ? n > 1 : n > hi)
    return em_fail(EM_E_VALUE, "randperm: n = %lld is too large for ember.%s",
                   (long long)n, em_dtype_name(dt));
  em_tensor *perm;
  em_status st = em_empty(1, &n, EM_INT64, dev, &perm);
  if (st != EM_OK) return st;
  int64_t *a = em_tensor_data(perm);
  uint32_t key[2];
  uint64_t off = reserve((uint64_t)n, key);
  for (int64_t i = 0; i < n; i++) a[i] = i + 1;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)bounded(off + (uint64_t)i, (uint64_t)i + 1, key);
    int64_t tmp = a[i]; a[i] = a[j]; a[j] = tmp;
  }
  if (dt == EM_INT64) { *out = perm; return EM_OK; }
  st = em_to(perm, dt, dev, 0, out);
  em_tensor_release(perm);
  return st;
}

/* -- multinomial ------------------------------------------------------------
** Rows are read from a contiguous float64 copy. With replacement, sample s
** of row r inverts the row's cumulative sums at a uniform drawn at counter
** offset + r * n + s. Without replacement, category j of row r gets the
** key p_j / E_j, E_j exponential at counter offset + r * C + j (the
** exponential-race form of sampling without replacement, which PyTorch
** uses too); the n largest keys win, ties to the lower index. */

typedef struct { double key; int64_t idx; } mn_key;

static int mn_cmp(const void *a, const void *b) {
  const mn_key *x = a, *y = b;
  if (x->key > y->key) return -1;
  if (x->key < y->key) return 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

em_status em_multinomial(const em_tensor *probs, int64_t n, int replacement,
                         em_tensor **out) {
  if (probs->ndim != 1 && probs->ndim != 2)
    return em_fail(EM_E_VALUE, "multinomial: prob_dist must be 1 or 2 dim, got %d dims",
                   probs->ndim);
  if (em_dtype_kindof(probs->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE,
                   "multinomial: only supports floating-point dtypes for input, got ember.%s",
                   em_dtype_name(probs->dtype));
  if (n <= 0)
    return em_fail(EM_E_VALUE, "multinomial: cannot sample n_sample <= 0 samples (got %lld)",
                   (long long)n);
  int64_t rows = probs->ndim == 2 ? probs->sizes[0] : 1;
  int64_t cats = probs->sizes[probs->ndim - 1];
  if (cats == 0)
    return em_fail(EM_E_VALUE, "multinomial: the number of categories cannot be zero");
  if (!replacement && n > cats)
    return em_fail(EM_E_VALUE,
                   "multinomial: cannot sample n_sample (%lld) > prob_dist.size(-1) (%lld) "
                   "samples without replacement", (long long)n, (long long)cats);
  em_tensor *pd, *res;
  em_status st = em_to(probs, EM_FLOAT64, probs->storage->device, 1, &pd);
  if (st != EM_OK) return st;
  int64_t osz[2] = {rows, n};
  st = probs->ndim == 2 ? em_empty(2, osz, EM_INT64, probs->storage->device, &res)
                        : em_empty(1, &n, EM_INT64, probs->storage->device, &res);
  if (st != EM_OK) { em_tensor_release(pd); return st; }
  const double *P = em_tensor_data(pd);
  int64_t *R = em_tensor_data(res);
  /* validate every row before drawing */
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0;
    for (int64_t j = 0; j < cats; j++) {
      double v = P[r * cats + j];
      if (!(v >= 0.0) || isinf(v)) {
        st = em_fail(EM_E_VALUE, "multinomial: probability tensor contains either "
                     "`inf`, `nan` or element < 0");
        goto fail;
      }
      sum += v;
    }
    if (!(sum > 0.0)) {
      st = em_fail(EM_E_VALUE, "multinomial: invalid multinomial distribution "
                   "(sum of probabilities <= 0)");
      goto fail;
    }
  }
  uint32_t key[2], w[4];
  if (replacement) {
    uint64_t off = reserve((uint64_t)(rows * n), key);
    double *cdf = malloc((size_t)cats * sizeof *cdf);
    if (!cdf) { st = em_fail(EM_E_NOMEM, "multinomial: out of memory"); goto fail; }
    for (int64_t r = 0; r < rows; r++) {
      const double *p = P + r * cats;
      double acc = 0;
      int64_t last = 0;
      for (int64_t j = 0; j < cats; j++) {
        acc += p[j];
        cdf[j] = acc;
        if (p[j] > 0) last = j;
      }
      for (int64_t s = 0; s < n; s++) {
        block(off + (uint64_t)(r * n + s), 0, key, w);
        double u = u53(w[0], w[1]) * acc;
        /* the first category whose cumulative sum exceeds u */
        int64_t lo = 0, hi = cats - 1;
        while (lo < hi) {
          int64_t mid = lo + (hi - lo) / 2;
          if (cdf[mid] > u) hi = mid; else lo = mid + 1;
        }
        if (!(cdf[lo] > u)) lo = last;  /* u rounded up to the total */
        R[r * n + s] = lo + 1;
      }
    }
    free(cdf);
  } else {
    uint64_t off = reserve((uint64_t)(rows * cats), key);
    mn_key *keys = malloc((size_t)cats * sizeof *keys);
    if (!keys) { st = em_fail(EM_E_NOMEM, "multinomial: out of memory"); goto fail; }
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t j = 0; j < cats; j++) {
        block(off + (uint64_t)(r * cats + j), 0, key, w);
        double e = -log1p(-u53(w[0], w[1]));  /* Exp(1); 0 only when u = 0 */
        double p = P[r * cats + j];
        keys[j].key = p == 0.0 ? 0.0 : (e > 0 ? p / e : INFINITY);
        keys[j].idx = j;
      }
      qsort(keys, (size_t)cats, sizeof *keys, mn_cmp);
      for (int64_t s = 0; s < n; s++) R[r * n + s] = keys[s].idx + 1;
    }
    free(keys);
  }
  em_tensor_release(pd);
  *out = res;
  return EM_OK;
fail:
  em_tensor_release(pd);
  em_tensor_release(res);
  return st;
}

em_status em_bernoulli_tensor_(em_tensor *t, const em_tensor *p) {
  int on = em_ag_pause();
  em_status st = on && t->requires_grad ? em_ag_check_inplace("bernoulli_", t) : EM_OK;
  if (st == EM_OK) st = bernoulli_tensor_nograd(t, p);
  em_ag_resume(on);
  if (st == EM_OK) st = ag_fill("bernoulli_", t, on);
  return st;
}
