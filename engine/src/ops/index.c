/*
** index.c -- index expressions: t[items] read and written (DESIGN §3).
**
** An expression is an array of em_index_item built by a binding. It is
** resolved in one pass (parse) into
**   - the metadata of a basic view of t: integers select (the dim goes),
**     ranges narrow with a step (clamped like Python slices), newaxis
**     inserts a size-1 dim, the ellipsis and the dims no item names are
**     kept whole; a dim indexed by a tensor is kept whole in this view;
**   - a list of advanced items: position tensors (one view dim each) and
**     bool masks (k view dims each), in the key's order.
** Without advanced items the result is that view (no copy). With them, the
** items broadcast to a shape B (a mask counts as one dim of its count of
** true elements) and the result has the view's other dims plus B, placed
** where the advanced dims were when they are adjacent in the view, else
** first (PyTorch's rule): [outer..., B..., inner...]. Reads copy, writes
** modify t (t[idx] = v, t[mask] = v), and neither walks the result element
** by element through the iterator:
**   - every position of B gets one offset (elements from the view's
**     start), built once: positions times strides, bounds-checked; a
**     mask's straight from its runs of true elements (no nonzero);
**   - a read copies rows (outer, b) of the inner dims (key_gather: one
**     element, one memcpy, or a strided block per row), split among
**     threads; a write puts them back (key_put), the value read with its
**     own strides (copied first only when its strides over B do not
**     flatten); accumulate adds one element after another;
**   - a single mask over the view's last dims, when they are one run of
**     stride 1, is read by masked_select's compaction for each outer
**     position (no offsets), and t[mask] = number is masked_fill_ over
**     the view (no count).
**
** Guarantees: every position is checked before any element moves (an
** error leaves t unchanged); positions are 1-based, negatives count from
** the end, and messages name the source tensor's dim as a 1-based number.
**
** The values of index tensors and masks are read only by the device's
** kernels (core/kern_index.h): the positions' offsets and their bounds
** check, a mask's count and offsets, the copies. A device without values
** (meta) gives the shapes of integer indexing (its bounds check cannot
** run) and of t[mask] = number (a masked_fill_), and refuses other uses
** of a bool mask (the result's shape is its count of true elements).
*/
#include "ops/index_checks.h"
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

/* An advanced item: int64/int32 positions that index view dim `dim`
** (k = 1), or a bool mask of k >= 1 dims that indexes view dims
** dim..dim+k-1; src is the 1-based source dim of dim (for messages). */
typedef struct adv_item {
  const em_tensor *x;
  int dim, k, src;
} adv_item;

typedef struct plan {
  /* the basic view */
  int ndim;
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS], offset;
  /* the advanced items, in the key's order */
  int nadv;
  adv_item adv[EM_MAX_DIMS];
  int nowned;
  em_tensor *owned[EM_MAX_DIMS]; /* the positions of 0-d masks */
} plan;

static void plan_free(plan *p) {
  for (int i = 0; i < p->nowned; i++) em_tensor_release(p->owned[i]);
  p->nowned = 0;
}

static int is_mask(const adv_item *a) { return a->x->dtype == EM_BOOL; }

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

