/*
** ops/complex.c -- the complex dtypes' ops: the elementwise ops that take
** complex64/complex128 (em_elementwise sends them here), the views between
** complex and real (view_as_real, view_as_complex, real, imag), and
** complex(real, imag), conj, angle (docs/dtypes.md, "Complex").
**
** What holds:
** - Types as PyTorch: the result type of the operands (core/promote.c), abs
**   and angle give the value dtype (float32 for complex64), eq/ne give bool;
**   every other elementwise op on a complex operand is refused naming the op
**   and the dtype (EM_MSG_DTYPE_NOT_IMPLEMENTED), ordering comparisons too.
** - conj materialises (PyTorch's lazy conjugate bit is not kept).
** - Autograd (docs/autograd.md, "Complex"): the elementwise ops record
**   through em_elementwise (formulas.c conjugates what they save); the ops
**   here record kind COMPLEX nodes (em_cx_record).
*/
#include <math.h>
#include <string.h>

#include "core/kern_cplx.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"
#include "ops/complex.h"

static int is_complex(em_dtype dt) { return em_dtype_kindof(dt) == EM_KIND_COMPLEX; }

/* The value dtype of a complex dtype (float32 for complex64). */
static em_dtype value_dtype(em_dtype dt) {
  return dt == EM_COMPLEX128 ? EM_FLOAT64 : EM_FLOAT32;
}

/* The complex dtype holding values of dtype dt (float64 -> complex128; any
** other real dtype -> complex64). */
em_dtype em_complex_of(em_dtype dt) {
  if (is_complex(dt)) return dt;
  return dt == EM_FLOAT64 ? EM_COMPLEX128 : EM_COMPLEX64;
}

