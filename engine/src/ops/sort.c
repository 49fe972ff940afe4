/*
** ops/sort.c -- sort, topk, kthvalue, median/nanmedian, unique (of values
** or of slices along a dim): the checks, the results' shapes, the results
** on the input's device, autograd; the values come from the device's sort
** kernels (core/kern_sort.h).
**
** What holds:
** - sort is stable in both directions; NaN sorts as larger than every
**   number. Indices are 1-based int64.
** - unique's result size is the number of distinct values: the op asks
**   the kernel for it (a device without values cannot answer), then
**   allocates the results and has them written.
*/
#include "core/kern_sort.h"
#include "core/kernels.h"
#include "autograd/autograd.h"
#include "ops/composed.h"

#include <math.h>
#include <string.h>

/* -- sort / topk ------------------------------------------------------------- */

static em_status sort_impl(const char *op, const em_tensor *t, int64_t dim, int descending,
                           int64_t k, bool check_k, em_tensor **values, em_tensor **indices) {
  int axis;
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  int64_t len = t->ndim > 0 ? t->sizes[axis] : 1;
  if (!check_k) k = len;
  else if (k < 0 || k > len)
    return em_fail(EM_E_INDEX, "%s: k (%lld) is out of range: dimension %d has size %lld",
                   op, (long long)k, axis + 1, (long long)len);
  /* a 0-d result holds one element: topk(0) of a 0-d tensor is the tensor
  ** (PyTorch's), never an unwritten element */
  if (t->ndim == 0) k = 1;
  int64_t sizes[EM_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) sizes[i] = t->sizes[i];
  if (t->ndim > 0) sizes[axis] = k;
  em_tensor *v = NULL, *ix = NULL;
  st = em_empty(t->ndim, sizes, t->dtype, t->storage->device, &v);
  if (st == EM_OK) st = em_empty(t->ndim, sizes, EM_INT64, t->storage->device, &ix);
  if (st == EM_OK) st = kt->sort->sort(op, v, ix, t, axis, k, descending);
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  *values = v;
  *indices = ix;
  return EM_OK;
}

static em_status sort_nograd(const em_tensor *t, int64_t dim, int descending,
                  em_tensor **values, em_tensor **indices) {
  return sort_impl("sort", t, dim, descending, 0, false, values, indices);
}

static em_status topk_nograd(const em_tensor *t, int64_t k, int64_t dim, int largest,
                  em_tensor **values, em_tensor **indices) {
  return sort_impl("topk", t, dim, largest, k, true, values, indices);
}

/* -- kthvalue / median -------------------------------------------------------
** A lane is sorted ascending (stable) and one position is picked: k-1 for
** kthvalue; the lower median (n-1)/2 of the lane, or of its non-NaN values
** for nanmedian; a lane holding NaN has NaN as its median (the first NaN in
** the original order, whose index is reported). */

static em_status pick_impl(const char *op, const em_tensor *t, int64_t dim, int keepdim,
                           em_pick_kind mode, int64_t k, em_tensor **values,
                           em_tensor **indices) {
  int axis;
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  int64_t len = t->ndim > 0 ? t->sizes[axis] : 1;
  if (mode == EM_PICK_KTH && (k < 1 || k > len))
    return em_fail(EM_E_INDEX, "%s: k (%lld) is out of range: dimension %d has size %lld",
                   op, (long long)k, axis + 1, (long long)len);
  if (len == 0)
    return em_fail(EM_E_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                   op, axis + 1);
  int64_t sizes[EM_MAX_DIMS], str[EM_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) sizes[i] = t->sizes[i];
  if (t->ndim > 0) sizes[axis] = 1;
  em_tensor *v = NULL, *ix = NULL;
  st = em_empty(t->ndim, sizes, t->dtype, t->storage->device, &v);
  if (st == EM_OK) st = em_empty(t->ndim, sizes, EM_INT64, t->storage->device, &ix);
  if (st == EM_OK)
    st = kt->sort->pick(op, v, ix, t, axis, mode, mode == EM_PICK_KTH ? k - 1 : 0);
  if (st == EM_OK && !keepdim && t->ndim > 0) {
    /* drop the size-1 axis: a view of the same storages */
    int m = 0;
    for (int i = 0; i < t->ndim; i++)
      if (i != axis) sizes[m++] = t->sizes[i];
    em_contiguous_strides(m, sizes, str);
    em_tensor *v2 = NULL, *i2 = NULL;
    st = em_as_strided(v, m, sizes, str, 0, &v2);
    if (st == EM_OK) st = em_as_strided(ix, m, sizes, str, 0, &i2);
    em_tensor_release(v);
    em_tensor_release(ix);
    v = v2;
    ix = i2;
    if (st != EM_OK) { em_tensor_release(v2); v = ix = NULL; em_tensor_release(i2); }
  }
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  *values = v;
  if (indices) *indices = ix;
  else em_tensor_release(ix);
  return EM_OK;
}

