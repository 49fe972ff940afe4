/*
** cpu/vreduce.c -- float32 reductions in float lanes (vreduce.h says what
** holds).
**
** Every loop is a plain indexed loop over a small array of lanes, which
** GCC keeps in vector registers (4 AVX2 registers of 8 floats for 32
** lanes). Each entry is cloned for AVX2 and baseline x86-64
** (target_clones); the helpers are forced inline so that each clone gets
** its own vectorised copy. Neither clone may fuse a multiply and an add,
** so both give the same bits. Built with -fno-trapping-math (as
** cpu/vecmath.c) so that the NaN-aware selects if-convert.
*/
#include "vreduce.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(EMBER_NO_CLONES)
#define EM_VEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EM_VEC_CLONES
#endif
#define AI static inline __attribute__((always_inline))
/* the helpers taking and returning vectors are always inlined: no ABI */
#pragma GCC diagnostic ignored "-Wpsabi"

enum {
  VW = 32,                   /* float lanes: 4 vectors of 8 */
  MOM_PIECE = 8192,          /* moments: elements per two-pass piece (32 KB) */
  ROW_CB = 2048,             /* rows: columns per strip (8 KB of floats) */
  ROW_VCB = 512,             /* rows, variance: columns per strip */
  ROW_B = 16,                /* rows: rows summed in float per block */
  ROW_VB = 32                /* rows: rows per variance block */
};

/* GCC's vector extensions: 8 floats, 8 int32 masks, 4 and 8 doubles.
** Their operations are lane-wise IEEE operations, whatever the target. */
typedef float vf __attribute__((vector_size(32)));
typedef int32_t vi __attribute__((vector_size(32)));
typedef double vd __attribute__((vector_size(32)));
typedef double vd8 __attribute__((vector_size(64)));

