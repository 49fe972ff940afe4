/*
** ops/masked.c -- the ops over bool masks: masked_fill_, masked_select,
** masked_scatter_, nonzero and where, over the index family of the kernel
** table (core/kern_index.h).
**
** What holds:
** - A mask is a bool tensor that broadcasts to the tensor it selects from
**   (masked_select: the two broadcast together). It is presented to the
**   kernels as a restrided header, never copied unless a kernel needs it
**   dense.
** - Positions are row-major: masked_select's result and masked_scatter_'s
**   source are in row-major order of the (broadcast) mask, whatever the
**   layouts, because the kernels read an inclusive running count of the
**   mask (a prefix) rather than depending on the iteration order.
** - The length of masked_select's and nonzero's results depends on the
**   mask's values: a device without values (meta) refuses them.
** - Every operand is on one device, where the result is made.
*/
#include "ops/index_checks.h"
#include "autograd/autograd.h"

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
** (int64, row-major). *count gets the number of true positions (see the
** mask_prefix kernel for sizes_result). */
static em_status mask_prefix(const char *op, const em_index_kernels *k,
                             const em_tensor *mview, int sizes_result, em_tensor **mc,
                             em_tensor **pre, int64_t *count) {
  em_device dev = mview->storage->device;
  em_status st = em_empty(mview->ndim, mview->sizes, EM_BOOL, dev, mc);
  if (st != EM_OK) return st;
  st = em_copy_(*mc, mview);
  if (st == EM_OK) st = em_empty(mview->ndim, mview->sizes, EM_INT64, dev, pre);
  if (st == EM_OK) {
    st = k->mask_prefix(op, *pre, *mc, sizes_result, count);
    if (st != EM_OK) { em_tensor_release(*pre); *pre = NULL; }
  }
  if (st != EM_OK) { em_tensor_release(*mc); *mc = NULL; }
  return st;
}

/* masked_select when the (broadcast) source and mask are both contiguous:
** no mask copy and no prefix tensor. The mask is cut into runs of
** EM_MASK_RUN elements; each run's count is taken, the counts' prefix
** gives each run its place in out, and the runs are compacted. */
static em_status masked_select_dense(const char *op, const em_index_kernels *k,
                                     const em_tensor *tv, const em_tensor *mv,
                                     em_tensor **out) {
  em_device dev = tv->storage->device;
  int64_t n = em_tensor_numel(tv);
  int64_t rsize[1] = {(n + EM_MASK_RUN - 1) / EM_MASK_RUN + 1}, osize[1];
  em_tensor *runs, *o;
  em_status st = em_empty(1, rsize, EM_INT64, dev, &runs);
  if (st != EM_OK) return st;
  st = k->mask_count(op, mv, runs, &osize[0]);
  if (st == EM_OK) st = em_empty(1, osize, tv->dtype, dev, &o);
  if (st == EM_OK) {
    k->masked_compact(o, tv, mv, runs, 0, NULL, NULL);
    *out = o;
  }
  em_tensor_release(runs);
  return st;
}

static em_status masked_select_nograd(const em_tensor *t, const em_tensor *mask,
                                      em_tensor **out) {
  const char *op = "masked_select";
  const em_index_kernels *k;
  const em_tensor *all[2] = {t, mask};
  em_status st = index_kernels(op, 2, all, &k);
  if (st == EM_OK) st = check_mask(op, mask);
  if (st != EM_OK) return st;
  int nd;
  int64_t shape[EM_MAX_DIMS];
  st = em_broadcast_shapes(op, 2, all, &nd, shape);
  if (st != EM_OK) return st;
  em_tensor tv, mv, *mc, *pre, *o;
  expand_to(op, t, nd, shape, &tv);
  expand_to(op, mask, nd, shape, &mv);
  if (em_tensor_is_contiguous(&tv) && em_tensor_is_contiguous(&mv))
    return masked_select_dense(op, k, &tv, &mv, out);
  int64_t count;
  st = mask_prefix(op, k, &mv, 1, &mc, &pre, &count);
  if (st != EM_OK) return st;
  int64_t osize[1] = {count};
  st = em_empty(1, osize, t->dtype, t->storage->device, &o);
  if (st == EM_OK) {
    em_iter it;
    const em_tensor *ops[3] = {&tv, mc, pre};
    int was = em_iter_allow_complex(1); /* the loops move complex elements as bytes */
    st = em_iter_build(&it, op, 3, ops, nd, shape, false);
    em_iter_allow_complex(was);
    if (st == EM_OK) k->masked_select(&it, t->dtype, o);
    if (st != EM_OK) em_tensor_release(o);
    else *out = o;
  }
  em_tensor_release(mc);
  em_tensor_release(pre);
  return st;
}

