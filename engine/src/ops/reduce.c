/*
** ops/reduce.c -- reductions over dims (sum, prod, mean, amax, amin, all,
** any, nansum, nanmean, count_nonzero, var/std(+mean), norm, logsumexp)
** and along one dim (max/min with indices, argmax/argmin): the checks, the
** result dtypes, the accumulator and the result on the input's device,
** autograd; the values come from the device's reduce kernels
** (core/kern_reduce.h).
**
** What holds:
** - A reduction's kernel fills an accumulator (double or int64 per
**   output, core/kern_reduce.h) that is then cast into the result (copy_).
**   A dtype option casts the input first, as PyTorch does.
** - Dims are 1-based (negative from the end) in arguments and messages.
** - Results are written only on success; nothing leaks on failure.
*/
#include "core/kern_reduce.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"
#include "ops/autocast.h"

#include <math.h>
#include <stdlib.h>

/* -- Dims ----------------------------------------------------------------- */

/* Marks the reduced axes of t for a list of 1-based dims (all when
** ndims <= 0); duplicate or out-of-range dims are errors. */
static em_status reduce_dims(const char *op, const em_tensor *t, int ndims,
                             const int64_t *dims, bool *mask) {
  int nd = t->ndim;
  for (int i = 0; i < EM_MAX_DIMS; i++) mask[i] = false;
  if (ndims <= 0 || dims == NULL) {
    for (int i = 0; i < nd; i++) mask[i] = true;
    return EM_OK;
  }
  for (int i = 0; i < ndims; i++) {
    int a;
    em_status st = em_wrap_dim(op, dims[i], nd, &a);
    if (st != EM_OK) return st;
    if (mask[a])
      return em_fail(EM_E_VALUE, "%s: dim %d appears multiple times in the list of dims",
                     op, a + 1);
    mask[a] = true;
  }
  return EM_OK;
}

/* Output sizes: reduced dims become 1 (keepdim) or disappear. */
static int out_shape(const em_tensor *t, const bool *mask, bool keepdim,
                     int64_t *sizes) {
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (mask[i]) {
      if (keepdim) sizes[n++] = 1;
    } else {
      sizes[n++] = t->sizes[i];
    }
  }
  return n;
}


/* A fresh accumulator of the keepdim shape on t's device, in the layout of
** core/kern_reduce.h: `width` elements of dt per output position,
** contiguous. Its contents are the kernel's to set. */
static em_status new_acc(const em_tensor *t, const bool *mask, em_dtype dt, int width,
                         em_tensor **out) {
  int64_t sizes[EM_MAX_DIMS] = {0}, strides[EM_MAX_DIMS] = {0};
  int n = out_shape(t, mask, true, sizes);
  int64_t numel;
  em_status st = em_numel_checked("reduce", n, sizes, &numel);
  if (st != EM_OK) return st;
  em_contiguous_strides(n, sizes, strides);
  for (int i = 0; i < n; i++) strides[i] *= width;
  em_storage *s;
  st = em_storage_new((size_t)(numel * width) * em_dtype_size(dt), t->storage->device, &s);
  if (st != EM_OK) return st;
  st = em_tensor_alloc(s, 0, n, sizes, strides, dt, out);
  em_storage_release(s);
  return st;
}

/* The accumulator (keepdim, width w) copied into a new tensor of dtype dt
** on its device, with or without the reduced dims. */
static em_status acc_to_out(em_tensor *acc, const em_tensor *t, const bool *mask,
                            bool keepdim, em_dtype dt, em_tensor **out) {
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (mask[i] && !keepdim) continue;
    sizes[n] = acc->sizes[i];
    strides[n] = acc->strides[i];
    n++;
  }
  em_tensor v;
  em_stack_header(&v, acc, n, sizes, strides, acc->offset);
  em_tensor *o;
  em_status st = em_empty(n, sizes, dt, acc->storage->device, &o);
  if (st != EM_OK) return st;
  st = em_copy_(o, &v);
  if (st != EM_OK) { em_tensor_release(o); return st; }
  *out = o;
  return EM_OK;
}

/* -- Shared checks ---------------------------------------------------------- */

