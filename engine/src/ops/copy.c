/*
** copy.c -- the strided copy kernel with casting, fill, clone, contiguous,
** to, and element reads. One copy kernel serves every assignment into a
** view: it broadcasts the source to the destination and converts between
** any two dtypes with the rules of core/core.h (docs/dtypes.md).
*/
#include "core/iter.h"
#include "autograd/autograd.h"

#include <stdlib.h>

/* -- Scalar conversions ---------------------------------------------------
** LOAD_x reads one element as its compute type (int64_t for bool/ints,
** float for half types and float32, double for float64); EM_STORE_x
** (core/core.h) writes a value of any of those types with the documented
** conversion. */

#define LOAD_b8(p) ((int64_t)(*(const bool *)(p)))
#define LOAD_u8(p) ((int64_t)(*(const uint8_t *)(p)))
#define LOAD_i8(p) ((int64_t)(*(const int8_t *)(p)))
#define LOAD_i16(p) ((int64_t)(*(const int16_t *)(p)))
#define LOAD_i32(p) ((int64_t)(*(const int32_t *)(p)))
#define LOAD_i64(p) (*(const int64_t *)(p))
#define LOAD_f16(p) (em_half_to_float(*(const em_half *)(p)))
#define LOAD_bf16(p) (em_bf16_to_float(*(const em_bfloat16 *)(p)))
#define LOAD_f32(p) (*(const float *)(p))
#define LOAD_f64(p) (*(const double *)(p))

/* -- Cast loops: em_cast_<dst>_<src>, 10 x 10 of them ---------------------- */

#define DEF_CAST(D, S)                                                       \
  static void em_cast_##D##_##S(char **data, const int64_t *st, int64_t n,   \
                                void *ctx) {                                 \
    char *d = data[0];                                                       \
    const char *s = data[1];                                                 \
    const int64_t sd = st[0], ss = st[1];                                    \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++, d += sd, s += ss)                        \
      EM_STORE_##D(d, LOAD_##S(s));                                          \
  }

#define DEF_CASTS_FROM(S, E, CT, K) \
  DEF_CAST(b8, S) DEF_CAST(u8, S) DEF_CAST(i8, S) DEF_CAST(i16, S)        \
  DEF_CAST(i32, S) DEF_CAST(i64, S) DEF_CAST(f16, S) DEF_CAST(bf16, S)      \
  DEF_CAST(f32, S) DEF_CAST(f64, S)
EM_FOR_EACH_DTYPE(DEF_CASTS_FROM)

