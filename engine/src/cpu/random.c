/*
** cpu/random.c -- the random family of the CPU's kernels
** (core/kern_random.h): Philox4x32-10 and the samplers' loops.
** Every number an operation draws for element i (row-major, 0-based) comes
** from lane i % L of the block Philox(counter = (offset + i / L, draw, 0),
** key = seed), L elements per block (em_sample_lanes), so the numbers do
** not depend on the layout or the thread count. Algorithms
** (docs/random.md): uniform floats take the top mantissa-many bits of a
** word (k / 2^bits, so [0, 1) never rounds up to 1); normals use Box-Muller
** on two 53-bit uniforms (cos and sin halves for the two lanes); integers
** use Lemire's multiply-shift with rejection (no modulo bias), a rejected
** draw moving to the next "draw" counter of the same element.
*/
#include "core/kern_random.h"
#include "cpu/omp_if.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ember.h's Philox (the known-answer tests call it): the kernels' rounds. */
void em_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  philox10(ctr, key, out);
}

/* The block for element index idx, draw number d. */
static inline void block(uint64_t idx, uint32_t d, const uint32_t key[2], uint32_t out[4]) {
  const uint32_t ctr[4] = {(uint32_t)idx, (uint32_t)(idx >> 32), d, 0};
  philox10(ctr, key, out);
}

/* nb <= PB consecutive blocks (indices first .. first + nb - 1, draw 0)
** at once: the same ten rounds as philox10, several blocks per vector
** instruction (32 x 32 -> 64-bit multiplies are vector instructions from
** SSE2 on). The words are the ones block() gives, word j of block
** first + b at w[b][j]. */
enum { PB = EM_PHILOX_BATCH };

/* The portable form: the PB counters as struct-of-arrays, round by round,
** which the compiler vectorises with SSE2 (32 x 32 -> 64-bit multiplies). */
static void philox_blocks_base(uint64_t first, int nb, const uint32_t key[2], uint32_t w[PB][4]) {
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


#if defined(__x86_64__) && defined(__GNUC__) && !defined(EMBER_NO_CLONES)
#include <immintrin.h>
#define EM_PHILOX_AVX2 1
/* AVX2: 16 blocks at a time as two independent groups of 8 (one group's
** ten rounds are a chain of dependent multiplies; two hide the latency),
** the whole state in registers through the ten rounds, then a 4 x 8
** transpose per group into w[b][j]. The same integer rounds as above, so
** the same words (test_random compares them); 3x the portable form's
** speed on the Zen 4 VM (3.5 against 10 ns per block, standalone). */
__attribute__((target("avx2"))) static inline void mulhilo(__m256i a, __m256i m, __m256i *hi, __m256i *lo) {
  __m256i e = _mm256_mul_epu32(a, m);
  __m256i o = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(e, 32), o, 0xAA);
  *lo = _mm256_blend_epi32(e, _mm256_slli_epi64(o, 32), 0xAA);
}
__attribute__((target("avx2"))) static void philox16(uint64_t first, const uint32_t key[2], uint32_t w[16][4]) {
  uint32_t lo[16], hi[16];
  for (int b = 0; b < 16; b++) { uint64_t idx = first + (uint64_t)b; lo[b] = (uint32_t)idx; hi[b] = (uint32_t)(idx >> 32); }
  __m256i a0 = _mm256_loadu_si256((const __m256i *)lo), a1 = _mm256_loadu_si256((const __m256i *)hi);
  __m256i b0 = _mm256_loadu_si256((const __m256i *)(lo + 8)), b1 = _mm256_loadu_si256((const __m256i *)(hi + 8));
  __m256i a2 = _mm256_setzero_si256(), a3 = a2, b2 = a2, b3 = a2;
  const __m256i M0 = _mm256_set1_epi32((int)0xD2511F53u), M1 = _mm256_set1_epi32((int)0xCD9E8D57u);
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    __m256i K0 = _mm256_set1_epi32((int)k0), K1 = _mm256_set1_epi32((int)k1);
    __m256i ah0, al0, ah1, al1, bh0, bl0, bh1, bl1;
    mulhilo(a0, M0, &ah0, &al0); mulhilo(b0, M0, &bh0, &bl0);
    mulhilo(a2, M1, &ah1, &al1); mulhilo(b2, M1, &bh1, &bl1);
    __m256i an0 = _mm256_xor_si256(_mm256_xor_si256(ah1, a1), K0), bn0 = _mm256_xor_si256(_mm256_xor_si256(bh1, b1), K0);
    __m256i an2 = _mm256_xor_si256(_mm256_xor_si256(ah0, a3), K1), bn2 = _mm256_xor_si256(_mm256_xor_si256(bh0, b3), K1);
    a1 = al1; a3 = al0; a0 = an0; a2 = an2;
    b1 = bl1; b3 = bl0; b0 = bn0; b2 = bn2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
#define PHILOX_STORE8(c0, c1, c2, c3, W) do { \
  __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1); \
  __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3); \
  __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2); \
  __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3); \
  _mm256_storeu_si256((__m256i *)(W)[0], _mm256_permute2x128_si256(u0, u1, 0x20)); \
  _mm256_storeu_si256((__m256i *)(W)[2], _mm256_permute2x128_si256(u2, u3, 0x20)); \
  _mm256_storeu_si256((__m256i *)(W)[4], _mm256_permute2x128_si256(u0, u1, 0x31)); \
  _mm256_storeu_si256((__m256i *)(W)[6], _mm256_permute2x128_si256(u2, u3, 0x31)); } while (0)
  PHILOX_STORE8(a0, a1, a2, a3, w);
  PHILOX_STORE8(b0, b1, b2, b3, w + 8);
}
#undef PHILOX_STORE8
#endif

