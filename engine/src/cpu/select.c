/*
** select.c -- the index family: index_select, gather, take, scatter (and
** its reductions), put_, the index_* writes, the masked ops, nonzero and
** where.
**
** Guarantees:
** - Index tensors are int64 or int32 and hold 1-based positions (negative
**   ones count from the end). Every index is normalised and bounds-checked
**   into a private 0-based int64 copy BEFORE any element is read or
**   written, so a bad index never reads out of bounds and an in-place op
**   that fails leaves its destination untouched.
** - Every kernel runs through the one iterator (iter.h). An indexed
**   operand is presented to the iterator "restrided": the iteration shape
**   is the index's, and the indexed dim gets stride 0, so the kernel only
**   adds index * (that dim's stride in bytes) to the pointer it is handed
**   (PyTorch's TensorIterator trick for index kernels). Two fast paths of
**   contiguous operands have no strides to walk and skip it: the block
**   copies of index_select and the run compaction of masked_select.
** - Per-dtype kernels are generated from EM_FOR_EACH_DTYPE with grep-able
**   names (em_gather_f32, em_scatter_add_i64, em_masked_fill_b8, ...).
** - Writes of a source that overlaps the destination read a snapshot.
*/
#include "core/iter.h"
#include "autograd/autograd.h"

#include <math.h>
#include <stdlib.h>
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

typedef struct {
  int64_t stride;   /* bytes between positions along the indexed dim */
  double alpha_f;   /* scale of src for SUM (floating dtypes) */
  int64_t alpha_i;  /* the same for integer dtypes */
} index_ctx;

/* Gather: operands (out, src restrided, idx); out = src[idx]. */
#define DEF_GATHER(S, E, CT, K)                                             \
  static void em_gather_##S(char **data, const int64_t *st, int64_t n,      \
                            void *vctx) {                                   \
    const int64_t ds = ((const index_ctx *)vctx)->stride;                   \
    char *o = data[0];                                                      \
    const char *s = data[1], *ix = data[2];                                 \
    for (int64_t i = 0; i < n; i++, o += st[0], s += st[1], ix += st[2])    \
      *(CT *)o = *(const CT *)(s + *(const int64_t *)ix * ds);              \
  }
EM_FOR_EACH_DTYPE(DEF_GATHER)

/* Scatter: operands (dst restrided, idx, src); dst[idx] (op)= src. */
#define SCATTER_LOOP(NAME, S, K, BODY_I, BODY_F)                             \
  static void NAME(char **data, const int64_t *st, int64_t n, void *vctx) { \
    const index_ctx *c = vctx;                                              \
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
    const int64_t ds = ((const index_ctx *)vctx)->stride;                     \
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

/* Masked ops. masked_fill: (dst, mask); masked_select: (src, mask, prefix)
** writing out[prefix - 1]; masked_scatter: (dst, mask, prefix) reading
** source[prefix - 1]; where: (out, cond, a, b). The prefix operand holds
** the inclusive running count of true mask positions in row-major order,
** so the iteration order does not matter. */
typedef struct {
  char *base;           /* out (masked_select) or source (masked_scatter) */
  uint64_t value;       /* masked_fill's value, as element bytes */
} mask_ctx;

#define DEF_MASKED(S, E, CT, K)                                               \
  static void em_masked_fill_##S(char **data, const int64_t *st, int64_t n,   \
                                 void *vctx) {                                \
    CT v;                                                                     \
    memcpy(&v, &((const mask_ctx *)vctx)->value, sizeof v);                   \
    char *d = data[0];                                                        \
    const char *m = data[1];                                                  \
    for (int64_t i = 0; i < n; i++, d += st[0], m += st[1])                   \
      if (*(const bool *)m) *(CT *)d = v;                                     \
  }                                                                           \
  static void em_masked_select_##S(char **data, const int64_t *st,            \
                                   int64_t n, void *vctx) {                   \
    CT *out = (CT *)((const mask_ctx *)vctx)->base;                           \
    const char *s = data[0], *m = data[1], *p = data[2];                      \
    for (int64_t i = 0; i < n; i++, s += st[0], m += st[1], p += st[2])       \
      if (*(const bool *)m) out[*(const int64_t *)p - 1] = *(const CT *)s;    \
  }                                                                           \
  static void em_masked_scatter_##S(char **data, const int64_t *st,           \
                                    int64_t n, void *vctx) {                  \
    const CT *src = (const CT *)((const mask_ctx *)vctx)->base;               \
    char *d = data[0];                                                        \
    const char *m = data[1], *p = data[2];                                    \
    for (int64_t i = 0; i < n; i++, d += st[0], m += st[1], p += st[2])       \
      if (*(const bool *)m) *(CT *)d = src[*(const int64_t *)p - 1];          \
  }                                                                           \
  static void em_where_##S(char **data, const int64_t *st, int64_t n,         \
                           void *vctx) {                                      \
    char *o = data[0];                                                        \
    const char *c = data[1], *a = data[2], *b = data[3];                      \
    (void)vctx;                                                               \
    for (int64_t i = 0; i < n;                                                \
         i++, o += st[0], c += st[1], a += st[2], b += st[3])                 \
      *(CT *)o = *(const bool *)c ? *(const CT *)a : *(const CT *)b;          \
  }
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
typedef void (*compact_fn)(char *, const char *, const uint8_t *, int64_t);
#define COMPACT_ROW(S, E, CT, K) [E] = em_masked_compact_##S,
static const compact_fn compact_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(COMPACT_ROW)};

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
TABLE(masked_select_loops, em_masked_select)
TABLE(masked_scatter_loops, em_masked_scatter)
TABLE(where_loops, em_where)

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

/* -- Checks and index normalisation ----------------------------------------- */

static em_status cpu_only(const char *op, const em_tensor *t) {
  if (t && t->storage->device.type != EM_CPU)
    return em_fail(EM_E_RUNTIME, "%s: only CPU tensors are supported", op);
  return EM_OK;
}