static em_status masked_fill_nograd(em_tensor *t, const em_tensor *mask, em_scalar value) {
  const char *op = "masked_fill_";
  const em_index_kernels *k;
  const em_tensor *all[2] = {t, mask};
  em_status st = index_kernels(op, 2, all, &k);  /* an expanded t may be filled (fill_nograd) */
  if (st == EM_OK) st = check_mask(op, mask);
  if (st != EM_OK) return st;
  em_tensor mv, *snap = NULL;
  const em_tensor *m = mask;
  st = snapshot(t, &m, &snap);
  if (st == EM_OK) st = expand_to(op, m, t->ndim, t->sizes, &mv);
  em_iter it;
  const em_tensor *ops[2] = {t, &mv};
  if (st == EM_OK) st = em_iter_build(&it, op, 2, ops, t->ndim, t->sizes, false);
  if (st == EM_OK) {
    uint64_t bytes[2] = {0, 0};  /* EM_MAX_ELEM_BYTES */
    em_scalar_to_bytes(value, t->dtype, bytes);
    k->masked_fill(&it, t->dtype, bytes);
    em_storage_bump_version(t->storage);
  }
  em_tensor_release(snap);
  return st;
}

static em_status masked_scatter_nograd(em_tensor *t, const em_tensor *mask,
                                       const em_tensor *source) {
  const char *op = "masked_scatter_";
  const em_index_kernels *k;
  const em_tensor *all[3] = {t, mask, source};
  em_status st = index_kernels(op, 3, all, &k);
  if (st == EM_OK) st = em_check_writable(op, t);
  if (st == EM_OK) st = check_mask(op, mask);
  if (st == EM_OK) st = check_same_dtype(op, t, source, "source");
  if (st != EM_OK) return st;
  em_tensor mv, *mc = NULL, *pre = NULL, *sc = NULL;
  st = expand_to(op, mask, t->ndim, t->sizes, &mv);
  if (st != EM_OK) return st;
  int64_t count;
  st = mask_prefix(op, k, &mv, 0, &mc, &pre, &count);
  if (st != EM_OK) return st;
  if (em_tensor_numel(source) < count) {
    st = em_fail(EM_E_VALUE,
                 "%s: source has %lld elements but the mask has %lld true positions",
                 op, (long long)em_tensor_numel(source), (long long)count);
  } else {
    /* a contiguous snapshot: read in row-major order, never through t */
    st = em_empty(source->ndim, source->sizes, source->dtype, source->storage->device, &sc);
    if (st == EM_OK) st = em_copy_(sc, source);
  }
  em_iter it;
  const em_tensor *ops[3] = {t, mc, pre};
  if (st == EM_OK) st = em_iter_build(&it, op, 3, ops, t->ndim, t->sizes, false);
  if (st == EM_OK) {
    k->masked_scatter(&it, t->dtype, sc);
    em_storage_bump_version(t->storage);
  }
  em_tensor_release(mc);
  em_tensor_release(pre);
  em_tensor_release(sc);
  return st;
}

/* -- nonzero / where -------------------------------------------------------------- */

em_status em_nonzero(const em_tensor *t, em_tensor **out) {
  const char *op = "nonzero";
  const em_index_kernels *k;
  em_status st = index_kernels(op, 1, &t, &k);
  if (st != EM_OK) return st;
  em_tensor *b, *o;
  /* bool conversion is "!= 0" with NaN true, which is nonzero's rule */
  st = em_empty(t->ndim, t->sizes, EM_BOOL, t->storage->device, &b);
  if (st != EM_OK) return st;
  int64_t osize[2] = {0, t->ndim};
  st = em_copy_(b, t);
  if (st == EM_OK) st = k->mask_count(op, b, NULL, &osize[0]);
  if (st == EM_OK) st = em_empty(2, osize, EM_INT64, t->storage->device, &o);
  if (st == EM_OK) {
    k->nonzero(o, b);
    *out = o;
  }
  em_tensor_release(b);
  return st;
}

static em_status where_nograd(const em_tensor *cond, const em_tensor *a,
                              const em_tensor *b, em_dtype dt, em_tensor **out) {
  const char *op = "where";
  const em_index_kernels *k;
  const em_tensor *all[3] = {cond, a, b};
  em_status st = index_kernels(op, 3, all, &k);
  if (st == EM_OK) st = check_mask(op, cond);
  if (st != EM_OK) return st;
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "%s: invalid dtype %d", op, (int)dt);
  int nd;
  int64_t shape[EM_MAX_DIMS];
  st = em_broadcast_shapes(op, 3, all, &nd, shape);
  if (st != EM_OK) return st;
  em_device dev = cond->storage->device;
  em_tensor *ac = NULL, *bc = NULL, *o = NULL;
  st = em_to(a, dt, dev, 0, &ac);
  if (st == EM_OK) st = em_to(b, dt, dev, 0, &bc);
  if (st == EM_OK) st = em_empty(nd, shape, dt, dev, &o);
  if (st == EM_OK) {
    em_iter it;
    const em_tensor *ops[4] = {o, cond, ac, bc};
    int was = em_iter_allow_complex(1); /* the loops move complex elements whole */
    st = em_iter_build(&it, op, 4, ops, nd, shape, false);
    em_iter_allow_complex(was);
    if (st == EM_OK) k->where(&it, dt);
  }
  em_tensor_release(ac);
  em_tensor_release(bc);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** masked_select is a gather: where each output element came from is found
** by running it over an arange of t's shape; the writes record the
** positions they wrote (autograd.h, EM_AG_INPLACE). */

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
  em_status st = any || (on && t->nograd_view) ? em_ag_check_inplace("masked_scatter_", t) : EM_OK;
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