static em_status kthvalue_nograd(const em_tensor *t, int64_t k, int64_t dim, int keepdim,
                      em_tensor **values, em_tensor **indices) {
  return pick_impl("kthvalue", t, dim, keepdim, EM_PICK_KTH, k, values, indices);
}

static em_status median_nograd(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int ignore_nan, em_tensor **values, em_tensor **indices) {
  const char *op = ignore_nan ? "nanmedian" : "median";
  em_pick_kind mode = ignore_nan ? EM_PICK_NANMEDIAN : EM_PICK_MEDIAN;
  if (has_dim) return pick_impl(op, t, dim, keepdim, mode, 0, values, indices);
  int64_t numel = em_tensor_numel(t);
  if (numel == 0) {
    /* PyTorch: the median of nothing is NaN */
    em_scalar nan = {EM_SCALAR_FLOAT, 0, NAN};
    return em_full(0, NULL, nan, t->dtype, t->storage->device, values);
  }
  em_tensor *c;
  em_status st = em_contiguous(t, &c);
  if (st != EM_OK) return st;
  em_tensor flat;
  int64_t one = 1;
  em_stack_header(&flat, c, 1, &numel, &one, c->offset);
  st = pick_impl(op, &flat, 1, 0, mode, 0, values, indices);
  em_tensor_release(c);
  return st;
}

/* -- unique ------------------------------------------------------------------- */

/* Hands unique's results to the caller, or releases them all on failure. */
static em_status unique_hand(em_status st, em_tensor *v, em_tensor *inv, em_tensor *cnt,
                             em_tensor **values, em_tensor **inverse, em_tensor **counts) {
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(inv);
    em_tensor_release(cnt);
    return st;
  }
  *values = v;
  if (inverse) *inverse = inv;
  if (counts) *counts = cnt;
  return EM_OK;
}

em_status em_unique(const em_tensor *t, em_tensor **values, em_tensor **inverse,
                    em_tensor **counts) {
  const em_kernels *kt;
  em_status st = em_kernels_check("unique", t->storage->device, &kt);
  if (st != EM_OK) return st;
  em_device dev = t->storage->device;
  int64_t n = em_tensor_numel(t);
  em_tensor *c = NULL, *sv = NULL, *si = NULL, *v = NULL, *inv = NULL, *cnt = NULL;
  st = em_contiguous(t, &c);
  if (st != EM_OK) return st;
  em_tensor flat;
  int64_t one = 1;
  em_stack_header(&flat, c, 1, &n, &one, c->offset);
  /* sorted with no history: the sort is only the way to the values */
  st = sort_nograd(&flat, 1, 0, &sv, &si);
  int64_t nu = 0;
  if (st == EM_OK) st = kt->sort->unique_count(sv, &nu);
  if (st == EM_OK) st = em_empty(1, &nu, t->dtype, dev, &v);
  if (st == EM_OK && counts) st = em_zeros(1, &nu, EM_INT64, dev, &cnt);
  if (st == EM_OK && inverse) st = em_empty(t->ndim, t->sizes, EM_INT64, dev, &inv);
  if (st == EM_OK) st = kt->sort->unique_write(sv, si, v, inv, cnt);
  em_tensor_release(c);
  em_tensor_release(sv);
  em_tensor_release(si);
  return unique_hand(st, v, inv, cnt, values, inverse, counts);
}

/* -- unique along a dim ----------------------------------------------------------
** The slices along dim (rows, after swapping dim with the first dim: PyTorch
** transposes rather than moves, which decides the lexicographic order of
** slices of 3 and more dims, and we keep its order) are sorted
** lexicographically and equal neighbours merged, as PyTorch's unique_dim
** (core/kern_sort.h). */