AI vf ldu(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
/* 8 floats as 8 doubles (GCC converts 8 to 8 in whole registers; 4 to 4
** it splits) */
AI void ldu_d8(const float *p, vd *lo, vd *hi) {
  vd8 d = __builtin_convertvector(ldu(p), vd8);
  *lo = __builtin_shufflevector(d, d, 0, 1, 2, 3);
  *hi = __builtin_shufflevector(d, d, 4, 5, 6, 7);
}
AI vf vsplat(float x) { return (vf){x, x, x, x, x, x, x, x}; }
#define vabs(v) ((vf)((vi)(v) & 0x7fffffff))
/* m ? a : b, lane-wise (m all ones or all zeros) */
#define vsel(m, a, b) ((vf)(((vi)(a) & (m)) | ((vi)(b) & ~(m))))
/* the lanes of v added in a fixed tree */
#define HSUM(v) ((((v)[0] + (v)[4]) + ((v)[2] + (v)[6])) + (((v)[1] + (v)[5]) + ((v)[3] + (v)[7])))

/* The streaming loops (sums, extremes, products) prefetch the 512 bytes
** 8 KB ahead of what they read: 16M floats from memory, medians of 40
** alternating runs on the Zen 5 EPYC of 2026-12-06, sum 1.41 -> 1.35 ms,
** max 1.61 -> 1.46, product 1.43 -> 1.36 (1 KB and 16 KB ahead gained
** less). Prefetches past the end of the data do not fault. */
#ifndef VRED_PF
#define VRED_PF 2048
#endif
/* prefetch the 256 (512) bytes VRED_PF floats ahead of q */
#define PF256(q)                                                               \
  do {                                                                         \
    if (VRED_PF)                                                               \
      for (int c_ = 0; c_ < 4; c_++) __builtin_prefetch((q) + VRED_PF + 16 * c_, 0, 0); \
  } while (0)
#define PF512(q)                                                               \
  do {                                                                         \
    if (VRED_PF)                                                               \
      for (int c_ = 0; c_ < 8; c_++) __builtin_prefetch((q) + VRED_PF + 16 * c_, 0, 0); \
  } while (0)

#define F_X(x) (x)
#define F_SQ(x) ((x) * (x))
#define F_ABS(x) fabsf(x)
#define V_X(v) (v)
#define V_SQ(v) ((v) * (v))
#define V_ABS(v) vabs(v)

/* -- Cascade sums ------------------------------------------------------------
** block: up to 512 elements in 4 x 8 lanes (a full block adds 4 pairwise
** sums of 4 elements into each lane), the 4 vectors folded pairwise.
** leaf: n <= EM_VRED_LEAF = 4 blocks, their vectors added pairwise, the 8
** lanes folded in a fixed tree, the tail added in order. cascade: leaves
** combined by a binary counter (leaf 2j+1 joins leaf 2j, then pairs of
** pairs, ...) in double. */
#define DEF_CASCADE(NAME, F, V)                                                \
  /* n <= 512 elements into one vector of 8 lanes; *i: how far it got */     \
  AI vf block_##NAME(const float *p, int64_t n, int64_t *i) {                \
    vf a0 = vsplat(0), a1 = a0, a2 = a0, a3 = a0;                            \
    int64_t k = *i;                                                          \
    for (; k + 4 * VW <= n; k += 4 * VW) {                                   \
      const float *q = p + k;                                                \
      PF512(q);                                                              \
      a0 += (V(ldu(q)) + V(ldu(q + 8))) + (V(ldu(q + 16)) + V(ldu(q + 24))); \
      a1 += (V(ldu(q + 32)) + V(ldu(q + 40))) + (V(ldu(q + 48)) + V(ldu(q + 56))); \
      a2 += (V(ldu(q + 64)) + V(ldu(q + 72))) + (V(ldu(q + 80)) + V(ldu(q + 88))); \
      a3 += (V(ldu(q + 96)) + V(ldu(q + 104))) + (V(ldu(q + 112)) + V(ldu(q + 120))); \
    }                                                                        \
    for (; k + VW <= n; k += VW) {                                           \
      a0 += V(ldu(p + k));                                                   \
      a1 += V(ldu(p + k + 8));                                               \
      a2 += V(ldu(p + k + 16));                                              \
      a3 += V(ldu(p + k + 24));                                              \
    }                                                                        \
    *i = k;                                                                  \
    return (a0 + a2) + (a1 + a3);                                            \
  }                                                                          \
  AI float leaf_##NAME(const float *p, int64_t n) {                          \
    vf t[4] = {vsplat(0), vsplat(0), vsplat(0), vsplat(0)};                  \
    int64_t i = 0;                                                           \
    for (int b = 0; b < 4 && i + VW <= n; b++) {                             \
      int64_t end = i + EM_VRED_BLOCK < n ? i + EM_VRED_BLOCK : n;           \
      t[b] = block_##NAME(p, end, &i);                                       \
    }                                                                        \
    vf tt = (t[0] + t[1]) + (t[2] + t[3]);                                   \
    float s = HSUM(tt);                                                      \
    for (; i < n; i++) s += F(p[i]);                                         \
    return s;                                                                \
  }                                                                          \
  AI double cascade_##NAME(const float *p, int64_t n) {                      \
    double stack[64]; /* one entry per bit of the leaf count */              \
    int depth = 0;                                                           \
    uint64_t count = 0;                                                      \
    int64_t i = 0;                                                           \
    for (; n - i >= EM_VRED_LEAF; i += EM_VRED_LEAF) {                       \
      double s = leaf_##NAME(p + i, EM_VRED_LEAF);                           \
      count++;                                                               \
      for (uint64_t c = count; !(c & 1); c >>= 1) s = stack[--depth] + s;    \
      stack[depth++] = s;                                                    \
    }                                                                        \
    double s = leaf_##NAME(p + i, n - i);                                    \
    while (depth) s = stack[--depth] + s;                                    \
    return s;                                                                \
  }
DEF_CASCADE(x, F_X, V_X)
DEF_CASCADE(sq, F_SQ, V_SQ)
DEF_CASCADE(abs, F_ABS, V_ABS)

/* The product in 16 x 4 double lanes: lane j of a_k multiplies p[64 m +
** 4 k + j]; then a_k *= a_{k+8}, the eight left folded in a fixed tree,
** the tail multiplied in order. Sixteen chains: a double multiply's
** latency bounds fewer (64K floats from L2, 256 times: 1.14 ms with four
** chains, 0.79 with eight, a C loop on the EPYC of 2026-12-02); on the
** Zen 5 EPYC of 2026-12-06, 16M floats from memory, best of 40, three
** runs: eight chains 2.31-2.41 ms, sixteen 1.90-1.95 (AVX2) and 1.63-1.69
** (AVX-512, 8 zmm chains holding the same lanes), a plain float sum
** 1.21-1.30. LOAD4(q): q[0..3] as 4 doubles. */
#define PROD_FOLD(a, t, r)                                                   \
  do {                                                                       \
    for (int k_ = 0; k_ < 8; k_++) (a)[k_] *= (a)[k_ + 8];                   \
    vd v_ = (((a)[0] * (a)[4]) * ((a)[2] * (a)[6])) *                        \
            (((a)[1] * (a)[5]) * ((a)[3] * (a)[7]));                         \
    double s_ = (v_[0] * v_[2]) * (v_[1] * v_[3]);                           \
    for (int64_t i_ = 0; i_ < (r); i_++) s_ *= (double)(t)[i_];              \
    return s_;                                                               \
  } while (0)
