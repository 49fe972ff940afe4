/*
** index.c -- index expressions: t[items] read and written (DESIGN §3).
**
** An expression is an array of em_index_item built by a binding. It is
** resolved in one pass (parse) into
**   - the metadata of a basic view of t: integers select (the dim goes),
**     ranges narrow with a step (clamped like Python slices), newaxis
**     inserts a size-1 dim, the ellipsis and the dims no item names are
**     kept whole; a dim indexed by a tensor is kept whole in this view;
**   - a list of advanced index tensors, one per view dim they index (a bool
**     mask of k dims becomes k position tensors, its nonzero positions).
** Without advanced indices the result is that view (no copy). With them,
** the index tensors broadcast to a shape B and the result has the view's
** other dims plus B, placed where the advanced dims were when they are
** adjacent in the view, else first (PyTorch's rule). Reads copy: a gather
** through the iterator with a per-position offset operand. Writes scatter
** through the same plan, so t[idx] = v and t[mask] = v modify t.
**
** Guarantees: every position is checked before any element moves (an
** error leaves t unchanged); positions are 1-based, negatives count from
** the end, and messages name the source tensor's dim as a 1-based number.
*/
#include "core/iter.h"
#include "autograd/autograd.h"

#include <stdlib.h>

/* a*b for strides of dims whose size makes the stride irrelevant when the
** product overflows (a size-1 dim, or a step longer than the dim): then a
** itself is kept, and no signed overflow happens. */
static inline int64_t stride_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? a : r;
}

/* offset += k * stride, unless that overflows: only an empty view (whose
** strides are unchecked) can get there, and it addresses nothing, so its
** offset may stay. */
static inline void offset_add(int64_t *offset, int64_t k, int64_t stride) {
  int64_t step, r;
  if (!__builtin_mul_overflow(k, stride, &step) && !__builtin_add_overflow(*offset, step, &r))
    *offset = r;
}

typedef struct plan {
  /* the basic view */
  int ndim;
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS], offset;
  /* advanced indices: view dim, source dim (for messages), positions */
  int nadv;
  int adv_dim[EM_MAX_DIMS], adv_src[EM_MAX_DIMS];
  const em_tensor *adv[EM_MAX_DIMS];
  int nowned;
  em_tensor *owned[EM_MAX_DIMS + 1]; /* position tensors made from masks */
} plan;

static void plan_free(plan *p) {
  for (int i = 0; i < p->nowned; i++) em_tensor_release(p->owned[i]);
  p->nowned = 0;
}

static em_status too_many_dims(void) {
  return em_fail(EM_E_VALUE, "index: the result would have more than %d dimensions",
                 (int)EM_MAX_DIMS);
}

/* Python slice clamping of an inclusive 1-based range first..last. */
static void range_bounds(int64_t size, int64_t first, int64_t last, int64_t step,
                         int64_t *start, int64_t *len) {
  int64_t s = first >= 1 ? first - 1 : first == 0 ? 0 : size + first;
  if (s < 0) s = 0;
  if (s > size) s = size;
  int64_t e = last >= 0 ? last : size + last + 1; /* exclusive end */
  if (e < 0) e = 0;
  if (e > size) e = size;
  *start = s;
  *len = e > s ? (e - s - 1) / step + 1 : 0;
}

static em_status bad_position(int64_t pos, int dim, int64_t size) {
  return em_fail(EM_E_INDEX, "index %lld is out of bounds for dimension %d with size %lld%s",
                 (long long)pos, dim, (long long)size,
                 pos == 0 ? " (positions are 1-based)" : "");
}

