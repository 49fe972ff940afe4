/*
** cpu/index.c -- the index family of the CPU's kernels (core/kern_index.h):
** the loops of index_select, gather, take, scatter (and its reductions),
** put_, the index_* writes, the masked ops, nonzero, where,
** repeat_interleave and t[key]. The ops (ops/gather_scatter.c,
** ops/masked.c, ops/index.c) check, normalise and allocate.
**
** What holds:
** - Every index an entry dereferences has been normalised to 0-based int64
**   and bounds-checked (by the normalize entry) before any element moves.
** - The iterator loops see an indexed operand "restrided" (kern_index.h):
**   they only add index * stride to the pointer they are handed. The fast
**   paths of contiguous operands have no strides to walk and skip the
**   iterator: the block copies of index_select, the run compaction of
**   masked_select (also t[mask]), and t[key]'s rows of blocks.
** - Per-dtype kernels are generated from EM_FOR_EACH_DTYPE with grep-able
**   names (em_gather_f32, em_scatter_add_i64, em_masked_fill_b8, ...).
*/
#include "core/kern_index.h"
#include "cpu/omp_if.h"

#include <string.h>

/* -- Element access for the arithmetic kernels -----------------------------
** Integer kinds compute in int64 with wrap-around (through uint64, so no
** signed overflow), floating kinds in double; stores use the conversions
** of core/core.h (bool stores "!= 0"). Both forms exist for every dtype so
** that one macro body serves all; the unused branch is folded away. */

#define LDI_b8(p) ((int64_t) * (const bool *)(p))
#define LDI_u8(p) ((int64_t) * (const uint8_t *)(p))
#define LDI_i8(p) ((int64_t) * (const int8_t *)(p))
#define LDI_i16(p) ((int64_t) * (const int16_t *)(p))
#define LDI_i32(p) ((int64_t) * (const int32_t *)(p))
#define LDI_i64(p) (*(const int64_t *)(p))
#define LDI_f16(p) ((int64_t)0)
#define LDI_bf16(p) ((int64_t)0)
#define LDI_f32(p) ((int64_t)0)
#define LDI_f64(p) ((int64_t)0)

#define STI_b8(p, v) (*(bool *)(p) = ((v) != 0))
#define STI_u8(p, v) (*(uint8_t *)(p) = (uint8_t)(uint64_t)(v))
#define STI_i8(p, v) (*(int8_t *)(p) = (int8_t)(uint64_t)(v))
#define STI_i16(p, v) (*(int16_t *)(p) = (int16_t)(uint64_t)(v))
#define STI_i32(p, v) (*(int32_t *)(p) = (int32_t)(uint64_t)(v))
#define STI_i64(p, v) (*(int64_t *)(p) = (int64_t)(uint64_t)(v))
#define STI_f16(p, v) ((void)(p), (void)(v))
#define STI_bf16(p, v) ((void)(p), (void)(v))
#define STI_f32(p, v) ((void)(p), (void)(v))
#define STI_f64(p, v) ((void)(p), (void)(v))

#define LDF_b8(p) 0.0
#define LDF_u8(p) 0.0
#define LDF_i8(p) 0.0
#define LDF_i16(p) 0.0
#define LDF_i32(p) 0.0
#define LDF_i64(p) 0.0
#define LDF_f16(p) EM_LOAD_AS_F64_f16(p)
#define LDF_bf16(p) EM_LOAD_AS_F64_bf16(p)
#define LDF_f32(p) EM_LOAD_AS_F64_f32(p)
#define LDF_f64(p) EM_LOAD_AS_F64_f64(p)

#define STF_b8(p, v) ((void)(p), (void)(v))
#define STF_u8(p, v) ((void)(p), (void)(v))
#define STF_i8(p, v) ((void)(p), (void)(v))
#define STF_i16(p, v) ((void)(p), (void)(v))
#define STF_i32(p, v) ((void)(p), (void)(v))
#define STF_i64(p, v) ((void)(p), (void)(v))
#define STF_f16(p, v) (*(em_half *)(p) = em_float_to_half((float)(v)))
#define STF_bf16(p, v) (*(em_bfloat16 *)(p) = em_float_to_bf16((float)(v)))
#define STF_f32(p, v) (*(float *)(p) = (float)(v))
#define STF_f64(p, v) (*(double *)(p) = (double)(v))

/* -- Kernels ---------------------------------------------------------------- */

/* The loops' ctx is the pass's em_scatter_params (gather: its stride). */

/* Gather: operands (out, src restrided, idx); out = src[idx]. */
#define DEF_GATHER(S, E, CT, K)                                             \
  static void em_gather_##S(char **data, const int64_t *st, int64_t n,      \
                            void *vctx) {                                   \
    const int64_t ds = ((const em_scatter_params *)vctx)->stride;                   \
    char *o = data[0];                                                      \
    const char *s = data[1], *ix = data[2];                                 \
    for (int64_t i = 0; i < n; i++, o += st[0], s += st[1], ix += st[2])    \
      *(CT *)o = *(const CT *)(s + *(const int64_t *)ix * ds);              \
  }
EM_FOR_EACH_DTYPE(DEF_GATHER)