#define ROW(D, E, CT, K)                                                    \
  [E] = {em_cast_##D##_b8, em_cast_##D##_u8, em_cast_##D##_i8,             \
         em_cast_##D##_i16, em_cast_##D##_i32, em_cast_##D##_i64,            \
         em_cast_##D##_f16, em_cast_##D##_bf16, em_cast_##D##_f32,           \
         em_cast_##D##_f64},
static const em_loop1d cast_loops[EM_NUM_DTYPES][EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(ROW)};

/* Same-dtype copies move bytes; the element size picks the loop. */
#define DEF_MOVE(NAME, T)                                                    \
  static void NAME(char **data, const int64_t *st, int64_t n, void *ctx) {   \
    char *d = data[0];                                                       \
    const char *s = data[1];                                                 \
    const int64_t sd = st[0], ss = st[1];                                    \
    (void)ctx;                                                               \
    if (sd == sizeof(T) && ss == sizeof(T)) {                                \
      memmove(d, s, (size_t)n * sizeof(T));                                  \
      return;                                                                \
    }                                                                        \
    for (int64_t i = 0; i < n; i++, d += sd, s += ss)                        \
      *(T *)d = *(const T *)s;                                               \
  }
DEF_MOVE(move1, uint8_t)
DEF_MOVE(move2, uint16_t)
DEF_MOVE(move4, uint32_t)
DEF_MOVE(move8, uint64_t)

static em_loop1d copy_loop(em_dtype dst, em_dtype src) {
  if (dst != src) return cast_loops[dst][src];
  switch (em_dtype_size(dst)) {
    case 1: return move1;
    case 2: return move2;
    case 4: return move4;
    default: return move8;
  }
}

/* -- Blocked transposes ----------------------------------------------------
** The iterator orders dims by the destination's strides, so a copy out of a
** transposed source reads the source with a large stride in the inner loop:
** one cache line per element. When the source is unit-stride along another
** iteration dim j, em_copy_ walks dims 0 and j in square tiles instead, so
** both sides touch whole cache lines (same-dtype copies only). */

/* 16x16 tiles measured best on 2048..4096-square float32 transposes (docs/views.md) */
enum { TILE = 16, TILE_MIN = 16 };

#define DEF_TILE(NAME, T)                                                    \
  static void NAME(char *d, const char *s, int64_t n0, int64_t nj,           \
                   int64_t d0, int64_t dj, int64_t s0, int64_t sj) {         \
    for (int64_t jb = 0; jb < nj; jb += TILE) {                              \
      int64_t je = jb + TILE < nj ? jb + TILE : nj;                          \
      for (int64_t ib = 0; ib < n0; ib += TILE) {                            \
        int64_t ie = ib + TILE < n0 ? ib + TILE : n0;                        \
        for (int64_t j = jb; j < je; j++)                                    \
          for (int64_t i = ib; i < ie; i++)                                  \
            *(T *)(d + i * d0 + j * dj) = *(const T *)(s + i * s0 + j * sj); \
      }                                                                      \
    }                                                                        \
  }
DEF_TILE(tile1, uint8_t)
DEF_TILE(tile2, uint16_t)
DEF_TILE(tile4, uint32_t)
DEF_TILE(tile8, uint64_t)

/* The iteration dim (>= 1) along which operand 1 is unit-stride while dim 0
** is not, with both dims long enough to tile; -1 when tiling does not pay. */
static int tile_dim(const em_iter *it, int64_t isz) {
  if (it->ndim < 2 || it->shape[0] < TILE_MIN) return -1;
  if (it->strides[0][0] != isz || it->strides[0][1] == isz) return -1;
  for (int j = 1; j < it->ndim; j++)
    if (it->strides[j][1] == isz && it->shape[j] >= TILE_MIN) return j;
  return -1;
}

/* Runs the tiled copy over dims 0 and j for every position of the others. */
static void copy_tiled(const em_iter *it, int j, int64_t isz) {
  void (*tile)(char *, const char *, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t) =
      isz == 1 ? tile1 : isz == 2 ? tile2 : isz == 4 ? tile4 : tile8;
  int64_t outer = it->numel / (it->shape[0] * it->shape[j]);
  int64_t counter[EM_MAX_DIMS] = {0};
  char *d = it->data[0];
  const char *s = it->data[1];
  for (int64_t o = 0; o < outer; o++) {
    tile(d, s, it->shape[0], it->shape[j], it->strides[0][0], it->strides[j][0],
         it->strides[0][1], it->strides[j][1]);
    for (int k = 1; k < it->ndim; k++) {
      if (k == j) continue;
      counter[k]++;
      d += it->strides[k][0];
      s += it->strides[k][1];
      if (counter[k] < it->shape[k]) break;
      d -= counter[k] * it->strides[k][0];
      s -= counter[k] * it->strides[k][1];
      counter[k] = 0;
    }
  }
}

/* -- copy_ -------------------------------------------------------------- */

static em_status check_writable(const char *op, const em_tensor *dst) {
  if (em_has_internal_overlap(dst))
    return em_fail(EM_E_VALUE,
                   "%s: unsupported operation: more than one element of the "
                   "written-to tensor refers to a single memory location "
                   "(an expanded tensor?); clone() it before writing",
                   op);
  return EM_OK;
}

static em_status copy_nograd(em_tensor *dst, const em_tensor *src) {
  if (!em_device_equal(dst->storage->device, src->storage->device))
    return em_fail(EM_E_RUNTIME, "copy_: tensors on different devices");
  em_status st = check_writable("copy_", dst);
  if (st != EM_OK) return st;
  if (em_same_layout(dst, src)) return EM_OK;
  /* A source that partly overlaps the destination is read from a snapshot,
  ** so the result is as if all of src were read before any write. */
  em_tensor *tmp = NULL;
  if (em_may_overlap(dst, src)) {
    st = em_clone(src, &tmp);
    if (st != EM_OK) return st;
    src = tmp;
  }
  em_iter it;
  const em_tensor *ops[2] = {dst, src};
  st = em_iter_build(&it, "copy_", 2, ops, dst->ndim, dst->sizes, false);
  if (st == EM_OK) {
    int64_t isz = (int64_t)em_dtype_size(dst->dtype);
    int j = dst->dtype == src->dtype && it.numel > 0 ? tile_dim(&it, isz) : -1;
    if (j > 0) copy_tiled(&it, j, isz);
    else if (it.numel > 0) em_iter_run(&it, copy_loop(dst->dtype, src->dtype), NULL);
    em_storage_bump_version(dst->storage);
  }
  em_tensor_release(tmp);
  return st;
}

/* -- fill_ -------------------------------------------------------------- */

#define DEF_FILL(NAME, T)                                                    \
  static void NAME(char **data, const int64_t *st, int64_t n, void *ctx) {   \
    char *d = data[0];                                                       \
    const int64_t sd = st[0];                                                \
    const T v = *(const T *)ctx;                                             \
    for (int64_t i = 0; i < n; i++, d += sd) *(T *)d = v;                    \
  }
DEF_FILL(fill1, uint8_t)
DEF_FILL(fill2, uint16_t)
DEF_FILL(fill4, uint32_t)
DEF_FILL(fill8, uint64_t)

/* Converts a scalar to dt's element bytes (at most 8) with the cast rules. */
void em_scalar_to_bytes(em_scalar v, em_dtype dt, void *out) {
  char *data[2];
  int64_t st[2] = {0, 0};
  data[0] = out;
  if (v.kind == EM_SCALAR_FLOAT) {
    data[1] = (char *)&v.f;
    cast_loops[dt][EM_FLOAT64](data, st, 1, NULL);
  } else {
    data[1] = (char *)&v.i;
    cast_loops[dt][EM_INT64](data, st, 1, NULL);
  }
}

static em_status fill_nograd(em_tensor *dst, em_scalar value) {
  em_status st = check_writable("fill_", dst);
  if (st != EM_OK) return st;
  uint64_t bytes = 0;
  em_scalar_to_bytes(value, dst->dtype, &bytes);
  em_iter it;
  const em_tensor *ops[1] = {dst};
  st = em_iter_build(&it, "fill_", 1, ops, dst->ndim, dst->sizes, false);
  if (st != EM_OK) return st;
  em_loop1d loop;
  switch (em_dtype_size(dst->dtype)) {
    case 1: loop = fill1; break;
    case 2: loop = fill2; break;
    case 4: loop = fill4; break;
    default: loop = fill8; break;
  }
  if (it.numel > 0) em_iter_run(&it, loop, &bytes);
  em_storage_bump_version(dst->storage);
  return EM_OK;
}

/* -- clone / contiguous / to --------------------------------------------- */

/* A new tensor with t's sizes and dtype dt: t's strides when t is dense and
** non-overlapping (preserve_format), contiguous strides otherwise. */
static em_status empty_preserving(const em_tensor *t, em_dtype dt, em_device dev,
                                  em_tensor **out) {
  if (!em_tensor_is_non_overlapping_and_dense(t) || em_tensor_is_contiguous(t)) {
    em_status st = em_empty(t->ndim, t->sizes, dt, dev, out);
    return st;
  }
  int64_t numel = em_tensor_numel(t);
  em_storage *s;
  em_status st = em_storage_new((size_t)numel * em_dtype_size(dt), dev, &s);
  if (st != EM_OK) return st;
  st = em_tensor_alloc(s, 0, t->ndim, t->sizes, t->strides, dt, out);
  em_storage_release(s);
  return st;
}

static em_status copy_into_new(const em_tensor *t, em_tensor *fresh, em_tensor **out) {
  em_status st = em_copy_(fresh, t);
  if (st != EM_OK) {
    em_tensor_release(fresh);
    return st;
  }
  *out = fresh;
  return EM_OK;
}

static em_status clone_nograd(const em_tensor *t, em_tensor **out) {
  em_tensor *fresh;
  em_status st = empty_preserving(t, t->dtype, t->storage->device, &fresh);
  if (st != EM_OK) return st;
  return copy_into_new(t, fresh, out);
}

static em_status contiguous_nograd(const em_tensor *t, em_tensor **out) {
  if (em_tensor_is_contiguous(t)) {
    em_tensor_retain((em_tensor *)t);
    *out = (em_tensor *)t;
    return EM_OK;
  }
  em_tensor *fresh;
  em_status st = em_empty(t->ndim, t->sizes, t->dtype, t->storage->device, &fresh);
  if (st != EM_OK) return st;
  return copy_into_new(t, fresh, out);
}

static em_status to_nograd(const em_tensor *t, em_dtype dt, em_device dev, int copy,
                           em_tensor **out) {
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "to: invalid dtype %d", (int)dt);
  if (!copy && dt == t->dtype && em_device_equal(dev, t->storage->device)) {
    em_tensor_retain((em_tensor *)t);
    *out = (em_tensor *)t;
    return EM_OK;
  }
  if (!em_device_equal(dev, t->storage->device))
    return em_fail(EM_E_RUNTIME,
                   "to: device %s:%d is not available: ember was built without "
                   "CUDA or no GPU is present",
                   dev.type == EM_CUDA ? "cuda" : "cpu", dev.index);
  em_tensor *fresh;
  em_status st = empty_preserving(t, dt, dev, &fresh);
  if (st != EM_OK) return st;
  return copy_into_new(t, fresh, out);
}