/* PyTorch's message for max/amax/argmax over an empty dim, dims 1-based. */
static em_status check_nonempty(const char *op, const em_tensor *t, const bool *mask,
                                bool all_dims) {
  if (all_dims) {
    if (em_tensor_numel(t) == 0)
      return em_fail(EM_E_INDEX,
                     "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                     "Specify the reduction dim with the 'dim' argument.", op);
    return EM_OK;
  }
  for (int i = 0; i < t->ndim; i++)
    if (mask[i] && t->sizes[i] == 0)
      return em_fail(EM_E_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                     op, i + 1);
  return EM_OK;
}

static int64_t reduced_count(const em_tensor *t, const bool *mask) {
  /* the count only overflows for an empty tensor (another dim is 0),
  ** whose reduction computes no output element: saturate */
  int64_t c = 1;
  for (int i = 0; i < t->ndim; i++)
    if (mask[i] && em_mul_overflow_i64(c, t->sizes[i], &c)) return INT64_MAX;
  return c;
}

/* -- em_reduce ------------------------------------------------------------- */

static em_status reduce_nograd(em_reduce_op rop, const em_tensor *t, int ndims,
                    const int64_t *dims, int keepdim, int dtype, em_tensor **out) {
  static const char *const names[] = {"sum", "prod", "mean", "amax", "amin", "all",
                                      "any", "nansum", "nanmean", "count_nonzero"};
  static const em_red_kind kinds[] = {EM_RED_SUM, EM_RED_PROD, EM_RED_MEAN, EM_RED_AMAX,
                                      EM_RED_AMIN, EM_RED_ALL, EM_RED_ANY, EM_RED_NANSUM,
                                      EM_RED_NANMEAN, EM_RED_COUNT_NONZERO};
  if ((unsigned)rop > EM_REDUCE_COUNT_NONZERO)
    return em_fail(EM_E_VALUE, "reduce: unknown reduction %d", (int)rop);
  const char *op = names[rop];
  bool mask[EM_MAX_DIMS];
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = reduce_dims(op, t, ndims, dims, mask);
  if (st != EM_OK) return st;
  if (dtype >= EM_NUM_DTYPES) return em_fail(EM_E_TYPE, "%s: invalid dtype %d", op, dtype);
  em_dtype in = t->dtype;
  if (em_dtype_kindof(in) == EM_KIND_COMPLEX ||
      (dtype >= 0 && em_dtype_kindof((em_dtype)dtype) == EM_KIND_COMPLEX))
    return em_fail(EM_E_TYPE, EM_MSG_DTYPE_NOT_IMPLEMENTED, op,
                   em_dtype_name(em_dtype_kindof(in) == EM_KIND_COMPLEX ? in : (em_dtype)dtype));
  em_dtype odt;
  switch (rop) {
    case EM_REDUCE_SUM:
    case EM_REDUCE_PROD:
      odt = dtype >= 0 ? (em_dtype)dtype
                       : (em_dtype_kindof(in) == EM_KIND_FLOAT ? in : EM_INT64);
      break;
    case EM_REDUCE_NANSUM:
      /* PyTorch refuses an integer dtype for floating input (NaN has no
      ** integer value: the cast would make them garbage, then sum them) */
      if (dtype >= 0 && em_dtype_kindof(in) == EM_KIND_FLOAT &&
          em_dtype_kindof((em_dtype)dtype) != EM_KIND_FLOAT)
        return em_fail(EM_E_TYPE,
                       "nansum: dtype %s is not supported for %s input (NaN has no integer "
                       "value)", em_dtype_name((em_dtype)dtype), em_dtype_name(in));
      if (em_dtype_kindof(dtype >= 0 ? (em_dtype)dtype : in) != EM_KIND_FLOAT) {
        rop = EM_REDUCE_SUM;  /* integers hold no NaN */
        op = "nansum";
      }
      odt = dtype >= 0 ? (em_dtype)dtype
                       : (em_dtype_kindof(in) == EM_KIND_FLOAT ? in : EM_INT64);
      break;
    case EM_REDUCE_COUNT_NONZERO:
      if (dtype >= 0)
        return em_fail(EM_E_VALUE, "count_nonzero: takes no dtype");
      odt = EM_INT64;
      break;
    case EM_REDUCE_MEAN:
    case EM_REDUCE_NANMEAN:
      /* PyTorch 1.13's nanmean checks the input itself, before any dtype */
      if (rop == EM_REDUCE_NANMEAN && em_dtype_kindof(in) != EM_KIND_FLOAT)
        return em_fail(EM_E_TYPE,
                       "nanmean(): expected input to have floating point dtype but got %s",
                       em_dtype_pt_name(in));
      if (dtype >= 0 && em_dtype_kindof((em_dtype)dtype) != EM_KIND_FLOAT)
        return em_fail(EM_E_TYPE,
                       "%s(): could not infer output dtype. Optional dtype must be "
                       "either a floating point or complex dtype. Got: %s",
                       op, em_dtype_pt_name((em_dtype)dtype));
      if (dtype < 0 && em_dtype_kindof(in) != EM_KIND_FLOAT)
        return em_fail(EM_E_TYPE,
                       "%s(): could not infer output dtype. Input dtype must be "
                       "either a floating point or complex dtype. Got: %s",
                       op, em_dtype_pt_name(in));
      odt = dtype >= 0 ? (em_dtype)dtype : in;
      break;
    case EM_REDUCE_AMAX:
    case EM_REDUCE_AMIN:
      st = check_nonempty(op, t, mask, ndims <= 0);
      if (st != EM_OK) return st;
      odt = in;
      break;
    default: /* all, any: bool, except uint8 stays uint8 (PyTorch) */
      odt = in == EM_UINT8 ? EM_UINT8 : EM_BOOL;
      break;
  }
  /* A dtype option casts the input first, as PyTorch does. */
  em_tensor *src = NULL;
  if (dtype >= 0 && (em_dtype)dtype != in) {
    st = em_to(t, (em_dtype)dtype, t->storage->device, 0, &src);
    if (st != EM_OK) return st;
    t = src;
  }
  em_red_kind kind = kinds[rop];
  em_red_params p = {reduced_count(t, mask), 0, 0, 0};
  em_tensor *acc = NULL;
  st = new_acc(t, mask, em_red_acc_dtype(kind, t->dtype), em_red_acc_width(kind), &acc);
  if (st == EM_OK) st = kt->reduce->reduce(op, kind, acc, t, &p);
  if (st == EM_OK) st = acc_to_out(acc, t, mask, keepdim, odt, out);
  em_tensor_release(acc);
  em_tensor_release(src);
  return st;
}

/* -- var / std ---------------------------------------------------------------- */

static em_status var_impl(const em_tensor *t, int ndims, const int64_t *dims,
                          double correction, int keepdim, int take_sqrt,
                          em_tensor **out, em_tensor **mean) {
  const char *op = mean ? (take_sqrt ? "std_mean" : "var_mean") : (take_sqrt ? "std" : "var");
  bool mask[EM_MAX_DIMS];
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = reduce_dims(op, t, ndims, dims, mask);
  if (st != EM_OK) return st;
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: std and var only support floating point and complex "
                   "dtypes, got %s", op, em_dtype_name(t->dtype));
  em_tensor *acc;
  st = new_acc(t, mask, EM_FLOAT64, em_red_acc_width(EM_RED_VAR), &acc);
  if (st != EM_OK) return st;
  em_red_params p = {reduced_count(t, mask), 0, correction, take_sqrt};
  st = kt->reduce->reduce(op, EM_RED_VAR, acc, t, &p);
  em_tensor *v = NULL, *m = NULL;
  if (st == EM_OK) {
    st = acc_to_out(acc, t, mask, keepdim, t->dtype, &v);
    if (st == EM_OK && mean) {
      acc->offset = 1;  /* element 1 of each triple: the mean */
      st = acc_to_out(acc, t, mask, keepdim, t->dtype, &m);
    }
  }
  em_tensor_release(acc);
  if (st != EM_OK) {
    em_tensor_release(v);
    return st;
  }
  *out = v;
  if (mean) *mean = m;
  return EM_OK;
}