#define DEF_PROD(NAME, ATTRS, LOAD4)                                          \
  ATTRS double NAME(const float *p, int64_t n) {                              \
    vd a[16];                                                                \
    for (int k = 0; k < 16; k++) a[k] = (vd){1, 1, 1, 1};                    \
    int64_t i = 0;                                                           \
    for (; i + 64 <= n; i += 64) {                                           \
      PF256(p + i);                                                          \
      for (int k = 0; k < 16; k++) a[k] *= LOAD4(p + i + 4 * k);             \
    }                                                                        \
    PROD_FOLD(a, p + i, n - i);                                              \
  }
typedef float vf4 __attribute__((vector_size(16)));
AI vd ldu_d4(const float *p) { vf4 v; memcpy(&v, p, sizeof v); return __builtin_convertvector(v, vd); }
DEF_PROD(prod_run, AI, ldu_d4)

/* prod_run on AVX2: each 4 floats converted to 4 doubles straight from
** memory (vcvtps2pd ymm, m128). The generic loop's avx2 clone converts in
** 128-bit halves and inserts them, and its products took 4.1-4.4 ms for 16M
** floats against 3.7-4.1 here (a C loop, best of 10, three runs; in L2 40%
** less time). On AVX-512, zmm k holds a_{2k} and a_{2k+1} (8 floats
** converted at once), split back into them for the fold. The same lanes,
** products and fold in every version: the same bits (test_vreduce
** compares each one the CPU runs with the scalar build). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(EMBER_NO_CLONES)
#define EM_PROD_AVX2 1
#include <immintrin.h>
#define LD4_AVX2(q) ((vd)_mm256_cvtps_pd(_mm_loadu_ps(q)))
DEF_PROD(prod_run_avx2, __attribute__((target("avx2"))) static, LD4_AVX2)
__attribute__((target("avx512f"))) static double prod_run_avx512(const float *p, int64_t n) {
  __m512d z[8];
  for (int k = 0; k < 8; k++) z[k] = _mm512_set1_pd(1);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    PF256(p + i);
    for (int k = 0; k < 8; k++)
      z[k] = _mm512_mul_pd(z[k], _mm512_cvtps_pd(_mm256_loadu_ps(p + i + 8 * k)));
  }
  vd a[16];
  for (int k = 0; k < 8; k++) {
    a[2 * k] = (vd)_mm512_castpd512_pd256(z[k]);
    a[2 * k + 1] = (vd)_mm512_extractf64x4_pd(z[k], 1);
  }
  PROD_FOLD(a, p + i, n - i);
}
#endif
/* The product by the best version this CPU runs (isa < 0), or by version
** isa (0 generic, 1 AVX2, 2 AVX-512; tests): *ran says whether it could. */
double em_vred_prod_f32_isa(const float *p, int64_t n, int isa, int *ran) {
#ifdef EM_PROD_AVX2
  static int best = -1; /* the same answer whichever thread asks first */
  if (best < 0)
    best = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  const int best = 0;
#endif
  if (isa < 0) isa = best;
  if (ran) *ran = isa <= best;
  if (isa > best) return 1;
#ifdef EM_PROD_AVX2
  if (isa == 2) return prod_run_avx512(p, n);
  if (isa == 1) return prod_run_avx2(p, n);
#endif
  return prod_run(p, n);
}
static double prod_any(const float *p, int64_t n) { return em_vred_prod_f32_isa(p, n, -1, NULL); }

EM_VEC_CLONES double em_vred_sum_f32(em_vred_kind k, const float *p, int64_t n) {
  switch (k) {
    case EM_VRED_SUMSQ: return cascade_sq(p, n);
    case EM_VRED_ASUM: return cascade_abs(p, n);
    case EM_VRED_PROD: return prod_any(p, n);
    default: return cascade_x(p, n);
  }
}

