/*
** creation.c -- new tensors: empty, zeros, full, empty_like; ranges and the
** identity: arange, linspace, logspace, eye.
** Guarantees: range values are PyTorch's (half-open arange of
** ceil((end - start) / step) elements; linspace's symmetric formula); the
** device's kernels (core/kern_creation.h) compute each element from its own
** index and round it to the dtype once. Outputs are fresh contiguous
** tensors on the device asked for.
*/
#include "core/kern_creation.h"
#include "core/kernels.h"

#include <math.h>
#include <string.h>

/* -- empty / zeros / full ----------------------------------------------------
** Fresh contiguous tensors on dev. With the deterministic flag set, empty
** fills its tensor with NaN (floats) or the dtype's largest value, as
** PyTorch's fill_uninitialized_memory does, so reading it shows. */

static atomic_int deterministic;
void em_set_deterministic(int on) { atomic_store(&deterministic, on != 0); }
int em_get_deterministic(void) { return atomic_load(&deterministic); }

/* strides NULL: contiguous; else a dense, non-overlapping layout of sizes */
static em_status empty_strided_unfilled(const char *op, int ndim, const int64_t *sizes,
                                        const int64_t *strides, em_dtype dt, em_device dev,
                                        em_tensor **out) {
  int64_t numel, nbytes;
  char buf[EM_SHAPE_BUF];
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "%s: invalid dtype %d", op, (int)dt);
  em_status st = em_numel_checked(op, ndim, sizes, &numel);
  if (st != EM_OK) return st;
  if (em_mul_overflow_i64(numel, (int64_t)em_dtype_size(dt), &nbytes))
    return em_fail(EM_E_VALUE, "%s: size %s is too large (the byte count overflows int64)",
                   op, em_fmt_shape(buf, sizeof buf, ndim, sizes));
  em_storage *s;
  st = em_storage_new((size_t)nbytes, dev, &s);
  if (st == EM_E_NOMEM)
    return em_fail(EM_E_NOMEM, "%s: out of memory: tried to allocate %lld bytes for a %s tensor of size %s",
                   op, (long long)nbytes, em_dtype_name(dt),
                   em_fmt_shape(buf, sizeof buf, ndim, sizes));
  if (st != EM_OK) return st;
  int64_t cstrides[EM_MAX_DIMS];
  if (!strides) {
    em_contiguous_strides(ndim, sizes, cstrides);
    strides = cstrides;
  }
  st = em_tensor_alloc(s, 0, ndim, sizes, strides, dt, out);
  em_storage_release(s);
  return st;
}

static em_status empty_unfilled(const char *op, int ndim, const int64_t *sizes,
                                em_dtype dt, em_device dev, em_tensor **out) {
  return empty_strided_unfilled(op, ndim, sizes, NULL, dt, dev, out);
}

static em_scalar scalar_max(em_dtype dt) {
  em_scalar v = {EM_SCALAR_INT, 0, 0};
  switch (dt) {
    case EM_BOOL: v.i = 1; break;
    case EM_UINT8: v.i = UINT8_MAX; break;
    case EM_INT8: v.i = INT8_MAX; break;
    case EM_INT16: v.i = INT16_MAX; break;
    case EM_INT32: v.i = INT32_MAX; break;
    case EM_INT64: v.i = INT64_MAX; break;
    default: v.kind = EM_SCALAR_FLOAT; v.f = NAN; break;
  }
  return v;
}

void em_fill_uninitialized(em_tensor *t) {
  if (em_get_deterministic()) em_fill_(t, scalar_max(t->dtype));
}

em_status em_empty(int ndim, const int64_t *sizes, em_dtype dt, em_device dev,
                   em_tensor **out) {
  em_tensor *t;
  em_status st = empty_unfilled("empty", ndim, sizes, dt, dev, &t);
  if (st != EM_OK) return st;
  if (em_get_deterministic()) em_fill_(t, scalar_max(dt));
  *out = t;
  return EM_OK;
}

em_status em_zeros(int ndim, const int64_t *sizes, em_dtype dt, em_device dev,
                   em_tensor **out) {
  em_tensor *t;
  em_status st = empty_unfilled("zeros", ndim, sizes, dt, dev, &t);
  if (st != EM_OK) return st;
  em_kernels_for(dev)->creation->zero(t);
  *out = t;
  return EM_OK;
}

em_status em_full(int ndim, const int64_t *sizes, em_scalar value, em_dtype dt,
                  em_device dev, em_tensor **out) {
  em_tensor *t;
  em_status st = empty_unfilled("full", ndim, sizes, dt, dev, &t);
  if (st != EM_OK) return st;
  em_fill_(t, value);
  *out = t;
  return EM_OK;
}

