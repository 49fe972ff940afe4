/*
** ops/linalg.c -- matmul and its family (mm, bmm, mv, dot, outer, addmm,
** addmv, baddbmm, linear) on one batched GEMM (core/kern_linalg.h).
**
** Guarantees:
** - float32/float64 multiply in their own type. A matrix operand is handed
**   to the kernel in place when em_gemm_layout takes its last two strides
**   (one of them 1, or the dim has size 1); only otherwise is it copied to
**   contiguous memory.
** - float16/bfloat16 are converted to float32, multiplied with float32
**   accumulation, and rounded once to the dtype at the end.
** - complex64/complex128 multiply in their own type (cgemm/zgemm); there
**   is no lazy conjugate bit, so vdot (lua/ember/linalg.lua) conjugates
**   its first operand with em_conj first.
** - Integer dtypes multiply in int64; results wrap modulo 2^bits of the
**   dtype (as the dtype's own arithmetic would). bool is rejected.
** - Batch dims broadcast with PyTorch's rule; the batch is the iterator
**   over the batch dims, one GEMM per batch element.
** - Operands must share dtype and device; results are made on that
**   device; messages use PyTorch's wording.
*/
#include "core/kern_linalg.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"
#include "ops/autocast.h"

/* ember's alias names (T.float, T.double, ...) in the dtype message */
static const char *alias_name(em_dtype dt) {
  static const char *const names[EM_NUM_DTYPES] = {
      "bool", "byte", "char", "short", "int", "long", "half", "bfloat16", "float", "double",
      "cfloat", "cdouble"};
  return names[dt];
}

static em_status check_device(const char *op, const em_tensor *a, const em_tensor *b) {
  return em_same_device_check(op, a->storage->device, b->storage->device);
}

static em_status check_pair(const char *op, const em_tensor *a, const em_tensor *b) {
  em_status st = check_device(op, a, b);
  const em_kernels *k;
  if (st == EM_OK) st = em_kernels_check(op, a->storage->device, &k);
  if (st != EM_OK) return st;
  if (a->dtype != b->dtype)
    return em_fail(EM_E_TYPE, "%s: expected m1 and m2 to have the same dtype, but got: %s != %s",
                   op, alias_name(a->dtype), alias_name(b->dtype));
  if (a->dtype == EM_BOOL)
    return em_fail(EM_E_TYPE, "%s: not implemented for 'bool' tensors", op);
  return EM_OK;
}

static em_status check_input(const char *op, const em_tensor *input, const em_tensor *m) {
  em_status st = check_device(op, input, m);
  if (st != EM_OK) return st;
  if (input->dtype != m->dtype)
    return em_fail(EM_E_TYPE, "%s: self and mat2 must have the same dtype, but got: %s != %s",
                   op, alias_name(input->dtype), alias_name(m->dtype));
  return EM_OK;
}

/* Can the matrix of t's last two dims go to the GEMM as it is? */
static bool last2_ok(const em_tensor *t) {
  bool tr;
  int64_t ld;
  int n = t->ndim;
  return em_gemm_layout(t->sizes[n - 2], t->sizes[n - 1], t->strides[n - 2],
                        t->strides[n - 1], &tr, &ld);
}

/* -- The core ---------------------------------------------------------------------
** a: [batch_a..., m, k], b: [batch_b..., k, n] (both at least 2-D, same
** dtype, checked by the caller); input (may be NULL) broadcasts to the
** result [batch..., m, n]. */

static void batch_view(em_tensor *v, const em_tensor *t, int keep) {
  em_stack_header(v, t, keep, t->sizes, t->strides, t->offset);
}