/* -- Element reads ------------------------------------------------------- */

static em_status element_ptr(const char *op, const em_tensor *t, int64_t pos,
                             const char **p) {
  int64_t numel = em_tensor_numel(t);
  if (pos < 0 || pos >= numel)
    return em_fail(EM_E_INDEX, "%s: element %lld is out of range for a tensor of %lld elements",
                   op, (long long)pos + 1, (long long)numel);
  int64_t off = t->offset;
  for (int i = t->ndim - 1; i >= 0; i--) {
    off += (pos % t->sizes[i]) * t->strides[i];
    pos /= t->sizes[i];
  }
  *p = (const char *)t->storage->data + off * (int64_t)em_dtype_size(t->dtype);
  return EM_OK;
}

em_status em_get_f64(const em_tensor *t, int64_t pos, double *out) {
  const char *p;
  em_status st = element_ptr("get", t, pos, &p);
  if (st != EM_OK) return st;
  char *data[2] = {(char *)out, (char *)p};
  int64_t strides[2] = {0, 0};
  cast_loops[EM_FLOAT64][t->dtype](data, strides, 1, NULL);
  return EM_OK;
}

em_status em_get_i64(const em_tensor *t, int64_t pos, int64_t *out) {
  const char *p;
  em_status st = element_ptr("get", t, pos, &p);
  if (st != EM_OK) return st;
  char *data[2] = {(char *)out, (char *)p};
  int64_t strides[2] = {0, 0};
  cast_loops[EM_INT64][t->dtype](data, strides, 1, NULL);
  return EM_OK;
}