static em_status parse(const em_tensor *t, int n, const em_index_item *items,
                       plan *p) {
  p->ndim = 0;
  p->nadv = 0;
  p->nowned = 0;
  p->offset = t->offset;
  if (n > 64) return em_fail(EM_E_VALUE, "index: too many entries in the index (%d)", n);
  /* the index tensors; a uint8 one is a mask (PyTorch's deprecated form),
  ** converted to bool here and owned by the plan */
  const em_tensor *xt[64];
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
        const em_tensor *x = xt[i] = items[i].tensor;
        if (!x) return em_fail(EM_E_VALUE, "index: item %d has no tensor", i + 1);
        if (x->dtype == EM_UINT8) {
          if (p->nowned >= EM_MAX_DIMS) return too_many_dims();
          em_status cst = em_to(x, EM_BOOL, x->storage->device, 0, &p->owned[p->nowned]);
          if (cst != EM_OK) return cst;
          x = xt[i] = p->owned[p->nowned++];
        }
        if (x->dtype == EM_BOOL) consumed += x->ndim;
        else if (x->dtype == EM_INT64 || x->dtype == EM_INT32) consumed++;
        else
          return em_fail(EM_E_TYPE, "index: tensors used as indices must be int64, "
                         "int32, bool or uint8 tensors, got ember.%s (item %d)",
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
#define PUSH_ADV(X, K)                                                 \
  do {                                                                 \
    if (p->nadv >= EM_MAX_DIMS) return too_many_dims();                \
    p->adv[p->nadv++] = (adv_item){(X), p->ndim, (K), d + 1};          \
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
        const em_tensor *x = xt[i];
        if (x->dtype != EM_BOOL) {
          PUSH_ADV(x, 1);
          PUSH_DIM(t->sizes[d], t->strides[d]);
          d++;
          break;
        }
        if (x->ndim == 0) {
          /* a 0-d mask adds a dim of size 1 and keeps it (true) or none:
          ** positions (all 1) of that dim */
          if (p->nowned >= EM_MAX_DIMS) return too_many_dims();
          const em_index_kernels *k;
          em_scalar one = {EM_SCALAR_INT, 1, 1.0};
          int64_t cnt;
          em_status st = index_kernels("index", 1, &x, &k);
          if (st == EM_OK) st = k->mask_count("index", x, NULL, &cnt);
          if (st == EM_OK)
            st = em_full(1, &cnt, one, EM_INT64, x->storage->device, &p->owned[p->nowned]);
          if (st != EM_OK) return st;
          PUSH_ADV(p->owned[p->nowned++], 1);
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
        PUSH_ADV(x, x->ndim);
        for (int k = 0; k < x->ndim; k++, d++) PUSH_DIM(t->sizes[d], t->strides[d]);
        break;
      }
    }
  }
  for (; d < t->ndim; d++) PUSH_DIM(t->sizes[d], t->strides[d]);
#undef PUSH_ADV
#undef PUSH_DIM
  return EM_OK;
}

/* The basic view as a stack descriptor (never handed out). */
static void view_header(const em_tensor *t, const plan *p, em_tensor *view) {
  em_stack_header(view, t, p->ndim, p->sizes, p->strides, p->offset);
}

/* -- Advanced indexing ------------------------------------------------------
** The index tensors broadcast to B: a mask counts as one dim of its count
** of true elements. The result is [outer..., B..., inner...]: B where the
** advanced dims were when they are adjacent (else first), the other view
** dims around it in order. Each position of B has one offset (elements,
** from the view's first element): the sum over the items of position *
** stride, a mask's from the strides of its dims. Reads and writes copy
** rows (outer, b) of the inner dims (key_gather, key_put); a single mask
** over the last dims of a contiguous run is compacted instead (reads), or
** is a masked_fill (writing a number), which need no offsets. */

/* A mask made contiguous, and its runs' counts (mask_count). */
typedef struct mask_info {
  em_tensor *mc, *runs;
  int64_t count;
} mask_info;

typedef struct adv_plan {
  int ndim;
  int64_t sizes[EM_MAX_DIMS];
  int bpos, bndim;          /* B occupies result dims bpos..bpos+bndim-1 */
  int64_t nb;               /* B's elements */
  int rest_of[EM_MAX_DIMS]; /* result dim -> view dim (-1 for B dims) */
  mask_info masks[EM_MAX_DIMS]; /* per item; set for masks */
  em_tensor *offsets;       /* int64, shape B, contiguous (resolve_offsets) */
} adv_plan;

static void adv_free(adv_plan *a, const plan *p) {
  for (int j = 0; j < p->nadv; j++) {
    em_tensor_release(a->masks[j].mc);
    em_tensor_release(a->masks[j].runs);
  }
  em_tensor_release(a->offsets);
  a->offsets = NULL;
}