static em_status var_nograd(const em_tensor *t, int ndims, const int64_t *dims,
                 double correction, int keepdim, int take_sqrt, em_tensor **out) {
  return var_impl(t, ndims, dims, correction, keepdim, take_sqrt, out, NULL);
}

static em_status var_mean_nograd(const em_tensor *t, int ndims, const int64_t *dims,
                      double correction, int keepdim, int take_sqrt,
                      em_tensor **var, em_tensor **mean) {
  return var_impl(t, ndims, dims, correction, keepdim, take_sqrt, var, mean);
}

/* -- norm -------------------------------------------------------------------- */

static em_status norm_nograd(const em_tensor *t, double p, int ndims, const int64_t *dims,
                  int keepdim, int dtype, em_tensor **out) {
  bool mask[EM_MAX_DIMS];
  const em_kernels *kt;
  em_status st = em_kernels_check("norm", t->storage->device, &kt);
  if (st == EM_OK) st = reduce_dims("norm", t, ndims, dims, mask);
  if (st != EM_OK) return st;
  em_dtype odt = dtype >= 0 ? (em_dtype)dtype : t->dtype;
  if (em_dtype_kindof(odt) != EM_KIND_FLOAT && dtype >= 0)
    return em_fail(EM_E_TYPE, "norm(): the desired output dtype should be either floating "
                   "point or complex. Got %s instead.", em_dtype_pt_name(odt));
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "norm(): input dtype should be either floating point or "
                   "complex. Got %s instead.", em_dtype_pt_name(t->dtype));
  if (p != p) return em_fail(EM_E_VALUE, "norm: p must not be NaN");
  if (p == -INFINITY || p < 0) {
    st = check_nonempty("norm", t, mask, false);
    if (st != EM_OK) return st;
  }
  em_tensor *acc;
  st = new_acc(t, mask, EM_FLOAT64, 1, &acc);
  if (st != EM_OK) return st;
  em_red_params rp = {reduced_count(t, mask), p, 0, 0};
  st = kt->reduce->reduce("norm", EM_RED_NORM, acc, t, &rp);
  if (st == EM_OK) st = acc_to_out(acc, t, mask, keepdim, odt, out);
  em_tensor_release(acc);
  return st;
}

