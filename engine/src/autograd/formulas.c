/*
** autograd/formulas.c -- every derivative formula, in one place (ember's
** derivatives.yaml): what each op saves for its backward and how gradients
** of its outputs become gradients of its inputs.
**
** Guarantees:
** - Formulas are written with public engine ops only, so when the backward
**   runs in grad mode (create_graph) it is itself recorded and can be
**   differentiated again.
** - A formula may return a gradient in the broadcast shape or another
**   floating dtype: the engine (autograd.c) sums it to the input's shape
**   and casts it to the input's dtype.
** - Temporaries live in a per-call arena and are released on every path.
*/
#include "autograd/autograd.h"

#include <math.h>
#include <stdlib.h>

/* -- What elementwise ops save ----------------------------------------------- */

enum { IN0 = 1, IN1 = 2, IN2 = 4, ALLIN = 7 };

void em_ag_ew_saves(em_ew_op op, int *save_in, int *save_out) {
  int in = 0, out = 0;
  switch (op) {
    case EM_OP_MUL: case EM_OP_DIV: case EM_OP_REMAINDER: case EM_OP_FMOD:
    case EM_OP_ATAN2: case EM_OP_MAXIMUM: case EM_OP_MINIMUM:
      in = IN0 | IN1; break;
    case EM_OP_POW: in = IN0 | IN1; out = 1; break;
    case EM_OP_SQRT: case EM_OP_RSQRT: case EM_OP_RECIPROCAL: case EM_OP_EXP:
    case EM_OP_EXP2: case EM_OP_EXPM1: case EM_OP_TANH: case EM_OP_SIGMOID:
    case EM_OP_RELU:
      out = 1; break;
    case EM_OP_ABS: case EM_OP_SQUARE: case EM_OP_LOG: case EM_OP_LOG2:
    case EM_OP_LOG10: case EM_OP_LOG1P: case EM_OP_SIN: case EM_OP_COS:
    case EM_OP_TAN: case EM_OP_ASIN: case EM_OP_ACOS: case EM_OP_ATAN:
    case EM_OP_SINH: case EM_OP_COSH: case EM_OP_GELU: case EM_OP_SILU:
    case EM_OP_SOFTPLUS: case EM_OP_ERF: case EM_OP_NAN_TO_NUM:
      in = IN0; break;
    case EM_OP_LERP: case EM_OP_CLAMP: in = ALLIN; break;
    case EM_OP_XLOGY: case EM_OP_XLOG1PY: case EM_OP_LOGADDEXP: case EM_OP_LOGADDEXP2:
    case EM_OP_ZETA: case EM_OP_GAMMAINC: case EM_OP_GAMMAINCC:
      in = IN0 | IN1; break;
    case EM_OP_ERFCX: in = IN0; out = 1; break;
    case EM_OP_HYPOT: case EM_OP_COPYSIGN: in = IN0 | IN1; out = 1; break;
    case EM_OP_ERFINV: case EM_OP_NDTRI: out = 1; break;
    case EM_OP_ERFC: case EM_OP_LGAMMA: case EM_OP_DIGAMMA: case EM_OP_POLYGAMMA:
    case EM_OP_I0: case EM_OP_NDTR: case EM_OP_SINC: case EM_OP_ENTR: case EM_OP_LOGIT:
    case EM_OP_ASINH: case EM_OP_ACOSH: case EM_OP_ATANH:
      in = IN0; break;
    case EM_OP_I0E: case EM_OP_I1: case EM_OP_I1E: case EM_OP_LOG_NDTR:
      in = IN0; out = 1; break;
    default: break;
  }
  *save_in = in;
  *save_out = out;
}

/* The PyTorch name of an elementwise op's node: "AddBackward0". */
const char *em_ag_ew_name(em_ew_op op, int tensor_exponent) {
  static const char *const names[EM_OP_COUNT] = {
      [EM_OP_ADD] = "AddBackward0", [EM_OP_SUB] = "SubBackward0",
      [EM_OP_MUL] = "MulBackward0", [EM_OP_DIV] = "DivBackward0",
      [EM_OP_REMAINDER] = "RemainderBackward0", [EM_OP_FMOD] = "FmodBackward0",
      [EM_OP_POW] = "PowBackward0", [EM_OP_ATAN2] = "Atan2Backward0",
      [EM_OP_MAXIMUM] = "MaximumBackward0", [EM_OP_MINIMUM] = "MinimumBackward0",
      [EM_OP_NEG] = "NegBackward0", [EM_OP_ABS] = "AbsBackward0",
      [EM_OP_SIGN] = "SignBackward0", [EM_OP_SQRT] = "SqrtBackward0",
      [EM_OP_RSQRT] = "RsqrtBackward0", [EM_OP_SQUARE] = "PowBackward0",
      [EM_OP_RECIPROCAL] = "ReciprocalBackward0", [EM_OP_EXP] = "ExpBackward0",
      [EM_OP_EXP2] = "Exp2Backward0", [EM_OP_EXPM1] = "Expm1Backward0",
      [EM_OP_LOG] = "LogBackward0", [EM_OP_LOG2] = "Log2Backward0",
      [EM_OP_LOG10] = "Log10Backward0", [EM_OP_LOG1P] = "Log1PBackward0",
      [EM_OP_SIN] = "SinBackward0", [EM_OP_COS] = "CosBackward0",
      [EM_OP_TAN] = "TanBackward0", [EM_OP_ASIN] = "AsinBackward0",
      [EM_OP_ACOS] = "AcosBackward0", [EM_OP_ATAN] = "AtanBackward0",
      [EM_OP_SINH] = "SinhBackward0", [EM_OP_COSH] = "CoshBackward0",
      [EM_OP_TANH] = "TanhBackward0", [EM_OP_SIGMOID] = "SigmoidBackward0",
      [EM_OP_RELU] = "ReluBackward0", [EM_OP_GELU] = "GeluBackward0",
      [EM_OP_SILU] = "SiluBackward0", [EM_OP_SOFTPLUS] = "SoftplusBackward0",
      [EM_OP_ERF] = "ErfBackward0", [EM_OP_FLOOR] = "FloorBackward0",
      [EM_OP_CEIL] = "CeilBackward0", [EM_OP_ROUND] = "RoundBackward0",
      [EM_OP_TRUNC] = "TruncBackward0", [EM_OP_FRAC] = "FracBackward0",
      [EM_OP_NAN_TO_NUM] = "NanToNumBackward0", [EM_OP_LERP] = "LerpBackward0",
      [EM_OP_CLAMP] = "ClampBackward1",
      [EM_OP_XLOGY] = "XlogyBackward0", [EM_OP_XLOG1PY] = "SpecialXlog1PyBackward0",
      [EM_OP_LOGADDEXP] = "LogaddexpBackward0", [EM_OP_LOGADDEXP2] = "Logaddexp2Backward0",
      [EM_OP_HYPOT] = "HypotBackward0", [EM_OP_COPYSIGN] = "CopysignBackward0",
      [EM_OP_NEXTAFTER] = "NextafterBackward0", [EM_OP_HEAVISIDE] = "HeavisideBackward0",
      [EM_OP_ZETA] = "SpecialZetaBackward0", [EM_OP_ERFC] = "ErfcBackward0",
      [EM_OP_ERFINV] = "ErfinvBackward0", [EM_OP_LGAMMA] = "LgammaBackward0",
      [EM_OP_DIGAMMA] = "DigammaBackward0", [EM_OP_POLYGAMMA] = "PolygammaBackward0",
      [EM_OP_I0] = "I0Backward0", [EM_OP_I0E] = "SpecialI0EBackward0",
      [EM_OP_I1] = "SpecialI1Backward0", [EM_OP_I1E] = "SpecialI1EBackward0",
      [EM_OP_NDTR] = "SpecialNdtrBackward0", [EM_OP_NDTRI] = "SpecialNdtriBackward0",
      [EM_OP_LOG_NDTR] = "SpecialLogNdtrBackward0", [EM_OP_SINC] = "SincBackward0",
      [EM_OP_ENTR] = "SpecialEntrBackward0", [EM_OP_LOGIT] = "LogitBackward0",
      [EM_OP_ASINH] = "AsinhBackward0", [EM_OP_ACOSH] = "AcoshBackward0",
      [EM_OP_ATANH] = "AtanhBackward0",
      [EM_OP_GAMMAINC] = "IgammaBackward0", [EM_OP_GAMMAINCC] = "IgammacBackward0",
      [EM_OP_ERFCX] = "SpecialErfcxBackward0",
  };
  if (op == EM_OP_POW && tensor_exponent) return "PowBackward1";
  return (unsigned)op < EM_OP_COUNT && names[op] ? names[op] : "ElementwiseBackward0";
}

/* -- The arena ------------------------------------------------------------------ */

typedef struct F {
  em_status st;
  em_node *n;
  int conj;  /* saved complex tensors are read conjugated (holomorphic ops) */
  em_tensor **tmp;
  int ntmp, cap;
} F;

/* Takes over *pt (read after st is computed: C leaves argument order open). */
static em_tensor *keep(F *f, em_status st, em_tensor **pt) {
  em_tensor *t = st == EM_OK ? *pt : NULL;
  if (st != EM_OK) {
    if (f->st == EM_OK) f->st = st;
    return NULL;
  }
  if (f->ntmp == f->cap) {
    int cap = f->cap ? f->cap * 2 : 32;
    em_tensor **b = realloc(f->tmp, sizeof *b * (size_t)cap);
    if (!b) {
      em_tensor_release(t);
      f->st = em_fail(EM_E_NOMEM, "backward: out of memory");
      return NULL;
    }
    f->tmp = b;
    f->cap = cap;
  }
  f->tmp[f->ntmp++] = t;
  return t;
}
#define OK (f->st == EM_OK)

static em_operand TS(const em_tensor *t) {
  em_operand o = {t, {EM_SCALAR_INT, 0, 0}};
  return o;
}
static em_operand SC(double v) {
  em_operand o = {NULL, {EM_SCALAR_FLOAT, 0, v}};
  return o;
}

static em_tensor *ew(F *f, em_ew_op op, int n, const em_operand *ops) {
  if (!OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_elementwise(op, n, ops, NULL, NULL, &r), &r);
}
static em_tensor *bino(F *f, em_ew_op op, em_operand a, em_operand b) {
  em_operand ops[2] = {a, b};
  return ew(f, op, 2, ops);
}
/* a op b on tensors (NULL in, NULL out) */
static em_tensor *bin(F *f, em_ew_op op, const em_tensor *a, const em_tensor *b) {
  if (!a || !b) { if (OK) f->st = em_fail(EM_E_RUNTIME, "backward: missing operand in %s", f->n->name); return NULL; }
  return bino(f, op, TS(a), TS(b));
}
static em_tensor *bins(F *f, em_ew_op op, const em_tensor *a, double s) {
  if (!a) return NULL;
  return bino(f, op, TS(a), SC(s));
}
static em_tensor *sbin(F *f, em_ew_op op, double s, const em_tensor *b) {
  if (!b) return NULL;
  return bino(f, op, SC(s), TS(b));
}
static em_tensor *un(F *f, em_ew_op op, const em_tensor *a) {
  if (!a || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_unary(op, a, &r), &r);
}
/* op(a) with options (polygamma's order) */
static em_tensor *unopt(F *f, em_ew_op op, const em_tensor *a, const em_ew_opts *o) {
  if (!a || !OK) return NULL;
  em_tensor *r = NULL;
  em_operand ops[1] = {{a, {EM_SCALAR_INT, 0, 0}}};
  return keep(f, em_elementwise(op, 1, ops, o, NULL, &r), &r);
}
static em_tensor *polyg(F *f, int64_t n, const em_tensor *a) {
  em_ew_opts o = em_ew_defaults();
  o.polygamma_n = n;
  return unopt(f, EM_OP_POLYGAMMA, a, &o);
}
#define ADD(a, b) bin(f, EM_OP_ADD, a, b)
#define SUB(a, b) bin(f, EM_OP_SUB, a, b)
#define MUL(a, b) bin(f, EM_OP_MUL, a, b)
#define DIV(a, b) bin(f, EM_OP_DIV, a, b)
#define MULS(a, s) bins(f, EM_OP_MUL, a, s)
#define ADDS(a, s) bins(f, EM_OP_ADD, a, s)
#define RSUB(s, b) sbin(f, EM_OP_SUB, s, b)

static em_tensor *cast(F *f, const em_tensor *t, em_dtype dt) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_to(t, dt, em_tensor_device(t), 0, &r), &r);
}
/* a float mask (1 where op(a, b) holds) in g's dtype */
static em_tensor *maskf(F *f, em_ew_op op, em_operand a, em_operand b, const em_tensor *like) {
  em_tensor *m = bino(f, op, a, b);
  return like ? cast(f, m, like->dtype) : NULL;
}

static em_tensor *conj_of(F *f, const em_tensor *t) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_conj(t, &r), &r);
}
static int cplx(const em_tensor *t) {
  return t && em_dtype_kindof(t->dtype) == EM_KIND_COMPLEX;
}
static em_tensor *saved(F *f, int k) {
  if (!OK) return NULL;
  em_tensor *t = NULL;
  t = keep(f, em_ag_saved_get(f->n, k, &t), &t);
  return f->conj && cplx(t) ? conj_of(f, t) : t;
}
/* Operand i of an elementwise node: the saved tensor or the scalar. */
static em_operand opd(F *f, int i) {
  if (f->n->in[i].is_tensor) {
    return TS(saved(f, i));  /* on failure f->st is set and every op is skipped */
  }
  em_operand o = {NULL, f->n->p.sc[i]};
  return o;
}
static double opd_value(const em_operand *o) {
  return o->scalar.kind == EM_SCALAR_FLOAT ? o->scalar.f : (double)o->scalar.i;
}