/* Scatter: operands (dst restrided, idx, src); dst[idx] (op)= src. */
#define SCATTER_LOOP(NAME, S, K, BODY_I, BODY_F)                             \
  static void NAME(char **data, const int64_t *st, int64_t n, void *vctx) { \
    const em_scatter_params *c = vctx;                                              \
    const int64_t ds = c->stride;                                           \
    char *d0 = data[0];                                                     \
    const char *ix = data[1], *s = data[2];                                 \
    (void)c;                                                                \
    for (int64_t i = 0; i < n; i++, d0 += st[0], ix += st[1], s += st[2]) { \
      char *d = d0 + *(const int64_t *)ix * ds;                             \
      if (K == EM_KIND_FLOAT) {                                             \
        double a = LDF_##S(d), b = LDF_##S(s);                              \
        (void)a;                                                            \
        BODY_F;                                                             \
      } else {                                                              \
        int64_t a = LDI_##S(d), b = LDI_##S(s);                             \
        (void)a;                                                            \
        BODY_I;                                                             \
      }                                                                     \
    }                                                                       \
  }

#define DEF_SCATTER(S, E, CT, K)                                              \
  static void em_scatter_assign_##S(char **data, const int64_t *st,           \
                                    int64_t n, void *vctx) {                  \
    const int64_t ds = ((const em_scatter_params *)vctx)->stride;                     \
    char *d = data[0];                                                        \
    const char *ix = data[1], *s = data[2];                                   \
    for (int64_t i = 0; i < n; i++, d += st[0], ix += st[1], s += st[2])      \
      *(CT *)(d + *(const int64_t *)ix * ds) = *(const CT *)s;                \
  }                                                                           \
  SCATTER_LOOP(em_scatter_add_##S, S, K,                                      \
               STI_##S(d, (uint64_t)a + (uint64_t)c->alpha_i * (uint64_t)b),  \
               STF_##S(d, a + c->alpha_f * b))                                \
  SCATTER_LOOP(em_scatter_mul_##S, S, K,                                      \
               STI_##S(d, (uint64_t)a * (uint64_t)b), STF_##S(d, a * b))      \
  SCATTER_LOOP(em_scatter_amax_##S, S, K, if (b > a) STI_##S(d, b),           \
               if (b != b || b > a) STF_##S(d, b))                            \
  SCATTER_LOOP(em_scatter_amin_##S, S, K, if (b < a) STI_##S(d, b),           \
               if (b != b || b < a) STF_##S(d, b))
EM_FOR_EACH_DTYPE(DEF_SCATTER)

/* Mean's last step: operands (dst, count int64); dst /= max(count, 1),
** floor division for integers (PyTorch's scatter_reduce "mean"). */
#define DEF_MEAN_DIV(S, E, CT, K)                                             \
  static void em_mean_div_##S(char **data, const int64_t *st, int64_t n,      \
                              void *vctx) {                                   \
    char *d = data[0];                                                        \
    const char *cp = data[1];                                                 \
    (void)vctx;                                                               \
    for (int64_t i = 0; i < n; i++, d += st[0], cp += st[1]) {                \
      int64_t cnt = *(const int64_t *)cp;                                     \
      if (cnt <= 1) continue;                                                 \
      if (K == EM_KIND_FLOAT) {                                               \
        STF_##S(d, LDF_##S(d) / (double)cnt);                                 \
      } else {                                                                \
        int64_t a = LDI_##S(d), q = a / cnt;                                  \
        if ((a % cnt != 0) && (a < 0)) q--;                                   \
        STI_##S(d, q);                                                        \
      }                                                                       \
    }                                                                         \
  }
EM_FOR_EACH_DTYPE(DEF_MEAN_DIV)

/* masked_fill of contiguous runs: every element is rewritten as a bit
** blend of itself and the value (no branch on the mask, so the loop is
** vectorised; a select is turned back into a branch by the compiler). */
#define DEF_BLEND(NAME, UT)                                              \
  static void NAME(char *vd, const uint8_t *m, int64_t n, const void *value) { \
    UT *d = (UT *)vd, v;                                                 \
    memcpy(&v, value, sizeof v);                                         \
    for (int64_t i = 0; i < n; i++) {                                    \
      UT k = (UT)((UT)0 - (UT)(m[i] != 0));                              \
      d[i] = (UT)((d[i] & (UT)~k) | (v & k));                            \
    }                                                                    \
  }
DEF_BLEND(blend_fill1, uint8_t)
DEF_BLEND(blend_fill2, uint16_t)
DEF_BLEND(blend_fill4, uint32_t)
DEF_BLEND(blend_fill8, uint64_t)

static void blend_fill(char *d, const uint8_t *m, int64_t n, const void *value, size_t es) {
  if (es == 1) blend_fill1(d, m, n, value);
  else if (es == 2) blend_fill2(d, m, n, value);
  else if (es == 4) blend_fill4(d, m, n, value);
  else blend_fill8(d, m, n, value);
}

/* Masked ops. masked_fill: (dst, mask); masked_select: (src, mask, prefix)
** writing out[prefix - 1]; masked_scatter: (dst, mask, prefix) reading
** source[prefix - 1]; where: (out, cond, a, b). The prefix operand holds
** the inclusive running count of true mask positions in row-major order,
** so the iteration order does not matter. */
typedef struct {
  char *base;           /* out (masked_select) or source (masked_scatter) */
  uint64_t value;       /* masked_fill's value, as element bytes */
} mask_ctx;

/* masked_select's loop alone (complex128's 16-byte elements have no fill) */
#define DEF_MSELECT(S, CT)                                                    \
  static void em_masked_select_##S(char **data, const int64_t *st,            \
                                   int64_t n, void *vctx) {                   \
    CT *out = (CT *)((const mask_ctx *)vctx)->base;                           \
    const char *s = data[0], *m = data[1], *p = data[2];                      \
    for (int64_t i = 0; i < n; i++, s += st[0], m += st[1], p += st[2])       \
      if (*(const bool *)m) out[*(const int64_t *)p - 1] = *(const CT *)s;    \
  }

/* where moves elements whole: complex ones as 8- or 16-byte words;
** contiguous runs (and a 0-d branch, as a backward's zero) in loops the
** compiler vectorises, any other strides element by element */
#define DEF_WHERE(S, CT)                                                      \
  static void em_where_##S(char **data, const int64_t *st, int64_t n,         \
                           void *vctx) {                                      \
    char *o = data[0];                                                        \
    const char *c = data[1], *a = data[2], *b = data[3];                      \
    (void)vctx;                                                               \
    const int64_t E = (int64_t)sizeof(CT);                                    \
    if (st[0] == E && st[1] == 1 && (st[2] == E || st[2] == 0) &&             \
        (st[3] == E || st[3] == 0)) {                                         \
      CT *restrict O = (CT *)o;                                               \
      const uint8_t *restrict M = (const uint8_t *)c;                         \
      const CT *restrict A = (const CT *)a, *restrict B = (const CT *)b;      \
      /* both sides loaded on every element: a select, not a branch (a   \
      ** random mask mispredicted half the time: 3 ns an element) */       \
      if (st[2] == E && st[3] == E) {                                         \
        for (int64_t i = 0; i < n; i++) {                                     \
          const CT x = A[i], y = B[i];                                        \
          O[i] = M[i] ? x : y;                                                \
        }                                                                     \
      } else if (st[2] == 0 && st[3] == E) {                                  \
        const CT av = A[0];                                                   \
        for (int64_t i = 0; i < n; i++) {                                     \
          const CT y = B[i];                                                  \
          O[i] = M[i] ? av : y;                                               \
        }                                                                     \
      } else if (st[2] == E) {                                                \
        const CT bv = B[0];                                                   \
        for (int64_t i = 0; i < n; i++) {                                     \
          const CT x = A[i];                                                  \
          O[i] = M[i] ? x : bv;                                               \
        }                                                                     \
      } else {                                                                \
        const CT av = A[0], bv = B[0];                                        \
        for (int64_t i = 0; i < n; i++) O[i] = M[i] ? av : bv;                \
      }                                                                       \
      return;                                                                 \
    }                                                                         \
    for (int64_t i = 0; i < n;                                                \
         i++, o += st[0], c += st[1], a += st[2], b += st[3])                 \
      *(CT *)o = *(const bool *)c ? *(const CT *)a : *(const CT *)b;          \
  }
#define DEF_MASKED(S, E, CT, K)                                               \
  static void em_masked_fill_##S(char **data, const int64_t *st, int64_t n,   \
                                 void *vctx) {                                \
    CT v;                                                                     \
    memcpy(&v, &((const mask_ctx *)vctx)->value, sizeof v);                   \
    char *d = data[0];                                                        \
    const char *m = data[1];                                                  \
    if (st[0] == (int64_t)sizeof(CT) && st[1] == 1) {                         \
      blend_fill(d, (const uint8_t *)m, n, &v, sizeof(CT));                    \
      return;                                                                 \
    }                                                                         \
    for (int64_t i = 0; i < n; i++, d += st[0], m += st[1])                   \
      if (*(const bool *)m) *(CT *)d = v;                                     \
  }                                                                           \
  DEF_MSELECT(S, CT)                                                          \
  static void em_masked_scatter_##S(char **data, const int64_t *st,           \
                                    int64_t n, void *vctx) {                  \
    const CT *src = (const CT *)((const mask_ctx *)vctx)->base;               \
    char *d = data[0];                                                        \
    const char *m = data[1], *p = data[2];                                    \
    for (int64_t i = 0; i < n; i++, d += st[0], m += st[1], p += st[2])       \
      if (*(const bool *)m) *(CT *)d = src[*(const int64_t *)p - 1];          \
  }                                                                           \
  DEF_WHERE(S, CT)