/* PyTorch's infer_dense_strides: dims sorted by stride, innermost first,
** by a stable insertion sort in which a 0 stride compares as ambiguous
** (that dim keeps its place) and equal strides put the smaller size
** inside; then dense strides in that order. */
static int dense_order_cmp(const int64_t *sizes, const int64_t *strides, int d0, int d1) {
  int64_t s0 = strides[d0], s1 = strides[d1];
  if (s0 == 0 || s1 == 0) return 0;
  if (s0 < s1) return -1;
  if (s0 > s1) return 1;
  return sizes[d0] > sizes[d1] ? 1 : 0;
}

static void infer_dense_strides(int ndim, const int64_t *sizes, const int64_t *strides,
                                int64_t *out) {
  int perm[EM_MAX_DIMS];
  for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
  for (int i = 1; i < ndim; i++) {
    int dim1 = i;
    for (int j = 1; j <= i; j++) {
      int dim0 = i - j;
      int c = dense_order_cmp(sizes, strides, perm[dim0], perm[dim1]);
      if (c > 0) {
        int x = perm[dim0];
        perm[dim0] = perm[dim1];
        perm[dim1] = x;
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  int64_t acc = 1;
  for (int i = 0; i < ndim; i++) {
    out[perm[i]] = acc;
    acc *= sizes[perm[i]] > 1 ? sizes[perm[i]] : 1;
  }
}

/* PyTorch's preserve_format: t's strides when t is dense and
** non-overlapping (exactly, also a contiguous t's strides of size-1 dims:
** a clone of a [3, 1, 4] tensor transposed to [1, 3, 4], strides [4, 4, 1],
** keeps them), else infer_dense_strides of t's. */
static em_status empty_like_layout(const char *op, const em_tensor *t, em_dtype dt,
                                   em_device dev, int contiguous, em_tensor **out) {
  if (contiguous || t->ndim == 0)
    return empty_strided_unfilled(op, t->ndim, t->sizes, NULL, dt, dev, out);
  int64_t strides[EM_MAX_DIMS];
  if (em_tensor_is_non_overlapping_and_dense(t)) {
    memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
  } else {
    infer_dense_strides(t->ndim, t->sizes, t->strides, strides);
  }
  return empty_strided_unfilled(op, t->ndim, t->sizes, strides, dt, dev, out);
}

em_status em_empty_like(const em_tensor *t, int dt, em_tensor **out) {
  return em_empty_like_on(t, dt < 0 ? t->dtype : (em_dtype)dt, t->storage->device, 0, out);
}

em_status em_empty_like_on(const em_tensor *t, em_dtype dt, em_device dev, int contiguous,
                           em_tensor **out) {
  em_tensor *r;
  em_status st = empty_like_layout("empty_like", t, dt, dev, contiguous, &r);
  if (st != EM_OK) return st;
  if (em_get_deterministic()) em_fill_(r, scalar_max(dt));
  *out = r;
  return EM_OK;
}

/* -- The range fills --------------------------------------------------------
** The op sizes and allocates the result and computes the range's
** parameters; the device's kernel writes the elements (core/kern_creation.h). */

/* Fills the fresh contiguous tensor t with the range r; on failure t is
** released. */
static em_status fill_or_release(const char *op, em_tensor *t, int linspace,
                                 const em_range *r, em_tensor **out) {
  em_status st = EM_OK;
  if (em_tensor_numel(t) > 0) {
    em_iter it;
    const em_tensor *ops[1] = {t};
    st = em_iter_build(&it, op, 1, ops, t->ndim, t->sizes, false);
    if (st == EM_OK) {
      const em_creation_kernels *k = em_kernels_for(t->storage->device)->creation;
      (linspace ? k->linspace : k->arange)(&it, t->dtype, r);
    }
  }
  if (st != EM_OK) {
    em_tensor_release(t);
    return st;
  }
  *out = t;
  return EM_OK;
}

/* -- arange ---------------------------------------------------------------- */

static double scalar_f64(em_scalar s) {
  return s.kind == EM_SCALAR_FLOAT ? s.f : (double)s.i;
}

/* A scalar as int64 the way PyTorch's Scalar::to<int64_t> reads it:
** floats truncate toward zero; values outside int64 are an error. */
static em_status scalar_i64(const char *op, const char *what, em_scalar s, int64_t *out) {
  if (s.kind != EM_SCALAR_FLOAT) { *out = s.i; return EM_OK; }
  if (!(s.f > -9223372036854775809.0 && s.f < 9223372036854775808.0))
    return em_fail(EM_E_VALUE, "%s: %s %g cannot be converted to int64 without overflow",
                   op, what, s.f);
  *out = (int64_t)s.f;
  return EM_OK;
}

em_status em_arange(em_scalar start, em_scalar end, em_scalar step, em_dtype dt,
                    em_device dev, em_tensor **out) {
  const char *op = "arange";
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "arange: invalid dtype %d", (int)dt);
  if (dt == EM_BOOL)
    return em_fail(EM_E_TYPE, "arange: not implemented for dtype ember.bool");
  double fs = scalar_f64(start), fe = scalar_f64(end), fst = scalar_f64(step);
  if (!isfinite(fs) || !isfinite(fe))
    return em_fail(EM_E_VALUE, "arange: unsupported range: %g -> %g", fs, fe);
  em_range c = {0};
  double size_d;
  if (em_dtype_kindof(dt) == EM_KIND_INT) {
    /* integer dtypes compute in int64 (PyTorch's accscalar type) */
    int64_t xs = 0, xe = 0, xst = 0;
    em_status st;
    if ((st = scalar_i64(op, "start", start, &xs)) != EM_OK ||
        (st = scalar_i64(op, "end", end, &xe)) != EM_OK ||
        (st = scalar_i64(op, "step", step, &xst)) != EM_OK)
      return st;
    if (xst == 0) return em_fail(EM_E_VALUE, "arange: step must be nonzero");
    if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
      return em_fail(EM_E_VALUE,
                     "arange: upper bound and lower bound inconsistent with step "
                     "sign (start %lld, end %lld, step %lld)",
                     (long long)xs, (long long)xe, (long long)xst);
    if (dt == EM_INT64) {
      /* exact: ceil((end - start) / step) in integers */
      __int128 span = (__int128)xe - xs, q = span / xst;
      if (q * xst != span) q++;
      size_d = (double)q;
    } else {
      size_d = ceil((fe - fs) / fst);
    }
    c.istart = xs;
    c.istep = xst;
  } else {
    if (!(fst > 0 || fst < 0)) return em_fail(EM_E_VALUE, "arange: step must be nonzero");
    if (!((fst > 0 && fe >= fs) || (fst < 0 && fe <= fs)))
      return em_fail(EM_E_VALUE,
                     "arange: upper bound and lower bound inconsistent with step "
                     "sign (start %g, end %g, step %g)", fs, fe, fst);
    size_d = ceil((fe - fs) / fst);
    c.fstart = fs;
    c.fstep = fst;
  }
  if (!(size_d >= 0 && size_d < 9223372036854775807.0))
    return em_fail(EM_E_VALUE, "arange: invalid size %g, possible overflow?", size_d);
  int64_t n = (int64_t)size_d;
  em_tensor *t;
  em_status st = em_empty(1, &n, dt, dev, &t);
  if (st != EM_OK) return st;
  return fill_or_release(op, t, 0, &c, out);
}

/* -- linspace / logspace ----------------------------------------------------- */

static em_status lin_common(const char *op, double start, double end, int64_t steps,
                            double base, int log, em_dtype dt, em_device dev,
                            em_tensor **out) {
  if ((unsigned)dt >= EM_NUM_DTYPES)
    return em_fail(EM_E_TYPE, "%s: invalid dtype %d", op, (int)dt);
  if (steps < 0)
    return em_fail(EM_E_VALUE, "%s: number of steps must be non-negative, got %lld",
                   op, (long long)steps);
  /* an integer dtype takes the endpoints as integers first (PyTorch
  ** converts start and end to the dtype: truncation) */
  if (em_dtype_kindof(dt) == EM_KIND_INT) {
    start = trunc(start);
    end = trunc(end);
  }
  em_range c = {0};
  c.lstart = start;
  c.lend = end;
  c.steps = steps;
  c.halfway = steps / 2;
  c.lstep = steps > 1 ? (end - start) / (double)(steps - 1) : 0.0;
  c.lbase = base;
  c.log = log;
  if (steps == 1) c.halfway = 1; /* the one element is start */
  em_tensor *t;
  em_status st = em_empty(1, &steps, dt, dev, &t);
  if (st != EM_OK) return st;
  return fill_or_release(op, t, 1, &c, out);
}

em_status em_linspace(double start, double end, int64_t steps, em_dtype dt,
                      em_device dev, em_tensor **out) {
  return lin_common("linspace", start, end, steps, 0, 0, dt, dev, out);
}

em_status em_logspace(double start, double end, int64_t steps, double base,
                      em_dtype dt, em_device dev, em_tensor **out) {
  return lin_common("logspace", start, end, steps, base, 1, dt, dev, out);
}

/* -- eye -------------------------------------------------------------------- */

em_status em_eye(int64_t n, int64_t m, em_dtype dt, em_device dev, em_tensor **out) {
  if (n < 0)
    return em_fail(EM_E_VALUE, "eye: n must be greater or equal to 0, got %lld",
                   (long long)n);
  if (m < 0) m = n;
  int64_t sizes[2] = {n, m};
  em_tensor *t;
  em_status st = em_zeros(2, sizes, dt, dev, &t);
  if (st != EM_OK) return st;
  int64_t k = n < m ? n : m;
  if (k > 0) {
    /* the diagonal is the view of size min(n, m) and stride m + 1 */
    int64_t stride = m + 1;
    em_tensor *diag;
    em_scalar one = {EM_SCALAR_INT, 1, 1.0};
    st = em_as_strided(t, 1, &k, &stride, 0, &diag);
    if (st == EM_OK) {
      st = em_fill_(diag, one);
      em_tensor_release(diag);
    }
    if (st != EM_OK) {
      em_tensor_release(t);
      return st;
    }
  }
  *out = t;
  return EM_OK;
}