/* -- Extremes -----------------------------------------------------------------
** 64 floats a step into 4 vectors of lanes (x replaces v when x BETTER v),
** and a mask of the NaNs seen, kept apart so that the selects stay one
** compare each (16M floats from memory: 1.30 ms against 1.58 with the NaN
** test in every select, a C loop on the Zen 5 EPYC of 2026-12-06, median
** of 80; a plain sum 1.26). Any NaN makes the result the first NaN of the
** run. No branch in the loop. */
#define DEF_EXT(NAME, BETTER, F, V, INIT)                                      \
  AI float ext_##NAME(const float *p, int64_t n) {                           \
    vf v0 = vsplat(INIT), v1 = v0, v2 = v0, v3 = v0;                         \
    vi nan = (vi)vsplat(0);                                                  \
    int64_t i = 0;                                                           \
    for (; i + 2 * VW <= n; i += 2 * VW) {                                   \
      const float *q = p + i;                                                \
      PF256(q);                                                              \
      vf x0 = V(ldu(q)), x1 = V(ldu(q + 8)), x2 = V(ldu(q + 16)), x3 = V(ldu(q + 24)); \
      vf x4 = V(ldu(q + 32)), x5 = V(ldu(q + 40)), x6 = V(ldu(q + 48)), x7 = V(ldu(q + 56)); \
      nan |= (((x0 != x0) | (x1 != x1)) | ((x2 != x2) | (x3 != x3))) |       \
             (((x4 != x4) | (x5 != x5)) | ((x6 != x6) | (x7 != x7)));        \
      v0 = vsel(x0 BETTER v0, x0, v0);                                       \
      v1 = vsel(x1 BETTER v1, x1, v1);                                       \
      v2 = vsel(x2 BETTER v2, x2, v2);                                       \
      v3 = vsel(x3 BETTER v3, x3, v3);                                       \
      v0 = vsel(x4 BETTER v0, x4, v0);                                       \
      v1 = vsel(x5 BETTER v1, x5, v1);                                       \
      v2 = vsel(x6 BETTER v2, x6, v2);                                       \
      v3 = vsel(x7 BETTER v3, x7, v3);                                       \
    }                                                                        \
    float r = INIT;                                                          \
    int any = 0;                                                             \
    vf vs[4] = {v0, v1, v2, v3};                                             \
    for (int j = 0; j < 8; j++) any |= nan[j];                               \
    for (int k = 0; k < 4; k++)                                              \
      for (int j = 0; j < 8; j++) r = vs[k][j] BETTER r ? vs[k][j] : r;      \
    for (int64_t j = i; j < n; j++) {                                        \
      float x = F(p[j]);                                                     \
      any |= x != x;                                                         \
      r = x BETTER r ? x : r;                                                \
    }                                                                        \
    if (any)                                                                 \
      for (int64_t j = 0; j < n; j++)                                        \
        if (p[j] != p[j]) return F(p[j]);                                    \
    return r;                                                                \
  }
DEF_EXT(max, >, F_X, V_X, -INFINITY)
DEF_EXT(min, <, F_X, V_X, INFINITY)
DEF_EXT(maxabs, >, F_ABS, V_ABS, -INFINITY)
DEF_EXT(minabs, <, F_ABS, V_ABS, INFINITY)

EM_VEC_CLONES float em_vred_ext_f32(em_vred_kind k, const float *p, int64_t n) {
  switch (k) {
    case EM_VRED_MIN: return ext_min(p, n);
    case EM_VRED_MAXABS: return ext_maxabs(p, n);
    case EM_VRED_MINABS: return ext_minabs(p, n);
    default: return ext_max(p, n);
  }
}