/* The dims a mask indexes, merged where the view is contiguous across
** them; returns their count. */
static int mask_dims(const plan *p, const adv_item *m, int64_t *sizes, int64_t *strides) {
  int n = 0;
  for (int j = m->dim; j < m->dim + m->k; j++) {
    int64_t sz = p->sizes[j], st = p->strides[j];
    if (n > 0 && strides[n - 1] == stride_mul(st, sz)) {
      sizes[n - 1] *= sz;
      strides[n - 1] = st;
    } else {
      sizes[n] = sz;
      strides[n] = st;
      n++;
    }
  }
  return n;
}

/* The result's shape (masks counted); releases what it made on failure. */
static em_status resolve_shape(const em_index_kernels *k, const plan *p, adv_plan *a) {
  em_status st = EM_OK;
  memset(a->masks, 0, sizeof a->masks);
  a->offsets = NULL;
  em_tensor heads[EM_MAX_DIMS];
  const em_tensor *shapes[EM_MAX_DIMS];
  for (int j = 0; j < p->nadv && st == EM_OK; j++) {
    const adv_item *x = &p->adv[j];
    shapes[j] = x->x;
    if (!is_mask(x)) continue;
    mask_info *mi = &a->masks[j];
    int64_t n = em_tensor_numel(x->x), rsize[1] = {(n + EM_MASK_RUN - 1) / EM_MASK_RUN + 1};
    st = em_contiguous(x->x, &mi->mc);
    if (st == EM_OK) st = em_empty(1, rsize, EM_INT64, x->x->storage->device, &mi->runs);
    if (st == EM_OK) st = k->mask_count("index", mi->mc, mi->runs, &mi->count);
    memset(&heads[j], 0, sizeof heads[j]);
    heads[j].ndim = 1;
    heads[j].sizes[0] = mi->count;
    shapes[j] = &heads[j];
  }
  int bnd = 0;
  int64_t bshape[EM_MAX_DIMS];
  if (st == EM_OK) st = em_broadcast_shapes("index", p->nadv, shapes, &bnd, bshape);
  bool adjacent = true, is_adv[EM_MAX_DIMS] = {false};
  int nadv_dims = 0;
  for (int j = 0; j < p->nadv; j++) {
    for (int q = 0; q < p->adv[j].k; q++) is_adv[p->adv[j].dim + q] = true;
    nadv_dims += p->adv[j].k;
    if (j > 0 && p->adv[j].dim != p->adv[j - 1].dim + p->adv[j - 1].k) adjacent = false;
  }
  int rest = p->ndim - nadv_dims;
  if (st == EM_OK && rest + bnd > EM_MAX_DIMS) st = too_many_dims();
  if (st != EM_OK) {
    adv_free(a, p);
    return st;
  }
  a->bpos = adjacent ? p->adv[0].dim : 0;
  a->bndim = bnd;
  a->ndim = rest + bnd;
  a->nb = 1;
  int r = 0;
  for (int v = 0; v < p->ndim; v++) {
    if (is_adv[v]) continue;
    if (r == a->bpos) r += bnd;
    a->sizes[r] = p->sizes[v];
    a->rest_of[r] = v;
    r++;
  }
  for (int q = 0; q < bnd; q++) {
    a->sizes[a->bpos + q] = bshape[q];
    a->rest_of[a->bpos + q] = -1;
    a->nb *= bshape[q];
  }
  return EM_OK;
}