EM_FOR_EACH_DTYPE(DEF_MASKED)

/* masked_select of a contiguous source and mask: the selected elements of
** one run, in order, without branches: every element is stored at the
** current position and the position advances by the mask. Stopping before
** the run's last true element (stored apart) keeps every store inside the
** run's own count of out, so runs on other threads never see a write. */
#define DEF_COMPACT(S, E, CT, K)                                              \
  static void em_masked_compact_##S(char *vout, const char *vsrc,             \
                                    const uint8_t *m, int64_t n) {            \
    CT *out = (CT *)vout;                                                     \
    const CT *src = (const CT *)vsrc;                                         \
    int64_t last = n - 1;                                                     \
    while (last >= 0 && !m[last]) last--;                                     \
    if (last < 0) return;                                                     \
    int64_t k = 0;                                                            \
    for (int64_t i = 0; i < last; i++) {                                      \
      out[k] = src[i];                                                        \
      k += m[i] != 0;                                                         \
    }                                                                         \
    out[k] = src[last];                                                       \
  }
EM_FOR_EACH_DTYPE(DEF_COMPACT)
/* masked_select moves complex elements as bytes: complex64 through the
** 8-byte loops (i64), complex128 through these 16-byte ones */
DEF_COMPACT(b16, EM_COMPLEX128, em_bytes16, 0)
DEF_MSELECT(b16, em_bytes16)
DEF_WHERE(b16, em_bytes16)
typedef void (*compact_fn)(char *, const char *, const uint8_t *, int64_t);
#define COMPACT_ROW(S, E, CT, K) [E] = em_masked_compact_##S,
static const compact_fn compact_loops[EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(COMPACT_ROW)[EM_COMPLEX64] = em_masked_compact_i64,
    [EM_COMPLEX128] = em_masked_compact_b16};