/* -- logsumexp ----------------------------------------------------------------- */

static em_status logsumexp_nograd(const em_tensor *t, int ndims, const int64_t *dims,
                       int keepdim, em_tensor **out) {
  bool mask[EM_MAX_DIMS];
  const em_kernels *kt;
  em_status st = em_kernels_check("logsumexp", t->storage->device, &kt);
  if (st == EM_OK) st = reduce_dims("logsumexp", t, ndims, dims, mask);
  if (st != EM_OK) return st;
  /* integers give the default float (PyTorch 1.13 gives float32) */
  em_dtype odt = em_dtype_kindof(t->dtype) == EM_KIND_FLOAT ? t->dtype : EM_FLOAT32;
  em_tensor *shift = NULL, *acc = NULL;
  st = new_acc(t, mask, EM_FLOAT64, 1, &shift);
  if (st == EM_OK) st = new_acc(t, mask, EM_FLOAT64, 1, &acc);
  if (st == EM_OK) st = kt->reduce->logsumexp("logsumexp", acc, shift, t);
  if (st == EM_OK) st = acc_to_out(acc, t, mask, keepdim, odt, out);
  em_tensor_release(shift);
  em_tensor_release(acc);
  return st;
}

/* -- max / min along a dim -------------------------------------------------------- */

/* Sizes of t with the axis set to 1 (keepdim) or removed. */
static int lane_out_shape(const em_tensor *t, int axis, bool keepdim, int64_t *sizes) {
  bool mask[EM_MAX_DIMS] = {false};
  if (t->ndim > 0) mask[axis] = true;
  return out_shape(t, mask, keepdim, sizes);
}

/* Drops the size-1 axis of a keepdim result (a view of the same storage). */
static em_status squeeze_axis(em_tensor **t, int axis) {
  em_tensor *x = *t;
  if (x->ndim == 0) return EM_OK;
  int64_t sz[EM_MAX_DIMS], str[EM_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < x->ndim; i++)
    if (i != axis) { sz[n] = x->sizes[i]; str[n] = x->strides[i]; n++; }
  em_tensor *v;
  em_status st = em_as_strided(x, n, sz, str, x->offset, &v);
  if (st != EM_OK) return st;
  em_tensor_release(x);
  *t = v;
  return EM_OK;
}