/* The offsets of B's positions, every position checked. */
static em_status resolve_offsets(const em_index_kernels *k, const em_tensor *t,
                                 const plan *p, adv_plan *a) {
  em_device dev = t->storage->device;
  int64_t msz[EM_MAX_DIMS], mst[EM_MAX_DIMS];
  const int64_t *bshape = a->sizes + a->bpos;
  em_status st;
  if (p->nadv == 1 && is_mask(&p->adv[0])) { /* the mask's own offsets */
    mask_info *mi = &a->masks[0];
    int n = mask_dims(p, &p->adv[0], msz, mst);
    st = em_empty(1, &mi->count, EM_INT64, dev, &a->offsets);
    if (st == EM_OK) k->key_mask_offsets(a->offsets, mi->mc, n, msz, mst, mi->runs);
    return st;
  }
  /* the first position tensor sets the offsets (else they start at 0),
  ** the others add to them */
  int first = -1;
  for (int j = 0; j < p->nadv && first < 0; j++)
    if (!is_mask(&p->adv[j])) first = j;
  st = first >= 0 ? em_empty(a->bndim, bshape, EM_INT64, dev, &a->offsets)
                  : em_zeros(a->bndim, bshape, EM_INT64, dev, &a->offsets);
  for (int q = 0; q < p->nadv && st == EM_OK; q++) {
    int j = q == 0 && first >= 0 ? first : q <= first ? q - 1 : q;
    const adv_item *x = &p->adv[j];
    if (is_mask(x)) { /* offsets += the mask's, broadcast */
      mask_info *mi = &a->masks[j];
      em_tensor *mo;
      int n = mask_dims(p, x, msz, mst);
      st = em_empty(1, &mi->count, EM_INT64, dev, &mo);
      if (st != EM_OK) break;
      k->key_mask_offsets(mo, mi->mc, n, msz, mst, mi->runs);
      em_operand in[2] = {{a->offsets, {0}}, {mo, {0}}};
      st = em_elementwise(EM_OP_ADD, 2, in, NULL, a->offsets, NULL);
      em_tensor_release(mo);
      continue;
    }
    em_index_bad bad;
    em_iter it;
    const em_tensor *ops[2] = {a->offsets, x->x};
    st = em_iter_build(&it, "index", 2, ops, a->bndim, bshape, false);
    if (st != EM_OK) break;
    k->key_offsets(&it, x->x->dtype, p->sizes[x->dim], p->strides[x->dim], j != first,
                   &bad);
    if (bad.found) st = bad_position(bad.value, x->src, p->sizes[x->dim]);
  }
  if (st != EM_OK) {
    em_tensor_release(a->offsets);
    a->offsets = NULL;
  }
  return st;
}

/* The layout of key_gather/key_put: the view's strides and the other
** side's (ostr, over the result's dims; ob along B). */
static void key_layout(const plan *p, const adv_plan *a, const int64_t *ostr, int64_t ob,
                       em_key_layout *l) {
  l->nouter = a->bpos;
  l->ninner = a->ndim - a->bpos - a->bndim;
  l->nb = a->nb;
  l->ob = ob;
  int j = 0;
  for (int r = 0; r < a->ndim; r++) {
    if (a->rest_of[r] < 0) continue;
    l->sizes[j] = a->sizes[r];
    l->vstrides[j] = p->strides[a->rest_of[r]];
    l->ostrides[j] = ostr[r];
    j++;
  }
}

static void contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
  int64_t s = 1;
  for (int r = ndim - 1; r >= 0; r--) {
    strides[r] = s;
    s = stride_mul(s, sizes[r] > 1 ? sizes[r] : 1);
  }
}

/* A single mask over the view's last dims, which are one run of stride 1:
** the result is each outer position's run compacted (masked_select's
** kernel), with no offsets. */
static int compactable(const plan *p, const adv_plan *a) {
  if (p->nadv != 1 || !is_mask(&p->adv[0]) || a->bpos + 1 != a->ndim) return 0;
  int64_t msz[EM_MAX_DIMS], mst[EM_MAX_DIMS];
  int n = mask_dims(p, &p->adv[0], msz, mst);
  return n == 1 && (mst[0] == 1 || msz[0] <= 1);
}