/* dst (or NULL): a contiguous tensor of the result's shape and compute
** dtype, sharing no storage with the operands, that C is written into in
** place of a fresh one (em_matmul_into); *out is then dst, retained. */
static em_status gemm_core_into(const char *op, const em_tensor *a, const em_tensor *b,
                                const em_tensor *input, double beta, double alpha,
                                em_tensor *dst, em_tensor **out) {
  em_dtype dt = a->dtype;
  /* float16/bfloat16: cuBLAS multiplies them as they are (accumulating in
  ** float32, cuda/blas.c); elsewhere they are multiplied in float32 and
  ** rounded once, the same result up to the order of the sums */
  const int half = dt == EM_FLOAT16 || dt == EM_BFLOAT16;
  em_dtype cdt = em_dtype_kindof(dt) == EM_KIND_INT ? EM_INT64
                 : (half && a->storage->device.type != EM_CUDA) ? EM_FLOAT32 : dt;
  int na = a->ndim, nb = b->ndim;
  int64_t m = a->sizes[na - 2], k = a->sizes[na - 1], n = b->sizes[nb - 1];
  if (b->sizes[nb - 2] != k) {
    char s1[EM_SHAPE_BUF], s2[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: shapes %s and %s cannot be multiplied: the first has "
                   "%lld columns, the second %lld rows", op,
                   em_fmt_shape(s1, sizeof s1, na, a->sizes),
                   em_fmt_shape(s2, sizeof s2, nb, b->sizes), (long long)k,
                   (long long)b->sizes[nb - 2]);
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return em_fail(EM_E_VALUE, "%s: matrix dims beyond %d are not supported", op, INT_MAX);
  /* batch shape */
  em_tensor va, vb;
  batch_view(&va, a, na - 2);
  batch_view(&vb, b, nb - 2);
  const em_tensor *bs[2] = {&va, &vb};
  int nbd;
  int64_t shape[EM_MAX_DIMS];
  em_status st = em_broadcast_shapes(op, 2, bs, &nbd, shape);
  if (st != EM_OK) return st;
  if (nbd + 2 > EM_MAX_DIMS) return em_fail(EM_E_VALUE, "%s: too many dims", op);
  shape[nbd] = m;
  shape[nbd + 1] = n;
  if (input) {
    /* the input must broadcast to the result even when beta = 0 skips it */
    bool ok = input->ndim <= nbd + 2;
    for (int i = 0; ok && i < input->ndim; i++) {
      int64_t s = input->sizes[input->ndim - 1 - i], r = shape[nbd + 1 - i];
      ok = s == r || s == 1;
    }
    if (!ok) {
      char s1[EM_SHAPE_BUF], s2[EM_SHAPE_BUF];
      return em_fail(EM_E_VALUE, "%s: %s of shape %s cannot be broadcast to the result "
                     "shape %s", op, strcmp(op, "linear") == 0 ? "bias" : "input", em_fmt_shape(s1, sizeof s1, input->ndim, input->sizes),
                     em_fmt_shape(s2, sizeof s2, nbd + 2, shape));
    }
  }
  /* Operands in the compute dtype, in layouts the GEMM takes. em_to/
  ** em_contiguous may hand back the operand itself (retained): the callers'
  ** stack views carry a copied refcount >= 1, so those retain/release pairs
  ** balance and never free. */
  em_device dev = a->storage->device;
  em_tensor *ca = NULL, *cb = NULL, *co = NULL, *res = NULL;
  st = em_to(a, cdt, dev, 0, &ca);
  if (st == EM_OK) st = em_to(b, cdt, dev, 0, &cb);
  if (st == EM_OK && !last2_ok(ca)) {
    em_tensor *t; st = em_contiguous(ca, &t);
    if (st == EM_OK) { em_tensor_release(ca); ca = t; }
  }
  if (st == EM_OK && !last2_ok(cb)) {
    em_tensor *t; st = em_contiguous(cb, &t);
    if (st == EM_OK) { em_tensor_release(cb); cb = t; }
  }
  /* C starts as the input, or is written without being read (beta = 0;
  ** with k == 0 the kernel writes zeros) */
  bool use_input = input && beta != 0;
  if (st == EM_OK && dst) {
    em_tensor_retain(dst);
    co = dst;
  } else if (st == EM_OK) {
    st = em_empty(nbd + 2, shape, cdt, dev, &co);
  }
  if (st == EM_OK && use_input) st = em_copy_(co, input);
  if (st == EM_OK && m > 0 && n > 0 && em_tensor_numel(co) > 0) {
    em_gemm g;
    g.m = m; g.n = n; g.k = k;
    g.as0 = ca->strides[na - 2]; g.as1 = ca->strides[na - 1];
    g.bs0 = cb->strides[nb - 2]; g.bs1 = cb->strides[nb - 1];
    g.alpha = alpha;
    g.beta = use_input ? beta : 0;
    em_tensor vo;
    batch_view(&va, ca, na - 2);
    batch_view(&vb, cb, nb - 2);
    batch_view(&vo, co, nbd);
    em_iter it;
    const em_tensor *ops[3] = {&vo, &va, &vb};
    int was = em_iter_allow_complex(1); /* the gemm kernel takes complex64/128 */
    st = em_iter_build(&it, op, 3, ops, nbd, shape, false);
    em_iter_allow_complex(was);
    if (st == EM_OK) em_kernels_for(dev)->linalg->gemm(&it, cdt, &g);
  }
  if (st == EM_OK) st = em_to(co, dt, dev, 0, &res);
  em_tensor_release(ca);
  em_tensor_release(cb);
  em_tensor_release(co);
  if (st != EM_OK) return st;
  *out = res;
  return EM_OK;
}

static em_status gemm_core(const char *op, const em_tensor *a, const em_tensor *b,
                           const em_tensor *input, double beta, double alpha,
                           em_tensor **out) {
  return gemm_core_into(op, a, b, input, beta, alpha, NULL, out);
}

/* A contiguous result reshaped to nd dims (same numel): a new view. */
static em_status reshape_result(em_tensor **t, int nd, const int64_t *sizes) {
  int64_t strides[EM_MAX_DIMS];
  em_contiguous_strides(nd, sizes, strides);
  em_tensor *v;
  em_status st = em_as_strided(*t, nd, sizes, strides, (*t)->offset, &v);
  em_tensor_release(*t);
  *t = st == EM_OK ? v : NULL;
  return st;
}

/* stack views: a vector as a row [1, k] or a column [k, 1] */
static void as_row(em_tensor *v, const em_tensor *t) {
  memcpy(v, t, sizeof *v);
  v->ndim = 2;
  v->sizes[0] = 1; v->strides[0] = t->sizes[0] > 0 ? t->sizes[0] * t->strides[0] : 1;
  v->sizes[1] = t->sizes[0]; v->strides[1] = t->strides[0];
}
static void as_col(em_tensor *v, const em_tensor *t) {
  memcpy(v, t, sizeof *v);
  v->ndim = 2;
  v->sizes[0] = t->sizes[0]; v->strides[0] = t->strides[0];
  v->sizes[1] = 1; v->strides[1] = 1;
}
/* prepend/append a size-1 dim to a batched operand */
static void unsq(em_tensor *v, const em_tensor *t, int at) {
  memcpy(v, t, sizeof *v);
  v->ndim = t->ndim + 1;
  for (int i = t->ndim; i > at; i--) { v->sizes[i] = t->sizes[i - 1]; v->strides[i] = t->strides[i - 1]; }
  v->sizes[at] = 1;
  v->strides[at] = 1;
}

/* -- The family ---------------------------------------------------------------------- */

static em_status mm_nograd(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  em_status st = check_pair("mm", a, b);
  if (st != EM_OK) return st;
  if (a->ndim != 2 || b->ndim != 2)
    return em_fail(EM_E_VALUE, "mm: expected 2-D tensors, got %d-D and %d-D", a->ndim, b->ndim);
  if (a->sizes[1] != b->sizes[0])
    return em_fail(EM_E_VALUE, "mm: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                   (long long)a->sizes[0], (long long)a->sizes[1], (long long)b->sizes[0],
                   (long long)b->sizes[1]);
  return gemm_core("mm", a, b, NULL, 0, 1, out);
}

static em_status bmm_nograd(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  em_status st = check_pair("bmm", a, b);
  if (st != EM_OK) return st;
  if (a->ndim != 3) return em_fail(EM_E_VALUE, "bmm: batch1 must be a 3D tensor, got %d-D", a->ndim);
  if (b->ndim != 3) return em_fail(EM_E_VALUE, "bmm: batch2 must be a 3D tensor, got %d-D", b->ndim);
  if (b->sizes[0] != a->sizes[0] || b->sizes[1] != a->sizes[2])
    return em_fail(EM_E_VALUE, "bmm: Expected size for first two dimensions of batch2 tensor "
                   "to be: [%lld, %lld] but got: [%lld, %lld].", (long long)a->sizes[0],
                   (long long)a->sizes[2], (long long)b->sizes[0], (long long)b->sizes[1]);
  return gemm_core("bmm", a, b, NULL, 0, 1, out);
}

static em_status mv_impl(const char *op, const em_tensor *input, const em_tensor *m,
                         const em_tensor *v, double beta, double alpha, em_tensor **out) {
  em_status st = check_pair(op, m, v);
  if (st != EM_OK) return st;
  if (m->ndim != 2 || v->ndim != 1)
    return em_fail(EM_E_VALUE, "%s: vector + matrix @ vector expected, got %d-D matrix and "
                   "%d-D vector", op, m->ndim, v->ndim);
  if (m->sizes[1] != v->sizes[0])
    return em_fail(EM_E_VALUE, "%s: size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                   op, (long long)m->sizes[0], (long long)m->sizes[0], (long long)m->sizes[1],
                   (long long)v->sizes[0]);
  em_tensor col, in2;
  as_col(&col, v);
  const em_tensor *inp = NULL;
  if (input) {
    st = check_input(op, input, m);
    if (st != EM_OK) return st;
    if (input->ndim > 1)
      return em_fail(EM_E_VALUE, "%s: input must be 0-D or 1-D, got %d-D", op, input->ndim);
    if (input->ndim == 1 && input->sizes[0] != 1 && input->sizes[0] != m->sizes[0])
      return em_fail(EM_E_VALUE, "%s: size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                     op, (long long)input->sizes[0], (long long)m->sizes[0],
                     (long long)m->sizes[1], (long long)v->sizes[0]);
    if (input->ndim == 1) { as_col(&in2, input); inp = &in2; }
    else inp = input;
  }
  em_tensor *r;
  st = gemm_core(op, m, &col, inp, beta, alpha, &r);
  if (st != EM_OK) return st;
  int64_t sz[1] = {m->sizes[0]};
  st = reshape_result(&r, 1, sz);
  if (st != EM_OK) return st;
  *out = r;
  return EM_OK;
}

static em_status mv_nograd(const em_tensor *a, const em_tensor *v, em_tensor **out) {
  return mv_impl("mv", NULL, a, v, 0, 1, out);
}

static em_status addmv_nograd(const em_tensor *input, const em_tensor *m, const em_tensor *v,
                   double beta, double alpha, em_tensor **out) {
  return mv_impl("addmv", input, m, v, beta, alpha, out);
}

static em_status dot_nograd(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  if (a->ndim != 1 || b->ndim != 1)
    return em_fail(EM_E_VALUE, "dot: 1D tensors expected, but got %dD and %dD tensors",
                   a->ndim, b->ndim);
  if (a->dtype != b->dtype)
    return em_fail(EM_E_TYPE, "dot: expected both vectors to have same dtype, but found %s and %s",
                   alias_name(a->dtype), alias_name(b->dtype));
  em_status st = check_pair("dot", a, b);
  if (st != EM_OK) return st;
  if (a->sizes[0] != b->sizes[0])
    return em_fail(EM_E_VALUE, "dot: inconsistent tensor size, expected tensor [%lld] and src "
                   "[%lld] to have the same number of elements, but got %lld and %lld "
                   "elements respectively", (long long)a->sizes[0], (long long)b->sizes[0],
                   (long long)a->sizes[0], (long long)b->sizes[0]);
  em_tensor row, col, *r;
  as_row(&row, a);
  as_col(&col, b);
  st = gemm_core("dot", &row, &col, NULL, 0, 1, &r);
  if (st != EM_OK) return st;
  st = reshape_result(&r, 0, NULL);
  if (st != EM_OK) return st;
  *out = r;
  return EM_OK;
}

static em_status outer_nograd(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  em_status st = check_pair("outer", a, b);
  if (st != EM_OK) return st;
  if (a->ndim != 1 || b->ndim != 1)
    return em_fail(EM_E_VALUE, "outer: expected 1-D tensors, got %d-D and %d-D", a->ndim, b->ndim);
  em_tensor col, row;
  as_col(&col, a);
  as_row(&row, b);
  return gemm_core("outer", &col, &row, NULL, 0, 1, out);
}

static em_status addmm_nograd(const em_tensor *input, const em_tensor *m1, const em_tensor *m2,
                   double beta, double alpha, em_tensor **out) {
  em_status st = check_pair("addmm", m1, m2);
  if (st == EM_OK) st = check_input("addmm", input, m1);
  if (st != EM_OK) return st;
  if (m1->ndim != 2 || m2->ndim != 2)
    return em_fail(EM_E_VALUE, "addmm: expected 2-D matrices, got %d-D and %d-D", m1->ndim, m2->ndim);
  if (m1->sizes[1] != m2->sizes[0])
    return em_fail(EM_E_VALUE, "addmm: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                   (long long)m1->sizes[0], (long long)m1->sizes[1], (long long)m2->sizes[0],
                   (long long)m2->sizes[1]);
  if (input->ndim > 2)
    return em_fail(EM_E_VALUE, "addmm: input must be at most 2-D, got %d-D", input->ndim);
  return gemm_core("addmm", m1, m2, input, beta, alpha, out);
}

static em_status baddbmm_nograd(const em_tensor *input, const em_tensor *b1, const em_tensor *b2,
                     double beta, double alpha, em_tensor **out) {
  em_status st = check_pair("baddbmm", b1, b2);
  if (st == EM_OK) st = check_input("baddbmm", input, b1);
  if (st != EM_OK) return st;
  if (b1->ndim != 3) return em_fail(EM_E_VALUE, "baddbmm: batch1 must be a 3D tensor, got %d-D", b1->ndim);
  if (b2->ndim != 3) return em_fail(EM_E_VALUE, "baddbmm: batch2 must be a 3D tensor, got %d-D", b2->ndim);
  if (b2->sizes[0] != b1->sizes[0] || b2->sizes[1] != b1->sizes[2])
    return em_fail(EM_E_VALUE, "baddbmm: Expected size for first two dimensions of batch2 tensor "
                   "to be: [%lld, %lld] but got: [%lld, %lld].", (long long)b1->sizes[0],
                   (long long)b1->sizes[2], (long long)b2->sizes[0], (long long)b2->sizes[1]);
  if (input->ndim > 3)
    return em_fail(EM_E_VALUE, "baddbmm: input must be at most 3-D, got %d-D", input->ndim);
  return gemm_core("baddbmm", b1, b2, input, beta, alpha, out);
}

/* matmul with an optional additive input (used by linear). */
static em_status matmul_impl(const char *op, const em_tensor *a, const em_tensor *b,
                             const em_tensor *input, em_tensor **out) {
  if (a->ndim == 0 || b->ndim == 0)
    return em_fail(EM_E_VALUE, "%s: both arguments to matmul need to be at least 1D, but "
                   "they are %dD and %dD", op, a->ndim, b->ndim);
  em_status st = check_pair(op, a, b);
  if (st != EM_OK) return st;
  if (input) {
    st = check_input(op, input, a);
    if (st != EM_OK) return st;
  }
  if (a->ndim == 1 && b->ndim == 1 && !input) return em_dot(a, b, out);
  if (a->ndim == 2 && b->ndim == 2 && !input) return em_mm(a, b, out);
  if (a->ndim == 2 && b->ndim == 1 && !input) return em_mv(a, b, out);
  /* general: promote vectors to matrices, multiply, drop the added dims */
  em_tensor va, vb;
  const em_tensor *pa = a, *pb = b;
  if (a->ndim == 1) { unsq(&va, a, 0); pa = &va; }
  if (b->ndim == 1) { unsq(&vb, b, 1); pb = &vb; }
  int64_t k1 = pa->sizes[pa->ndim - 1], k2 = pb->sizes[pb->ndim - 2];
  if (k1 != k2) {
    char s1[EM_SHAPE_BUF], s2[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: shapes %s and %s cannot be multiplied (%lld columns vs "
                   "%lld rows)", op, em_fmt_shape(s1, sizeof s1, a->ndim, a->sizes),
                   em_fmt_shape(s2, sizeof s2, b->ndim, b->sizes), (long long)k1, (long long)k2);
  }
  em_tensor *r;
  st = gemm_core(op, pa, pb, input, 1, 1, &r);
  if (st != EM_OK) return st;
  if (a->ndim == 1 || b->ndim == 1) {
    int64_t sz[EM_MAX_DIMS];
    int n = 0, rn = r->ndim;
    for (int i = 0; i < rn - 2; i++) sz[n++] = r->sizes[i];
    if (a->ndim > 1) sz[n++] = r->sizes[rn - 2];
    if (b->ndim > 1) sz[n++] = r->sizes[rn - 1];
    st = reshape_result(&r, n, sz);
    if (st != EM_OK) return st;
  }
  *out = r;
  return EM_OK;
}

static em_status matmul_nograd(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  return matmul_impl("matmul", a, b, NULL, out);
}

static em_status linear_nograd(const em_tensor *x, const em_tensor *w, const em_tensor *b,
                    em_tensor **out) {
  if (w->ndim != 2 && w->ndim != 1)
    return em_fail(EM_E_VALUE, "linear: weight must be 1-D or 2-D, got %d-D", w->ndim);
  em_tensor wt;
  memcpy(&wt, w, sizeof wt);
  if (w->ndim == 2) {
    wt.sizes[0] = w->sizes[1]; wt.strides[0] = w->strides[1];
    wt.sizes[1] = w->sizes[0]; wt.strides[1] = w->strides[0];
  }
  if (x->ndim >= 1 && w->ndim == 2 && x->sizes[x->ndim - 1] != w->sizes[1]) {
    int64_t rows = em_tensor_numel(x) / (x->sizes[x->ndim - 1] ? x->sizes[x->ndim - 1] : 1);
    return em_fail(EM_E_VALUE, "linear: mat1 and mat2 shapes cannot be multiplied "
                   "(%lldx%lld and %lldx%lld)", (long long)rows,
                   (long long)x->sizes[x->ndim - 1], (long long)w->sizes[1],
                   (long long)w->sizes[0]);
  }
  if (b && b->ndim > 1)
    return em_fail(EM_E_VALUE, "linear: bias must be 0-D or 1-D, got %d-D", b->ndim);
  return matmul_impl("linear", x, &wt, b, out);
}

/* -- Autograd recording ---------------------------------------------------------
** Each entry point runs with grad mode paused (so matmul's inner mm/dot do
** not record) and records one node (formulas in autograd/formulas.c). */

static em_ag_params lin_params(const char *name, int save_in) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = name;
  p.save_in = save_in;
  p.d[0] = 0.0;
  p.d[1] = 1.0;
  return p;
}

em_status em_mm(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  em_ag_params p = lin_params("MmBackward0", 3);
  const em_tensor *in[2] = {a, b};
  EM_AUTOCAST(EM_AC_MM, 2, in, em_mm(in[0], in[1], out));
  EM_AG_CALL(EM_AG_MM, 2, in, out, &p, mm_nograd(a, b, out));
}
em_status em_bmm(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  em_ag_params p = lin_params("BmmBackward0", 3);
  const em_tensor *in[2] = {a, b};
  EM_AUTOCAST(EM_AC_MM, 2, in, em_bmm(in[0], in[1], out));
  EM_AG_CALL(EM_AG_BMM, 2, in, out, &p, bmm_nograd(a, b, out));
}
em_status em_matmul(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  {
    const em_tensor *ac[2] = {a, b};
    EM_AUTOCAST(EM_AC_MM, 2, ac, em_matmul(ac[0], ac[1], out));
  }
  em_ag_params p = lin_params("MatmulBackward0", 3);
  if (a->ndim == 1 && b->ndim == 1) p.name = "DotBackward0";
  else if (a->ndim == 2 && b->ndim == 2) p.name = "MmBackward0";
  else if (a->ndim == 2 && b->ndim == 1) p.name = "MvBackward0";
  else if (a->ndim == 3 && b->ndim == 3) p.name = "BmmBackward0";
  const em_tensor *in[2] = {a, b};
  EM_AG_CALL(EM_AG_MATMUL, 2, in, out, &p, matmul_nograd(a, b, out));
}
em_status em_dot(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  em_ag_params p = lin_params("DotBackward0", 3);
  const em_tensor *in[2] = {a, b};
  EM_AG_CALL(EM_AG_MATMUL, 2, in, out, &p, dot_nograd(a, b, out));
}
/* mv and outer are addmv / addmm without the added input */
em_status em_mv(const em_tensor *a, const em_tensor *v, em_tensor **out) {
  em_ag_params p = lin_params("MvBackward0", 6);
  const em_tensor *in[3] = {NULL, a, v};
  EM_AUTOCAST(EM_AC_MV, 3, in, em_mv(in[1], in[2], out));
  EM_AG_CALL(EM_AG_ADDMM, 3, in, out, &p, mv_nograd(a, v, out));
}
em_status em_outer(const em_tensor *a, const em_tensor *b, em_tensor **out) {
  em_ag_params p = lin_params("OuterBackward0", 6);
  p.op = 1;  /* m1 is a column, m2 a row */
  const em_tensor *in[3] = {NULL, a, b};
  EM_AG_CALL(EM_AG_ADDMM, 3, in, out, &p, outer_nograd(a, b, out));
}
em_status em_addmm(const em_tensor *input, const em_tensor *m1, const em_tensor *m2,
                   double beta, double alpha, em_tensor **out) {
  em_ag_params p = lin_params("AddmmBackward0", 6);
  p.d[0] = beta;
  p.d[1] = alpha;
  const em_tensor *in[3] = {input, m1, m2};
  EM_AUTOCAST(EM_AC_MM, 3, in, em_addmm(in[0], in[1], in[2], beta, alpha, out));
  EM_AG_CALL(EM_AG_ADDMM, 3, in, out, &p, addmm_nograd(input, m1, m2, beta, alpha, out));
}
em_status em_addmv(const em_tensor *input, const em_tensor *m, const em_tensor *v,
                   double beta, double alpha, em_tensor **out) {
  em_ag_params p = lin_params("AddmvBackward0", 6);
  p.d[0] = beta;
  p.d[1] = alpha;
  const em_tensor *in[3] = {input, m, v};
  EM_AUTOCAST(EM_AC_MV, 3, in, em_addmv(in[0], in[1], in[2], beta, alpha, out));
  EM_AG_CALL(EM_AG_ADDMM, 3, in, out, &p, addmv_nograd(input, m, v, beta, alpha, out));
}
em_status em_baddbmm(const em_tensor *input, const em_tensor *b1, const em_tensor *b2,
                     double beta, double alpha, em_tensor **out) {
  em_ag_params p = lin_params("BaddbmmBackward0", 6);
  p.d[0] = beta;
  p.d[1] = alpha;
  const em_tensor *in[3] = {input, b1, b2};
  EM_AUTOCAST(EM_AC_MM, 3, in, em_baddbmm(in[0], in[1], in[2], beta, alpha, out));
  EM_AG_CALL(EM_AG_ADDMM, 3, in, out, &p, baddbmm_nograd(input, b1, b2, beta, alpha, out));
}
em_status em_linear(const em_tensor *x, const em_tensor *w, const em_tensor *b,
                    em_tensor **out) {
  em_ag_params p = lin_params("LinearBackward0", 3);
  const em_tensor *in[3] = {x, w, b};
  EM_AUTOCAST(EM_AC_MM, 3, in, em_linear(in[0], in[1], in[2], out));
  EM_AG_CALL(EM_AG_LINEAR, b ? 3 : 2, in, out, &p, linear_nograd(x, w, b, out));
}

/* mm, bmm and matmul of two 2-D or two 3-D operands with out= (op names
** which): when out already is the result (its shape, the operands' float
** dtype and device, contiguous, no storage shared with them) and nothing
** is recorded or autocast, the GEMM writes into out and *done = 1. Else
** *done = 0 and nothing is touched: the caller computes a result and
** em_write_out checks, resizes and copies it (its errors stay theirs). */
em_status em_matmul_into(const char *op, const em_tensor *a, const em_tensor *b,
                         em_tensor *out, int *done) {
  *done = 0;
  em_status chk = em_check_out(op, out);
  if (chk != EM_OK) return chk;
  int nd = a->ndim; /* mm: 2, bmm: 3, matmul: either */
  int ok_nd = strcmp(op, "mm") == 0 ? nd == 2 : strcmp(op, "bmm") == 0 ? nd == 3
                                                                       : nd == 2 || nd == 3;
  if (!ok_nd || b->ndim != nd || out->ndim != nd) return EM_OK;
  if (em_ac_any || out->requires_grad ||
      (em_grad_enabled() && (a->requires_grad || b->requires_grad)))
    return EM_OK;
  em_dtype dt = a->dtype;
  if ((dt != EM_FLOAT32 && dt != EM_FLOAT64) || b->dtype != dt || out->dtype != dt) return EM_OK;
  if (!em_device_equal(a->storage->device, b->storage->device) ||
      !em_device_equal(a->storage->device, out->storage->device) ||
      !em_device_has_data(out->storage->device))
    return EM_OK;
  if (out->storage == a->storage || out->storage == b->storage) return EM_OK;
  /* [m, k] [k, n] -> [m, n]; batched: the same batch size on all three */
  if (a->sizes[nd - 1] != b->sizes[nd - 2] || out->sizes[nd - 2] != a->sizes[nd - 2] ||
      out->sizes[nd - 1] != b->sizes[nd - 1])
    return EM_OK;
  if (nd == 3 && (b->sizes[0] != a->sizes[0] || out->sizes[0] != a->sizes[0])) return EM_OK;
  if (!em_tensor_is_contiguous(out)) return EM_OK;
  em_tensor *r = NULL;
  em_status st = gemm_core_into(op, a, b, NULL, 0, 1, out, &r);
  if (st != EM_OK) return st;
  em_tensor_release(r); /* out itself */
  em_storage_bump_version(out->storage); /* as copy_ would: saved tensors see it */
  *done = 1;
  return EM_OK;
}