/* The positions of the true elements of a bool mask: k int64 tensors (one per
** mask dim) of 1-based positions, in row-major order. */
static em_status mask_positions(const em_tensor *mask, plan *p, int first_owned) {
  em_tensor *m;
  em_status st = em_contiguous(mask, &m);
  if (st != EM_OK) return st;
  const bool *v = em_tensor_data(m);
  int64_t numel = em_tensor_numel(m), count = 0;
  for (int64_t i = 0; i < numel; i++) count += v[i] != 0;
  int k = mask->ndim;
  for (int j = 0; j < k; j++) {
    st = em_empty(1, &count, EM_INT64, em_cpu(), &p->owned[first_owned + j]);
    if (st != EM_OK) {
      em_tensor_release(m);
      return st;
    }
    p->nowned++;
  }
  int64_t c = 0;
  for (int64_t i = 0; i < numel; i++) {
    if (!v[i]) continue;
    int64_t rest = i;
    for (int j = k - 1; j >= 0; j--) {
      ((int64_t *)em_tensor_data(p->owned[first_owned + j]))[c] =
          rest % mask->sizes[j] + 1;
      rest /= mask->sizes[j];
    }
    c++;
  }
  em_tensor_release(m);
  return EM_OK;
}

static em_status parse(const em_tensor *t, int n, const em_index_item *items,
                       plan *p) {
  p->ndim = 0;
  p->nadv = 0;
  p->nowned = 0;
  p->offset = t->offset;
  int consumed = 0, ellipses = 0;
  for (int i = 0; i < n; i++) {
    switch (items[i].kind) {
      case EM_INDEX_INT: case EM_INDEX_RANGE: case EM_INDEX_FULL: consumed++; break;
      case EM_INDEX_NEWAXIS: break;
      case EM_INDEX_ELLIPSIS:
        if (++ellipses > 1)
          return em_fail(EM_E_VALUE, "index: an index can only have a single ellipsis ('...')");
        break;
      case EM_INDEX_TENSOR: {
        const em_tensor *x = items[i].tensor;
        if (!x) return em_fail(EM_E_VALUE, "index: item %d has no tensor", i + 1);
        if (x->dtype == EM_BOOL) consumed += x->ndim;
        else if (x->dtype == EM_INT64 || x->dtype == EM_INT32) consumed++;
        else
          return em_fail(EM_E_TYPE, "index: tensors used as indices must be int64, "
                         "int32 or bool tensors, got ember.%s (item %d)",
                         em_dtype_name(x->dtype), i + 1);
        if (!em_device_equal(x->storage->device, t->storage->device))
          return em_fail(EM_E_RUNTIME, "index: the index tensor (item %d) is on a "
                         "different device than the indexed tensor", i + 1);
        break;
      }
      default:
        return em_fail(EM_E_VALUE, "index: item %d has an unknown kind %d", i + 1,
                       (int)items[i].kind);
    }
  }
  if (consumed > t->ndim)
    return em_fail(EM_E_INDEX, "index: too many indices for a tensor of dimension %d "
                   "(%d given)", t->ndim, consumed);
  int d = 0; /* next source dim */
#define PUSH_DIM(SZ, ST)                                \
  do {                                                  \
    if (p->ndim >= EM_MAX_DIMS) return too_many_dims(); \
    p->sizes[p->ndim] = (SZ);                           \
    p->strides[p->ndim] = (ST);                         \
    p->ndim++;                                          \
  } while (0)
  for (int i = 0; i < n; i++) {
    const em_index_item *it = &items[i];
    switch (it->kind) {
      case EM_INDEX_INT: {
        int64_t size = t->sizes[d], pos = it->first;
        int64_t k = pos >= 1 ? pos - 1 : size + pos;
        if (pos == 0 || k < 0 || k >= size) return bad_position(pos, d + 1, size);
        offset_add(&p->offset, k, t->strides[d]);
        d++;
        break;
      }
      case EM_INDEX_RANGE: {
        if (it->step <= 0)
          return em_fail(EM_E_VALUE, "index: the step of a range must be positive, got "
                         "%lld (for a reversed order use :flip(dims))", (long long)it->step);
        int64_t start, len;
        range_bounds(t->sizes[d], it->first, it->last, it->step, &start, &len);
        offset_add(&p->offset, start, t->strides[d]);
        PUSH_DIM(len, stride_mul(t->strides[d], it->step));
        d++;
        break;
      }
      case EM_INDEX_FULL:
        PUSH_DIM(t->sizes[d], t->strides[d]);
        d++;
        break;
      case EM_INDEX_NEWAXIS:
        /* the stride unsqueeze would give at this point */
        PUSH_DIM(1, d < t->ndim ? stride_mul(t->strides[d], t->sizes[d]) : 1);
        break;
      case EM_INDEX_ELLIPSIS:
        for (int k = 0; k < t->ndim - consumed; k++, d++) PUSH_DIM(t->sizes[d], t->strides[d]);
        break;
      case EM_INDEX_TENSOR: {
        const em_tensor *x = it->tensor;
        if (x->dtype != EM_BOOL) {
          p->adv_dim[p->nadv] = p->ndim;
          p->adv_src[p->nadv] = d + 1;
          p->adv[p->nadv++] = x;
          PUSH_DIM(t->sizes[d], t->strides[d]);
          d++;
          break;
        }
        if (x->ndim == 0) {
          /* a 0-d mask adds a dim of size 1 and keeps it (true) or none */
          if (p->nowned >= EM_MAX_DIMS + 1) return too_many_dims();
          int64_t cnt = *(const bool *)em_tensor_data(x) ? 1 : 0;
          em_status st = em_empty(1, &cnt, EM_INT64, em_cpu(), &p->owned[p->nowned]);
          if (st != EM_OK) return st;
          if (cnt) *(int64_t *)em_tensor_data(p->owned[p->nowned]) = 1;
          p->adv_dim[p->nadv] = p->ndim;
          p->adv_src[p->nadv] = d + 1;
          p->adv[p->nadv++] = p->owned[p->nowned++];
          PUSH_DIM(1, d < t->ndim ? stride_mul(t->strides[d], t->sizes[d]) : 1);
          break;
        }
        for (int k = 0; k < x->ndim; k++)
          if (x->sizes[k] != t->sizes[d + k]) {
            char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
            return em_fail(EM_E_INDEX,
                           "index: the shape of the mask %s does not match the shape "
                           "of the indexed tensor %s at dimension %d",
                           em_fmt_shape(b1, sizeof b1, x->ndim, x->sizes),
                           em_fmt_shape(b2, sizeof b2, x->ndim, t->sizes + d), d + 1);
          }
        if (p->nowned + x->ndim > EM_MAX_DIMS + 1) return too_many_dims();
        int first = p->nowned;
        em_status st = mask_positions(x, p, first);
        if (st != EM_OK) return st;
        for (int k = 0; k < x->ndim; k++, d++) {
          p->adv_dim[p->nadv] = p->ndim;
          p->adv_src[p->nadv] = d + 1;
          p->adv[p->nadv++] = p->owned[first + k];
          PUSH_DIM(t->sizes[d], t->strides[d]);
        }
        break;
      }
    }
  }
  for (; d < t->ndim; d++) PUSH_DIM(t->sizes[d], t->strides[d]);
#undef PUSH_DIM
  return EM_OK;
}