static em_status gather(const em_tensor *t, const plan *p, em_tensor **out) {
  const em_index_kernels *k;
  adv_plan a;
  em_status st = index_kernels("index", 1, &t, &k);
  if (st == EM_OK) st = resolve_shape(k, p, &a);
  if (st != EM_OK) return st;
  em_tensor view, *res = NULL;
  view_header(t, p, &view);
  int64_t ostr[EM_MAX_DIMS], osz[EM_MAX_DIMS];
  if (compactable(p, &a)) {
    int j = 0;
    for (int r = 0; r < a.bpos; r++, j++) {
      osz[j] = a.sizes[r];
      ostr[j] = p->strides[a.rest_of[r]];
    }
    st = em_empty(a.ndim, a.sizes, t->dtype, t->storage->device, &res);
    if (st == EM_OK)
      k->masked_compact(res, &view, a.masks[0].mc, a.masks[0].runs, a.bpos, osz, ostr);
  } else {
    st = resolve_offsets(k, t, p, &a);
    if (st == EM_OK) st = em_empty(a.ndim, a.sizes, t->dtype, t->storage->device, &res);
    if (st == EM_OK) {
      em_key_layout l;
      contiguous_strides(a.ndim, a.sizes, ostr);
      key_layout(p, &a, ostr, a.bndim > 0 ? ostr[a.bpos + a.bndim - 1] : 0, &l);
      k->key_gather(&view, res, a.offsets, &l);
    }
  }
  adv_free(&a, p);
  if (st == EM_OK) *out = res;
  else em_tensor_release(res);
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
  view_header(t, p, &view);
  return em_check_writable("index", &view);
}

/* The value's strides over the result's dims (0 where it broadcasts). */
static void value_strides(const em_tensor *v, const adv_plan *a, int64_t *vs) {
  for (int r = 0; r < a->ndim; r++) {
    int i = r - (a->ndim - v->ndim);
    vs[r] = i >= 0 && v->sizes[i] != 1 ? v->strides[i] : 0;
  }
}

/* The value's stride along B flattened, or -1 when its strides on B's dims
** do not flatten (then it is copied contiguous). */
static int64_t value_b_stride(const adv_plan *a, const int64_t *vs) {
  int64_t ob = 0, expect = -1;
  for (int r = a->bpos + a->bndim - 1; r >= a->bpos; r--) {
    if (a->sizes[r] == 1) continue;
    if (expect < 0) ob = vs[r];
    else if (vs[r] != expect) return -1;
    expect = stride_mul(vs[r], a->sizes[r]);
  }
  return ob;
}

/* Writes value (already t's dtype, not overlapping t) through plan p. */
static em_status scatter(em_tensor *t, const plan *p, const em_tensor *value,
                         int accumulate) {
  const em_index_kernels *k;
  adv_plan a;
  em_status st = check_put_target(p, t);
  if (st == EM_OK) st = index_kernels("index", 1, (const em_tensor *const *)&t, &k);
  if (st == EM_OK) st = resolve_shape(k, p, &a);
  if (st != EM_OK) return st;
  st = resolve_offsets(k, t, p, &a);
  em_tensor v, view, *vc = NULL;
  strip_leading_ones(value, a.ndim, &v);
  if (st == EM_OK) st = check_value_shape(&v, a.ndim, a.sizes);
  int64_t vs[EM_MAX_DIMS], ob = 0;
  if (st == EM_OK) {
    value_strides(&v, &a, vs);
    ob = value_b_stride(&a, vs);
  }
  if (st == EM_OK && !accumulate && ob < 0) { /* B's strides do not flatten */
    em_tensor h;
    restride(&h, &v, a.ndim, a.sizes, vs);
    st = em_empty(a.ndim, a.sizes, t->dtype, t->storage->device, &vc);
    if (st == EM_OK) st = em_copy_(vc, &h);
    if (st == EM_OK) {
      contiguous_strides(a.ndim, a.sizes, vs);
      ob = a.bndim > 0 ? vs[a.bpos + a.bndim - 1] : 0;
    }
  }
  if (st == EM_OK && !accumulate) {
    em_key_layout l;
    view_header(t, p, &view);
    key_layout(p, &a, vs, ob, &l);
    k->key_put(&view, vc ? vc : &v, a.offsets, &l);
    em_storage_bump_version(t->storage);
  } else if (st == EM_OK) { /* one element after another: repeats add up */
    em_tensor base, offs;
    memset(&base, 0, sizeof base);
    memset(&offs, 0, sizeof offs);
    base.ndim = offs.ndim = a.ndim;
    base.dtype = t->dtype;
    base.storage = t->storage;
    base.offset = p->offset;
    offs.dtype = EM_INT64;
    offs.storage = a.offsets->storage;
    offs.offset = a.offsets->offset;
    int64_t os[EM_MAX_DIMS];
    contiguous_strides(a.bndim, a.sizes + a.bpos, os);
    for (int r = 0; r < a.ndim; r++) {
      base.sizes[r] = offs.sizes[r] = a.sizes[r];
      int b = a.rest_of[r] < 0;
      base.strides[r] = b ? 0 : p->strides[a.rest_of[r]];
      offs.strides[r] = b ? os[r - a.bpos] : 0;
    }
    em_iter it;
    const em_tensor *ops[3] = {&base, &v, &offs};
    st = em_iter_build(&it, "index_put_", 3, ops, a.ndim, a.sizes, false);
    if (st == EM_OK) {
      k->key_accumulate(&it, t->dtype);
      em_storage_bump_version(t->storage);
    }
  }
  em_tensor_release(vc);
  adv_free(&a, p);
  return st;
}

