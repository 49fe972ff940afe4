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
**
** The values of index tensors and masks are read only by the device's
** kernels (core/kern_index.h): the positions' offsets and their bounds
** check, a mask's true positions, the gathers and scatters. A device
** without values (meta) gives the shapes of integer indexing (its bounds
** check cannot run) and refuses a bool mask (the result's shape is its
** count of true elements).
*/
#include "core/kern_index.h"
#include "core/kernels.h"
#include "core/errmsg.h"
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

/* The index kernels of t's device. */
static em_status index_kernels(const em_tensor *t, const em_index_kernels **k) {
  const em_kernels *kt;
  *k = NULL;
  em_status st = em_kernels_check("index", t->storage->device, &kt);
  if (st == EM_OK) *k = kt->index;
  return st;
}

static em_status bad_position(int64_t pos, int dim, int64_t size) {
  return em_fail(EM_E_INDEX, "index %lld is out of bounds for dimension %d with size %lld%s",
                 (long long)pos, dim, (long long)size,
                 pos == 0 ? " (positions are 1-based)" : "");
}

/* The positions of the true elements of a bool mask: k int64 tensors (one per
** mask dim) of 1-based positions, in row-major order: the columns of the
** mask's nonzero (strided views of one [count, k] tensor). */
static em_status mask_positions(const em_tensor *mask, plan *p, int first_owned) {
  const em_index_kernels *k;
  em_tensor *m, *nz = NULL;
  em_status st = index_kernels(mask, &k);
  if (st != EM_OK) return st;
  st = em_contiguous(mask, &m);
  if (st != EM_OK) return st;
  int64_t size[2] = {0, mask->ndim}, stride = mask->ndim;
  st = k->mask_count("index", m, NULL, &size[0]);
  if (st == EM_OK) st = em_empty(2, size, EM_INT64, mask->storage->device, &nz);
  if (st == EM_OK) {
    k->nonzero(nz, m);
    for (int j = 0; j < mask->ndim && st == EM_OK; j++) {
      st = em_tensor_alloc(nz->storage, j, 1, &size[0], &stride, EM_INT64,
                           &p->owned[first_owned + j]);
      if (st == EM_OK) p->nowned++;
    }
  }
  em_tensor_release(nz);
  em_tensor_release(m);
  return st;
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
        em_status dst = em_same_device_check("index", t->storage->device, x->storage->device);
        if (dst != EM_OK) return dst;
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
          const em_index_kernels *k;
          em_scalar one = {EM_SCALAR_INT, 1, 1.0};
          int64_t cnt;
          em_status st = index_kernels(x, &k);
          if (st == EM_OK) st = k->mask_count("index", x, NULL, &cnt);
          if (st == EM_OK)
            st = em_full(1, &cnt, one, EM_INT64, x->storage->device, &p->owned[p->nowned]);
          if (st != EM_OK) return st;
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

/* The resolved advanced part: the result shape, where B sits in it, and the
** offset (in elements, from the view's offset) of each position in B. */
typedef struct {
  int ndim;
  int64_t sizes[EM_MAX_DIMS];
  int bpos, bndim;         /* B occupies result dims bpos..bpos+bndim-1 */
  int rest_of[EM_MAX_DIMS]; /* result dim -> view dim (-1 for B dims) */
  em_tensor *offsets;      /* int64, shape B, contiguous */
} adv_plan;

static em_status resolve_advanced(const em_index_kernels *k, const em_tensor *t,
                                  const plan *p, adv_plan *a) {
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
  st = em_zeros(bnd, bshape, EM_INT64, t->storage->device, &a->offsets);
  if (st != EM_OK) return st;
  for (int j = 0; j < p->nadv; j++) {
    em_index_bad bad;
    em_iter it;
    const em_tensor *ops[2] = {a->offsets, p->adv[j]};
    st = em_iter_build(&it, "index", 2, ops, bnd, bshape, false);
    if (st != EM_OK) break;
    k->key_offsets(&it, p->adv[j]->dtype, p->sizes[p->adv_dim[j]],
                   p->strides[p->adv_dim[j]], &bad);
    if (bad.found) {
      st = bad_position(bad.value, p->adv_src[j], p->sizes[p->adv_dim[j]]);
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

static em_status gather(const em_tensor *t, const plan *p, em_tensor **out) {
  const em_index_kernels *k;
  adv_plan a;
  em_status st = index_kernels(t, &k);
  if (st == EM_OK) st = resolve_advanced(k, t, p, &a);
  if (st != EM_OK) return st;
  em_tensor *res;
  st = em_empty(a.ndim, a.sizes, t->dtype, t->storage->device, &res);
  if (st == EM_OK) {
    em_tensor base, offs;
    shaped_descriptors(t, p, &a, &base, &offs);
    em_iter it;
    const em_tensor *ops[3] = {res, &base, &offs};
    st = em_iter_build(&it, "index", 3, ops, a.ndim, a.sizes, false);
    if (st == EM_OK) k->key_gather(&it, t->dtype);
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
  return em_check_writable("index", &view);
}

/* Writes value (already t's dtype, not overlapping t) through plan p. */
static em_status scatter(em_tensor *t, const plan *p, const em_tensor *value,
                         int accumulate) {
  const em_index_kernels *k;
  adv_plan a;
  em_status st = check_put_target(p, t);
  if (st == EM_OK) st = index_kernels(t, &k);
  if (st == EM_OK) st = resolve_advanced(k, t, p, &a);
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
    k->key_scatter(&it, t->dtype, accumulate);
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
  em_status st = em_same_device_check("index_put_", t->storage->device,
                                      value->storage->device);
  if (st != EM_OK) return st;
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