static em_tensor *zeros_like(F *f, const em_tensor *t) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  em_scalar z = {EM_SCALAR_INT, 0, 0};
  return keep(f, em_full(t->ndim, t->sizes, z, t->dtype, em_tensor_device(t), &r), &r);
}
static em_tensor *reshape(F *f, const em_tensor *t, int nd, const int64_t *sizes) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_reshape(t, nd, sizes, &r), &r);
}
static em_tensor *expand(F *f, const em_tensor *t, int nd, const int64_t *sizes) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_expand(t, nd, sizes, &r), &r);
}
static em_tensor *sum_dims(F *f, const em_tensor *t, int nd, const int64_t *dims, int keepdim) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_reduce(EM_REDUCE_SUM, t, nd, dims, keepdim, -1, &r), &r);
}
static em_tensor *sum_dim(F *f, const em_tensor *t, int64_t dim) {
  return sum_dims(f, t, 1, &dim, 1);
}
static em_tensor *mT(F *f, const em_tensor *t) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, t->ndim < 2 ? em_alias(t, &r) : em_transpose(t, -2, -1, &r), &r);
}
static em_tensor *mm(F *f, em_status (*fn)(const em_tensor *, const em_tensor *, em_tensor **),
                     const em_tensor *a, const em_tensor *b) {
  if (!a || !b || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, fn(a, b, &r), &r);
}
static em_tensor *unsq(F *f, const em_tensor *t, int64_t dim) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_unsqueeze(t, dim, &r), &r);
}
static em_tensor *sq(F *f, const em_tensor *t, int64_t dim) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_squeeze(t, 1, &dim, &r), &r);
}
static em_tensor *narrow(F *f, const em_tensor *t, int64_t dim, int64_t start, int64_t len) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_narrow(t, dim, start, len, &r), &r);
}
static em_tensor *where(F *f, const em_tensor *c, const em_tensor *a, const em_tensor *b) {
  if (!c || !a || !b || !OK) return NULL;
  em_tensor *r = NULL;
  em_dtype dt = em_promote_types(a->dtype, b->dtype);
  return keep(f, em_where(c, a, b, dt, &r), &r);
}
/* the real (k 0) or imaginary (k 1) part of complex t, a view (the
** engine's dims and positions are 1-based) */
static em_tensor *cpart(F *f, const em_tensor *t, int k) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  em_tensor *v = keep(f, em_view_as_real(t, &r), &r);
  return OK ? keep(f, em_select(v, v->ndim, k + 1, &r), &r) : NULL;
}
/* where(c, a, b) for complex a and b of one dtype too (where has no complex
** loop: their real views, c broadcast over the (re, im) pair) */
static em_tensor *cwhere(F *f, const em_tensor *c, const em_tensor *a, const em_tensor *b) {
  if (!c || !a || !b || !OK) return NULL;
  if (!cplx(a)) return where(f, c, a, b);
  em_tensor *r = NULL;
  em_tensor *ar = keep(f, em_view_as_real(a, &r), &r);
  em_tensor *br = OK ? keep(f, em_view_as_real(b, &r), &r) : NULL;
  em_tensor *cu = OK ? keep(f, em_unsqueeze(c, c->ndim + 1, &r), &r) : NULL;
  em_tensor *w = where(f, cu, ar, br);
  return w && OK ? keep(f, em_view_as_complex(w, &r), &r) : NULL;
}
/* t cut from the graph: a constant when the backward is itself recorded */
static em_tensor *detached(F *f, const em_tensor *t) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_detach(t, &r), &r);
}
/* v with zeros where c holds; a real v's zero is one 0-d element the where broadcasts (no
** tensor of zeros of v's size to make and read) */
static em_tensor *zero_where(F *f, const em_tensor *c, const em_tensor *v) {
  if (!v || !OK) return NULL;
  if (cplx(v)) return cwhere(f, c, zeros_like(f, v), v);
  em_tensor *r = NULL;
  em_scalar z = {EM_SCALAR_INT, 0, 0};
  em_tensor *zero = keep(f, em_full(0, NULL, z, v->dtype, em_tensor_device(v), &r), &r);
  return where(f, c, zero, v);
}
static em_tensor *flip(F *f, const em_tensor *t, int64_t dim) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_flip(t, 1, &dim, &r), &r);
}
static em_tensor *cum(F *f, const em_tensor *t, int64_t dim, int prod) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_cumulative(t, dim, prod, -1, &r), &r);
}
static em_tensor *take(F *f, const em_tensor *t, const em_tensor *pos);
static em_tensor *full_like(F *f, const em_tensor *t, double v);

/* cumprod's backward when it is itself recorded (create_graph) and x has a
** zero: PyTorch's O(n^2) form, whose derivative is cumprod's second
** derivative (the zero-aware form below is right only at first order):
** grad_k = sum_{i >= k} g_i prod_{j <= i, j != k} x_j. NULL when x has no
** zero (the usual form, revcumsum(g y) / x, is then differentiable). */
static em_tensor *cumprod_grad_graph(F *f, const em_tensor *x, const em_tensor *g, int64_t dim) {
  if (!x || !g || !OK) return NULL;
  int ax = (int)(dim < 0 ? dim + x->ndim : dim - 1);
  int64_t n = x->sizes[ax];
  em_tensor *zeros = bins(f, EM_OP_EQ, x, 0.0), *any = NULL;
  if (!OK) return NULL;
  any = keep(f, em_reduce(EM_REDUCE_ANY, zeros, 0, NULL, 0, -1, &any), &any);
  int64_t has = 0;
  if (!any || em_get_i64(any, 0, &has) != EM_OK || !has || n <= 1) return NULL;
  em_tensor *cols[n > 0 ? n : 1];
  em_tensor *one = full_like(f, narrow(f, x, dim, 1, 1), 1.0);
  for (int64_t k = 0; k < n && OK; k++) {
    /* the products omitting x_k, for i = k..n-1 */
    em_tensor *until = one;
    if (k > 0) {
      em_tensor *head = narrow(f, x, dim, 1, k);
      until = OK ? keep(f, em_reduce(EM_REDUCE_PROD, head, 1, &dim, 1, -1, &until), &until)
                 : NULL;
    }
    em_tensor *omitted = until;
    if (k < n - 1) {
      em_tensor *from = cum(f, narrow(f, x, dim, k + 2, n - k - 1), dim, 1);
      em_tensor *parts[2] = {until, MUL(until, from)};
      omitted = NULL;
      if (OK) omitted = keep(f, em_cat(2, (const em_tensor *const *)parts, dim, &omitted), &omitted);
    }
    cols[k] = sum_dim(f, MUL(narrow(f, g, dim, k + 1, n - k), omitted), dim);
  }
  if (!OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_cat(n, (const em_tensor *const *)cols, dim, &r), &r);
}

/* The dims a reduction node reduced, as a 0/1 mask over the input dims. */
static void reduced_mask(const em_node *n, int *mask) {
  int nd = n->in[0].ndim;
  for (int d = 0; d < EM_MAX_DIMS; d++) mask[d] = n->p.nlist <= 0;
  for (int k = 0; k < n->p.nlist; k++) {
    int64_t d = n->p.list[k];
    if (nd == 0) continue;
    if (d < 0) d += nd + 1;
    if (d >= 1 && d <= nd) mask[d - 1] = 1;
  }
}

/* A reduced tensor (keepdim or not) viewed with size-1 dims where the
** reduction took them (keep = 1) and expanded back to the input's shape
** (keep = 0: only the size-1 dims). */
static em_tensor *unreduce(F *f, const em_tensor *t, int expand_back) {
  if (!t || !OK) return NULL;
  const em_node *n = f->n;
  int mask[EM_MAX_DIMS];
  reduced_mask(n, mask);
  int nd = n->in[0].ndim;
  int64_t ks[EM_MAX_DIMS];
  for (int d = 0; d < nd; d++) ks[d] = mask[d] ? 1 : n->in[0].sizes[d];
  em_tensor *r = reshape(f, t, nd, ks);
  return expand_back ? expand(f, r, nd, n->in[0].sizes) : r;
}
static int64_t reduced_count(const em_node *n) {
  int mask[EM_MAX_DIMS];
  reduced_mask(n, mask);
  int64_t c = 1;
  for (int d = 0; d < n->in[0].ndim; d++)
    if (mask[d]) c *= n->in[0].sizes[d];
  return c;
}
static int reduced_list(const em_node *n, int64_t *dims) {
  int mask[EM_MAX_DIMS], k = 0;
  reduced_mask(n, mask);
  for (int d = 0; d < n->in[0].ndim; d++)
    if (mask[d]) dims[k++] = d + 1;
  return k;
}

/* -- Gather-like ops (views, indexing, flips, repeats) -------------------------- */

/* pos (1-based into t read row-major; numel + 1 reads 0) -> values. */
static em_status take_ext(const em_tensor *t, const em_tensor *pos, em_tensor **out) {
  int64_t n = em_tensor_numel(t), one = 1, np1 = n + 1;
  em_tensor *flat = NULL, *z = NULL, *ext = NULL;
  em_status st = em_reshape(t, 1, &n, &flat);
  if (st == EM_OK) st = em_zeros(1, &one, t->dtype, em_tensor_device(t), &z);
  const em_tensor *parts[2] = {flat, z};
  if (st == EM_OK) st = em_cat(2, parts, 1, &ext);
  if (st == EM_OK && em_tensor_numel(ext) != np1)
    st = em_fail(EM_E_RUNTIME, "backward: internal size mismatch");
  if (st == EM_OK) st = em_take(ext, pos, out);
  em_tensor_release(flat);
  em_tensor_release(z);
  em_tensor_release(ext);
  return st;
}

/* zeros of meta m with g's values added at pos (duplicates sum). */
static em_status put_ext(const em_tensor *g, const em_tensor *pos, const em_ag_tmeta *m,
                         em_tensor **out) {
  int64_t n = 1;
  for (int d = 0; d < m->ndim; d++) n *= m->sizes[d];
  int64_t np1 = n + 1;
  em_tensor *buf = NULL, *gc = NULL, *part = NULL;
  em_status st = em_zeros(1, &np1, g->dtype, em_tensor_device(g), &buf);
  if (st == EM_OK) st = em_contiguous(g, &gc);
  if (st == EM_OK) st = em_put_(buf, pos, gc, 1);
  if (st == EM_OK) st = em_narrow(buf, 1, 1, n, &part);
  if (st == EM_OK) st = em_reshape(part, m->ndim, m->sizes, out);
  em_tensor_release(buf);
  em_tensor_release(gc);
  em_tensor_release(part);
  return st;
}

/* the real (part 1) or imaginary (2) part of a complex tensor, and back */
static em_tensor *part(F *f, const em_tensor *t, int k) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_complex_part(t, k, &r), &r);
}
static em_tensor *mkcplx(F *f, const em_tensor *re, const em_tensor *im) {
  if (!re || !im || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_complex_new(re, im, &r), &r);
}
static em_dtype value_of(em_dtype dt) { return dt == EM_COMPLEX128 ? EM_FLOAT64 : EM_FLOAT32; }

/* take_ext as a recorded op (PUTPOS's backward is a GATHER and back);
** complex tensors part by part (take/put_ have no complex loops). */
static em_tensor *take(F *f, const em_tensor *t, const em_tensor *pos) {
  if (!t || !pos || !OK) return NULL;
  if (cplx(t)) return mkcplx(f, take(f, part(f, t, 1), pos), take(f, part(f, t, 2), pos));
  em_tensor *r = NULL;
  int on = em_ag_pause();
  em_status st = take_ext(t, pos, &r);
  em_ag_resume(on);
  if (st == EM_OK && on && t->requires_grad)
    st = em_ag_record_gather("TakeBackward0", t, pos, r);
  if (st != EM_OK) { em_tensor_release(r); r = NULL; }
  return keep(f, st, &r);
}
static em_tensor *put(F *f, const em_tensor *g, const em_tensor *pos, const em_ag_tmeta *m) {
  if (!g || !pos || !OK) return NULL;
  if (cplx(g)) {
    em_ag_tmeta mv = *m;
    mv.dtype = value_of(g->dtype);
    return mkcplx(f, put(f, part(f, g, 1), pos, &mv), put(f, part(f, g, 2), pos, &mv));
  }
  em_tensor *r = NULL;
  int on = em_ag_pause();
  em_status st = put_ext(g, pos, m, &r);
  em_ag_resume(on);
  if (st == EM_OK && on && g->requires_grad) {
    em_ag_params p;
    memset(&p, 0, sizeof p);
    p.extra = pos;
    const em_tensor *ins[1] = {g};
    st = em_ag_record(EM_AG_PUTPOS, 1, ins, 1, &r, &p);
  }
  if (st != EM_OK) { em_tensor_release(r); r = NULL; }
  return keep(f, st, &r);
}

/* The gradient of a non-overlapping view of a contiguous input (STRIDED):
** zeros of the input's shape with g copied into the view's place. When the
** backward is itself recorded (create_graph), through positions and put,
** whose own backward is known. */
static em_tensor *strided_put(F *f, const em_tensor *g, const em_node *n) {
  if (!g || !OK) return NULL;
  const em_ag_tmeta *m = &n->in[0];
  const em_ag_tmeta *o = &n->out[0];
  if (em_grad_enabled() && g->requires_grad) {
    int64_t total = 1;
    for (int d = 0; d < m->ndim; d++) total *= m->sizes[d];
    em_tensor *ar = NULL, *pv = NULL, *pos = NULL;
    em_scalar one = {EM_SCALAR_INT, 1, 0}, end = {EM_SCALAR_INT, total + 1, 0}, step = one;
    int on = em_ag_pause();
    em_status st = em_arange(one, end, step, EM_INT64, em_tensor_device(g), &ar);
    if (st == EM_OK)
      st = em_tensor_alloc(ar->storage, n->p.i[0], o->ndim, o->sizes, n->p.list, EM_INT64, &pv);
    if (st == EM_OK) st = em_clone(pv, &pos);
    em_ag_resume(on);
    em_tensor_release(ar);
    em_tensor_release(pv);
    keep(f, st, &pos);
    return put(f, g, pos, m);
  }
  em_tensor *r = NULL, *v = NULL;
  em_status st = em_zeros(m->ndim, m->sizes, g->dtype, em_tensor_device(g), &r);
  if (st == EM_OK)
    st = em_tensor_alloc(r->storage, r->offset + n->p.i[0], o->ndim, o->sizes, n->p.list, r->dtype, &v);
  if (st == EM_OK) st = em_copy_(v, g);
  em_tensor_release(v);
  if (st != EM_OK) {
    em_tensor_release(r);
    r = NULL;
  }
  return keep(f, st, &r);
}