static em_status max_dim_nograd(const em_tensor *t, int64_t dim, int keepdim, int is_min,
                     em_tensor **values, em_tensor **indices) {
  const char *op = is_min ? "min" : "max";
  if (!values) op = is_min ? "argmin" : "argmax";
  int axis;
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = em_wrap_dim(op, dim, t->ndim, &axis);
  if (st != EM_OK) return st;
  bool mask[EM_MAX_DIMS] = {false};
  mask[axis] = t->ndim > 0;
  st = check_nonempty(op, t, mask, false);
  if (st != EM_OK) return st;
  int64_t sizes[EM_MAX_DIMS];
  int n = lane_out_shape(t, axis, true, sizes);
  em_device dev = t->storage->device;
  em_tensor *v = NULL, *ix = NULL;
  if (values) st = em_empty(n, sizes, t->dtype, dev, &v);
  if (st == EM_OK) st = em_empty(n, sizes, EM_INT64, dev, &ix);
  /* argmax/argmin alone still need somewhere to put the values: a scratch */
  em_tensor *vals = v;
  if (st == EM_OK && !vals) st = em_empty(n, sizes, t->dtype, dev, &vals);
  if (st == EM_OK) st = kt->reduce->max_dim(op, vals, ix, t, axis, is_min);
  if (!v) em_tensor_release(vals);
  if (st == EM_OK && !keepdim) {
    if (v) st = squeeze_axis(&v, axis);
    if (st == EM_OK) st = squeeze_axis(&ix, axis);
  }
  if (st != EM_OK) {
    em_tensor_release(v);
    em_tensor_release(ix);
    return st;
  }
  if (values) *values = v;
  *indices = ix;
  return EM_OK;
}

em_status em_argmax(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int is_min, em_tensor **out) {
  if (has_dim) return em_max_dim(t, dim, keepdim, is_min, NULL, out);
  const char *op = is_min ? "argmin" : "argmax";
  const em_kernels *kt;
  em_status st = em_kernels_check(op, t->storage->device, &kt);
  if (st == EM_OK) st = check_nonempty(op, t, NULL, true);
  if (st != EM_OK) return st;
  /* over the flattened tensor: a contiguous 1-d view */
  em_tensor *c;
  st = em_contiguous(t, &c);
  if (st != EM_OK) return st;
  em_tensor flat;
  int64_t numel = em_tensor_numel(c), one = 1;
  em_stack_header(&flat, c, 1, &numel, &one, c->offset);
  em_tensor *ix = NULL;
  st = em_max_dim(&flat, 1, 0, is_min, NULL, &ix);
  em_tensor_release(c);
  if (st != EM_OK) return st;
  if (keepdim && t->ndim > 0) {
    int64_t ones[EM_MAX_DIMS], zs[EM_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) { ones[i] = 1; zs[i] = 0; }
    em_tensor *v;
    st = em_as_strided(ix, t->ndim, ones, zs, ix->offset, &v);
    em_tensor_release(ix);
    if (st != EM_OK) return st;
    ix = v;
  }
  *out = ix;
  return EM_OK;
}

/* -- Autograd recording ---------------------------------------------------------
** Each entry point runs its kernel with grad mode paused and records the node
** (formulas in autograd/formulas.c). */

static em_ag_params reduce_params(int op, int ndims, const int64_t *dims, int keepdim) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.nlist = ndims > 0 && dims ? ndims : 0;
  for (int i = 0; i < p.nlist && i < EM_MAX_DIMS; i++) p.list[i] = dims[i];
  p.i[0] = keepdim;
  return p;
}

em_status em_reduce(em_reduce_op rop, const em_tensor *t, int ndims,
                    const int64_t *dims, int keepdim, int dtype, em_tensor **out) {
  static const char *const names[] = {"SumBackward1", "ProdBackward1", "MeanBackward1",
                                      "AmaxBackward0", "AminBackward0", NULL, NULL,
                                      "NansumBackward0", "NanmeanBackward0", NULL};
  em_ag_params p = reduce_params(rop, ndims, dims, keepdim);
  static const char *const all_names[] = {"SumBackward0", "ProdBackward0", "MeanBackward0"};
  if ((unsigned)rop <= EM_REDUCE_COUNT_NONZERO) p.name = names[rop];
  if (rop <= EM_REDUCE_MEAN && p.nlist == 0 && !keepdim) p.name = all_names[rop];
  if (rop == EM_REDUCE_PROD || rop == EM_REDUCE_NANSUM || rop == EM_REDUCE_NANMEAN)
    p.save_in = 1;
  if (rop == EM_REDUCE_AMAX || rop == EM_REDUCE_AMIN) p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  if (dtype < 0 && (rop == EM_REDUCE_PROD || rop == EM_REDUCE_SUM))
    EM_AUTOCAST(rop == EM_REDUCE_PROD ? EM_AC_PROD : EM_AC_REDUCE, 1, in,
                em_reduce(rop, in[0], ndims, dims, keepdim, dtype, out));
  EM_AG_CALL(EM_AG_REDUCE, 1, in, out, &p,
             reduce_nograd(rop, t, ndims, dims, keepdim, dtype, out));
}