/* Dispatch tables, indexed by dtype. */
#define TABLE(NAME, PREFIX)                                 \
  static const em_loop1d NAME[EM_NUM_DTYPES] = {            \
      EM_FOR_EACH_DTYPE(TABLE_ROW_##PREFIX)};
#define TABLE_ROW_em_gather(S, E, CT, K) [E] = em_gather_##S,
#define TABLE_ROW_em_scatter_assign(S, E, CT, K) [E] = em_scatter_assign_##S,
#define TABLE_ROW_em_scatter_add(S, E, CT, K) [E] = em_scatter_add_##S,
#define TABLE_ROW_em_scatter_mul(S, E, CT, K) [E] = em_scatter_mul_##S,
#define TABLE_ROW_em_scatter_amax(S, E, CT, K) [E] = em_scatter_amax_##S,
#define TABLE_ROW_em_scatter_amin(S, E, CT, K) [E] = em_scatter_amin_##S,
#define TABLE_ROW_em_mean_div(S, E, CT, K) [E] = em_mean_div_##S,
#define TABLE_ROW_em_masked_fill(S, E, CT, K) [E] = em_masked_fill_##S,
#define TABLE_ROW_em_masked_select(S, E, CT, K) [E] = em_masked_select_##S,
#define TABLE_ROW_em_masked_scatter(S, E, CT, K) [E] = em_masked_scatter_##S,
#define TABLE_ROW_em_where(S, E, CT, K) [E] = em_where_##S,
TABLE(gather_loops, em_gather)
TABLE(assign_loops, em_scatter_assign)
TABLE(add_loops, em_scatter_add)
TABLE(mul_loops, em_scatter_mul)
TABLE(amax_loops, em_scatter_amax)
TABLE(amin_loops, em_scatter_amin)
TABLE(mean_div_loops, em_mean_div)
TABLE(masked_fill_loops, em_masked_fill)
static const em_loop1d masked_select_loops[EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(TABLE_ROW_em_masked_select)[EM_COMPLEX64] = em_masked_select_i64,
    [EM_COMPLEX128] = em_masked_select_b16};
TABLE(masked_scatter_loops, em_masked_scatter)
static const em_loop1d where_loops[EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(TABLE_ROW_em_where)[EM_COMPLEX64] = em_where_i64,
    [EM_COMPLEX128] = em_where_b16};

static em_loop1d scatter_loop(em_scatter_mode r, em_dtype dt) {
  switch (r) {
    case EM_SCATTER_SUM:
    case EM_SCATTER_MEAN: return add_loops[dt];
    case EM_SCATTER_PROD: return mul_loops[dt];
    case EM_SCATTER_AMAX: return amax_loops[dt];
    case EM_SCATTER_AMIN: return amin_loops[dt];
    default: return assign_loops[dt];
  }
}

/* -- Index normalisation ------------------------------------------------------
** Operands (out int64, idx); the first bad value stops the writes (the op
** fails and releases out), so the loop only skips the rest. */
typedef struct {
  int64_t size;
  em_index_bad *bad;
} norm_ctx;

#define DEF_NORMALIZE(NAME, T)                                                \
  static void NAME(char **data, const int64_t *st, int64_t n, void *vctx) {   \
    norm_ctx *c = vctx;                                                       \
    if (c->bad->found) return;                                                \
    char *o = data[0];                                                        \
    const char *x = data[1];                                                  \
    for (int64_t i = 0; i < n; i++, o += st[0], x += st[1]) {                 \
      int64_t v = (int64_t)*(const T *)x, k = v > 0 ? v - 1 : v + c->size;    \
      if (v == 0 || k < 0 || k >= c->size) {                                  \
        c->bad->found = EM_BAD_VALUE;                                         \
        c->bad->value = v;                                                    \
        return;                                                               \
      }                                                                       \
      *(int64_t *)o = k;                                                      \
    }                                                                         \
  }
DEF_NORMALIZE(em_normalize_i64, int64_t)
DEF_NORMALIZE(em_normalize_i32, int32_t)

/* -- t[key] -------------------------------------------------------------------- */

typedef struct {
  int64_t size, stride; /* of the indexed view dim */
  em_index_bad *bad;    /* the first invalid position seen */
  int keep;             /* 1: offsets +=, 0: offsets = */
} offs_ctx;

/* offsets (+)= (normalised position) * stride; o is int64, x int64/int32 */
#define DEF_OFFS(NAME, T)                                                     \
  static void NAME(char **data, const int64_t *st, int64_t n, void *vctx) {   \
    offs_ctx *c = vctx;                                                       \
    const int keep = c->keep;                                                 \
    char *o = data[0];                                                        \
    const char *x = data[1];                                                  \
    for (int64_t i = 0; i < n; i++, o += st[0], x += st[1]) {                 \
      int64_t pos = (int64_t)*(const T *)x;                                   \
      int64_t k = pos >= 1 ? pos - 1 : c->size + pos;                         \
      if (pos == 0 || k < 0 || k >= c->size) {                                \
        if (!c->bad->found) { c->bad->found = EM_BAD_VALUE; c->bad->value = pos; } \
        continue;                                                             \
      }                                                                       \
      if (keep) *(int64_t *)o += k * c->stride;                               \
      else *(int64_t *)o = k * c->stride;                                     \
    }                                                                         \
  }
DEF_OFFS(em_index_offsets_i64, int64_t)
DEF_OFFS(em_index_offsets_i32, int32_t)

/* accumulate: *(base + offset) += value, per dtype (same dtype operands). */
#define ACC_ADD_b8(p, v) (*(bool *)(p) = *(bool *)(p) || *(const bool *)(v))
#define ACC_ADD_INT(T, p, v) \
  (*(T *)(p) = (T)((uint64_t)*(T *)(p) + (uint64_t)*(const T *)(v)))
#define ACC_ADD_u8(p, v) ACC_ADD_INT(uint8_t, p, v)
#define ACC_ADD_i8(p, v) ACC_ADD_INT(int8_t, p, v)
#define ACC_ADD_i16(p, v) ACC_ADD_INT(int16_t, p, v)
#define ACC_ADD_i32(p, v) ACC_ADD_INT(int32_t, p, v)
#define ACC_ADD_i64(p, v) ACC_ADD_INT(int64_t, p, v)
#define ACC_ADD_f16(p, v)                                              \
  (*(em_half *)(p) = em_float_to_half(em_half_to_float(*(em_half *)(p)) + \
                                      em_half_to_float(*(const em_half *)(v))))
#define ACC_ADD_bf16(p, v)                                                 \
  (*(em_bfloat16 *)(p) = em_float_to_bf16(em_bf16_to_float(*(em_bfloat16 *)(p)) + \
                                          em_bf16_to_float(*(const em_bfloat16 *)(v))))
#define ACC_ADD_f32(p, v) (*(float *)(p) += *(const float *)(v))
#define ACC_ADD_f64(p, v) (*(double *)(p) += *(const double *)(v))

#define DEF_ACC(S, E, CT, K)                                                    \
  static void em_index_accumulate_##S(char **data, const int64_t *st, int64_t n, \
                                      void *ctx) {                              \
    char *b = data[0];                                                          \
    const char *v = data[1], *f = data[2];                                      \
    for (int64_t i = 0; i < n; i++, b += st[0], v += st[1], f += st[2])         \
      ACC_ADD_##S(b + *(const int64_t *)f * (int64_t)sizeof(CT), v);            \
    (void)ctx;                                                                  \
  }
EM_FOR_EACH_DTYPE(DEF_ACC)
#define ACC_ROW(S, E, CT, K) [E] = em_index_accumulate_##S,
static const em_loop1d accumulate_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(ACC_ROW)};