/* -- Advanced indexing ------------------------------------------------------ */

typedef struct {
  int64_t size, stride; /* of the indexed view dim */
  int64_t bad;          /* first invalid position seen (0 = none) */
  int found;
} offs_ctx;

/* offsets += (normalised position) * stride; o is int64, x int64/int32 */
#define DEF_OFFS(NAME, T)                                                     \
  static void NAME(char **data, const int64_t *st, int64_t n, void *vctx) {   \
    offs_ctx *c = vctx;                                                       \
    char *o = data[0];                                                        \
    const char *x = data[1];                                                  \
    for (int64_t i = 0; i < n; i++, o += st[0], x += st[1]) {                 \
      int64_t pos = (int64_t)*(const T *)x;                                   \
      int64_t k = pos >= 1 ? pos - 1 : c->size + pos;                         \
      if (pos == 0 || k < 0 || k >= c->size) {                                \
        if (!c->found) { c->found = 1; c->bad = pos; }                        \
        continue;                                                             \
      }                                                                       \
      *(int64_t *)o += k * c->stride;                                         \
    }                                                                         \
  }
DEF_OFFS(em_index_offsets_i64, int64_t)
DEF_OFFS(em_index_offsets_i32, int32_t)

/* The resolved advanced part: the result shape, where B sits in it, and the
** offset (in elements, from the view's offset) of each position in B. */
typedef struct {
  int ndim;
  int64_t sizes[EM_MAX_DIMS];
  int bpos, bndim;         /* B occupies result dims bpos..bpos+bndim-1 */
  int rest_of[EM_MAX_DIMS]; /* result dim -> view dim (-1 for B dims) */
  em_tensor *offsets;      /* int64, shape B, contiguous */
} adv_plan;