/* -- Moments ------------------------------------------------------------------
** A piece: its mean m from the float cascade, then d = x - m in double:
** M2 = sum d^2 - (sum d)^2 / n (the corrected two-pass formula: the
** rounding of m cancels), mean = m + sum d / n. Pieces merge by Chan's
** formula. */
AI void moments_piece(const float *p, int64_t n, const float *next, int64_t nnext,
                      double *mean, double *m2) {
  double m = cascade_x(p, n) / (double)n;
  vd vm = {m, m, m, m}, s0 = vm - vm, s1 = s0, q0 = s0, q1 = s0;
  /* four accumulators (few enough to stay in registers), each fed a pair */
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    vd d0, d1, d2, d3;
    /* the next piece is fetched while this one is computed on */
    if (i < nnext) __builtin_prefetch(next + i, 0, 2);
    ldu_d8(p + i, &d0, &d1);
    ldu_d8(p + i + 8, &d2, &d3);
    d0 -= vm; d1 -= vm; d2 -= vm; d3 -= vm;
    s0 += d0 + d1;
    s1 += d2 + d3;
    q0 += d0 * d0 + d1 * d1;
    q1 += d2 * d2 + d3 * d3;
  }
  vd ts = s0 + s1, tq = q0 + q1;
  double a = (ts[0] + ts[2]) + (ts[1] + ts[3]), b = (tq[0] + tq[2]) + (tq[1] + tq[3]);
  for (; i < n; i++) {
    double d = (double)p[i] - m;
    a += d;
    b += d * d;
  }
  double q = b - a * a / (double)n;
  *mean = m + a / (double)n;
  *m2 = q > 0 ? q : 0;
}

/* Chan et al.: {na, ma, qa} <- merged with {nb, mb, qb} */
static inline void chan_merge(double *na, double *ma, double *qa, double nb, double mb,
                              double qb) {
  double tot = *na + nb, delta = mb - *ma;
  *ma += delta * nb / tot;
  *qa += qb + delta * delta * *na * nb / tot;
  *na = tot;
}

EM_VEC_CLONES void em_vred_moments_f32(const float *p, int64_t n, double *mean, double *m2) {
  double cnt = 0, m = 0, q = 0;
  for (int64_t i = 0; i < n; i += MOM_PIECE) {
    int64_t len = n - i < MOM_PIECE ? n - i : MOM_PIECE;
    double pm, pq;
    int64_t nlen = n - i - len < MOM_PIECE ? n - i - len : MOM_PIECE;
    moments_piece(p + i, len, p + i + len, nlen, &pm, &pq);
    if (cnt == 0) { cnt = (double)len; m = pm; q = pq; }
    else chan_merge(&cnt, &m, &q, (double)len, pm, pq);
  }
  *mean = m;
  *m2 = q;
}

/* -- Row stacks ------------------------------------------------------------------
** One strip of nc <= ROW_CB columns at a time, so that the float block
** (and the variance's block sums) stay in L1. */
#define DEF_ROWS_SUM(NAME, F)                                                  \
  AI void rows_##NAME(double *acc, const float *p, int64_t rs, int64_t nrows, int64_t nc) { \
    float fb[ROW_CB];                                                        \
    for (int64_t r0 = 0; r0 < nrows; r0 += ROW_B) {                          \
      int64_t nr = nrows - r0 < ROW_B ? nrows - r0 : ROW_B, r = 0;           \
      const float *q = p + r0 * rs;                                          \
      for (int64_t j = 0; j < nc; j++) fb[j] = 0;                            \
      /* rows four at a time, added pairwise, then one by one */             \
      for (; r + 4 <= nr; r += 4) {                                          \
        const float *a = q + r * rs, *b = a + rs, *c = b + rs, *d = c + rs;  \
        for (int64_t j = 0; j < nc; j++)                                     \
          fb[j] += (F(a[j]) + F(b[j])) + (F(c[j]) + F(d[j]));                \
      }                                                                      \
      for (; r < nr; r++) {                                                  \
        const float *a = q + r * rs;                                         \
        for (int64_t j = 0; j < nc; j++) fb[j] += F(a[j]);                   \
      }                                                                      \
      for (int64_t j = 0; j < nc; j++) acc[j] += (double)fb[j];              \
    }                                                                        \
  }
DEF_ROWS_SUM(x, F_X)
DEF_ROWS_SUM(sq, F_SQ)
DEF_ROWS_SUM(abs, F_ABS)