/* -- Formulas -------------------------------------------------------------------- */

#define NEED(i) (f->n->next[i].node || f->n->next[i].leaf)

static void ew_formula(F *f, em_tensor *const *gout, em_tensor **gin) {
  em_node *n = f->n;
  const em_tensor *g = gout[0];
  const em_ew_opts *o = &n->p.ew;
  em_operand a, b;
  em_tensor *y = NULL, *x = NULL;
  /* complex: PyTorch's convention, grad * conj(f'(z)); the holomorphic ops
  ** here have real coefficients, so conj(f'(z)) = f'(conj(z)) and their
  ** formulas read the saved values conjugated */
  int cx = em_dtype_kindof(n->out[0].dtype) == EM_KIND_COMPLEX;
  if (cx) {
    switch ((em_ew_op)n->p.op) {
      case EM_OP_MUL: case EM_OP_DIV: case EM_OP_POW: case EM_OP_SQRT: case EM_OP_RECIPROCAL:
      case EM_OP_EXP: case EM_OP_LOG: case EM_OP_SIN: case EM_OP_COS: case EM_OP_TANH:
      case EM_OP_SQUARE: case EM_OP_ATAN: case EM_OP_ATANH: f->conj = 1; break;
      default: break;
    }
  }
  switch ((em_ew_op)n->p.op) {
    case EM_OP_ADD: case EM_OP_SUB: {
      double al = o->alpha.kind == EM_SCALAR_FLOAT ? o->alpha.f : (double)o->alpha.i;
      if (n->p.op == EM_OP_SUB) al = -al;
      if (NEED(0)) gin[0] = (em_tensor *)g;
      if (NEED(1)) gin[1] = al == 1.0 ? (em_tensor *)g : MULS(g, al);
      break;
    }
    case EM_OP_MUL:  /* each operand read only for the other's gradient (saved so) */
      if (NEED(0)) gin[0] = bino(f, EM_OP_MUL, TS(g), opd(f, 1));
      if (NEED(1)) gin[1] = bino(f, EM_OP_MUL, TS(g), opd(f, 0));
      break;
    case EM_OP_DIV:
      if (o->rounding != EM_ROUND_NONE) {  /* piecewise constant */
        for (int i = 0; i < 2; i++) if (NEED(i)) gin[i] = zeros_like(f, g);
        break;
      }
      b = opd(f, 1);
      if (NEED(0)) gin[0] = bino(f, EM_OP_DIV, TS(g), b);
      if (NEED(1)) {  /* -g * a / b^2 */
        a = opd(f, 0);
        em_tensor *q = bino(f, EM_OP_DIV, TS(g), b);
        q = bino(f, EM_OP_DIV, TS(q), b);
        gin[1] = un(f, EM_OP_NEG, bino(f, EM_OP_MUL, TS(q), a));
      }
      break;
    case EM_OP_REMAINDER: case EM_OP_FMOD: {
      a = opd(f, 0); b = opd(f, 1);
      if (NEED(0)) gin[0] = (em_tensor *)g;
      if (NEED(1)) {
        em_ew_opts ro = em_ew_defaults();
        ro.rounding = n->p.op == EM_OP_REMAINDER ? EM_ROUND_FLOOR : EM_ROUND_TRUNC;
        em_operand ops[2] = {a, b};
        em_tensor *q = NULL;
        if (OK) q = keep(f, em_elementwise(EM_OP_DIV, 2, ops, &ro, NULL, &q), &q);
        gin[1] = un(f, EM_OP_NEG, MUL(g, q));
      }
      break;
    }
    case EM_OP_POW: {
      a = opd(f, 0); b = opd(f, 1);
      if (NEED(0)) {
        if (!b.tensor && opd_value(&b) == 0.0) {
          gin[0] = zeros_like(f, g);
        } else {  /* g * b * a^(b-1) */
          em_tensor *bm1 = b.tensor ? ADDS(b.tensor, -1.0) : NULL;
          em_tensor *pw = b.tensor ? bino(f, EM_OP_POW, a, TS(bm1))
                                   : bino(f, EM_OP_POW, a, SC(opd_value(&b) - 1.0));
          gin[0] = MUL(bino(f, EM_OP_MUL, TS(g), b), pw);
          if (b.tensor) {  /* b == 0 contributes nothing (0 * inf would be NaN) */
            em_tensor *bz = bino(f, EM_OP_EQ, b, SC(0.0));
            gin[0] = zero_where(f, bz, gin[0]);
          }
        }
      }
      if (NEED(1)) {  /* g * y * log(a), 0 where a == 0 and b >= 0 */
        y = saved(f, EM_AG_SV_OUT(n, 0));
        em_tensor *la = a.tensor ? un(f, EM_OP_LOG, a.tensor) : NULL;
        if (!a.tensor && OK) {
          double av = opd_value(&a);
          la = keep(f, em_full(0, NULL, (em_scalar){EM_SCALAR_FLOAT, 0, log(av)},
                               g->dtype, em_tensor_device(g), &la), &la);
        }
        em_tensor *r = MUL(MUL(g, y), la);
        if (cx && r) {
          /* torch's: 0 where a == 0 and b is real and >= 0 (0^b is 0 or 1
          ** there; log 0 would make it NaN) */
          em_tensor *c = NULL;
          if (a.tensor || opd_value(&a) == 0.0) {
            const em_tensor *bt = b.tensor;
            if (bt && cplx(bt)) {
              c = bin(f, EM_OP_LOGICAL_AND, bins(f, EM_OP_GE, cpart(f, bt, 0), 0.0),
                      bins(f, EM_OP_EQ, cpart(f, bt, 1), 0.0));
            } else if (bt) {
              c = bins(f, EM_OP_GE, bt, 0.0);
            }
            if (a.tensor && c) c = bin(f, EM_OP_LOGICAL_AND, c, bino(f, EM_OP_EQ, a, SC(0.0)));
          }
          if (c) r = zero_where(f, c, r);
        } else if (a.tensor && r) {
          em_tensor *az = bino(f, EM_OP_EQ, a, SC(0.0));
          em_tensor *bp = bino(f, EM_OP_GE, b, SC(0.0));
          em_tensor *c = bin(f, EM_OP_LOGICAL_AND, az, bp);
          r = where(f, c, zeros_like(f, r), r);
        } else if (!a.tensor && opd_value(&a) == 0.0 && r) {
          r = where(f, bino(f, EM_OP_GE, b, SC(0.0)), zeros_like(f, r), r);
        }
        gin[1] = r;
      }
      break;
    }
    case EM_OP_ATAN2: {
      a = opd(f, 0); b = opd(f, 1);
      em_tensor *den = bino(f, EM_OP_ADD, TS(bino(f, EM_OP_MUL, a, a)),
                            TS(bino(f, EM_OP_MUL, b, b)));
      em_tensor *gd = DIV(g, den);
      if (NEED(0)) gin[0] = bino(f, EM_OP_MUL, TS(gd), b);
      if (NEED(1)) gin[1] = un(f, EM_OP_NEG, bino(f, EM_OP_MUL, TS(gd), a));
      break;
    }
    case EM_OP_MAXIMUM: case EM_OP_MINIMUM: {
      /* PyTorch's: an operand takes the gradient unless it loses (so both
      ** do where one is NaN); ties split it */
      a = opd(f, 0); b = opd(f, 1);
      em_ew_op lose = n->p.op == EM_OP_MAXIMUM ? EM_OP_LT : EM_OP_GT;
      em_tensor *eq = MULS(maskf(f, EM_OP_EQ, a, b, g), 0.5);
      if (NEED(0)) gin[0] = MUL(g, RSUB(1.0, ADD(maskf(f, lose, a, b, g), eq)));
      if (NEED(1)) gin[1] = MUL(g, RSUB(1.0, ADD(maskf(f, lose, b, a, g), eq)));
      break;
    }
    case EM_OP_NEG: gin[0] = un(f, EM_OP_NEG, g); break;
    case EM_OP_ABS:
      x = saved(f, 0);
      if (cplx(x)) {  /* g * sgn(z), sgn(z) = z / |z| (0 at 0) */
        em_tensor *ax = un(f, EM_OP_ABS, x);
        em_tensor *den = where(f, bins(f, EM_OP_EQ, ax, 0.0), full_like(f, ax, 1.0), ax);
        gin[0] = MUL(g, DIV(x, den));
      } else {
        gin[0] = MUL(g, un(f, EM_OP_SIGN, x));
      }
      break;
    case EM_OP_SIGN: case EM_OP_FLOOR: case EM_OP_CEIL: case EM_OP_ROUND:
    case EM_OP_TRUNC:
      gin[0] = zeros_like(f, g);
      break;
    case EM_OP_FRAC: gin[0] = (em_tensor *)g; break;
    case EM_OP_SQRT:  /* g / (2 y) */
      gin[0] = DIV(g, MULS(saved(f, EM_AG_SV_OUT(n, 0)), 2.0));
      break;
    case EM_OP_RSQRT: {  /* -g y^3 / 2 */
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = MUL(MULS(g, -0.5), MUL(y, MUL(y, y)));
      break;
    }
    case EM_OP_SQUARE: gin[0] = MUL(MULS(g, 2.0), saved(f, 0)); break;
    case EM_OP_RECIPROCAL:
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = un(f, EM_OP_NEG, MUL(g, MUL(y, y)));
      break;
    case EM_OP_EXP: gin[0] = MUL(g, saved(f, EM_AG_SV_OUT(n, 0))); break;
    case EM_OP_EXP2: gin[0] = MUL(MULS(g, M_LN2), saved(f, EM_AG_SV_OUT(n, 0))); break;
    case EM_OP_EXPM1: gin[0] = MUL(g, ADDS(saved(f, EM_AG_SV_OUT(n, 0)), 1.0)); break;
    case EM_OP_LOG: gin[0] = DIV(g, saved(f, 0)); break;
    case EM_OP_LOG2: gin[0] = DIV(g, MULS(saved(f, 0), M_LN2)); break;
    case EM_OP_LOG10: gin[0] = DIV(g, MULS(saved(f, 0), M_LN10)); break;
    case EM_OP_LOG1P: gin[0] = DIV(g, ADDS(saved(f, 0), 1.0)); break;
    case EM_OP_SIN: gin[0] = MUL(g, un(f, EM_OP_COS, saved(f, 0))); break;
    case EM_OP_COS: gin[0] = un(f, EM_OP_NEG, MUL(g, un(f, EM_OP_SIN, saved(f, 0)))); break;
    case EM_OP_TAN: {  /* g (1 + tan^2) */
      em_tensor *t = un(f, EM_OP_TAN, saved(f, 0));
      gin[0] = MUL(g, ADDS(MUL(t, t), 1.0));
      break;
    }
    case EM_OP_ASIN: case EM_OP_ACOS: case EM_OP_ASINH: case EM_OP_ACOSH: {
      x = saved(f, 0);
      em_tensor *d;
      if (cplx(x)) {
        /* f'(z) = 1 / d, d = sqrt(1 - z^2) (asin; acos: -1 / d),
        ** sqrt(z^2 + 1) (asinh), sqrt(z - 1) sqrt(z + 1) (acosh), and
        ** g / conj(d). On the cuts (asin(2+0j), acosh(0.5+0j)) a zero part's
        ** sign is lost in 1 - z^2 and d has the wrong sign (torch 1.13
        ** errs on one side of each cut): d's sign is taken from the same
        ** root as a function of w = f(z), which lies on the side the signed
        ** zero picks: cos w (asin), sin w (acos), cosh w (asinh), sinh w
        ** (acosh). (The root itself stays the direct one: infinite where d
        ** is 0, at z = +-1 or +-i.) */
        em_ew_op op = (em_ew_op)n->p.op;
        em_tensor *w = un(f, op, x), *e;
        if (op == EM_OP_ASIN || op == EM_OP_ACOS) {
          d = un(f, EM_OP_SQRT, RSUB(1.0, MUL(x, x)));
          e = un(f, op == EM_OP_ASIN ? EM_OP_COS : EM_OP_SIN, w);
        } else {  /* cosh w and sinh w from exp: no complex cosh/sinh kernels */
          em_tensor *ep = un(f, EM_OP_EXP, w), *en = un(f, EM_OP_EXP, un(f, EM_OP_NEG, w));
          if (op == EM_OP_ASINH) {
            d = un(f, EM_OP_SQRT, ADDS(MUL(x, x), 1.0));
            e = ADD(ep, en);
          } else {
            d = MUL(un(f, EM_OP_SQRT, ADDS(x, -1.0)), un(f, EM_OP_SQRT, ADDS(x, 1.0)));
            e = SUB(ep, en);
          }
        }
        /* d and e agree up to sign (and e's factor 2): flip d where Re(d conj(e)) < 0 */
        em_tensor *neg = bins(f, EM_OP_LT, cpart(f, MUL(d, conj_of(f, e)), 0), 0.0);
        d = conj_of(f, cwhere(f, neg, un(f, EM_OP_NEG, d), d));
      } else if (n->p.op == EM_OP_ASINH) {  /* g / sqrt(x^2 + 1) */
        d = un(f, EM_OP_SQRT, ADDS(MUL(x, x), 1.0));
      } else if (n->p.op == EM_OP_ACOSH) {  /* g / (sqrt(x - 1) sqrt(x + 1)) */
        d = MUL(un(f, EM_OP_SQRT, ADDS(x, -1.0)), un(f, EM_OP_SQRT, ADDS(x, 1.0)));
      } else {  /* +-g / sqrt(1 - x^2) */
        d = un(f, EM_OP_SQRT, RSUB(1.0, MUL(x, x)));
      }
      em_tensor *r = DIV(g, d);
      gin[0] = n->p.op == EM_OP_ACOS ? un(f, EM_OP_NEG, r) : r;
      break;
    }
    case EM_OP_ATAN: x = saved(f, 0); gin[0] = DIV(g, ADDS(MUL(x, x), 1.0)); break;
    case EM_OP_ATANH: x = saved(f, 0); gin[0] = DIV(g, RSUB(1.0, MUL(x, x))); break;
    case EM_OP_ERFCX:  /* 2 x erfcx(x) - 2 / sqrt(pi) */
      x = saved(f, 0);
      gin[0] = MUL(g, ADDS(MULS(MUL(x, saved(f, EM_AG_SV_OUT(n, 0))), 2.0), -1.1283791670955126));
      break;
    case EM_OP_SINH: gin[0] = MUL(g, un(f, EM_OP_COSH, saved(f, 0))); break;
    case EM_OP_COSH: gin[0] = MUL(g, un(f, EM_OP_SINH, saved(f, 0))); break;
    case EM_OP_TANH:
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = MUL(g, RSUB(1.0, MUL(y, y)));
      break;
    case EM_OP_SIGMOID:
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = MUL(g, MUL(y, RSUB(1.0, y)));
      break;
    case EM_OP_RELU:  /* PyTorch's threshold_backward: y <= 0 ? 0 : g (NaN passes g) */
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = zero_where(f, bins(f, EM_OP_LE, y, 0.0), g);
      break;
    case EM_OP_GELU: {
      x = saved(f, 0);
      if (!o->gelu_tanh) {  /* Phi(x) + x phi(x) */
        em_tensor *cdf = MULS(ADDS(un(f, EM_OP_ERF, MULS(x, M_SQRT1_2)), 1.0), 0.5);
        em_tensor *pdf = MULS(un(f, EM_OP_EXP, MULS(MUL(x, x), -0.5)), 0.3989422804014327);
        gin[0] = MUL(g, ADD(cdf, MUL(x, pdf)));
      } else {  /* PyTorch's tanh-approximation derivative */
        const double kb = M_SQRT2 * M_2_SQRTPI * 0.5, kk = 0.044715;
        em_tensor *x2 = MUL(x, x);
        em_tensor *inner = MULS(ADD(x, MULS(MUL(x2, x), kk)), kb);
        em_tensor *th = un(f, EM_OP_TANH, inner);
        em_tensor *left = MULS(x, 0.5), *right = ADDS(th, 1.0);
        em_tensor *ld = MULS(right, 0.5);
        em_tensor *rd = MUL(MUL(left, RSUB(1.0, MUL(th, th))), MULS(ADDS(MULS(x2, 3 * kk), 1.0), kb));
        gin[0] = MUL(g, ADD(ld, rd));
      }
      break;
    }
    case EM_OP_SILU: {  /* s (1 + x (1 - s)) */
      x = saved(f, 0);
      em_tensor *s = un(f, EM_OP_SIGMOID, x);
      gin[0] = MUL(g, MUL(s, ADDS(MUL(x, RSUB(1.0, s)), 1.0)));
      break;
    }
    case EM_OP_SOFTPLUS: {  /* sigmoid(beta x), 1 above the threshold */
      x = saved(f, 0);
      em_tensor *bx = MULS(x, n->p.ew.beta);
      em_tensor *sg = un(f, EM_OP_SIGMOID, bx);
      /* PyTorch's double backward is beta sigmoid'(beta x) only where
      ** beta x < threshold: at beta x == threshold (and NaN) the sigmoid
      ** is a constant, so the second derivative there is 0 */
      sg = where(f, bins(f, EM_OP_LT, bx, n->p.ew.threshold), sg, detached(f, sg));
      em_tensor *s = MUL(g, sg);
      gin[0] = where(f, bins(f, EM_OP_GT, bx, n->p.ew.threshold), (em_tensor *)g, s);
      break;
    }
    case EM_OP_ERF:
      x = saved(f, 0);
      gin[0] = MUL(MULS(g, M_2_SQRTPI), un(f, EM_OP_EXP, un(f, EM_OP_NEG, MUL(x, x))));
      break;
    case EM_OP_NAN_TO_NUM:
      gin[0] = MUL(g, cast(f, un(f, EM_OP_ISFINITE, saved(f, 0)), g->dtype));
      break;
    case EM_OP_LERP: {  /* start + w (end - start) */
      /* each operand is saved only when a gradient reads it (needed_saves) */
      em_operand w = {NULL, n->p.sc[2]};
      if (NEED(0) || NEED(1)) w = opd(f, 2);
      if (NEED(0))
        gin[0] = w.tensor ? MUL(g, cast(f, bino(f, EM_OP_SUB, SC(1.0), w), g->dtype))
                          : MULS(g, 1.0 - opd_value(&w));
      if (NEED(1)) gin[1] = bino(f, EM_OP_MUL, TS(g), w);
      if (NEED(2)) gin[2] = MUL(g, bino(f, EM_OP_SUB, opd(f, 1), opd(f, 0)));
      break;
    }
    case EM_OP_CLAMP: {
      /* operands: x, min (if has_min), max (if has_max) */
      em_operand xs = opd(f, 0);
      em_operand lo = {0}, hi = {0};
      int has_lo = n->p.ew.has_min, has_hi = n->p.ew.has_max;
      int ilo = -1, ihi = -1;
      if (has_lo) { ilo = 1; lo = opd(f, 1); }
      if (has_hi) { ihi = 2; hi = opd(f, 2); }
      /* each gradient selected by a mask (PyTorch's where(mask, grad, 0)),
      ** not multiplied by it: a NaN or inf gradient where the mask is off
      ** gives 0, not NaN */
      if (NEED(0)) {
        em_tensor *m = bino(f, EM_OP_EQ, xs, xs);  /* NaN: off */
        if (has_lo) m = bin(f, EM_OP_LOGICAL_AND, m, bino(f, EM_OP_GE, xs, lo));
        if (has_hi) m = bin(f, EM_OP_LOGICAL_AND, m, bino(f, EM_OP_LE, xs, hi));
        gin[0] = where(f, m, g, zeros_like(f, g));
      }
      if (ilo > 0 && NEED(ilo)) {
        /* PyTorch 1.13's clamp_backward_min_max: x < min and min < max (with
        ** min == max neither bound gets the gradient) */
        em_tensor *m = bino(f, EM_OP_LT, xs, lo);
        if (has_hi) m = bin(f, EM_OP_LOGICAL_AND, m, bino(f, EM_OP_LT, lo, hi));
        gin[ilo] = where(f, m, g, zeros_like(f, g));
      }
      if (ihi > 0 && NEED(ihi)) {
        em_tensor *m = bino(f, EM_OP_GT, xs, hi);
        if (has_lo) m = bin(f, EM_OP_LOGICAL_OR, m, bino(f, EM_OP_GT, lo, hi));
        gin[ihi] = where(f, m, g, zeros_like(f, g));
      }
      break;
    }
    case EM_OP_ERFC:  /* -2/sqrt(pi) exp(-x^2) */
      x = saved(f, 0);
      gin[0] = MUL(MULS(g, -M_2_SQRTPI), un(f, EM_OP_EXP, un(f, EM_OP_NEG, MUL(x, x))));
      break;
    case EM_OP_ERFINV:  /* sqrt(pi)/2 exp(y^2) */
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = MUL(MULS(g, 0.88622692545275801365), un(f, EM_OP_EXP, MUL(y, y)));
      break;
    case EM_OP_LGAMMA: gin[0] = MUL(g, un(f, EM_OP_DIGAMMA, saved(f, 0))); break;
    case EM_OP_DIGAMMA: gin[0] = MUL(g, polyg(f, 1, saved(f, 0))); break;
    case EM_OP_POLYGAMMA: gin[0] = MUL(g, polyg(f, o->polygamma_n + 1, saved(f, 0))); break;
    case EM_OP_I0: gin[0] = MUL(g, un(f, EM_OP_I1, saved(f, 0))); break;
    case EM_OP_I0E:  /* i1e(x) - sgn(x) i0e(x) */
      x = saved(f, 0);
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = MUL(g, SUB(un(f, EM_OP_I1E, x), MUL(un(f, EM_OP_SIGN, x), y)));
      break;
    case EM_OP_I1: case EM_OP_I1E: {
      /* i1: i0(x) - y / x; i1e: i0e(x) - y (sgn(x) + 1 / x); 1/2 at x = 0 */
      x = saved(f, 0);
      y = saved(f, EM_AG_SV_OUT(n, 0));
      int e = n->p.op == EM_OP_I1E;
      /* y / x with x = 0 read as 1: the branch the where drops at 0 stays
      ** finite, so a second derivative through it is not 0 * NaN */
      em_tensor *at0 = bino(f, EM_OP_EQ, TS(x), SC(0.0));
      em_tensor *yx = DIV(y, where(f, at0, ADDS(zeros_like(f, x), 1.0), x));
      em_tensor *d = SUB(un(f, e ? EM_OP_I0E : EM_OP_I0, x), yx);
      if (e) d = SUB(d, MUL(un(f, EM_OP_SIGN, x), y));
      em_tensor *half = zeros_like(f, d);
      half = ADDS(half, 0.5);
      gin[0] = MUL(g, where(f, at0, half, d));
      break;
    }
    case EM_OP_NDTR:  /* exp(-x^2/2) / sqrt(2 pi) */
      x = saved(f, 0);
      gin[0] = MUL(MULS(g, 0.39894228040143267794), un(f, EM_OP_EXP, MULS(MUL(x, x), -0.5)));
      break;
    case EM_OP_NDTRI:  /* sqrt(2 pi) exp(y^2/2) */
      y = saved(f, EM_AG_SV_OUT(n, 0));
      gin[0] = MUL(MULS(g, 2.50662827463100050242), un(f, EM_OP_EXP, MULS(MUL(y, y), 0.5)));
      break;
    case EM_OP_LOG_NDTR:
      /* phi(x) / Phi(x) = sqrt(2/pi) / erfcx(-x / sqrt 2) (Phi(x) =
      ** erfc(-x / sqrt 2) / 2, DLMF 7.2.2, 7.2.3): no exp(-x^2/2 - y), whose
      ** two terms cancel to about x^2 ulps (PyTorch 1.13's formula: inf at
      ** x = -1e10 in float64, 0 in float32, where the value is ~ -x; 986
      ** for 1000 at x = -1e3 in float32); -> 0 as x -> +inf (erfcx -> inf).
      ** The output stays saved (PyTorch's saved tensors: an in-place write
      ** to it is caught at backward) */
      x = saved(f, 0);
      gin[0] = DIV(MULS(g, 0.79788456080286535588),
                   un(f, EM_OP_ERFCX, MULS(x, -0.70710678118654752440)));
      break;
    case EM_OP_SINC: {
      /* (pi x cos(pi x) - sin(pi x)) / (pi x^2); for |u| < 0.3, u = pi x,
      ** the series pi sum_k (-1)^k 2k u^(2k-1) / (2k+1)!, k = 1..6 (the
      ** formula cancels there, and is 0/0 once pi x^2 underflows) */
      x = saved(f, 0);
      em_tensor *px = MULS(x, M_PI);
      em_tensor *d = DIV(SUB(MUL(px, un(f, EM_OP_COS, px)), un(f, EM_OP_SIN, px)), MUL(px, x));
      em_tensor *u2 = MUL(px, px);
      em_tensor *h = ADDS(MULS(u2, 1.0 / 518918400), -1.0 / 3991680);
      h = ADDS(MUL(u2, h), 1.0 / 45360);
      h = ADDS(MUL(u2, h), -1.0 / 840);
      h = ADDS(MUL(u2, h), 1.0 / 30);
      h = ADDS(MUL(u2, h), -1.0 / 3);
      em_tensor *ser = MULS(MUL(px, h), M_PI);
      em_tensor *small = bins(f, EM_OP_LT, un(f, EM_OP_ABS, px), 0.3);
      gin[0] = MUL(g, where(f, small, ser, d));
      break;
    }
    case EM_OP_ENTR:  /* -(1 + log x) */
      x = saved(f, 0);
      gin[0] = MUL(g, un(f, EM_OP_NEG, ADDS(un(f, EM_OP_LOG, x), 1.0)));
      break;
    case EM_OP_LOGIT: {  /* 1 / (x (1 - x)); 0 outside [eps, 1 - eps] */
      x = saved(f, 0);
      em_tensor *d = DIV(g, MUL(x, RSUB(1.0, x)));
      if (o->has_eps) {
        em_tensor *out = bin(f, EM_OP_LOGICAL_OR, bins(f, EM_OP_LT, x, o->eps),
                             bins(f, EM_OP_GT, x, 1.0 - o->eps));
        d = where(f, out, zeros_like(f, d), d);
      } else { /* outside [0, 1] the value is NaN, and so is the gradient (PyTorch) */
        em_tensor *out = bin(f, EM_OP_LOGICAL_OR, bins(f, EM_OP_LT, x, 0.0), bins(f, EM_OP_GT, x, 1.0));
        d = where(f, out, ADDS(zeros_like(f, d), NAN), d);
      }
      gin[0] = d;
      break;
    }
    case EM_OP_XLOGY: case EM_OP_XLOG1PY: {
      /* x: xlogy(g, y) (0 where x = 0 and y <= 0 (-1)); y: g x / y (y + 1) */
      int p1 = n->p.op == EM_OP_XLOG1PY;
      a = opd(f, 0); b = opd(f, 1);
      if (NEED(0)) {
        em_tensor *d = bino(f, n->p.op, TS(g), b);
        double thr = p1 ? -1.0 : 0.0;
        em_tensor *z = bino(f, EM_OP_EQ, a, SC(0.0));
        if (b.tensor) {
          z = bin(f, EM_OP_LOGICAL_AND, z, bino(f, EM_OP_LE, b, SC(thr)));
        } else { /* a number y: the mask is x = 0 where y <= thr, else empty */
          double yv = b.scalar.kind == EM_SCALAR_FLOAT ? b.scalar.f : (double)b.scalar.i;
          if (!(yv <= thr)) z = NULL;
        }
        gin[0] = z ? where(f, z, zeros_like(f, d), d) : d;
      }
      if (NEED(1)) {
        em_tensor *den = p1 ? bino(f, EM_OP_ADD, b, SC(1.0)) : NULL;
        gin[1] = bino(f, EM_OP_DIV, TS(bino(f, EM_OP_MUL, TS(g), a)), den ? TS(den) : b);
      }
      break;
    }
    case EM_OP_LOGADDEXP: case EM_OP_LOGADDEXP2: {  /* g / (1 + e^(other - self)) */
      a = opd(f, 0); b = opd(f, 1);
      em_ew_op ex = n->p.op == EM_OP_LOGADDEXP ? EM_OP_EXP : EM_OP_EXP2;
      if (NEED(0)) gin[0] = DIV(g, ADDS(un(f, ex, bino(f, EM_OP_SUB, b, a)), 1.0));
      if (NEED(1)) gin[1] = DIV(g, ADDS(un(f, ex, bino(f, EM_OP_SUB, a, b)), 1.0));
      break;
    }
    case EM_OP_HYPOT:  /* g self / result, g other / result */
      a = opd(f, 0); b = opd(f, 1);
      y = saved(f, EM_AG_SV_OUT(n, 0));
      if (NEED(0)) gin[0] = DIV(bino(f, EM_OP_MUL, TS(g), a), y);
      if (NEED(1)) gin[1] = DIV(bino(f, EM_OP_MUL, TS(g), b), y);
      break;
    case EM_OP_COPYSIGN: {  /* g result / self (0 where self = 0); other: 0 */
      a = opd(f, 0);
      y = saved(f, EM_AG_SV_OUT(n, 0));
      if (NEED(0)) {
        em_tensor *d = bino(f, EM_OP_DIV, TS(MUL(g, y)), a);
        gin[0] = where(f, bino(f, EM_OP_EQ, a, SC(0.0)), zeros_like(f, d), d);
      }
      if (NEED(1)) gin[1] = zeros_like(f, g);
      break;
    }
    case EM_OP_ZETA: {  /* q: -x zeta(x + 1, q) g; x: not implemented (PyTorch) */
      a = opd(f, 0); b = opd(f, 1);
      if (NEED(0)) {
        if (OK) f->st = em_fail(EM_E_RUNTIME, "backward: the derivative of zeta with respect "
                                "to x (argument 1) is not implemented");
        break;
      }
      if (NEED(1)) {
        em_tensor *x1 = bino(f, EM_OP_ADD, a, SC(1.0));
        em_tensor *z = bino(f, EM_OP_ZETA, TS(x1), b);
        gin[1] = un(f, EM_OP_NEG, MUL(bino(f, EM_OP_MUL, TS(g), a), z));
      }
      break;
    }
    case EM_OP_GAMMAINC: case EM_OP_GAMMAINCC: {
      /* x: +-exp((a - 1) log x - x - lgamma(a)) g; a: not implemented (PyTorch) */
      a = opd(f, 0); b = opd(f, 1);
      if (NEED(0)) {
        if (OK) f->st = em_fail(EM_E_RUNTIME, "backward: the derivative of %s with respect to "
                                "a (argument 1) is not implemented",
                                n->p.op == EM_OP_GAMMAINC ? "gammainc" : "gammaincc");
        break;
      }
      if (NEED(1)) {
        em_tensor *xt = (em_tensor *)b.tensor;
        em_tensor *at = a.tensor ? (em_tensor *)a.tensor
                                 : full_like(f, xt, a.scalar.kind == EM_SCALAR_FLOAT
                                                        ? a.scalar.f : (double)a.scalar.i);
        em_tensor *e = SUB(SUB(MUL(ADDS(at, -1.0), un(f, EM_OP_LOG, xt)), xt),
                           un(f, EM_OP_LGAMMA, at));
        em_tensor *d = MUL(g, un(f, EM_OP_EXP, e));
        gin[1] = n->p.op == EM_OP_GAMMAINC ? d : un(f, EM_OP_NEG, d);
      }
      break;
    }
    default:
      if (OK) f->st = em_fail(EM_E_RUNTIME, "backward: %s is not differentiable", n->name);
  }
}