static em_status check_writable(const char *op, const em_tensor *t) {
  em_status st = cpu_only(op, t);
  if (st != EM_OK) return st;
  if (em_has_internal_overlap(t))
    return em_fail(EM_E_VALUE,
                   "%s: unsupported operation: more than one element of the "
                   "written-to tensor refers to a single memory location "
                   "(an expanded tensor?); clone() it before writing", op);
  return EM_OK;
}

static em_status check_index_dtype(const char *op, const em_tensor *idx) {
  em_status st = cpu_only(op, idx);
  if (st != EM_OK) return st;
  if (idx->dtype != EM_INT64 && idx->dtype != EM_INT32)
    return em_fail(EM_E_TYPE,
                   "%s: expected an int64 or int32 index tensor, got %s", op,
                   em_dtype_name(idx->dtype));
  return EM_OK;
}

static em_status check_mask(const char *op, const em_tensor *mask) {
  em_status st = cpu_only(op, mask);
  if (st != EM_OK) return st;
  if (mask->dtype != EM_BOOL)
    return em_fail(EM_E_TYPE, "%s: expected a bool mask, got %s", op,
                   em_dtype_name(mask->dtype));
  return EM_OK;
}

static em_status check_same_dtype(const char *op, const em_tensor *t,
                                  const em_tensor *src, const char *what) {
  if (t->dtype != src->dtype)
    return em_fail(EM_E_TYPE, "%s: expected %s to have the dtype of self (%s), got %s",
                   op, what, em_dtype_name(t->dtype), em_dtype_name(src->dtype));
  return cpu_only(op, src);
}

/* A contiguous int64 copy of idx with every value turned into a 0-based
** offset in [0, size). dim1 > 0 names the dimension in the message; 0 means
** positions in t read as 1-d (take/put_). */
static em_status normalize_index(const char *op, const em_tensor *idx,
                                 int64_t size, int dim1, em_tensor **out) {
  em_tensor *c;
  em_status st = check_index_dtype(op, idx);
  if (st != EM_OK) return st;
  st = em_empty(idx->ndim, idx->sizes, EM_INT64, em_cpu(), &c);
  if (st != EM_OK) return st;
  st = em_copy_(c, idx);
  if (st != EM_OK) { em_tensor_release(c); return st; }
  int64_t n = em_tensor_numel(c), *v = em_tensor_data(c);
  for (int64_t i = 0; i < n; i++) {
    int64_t x = v[i], k = x > 0 ? x - 1 : x + size;
    if (x == 0 || k < 0 || k >= size) {
      const char *hint = x == 0 ? " (positions are 1-based)" : "";
      em_tensor_release(c);
      if (dim1 > 0)
        return em_fail(EM_E_INDEX,
                       "%s: index %lld is out of bounds for dimension %d with size %lld%s",
                       op, (long long)x, dim1, (long long)size, hint);
      return em_fail(EM_E_INDEX,
                     "%s: index %lld is out of bounds for a tensor of %lld elements%s",
                     op, (long long)x, (long long)size, hint);
    }
    v[i] = k;
  }
  *out = c;
  return EM_OK;
}

/* A stack copy of t's header with other sizes/strides: only ever handed
** to em_iter_build (never retained or released). */
static void restride(em_tensor *v, const em_tensor *t, int ndim,
                     const int64_t *sizes, const int64_t *strides) {
  memcpy((void *)v, (const void *)t, sizeof *v);
  v->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    v->sizes[i] = sizes[i];
    v->strides[i] = strides[i];
  }
}

/* The size and stride (elements) of t along axis; a 0-d tensor reads as
** one element. */
static int64_t dim_size(const em_tensor *t, int axis) {
  return t->ndim == 0 ? 1 : t->sizes[axis];
}
static int64_t dim_stride(const em_tensor *t, int axis) {
  return t->ndim == 0 ? 0 : t->strides[axis];
}

/* Runs loop over ops (already restrided to shape). */
static em_status run3(const char *op, int nops, const em_tensor *const *ops,
                      int ndim, const int64_t *shape, em_loop1d loop, void *ctx) {
  em_iter it;
  em_status st = em_iter_build(&it, op, nops, ops, ndim, shape, false);
  if (st != EM_OK) return st;
  if (it.numel > 0) em_iter_run(&it, loop, ctx);
  return EM_OK;
}

/* If src may share bytes with dst, *snap gets a clone to read instead. */
static em_status snapshot(const em_tensor *dst, const em_tensor **src,
                          em_tensor **snap) {
  *snap = NULL;
  if (!*src || !em_may_overlap(dst, *src)) return EM_OK;
  em_status st = em_clone(*src, snap);
  if (st == EM_OK) *src = *snap;
  return st;
}

/* A 0-d tensor of dtype dt holding value (for value forms: stride 0). */
static em_status scalar_tensor(em_scalar value, em_dtype dt, em_tensor **out) {
  return em_full(0, NULL, value, dt, em_cpu(), out);
}