em_status em_set_flat(em_tensor *t, int64_t pos, em_scalar v) {
  const char *p;
  em_status st = element_ptr("set", t, pos, &p);
  if (st != EM_OK) return st;
  em_scalar_to_bytes(v, t->dtype, (void *)p);
  em_storage_bump_version(t->storage);
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** copy_/fill_ overwrite dst (its old values get no gradient; copy_'s src gets
** dst's, cast and summed over the broadcast); clone/contiguous/to pass the
** gradient through (cast back by the engine). */

static em_status overwrite(const char *op, em_tensor *dst, const em_tensor *src,
                           em_status (*run)(em_tensor *, const em_tensor *, em_scalar),
                           em_scalar value) {
  int on = em_ag_pause();
  em_status st = EM_OK;
  int any = on && (dst->requires_grad || (src && src->requires_grad));
  if (any) st = em_ag_check_inplace(op, dst);
  if (st == EM_OK) st = run(dst, src, value);
  em_ag_resume(on);
  if (st != EM_OK || !any || em_dtype_kindof(dst->dtype) != EM_KIND_FLOAT) return st;
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = src ? "CopyBackwards" : "FillBackward0";
  const em_tensor *in[2] = {dst, src};
  return em_ag_record(EM_AG_OVERWRITE, src ? 2 : 1, in, 1, &dst, &p);
}
static em_status run_copy(em_tensor *dst, const em_tensor *src, em_scalar v) {
  (void)v;
  return copy_nograd(dst, src);
}
static em_status run_fill(em_tensor *dst, const em_tensor *src, em_scalar v) {
  (void)src;
  return fill_nograd(dst, v);
}

em_status em_copy_(em_tensor *dst, const em_tensor *src) {
  em_scalar none = {EM_SCALAR_INT, 0, 0};
  return overwrite("copy_", dst, src, run_copy, none);
}
em_status em_fill_(em_tensor *dst, em_scalar value) {
  return overwrite("fill_", dst, NULL, run_fill, value);
}

/* out= of ops that compute a fresh result first (reductions): the result's
** history may not flow into out (as PyTorch: out= is not differentiable);
** dtypes must match exactly (the caller computed in out's dtype where the op
** takes one); an empty out is given the result's shape with fresh
** contiguous storage, any other shape is an error (docs/math.md). */
em_status em_write_out(const char *op, const em_tensor *result, em_tensor *out) {
  char a[EM_SHAPE_BUF], b[EM_SHAPE_BUF];
  if (em_grad_enabled() && result->requires_grad)
    return em_fail(EM_E_VALUE, "%s: functions with out= arguments don't support automatic "
                   "differentiation, but one of the arguments requires grad", op);
  if (!em_device_equal(out->storage->device, result->storage->device))
    return em_fail(EM_E_VALUE, "%s: expected out on the device of the result", op);
  if (out->dtype != result->dtype)
    return em_fail(EM_E_TYPE, "%s: expected out to have dtype ember.%s, got ember.%s", op,
                   em_dtype_name(result->dtype), em_dtype_name(out->dtype));
  int same = out->ndim == result->ndim;
  for (int i = 0; same && i < out->ndim; i++) same = out->sizes[i] == result->sizes[i];
  if (!same) {
    if (em_tensor_numel(out) != 0)
      return em_fail(EM_E_VALUE, "%s: output with shape %s doesn't match the result shape %s "
                     "(only an empty out tensor is resized)", op,
                     em_fmt_shape(a, sizeof a, out->ndim, out->sizes),
                     em_fmt_shape(b, sizeof b, result->ndim, result->sizes));
    em_tensor *fresh = NULL;
    em_status st = em_empty(result->ndim, result->sizes, out->dtype, out->storage->device, &fresh);
    if (st != EM_OK) return st;
    em_storage *old = out->storage;
    out->storage = fresh->storage;
    em_storage_retain(out->storage);
    out->offset = 0;
    out->ndim = fresh->ndim;
    for (int i = 0; i < fresh->ndim; i++) {
      out->sizes[i] = fresh->sizes[i];
      out->strides[i] = fresh->strides[i];
    }
    em_storage_release(old);
    em_tensor_release(fresh);
  }
  return em_copy_(out, result);
}

em_status em_clone(const em_tensor *t, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "CloneBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, clone_nograd(t, out));
}
em_status em_contiguous(const em_tensor *t, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "CloneBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, contiguous_nograd(t, out));
}
em_status em_to(const em_tensor *t, em_dtype dt, em_device dev, int copy, em_tensor **out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "ToCopyBackward0";
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_IDENTITY, 1, in, out, &p, to_nograd(t, dt, dev, copy, out));
}