static em_status unique_dim_impl(const em_tensor *t, int64_t dim, em_tensor **values,
                                 em_tensor **inverse, em_tensor **counts) {
  char buf[EM_SHAPE_BUF];
  if (t->ndim == 0)
    return em_fail(EM_E_VALUE, "unique: a 0-d tensor has no dim to take unique slices along");
  int ax;
  em_status st = em_wrap_dim("unique", dim, t->ndim, &ax);
  if (st != EM_OK) return st;
  int64_t S = t->sizes[ax];
  for (int i = 0; i < t->ndim; i++)
    if (i != ax && t->sizes[i] == 0 && S != 0)
      return em_fail(EM_E_VALUE, "unique: the tensor of size %s has a dim of size 0 other "
                     "than dim %lld, so unique along dim %lld cannot be applied",
                     em_fmt_shape(buf, sizeof buf, t->ndim, t->sizes), (long long)dim,
                     (long long)dim);
  const em_kernels *kt;
  st = em_kernels_check("unique", t->storage->device, &kt);
  if (st != EM_OK) return st;
  em_device dev = t->storage->device;
  int64_t src = ax + 1, front = 1;
  em_tensor *m = NULL, *c = NULL, *order = NULL, *u = NULL, *v = NULL, *inv = NULL,
            *cnt = NULL;
  st = em_transpose(t, front, src, &m);
  if (st == EM_OK) st = em_contiguous(m, &c);
  /* the slices' sorted positions and the sort's scratch */
  if (em_nn_forced_math() || !kt->sort->unique_dim_sort || !kt->sort->unique_dim_write) {
    /* composed from the device's sort, index and scan ops */
    if (st == EM_OK)
      st = em_unique_dim_composed(c, &u, inverse ? &inv : NULL, counts ? &cnt : NULL);
  } else {
    int64_t norder = 2 * (S ? S : 1), nu = 0;
    if (st == EM_OK) st = em_empty(1, &norder, EM_INT64, dev, &order);
    if (st == EM_OK) st = kt->sort->unique_dim_sort(c, order, &nu);
    if (st == EM_OK) {
      int64_t usz[EM_MAX_DIMS];
      for (int i = 0; i < c->ndim; i++) usz[i] = c->sizes[i];
      usz[0] = nu;
      st = em_empty(c->ndim, usz, t->dtype, dev, &u);
    }
    if (st == EM_OK && counts) st = em_zeros(1, &nu, EM_INT64, dev, &cnt);
    if (st == EM_OK && inverse) st = em_empty(1, &S, EM_INT64, dev, &inv);
    if (st == EM_OK) st = kt->sort->unique_dim_write(c, order, u, inv, cnt);
  }
  if (st == EM_OK) {
    em_tensor *back = NULL;
    st = em_transpose(u, front, src, &back);
    if (st == EM_OK) {
      st = em_contiguous(back, &v);
      em_tensor_release(back);
    }
  }
  em_tensor_release(m);
  em_tensor_release(c);
  em_tensor_release(order);
  em_tensor_release(u);
  return unique_hand(st, v, inv, cnt, values, inverse, counts);
}

em_status em_unique_dim(const em_tensor *t, int64_t dim, em_tensor **values,
                        em_tensor **inverse, em_tensor **counts) {
  int on = em_ag_pause(); /* unique is not differentiable: no history */
  em_status st = unique_dim_impl(t, dim, values, inverse, counts);
  em_ag_resume(on);
  return st;
}

/* -- Autograd recording ---------------------------------------------------------
** The values are t's elements at the returned indices: the gradient goes
** back to those places (autograd.c, em_ag_record_indexed). */

static em_status record_picked(const char *name, const em_tensor *t, int64_t dim,
                               int keepdim, em_tensor **values, em_tensor **indices,
                               em_status st, int on) {
  if (st == EM_OK && on && t->requires_grad)
    st = em_ag_record_indexed(name, t, dim, keepdim, *indices, *values);
  if (st != EM_OK && on && t->requires_grad && *values) {
    em_tensor_release(*values);
    em_tensor_release(*indices);
    *values = *indices = NULL;
  }
  return st;
}

em_status em_sort(const em_tensor *t, int64_t dim, int descending, em_tensor **values,
                  em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = sort_nograd(t, dim, descending, values, indices);
  em_ag_resume(on);
  return record_picked("SortBackward0", t, dim, 1, values, indices, st, on);
}
em_status em_topk(const em_tensor *t, int64_t k, int64_t dim, int largest,
                  em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = topk_nograd(t, k, dim, largest, values, indices);
  em_ag_resume(on);
  return record_picked("TopkBackward0", t, dim, 1, values, indices, st, on);
}
em_status em_kthvalue(const em_tensor *t, int64_t k, int64_t dim, int keepdim,
                      em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = kthvalue_nograd(t, k, dim, keepdim, values, indices);
  em_ag_resume(on);
  return record_picked("KthvalueBackward0", t, dim, keepdim, values, indices, st, on);
}
em_status em_median(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int ignore_nan, em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_tensor *own = NULL;
  int rec = on && t->requires_grad;
  em_status st = median_nograd(t, has_dim, dim, keepdim, ignore_nan, values,
                               indices ? indices : rec ? &own : NULL);
  em_ag_resume(on);
  if (!rec || st != EM_OK) return st;
  const char *name = ignore_nan ? (has_dim ? "NanmedianBackward1" : "NanmedianBackward0")
                                 : (has_dim ? "MedianBackward1" : "MedianBackward0");
  em_tensor *ix = indices ? *indices : own;
  if (has_dim) {
    st = em_ag_record_indexed(name, t, dim, keepdim, ix, *values);
  } else {
    /* the whole tensor: the index is the flat position */
    em_tensor *pos = NULL;
    on = em_ag_pause();
    st = em_reshape(ix, (*values)->ndim, (*values)->sizes, &pos);
    em_ag_resume(on);
    if (st == EM_OK) st = em_ag_record_gather(name, t, pos, *values);
    em_tensor_release(pos);
  }
  em_tensor_release(own);
  if (st != EM_OK) {
    em_tensor_release(*values);
    *values = NULL;
    if (indices) {
      em_tensor_release(*indices);
      *indices = NULL;
    }
  }
  return st;
}