/* Records the node (kind COMPLEX, sub-op op) of a complex op whose result
** *out was computed with grad mode paused (on: the mode before); on failure
** *out is released. */
em_status em_cx_record(int on, int op, const char *name, int nin, const em_tensor *const *in,
                       em_ag_params *p, em_tensor **out) {
  if (!on || !em_ag_any(nin, in)) return EM_OK;
  em_ag_params q;
  if (!p) {
    memset(&q, 0, sizeof q);
    p = &q;
  }
  p->op = op;
  p->name = name;
  /* the real view and its complex tensor share the storage; autograd's view
  ** machinery (CopySlices, stale-view refresh) works in one dtype's units,
  ** so in-place writes there are refused from now on (autograd.c) */
  if (op == EM_AG_CX_AS_REAL || op == EM_AG_CX_AS_COMPLEX)
    atomic_store(&(*out)->storage->ag_reinterpreted, 1);
  em_status st = em_ag_record(EM_AG_COMPLEX, nin, in, 1, out, p);
  if (st != EM_OK) {
    em_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* -- Elementwise ------------------------------------------------------------ */

static int cx_op_of(em_ew_op op, em_cx_op *cx) {
  switch (op) {
    case EM_OP_ADD: *cx = EM_CX_ADD; return 1;
    case EM_OP_SUB: *cx = EM_CX_SUB; return 1;
    case EM_OP_MUL: *cx = EM_CX_MUL; return 1;
    case EM_OP_DIV: *cx = EM_CX_DIV; return 1;
    case EM_OP_POW: *cx = EM_CX_POW; return 1;
    case EM_OP_EQ: *cx = EM_CX_EQ; return 1;
    case EM_OP_NE: *cx = EM_CX_NE; return 1;
    case EM_OP_NEG: *cx = EM_CX_NEG; return 1;
    case EM_OP_ABS: *cx = EM_CX_ABS; return 1;
    case EM_OP_SQRT: *cx = EM_CX_SQRT; return 1;
    case EM_OP_RECIPROCAL: *cx = EM_CX_RECIPROCAL; return 1;
    case EM_OP_EXP: *cx = EM_CX_EXP; return 1;
    case EM_OP_LOG: *cx = EM_CX_LOG; return 1;
    case EM_OP_SIN: *cx = EM_CX_SIN; return 1;
    case EM_OP_COS: *cx = EM_CX_COS; return 1;
    case EM_OP_TANH: *cx = EM_CX_TANH; return 1;
    case EM_OP_SQUARE: *cx = EM_CX_SQUARE; return 1;
    case EM_OP_ASIN: *cx = EM_CX_ASIN; return 1;
    case EM_OP_ACOS: *cx = EM_CX_ACOS; return 1;
    case EM_OP_ATAN: *cx = EM_CX_ATAN; return 1;
    case EM_OP_ASINH: *cx = EM_CX_ASINH; return 1;
    case EM_OP_ACOSH: *cx = EM_CX_ACOSH; return 1;
    case EM_OP_ATANH: *cx = EM_CX_ATANH; return 1;
    default: return 0;
  }
}

/* Runs kernel op over the operands (already of dtype dt, broadcastable),
** into a fresh contiguous result of dtype outdt. */
static em_status cx_run(const char *name, em_cx_op op, int n, const em_tensor *const *in,
                        em_dtype dt, em_dtype outdt, double alpha, em_tensor **result) {
  int ndim;
  int64_t shape[EM_MAX_DIMS];
  em_status st = em_broadcast_shapes(name, n, in, &ndim, shape);
  if (st != EM_OK) return st;
  em_device dev = in[0]->storage->device;
  const em_kernels *kt;
  st = em_kernels_check(name, dev, &kt);
  if (st != EM_OK) return st;
  em_tensor *r = NULL;
  st = em_empty(ndim, shape, outdt, dev, &r);
  if (st != EM_OK) return st;
  const em_tensor *ops[3] = {r, in[0], n > 1 ? in[1] : NULL};
  em_iter it;
  int was = em_iter_allow_complex(1);
  st = em_iter_build(&it, name, n + 1, ops, ndim, shape, false);
  em_iter_allow_complex(was);
  if (st != EM_OK) {
    em_tensor_release(r);
    return st;
  }
  kt->cplx->ew(op, dt, &it, alpha);
  *result = r;
  return EM_OK;
}

/* z ** e for the real exponents PyTorch computes exactly rather than
** through cpow (pow_tensor_scalar_kernel): 2 z*z, 3 z*z*z, -2 1/(z*z),
** 0.5 sqrt, -0.5 1/sqrt, -1 1/z; *r stays NULL for any other exponent. */
static em_status pow_scalar(const char *name, const em_tensor *z, em_scalar e, em_dtype dt,
                            em_tensor **r) {
  double v = e.kind == EM_SCALAR_FLOAT ? e.f : (double)e.i;
  em_cx_op first, second = EM_CX_ADD; /* ADD: no second step */
  if (v == 2 || v == 3 || v == -2) first = EM_CX_SQUARE;
  else if (v == 0.5 || v == -0.5) first = EM_CX_SQRT;
  else if (v == -1) first = EM_CX_RECIPROCAL;
  else return EM_OK;
  if (v == 3) second = EM_CX_MUL;
  else if (v == -2 || v == -0.5) second = EM_CX_RECIPROCAL;
  const em_tensor *in[2] = {z, NULL};
  em_tensor *t = NULL;
  em_status st = cx_run(name, first, 1, in, dt, dt, 1.0, &t);
  if (st != EM_OK || second == EM_CX_ADD) {
    *r = t;
    return st;
  }
  in[0] = t;
  in[1] = z;
  st = cx_run(name, second, second == EM_CX_MUL ? 2 : 1, in, dt, dt, 1.0, r);
  em_tensor_release(t);
  return st;
}

em_status em_complex_ew(em_ew_op op, const char *name, int n, const em_operand *ops,
                        em_dtype rt, em_scalar alpha, int has_rounding, em_tensor *out,
                        em_tensor **result) {
  em_cx_op cx;
  if (!cx_op_of(op, &cx) || (op == EM_OP_DIV && has_rounding))
    return em_fail(EM_E_TYPE, EM_MSG_DTYPE_NOT_IMPLEMENTED, name, em_dtype_name(rt));
  const em_tensor *ts[3] = {NULL, NULL, NULL};
  em_device dev = em_cpu();
  for (int i = 0; i < n; i++) {
    ts[i] = ops[i].tensor;
    if (ts[i]) dev = ts[i]->storage->device;
  }
  /* abs_ and angle_ of a complex tensor would write a real result into
  ** it: refused, as PyTorch refuses them */
  if ((cx == EM_CX_ABS || cx == EM_CX_ANGLE) && out && n >= 1 && out == ops[0].tensor &&
      em_dtype_kindof(out->dtype) == EM_KIND_COMPLEX)
    return em_fail(EM_E_TYPE, "%s: In-place %s is not supported for complex tensors.", name,
                   cx == EM_CX_ABS ? "abs" : "angle");
  em_status st = EM_OK;
  em_dtype outdt = cx == EM_CX_ABS ? value_dtype(rt)
                   : (cx == EM_CX_EQ || cx == EM_CX_NE) ? EM_BOOL : rt;
  em_tensor *owned[3] = {NULL, NULL, NULL};
  const em_tensor *in[3];
  for (int i = 0; i < n && st == EM_OK; i++) {
    if (!ops[i].tensor) st = em_full(0, NULL, ops[i].scalar, rt, dev, &owned[i]);
    else if (ops[i].tensor->dtype != rt) st = em_to(ops[i].tensor, rt, dev, 0, &owned[i]);
    in[i] = owned[i] ? owned[i] : ops[i].tensor;
  }
  double al = alpha.kind == EM_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  em_tensor *r = NULL;
  if (st == EM_OK && cx == EM_CX_POW && n == 2 && !ops[1].tensor)
    st = pow_scalar(name, in[0], ops[1].scalar, rt, &r);
  if (st == EM_OK && !r) st = cx_run(name, cx, n, in, rt, outdt, al, &r);
  for (int i = 0; i < 3; i++) em_tensor_release(owned[i]);
  if (st != EM_OK) return st;
  if (!out) {
    *result = r;
    return EM_OK;
  }
  /* out= and the in-place forms: the result type must cast to out's dtype
  ** and the shapes match (out is not resized here) */
  if (!em_can_cast(outdt, out->dtype))
    st = em_fail(EM_E_TYPE, "%s: result type %s can't be cast to the desired output type %s",
                 name, em_dtype_pt_name(outdt), em_dtype_pt_name(out->dtype));
  int same = st == EM_OK && out->ndim == r->ndim;
  for (int d = 0; same && d < r->ndim; d++) same = out->sizes[d] == r->sizes[d];
  if (st == EM_OK && !same) {
    char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
    st = em_fail(EM_E_VALUE, "%s: output with shape %s doesn't match the broadcast shape %s",
                 name, em_fmt_shape(b1, sizeof b1, out->ndim, out->sizes),
                 em_fmt_shape(b2, sizeof b2, r->ndim, r->sizes));
  }
  if (st == EM_OK) st = em_copy_(out, r);
  em_tensor_release(r);
  if (st == EM_OK && result) {
    em_tensor_retain(out);
    *result = out;
  }
  return st;
}

/* -- Views between complex and real ------------------------------------------ */

em_status em_view_as_real(const em_tensor *t, em_tensor **out) {
  if (!is_complex(t->dtype))
    return em_fail(EM_E_TYPE, "view_as_real: expected a complex tensor, got %s",
                   em_dtype_name(t->dtype));
  if (t->ndim + 1 > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "view_as_real: a %d-d tensor has no room for the last dim "
                   "(at most %d dims)", t->ndim, EM_MAX_DIMS);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) {
    sizes[d] = t->sizes[d];
    strides[d] = t->strides[d] * 2;
  }
  sizes[t->ndim] = 2;
  strides[t->ndim] = 1;
  int on = em_ag_pause();
  em_status st = em_tensor_new(t->storage, t->offset * 2, t->ndim + 1, sizes, strides,
                               value_dtype(t->dtype), out);
  em_ag_resume(on);
  const em_tensor *in[1] = {t};
  if (st == EM_OK) st = em_cx_record(on, EM_AG_CX_AS_REAL, "ViewAsRealBackward0", 1, in, NULL, out);
  return st;
}

em_status em_view_as_complex(const em_tensor *t, em_tensor **out) {
  if (t->dtype != EM_FLOAT32 && t->dtype != EM_FLOAT64)
    return em_fail(EM_E_TYPE, "view_as_complex: expected a tensor of dtype float32 or "
                   "float64, got %s", em_dtype_name(t->dtype));
  if (t->ndim == 0 || t->sizes[t->ndim - 1] != 2)
    return em_fail(EM_E_VALUE, "view_as_complex: tensor must have a last dimension of size 2");
  if (t->strides[t->ndim - 1] != 1)
    return em_fail(EM_E_VALUE, "view_as_complex: tensor must have a last dimension with "
                   "stride 1");
  for (int d = 0; d < t->ndim - 1; d++)
    if (t->strides[d] % 2 != 0)
      return em_fail(EM_E_VALUE, "view_as_complex: tensor must have a stride divisible by 2 "
                     "for all but the last dimension (dim %d has stride %lld)", d + 1,
                     (long long)t->strides[d]);
  if (t->offset % 2 != 0)
    return em_fail(EM_E_VALUE, "view_as_complex: tensor must have a storage_offset "
                   "divisible by 2, got %lld", (long long)t->offset);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  for (int d = 0; d < t->ndim - 1; d++) {
    sizes[d] = t->sizes[d];
    strides[d] = t->strides[d] / 2;
  }
  int on = em_ag_pause();
  em_status st = em_tensor_new(t->storage, t->offset / 2, t->ndim - 1, sizes, strides,
                               t->dtype == EM_FLOAT64 ? EM_COMPLEX128 : EM_COMPLEX64, out);
  em_ag_resume(on);
  const em_tensor *in[1] = {t};
  if (st == EM_OK)
    st = em_cx_record(on, EM_AG_CX_AS_COMPLEX, "ViewAsComplexBackward0", 1, in, NULL, out);
  return st;
}

/* part 1: real, 2: imag. A real tensor's real part is itself (an alias), its
** imag is refused, as PyTorch. */
em_status em_complex_part(const em_tensor *t, int part, em_tensor **out) {
  if (!is_complex(t->dtype)) {
    if (part == 1) return em_alias(t, out);
    return em_fail(EM_E_TYPE, "imag: imag is not implemented for tensors with non-complex "
                   "dtypes (got %s)", em_dtype_name(t->dtype));
  }
  em_tensor *v = NULL;
  em_status st = em_view_as_real(t, &v);
  if (st == EM_OK) st = em_select(v, -1, part, out);
  em_tensor_release(v);
  return st;
}

/* T.complex(real, imag): both float32 or both float64 (PyTorch requires the
** same floating dtype), broadcast. */
em_status em_complex_new(const em_tensor *re, const em_tensor *im, em_tensor **out) {
  if ((re->dtype != EM_FLOAT32 && re->dtype != EM_FLOAT64) || re->dtype != im->dtype)
    return em_fail(EM_E_TYPE, "complex: expected both inputs to be float32 or float64 "
                   "tensors of one dtype, but got %s for real and %s for imag",
                   em_dtype_name(re->dtype), em_dtype_name(im->dtype));
  const em_tensor *ts[2] = {re, im};
  em_status st = em_same_device_check("complex", re->storage->device, im->storage->device);
  if (st != EM_OK) return st;
  int ndim;
  int64_t shape[EM_MAX_DIMS];
  st = em_broadcast_shapes("complex", 2, ts, &ndim, shape);
  if (st != EM_OK) return st;
  em_tensor *r = NULL, *parts[2] = {NULL, NULL};
  int on = em_ag_pause();
  st = em_empty(ndim, shape, re->dtype == EM_FLOAT64 ? EM_COMPLEX128 : EM_COMPLEX64,
                re->storage->device, &r);
  for (int p = 0; p < 2 && st == EM_OK; p++) {
    st = em_complex_part(r, p + 1, &parts[p]);
    if (st == EM_OK) st = em_copy_(parts[p], ts[p]);
  }
  em_tensor_release(parts[0]);
  em_tensor_release(parts[1]);
  em_ag_resume(on);
  if (st != EM_OK) {
    em_tensor_release(r);
    return st;
  }
  st = em_cx_record(on, EM_AG_CX_NEW, "ComplexBackward0", 2, ts, NULL, &r);
  if (st == EM_OK) *out = r;
  return st;
}

/* conj and angle: conj of a real tensor is itself (an alias, as PyTorch);
** angle of a real tensor is 0 where x >= 0, pi where x < 0 (NaN stays). */
em_status em_conj(const em_tensor *t, em_tensor **out) {
  if (!is_complex(t->dtype)) return em_alias(t, out);
  const em_tensor *in[1] = {t};
  int on = em_ag_pause();
  em_status st = cx_run("conj", EM_CX_CONJ, 1, in, t->dtype, t->dtype, 1.0, out);
  em_ag_resume(on);
  if (st == EM_OK) st = em_cx_record(on, EM_AG_CX_CONJ, "ConjBackward0", 1, in, NULL, out);
  return st;
}

em_status em_angle(const em_tensor *t, em_tensor **out) {
  if (!is_complex(t->dtype))
    return em_fail(EM_E_TYPE, "angle: expected a complex tensor, got %s (for a real x, "
                   "angle is T.where(x < 0, math.pi, 0))", em_dtype_name(t->dtype));
  const em_tensor *in[1] = {t};
  int on = em_ag_pause();
  em_status st = cx_run("angle", EM_CX_ANGLE, 1, in, t->dtype, value_dtype(t->dtype), 1.0, out);
  em_ag_resume(on);
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.save_in = 1;
  if (st == EM_OK) st = em_cx_record(on, EM_AG_CX_ANGLE, "AngleBackward0", 1, in, &p, out);
  return st;
}