static em_status resolve_advanced(const plan *p, adv_plan *a) {
  int bnd;
  int64_t bshape[EM_MAX_DIMS];
  em_status st = em_broadcast_shapes("index", p->nadv, p->adv, &bnd, bshape);
  if (st != EM_OK) return st;
  bool adjacent = true, is_adv[EM_MAX_DIMS] = {false};
  for (int j = 0; j < p->nadv; j++) {
    is_adv[p->adv_dim[j]] = true;
    if (j > 0 && p->adv_dim[j] != p->adv_dim[j - 1] + 1) adjacent = false;
  }
  int rest = p->ndim - p->nadv;
  if (rest + bnd > EM_MAX_DIMS) return too_many_dims();
  a->bpos = adjacent ? p->adv_dim[0] : 0;
  a->bndim = bnd;
  a->ndim = rest + bnd;
  int r = 0;
  for (int v = 0; v < p->ndim; v++) {
    if (is_adv[v]) continue;
    if (r == a->bpos) r += bnd;
    a->sizes[r] = p->sizes[v];
    a->rest_of[r] = v;
    r++;
  }
  for (int k = 0; k < bnd; k++) {
    a->sizes[a->bpos + k] = bshape[k];
    a->rest_of[a->bpos + k] = -1;
  }
  st = em_zeros(bnd, bshape, EM_INT64, em_cpu(), &a->offsets);
  if (st != EM_OK) return st;
  for (int j = 0; j < p->nadv; j++) {
    offs_ctx c = {p->sizes[p->adv_dim[j]], p->strides[p->adv_dim[j]], 0, 0};
    em_iter it;
    const em_tensor *ops[2] = {a->offsets, p->adv[j]};
    st = em_iter_build(&it, "index", 2, ops, bnd, bshape, false);
    if (st != EM_OK) break;
    if (it.numel > 0)
      em_iter_run(&it, p->adv[j]->dtype == EM_INT64 ? em_index_offsets_i64
                                                    : em_index_offsets_i32, &c);
    if (c.found) {
      st = bad_position(c.bad, p->adv_src[j], p->sizes[p->adv_dim[j]]);
      break;
    }
  }
  if (st != EM_OK) em_tensor_release(a->offsets);
  return st;
}

/* Stack descriptors over the result's shape: the view's storage read with
** the view's strides on its kept dims and stride 0 on B; the offsets with
** their strides on B and stride 0 elsewhere. Never handed out. */
static void shaped_descriptors(const em_tensor *t, const plan *p, const adv_plan *a,
                               em_tensor *base, em_tensor *offs) {
  memset(base, 0, sizeof *base);
  memset(offs, 0, sizeof *offs);
  base->ndim = offs->ndim = a->ndim;
  base->dtype = t->dtype;
  base->storage = t->storage;
  base->offset = p->offset;
  offs->dtype = EM_INT64;
  offs->storage = a->offsets->storage;
  offs->offset = a->offsets->offset;
  for (int r = 0; r < a->ndim; r++) {
    base->sizes[r] = offs->sizes[r] = a->sizes[r];
    if (a->rest_of[r] >= 0) {
      base->strides[r] = p->strides[a->rest_of[r]];
      offs->strides[r] = 0;
    } else {
      base->strides[r] = 0;
      offs->strides[r] = a->offsets->strides[r - a->bpos];
    }
  }
}

/* gather: out = *(base + offset); scatter: *(base + offset) = value.
** data[0] out/base, data[1] base/value, data[2] offsets; ctx is the element
** size as an int64. */
#define DEF_GATHER(NAME, T)                                                     \
  static void NAME(char **data, const int64_t *st, int64_t n, void *ctx) {      \
    char *o = data[0];                                                          \
    const char *b = data[1], *f = data[2];                                      \
    for (int64_t i = 0; i < n; i++, o += st[0], b += st[1], f += st[2])         \
      *(T *)o = ((const T *)b)[*(const int64_t *)f];                            \
    (void)ctx;                                                                  \
  }