/* -- Gather-like reads --------------------------------------------------------
** gather_core: out (contiguous, shape n/sizes) = src[..idx..] where src is
** t restrided (t's strides, indexed axis stride 0) and idx is given with
** its own strides over the same shape. */
static em_status gather_core(const char *op, const em_tensor *t,
                             const em_tensor *idx, const int64_t *idx_strides,
                             int ndim, const int64_t *shape,
                             const int64_t *src_strides, int64_t elem_stride,
                             em_tensor **out) {
  em_tensor *o;
  em_status st = em_empty(ndim, shape, t->dtype, em_cpu(), &o);
  if (st != EM_OK) return st;
  em_tensor sv, iv;
  restride(&sv, t, ndim, shape, src_strides);
  restride(&iv, idx, ndim, shape, idx_strides);
  index_ctx c = {elem_stride * (int64_t)em_dtype_size(t->dtype), 0, 0};
  const em_tensor *ops[3] = {o, &sv, &iv};
  st = run3(op, 3, ops, ndim, shape, gather_loops[t->dtype], &c);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

static em_status check_vector_index(const char *op, const em_tensor *index) {
  if (index->ndim > 1)
    return em_fail(EM_E_VALUE, "%s: index must be 1-d or 0-d, got %d dimensions",
                   op, index->ndim);
  return EM_OK;
}

/* index_select of a contiguous tensor: every selected slice is one block of
** `inner` contiguous bytes, so the result is a run of block copies (the
** iterator would walk it element by element). idx holds 0-based positions,
** already checked. Blocks are independent, so threads split them. */
static void index_select_blocks(const char *src, char *dst, const int64_t *idx,
                                int64_t len, int64_t outer, int64_t axis_bytes,
                                size_t inner) {
  int64_t total = outer * len;
#pragma omp parallel for schedule(static) if (total * (int64_t)inner > ((int64_t)1 << 20))
  for (int64_t r = 0; r < total; r++) {
    int64_t o = r / len, j = r - o * len;
    memcpy(dst + r * (int64_t)inner, src + o * axis_bytes + idx[j] * (int64_t)inner, inner);
  }
}

static em_status index_select_nograd(const em_tensor *t, int64_t dim,
                          const em_tensor *index, em_tensor **out) {
  const char *op = "index_select";
  int axis;
  em_status st = cpu_only(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = check_vector_index(op, index);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  em_tensor *idx;
  st = normalize_index(op, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  int64_t len = em_tensor_numel(idx);
  int nd = t->ndim;
  int64_t shape[EM_MAX_DIMS], ss[EM_MAX_DIMS], is[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    shape[i] = i == axis ? len : t->sizes[i];
    ss[i] = i == axis ? 0 : t->strides[i];
    is[i] = i == axis ? 1 : 0;
  }
  if (nd == 0) { /* a 0-d tensor: index holds one position, result 0-d */
    if (len != 1) {
      em_tensor_release(idx);
      return em_fail(EM_E_VALUE, "%s: a 0-d tensor takes exactly one index, got %lld",
                     op, (long long)len);
    }
  }
  if (nd > 0 && em_tensor_is_contiguous(t)) { /* fast path: block copies */
    em_tensor *o;
    st = em_empty(nd, shape, t->dtype, em_cpu(), &o);
    if (st == EM_OK) {
      size_t inner = em_dtype_size(t->dtype);
      int64_t outer = 1;
      for (int i = axis + 1; i < nd; i++) inner *= (size_t)t->sizes[i];
      for (int i = 0; i < axis; i++) outer *= t->sizes[i];
      if (inner > 0 && len > 0 && outer > 0)
        index_select_blocks((const char *)em_tensor_data(t), em_tensor_data(o),
                            em_tensor_data(idx), len, outer,
                            t->sizes[axis] * (int64_t)inner, inner);
      *out = o;
    }
    em_tensor_release(idx);
    return st;
  }
  st = gather_core(op, t, idx, is, nd, shape, ss, dim_stride(t, axis), out);
  em_tensor_release(idx);
  return st;
}

static em_status gather_nograd(const em_tensor *t, int64_t dim, const em_tensor *index,
                    em_tensor **out) {
  const char *op = "gather";
  int axis;
  em_status st = cpu_only(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  int tnd = t->ndim ? t->ndim : 1, ind = index->ndim ? index->ndim : 1;
  if (tnd != ind)
    return em_fail(EM_E_VALUE,
                   "%s: index tensor must have the same number of dimensions as "
                   "input tensor (%d), got %d", op, t->ndim, index->ndim);
  for (int i = 0; i < index->ndim; i++)
    if (i != axis && index->sizes[i] > dim_size(t, i))
      return em_fail(EM_E_VALUE,
                     "%s: size of index (%lld) exceeds the size of input (%lld) "
                     "in dimension %d", op, (long long)index->sizes[i],
                     (long long)dim_size(t, i), i + 1);
  em_tensor *idx;
  st = normalize_index(op, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  int nd = index->ndim;
  int64_t ss[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) ss[i] = i == axis ? 0 : t->strides[i];
  st = gather_core(op, t, idx, idx->strides, nd, idx->sizes, ss,
                   dim_stride(t, axis), out);
  em_tensor_release(idx);
  return st;
}

static em_status take_nograd(const em_tensor *t, const em_tensor *index, em_tensor **out) {
  const char *op = "take";
  em_status st = cpu_only(op, t);
  if (st != EM_OK) return st;
  em_tensor *idx, *tc;
  st = normalize_index(op, index, em_tensor_numel(t), 0, &idx);
  if (st != EM_OK) return st;
  st = em_contiguous(t, &tc);
  if (st != EM_OK) { em_tensor_release(idx); return st; }
  int64_t zero[EM_MAX_DIMS] = {0};
  st = gather_core(op, tc, idx, idx->strides, idx->ndim, idx->sizes, zero, 1, out);
  em_tensor_release(tc);
  em_tensor_release(idx);
  return st;
}

/* -- Scatter-like writes ------------------------------------------------------
** scatter_core: dst is t restrided to shape (indexed axis stride 0), idx
** and src are given over the same shape. */
static em_status scatter_core(const char *op, em_tensor *t, int ndim,
                              const int64_t *shape, const int64_t *dst_strides,
                              const em_tensor *idx, const int64_t *idx_strides,
                              const em_tensor *src, const int64_t *src_strides,
                              int64_t elem_stride, em_scatter_mode r, em_scalar alpha) {
  em_tensor dv, iv, sv;
  restride(&dv, t, ndim, shape, dst_strides);
  restride(&iv, idx, ndim, shape, idx_strides);
  restride(&sv, src, ndim, shape, src_strides);
  index_ctx c;
  c.stride = elem_stride * (int64_t)em_dtype_size(t->dtype);
  c.alpha_f = alpha.kind == EM_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  c.alpha_i = alpha.kind == EM_SCALAR_FLOAT ? (int64_t)alpha.f : alpha.i;
  const em_tensor *ops[3] = {&dv, &iv, &sv};
  return run3(op, 3, ops, ndim, shape, scatter_loop(r, t->dtype), &c);
}

static const em_scalar ONE = {EM_SCALAR_INT, 1, 1.0};

/* The checks scatter, scatter_add and scatter_reduce share. */
static em_status scatter_checks(const char *op, const em_tensor *t, int64_t dim,
                                const em_tensor *index, const em_tensor *src,
                                int *axis) {
  em_status st = check_writable(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK && src) st = check_same_dtype(op, t, src, "src");
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, axis);
  if (st != EM_OK) return st;
  int tnd = t->ndim ? t->ndim : 1, ind = index->ndim ? index->ndim : 1;
  if (tnd != ind)
    return em_fail(EM_E_VALUE,
                   "%s: index tensor must have the same number of dimensions as "
                   "self tensor (%d), got %d", op, t->ndim, index->ndim);
  if (src) {
    int snd = src->ndim ? src->ndim : 1;
    if (snd != ind)
      return em_fail(EM_E_VALUE,
                     "%s: index tensor must have the same number of dimensions as "
                     "src tensor (%d), got %d", op, src->ndim, index->ndim);
  }
  for (int i = 0; i < index->ndim; i++) {
    if (i != *axis && index->sizes[i] > dim_size(t, i))
      return em_fail(EM_E_VALUE,
                     "%s: size of index (%lld) exceeds the size of self (%lld) in "
                     "dimension %d", op, (long long)index->sizes[i],
                     (long long)dim_size(t, i), i + 1);
    if (src && index->sizes[i] > dim_size(src, i))
      return em_fail(EM_E_VALUE,
                     "%s: size of index (%lld) exceeds the size of src (%lld) in "
                     "dimension %d", op, (long long)index->sizes[i],
                     (long long)dim_size(src, i), i + 1);
  }
  return EM_OK;
}

/* Runs one scatter pass of src (a tensor, or NULL for the 0-d value tensor
** vt) into t with reduction r; idx is normalised. */
static em_status scatter_pass(const char *op, em_tensor *t, int axis,
                              const em_tensor *idx, const em_tensor *src,
                              em_scatter_mode r) {
  int nd = idx->ndim;
  int64_t ds[EM_MAX_DIMS], ss[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    ds[i] = i == axis ? 0 : t->strides[i];
    ss[i] = src->ndim == 0 ? 0 : src->strides[i];
  }
  return scatter_core(op, t, nd, idx->sizes, ds, idx, idx->strides, src, ss,
                      dim_stride(t, axis), r, ONE);
}

static em_status scatter_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                      const em_tensor *src, em_scalar value, em_scatter_mode reduce) {
  const char *op = "scatter_";
  int axis;
  if (reduce != EM_SCATTER_NONE && reduce != EM_SCATTER_SUM && reduce != EM_SCATTER_PROD)
    return em_fail(EM_E_VALUE, "%s: reduce must be 'add' or 'multiply'", op);
  em_status st = scatter_checks(op, t, dim, index, src, &axis);
  if (st != EM_OK) return st;
  em_tensor *idx, *snap = NULL, *vt = NULL;
  st = normalize_index(op, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  if (src) st = snapshot(t, &src, &snap);
  else st = scalar_tensor(value, t->dtype, &vt), src = vt;
  if (st == EM_OK) st = scatter_pass(op, t, axis, idx, src, reduce);
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(snap);
  em_tensor_release(vt);
  em_tensor_release(idx);
  return st;
}

/* The identity of a reduction, written where include_self = 0 applies. */
static em_scalar reduce_identity(em_scatter_mode r, em_dtype dt) {
  em_scalar s = {EM_SCALAR_INT, 0, 0.0};
  if (r == EM_SCATTER_PROD) s.i = 1, s.f = 1.0;
  if (r == EM_SCATTER_AMAX || r == EM_SCATTER_AMIN) {
    if (dt == EM_BOOL) {
      s.i = r == EM_SCATTER_AMIN;
    } else { /* +-inf saturates to the integer dtypes' extremes */
      s.kind = EM_SCALAR_FLOAT;
      s.f = r == EM_SCATTER_AMAX ? -INFINITY : INFINITY;
    }
  }
  return s;
}

static em_status scatter_reduce_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                             const em_tensor *src, em_scatter_mode reduce,
                             int include_self) {
  const char *op = "scatter_reduce";
  int axis;
  if (reduce == EM_SCATTER_NONE || (unsigned)reduce > EM_SCATTER_AMIN)
    return em_fail(EM_E_VALUE,
                   "%s: reduce must be one of 'sum', 'prod', 'mean', 'amax', 'amin'", op);
  if (!src) return em_fail(EM_E_VALUE, "%s: src must be a tensor", op);
  em_status st = scatter_checks(op, t, dim, index, src, &axis);
  if (st != EM_OK) return st;
  em_tensor *idx, *snap = NULL, *idt = NULL, *cnt = NULL, *one = NULL;
  st = normalize_index(op, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  st = snapshot(t, &src, &snap);
  if (st == EM_OK && !include_self) {
    st = scalar_tensor(reduce_identity(reduce, t->dtype), t->dtype, &idt);
    if (st == EM_OK) st = scatter_pass(op, t, axis, idx, idt, EM_SCATTER_NONE);
  }
  if (st == EM_OK && reduce == EM_SCATTER_MEAN) {
    /* count[pos] = (include_self ? 1 : 0) + contributions at pos */
    em_scalar base = {EM_SCALAR_INT, include_self ? 1 : 0, 0.0};
    st = em_full(t->ndim, t->sizes, base, EM_INT64, em_cpu(), &cnt);
    if (st == EM_OK) st = scalar_tensor(ONE, EM_INT64, &one);
    if (st == EM_OK) {
      int nd = idx->ndim;
      int64_t ds[EM_MAX_DIMS], zs[EM_MAX_DIMS] = {0};
      for (int i = 0; i < nd; i++) ds[i] = i == axis ? 0 : cnt->strides[i];
      st = scatter_core(op, cnt, nd, idx->sizes, ds, idx, idx->strides, one, zs,
                        dim_stride(cnt, axis), EM_SCATTER_SUM, ONE);
    }
  }
  if (st == EM_OK) st = scatter_pass(op, t, axis, idx, src, reduce);
  if (st == EM_OK && reduce == EM_SCATTER_MEAN) {
    const em_tensor *ops[2] = {t, cnt};
    st = run3(op, 2, ops, t->ndim, t->sizes, mean_div_loops[t->dtype], NULL);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(snap);
  em_tensor_release(idt);
  em_tensor_release(cnt);
  em_tensor_release(one);
  em_tensor_release(idx);
  return st;
}

/* -- put_ ----------------------------------------------------------------------- */

static em_status put_nograd(em_tensor *t, const em_tensor *index, const em_tensor *src,
                  int accumulate) {
  const char *op = "put_";
  em_status st = check_writable(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = check_same_dtype(op, t, src, "source");
  if (st != EM_OK) return st;
  int64_t n = em_tensor_numel(index);
  if (em_tensor_numel(src) != n)
    return em_fail(EM_E_VALUE,
                   "%s: expected source and index to have the same number of "
                   "elements, but got %lld and %lld", op,
                   (long long)em_tensor_numel(src), (long long)n);
  em_tensor *idx, *sc = NULL, *work = NULL;
  st = normalize_index(op, index, em_tensor_numel(t), 0, &idx);
  if (st != EM_OK) return st;
  /* positions are row-major: work on t itself when contiguous, else on a
  ** contiguous copy that is written back */
  if (em_tensor_is_contiguous(t)) {
    em_tensor_retain(t);
    work = t;
  } else {
    st = em_contiguous(t, &work);
  }
  /* a contiguous copy of the source, read in row-major order (and a
  ** snapshot, should it share bytes with t) */
  if (st == EM_OK) st = em_empty(src->ndim, src->sizes, src->dtype, em_cpu(), &sc);
  if (st == EM_OK) st = em_copy_(sc, src);
  if (st == EM_OK && n > 0) {
    int64_t shape[1] = {n}, zero[1] = {0}, one[1] = {1};
    st = scatter_core(op, work, 1, shape, zero, idx, one, sc, one, 1,
                      accumulate ? EM_SCATTER_SUM : EM_SCATTER_NONE, ONE);
    if (st == EM_OK && work != t) st = em_copy_(t, work);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(sc);
  em_tensor_release(work);
  em_tensor_release(idx);
  return st;
}

/* -- index_fill_ / index_copy_ / index_add_ -------------------------------------- */

/* dst[.., idx[i], ..] (op)= src[.., i, ..] along axis, src shaped like t
** with the index's length at axis (or a 0-d value tensor). */
static em_status index_write(const char *op, em_tensor *t, int64_t dim,
                             const em_tensor *index, const em_tensor *src,
                             em_scalar value, em_scatter_mode r, em_scalar alpha) {
  int axis;
  em_status st = check_writable(op, t);
  if (st == EM_OK) st = check_index_dtype(op, index);
  if (st == EM_OK) st = check_vector_index(op, index);
  if (st == EM_OK && src) st = check_same_dtype(op, t, src, "source");
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  int64_t len = em_tensor_numel(index);
  int nd = t->ndim;
  int64_t shape[EM_MAX_DIMS], ds[EM_MAX_DIMS], is[EM_MAX_DIMS], ss[EM_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    shape[i] = i == axis ? len : t->sizes[i];
    ds[i] = i == axis ? 0 : t->strides[i];
    is[i] = i == axis ? 1 : 0;
  }
  if (src && !(src->ndim == 0 && em_tensor_numel(index) == 1 && nd <= 1)) {
    bool ok = src->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = src->sizes[i] == shape[i];
    if (!ok) {
      char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
      return em_fail(EM_E_VALUE,
                     "%s: source of shape %s does not match the expected shape %s "
                     "(self's shape with the index's length %lld in dimension %d)",
                     op, em_fmt_shape(b1, sizeof b1, src->ndim, src->sizes),
                     em_fmt_shape(b2, sizeof b2, nd, shape), (long long)len, axis + 1);
    }
  }
  if (nd == 0 && len != 1)
    return em_fail(EM_E_VALUE, "%s: a 0-d tensor takes exactly one index, got %lld",
                   op, (long long)len);
  em_tensor *idx, *snap = NULL, *vt = NULL;
  st = normalize_index(op, index, dim_size(t, axis), axis + 1, &idx);
  if (st != EM_OK) return st;
  if (src) st = snapshot(t, &src, &snap);
  else st = scalar_tensor(value, t->dtype, &vt), src = vt;
  if (st == EM_OK) {
    for (int i = 0; i < nd; i++) ss[i] = src->ndim == 0 ? 0 : src->strides[i];
    st = scatter_core(op, t, nd, shape, ds, idx, is, src, ss, dim_stride(t, axis),
                      r, alpha);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(snap);
  em_tensor_release(vt);
  em_tensor_release(idx);
  return st;
}

static em_status index_fill_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                         em_scalar value) {
  return index_write("index_fill_", t, dim, index, NULL, value, EM_SCATTER_NONE, ONE);
}

static em_status index_copy_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                         const em_tensor *src) {
  if (!src) return em_fail(EM_E_VALUE, "index_copy_: source must be a tensor");
  return index_write("index_copy_", t, dim, index, src, ONE, EM_SCATTER_NONE, ONE);
}

static em_status index_add_nograd(em_tensor *t, int64_t dim, const em_tensor *index,
                        const em_tensor *src, em_scalar alpha) {
  if (!src) return em_fail(EM_E_VALUE, "index_add_: source must be a tensor");
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT && alpha.kind == EM_SCALAR_FLOAT)
    return em_fail(EM_E_TYPE,
                   "index_add_: for an integral self (%s), alpha must be an integer, "
                   "got %g", em_dtype_name(t->dtype), alpha.f);
  return index_write("index_add_", t, dim, index, src, ONE, EM_SCATTER_SUM, alpha);
}

/* -- Masks ----------------------------------------------------------------------- */

/* mask broadcast to (ndim, shape): its restrided header (no allocation). */
static em_status expand_to(const char *op, const em_tensor *m, int ndim,
                           const int64_t *shape, em_tensor *view) {
  int64_t st[EM_MAX_DIMS];
  if (m->ndim > ndim) goto bad;
  for (int i = 0; i < ndim; i++) {
    int a = i - (ndim - m->ndim);
    if (a < 0) { st[i] = 0; continue; }
    if (m->sizes[a] == shape[i]) st[i] = m->strides[a];
    else if (m->sizes[a] == 1) st[i] = 0;
    else goto bad;
  }
  restride(view, m, ndim, shape, st);
  return EM_OK;
bad:;
  char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
  return em_fail(EM_E_VALUE, "%s: mask of shape %s does not match (cannot be "
                 "broadcast to) the tensor's shape %s", op,
                 em_fmt_shape(b1, sizeof b1, m->ndim, m->sizes),
                 em_fmt_shape(b2, sizeof b2, ndim, shape));
}

/* A contiguous bool copy of mask over shape, and its inclusive prefix count
** (int64, row-major). *count gets the number of true positions. */
static em_status mask_prefix(const em_tensor *mview, em_tensor **mc, em_tensor **pre,
                             int64_t *count) {
  em_status st = em_empty(mview->ndim, mview->sizes, EM_BOOL, em_cpu(), mc);
  if (st != EM_OK) return st;
  st = em_copy_(*mc, mview);
  if (st == EM_OK) st = em_empty(mview->ndim, mview->sizes, EM_INT64, em_cpu(), pre);
  if (st != EM_OK) { em_tensor_release(*mc); *mc = NULL; return st; }
  int64_t n = em_tensor_numel(*mc), c = 0, *p = em_tensor_data(*pre);
  const bool *m = em_tensor_data(*mc);
  for (int64_t i = 0; i < n; i++) p[i] = (c += m[i]);
  *count = c;
  return EM_OK;
}

/* masked_select when the (broadcast) source and mask are both contiguous:
** no mask copy and no prefix tensor. The mask is cut into runs of a fixed
** length; each run's count is taken (in parallel), the counts' prefix gives
** each run its place in out, and the runs are compacted in parallel. The
** result is the same on any number of threads. */
enum { MASK_RUN = 1 << 18 };
static em_status masked_select_dense(const em_tensor *tv, const em_tensor *mv,
                                     em_tensor **out) {
  int64_t n = em_tensor_numel(tv);
  int64_t nruns = (n + MASK_RUN - 1) / MASK_RUN;
  int64_t *pos = malloc((size_t)(nruns + 1) * sizeof *pos);
  if (!pos) return em_fail(EM_E_NOMEM, "masked_select: out of memory");
  const uint8_t *m = em_tensor_data(mv);
  const char *src = em_tensor_data(tv);
  size_t es = em_dtype_size(tv->dtype);
#pragma omp parallel for schedule(static) if (n > 2 * MASK_RUN)
  for (int64_t r = 0; r < nruns; r++) {
    int64_t b = r * MASK_RUN, e = b + MASK_RUN < n ? b + MASK_RUN : n, c = 0;
    for (int64_t i = b; i < e; i++) c += m[i] != 0;
    pos[r + 1] = c;
  }
  pos[0] = 0;
  for (int64_t r = 0; r < nruns; r++) pos[r + 1] += pos[r];
  em_tensor *o;
  int64_t osize[1] = {pos[nruns]};
  em_status st = em_empty(1, osize, tv->dtype, em_cpu(), &o);
  if (st == EM_OK) {
    char *dst = em_tensor_data(o);
    compact_fn f = compact_loops[tv->dtype];
#pragma omp parallel for schedule(static) if (n > 2 * MASK_RUN)
    for (int64_t r = 0; r < nruns; r++) {
      int64_t b = r * MASK_RUN, e = b + MASK_RUN < n ? b + MASK_RUN : n;
      f(dst + pos[r] * (int64_t)es, src + b * (int64_t)es, m + b, e - b);
    }
    *out = o;
  }
  free(pos);
  return st;
}

static em_status masked_select_nograd(const em_tensor *t, const em_tensor *mask,
                           em_tensor **out) {
  const char *op = "masked_select";
  em_status st = cpu_only(op, t);
  if (st == EM_OK) st = check_mask(op, mask);
  if (st != EM_OK) return st;
  int nd;
  int64_t shape[EM_MAX_DIMS];
  const em_tensor *both[2] = {t, mask};
  st = em_broadcast_shapes(op, 2, both, &nd, shape);
  if (st != EM_OK) return st;
  em_tensor tv, mv, *mc, *pre, *o;
  expand_to(op, t, nd, shape, &tv);
  expand_to(op, mask, nd, shape, &mv);
  if (em_tensor_is_contiguous(&tv) && em_tensor_is_contiguous(&mv))
    return masked_select_dense(&tv, &mv, out);
  int64_t count;
  st = mask_prefix(&mv, &mc, &pre, &count);
  if (st != EM_OK) return st;
  int64_t osize[1] = {count};
  st = em_empty(1, osize, t->dtype, em_cpu(), &o);
  if (st == EM_OK) {
    mask_ctx c = {em_tensor_data(o), 0};
    const em_tensor *ops[3] = {&tv, mc, pre};
    st = run3(op, 3, ops, nd, shape, masked_select_loops[t->dtype], &c);
    if (st != EM_OK) em_tensor_release(o);
    else *out = o;
  }
  em_tensor_release(mc);
  em_tensor_release(pre);
  return st;
}

static em_status masked_fill_nograd(em_tensor *t, const em_tensor *mask, em_scalar value) {
  const char *op = "masked_fill_";
  em_status st = check_writable(op, t);
  if (st == EM_OK) st = check_mask(op, mask);
  if (st != EM_OK) return st;
  em_tensor mv, *snap = NULL;
  const em_tensor *m = mask;
  st = snapshot(t, &m, &snap);
  if (st == EM_OK) st = expand_to(op, m, t->ndim, t->sizes, &mv);
  if (st == EM_OK) {
    mask_ctx c = {NULL, 0};
    em_scalar_to_bytes(value, t->dtype, &c.value);
    const em_tensor *ops[2] = {t, &mv};
    st = run3(op, 2, ops, t->ndim, t->sizes, masked_fill_loops[t->dtype], &c);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(snap);
  return st;
}

static em_status masked_scatter_nograd(em_tensor *t, const em_tensor *mask,
                             const em_tensor *source) {
  const char *op = "masked_scatter_";
  em_status st = check_writable(op, t);
  if (st == EM_OK) st = check_mask(op, mask);
  if (st == EM_OK) st = check_same_dtype(op, t, source, "source");
  if (st != EM_OK) return st;
  em_tensor mv, *mc = NULL, *pre = NULL, *sc = NULL;
  st = expand_to(op, mask, t->ndim, t->sizes, &mv);
  if (st != EM_OK) return st;
  int64_t count;
  st = mask_prefix(&mv, &mc, &pre, &count);
  if (st != EM_OK) return st;
  if (em_tensor_numel(source) < count) {
    st = em_fail(EM_E_VALUE,
                 "%s: source has %lld elements but the mask has %lld true positions",
                 op, (long long)em_tensor_numel(source), (long long)count);
  } else {
    /* a contiguous snapshot: read in row-major order, never through t */
    st = em_empty(source->ndim, source->sizes, source->dtype, em_cpu(), &sc);
    if (st == EM_OK) st = em_copy_(sc, source);
  }
  if (st == EM_OK) {
    mask_ctx c = {em_tensor_data(sc), 0};
    const em_tensor *ops[3] = {t, mc, pre};
    st = run3(op, 3, ops, t->ndim, t->sizes, masked_scatter_loops[t->dtype], &c);
  }
  if (st == EM_OK) em_storage_bump_version(t->storage);
  em_tensor_release(mc);
  em_tensor_release(pre);
  em_tensor_release(sc);
  return st;
}

/* -- nonzero / where -------------------------------------------------------------- */

em_status em_nonzero(const em_tensor *t, em_tensor **out) {
  const char *op = "nonzero";
  em_status st = cpu_only(op, t);
  if (st != EM_OK) return st;
  em_tensor *b, *o;
  /* bool conversion is "!= 0" with NaN true, which is nonzero's rule */
  st = em_empty(t->ndim, t->sizes, EM_BOOL, em_cpu(), &b);
  if (st != EM_OK) return st;
  if ((st = em_copy_(b, t)) != EM_OK) { em_tensor_release(b); return st; }
  int64_t n = em_tensor_numel(b), count = 0;
  const bool *m = em_tensor_data(b);
  for (int64_t i = 0; i < n; i++) count += m[i];
  int nd = t->ndim;
  int64_t osize[2] = {count, nd};
  st = em_empty(2, osize, EM_INT64, em_cpu(), &o);
  if (st != EM_OK) { em_tensor_release(b); return st; }
  /* walk the row-major positions with a 1-based odometer */
  int64_t pos[EM_MAX_DIMS], *w = em_tensor_data(o);
  for (int d = 0; d < nd; d++) pos[d] = 1;
  for (int64_t i = 0; i < n; i++) {
    if (m[i] && nd > 0) { /* a 0-d tensor's rows have no columns */
      memcpy(w, pos, (size_t)nd * sizeof *w);
      w += nd;
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (++pos[d] <= t->sizes[d]) break;
      pos[d] = 1;
    }
  }
  em_tensor_release(b);
  *out = o;
  return EM_OK;
}

static em_status where_nograd(const em_tensor *cond, const em_tensor *a,
                   const em_tensor *b, em_dtype dt, em_tensor **out) {
  const char *op = "where";
  em_status st = check_mask(op, cond);
  if (st == EM_OK) st = cpu_only(op, a);
  if (st == EM_OK) st = cpu_only(op, b);
  if (st != EM_OK) return st;
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "%s: invalid dtype %d", op, (int)dt);
  int nd;
  int64_t shape[EM_MAX_DIMS];
  const em_tensor *all[3] = {cond, a, b};
  st = em_broadcast_shapes(op, 3, all, &nd, shape);
  if (st != EM_OK) return st;
  em_tensor *ac = NULL, *bc = NULL, *o = NULL;
  st = em_to(a, dt, em_cpu(), 0, &ac);
  if (st == EM_OK) st = em_to(b, dt, em_cpu(), 0, &bc);
  if (st == EM_OK) st = em_empty(nd, shape, dt, em_cpu(), &o);
  if (st == EM_OK) {
    const em_tensor *ops[4] = {o, cond, ac, bc};
    st = run3(op, 4, ops, nd, shape, where_loops[dt], NULL);
  }
  em_tensor_release(ac);
  em_tensor_release(bc);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** Reads are gathers: where each output element came from is found by running
** the op over an arange of t's shape. Writes record the positions they
** wrote (autograd.h, EM_AG_INPLACE). */

static double scalar_value(em_scalar v) {
  return v.kind == EM_SCALAR_FLOAT ? v.f : (double)v.i;
}

em_status em_index_select(const em_tensor *t, int64_t dim, const em_tensor *index,
                          em_tensor **out) {
  EM_AG_GATHER("IndexSelectBackward0", t, out,
               index_select_nograd(ag_src_, dim, index, ag_dst_));
}
em_status em_gather(const em_tensor *t, int64_t dim, const em_tensor *index,
                    em_tensor **out) {
  EM_AG_GATHER("GatherBackward0", t, out, gather_nograd(ag_src_, dim, index, ag_dst_));
}
em_status em_take(const em_tensor *t, const em_tensor *index, em_tensor **out) {
  EM_AG_GATHER("TakeBackward0", t, out, take_nograd(ag_src_, index, ag_dst_));
}
em_status em_masked_select(const em_tensor *t, const em_tensor *mask, em_tensor **out) {
  EM_AG_GATHER("MaskedSelectBackward0", t, out, masked_select_nograd(ag_src_, mask, ag_dst_));
}

em_status em_where(const em_tensor *cond, const em_tensor *a, const em_tensor *b,
                   em_dtype dt, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "WhereBackward0";
  p.save_in = 1;
  const em_tensor *in[3] = {cond, a, b};
  EM_AG_CALL(EM_AG_WHERE, 3, in, out, &p, where_nograd(cond, a, b, dt, out));
}

em_status em_put_(em_tensor *t, const em_tensor *index, const em_tensor *src,
                  int accumulate) {
  EM_AG_INPLACE("put_", "PutBackward0", t, src, accumulate, 1.0,
                put_nograd(t, index, src, accumulate), take_nograd(ag_ar_, index, &ag_pos_));
}

em_status em_scatter_(em_tensor *t, int64_t dim, const em_tensor *index,
                      const em_tensor *src, em_scalar value, em_scatter_mode reduce) {
  if (reduce != EM_SCATTER_NONE && reduce != EM_SCATTER_SUM) {
    em_status st = em_ag_unsupported("scatter_", t, src);
    if (st != EM_OK) return st;
  }
  EM_AG_INPLACE("scatter_", reduce == EM_SCATTER_SUM ? "ScatterAddBackward0" : "ScatterBackward0",
                t, src, reduce == EM_SCATTER_SUM, 1.0,
                scatter_nograd(t, dim, index, src, value, reduce),
                gather_nograd(ag_ar_, dim, index, &ag_pos_));
}

em_status em_scatter_reduce_(em_tensor *t, int64_t dim, const em_tensor *index,
                             const em_tensor *src, em_scatter_mode reduce,
                             int include_self) {
  if (reduce != EM_SCATTER_SUM || !include_self) {
    em_status st = em_ag_unsupported("scatter_reduce_", t, src);
    if (st != EM_OK) return st;
  }
  EM_AG_INPLACE("scatter_reduce_", "ScatterReduceBackward0", t, src, 1, 1.0,
                scatter_reduce_nograd(t, dim, index, src, reduce, include_self),
                gather_nograd(ag_ar_, dim, index, &ag_pos_));
}

em_status em_index_fill_(em_tensor *t, int64_t dim, const em_tensor *index,
                         em_scalar value) {
  EM_AG_INPLACE("index_fill_", "IndexFillBackward0", t, NULL, 0, 1.0,
                index_fill_nograd(t, dim, index, value),
                index_select_nograd(ag_ar_, dim, index, &ag_pos_));
}
em_status em_index_copy_(em_tensor *t, int64_t dim, const em_tensor *index,
                         const em_tensor *src) {
  EM_AG_INPLACE("index_copy_", "IndexCopyBackward0", t, src, 0, 1.0,
                index_copy_nograd(t, dim, index, src),
                index_select_nograd(ag_ar_, dim, index, &ag_pos_));
}
em_status em_index_add_(em_tensor *t, int64_t dim, const em_tensor *index,
                        const em_tensor *src, em_scalar alpha) {
  EM_AG_INPLACE("index_add_", "IndexAddBackward0", t, src, 1, scalar_value(alpha),
                index_add_nograd(t, dim, index, src, alpha),
                index_select_nograd(ag_ar_, dim, index, &ag_pos_));
}
em_status em_masked_fill_(em_tensor *t, const em_tensor *mask, em_scalar value) {
  EM_AG_INPLACE("masked_fill_", "MaskedFillBackward0", t, NULL, 0, 1.0,
                masked_fill_nograd(t, mask, value),
                masked_select_nograd(ag_ar_, mask, &ag_pos_));
}
/* the source is consumed in order: the node learns that (i[1]) after
** EM_AG_INPLACE-style recording */
em_status em_masked_scatter_(em_tensor *t, const em_tensor *mask, const em_tensor *source) {
  int on = em_ag_pause();
  int any = on && (t->requires_grad || source->requires_grad);
  em_status st = any ? em_ag_check_inplace("masked_scatter_", t) : EM_OK;
  if (st == EM_OK) st = masked_scatter_nograd(t, mask, source);
  em_tensor *ar = NULL, *pos = NULL;
  if (st == EM_OK && any) st = em_ag_arange_like(t, &ar);
  if (st == EM_OK && any) st = masked_select_nograd(ar, mask, &pos);
  em_ag_resume(on);
  if (st == EM_OK && any && em_dtype_kindof(t->dtype) == EM_KIND_FLOAT) {
    em_ag_params p;
    memset(&p, 0, sizeof p);
    p.name = "MaskedScatterBackward0";
    p.extra = pos;
    p.i[1] = 1;
    const em_tensor *in[2] = {t, source};
    st = em_ag_record(EM_AG_INDEXPUT, 2, in, 1, &t, &p);
  }
  em_tensor_release(ar);
  em_tensor_release(pos);
  return st;
}