/* -- The table entries ------------------------------------------------------------ */

static void run(const em_iter *it, em_loop1d loop, void *ctx) {
  if (it->numel > 0) em_iter_run(it, loop, ctx);
}

static void cpu_normalize(const em_iter *it, em_dtype idx_dt, int64_t size,
                          em_index_bad *bad) {
  norm_ctx c = {size, bad};
  bad->found = 0;
  run(it, idx_dt == EM_INT64 ? em_normalize_i64 : em_normalize_i32, &c);
}

static void cpu_gather(const em_iter *it, em_dtype dt, int64_t stride) {
  em_scatter_params c = {stride, 0, 0};
  run(it, gather_loops[dt], &c);
}

/* index_select of a contiguous tensor: every selected slice is one block of
** `inner` contiguous bytes, so the result is a run of block copies (the
** iterator would walk it element by element). Blocks are independent, so
** threads split them. */
static void cpu_select_blocks(em_tensor *out, const em_tensor *src, const em_tensor *index,
                              int axis) {
  int nd = src->ndim;
  int64_t len = out->sizes[axis], outer = 1;
  size_t inner = em_dtype_size(src->dtype);
  for (int i = axis + 1; i < nd; i++) inner *= (size_t)src->sizes[i];
  for (int i = 0; i < axis; i++) outer *= src->sizes[i];
  if (inner == 0 || len == 0 || outer == 0) return;
  const char *s = em_tensor_data(src);
  char *dst = em_tensor_data(out);
  const int64_t *idx = em_tensor_data(index);
  int64_t axis_bytes = src->sizes[axis] * (int64_t)inner, total = outer * len;
  EM_OMP_IF(omp_get_max_threads() > 1 && total * (int64_t)inner > ((int64_t)1 << 20), parallel for schedule(static),
  for (int64_t r = 0; r < total; r++) {
    int64_t o = r / len, j = r - o * len;
    memcpy(dst + r * (int64_t)inner, s + o * axis_bytes + idx[j] * (int64_t)inner, inner);
  });
}

static void cpu_scatter(const em_iter *it, em_dtype dt, em_scatter_mode r,
                        const em_scatter_params *p) {
  run(it, scatter_loop(r, dt), (void *)p);
}

static void cpu_scatter_mean_div(const em_iter *it, em_dtype dt) {
  run(it, mean_div_loops[dt], NULL);
}

static void cpu_masked_fill(const em_iter *it, em_dtype dt, const void *value) {
  mask_ctx c = {NULL, 0};
  memcpy(&c.value, value, em_dtype_size(dt));
  if (it->numel > 0) em_iter_run_parallel(it, masked_fill_loops[dt], &c);
}