#define DEF_SCATTER(NAME, T)                                                    \
  static void NAME(char **data, const int64_t *st, int64_t n, void *ctx) {      \
    char *b = data[0];                                                          \
    const char *v = data[1], *f = data[2];                                      \
    for (int64_t i = 0; i < n; i++, b += st[0], v += st[1], f += st[2])         \
      ((T *)b)[*(const int64_t *)f] = *(const T *)v;                            \
    (void)ctx;                                                                  \
  }
DEF_GATHER(em_index_gather1, uint8_t)
DEF_GATHER(em_index_gather2, uint16_t)
DEF_GATHER(em_index_gather4, uint32_t)
DEF_GATHER(em_index_gather8, uint64_t)
DEF_SCATTER(em_index_scatter1, uint8_t)
DEF_SCATTER(em_index_scatter2, uint16_t)
DEF_SCATTER(em_index_scatter4, uint32_t)
DEF_SCATTER(em_index_scatter8, uint64_t)

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

static em_loop1d by_size(size_t sz, em_loop1d l1, em_loop1d l2, em_loop1d l4,
                         em_loop1d l8) {
  return sz == 1 ? l1 : sz == 2 ? l2 : sz == 4 ? l4 : l8;
}

static em_status gather(const em_tensor *t, const plan *p, em_tensor **out) {
  adv_plan a;
  em_status st = resolve_advanced(p, &a);
  if (st != EM_OK) return st;
  em_tensor *res;
  st = em_empty(a.ndim, a.sizes, t->dtype, t->storage->device, &res);
  if (st == EM_OK) {
    em_tensor base, offs;
    shaped_descriptors(t, p, &a, &base, &offs);
    em_iter it;
    const em_tensor *ops[3] = {res, &base, &offs};
    st = em_iter_build(&it, "index", 3, ops, a.ndim, a.sizes, false);
    if (st == EM_OK && it.numel > 0)
      em_iter_run(&it, by_size(em_dtype_size(t->dtype), em_index_gather1,
                               em_index_gather2, em_index_gather4, em_index_gather8),
                  NULL);
    if (st == EM_OK) *out = res;
    else em_tensor_release(res);
  }
  em_tensor_release(a.offsets);
  return st;
}

/* value with leading size-1 dims beyond ndim dropped (PyTorch strips them
** for assignments), as a stack descriptor. */
static void strip_leading_ones(const em_tensor *v, int ndim, em_tensor *out) {
  *out = *v; /* struct copy: same storage pointer, never released */
  int drop = 0;
  while (out->ndim - drop > ndim && v->sizes[drop] == 1) drop++;
  out->ndim = v->ndim - drop;
  for (int i = 0; i < out->ndim; i++) {
    out->sizes[i] = v->sizes[i + drop];
    out->strides[i] = v->strides[i + drop];
  }
}

/* The (stripped) value must broadcast to the indexed shape. */
static em_status check_value_shape(const em_tensor *v, int ndim, const int64_t *sizes) {
  bool ok = v->ndim <= ndim;
  for (int i = 0; ok && i < v->ndim; i++) {
    int64_t vs = v->sizes[v->ndim - 1 - i], ts = sizes[ndim - 1 - i];
    ok = vs == ts || vs == 1;
  }
  if (ok) return EM_OK;
  char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
  return em_fail(EM_E_VALUE, "index: shape mismatch: a value of shape %s cannot be "
                 "broadcast to the indexed shape %s",
                 em_fmt_shape(b1, sizeof b1, v->ndim, v->sizes),
                 em_fmt_shape(b2, sizeof b2, ndim, sizes));
}