/* prod over the reduced dims of every element but one: products of the
** elements before and after it (exclusive cumulative products), so zeros
** in the input are handled exactly. */
static em_tensor *prod_others(F *f, const em_tensor *x) {
  const em_node *n = f->n;
  int nd = n->in[0].ndim;
  if (nd == 0) {
    em_tensor *r = NULL;
    em_scalar one = {EM_SCALAR_FLOAT, 0, 1.0};
    return OK ? keep(f, em_full(0, NULL, one, x->dtype, em_tensor_device(x), &r), &r) : NULL;
  }
  int mask[EM_MAX_DIMS];
  reduced_mask(n, mask);
  /* reduced dims moved last and merged */
  int64_t perm[EM_MAX_DIMS], inv[EM_MAX_DIMS], psz[EM_MAX_DIMS + 1];
  int k = 0, nkeep = 0;
  for (int d = 0; d < nd; d++) if (!mask[d]) perm[k++] = d + 1;
  nkeep = k;
  for (int d = 0; d < nd; d++) if (mask[d]) perm[k++] = d + 1;
  for (int d = 0; d < nd; d++) inv[perm[d] - 1] = d + 1;
  em_tensor *p = NULL;
  if (OK) p = keep(f, em_permute(x, nd, perm, &p), &p);
  int64_t r = 1;
  for (int d = nkeep; d < nd; d++) r *= n->in[0].sizes[perm[d] - 1];
  if (r == 0) return zeros_like(f, x); /* an empty reduced dim: x holds nothing */
  for (int d = 0; d < nkeep; d++) psz[d] = n->in[0].sizes[perm[d] - 1];
  psz[nkeep] = r;
  em_tensor *m = reshape(f, p, nkeep + 1, psz);
  int64_t last = nkeep + 1;
  em_tensor *ones = NULL;
  int64_t osz[EM_MAX_DIMS + 1];
  memcpy(osz, psz, sizeof osz);
  osz[nkeep] = 1;
  em_scalar one = {EM_SCALAR_FLOAT, 0, 1.0};
  if (OK) ones = keep(f, em_full(nkeep + 1, osz, one, x->dtype, em_tensor_device(x), &ones), &ones);
  em_tensor *left = NULL, *right = NULL;
  if (r > 1) {
    em_tensor *cl = narrow(f, cum(f, m, last, 1), last, 1, r - 1);
    em_tensor *cr = narrow(f, cum(f, flip(f, m, last), last, 1), last, 1, r - 1);
    const em_tensor *pl[2] = {ones, cl}, *pr[2] = {ones, cr};
    if (OK) left = keep(f, em_cat(2, pl, last, &left), &left);
    if (OK) right = flip(f, keep(f, em_cat(2, pr, last, &right), &right), last);
  } else {
    left = ones;
    right = ones;
  }
  em_tensor *both = MUL(left, right);
  /* back to the permuted shape, then the input's dim order */
  int64_t pshape[EM_MAX_DIMS];
  for (int d = 0; d < nd; d++) pshape[d] = n->in[0].sizes[perm[d] - 1];
  em_tensor *b = reshape(f, both, nd, pshape);
  em_tensor *res = NULL;
  if (OK && b) res = keep(f, em_permute(b, nd, inv, &res), &res);
  return res;
}