/* Runs of EM_MASK_RUN elements are counted in parallel, and their counts'
** prefix gives each run its place in the result; without runs, one serial
** count. The result is the same on any number of threads. */
static em_status cpu_mask_count(const char *op, const em_tensor *mask, em_tensor *runs,
                                int64_t *count) {
  int64_t n = em_tensor_numel(mask);
  const uint8_t *m = em_tensor_data(mask);
  if (!runs) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += m[i] != 0;
    *count = c;
    return EM_OK;
  }
  int64_t nruns = (n + EM_MASK_RUN - 1) / EM_MASK_RUN, *pos = em_tensor_data(runs);
  EM_OMP_IF(omp_get_max_threads() > 1 && n > 2 * EM_MASK_RUN, parallel for schedule(static),
  for (int64_t r = 0; r < nruns; r++) {
    int64_t b = r * EM_MASK_RUN, e = b + EM_MASK_RUN < n ? b + EM_MASK_RUN : n, c = 0;
    for (int64_t i = b; i < e; i++) c += m[i] != 0;
    pos[r + 1] = c;
  });
  pos[0] = 0;
  for (int64_t r = 0; r < nruns; r++) pos[r + 1] += pos[r];
  *count = pos[nruns];
  return EM_OK;
}

/* The offset (elements) of position o of n dims (sizes, strides), the
** last dim fastest. */
static int64_t outer_offset(int64_t o, int n, const int64_t *sizes, const int64_t *strides) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0 && o > 0; d--) {
    int64_t q = o / sizes[d];
    off += (o - q * sizes[d]) * strides[d];
    o = q;
  }
  return off;
}

/* Every pair (outer position, run) is compacted apart: a run's place in
** the result is its outer position's row plus the runs before it. */
static void cpu_masked_compact(em_tensor *out, const em_tensor *src, const em_tensor *mask,
                               const em_tensor *runs, int nouter, const int64_t *sizes,
                               const int64_t *strides) {
  int64_t n = em_tensor_numel(mask), nruns = (n + EM_MASK_RUN - 1) / EM_MASK_RUN;
  int64_t nout = 1;
  for (int d = 0; d < nouter; d++) nout *= sizes[d];
  const int64_t *pos = em_tensor_data(runs);
  const uint8_t *m = em_tensor_data(mask);
  const char *s = em_tensor_data(src);
  char *dst = em_tensor_data(out);
  int64_t es = (int64_t)em_dtype_size(src->dtype), count = pos[nruns];
  int64_t total = nout * nruns;
  compact_fn f = compact_loops[src->dtype];
  if (n == 0 || nout == 0 || count == 0) return; /* nothing selected: out may have no data */
  EM_OMP_IF(omp_get_max_threads() > 1 && n * nout > 2 * EM_MASK_RUN, parallel for schedule(static),
  for (int64_t q = 0; q < total; q++) {
    int64_t o = q / nruns, r = q - o * nruns;
    int64_t b = r * EM_MASK_RUN, e = b + EM_MASK_RUN < n ? b + EM_MASK_RUN : n;
    int64_t so = nouter ? outer_offset(o, nouter, sizes, strides) : 0;
    f(dst + (o * count + pos[r]) * es, s + (so + b) * es, m + b, e - b);
  });
}

static em_status cpu_mask_prefix(const char *op, em_tensor *prefix, const em_tensor *mask,
                                 int sizes_result, int64_t *count) {
  int64_t n = em_tensor_numel(mask), c = 0, *p = em_tensor_data(prefix);
  const bool *m = em_tensor_data(mask);
  for (int64_t i = 0; i < n; i++) p[i] = (c += m[i]);
  *count = c;
  return EM_OK;
}

static void cpu_masked_select(const em_iter *it, em_dtype dt, em_tensor *out) {
  mask_ctx c = {em_tensor_data(out), 0};
  run(it, masked_select_loops[dt], &c);
}

static void cpu_masked_scatter(const em_iter *it, em_dtype dt, const em_tensor *src) {
  mask_ctx c = {(char *)em_tensor_data(src), 0};
  run(it, masked_scatter_loops[dt], &c);
}

/* Walks the row-major positions with a 1-based odometer. */
static void cpu_nonzero(em_tensor *out, const em_tensor *mask) {
  int nd = mask->ndim;
  int64_t n = em_tensor_numel(mask), pos[EM_MAX_DIMS], *w = em_tensor_data(out);
  const bool *m = em_tensor_data(mask);
  for (int d = 0; d < nd; d++) pos[d] = 1;
  for (int64_t i = 0; i < n; i++) {
    if (m[i] && nd > 0) { /* a 0-d tensor's rows have no columns */
      memcpy(w, pos, (size_t)nd * sizeof *w);
      w += nd;
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (++pos[d] <= mask->sizes[d]) break;
      pos[d] = 1;
    }
  }
}

static void cpu_where(const em_iter *it, em_dtype dt) {
  run(it, where_loops[dt], NULL);
}

static em_status cpu_repeat_total(const char *op, const em_tensor *repeats, int64_t n,
                                  int64_t *total, em_index_bad *bad) {
  const int64_t *r = em_tensor_data(repeats);
  int one = em_tensor_numel(repeats) == 1;
  int64_t sum = 0;
  bad->found = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t ri = r[one ? 0 : i];
    if (ri < 0) {
      bad->found = EM_BAD_VALUE;
      bad->value = ri;
      break;
    }
    if (__builtin_add_overflow(sum, ri, &sum)) {
      bad->found = EM_BAD_OVERFLOW;
      break;
    }
  }
  *total = sum;
  return EM_OK;
}

static void cpu_repeat_positions(em_tensor *out, const em_tensor *repeats, int64_t n) {
  const int64_t *r = em_tensor_data(repeats);
  int one = em_tensor_numel(repeats) == 1;
  int64_t *w = em_tensor_data(out);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = r[one ? 0 : i]; j > 0; j--) *w++ = i + 1;
}

