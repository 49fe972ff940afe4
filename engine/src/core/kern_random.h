/*
** kern_random.h -- the random family of the kernel table (core/kernels.h):
** the samplers' value work. The generator (seed, offset) and its
** bookkeeping are the ops' (ops/random.c): an op checks its arguments,
** reserves the counters its result needs, allocates, and hands the kernel
** the key and the first counter (em_draw). A kernel turns counters into
** numbers with Philox4x32-10 and the algorithms of docs/random.md, so every
** device gives the same numbers for the same draw.
*/
#ifndef EMBER_KERN_RANDOM_H
#define EMBER_KERN_RANDOM_H

#include "core/iter.h"

/* The counters reserved for one operation: Philox's key (the seed's low
** and high words) and the first counter (block index) of the reservation. */
typedef struct em_draw {
  uint32_t key[2];
  uint64_t offset;
} em_draw;

/* Reserves n blocks of the generator for an op whose kernel draws inside
** it (scaled_dot_product_attention's dropout): the key and first block in
** *d (ops/random.c; nothing is drawn on a device without data). */
void em_random_reserve(em_device dev, uint64_t n, em_draw *d);
/* Fills the contiguous float32 t with the uniforms of the reserved draw d
** (element i: lane i % 4 of block d->offset + i / 4, the sampler's rule),
** reserving nothing: an op that reserved counters for a fused kernel can
** compose the same numbers from the device's sampler (ops/attention_math.c). */
em_status em_uniform_draw_(em_tensor *t, const em_draw *d);

/* The words of nb <= EM_PHILOX_BATCH consecutive blocks first, first + 1,
** ... (counter (index, draw 0), key): word j of block first + b at
** w[b][j], as em_philox4x32_10 gives them, computed several blocks at a
** time in vector registers (cpu/random.c). */
enum { EM_PHILOX_BATCH = 32 };
void em_philox_blocks(uint64_t first, int nb, const uint32_t key[2], uint32_t w[][4]);

typedef enum em_sampler {
  EM_SAMPLE_UNIFORM,     /* a + (b - a) * U[0, 1) */
  EM_SAMPLE_NORMAL,      /* mean a, std b (Box-Muller) */
  EM_SAMPLE_EXPONENTIAL, /* rate a */
  EM_SAMPLE_RANDOM,      /* integers in [low, low + range) (Lemire) */
  EM_SAMPLE_BERNOULLI    /* 1 with probability a, else 0 */
} em_sampler;

typedef struct em_sample {
  em_sampler kind;
  em_draw draw;
  double a, b;
  int64_t low;
  uint64_t range;        /* > 0 */
} em_sample;

/* Elements per Philox block (docs/random.md): element i of a sample draws
** from block draw.offset + i / lanes, so an op reserves
** ceil(numel / lanes) blocks. Four for uniforms of float32 and narrower,
** one for integers drawn by random_, else two. */
static inline int em_sample_lanes(em_sampler kind, em_dtype dt) {
  if (kind == EM_SAMPLE_RANDOM) return 1;
  if (kind == EM_SAMPLE_UNIFORM && (dt == EM_FLOAT32 || dt == EM_FLOAT16 || dt == EM_BFLOAT16))
    return 4;
  return 2;
}

/* What multinomial_check finds in a probability tensor. */
typedef enum em_prob_check {
  EM_PROBS_OK,
  EM_PROBS_BAD_VALUE, /* some value is inf, NaN or < 0 */
  EM_PROBS_ZERO_SUM   /* some row sums to <= 0 */
} em_prob_check;

typedef struct em_random_kernels {
  /* Operand 0 of it (dtype dt; one contiguous tensor, so its element i,
  ** row-major, lies i elements past it->data[0]) = the samples of s, each
  ** element from its own counters. The op has checked that dt suits the
  ** sampler (floating for uniform/normal/exponential; random_'s range fits
  ** dt) and reserved ceil(numel / em_sample_lanes) blocks. it->numel may
  ** be 0. */
  void (*sample)(const em_iter *it, em_dtype dt, const em_sample *s);
  /* 1 when some element of operand 0 of it (float64) is not in [0, 1]
  ** (NaN included), with the first one met in *bad; else 0. Reads only. */
  int (*prob_check)(const em_iter *it, double *bad);
  /* Operand 0 of it (float64 uniforms) becomes 1.0 where it is below
  ** operand 1 (float64 probabilities, broadcast to it), else 0.0. */
  void (*bernoulli_lt)(const em_iter *it);
  /* perm (contiguous int64, n elements) = a random permutation of 1..n:
  ** Fisher-Yates from the top, step i (n-1 down to 1) swapping position i
  ** with one drawn uniformly from [0, i] at counter d->offset + i. */
  void (*randperm)(em_tensor *perm, const em_draw *d);
  /* Checks every row of probs (contiguous float64, [cats] or [rows, cats],
  ** cats >= 1) before anything is drawn. */
  em_prob_check (*multinomial_check)(const em_tensor *probs);
  /* out (contiguous int64, [n] or [rows, n], as probs) = n 1-based
  ** categories per row of probs (checked by multinomial_check). With
  ** replacement, sample s of row r inverts the row's cumulative sums at a
  ** uniform drawn at counter d->offset + r * n + s; without (n <= cats),
  ** the n largest keys p_j / E_j win, E_j exponential at counter
  ** d->offset + r * cats + j, ties to the lower index. Fails (EM_E_NOMEM)
  ** only when scratch memory cannot be had. */
  em_status (*multinomial)(const em_tensor *probs, em_tensor *out, int replacement,
                           const em_draw *d);
} em_random_kernels;

extern const em_random_kernels em_cpu_random_kernels, em_meta_random_kernels;

#endif