static void reduce_formula(F *f, em_tensor *const *gout, em_tensor **gin) {
  em_node *n = f->n;
  const em_tensor *g = gout[0];
  switch ((em_reduce_op)n->p.op) {
    case EM_REDUCE_SUM: gin[0] = unreduce(f, g, 1); break;
    case EM_REDUCE_NANSUM: {
      em_tensor *x = saved(f, 0);
      em_tensor *e = unreduce(f, g, 1);
      gin[0] = where(f, un(f, EM_OP_ISNAN, x), zeros_like(f, e), e);
      break;
    }
    case EM_REDUCE_MEAN:
      gin[0] = MULS(unreduce(f, g, 1), 1.0 / (double)reduced_count(n));
      break;
    case EM_REDUCE_NANMEAN: {  /* g / (count of non-NaN), 0 at the NaNs */
      em_tensor *x = saved(f, 0);
      em_tensor *nan = un(f, EM_OP_ISNAN, x);
      em_tensor *keepf = cast(f, un(f, EM_OP_LOGICAL_NOT, nan), g->dtype);
      int64_t dims[EM_MAX_DIMS];
      int nd = reduced_list(n, dims);
      em_tensor *cnt = sum_dims(f, keepf, nd, dims, 1);
      gin[0] = MUL(DIV(unreduce(f, g, 0), cnt), keepf);
      break;
    }
    case EM_REDUCE_PROD: {
      em_tensor *x = saved(f, 0);
      gin[0] = MUL(unreduce(f, g, 1), prod_others(f, x));
      break;
    }
    case EM_REDUCE_AMAX: case EM_REDUCE_AMIN: {
      /* split evenly between the elements equal to the extreme */
      em_tensor *x = saved(f, 0), *y = saved(f, EM_AG_SV_OUT(n, 0));
      em_tensor *eq = cast(f, bin(f, EM_OP_EQ, x, unreduce(f, y, 0)), g->dtype);
      int64_t dims[EM_MAX_DIMS];
      int nd = reduced_list(n, dims);
      em_tensor *cnt = sum_dims(f, eq, nd, dims, 1);
      gin[0] = DIV(MUL(eq, unreduce(f, g, 0)), cnt);
      break;
    }
    default:
      if (OK) f->st = em_fail(EM_E_RUNTIME, "backward: %s is not differentiable", n->name);
  }
}

static void matmul_formula(F *f, em_tensor *const *gout, em_tensor **gin) {
  const em_tensor *g = gout[0];
  /* each operand is saved (and read) only for the other's gradient; the
  ** shapes come from the node */
  int ad = f->n->in[0].ndim, bd = f->n->in[1].ndim;
  em_tensor *a = NEED(1) ? saved(f, 0) : NULL, *b = NEED(0) ? saved(f, 1) : NULL;
  if (!OK) return;
  if (ad == 1 && bd == 1) {  /* dot */
    if (NEED(0)) gin[0] = MUL(g, b);
    if (NEED(1)) gin[1] = MUL(g, a);
    return;
  }
  /* g: [..., m] -> [..., 1, m] when a was 1-d; [..., n] -> [..., n, 1] when b was */
  em_tensor *g2 = ad == 1 ? unsq(f, g, -2) : bd == 1 ? unsq(f, g, -1) : (em_tensor *)g;
  if (NEED(0)) {
    /* 1-d operands take a size-1 dim, which the gradient then loses */
    em_tensor *b2 = bd == 1 ? unsq(f, b, -1) : b;
    em_tensor *ga = mm(f, em_matmul, g2, mT(f, b2));
    gin[0] = ad == 1 ? sq(f, ga, -2) : ga;
  }
  if (NEED(1)) {
    em_tensor *a2 = ad == 1 ? unsq(f, a, 1) : a;
    em_tensor *gb = mm(f, em_matmul, mT(f, a2), g2);
    gin[1] = bd == 1 ? sq(f, gb, -1) : gb;
  }
}