/* t[mask] = number for a single mask: masked_fill_ over the view, the
** mask's strides on its dims and 0 on the others. */
static em_status mask_fill(em_tensor *t, const plan *p, em_scalar value) {
  const em_index_kernels *k;  /* a fill: an expanded t may take it (copy.c) */
  em_status st = index_kernels("index", 1, (const em_tensor *const *)&t, &k);
  if (st != EM_OK) return st;
  const adv_item *x = &p->adv[0];
  em_tensor view, mv, *snap = NULL;
  view_header(t, p, &view);
  const em_tensor *m = x->x;
  st = snapshot(&view, &m, &snap);
  if (st != EM_OK) return st;
  int64_t ms[EM_MAX_DIMS] = {0};
  for (int j = 0; j < x->k; j++) ms[x->dim + j] = m->strides[j];
  restride(&mv, m, view.ndim, view.sizes, ms);
  em_iter it;
  const em_tensor *ops[2] = {&view, &mv};
  st = em_iter_build(&it, "index_put_", 2, ops, view.ndim, view.sizes, false);
  if (st == EM_OK) {
    uint64_t bytes[2] = {0, 0};  /* EM_MAX_ELEM_BYTES */
    em_scalar_to_bytes(value, t->dtype, bytes);
    k->masked_fill(&it, t->dtype, bytes);
    em_storage_bump_version(t->storage);
  }
  em_tensor_release(snap);
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
    st = basic_view(t, &p, &view);  /* a fill: an expanded t may take it (copy.c) */
    if (st == EM_OK) {
      st = em_fill_(view, value);
      em_tensor_release(view);
    }
  } else if (p.nadv == 1 && is_mask(&p.adv[0]) &&
             em_dtype_kindof(t->dtype) != EM_KIND_COMPLEX) {
    st = mask_fill(t, &p, value); /* the fill loops have no complex rows */
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
  if (accumulate && em_dtype_kindof(t->dtype) == EM_KIND_COMPLEX) {
    plan_free(&p);
    /* the accumulating loops have no complex rows: the sums run on the real
    ** views, (re, im) a trailing dim the indices leave whole */
    em_tensor *rt = NULL, *rv = NULL, *owned = NULL;
    const em_tensor *cv = values;
    st = em_view_as_real(t, &rt);
    if (st == EM_OK && values->dtype != t->dtype) {
      st = em_to(values, t->dtype, t->storage->device, 0, &owned);
      cv = owned;
    }
    if (st == EM_OK) st = em_view_as_real(cv, &rv);
    if (st == EM_OK) st = index_put_tensors_nograd(rt, n, indices, rv, 1);
    em_tensor_release(rt);
    em_tensor_release(rv);
    em_tensor_release(owned);
    return st;
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