/* x if x BETTER y or x is NaN, else y (so a NaN y stays) */
#define EXT2(BETTER, x, y) ((((x) BETTER (y)) | ((x) != (x))) ? (x) : (y))
#define DEF_ROWS_EXT(NAME, BETTER, KEEP, F)                                    \
  AI void rows_##NAME(double *acc, const float *p, int64_t rs, int64_t nrows, int64_t nc) { \
    float fb[ROW_CB];                                                        \
    int64_t r = 1;                                                           \
    for (int64_t j = 0; j < nc; j++) fb[j] = F(p[j]);                        \
    for (; r + 2 <= nrows; r += 2) {                                         \
      const float *a = p + r * rs, *b = a + rs;                              \
      for (int64_t j = 0; j < nc; j++) {                                     \
        float x = F(a[j]), y = F(b[j]), m = EXT2(BETTER, x, y);              \
        fb[j] = EXT2(BETTER, m, fb[j]);                                      \
      }                                                                      \
    }                                                                        \
    for (; r < nrows; r++) {                                                 \
      const float *a = p + r * rs;                                           \
      for (int64_t j = 0; j < nc; j++) {                                     \
        float x = F(a[j]);                                                   \
        fb[j] = EXT2(BETTER, x, fb[j]);                                      \
      }                                                                      \
    }                                                                        \
    for (int64_t j = 0; j < nc; j++) {                                       \
      double a = acc[j], x = (double)fb[j];                                  \
      acc[j] = (a != a || a KEEP x) ? a : x;                                 \
    }                                                                        \
  }
DEF_ROWS_EXT(max, >, >=, F_X)
DEF_ROWS_EXT(min, <, <=, F_X)
DEF_ROWS_EXT(maxabs, >, >=, F_ABS)
DEF_ROWS_EXT(minabs, <, <=, F_ABS)

AI void rows_prod(double *acc, const float *p, int64_t rs, int64_t nrows, int64_t nc) {
  for (int64_t r = 0; r < nrows; r++) {
    const float *qr = p + r * rs;
    for (int64_t j = 0; j < nc; j++) acc[j] *= (double)qr[j];
  }
}

/* blocks of ROW_VB rows: per column the block's mean (double sum), then
** its M2 about that mean (second pass over the block, in cache), merged
** into acc's {count, mean, M2} */
AI void rows_var(double *acc, const float *p, int64_t rs, int64_t nrows, int64_t nc) {
  double bs[ROW_VCB], bq[ROW_VCB];
  for (int64_t r0 = 0; r0 < nrows; r0 += ROW_VB) {
    int64_t nr = nrows - r0 < ROW_VB ? nrows - r0 : ROW_VB;
    const float *q = p + r0 * rs;
    for (int64_t j = 0; j < nc; j++) bs[j] = 0, bq[j] = 0;
    for (int64_t r = 0; r < nr; r++)
      for (int64_t j = 0; j < nc; j++) bs[j] += (double)q[r * rs + j];
    double inv = 1.0 / (double)nr;
    for (int64_t j = 0; j < nc; j++) bs[j] *= inv;
    for (int64_t r = 0; r < nr; r++)
      for (int64_t j = 0; j < nc; j++) {
        double d = (double)q[r * rs + j] - bs[j];
        bq[j] += d * d;
      }
    for (int64_t j = 0; j < nc; j++) {
      double *a = acc + 3 * j;
      if (a[0] == 0) { a[0] = (double)nr; a[1] = bs[j]; a[2] = bq[j]; }
      else chan_merge(&a[0], &a[1], &a[2], (double)nr, bs[j], bq[j]);
    }
  }
}

EM_VEC_CLONES void em_vred_rows_f32(em_vred_kind k, double *acc, const float *p, int64_t rs,
                                    int64_t nrows, int64_t ncols) {
  int aw = k == EM_VRED_VAR ? 3 : 1;
  int64_t cb = k == EM_VRED_VAR ? ROW_VCB : ROW_CB;
  if (nrows <= 0) return;
  for (int64_t c0 = 0; c0 < ncols; c0 += cb) {
    int64_t nc = ncols - c0 < cb ? ncols - c0 : cb;
    double *a = acc + c0 * aw;
    const float *q = p + c0;
    switch (k) {
      case EM_VRED_SUM: rows_x(a, q, rs, nrows, nc); break;
      case EM_VRED_SUMSQ: rows_sq(a, q, rs, nrows, nc); break;
      case EM_VRED_ASUM: rows_abs(a, q, rs, nrows, nc); break;
      case EM_VRED_MAX: rows_max(a, q, rs, nrows, nc); break;
      case EM_VRED_MIN: rows_min(a, q, rs, nrows, nc); break;
      case EM_VRED_MAXABS: rows_maxabs(a, q, rs, nrows, nc); break;
      case EM_VRED_MINABS: rows_minabs(a, q, rs, nrows, nc); break;
      case EM_VRED_PROD: rows_prod(a, q, rs, nrows, nc); break;
      case EM_VRED_VAR: rows_var(a, q, rs, nrows, nc); break;
    }
  }
}