static void linalg_formula(F *f, em_tensor *const *gout, em_tensor **gin) {
  em_node *n = f->n;
  const em_tensor *g = gout[0];
  /* complex: the products are holomorphic and bilinear, so each operand's
  ** gradient is g times the other operand conjugated (g @ b^H, a^H @ g):
  ** the saved operands are read conjugated */
  if (em_dtype_kindof(n->out[0].dtype) == EM_KIND_COMPLEX) f->conj = 1;
  switch (n->kind) {
    case EM_AG_MM: case EM_AG_BMM: {  /* each operand read for the other's gradient */
      if (NEED(0)) gin[0] = mm(f, n->kind == EM_AG_MM ? em_mm : em_bmm, g, mT(f, saved(f, 1)));
      if (NEED(1)) gin[1] = mm(f, n->kind == EM_AG_MM ? em_mm : em_bmm, mT(f, saved(f, 0)), g);
      break;
    }
    case EM_AG_MATMUL: matmul_formula(f, gout, gin); break;
    case EM_AG_ADDMM: {  /* beta * input + alpha * (m1 @ m2), any of mm/mv/bmm */
      double beta = n->p.d[0], alpha = n->p.d[1];
      em_tensor *a = NEED(2) ? saved(f, 1) : NULL, *b = NEED(1) ? saved(f, 2) : NULL;
      if (NEED(0)) gin[0] = beta == 1.0 ? (em_tensor *)g : MULS(g, beta);
      em_tensor *ga = alpha == 1.0 ? (em_tensor *)g : MULS(g, alpha);
      if (!OK) break;
      if (n->p.op == 1) {  /* outer: a [n], b [m], g [n, m] */
        if (NEED(1)) gin[1] = mm(f, em_mv, ga, b);
        if (NEED(2)) gin[2] = mm(f, em_mv, mT(f, ga), a);
      } else if (n->in[2].ndim == 1) {  /* addmv: m [n, k], v [k], g [n] */
        if (NEED(1)) gin[1] = mm(f, em_outer, ga, b);
        if (NEED(2)) gin[2] = mm(f, em_mv, mT(f, a), ga);
      } else {
        if (NEED(1)) gin[1] = mm(f, em_matmul, ga, mT(f, b));
        if (NEED(2)) gin[2] = mm(f, em_matmul, mT(f, a), ga);
      }
      break;
    }
    case EM_AG_LINEAR: {  /* x @ w^T + b; x read for w's gradient, w for x's */
      em_tensor *x = NEED(1) ? saved(f, 0) : NULL, *w = NEED(0) ? saved(f, 1) : NULL;
      if (!OK) break;
      if (NEED(0)) gin[0] = mm(f, em_matmul, g, w);
      if (NEED(1)) {
        if (n->in[0].ndim == 1) {
          gin[1] = mm(f, em_outer, g, x);
        } else {
          int64_t gs[2] = {-1, n->in[1].sizes[0]}, xs[2] = {-1, n->in[1].sizes[1]};
          gin[1] = mm(f, em_mm, mT(f, reshape(f, g, 2, gs)), reshape(f, x, 2, xs));
        }
      }
      if (n->nin > 2 && NEED(2)) gin[2] = (em_tensor *)g;  /* summed to [out] */
      break;
    }
    default: break;
  }
}


/* -- nn ops (ops/conv.c, ops/nn.c, ops/norm.c, ops/loss.c) ------------------------ */

/* An engine call's result into the arena: R(expr using &r). */
#define R(call) (OK ? keep(f, (call), &r_) : NULL)

static em_tensor *reduce_dims(F *f, em_reduce_op op, const em_tensor *t, int nd,
                              const int64_t *dims, int keepdim) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  return keep(f, em_reduce(op, t, nd, dims, keepdim, -1, &r), &r);
}
/* saved slot k, or NULL when nothing was saved there (an absent operand) */
static em_tensor *saved_opt(F *f, int k) {
  return f->n->saved[k].data ? saved(f, k) : NULL;
}
static em_tensor *full_like(F *f, const em_tensor *t, double v) {
  if (!t || !OK) return NULL;
  em_tensor *r = NULL;
  em_scalar s = {EM_SCALAR_FLOAT, 0, v};
  return keep(f, em_full(t->ndim, t->sizes, s, t->dtype, em_tensor_device(t), &r), &r);
}

/* Normalisation over dims (layer norm: the last ones; batch norm: all but
** the channel dim), written with engine ops so that it is recorded when
** create_graph is on: xhat = (x - mean) rstd, gh = g w;
** gx = rstd (gh - mean(gh) - xhat mean(gh xhat)). stats_given: eval-mode
** batch norm, whose mean and invstd (mu, is, broadcastable) are constants
** and gx = gh is. Returns xhat (for the weight's gradient). */
static em_tensor *norm_grad(F *f, const em_tensor *x, const em_tensor *g, const em_tensor *w,
                            int nd, const int64_t *dims, double eps, const em_tensor *mu,
                            const em_tensor *is, em_tensor **gx) {
  em_tensor *xhat, *rstd;
  if (mu) {
    rstd = (em_tensor *)is;
    xhat = MUL(SUB(x, mu), rstd);
  } else {
    em_tensor *mean = reduce_dims(f, EM_REDUCE_MEAN, x, nd, dims, 1);
    em_tensor *xc = SUB(x, mean);
    em_tensor *var = reduce_dims(f, EM_REDUCE_MEAN, MUL(xc, xc), nd, dims, 1);
    rstd = un(f, EM_OP_RSQRT, ADDS(var, eps));
    xhat = MUL(xc, rstd);
  }
  if (gx) {
    em_tensor *gh = w ? MUL(g, w) : (em_tensor *)g;
    if (mu) {
      *gx = MUL(gh, rstd);
    } else {
      em_tensor *m1 = reduce_dims(f, EM_REDUCE_MEAN, gh, nd, dims, 1);
      em_tensor *m2 = reduce_dims(f, EM_REDUCE_MEAN, MUL(gh, xhat), nd, dims, 1);
      *gx = MUL(rstd, SUB(SUB(gh, m1), MUL(xhat, m2)));
    }
  }
  return xhat;
}

static void nn_norm_formula(F *f, const em_tensor *g, em_tensor **gin) {
  em_node *n = f->n;
  int layer = n->p.op == EM_AG_NN_LAYERNORM, has_w = n->in[1].is_tensor;
  em_tensor *x = saved(f, 0), *w = has_w ? saved(f, 1) : NULL;
  em_tensor *mu = saved(f, EM_AG_SV_PRE(n, 0)), *rs = saved(f, EM_AG_SV_PRE(n, 1));
  if (!OK) return;
  int want_w = has_w && NEED(1), want_b = n->in[2].is_tensor && NEED(2);
  if (!em_grad_enabled()) {  /* the fused kernels */
    em_tensor *gx = NULL, *gw = NULL, *gb = NULL;
    em_status st = layer
        ? em_layer_norm_backward(g, x, (int)n->p.i[0], mu, rs, w, NEED(0) ? &gx : NULL,
                                 want_w ? &gw : NULL, want_b ? &gb : NULL)
        : em_batch_norm_backward(g, x, w, mu, rs, (int)n->p.i[0], NEED(0) ? &gx : NULL,
                                 want_w ? &gw : NULL, want_b ? &gb : NULL);
    gin[0] = keep(f, st, &gx);
    if (want_w) gin[1] = keep(f, st, &gw);
    if (want_b) gin[2] = keep(f, st, &gb);
    return;
  }
  /* recorded: the same formulas in engine ops */
  int nd = x->ndim, k = 0, nlead = 0;
  int64_t dims[EM_MAX_DIMS], lead[EM_MAX_DIMS], cshape[EM_MAX_DIMS];
  const em_tensor *wb = w, *mub = NULL, *isb = NULL;
  if (layer) {
    int nn = (int)n->p.i[0];
    for (int d = nd - nn; d < nd; d++) dims[k++] = d + 1;
    for (int d = 0; d < nd - nn; d++) lead[nlead++] = d + 1;
  } else {
    for (int d = 0; d < nd; d++) {
      cshape[d] = d == 1 ? x->sizes[1] : 1;
      if (d != 1) dims[k++] = d + 1;
    }
    nlead = k;
    memcpy(lead, dims, sizeof(int64_t) * (size_t)k);
    if (w) wb = reshape(f, w, nd, cshape);
    if (!n->p.i[0]) {  /* eval: the running statistics are constants */
      mub = reshape(f, mu, nd, cshape);
      isb = reshape(f, rs, nd, cshape);
    }
  }
  em_tensor *gx = NULL;
  em_tensor *xhat = norm_grad(f, x, g, wb, k, dims, n->p.d[0], mub, isb, NEED(0) ? &gx : NULL);
  if (NEED(0)) gin[0] = gx;
  if (want_w) {
    em_tensor *t = MUL(g, xhat);
    gin[1] = nlead ? reduce_dims(f, EM_REDUCE_SUM, t, nlead, lead, 0) : t;
  }
  if (want_b) gin[2] = nlead ? reduce_dims(f, EM_REDUCE_SUM, g, nlead, lead, 0) : (em_tensor *)g;
}

/* mse / l1 / binary_cross_entropy(_with_logits): the fused kernel, or (when
** recording) the derivative in engine ops; target's gradient in engine ops. */
static void nn_pointwise_formula(F *f, const em_tensor *g, em_tensor **gin) {
  em_node *n = f->n;
  int op = n->p.op;
  em_reduction red = (em_reduction)n->p.i[0];
  em_tensor *x = saved(f, 0), *t = saved(f, 1);
  em_tensor *w = saved_opt(f, EM_AG_SV_PRE(n, 0)), *pw = saved_opt(f, EM_AG_SV_PRE(n, 1));
  em_tensor *r_ = NULL;
  if (!OK) return;
  int fused = !em_grad_enabled();
  if (NEED(0) && fused) {
    switch (op) {
      case EM_AG_NN_MSE: gin[0] = R(em_mse_loss_backward(g, x, t, red, &r_)); break;
      case EM_AG_NN_L1: gin[0] = R(em_l1_loss_backward(g, x, t, red, &r_)); break;
      case EM_AG_NN_BCE:
        gin[0] = R(em_binary_cross_entropy_backward(g, x, t, w, red, &r_));
        break;
      default:
        gin[0] = R(em_binary_cross_entropy_with_logits_backward(g, x, t, w, pw, red, &r_));
    }
    if (op != EM_AG_NN_MSE && op != EM_AG_NN_L1 && !NEED(1)) return;
    if ((op == EM_AG_NN_MSE || op == EM_AG_NN_L1) && NEED(1)) {
      gin[1] = un(f, EM_OP_NEG, gin[0]);
      return;
    }
  }
  /* d loss_i / d x_i (dx) and / d t_i (dt) per element, in the broadcast
  ** shape; then times g and the mean's 1 / count */
  em_tensor *dx = NULL, *dt = NULL;
  switch (op) {
    case EM_AG_NN_MSE: dx = MULS(SUB(x, t), 2.0); dt = un(f, EM_OP_NEG, dx); break;
    case EM_AG_NN_L1: dx = un(f, EM_OP_SIGN, SUB(x, t)); dt = un(f, EM_OP_NEG, dx); break;
    case EM_AG_NN_BCE: {  /* w (x - t) / max(x (1 - x), 1e-12f); for t: -w logit(x)
                          ** (PyTorch 1.13's binary_cross_entropy_target_backward) */
      em_tensor *den = bins(f, EM_OP_MAXIMUM, MUL(x, RSUB(1.0, x)), (double)1e-12f);
      dx = DIV(SUB(x, t), den);
      if (w) dx = MUL(dx, w);
      if (NEED(1)) {
        dt = un(f, EM_OP_NEG, un(f, EM_OP_LOG, DIV(x, RSUB(1.0, x))));
        if (w) dt = MUL(dt, w);
        if (dt && em_tensor_numel(dt) < em_tensor_numel(dx)) dt = ADD(dt, zeros_like(f, dx));
      }
      break;
    }
    default: {  /* w ((1 - t) - lw (1 - sigmoid(x))), lw = (pw - 1) t + 1;
                ** for t: w ((pw - 1) softplus(-x) - x) */
      em_tensor *lw = pw ? ADDS(MUL(ADDS(pw, -1.0), t), 1.0) : NULL;
      em_tensor *oms = RSUB(1.0, un(f, EM_OP_SIGMOID, x));
      dx = SUB(RSUB(1.0, t), lw ? MUL(lw, oms) : oms);
      if (NEED(1)) {
        em_tensor *nx = un(f, EM_OP_NEG, x);
        dt = pw ? SUB(MUL(ADDS(pw, -1.0), un(f, EM_OP_SOFTPLUS, nx)), x) : nx;
        if (w) dt = MUL(dt, w);
        if (dt && em_tensor_numel(dt) < em_tensor_numel(dx)) dt = ADD(dt, zeros_like(f, dx));
      }
      if (w) dx = MUL(dx, w);
    }
  }
  if (!OK) return;
  double scale = red == EM_REDUCTION_MEAN && em_tensor_numel(dx) > 0
                     ? 1.0 / (double)em_tensor_numel(dx) : 1.0;
  em_tensor *gs = scale == 1.0 ? (em_tensor *)g : MULS(g, scale);
  if (NEED(0) && !gin[0]) gin[0] = MUL(dx, gs);
  if (NEED(1) && dt) gin[1] = MUL(dt, gs);
}

/* cross_entropy with probabilities: w (along the class dim cd) times g
** (given the class dim back for reduction none) over the mean's lane
** count, broadcastable to x */
static em_tensor *ce_prob_scale(F *f, const em_tensor *x, const em_tensor *w, const em_tensor *g,
                                em_reduction red, int64_t cd) {
  if (!OK) return NULL;
  int64_t C = x->ndim ? x->sizes[cd - 1] : 1, lanes = C ? em_tensor_numel(x) / C : 0;
  em_tensor *s = red == EM_REDUCTION_NONE ? unsq(f, g, cd) : (em_tensor *)g;
  if (red == EM_REDUCTION_MEAN && lanes > 0) s = MULS(s, 1.0 / (double)lanes);
  if (w) {
    int64_t ws[EM_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) ws[d] = d == cd - 1 ? x->sizes[d] : 1;
    s = MUL(s, reshape(f, w, x->ndim, ws));
  }
  return s;
}

/* a recurrent layer (ops/rnn.c): the fused reverse time loop, which is
** not itself recorded (create_graph through it is refused) */
static void nn_rnn_formula(F *f, em_tensor *const *gout, em_tensor **gin) {
  em_node *n = f->n;
  if (em_grad_enabled()) {
    f->st = em_fail(EM_E_RUNTIME, "%s: the backward of a recurrent layer is fused and not "
                    "differentiable (create_graph is not supported through it)", n->name);
    return;
  }
  const em_tensor *in[EM_RNN_NOPS] = {0};
  int want = 0;
  for (int i = 0; i < EM_RNN_NOPS && OK; i++) {
    if (!n->in[i].is_tensor) continue;
    in[i] = saved(f, i);
    if (NEED(i)) want |= 1 << i;
  }
  em_tensor *lens = saved_opt(f, EM_AG_SV_EXTRA(n)), *ws = saved(f, EM_AG_SV_PRE(n, 0));
  if (!OK) return;
  em_tensor *gr[EM_RNN_NOPS] = {0};
  em_status st = em_rnn_layer_backward((em_rnn_mode)n->p.i[0], in, lens, (int)n->p.i[1], ws,
                                       gout[0], gout[1], n->nout > 2 ? gout[2] : NULL, want, gr);
  for (int i = 0; i < EM_RNN_NOPS; i++)
    if (want >> i & 1) gin[i] = keep(f, st, &gr[i]);
}