static void cpu_key_offsets(const em_iter *it, em_dtype idx_dt, int64_t size,
                            int64_t stride, int add, em_index_bad *bad) {
  offs_ctx c = {size, stride, bad, add ? 1 : 0};
  bad->found = 0;
  run(it, idx_dt == EM_INT64 ? em_index_offsets_i64 : em_index_offsets_i32, &c);
}

/* Mask offsets: each run writes the offsets of its true elements at its
** place, without branches (the store happens at every element, the
** position advances by the mask), stopping before the run's last true
** element as masked_compact does, so no store leaves the run's share. */
static void cpu_key_mask_offsets(em_tensor *offsets, const em_tensor *mask, int k,
                                 const int64_t *sizes, const int64_t *strides,
                                 const em_tensor *runs) {
  int64_t n = em_tensor_numel(mask), nruns = (n + EM_MASK_RUN - 1) / EM_MASK_RUN;
  const int64_t *pos = em_tensor_data(runs);
  const uint8_t *m = em_tensor_data(mask);
  int64_t *w = em_tensor_data(offsets);
  if (n == 0 || k < 1) return;
  EM_OMP_IF(omp_get_max_threads() > 1 && n > 2 * EM_MASK_RUN, parallel for schedule(static),
  for (int64_t r = 0; r < nruns; r++) {
    int64_t b = r * EM_MASK_RUN, e = b + EM_MASK_RUN < n ? b + EM_MASK_RUN : n;
    int64_t last = e - 1;
    while (last >= b && !m[last]) last--;
    if (last < b) continue;
    int64_t *o = w + pos[r], c = 0, at[EM_MAX_DIMS], off = 0, rest = b;
    for (int d = k - 1; d >= 0; d--) { /* b's position and offset */
      at[d] = rest % sizes[d];
      rest /= sizes[d];
      off += at[d] * strides[d];
    }
    int64_t inner = sizes[k - 1], step = strides[k - 1];
    for (int64_t i = b; i < last; i++) {
      o[c] = off;
      c += m[i] != 0;
      off += step;
      if (++at[k - 1] == inner) { /* carry into the outer dims */
        off -= inner * step;
        at[k - 1] = 0;
        for (int d = k - 2; d >= 0; d--) {
          off += strides[d];
          if (++at[d] < sizes[d]) break;
          off -= sizes[d] * strides[d];
          at[d] = 0;
        }
      }
    }
    o[c] = off;
  });
}

/* -- t[key]: key_gather and key_put ------------------------------------------------
** A layout's inner dims are collapsed first (size-1 dims dropped,
** neighbours merged where both sides are contiguous across them); a row
** (o, b) is then one element, one memcpy, or a strided block. */
typedef struct {
  int n;
  int64_t numel, size[EM_MAX_DIMS], v[EM_MAX_DIMS], o[EM_MAX_DIMS];
} inner_dims;

static void collapse_inner(const em_key_layout *l, inner_dims *d) {
  d->n = 0;
  d->numel = 1;
  for (int i = l->nouter; i < l->nouter + l->ninner; i++) {
    int64_t s = l->sizes[i], vs = l->vstrides[i], os = l->ostrides[i];
    d->numel *= s;
    if (s == 1) continue;
    int j = d->n - 1;
    if (j >= 0 && d->v[j] == vs * s && d->o[j] == os * s) {
      d->size[j] *= s;
      d->v[j] = vs;
      d->o[j] = os;
    } else {
      d->size[++j] = s;
      d->v[j] = vs;
      d->o[j] = os;
      d->n++;
    }
  }
}

/* One block of n >= 1 dims: dst = src, strides in elements. */
#define DEF_KEY_BLOCK(NAME, T)                                                    \
  static void NAME(char *vdst, const int64_t *ds, const char *vsrc,               \
                   const int64_t *ss, int n, const int64_t *size) {               \
    T *dst = (T *)vdst;                                                           \
    const T *src = (const T *)vsrc;                                               \
    int64_t at[EM_MAX_DIMS] = {0}, len = size[n - 1], dl = ds[n - 1], sl = ss[n - 1]; \
    for (;;) {                                                                    \
      if (dl == 1 && sl == 1) memcpy(dst, src, (size_t)len * sizeof(T));          \
      else for (int64_t j = 0; j < len; j++) dst[j * dl] = src[j * sl];           \
      int d = n - 2;                                                              \
      for (; d >= 0; d--) {                                                       \
        dst += ds[d];                                                             \
        src += ss[d];                                                             \
        if (++at[d] < size[d]) break;                                             \
        dst -= ds[d] * size[d];                                                   \
        src -= ss[d] * size[d];                                                   \
        at[d] = 0;                                                                \
      }                                                                           \
      if (d < 0) return;                                                          \
    }                                                                             \
  }
DEF_KEY_BLOCK(key_block1, uint8_t)
DEF_KEY_BLOCK(key_block2, uint16_t)
DEF_KEY_BLOCK(key_block4, uint32_t)
DEF_KEY_BLOCK(key_block8, uint64_t)
DEF_KEY_BLOCK(key_block16, em_bytes16) /* complex128 */

/* Rows without outer dims whose block is one element: the loop of a plain
** gather (out[b * ob] = view[offs[b]]) or scatter. */
#define DEF_KEY_ELEMS(NAME, T)                                                  \
  static void NAME(char *vview, char *vother, int put, const int64_t *offs,     \
                   int64_t ob, int64_t r0, int64_t r1) {                        \
    T *v = (T *)vview, *o = (T *)vother;                                        \
    if (put)                                                                    \
      for (int64_t b = r0; b < r1; b++) v[offs[b]] = o[b * ob];                 \
    else                                                                        \
      for (int64_t b = r0; b < r1; b++) o[b * ob] = v[offs[b]];                 \
  }