static em_status check_put_target(const plan *p, const em_tensor *t) {
  em_tensor view;
  memset(&view, 0, sizeof view);
  view.ndim = p->ndim;
  view.dtype = t->dtype;
  view.storage = t->storage;
  view.offset = p->offset;
  memcpy(view.sizes, p->sizes, sizeof view.sizes);
  memcpy(view.strides, p->strides, sizeof view.strides);
  if (em_has_internal_overlap(&view))
    return em_fail(EM_E_VALUE,
                   "index: unsupported operation: more than one element of the "
                   "written-to tensor refers to a single memory location (an "
                   "expanded tensor?); clone() it before writing");
  return EM_OK;
}

/* Writes value (already t's dtype, not overlapping t) through plan p. */
static em_status scatter(em_tensor *t, const plan *p, const em_tensor *value,
                         int accumulate) {
  adv_plan a;
  em_status st = check_put_target(p, t);
  if (st != EM_OK) return st;
  st = resolve_advanced(p, &a);
  if (st != EM_OK) return st;
  em_tensor base, offs, v;
  shaped_descriptors(t, p, &a, &base, &offs);
  strip_leading_ones(value, a.ndim, &v);
  st = check_value_shape(&v, a.ndim, a.sizes);
  if (st != EM_OK) {
    em_tensor_release(a.offsets);
    return st;
  }
  em_iter it;
  const em_tensor *ops[3] = {&base, &v, &offs};
  st = em_iter_build(&it, "index_put_", 3, ops, a.ndim, a.sizes, false);
  if (st == EM_OK) {
    em_loop1d loop = accumulate ? accumulate_loops[t->dtype]
                                : by_size(em_dtype_size(t->dtype), em_index_scatter1,
                                          em_index_scatter2, em_index_scatter4,
                                          em_index_scatter8);
    if (it.numel > 0) em_iter_run(&it, loop, NULL);
    em_storage_bump_version(t->storage);
  }
  em_tensor_release(a.offsets);
  return st;
}

/* -- Entry points ------------------------------------------------------------ */

static em_status basic_view(const em_tensor *t, const plan *p, em_tensor **out) {
  return em_tensor_alloc(t->storage, p->offset, p->ndim, p->sizes, p->strides,
                         t->dtype, out);
}

static em_status index_get_nograd(const em_tensor *t, int n, const em_index_item *items,
                       em_tensor **out) {
  plan p;
  em_status st = parse(t, n, items, &p);
  if (st == EM_OK) st = p.nadv == 0 ? basic_view(t, &p, out) : gather(t, &p, out);
  plan_free(&p);
  return st;
}

/* value converted to dt, and snapshotted when it shares t's storage. */
static em_status prepare_value(const em_tensor *t, const em_tensor *value,
                               em_tensor **out) {
  if (!em_device_equal(value->storage->device, t->storage->device))
    return em_fail(EM_E_RUNTIME, "index_put_: the value is on a different device");
  return em_to(value, t->dtype, t->storage->device, value->storage == t->storage, out);
}

static em_status index_put_nograd(em_tensor *t, int n, const em_index_item *items,
                        const em_tensor *value) {
  plan p;
  em_status st = parse(t, n, items, &p);
  if (st != EM_OK) {
    plan_free(&p);
    return st;
  }
  if (p.nadv == 0) {
    em_tensor *view;
    st = check_put_target(&p, t);
    if (st == EM_OK) st = basic_view(t, &p, &view);
    if (st == EM_OK) {
      em_tensor v;
      strip_leading_ones(value, view->ndim, &v);
      st = check_value_shape(&v, view->ndim, view->sizes);
      if (st == EM_OK) st = em_copy_(view, &v);
      em_tensor_release(view);
    }
  } else {
    em_tensor *v;
    st = prepare_value(t, value, &v);
    if (st == EM_OK) {
      st = scatter(t, &p, v, 0);
      em_tensor_release(v);
    }
  }
  plan_free(&p);
  return st;
}

static em_status index_fill_scalar_nograd(em_tensor *t, int n, const em_index_item *items,
                                em_scalar value) {
  plan p;
  em_status st = parse(t, n, items, &p);
  if (st != EM_OK) {
    plan_free(&p);
    return st;
  }
  if (p.nadv == 0) {
    em_tensor *view;
    st = check_put_target(&p, t);
    if (st == EM_OK) st = basic_view(t, &p, &view);
    if (st == EM_OK) {
      st = em_fill_(view, value);
      em_tensor_release(view);
    }
  } else {
    em_tensor *v;
    st = em_full(0, NULL, value, t->dtype, t->storage->device, &v);
    if (st == EM_OK) {
      st = scatter(t, &p, v, 0);
      em_tensor_release(v);
    }
  }
  plan_free(&p);
  return st;
}