em_status em_var(const em_tensor *t, int ndims, const int64_t *dims,
                 double correction, int keepdim, int take_sqrt, em_tensor **out) {
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.name = take_sqrt ? "StdBackward0" : "VarBackward0";
  p.d[0] = correction;
  p.i[1] = take_sqrt;
  p.save_in = 1;
  p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_VAR, 1, in, out, &p,
             var_nograd(t, ndims, dims, correction, keepdim, take_sqrt, out));
}

em_status em_var_mean(const em_tensor *t, int ndims, const int64_t *dims,
                      double correction, int keepdim, int take_sqrt,
                      em_tensor **var, em_tensor **mean) {
  int on = em_ag_pause();
  em_status st = var_mean_nograd(t, ndims, dims, correction, keepdim, take_sqrt, var, mean);
  em_ag_resume(on);
  if (st != EM_OK || !on || !t->requires_grad) return st;
  const em_tensor *in[1] = {t};
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.name = take_sqrt ? "StdMeanBackward0" : "VarMeanBackward0";
  p.d[0] = correction;
  p.i[1] = take_sqrt;
  p.save_in = p.save_out = 1;
  st = em_ag_record(EM_AG_VAR, 1, in, 1, var, &p);
  if (st == EM_OK && mean) {
    em_ag_params q = reduce_params(EM_REDUCE_MEAN, ndims, dims, keepdim);
    q.name = p.name;
    st = em_ag_record(EM_AG_REDUCE, 1, in, 1, mean, &q);
  }
  if (st != EM_OK) {
    em_tensor_release(*var);
    *var = NULL;
    if (mean) {
      em_tensor_release(*mean);
      *mean = NULL;
    }
  }
  return st;
}

em_status em_norm(const em_tensor *t, double p_, int ndims, const int64_t *dims,
                  int keepdim, int dtype, em_tensor **out) {
  /* a wider floating dtype converts the input first (torch.norm(x, p, dim,
  ** dtype=torch.float64) of float32 x sums float64 squares), as does any
  ** floating dtype of integer or bool input (torch.norm(int_x, dtype=f));
  ** a narrower one only rounds the result */
  em_dtype_kind ik = em_dtype_kindof(t->dtype);
  if (dtype >= 0 && (em_dtype)dtype != t->dtype &&
      em_dtype_kindof((em_dtype)dtype) == EM_KIND_FLOAT &&
      (ik == EM_KIND_INT || ik == EM_KIND_BOOL ||
       (ik == EM_KIND_FLOAT && em_promote_types(t->dtype, (em_dtype)dtype) == (em_dtype)dtype))) {
    em_tensor *c;
    em_status st = em_to(t, (em_dtype)dtype, t->storage->device, 0, &c);
    if (st != EM_OK) return st;
    st = em_norm(c, p_, ndims, dims, keepdim, -1, out);
    em_tensor_release(c);
    return st;
  }
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.name = "NormBackward1";
  p.d[0] = p_;
  p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_NORM, 1, in, out, &p, norm_nograd(t, p_, ndims, dims, keepdim, dtype, out));
}

em_status em_logsumexp(const em_tensor *t, int ndims, const int64_t *dims,
                       int keepdim, em_tensor **out) {
  em_ag_params p = reduce_params(0, ndims, dims, keepdim);
  p.save_in = p.save_out = 1;
  const em_tensor *in[1] = {t};
  EM_AG_CALL(EM_AG_LOGSUMEXP, 1, in, out, &p,
             logsumexp_nograd(t, ndims, dims, keepdim, out));
}

em_status em_max_dim(const em_tensor *t, int64_t dim, int keepdim, int is_min,
                     em_tensor **values, em_tensor **indices) {
  int on = em_ag_pause();
  em_status st = max_dim_nograd(t, dim, keepdim, is_min, values, indices);
  em_ag_resume(on);
  if (st == EM_OK && on && values && t->requires_grad) {
    st = em_ag_record_indexed(is_min ? "MinBackward0" : "MaxBackward0", t, dim, keepdim,
                              *indices, *values);
    if (st != EM_OK) {
      em_tensor_release(*values);
      em_tensor_release(*indices);
      *values = *indices = NULL;
    }
  }
  return st;
}