DEF_KEY_ELEMS(key_elems1, uint8_t)
DEF_KEY_ELEMS(key_elems2, uint16_t)
DEF_KEY_ELEMS(key_elems4, uint32_t)
DEF_KEY_ELEMS(key_elems8, uint64_t)
DEF_KEY_ELEMS(key_elems16, em_bytes16)

typedef void (*key_block_fn)(char *, const int64_t *, const char *, const int64_t *, int,
                             const int64_t *);
typedef void (*key_elems_fn)(char *, char *, int, const int64_t *, int64_t, int64_t, int64_t);

enum { KEY_CHUNK = 4096 }; /* rows per task */

static void key_copy(char *view, char *other, int put, const em_tensor *offsets,
                     const em_key_layout *l, size_t es) {
  inner_dims d;
  collapse_inner(l, &d);
  int64_t nb = l->nb, nout = 1;
  for (int i = 0; i < l->nouter; i++) nout *= l->sizes[i];
  int64_t rows = nout * nb;
  if (rows == 0 || d.numel == 0) return;
  const int64_t *offs = em_tensor_data(offsets);
  int si = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : es == 8 ? 3 : 4;
  static const key_block_fn blocks[5] = {key_block1, key_block2, key_block4, key_block8,
                                         key_block16};
  static const key_elems_fn elems[5] = {key_elems1, key_elems2, key_elems4, key_elems8,
                                        key_elems16};
  key_block_fn block = blocks[si];
  int64_t nchunks = (rows + KEY_CHUNK - 1) / KEY_CHUNK;
  int contig = d.n == 1 && d.v[0] == 1 && d.o[0] == 1;
  size_t bytes = (size_t)d.numel * es;
  EM_OMP_IF(omp_get_max_threads() > 1 && rows * d.numel * (int64_t)es > ((int64_t)1 << 20), parallel for schedule(static),
  for (int64_t c = 0; c < nchunks; c++) {
    int64_t r0 = c * KEY_CHUNK, r1 = r0 + KEY_CHUNK < rows ? r0 + KEY_CHUNK : rows;
    if (l->nouter == 0 && d.n == 0) {
      elems[si](view, other, put, offs, l->ob, r0, r1);
      continue;
    }
    if (l->nouter == 0 && contig) { /* rows of one contiguous block */
      int64_t ob = l->ob * (int64_t)es;
      if (put)
        for (int64_t r = r0; r < r1; r++)
          memcpy(view + offs[r] * (int64_t)es, other + r * ob, bytes);
      else
        for (int64_t r = r0; r < r1; r++)
          memcpy(other + r * ob, view + offs[r] * (int64_t)es, bytes);
      continue;
    }
    int64_t o = r0 / nb, b = r0 - o * nb;
    int64_t vo = outer_offset(o, l->nouter, l->sizes, l->vstrides);
    int64_t oo = outer_offset(o, l->nouter, l->sizes, l->ostrides);
    for (int64_t r = r0; r < r1; r++) {
      char *vp = view + (vo + offs[b]) * (int64_t)es;
      char *op = other + (oo + b * l->ob) * (int64_t)es;
      if (d.n == 0) memcpy(put ? vp : op, put ? op : vp, es);
      else if (contig) memcpy(put ? vp : op, put ? op : vp, bytes);
      else if (put) block(vp, d.v, op, d.o, d.n, d.size);
      else block(op, d.o, vp, d.v, d.n, d.size);
      if (++b == nb && r + 1 < r1) {
        b = 0;
        o++;
        vo = outer_offset(o, l->nouter, l->sizes, l->vstrides);
        oo = outer_offset(o, l->nouter, l->sizes, l->ostrides);
      }
    }
  });
}

static void cpu_key_gather(const em_tensor *view, em_tensor *out, const em_tensor *offsets,
                           const em_key_layout *l) {
  key_copy(em_tensor_data(view), em_tensor_data(out), 0, offsets, l,
           em_dtype_size(view->dtype));
}

static void cpu_key_put(em_tensor *view, const em_tensor *value, const em_tensor *offsets,
                        const em_key_layout *l) {
  key_copy(em_tensor_data(view), em_tensor_data(value), 1, offsets, l,
           em_dtype_size(view->dtype));
}

static void cpu_key_accumulate(const em_iter *it, em_dtype dt) {
  run(it, accumulate_loops[dt], NULL);
}

const em_index_kernels em_cpu_index_kernels = {
    .normalize = cpu_normalize,
    .gather = cpu_gather,
    .select_blocks = cpu_select_blocks,
    .scatter = cpu_scatter,
    .scatter_mean_div = cpu_scatter_mean_div,
    .masked_fill = cpu_masked_fill,
    .mask_count = cpu_mask_count,
    .masked_compact = cpu_masked_compact,
    .mask_prefix = cpu_mask_prefix,
    .masked_select = cpu_masked_select,
    .masked_scatter = cpu_masked_scatter,
    .nonzero = cpu_nonzero,
    .where = cpu_where,
    .repeat_total = cpu_repeat_total,
    .repeat_positions = cpu_repeat_positions,
    .key_offsets = cpu_key_offsets,
    .key_mask_offsets = cpu_key_mask_offsets,
    .key_gather = cpu_key_gather,
    .key_put = cpu_key_put,
    .key_accumulate = cpu_key_accumulate,
};