static em_status index_put_tensors_nograd(em_tensor *t, int n, const em_tensor *const *indices,
                                const em_tensor *values, int accumulate) {
  em_index_item items[EM_MAX_DIMS];
  if (n > t->ndim || n > EM_MAX_DIMS)
    return em_fail(EM_E_INDEX, "index_put_: too many indices for a tensor of dimension "
                   "%d (%d given)", t->ndim, n);
  int any = 0;
  for (int i = 0; i < n; i++) {
    memset(&items[i], 0, sizeof items[i]);
    if (indices[i]) {
      items[i].kind = EM_INDEX_TENSOR;
      items[i].tensor = indices[i];
      any = 1;
    } else {
      items[i].kind = EM_INDEX_FULL;
    }
  }
  plan p;
  em_status st = parse(t, n, items, &p);
  if (st != EM_OK) {
    plan_free(&p);
    return st;
  }
  if (!any && !accumulate) {
    plan_free(&p);
    return em_index_put_(t, n, items, values);
  }
  if (!any) {
    plan_free(&p);
    return em_fail(EM_E_VALUE, "index_put_: accumulate needs at least one index tensor");
  }
  em_tensor *v;
  st = prepare_value(t, values, &v);
  if (st == EM_OK) {
    st = scatter(t, &p, v, accumulate);
    em_tensor_release(v);
  }
  plan_free(&p);
  return st;
}

/* -- Autograd recording ---------------------------------------------------------
** Reads record where each element came from (a view or gather of an arange
** of t's shape); writes record the positions they wrote (autograd.h). */

em_status em_index_get(const em_tensor *t, int n, const em_index_item *items,
                       em_tensor **out) {
  const char *name = "SliceBackward0";  /* PyTorch's names: t[1:2], t[1], t[idx] */
  for (int i = 0; i < n; i++)
    if (items[i].kind == EM_INDEX_INT) name = "SelectBackward0";
  for (int i = 0; i < n; i++)
    if (items[i].kind == EM_INDEX_TENSOR) name = "IndexBackward0";
  EM_AG_GATHER(name, t, out, index_get_nograd(ag_src_, n, items, ag_dst_));
}

em_status em_index_put_(em_tensor *t, int n, const em_index_item *items,
                        const em_tensor *value) {
  EM_AG_INPLACE("index_put_", "IndexPutBackward0", t, value, 0, 1.0,
                index_put_nograd(t, n, items, value),
                index_get_nograd(ag_ar_, n, items, &ag_pos_));
}

em_status em_index_fill_scalar_(em_tensor *t, int n, const em_index_item *items,
                                em_scalar value) {
  EM_AG_INPLACE("index_put_", "IndexPutBackward0", t, NULL, 0, 1.0,
                index_fill_scalar_nograd(t, n, items, value),
                index_get_nograd(ag_ar_, n, items, &ag_pos_));
}

static em_status put_positions(const em_tensor *ar, int n, const em_tensor *const *indices,
                               em_tensor **pos) {
  em_index_item items[EM_MAX_DIMS];
  for (int i = 0; i < n && i < EM_MAX_DIMS; i++) {
    memset(&items[i], 0, sizeof items[i]);
    items[i].kind = indices[i] ? EM_INDEX_TENSOR : EM_INDEX_FULL;
    items[i].tensor = indices[i];
  }
  return index_get_nograd(ar, n, items, pos);
}

em_status em_index_put_tensors_(em_tensor *t, int n, const em_tensor *const *indices,
                                const em_tensor *values, int accumulate) {
  EM_AG_INPLACE("index_put_", "IndexPutBackward0", t, values, accumulate, 1.0,
                index_put_tensors_nograd(t, n, indices, values, accumulate),
                put_positions(ag_ar_, n, indices, &ag_pos_));
}