static void philox_blocks(uint64_t first, int nb, const uint32_t key[2], uint32_t w[PB][4]) {
#ifdef EM_PHILOX_AVX2
  static int avx2 = -1;
  if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  if (avx2) {
    int b = 0;
    for (; b + 16 <= nb; b += 16) philox16(first + (uint64_t)b, key, w + b);
    if (b < nb) {
      uint32_t t[16][4];
      philox16(first + (uint64_t)b, key, t);
      memcpy(w + b, t, sizeof t[0] * (size_t)(nb - b));
    }
    return;
  }
#endif
  philox_blocks_base(first, nb, key, w);
}

void em_philox_blocks(uint64_t first, int nb, const uint32_t key[2], uint32_t w[][4]) {
  philox_blocks(first, nb, key, w);
}

/* -- Bits to numbers ----------------------------------------------------- */

/* the 53 bits of a word pair that u53 scales */
static inline uint64_t m53(uint32_t hi, uint32_t lo) { return (((uint64_t)hi << 32) | lo) >> 11; }

static inline double u53(uint32_t hi, uint32_t lo) {  /* [0, 1) */
  return (double)m53(hi, lo) * 0x1p-53;
}

/* bernoulli's test u53(hi, lo) < a on the integers: u53 is m53 * 2^-53
** exactly, so it is below a exactly when m53 < ceil(a 2^53) */
static inline uint64_t bern_bound(double a) {
  return a >= 1 ? (uint64_t)1 << 53 : a > 0 ? (uint64_t)ceil(a * 0x1p53) : 0;
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

typedef struct {
  const char *base;
  int64_t itemsize;
  uint64_t offset;   /* first block of this operation */
  uint32_t key[2];
  em_sampler kind;
  int lanes;         /* elements per block: 4, 2 or 1 */
  int ints;          /* integer or bool destination: the values' int64 too */
  int bits;          /* uniform bits for the dtype (24 float32, 53 float64, ...) */
  double scale;      /* 2^-bits */
  double a, b;       /* uniform from/to; normal mean/std; exponential lambda; p */
  int64_t low;       /* random_ */
  uint64_t range;
} sample_ctx;

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
  if (c->kind == EM_SAMPLE_RANDOM) {
    for (int j = 0; j < nb; j++) {
      bt->iv[j] = (int64_t)((uint64_t)c->low + bounded(c->offset + b + (uint64_t)j, c->range, c->key));
      v[j] = (double)bt->iv[j];
    }
  } else {
    uint32_t (*w)[4] = bt->w;
    philox_blocks(c->offset + b, nb, c->key, w);
    const double a = c->a, span = c->b - c->a;
    switch (c->kind) {
      case EM_SAMPLE_UNIFORM:
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
      case EM_SAMPLE_NORMAL:
        /* Box-Muller: both halves of the pair, cos for lane 0, sin for lane 1 */
        for (int j = 0; j < nb; j++) {
          double u1 = 1.0 - u53(w[j][0], w[j][1]);  /* (0, 1]: log is finite */
          double u2 = u53(w[j][2], w[j][3]);
          double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
          v[2 * j] = c->a + c->b * (r * cos(th));
          v[2 * j + 1] = c->a + c->b * (r * sin(th));
        }
        break;
      case EM_SAMPLE_EXPONENTIAL:
        for (int j = 0; j < nb; j++) {
          v[2 * j] = -log1p(-u53(w[j][0], w[j][1])) / c->a;
          v[2 * j + 1] = -log1p(-u53(w[j][2], w[j][3])) / c->a;
        }
        break;
      default: { /* EM_SAMPLE_BERNOULLI */
        const uint64_t k = bern_bound(a);
        for (int j = 0; j < nb; j++) {
          v[2 * j] = m53(w[j][0], w[j][1]) < k ? 1.0 : 0.0;
          v[2 * j + 1] = m53(w[j][2], w[j][3]) < k ? 1.0 : 0.0;
        }
        break;
      }
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

/* bernoulli (scalar p) into float32, unit stride: the words of the blocks
** straight to 0 and 1, without fill_values' doubles (the dropout masks'
** loop); element i is lane i % 2 of block i / 2, as em_sample_f32 has it,
** and the test is fill_values' integer one, so the values are its values */
static void em_sample_bern_f32(char **data, const int64_t *st, int64_t n, void *ctx) {
  const sample_ctx *c = ctx;
  if (st[0] != (int64_t)sizeof(float)) {
    em_sample_f32(data, st, n, ctx);
    return;
  }
  float *p = (float *)data[0];
  uint64_t i = (uint64_t)((data[0] - c->base) / c->itemsize);
  const uint64_t end = i + (uint64_t)n;
  const uint64_t k = bern_bound(c->a);
  uint32_t w[PB][4];
  while (i < end) {
    const uint64_t b = i / 2, left = (end - 1) / 2 - b + 1;
    const int nb = left < PB ? (int)left : PB;
    philox_blocks(c->offset + b, nb, c->key, w);
    const uint64_t stop = (b + (uint64_t)nb) * 2 < end ? (b + (uint64_t)nb) * 2 : end;
    int j = 0;
    if (i & 1) { /* lane 1 of the first block */
      *p++ = m53(w[0][2], w[0][3]) < k ? 1.0f : 0.0f;
      i++;
      j = 1;
    }
    const int pairs = (int)((stop - i) / 2);
    for (int q = 0; q < pairs; q++, j++) { /* both lanes of block j */
      p[2 * q] = m53(w[j][0], w[j][1]) < k ? 1.0f : 0.0f;
      p[2 * q + 1] = m53(w[j][2], w[j][3]) < k ? 1.0f : 0.0f;
    }
    p += 2 * pairs;
    i += 2 * (uint64_t)pairs;
    if (i < stop) { /* lane 0 of the last block */
      *p++ = m53(w[j][0], w[j][1]) < k ? 1.0f : 0.0f;
      i++;
    }
  }
}

/* Chunks of this many elements (a multiple of 4, so no block is split
** between chunks) run in parallel where OpenMP is built in; the numbers do
** not depend on it (each element draws from its index). */
enum { SAMPLE_GRAIN = 1 << 15 };

static int uniform_bits(em_dtype dt) {
  switch (dt) {
    case EM_FLOAT16: return 11;
    case EM_BFLOAT16: return 8;
    case EM_FLOAT32: return 24;
    default: return 53;
  }
}

static void cpu_sample(const em_iter *it, em_dtype dt, const em_sample *s) {
  int64_t n = it->numel;
  if (n == 0) return;
  sample_ctx c = {0};
  c.base = it->data[0];
  c.itemsize = (int64_t)em_dtype_size(dt);
  c.offset = s->draw.offset;
  c.key[0] = s->draw.key[0];
  c.key[1] = s->draw.key[1];
  c.kind = s->kind;
  c.lanes = em_sample_lanes(s->kind, dt);
  c.ints = em_dtype_kindof(dt) != EM_KIND_FLOAT;
  if (s->kind == EM_SAMPLE_UNIFORM) {
    c.bits = uniform_bits(dt);
    c.scale = ldexp(1.0, -c.bits);
  }
  c.a = s->a;
  c.b = s->b;
  c.low = s->low;
  c.range = s->range;
  em_loop1d loop = sample_loops[dt];
  if (s->kind == EM_SAMPLE_BERNOULLI && dt == EM_FLOAT32 && c.lanes == 2) loop = em_sample_bern_f32;
  /* a small sample, or one thread, does not enter the OpenMP runtime at
  ** all: a team of one still costs a futex call per region (cpu/omp_if.h) */
  int nt = 1;
#ifdef _OPENMP
  if (n > 4 * SAMPLE_GRAIN && !omp_in_parallel()) nt = omp_get_max_threads();
#endif
  EM_OMP_IF(nt > 1, parallel for schedule(static) num_threads(nt),
  for (int64_t b = 0; b < n; b += SAMPLE_GRAIN)
    em_iter_run_range(it, b, b + SAMPLE_GRAIN < n ? b + SAMPLE_GRAIN : n, loop, &c););
}

/* -- bernoulli with a tensor of probabilities -------------------------------- */

typedef struct { int bad; double badv; } pcheck_ctx;

static void em_check_prob_f64(char **data, const int64_t *st, int64_t n, void *ctx) {
  pcheck_ctx *c = ctx;
  const char *p = data[0];
  for (int64_t k = 0; k < n; k++, p += st[0]) {
    double v = *(const double *)p;
    if (!(v >= 0.0 && v <= 1.0) && !c->bad) { c->bad = 1; c->badv = v; }
  }
}

static int cpu_prob_check(const em_iter *it, double *bad) {
  pcheck_ctx pc = {0, 0};
  if (it->numel > 0) em_iter_run(it, em_check_prob_f64, &pc);
  if (pc.bad) *bad = pc.badv;
  return pc.bad;
}

/* u (in place) becomes 1.0 where u < p, else 0.0; the op's cast copy then
** writes it into the destination's dtype. */
static void em_bernoulli_lt_f64(char **data, const int64_t *st, int64_t n, void *ctx) {
  char *u = data[0];
  const char *p = data[1];
  (void)ctx;
  for (int64_t k = 0; k < n; k++, u += st[0], p += st[1])
    *(double *)u = *(const double *)u < *(const double *)p ? 1.0 : 0.0;
}

static void cpu_bernoulli_lt(const em_iter *it) {
  if (it->numel > 0) em_iter_run(it, em_bernoulli_lt_f64, NULL);
}

/* -- randperm ----------------------------------------------------------------
** Sequential by nature, so the same on any thread count. */

static void cpu_randperm(em_tensor *perm, const em_draw *d) {
  int64_t n = em_tensor_numel(perm);
  int64_t *a = em_tensor_data(perm);
  for (int64_t i = 0; i < n; i++) a[i] = i + 1;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)bounded(d->offset + (uint64_t)i, (uint64_t)i + 1, d->key);
    int64_t tmp = a[i]; a[i] = a[j]; a[j] = tmp;
  }
}

/* -- multinomial ------------------------------------------------------------
** The exponential-race form of sampling without replacement is PyTorch's
** too. */

typedef struct { double key; int64_t idx; } mn_key;

static int mn_cmp(const void *a, const void *b) {
  const mn_key *x = a, *y = b;
  if (x->key > y->key) return -1;
  if (x->key < y->key) return 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static em_prob_check cpu_multinomial_check(const em_tensor *probs) {
  int64_t rows = probs->ndim == 2 ? probs->sizes[0] : 1;
  int64_t cats = probs->sizes[probs->ndim - 1];
  const double *P = em_tensor_data(probs);
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0;
    for (int64_t j = 0; j < cats; j++) {
      double v = P[r * cats + j];
      if (!(v >= 0.0) || isinf(v)) return EM_PROBS_BAD_VALUE;
      sum += v;
    }
    if (!(sum > 0.0)) return EM_PROBS_ZERO_SUM;
  }
  return EM_PROBS_OK;
}

static em_status cpu_multinomial(const em_tensor *probs, em_tensor *out, int replacement,
                                 const em_draw *d) {
  int64_t rows = probs->ndim == 2 ? probs->sizes[0] : 1;
  int64_t cats = probs->sizes[probs->ndim - 1];
  int64_t n = out->sizes[out->ndim - 1];
  const double *P = em_tensor_data(probs);
  int64_t *R = em_tensor_data(out);
  uint32_t w[4];
  if (replacement) {
    double *cdf = malloc((size_t)cats * sizeof *cdf);
    if (!cdf) return em_fail(EM_E_NOMEM, "multinomial: out of memory");
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
        block(d->offset + (uint64_t)(r * n + s), 0, d->key, w);
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
    mn_key *keys = malloc((size_t)cats * sizeof *keys);
    if (!keys) return em_fail(EM_E_NOMEM, "multinomial: out of memory");
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t j = 0; j < cats; j++) {
        block(d->offset + (uint64_t)(r * cats + j), 0, d->key, w);
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
  return EM_OK;
}

const em_random_kernels em_cpu_random_kernels = {
    .sample = cpu_sample,
    .prob_check = cpu_prob_check,
    .bernoulli_lt = cpu_bernoulli_lt,
    .randperm = cpu_randperm,
    .multinomial_check = cpu_multinomial_check,
    .multinomial = cpu_multinomial,
};