static void nn_formula(F *f, em_tensor *const *gout, em_tensor **gin) {
  em_node *n = f->n;
  const em_tensor *g = gout[0];
  const int64_t *L = n->p.list;
  em_tensor *r_ = NULL;
  /* conv: stride, padding, dilation, groups; pool: kernel, stride, padding */
  int64_t s[2] = {L[0], L[1]}, pd[2] = {L[2], L[3]}, d[2] = {L[4], L[5]}, groups = L[6];
  int64_t k[2] = {L[0], L[1]}, ps[2] = {L[2], L[3]}, pp[2] = {L[4], L[5]};
  switch ((em_ag_nn_op)n->p.op) {
    case EM_AG_NN_CONV: {
      /* conv1d ran as a conv2d over a unit width: its tensors get it back */
      int is1d = (int)n->p.i[0];
      em_tensor *x = saved(f, 0), *w = saved(f, 1);
      const em_tensor *go = g;
      if (is1d) { x = unsq(f, x, 4); w = unsq(f, w, 4); go = unsq(f, g, 4); }
      if (!OK) break;
      if (NEED(0)) {
        em_tensor *gx = R(em_conv2d_backward_input(go, w, x->sizes, s, pd, d, groups, &r_));
        gin[0] = is1d ? sq(f, gx, 4) : gx;
      }
      if (NEED(1)) {
        em_tensor *gw = R(em_conv2d_backward_weight(go, x, w->sizes, s, pd, d, groups, &r_));
        gin[1] = is1d ? sq(f, gw, 4) : gw;
      }
      if (n->nin > 2 && n->in[2].is_tensor && NEED(2)) gin[2] = R(em_conv2d_backward_bias(go, &r_));
      break;
    }
    case EM_AG_NN_CONV_BWD_INPUT: {  /* gx = B_x(go, w): linear in each */
      em_tensor *go = saved(f, 0), *w = saved(f, 1);
      if (NEED(0)) gin[0] = R(em_conv2d(g, w, NULL, s, pd, d, groups, &r_));
      if (NEED(1)) gin[1] = R(em_conv2d_backward_weight(go, g, n->in[1].sizes, s, pd, d, groups, &r_));
      break;
    }
    case EM_AG_NN_CONV_BWD_WEIGHT: {  /* gw = B_w(go, x) */
      em_tensor *go = saved(f, 0), *x = saved(f, 1);
      if (NEED(0)) gin[0] = R(em_conv2d(x, g, NULL, s, pd, d, groups, &r_));
      if (NEED(1)) gin[1] = R(em_conv2d_backward_input(go, g, n->in[1].sizes, s, pd, d, groups, &r_));
      break;
    }
    case EM_AG_NN_MAXPOOL: {
      em_tensor *idx = saved(f, EM_AG_SV_EXTRA(n));
      gin[0] = R(em_max_pool2d_backward(g, idx, n->in[0].sizes, &r_));
      break;
    }
    case EM_AG_NN_MAXPOOL_BWD: {  /* gather g at the maxima, plane by plane */
      em_tensor *idx = saved(f, EM_AG_SV_EXTRA(n));
      const em_ag_tmeta *m = &n->in[0];
      int64_t gs[3] = {m->sizes[0], m->sizes[1], -1};
      em_tensor *gp = reshape(f, g, 3, gs), *ip = reshape(f, idx, 3, gs);
      em_tensor *v = gp && ip ? R(em_gather(gp, 3, ip, &r_)) : NULL;
      gin[0] = reshape(f, v, m->ndim, m->sizes);
      break;
    }
    case EM_AG_NN_AVGPOOL:
      gin[0] = R(em_avg_pool2d_backward(g, n->in[0].sizes, k, ps, pp, (int)n->p.i[0],
                                        (int)n->p.i[1], n->p.i[2], &r_));
      break;
    case EM_AG_NN_AVGPOOL_BWD:  /* the adjoint of the backward is the forward */
      gin[0] = R(em_avg_pool2d(g, k, ps, pp, (int)n->p.i[0], (int)n->p.i[1], n->p.i[2], &r_));
      break;
    case EM_AG_NN_EMBEDDING: {
      em_tensor *ids = saved(f, EM_AG_SV_EXTRA(n));
      gin[0] = R(em_embedding_backward(g, ids, n->in[0].sizes[0], n->p.i[0], &r_));
      break;
    }
    case EM_AG_NN_EMBEDDING_BWD: {  /* rows of g at the ids (0 at padding_idx) */
      em_tensor *ids = saved(f, EM_AG_SV_EXTRA(n));
      em_tensor *rows = R(em_embedding(g, ids, n->p.i[0], &r_));
      if (n->p.i[0] >= 1 && rows) {
        em_tensor *keepm = cast(f, bins(f, EM_OP_NE, ids, (double)n->p.i[0]), g->dtype);
        rows = MUL(rows, unsq(f, keepm, -1));
      }
      gin[0] = rows;
      break;
    }
    case EM_AG_NN_LAYERNORM: case EM_AG_NN_BATCHNORM: nn_norm_formula(f, g, gin); break;
    case EM_AG_NN_RNN: nn_rnn_formula(f, gout, gin); break;
    case EM_AG_NN_DROPOUT: gin[0] = MUL(g, saved(f, EM_AG_SV_EXTRA(n))); break;
    case EM_AG_NN_SDPA: {  /* the fused backward (ops/attention.c) */
      if (em_grad_enabled()) {
        if (f->st == EM_OK)
          f->st = em_fail(EM_E_RUNTIME, "scaled_dot_product_attention: the fused kernel's "
                          "backward is not differentiable (create_graph is not supported)");
        break;
      }
      em_tensor *q = saved(f, 0), *k = saved(f, 1), *v = saved(f, 2);
      em_tensor *o = saved(f, EM_AG_SV_OUT(n, 0)), *lse = saved(f, EM_AG_SV_PRE(n, 0));
      em_tensor *m = n->p.i[3] ? saved(f, EM_AG_SV_EXTRA(n)) : NULL;
      if (!OK) break;
      em_tensor *gq = NULL, *gk = NULL, *gv = NULL;
      em_status st = em_scaled_dot_product_attention_backward(
          g, q, k, v, o, lse, m, n->p.d[0], (int)n->p.i[0], n->p.d[1], (uint64_t)n->p.i[1],
          (uint64_t)n->p.i[2], NEED(0) ? &gq : NULL, NEED(1) ? &gk : NULL, NEED(2) ? &gv : NULL);
      if (NEED(0)) gin[0] = keep(f, st, &gq);
      if (NEED(1)) gin[1] = keep(f, st, &gk);
      if (NEED(2)) gin[2] = keep(f, st, &gv);
      if (st != EM_OK && f->st == EM_OK) f->st = st;
      break;
    }
    case EM_AG_NN_NLL: {
      em_tensor *x = saved(f, 0), *t = saved(f, EM_AG_SV_EXTRA(n));
      em_tensor *w = saved_opt(f, EM_AG_SV_PRE(n, 0)), *tw = saved_opt(f, EM_AG_SV_PRE(n, 1));
      gin[0] = R(em_nll_loss_backward(g, x, t, w, (em_reduction)n->p.i[0], n->p.i[1], tw, &r_));
      break;
    }
    case EM_AG_NN_NLL_BWD: {  /* the backward is linear in g; its adjoint is the loss */
      em_tensor *t = saved(f, EM_AG_SV_EXTRA(n)), *w = saved_opt(f, EM_AG_SV_PRE(n, 0));
      gin[0] = R(em_nll_loss(g, t, w, (em_reduction)n->p.i[0], n->p.i[1], &r_, NULL));
      break;
    }
    case EM_AG_NN_CE: {
      em_tensor *x = saved(f, 0), *t = saved(f, EM_AG_SV_EXTRA(n));
      em_tensor *w = saved_opt(f, EM_AG_SV_PRE(n, 0));
      em_reduction red = (em_reduction)n->p.i[0];
      int64_t cd = x ? (x->ndim == 1 ? 1 : 2) : 1;
      if (!OK) break;
      if (n->nin > 1 && NEED(1)) {
        /* probabilities t: loss = -sum_c w_c (t_c (1 - ls) + ls / C) logp_c
        ** per lane, the mean over lanes; d/dt_c = -(1 - ls) w_c logp_c */
        em_tensor *gt = MULS(R(em_softmax(x, cd, 1, -1, &r_)), -(1.0 - n->p.d[0]));
        gin[1] = MUL(gt, ce_prob_scale(f, x, w, g, red, cd));
      }
      if (!NEED(0)) break;
      if (!em_grad_enabled()) {
        gin[0] = R(em_cross_entropy_backward(g, x, t, w, red, n->p.i[1], n->p.d[0], &r_));
        break;
      }
      if (n->nin > 1) {  /* probabilities: q = -(t (1 - ls) + ls / C) w g / lanes */
        int64_t C = x->ndim ? x->sizes[cd - 1] : 1;
        em_tensor *ts = ADDS(MULS(t, 1.0 - n->p.d[0]), n->p.d[0] / (double)C);
        em_tensor *q = MUL(un(f, EM_OP_NEG, ts), ce_prob_scale(f, x, w, g, red, cd));
        em_tensor *logp = R(em_softmax(x, cd, 1, -1, &r_));
        gin[0] = SUB(q, MUL(un(f, EM_OP_EXP, logp), sum_dim(f, q, cd)));
        break;
      }
      /* recorded: q = d loss / d logp (constant coefficients times g), then
      ** log_softmax's backward q - exp(logp) sum(q) in engine ops */
      em_tensor *ones = full_like(f, g, 1.0);
      em_tensor *coef = ones ? R(em_nn_cross_entropy_logp_grad(ones, x, t, w, red, n->p.i[1],
                                                                n->p.d[0], &r_)) : NULL;
      em_tensor *q = MUL(coef, red == EM_REDUCTION_NONE ? unsq(f, g, cd) : (em_tensor *)g);
      em_tensor *logp = R(em_softmax(x, cd, 1, -1, &r_));
      gin[0] = SUB(q, MUL(un(f, EM_OP_EXP, logp), sum_dim(f, q, cd)));
      break;
    }
    case EM_AG_NN_MSE: case EM_AG_NN_L1: case EM_AG_NN_BCE: case EM_AG_NN_BCEL:
      nn_pointwise_formula(f, g, gin);
      break;
  }
}
#undef R

/* The complex ops (ops/complex.c, fft.c). */
static void complex_formula(F *f, em_tensor *const *gout, em_tensor **gin) {
  em_node *n = f->n;
  const em_tensor *g = gout[0];
  em_tensor *r = NULL;
  switch ((em_ag_cx_op)n->p.op) {
    case EM_AG_CX_CONJ: gin[0] = conj_of(f, g); break;
    case EM_AG_CX_ANGLE: {  /* g i z / |z|^2, 0 at z = 0 */
      em_tensor *z = saved(f, 0);
      em_tensor *re = part(f, z, 1), *im = part(f, z, 2);
      em_tensor *a2 = ADD(MUL(re, re), MUL(im, im));
      em_tensor *den = where(f, bins(f, EM_OP_EQ, a2, 0.0), full_like(f, a2, 1.0), a2);
      em_tensor *iz = mkcplx(f, un(f, EM_OP_NEG, im), re);
      gin[0] = MUL(iz, DIV(g, den));
      break;
    }
    case EM_AG_CX_AS_REAL: {
      em_tensor *c = NULL;
      if (OK) c = keep(f, em_contiguous(g, &c), &c);
      if (c && OK) gin[0] = keep(f, em_view_as_complex(c, &r), &r);
      break;
    }
    case EM_AG_CX_AS_COMPLEX:
      if (OK) gin[0] = keep(f, em_view_as_real(g, &r), &r);
      break;
    case EM_AG_CX_NEW:
      if (NEED(0)) gin[0] = part(f, g, 1);
      if (NEED(1)) gin[1] = part(f, g, 2);
      break;
    case EM_AG_CX_FFT:
      if (OK) gin[0] = keep(f, em_fft_c2c(g, n->p.i[0], !n->p.i[1], n->p.d[0], &r), &r);
      break;
  }
}

em_status em_ag_apply(em_node *n, em_tensor *const *gout, em_tensor **gin) {
  F fs;
  memset(&fs, 0, sizeof fs);
  fs.n = n;
  F *f = &fs;
  const em_tensor *g = gout[0];
  switch (n->kind) {
    case EM_AG_EW: ew_formula(f, gout, gin); break;
    case EM_AG_IDENTITY: gin[0] = (em_tensor *)g; break;
    case EM_AG_GATHER:
      gin[0] = put(f, g, saved(f, EM_AG_SV_EXTRA(n)), &n->in[0]);
      break;
    case EM_AG_RESHAPE: gin[0] = reshape(f, g, n->in[0].ndim, n->in[0].sizes); break;
    case EM_AG_PUTPOS: gin[0] = take(f, g, saved(f, EM_AG_SV_EXTRA(n))); break;
    case EM_AG_STRIDED: gin[0] = strided_put(f, g, n); break;
    case EM_AG_REDUCE: reduce_formula(f, gout, gin); break;
    case EM_AG_VAR: {  /* var: 2 (x - mean) / (N - c); std: (x - mean) / ((N - c) y) */
      em_tensor *x = saved(f, 0);
      int64_t dims[EM_MAX_DIMS];
      int nd = reduced_list(n, dims);
      em_tensor *mean = NULL;
      if (OK) mean = keep(f, em_reduce(EM_REDUCE_MEAN, x, nd, dims, 1, -1, &mean), &mean);
      double dof = (double)reduced_count(n) - n->p.d[0];
      em_tensor *dx = SUB(x, mean);
      if (n->p.i[1]) {  /* 0 where std is 0 (a constant lane), as PyTorch masks it */
        em_tensor *y = unreduce(f, saved(f, EM_AG_SV_OUT(n, 0)), 0);
        em_tensor *r = DIV(MUL(unreduce(f, g, 0), MULS(dx, 1.0 / dof)), y);
        gin[0] = where(f, bins(f, EM_OP_EQ, y, 0.0), zeros_like(f, r), r);
      } else {
        gin[0] = MUL(unreduce(f, g, 0), MULS(dx, 2.0 / dof));
      }
      break;
    }
    case EM_AG_NORM: {
      double p = n->p.d[0];
      em_tensor *x = saved(f, 0), *y = unreduce(f, saved(f, EM_AG_SV_OUT(n, 0)), 0);
      em_tensor *ge = unreduce(f, g, 0);
      if (p == 0.0) {  /* no gradient (PyTorch 1.13's undefined one: .grad stays nil) */
        gin[0] = NULL;
      } else if (p == 1.0) {
        gin[0] = MUL(ge, un(f, EM_OP_SIGN, x));
      } else if (p == 2.0) {  /* x / y, 0 where y == 0 */
        em_tensor *r = MUL(ge, DIV(x, y));
        gin[0] = where(f, bins(f, EM_OP_EQ, y, 0.0), zeros_like(f, r), r);
      } else if (isinf(p)) {  /* like amax of |x|: split between the ties */
        em_tensor *ax = un(f, EM_OP_ABS, x);
        em_tensor *eq = cast(f, bin(f, EM_OP_EQ, ax, y), x->dtype);
        int64_t dims[EM_MAX_DIMS];
        int nd = reduced_list(n, dims);
        em_tensor *cnt = sum_dims(f, eq, nd, dims, 1);
        gin[0] = DIV(MUL(MUL(ge, un(f, EM_OP_SIGN, x)), eq), cnt);
      } else {  /* x |x|^(p-2) / y^(p-1); 0 where x or y is 0 (0 * inf for p < 2) */
        em_tensor *ax = un(f, EM_OP_ABS, x);
        em_tensor *num = MUL(x, bins(f, EM_OP_POW, ax, p - 2.0));
        em_tensor *r = MUL(ge, DIV(num, bins(f, EM_OP_POW, y, p - 1.0)));
        em_tensor *zero = bin(f, EM_OP_LOGICAL_OR, bins(f, EM_OP_EQ, y, 0.0), bins(f, EM_OP_EQ, x, 0.0));
        gin[0] = where(f, zero, zeros_like(f, r), r);
      }
      break;
    }
    case EM_AG_LOGSUMEXP: {
      em_tensor *x = saved(f, 0), *y = unreduce(f, saved(f, EM_AG_SV_OUT(n, 0)), 0);
      gin[0] = MUL(unreduce(f, g, 0), un(f, EM_OP_EXP, SUB(x, y)));
      break;
    }
    case EM_AG_MAXDIM:  /* to the position the extreme came from */
      gin[0] = put(f, g, saved(f, EM_AG_SV_EXTRA(n)), &n->in[0]);
      break;
    case EM_AG_SOFTMAX: {
      em_tensor *y = saved(f, EM_AG_SV_OUT(n, 0));
      int64_t dim = n->p.i[0];
      if (n->p.i[1])  /* log_softmax: g - exp(y) sum(g) */
        gin[0] = SUB(g, MUL(un(f, EM_OP_EXP, y), sum_dim(f, g, dim)));
      else  /* y (g - sum(g y)) */
        gin[0] = MUL(y, SUB(g, sum_dim(f, MUL(g, y), dim)));
      break;
    }
    case EM_AG_CUMULATIVE: {
      int64_t dim = n->p.i[0];
      if (n->in[0].ndim == 0) { gin[0] = (em_tensor *)g; break; }
      if (!n->p.i[1]) {  /* cumsum: reversed cumsum of g */
        gin[0] = flip(f, cum(f, flip(f, g, dim), dim, 0), dim);
      } else {
        /* cumprod. Before a lane's first zero k: revcumsum(g y) / x; at k:
        ** revcumsum(g y') with y' the cumprod of x whose x_k is 1 (the
        ** products that skip x_k); after k: 0 (every product holds x_k)
        ** (PyTorch's cumprod_backward) */
        em_tensor *x = saved(f, 0), *y = saved(f, EM_AG_SV_OUT(n, 0));
        if (em_grad_enabled() && x && OK) {
          gin[0] = cumprod_grad_graph(f, x, g, dim);
          if (gin[0] || !OK) break;
        }
        em_tensor *zf = maskf(f, EM_OP_EQ, TS(x), SC(0.0), x);  /* 1 at zeros */
        em_tensor *seen = cum(f, zf, dim, 0);                  /* zeros so far */
        em_tensor *first = bin(f, EM_OP_LOGICAL_AND, zf, bins(f, EM_OP_EQ, seen, 1.0));
        em_tensor *before = bins(f, EM_OP_EQ, seen, 0.0);
        em_tensor *xs = ADD(x, zf);                             /* zeros made 1 */
        em_tensor *yk = cum(f, where(f, first, full_like(f, x, 1.0), x), dim, 1);
        em_tensor *r1 = DIV(flip(f, cum(f, flip(f, MUL(g, y), dim), dim, 0), dim), xs);
        em_tensor *r2 = flip(f, cum(f, flip(f, MUL(g, yk), dim), dim, 0), dim);
        gin[0] = where(f, before, r1, where(f, first, r2, zeros_like(f, r1)));
      }
      break;
    }
    case EM_AG_MM: case EM_AG_BMM: case EM_AG_MATMUL: case EM_AG_ADDMM: case EM_AG_LINEAR:
      linalg_formula(f, gout, gin);
      break;
    case EM_AG_CAT: {
      /* pieces of g along dim; an input's piece has its element count
      ** (inputs of hstack/vstack/dstack took extra dims: reshaped back) */
      int64_t dim = n->p.i[0], at = 1;
      int ax = (int)(dim < 0 ? dim + g->ndim : dim - 1);
      int64_t other = 1;
      for (int d = 0; d < g->ndim; d++) if (d != ax) other *= g->sizes[d];
      for (int i = 0; i < n->nin && OK && other > 0; i++) {
        const em_ag_tmeta *m = &n->in[i];
        int64_t numel = 1;
        for (int d = 0; d < m->ndim; d++) numel *= m->sizes[d];
        int64_t len = numel / other;
        if (NEED(i)) gin[i] = reshape(f, narrow(f, g, dim, at, len), m->ndim, m->sizes);
        at += len;
      }
      break;
    }
    case EM_AG_STACK:
      for (int i = 0; i < n->nin && OK; i++)
        if (NEED(i)) {
          em_tensor *r = NULL;
          gin[i] = keep(f, em_select(g, n->p.i[0], i + 1, &r), &r);
        }
      break;
    case EM_AG_WHERE: {  /* inputs: cond, a, b */
      em_tensor *c = saved(f, 0);
      em_tensor *z = zeros_like(f, g);
      if (NEED(1)) gin[1] = where(f, c, (em_tensor *)g, z);
      if (NEED(2)) gin[2] = where(f, c, z, (em_tensor *)g);
      break;
    }
    case EM_AG_INDEXPUT: {
      /* inputs: self, then the values written (if any); extra: the
      ** positions written. self keeps the gradient where it was not
      ** overwritten (all of it when the op accumulates); the values get the
      ** gradient of the places they went to (times alpha). */
      em_tensor *pos = saved(f, EM_AG_SV_EXTRA(n));
      if (NEED(0)) {
        if (n->p.i[0]) {
          gin[0] = (em_tensor *)g;
        } else if (OK) {
          em_tensor *ones = NULL;
          em_scalar one = {EM_SCALAR_FLOAT, 0, 1.0};
          em_ag_tmeta mv = n->in[0];
          if (cplx(g)) mv.dtype = value_of(g->dtype);  /* a real mask (no complex where) */
          ones = keep(f, em_full(pos->ndim, pos->sizes, one, mv.dtype, em_tensor_device(g), &ones), &ones);
          em_tensor *hit = bins(f, EM_OP_GT, put(f, ones, pos, &mv), 0.0);
          if (cplx(g))
            gin[0] = MUL(g, cast(f, un(f, EM_OP_LOGICAL_NOT, hit), mv.dtype));
          else
            gin[0] = where(f, hit, zeros_like(f, g), (em_tensor *)g);
        }
      }
      if (n->nin > 1 && NEED(1)) {
        double alpha = n->p.d[0] == 0.0 ? 1.0 : n->p.d[0];
        em_tensor *t = take(f, g, pos);
        if (n->p.i[1] && OK) {
          /* masked_scatter_: the source's first count elements (row-major)
          ** were written, in order; the rest get 0 */
          const em_ag_tmeta *m = &n->in[1];
          int64_t total = 1, count = em_tensor_numel(t);
          for (int d = 0; d < m->ndim; d++) total *= m->sizes[d];
          em_tensor *flat = reshape(f, t, 1, &count);
          if (total > count) {
            int64_t rest = total - count;
            em_tensor *z = NULL;
            if (OK) z = keep(f, em_zeros(1, &rest, g->dtype, em_tensor_device(g), &z), &z);
            const em_tensor *parts[2] = {flat, z};
            em_tensor *c = NULL;
            if (OK) flat = keep(f, em_cat(2, parts, 1, &c), &c);
          }
          t = reshape(f, flat, m->ndim, m->sizes);
        }
        gin[1] = alpha == 1.0 ? t : MULS(t, alpha);
      }
      break;
    }
    case EM_AG_OVERWRITE:  /* dst's old values are gone; src gets g (cast, summed) */
      if (NEED(0)) gin[0] = zeros_like(f, g);
      if (n->nin > 1 && NEED(1)) gin[1] = (em_tensor *)g;
      break;
    case EM_AG_COPYSLICES: {
      /* g is the base's; the view's part of it goes through the in-place
      ** op's node, whose gradient for its first input (the view's old
      ** values) replaces that part of g. Written with recorded ops (take,
      ** put, where), so it can be differentiated again. */
      em_node *inner = n->inner;
      em_tensor *pos = saved(f, EM_AG_SV_EXTRA(n));
      em_tensor *gv = reshape(f, take(f, g, pos), inner->out[0].ndim, inner->out[0].sizes);
      if (!OK) break;
      em_tensor **ig = calloc((size_t)inner->nin + 1, sizeof *ig);
      if (!ig) { f->st = em_fail(EM_E_NOMEM, "backward: out of memory"); break; }
      em_tensor *gvs[1] = {gv};
      em_status st = em_ag_apply(inner, gvs, ig);
      for (int i = 0; i < inner->nin; i++) {  /* into the arena */
        em_tensor *t = ig[i];
        ig[i] = NULL;
        if (t) t = keep(f, st, &t);
        if (i > 0 && i < n->nin) gin[i] = t;
        else if (i == 0) ig[0] = t;
      }
      em_tensor *v0 = ig[0];
      free(ig);
      if (st != EM_OK) { if (OK) f->st = st; break; }
      if (NEED(0)) {
        em_scalar one = {EM_SCALAR_FLOAT, 0, 1.0};
        em_tensor *ones = NULL;
        if (OK) ones = keep(f, em_full(pos->ndim, pos->sizes, one, g->dtype, em_tensor_device(g), &ones), &ones);
        em_tensor *hit = bins(f, EM_OP_NE, put(f, ones, pos, &n->in[0]), 0.0); /* NE: also complex */
        em_tensor *part = v0 ? put(f, cast(f, v0, g->dtype), pos, &n->in[0]) : zeros_like(f, g);
        gin[0] = where(f, hit, part, (em_tensor *)g);
      }
      break;
    }
    case EM_AG_CUSTOM: {  /* the host's formula, with the saved tensors unpacked */
      em_tensor **sv = calloc((size_t)n->nsaved + 1, sizeof *sv);
      if (!sv) { f->st = em_fail(EM_E_NOMEM, "backward: out of memory"); break; }
      for (int j = 0; j < n->nsaved && OK; j++)
        if (n->saved[j].data) sv[j] = saved(f, j);
      em_tensor **gi = calloc((size_t)n->nin + 1, sizeof *gi);
      if (!gi) f->st = em_fail(EM_E_NOMEM, "backward: out of memory");
      if (OK) {
        em_status st = n->custom_fn(n->custom_ctx, n->nsaved, sv, n->nout, gout, n->nin, gi);
        if (st != EM_OK) f->st = st;
      }
      for (int i = 0; gi && i < n->nin; i++) {  /* into the arena */
        if (!gi[i]) continue;
        em_tensor *t = gi[i];
        if (OK) gin[i] = keep(f, EM_OK, &t);
        else em_tensor_release(t);
      }
      free(gi);
      free(sv);
      break;
    }
    case EM_AG_NN: nn_formula(f, gout, gin); break;
    case EM_AG_COMPLEX: complex_formula(f, gout, gin); break;
    default:
      if (OK) f->st = em_fail(EM_E_RUNTIME, "backward: no formula for %s", n->name);
  }
  /* the results outlive the arena */
  for (int i = 0; i < n->nin; i++) {
    if (f->st != EM_OK) gin[i] = NULL;
    else em_tensor_retain(gin[i]);
  }
  for (int k = 0; k < f->ntmp; k++) em_tensor_release(f->tmp[k]);
  free(f->tmp);
  return f->st;
}
