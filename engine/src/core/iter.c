/*
** iter.c -- broadcasting, dimension ordering and coalescing (see iter.h).
** Ordering follows PyTorch's TensorIterator::reorder_dimensions: operands
** are consulted in order, broadcast (stride 0) dims defer to the next
** operand, and for a reduction the output's reduced dims go innermost.
*/
#include "core/iter.h"
#include "core/errmsg.h"

em_status em_broadcast_shapes(const char *op, int n, const em_tensor *const *ts,
                              int *ndim, int64_t *shape) {
  int nd = 0;
  for (int k = 0; k < n; k++)
    if (ts[k]->ndim > nd) nd = ts[k]->ndim;
  for (int i = 0; i < nd; i++) shape[i] = 1;
  for (int k = 0; k < n; k++) {
    const em_tensor *t = ts[k];
    for (int i = 0; i < t->ndim; i++) {
      int d = nd - t->ndim + i;
      int64_t s = t->sizes[i];
      if (s == shape[d] || s == 1) continue;
      if (shape[d] == 1) { shape[d] = s; continue; }
      char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
      /* name the earlier operand that set this size */
      int j = 0;
      for (; j < k; j++) {
        int dj = d - (nd - ts[j]->ndim);
        if (dj >= 0 && ts[j]->sizes[dj] == shape[d]) break;
      }
      return em_fail(EM_E_VALUE,
                     "%s: shapes %s and %s cannot be broadcast: the size of a "
                     "(%lld) must match the size of b (%lld) at non-singleton "
                     "dimension %d",
                     op, em_fmt_shape(b1, sizeof b1, ts[j]->ndim, ts[j]->sizes),
                     em_fmt_shape(b2, sizeof b2, t->ndim, t->sizes),
                     (long long)shape[d], (long long)s, d + 1);
    }
  }
  *ndim = nd;
  return EM_OK;
}

/* -1: dim0 goes inside dim1; 1: dim1 goes inside; 0: no decision. */
static int compare_dims(const em_iter *it, const int64_t (*st)[EM_ITER_MAX_OPS],
                        const int64_t *shape, int d0, int d1, bool is_reduction) {
  for (int k = 0; k < it->nops; k++) {
    int64_t s0 = st[d0][k], s1 = st[d1][k];
    if (is_reduction && k == 0 && ((s0 == 0) != (s1 == 0)))
      return s1 == 0 ? 1 : -1;
    if (s0 == 0 || s1 == 0) continue;
    if (s0 < s1) return -1;
    if (s0 > s1) return 1;
    if (shape[d0] > shape[d1]) return 1;
  }
  return 0;
}

static _Thread_local int complex_allowed;

int em_iter_allow_complex(int on) {
  int was = complex_allowed;
  complex_allowed = on;
  return was;
}

em_status em_iter_build(em_iter *it, const char *op, int nops,
                        const em_tensor *const *ops, int ndim,
                        const int64_t *shape, bool is_reduction) {
  int64_t st[EM_MAX_DIMS][EM_ITER_MAX_OPS]; /* bytes, indexed by tensor axis */
  if (nops > EM_ITER_MAX_OPS)
    return em_fail(EM_E_VALUE, "%s: too many operands (%d)", op, nops);
  if (!complex_allowed)
    for (int k = 0; k < nops; k++)
      if (ops[k] && em_dtype_kindof(ops[k]->dtype) == EM_KIND_COMPLEX)
        return em_fail(EM_E_TYPE, EM_MSG_DTYPE_NOT_IMPLEMENTED, op,
                       em_dtype_name(ops[k]->dtype));
  it->nops = nops;
  /* An empty shape may hold sizes whose product overflows (a view of
  ** 0 x 2^62 elements): its numel is 0 without multiplying. */
  it->numel = 1;
  for (int d = 0; d < ndim; d++)
    if (shape[d] == 0) it->numel = 0;
  for (int d = 0; d < ndim && it->numel; d++) it->numel *= shape[d];
  /* A stride matters only on a dim of size > 1 of a non-empty iteration;
  ** elsewhere it may be anything a view allows (an empty view's strides are
  ** unchecked), so it is taken as 0 rather than scaled into bytes. */
  for (int k = 0; k < nops; k++) {
    const em_tensor *t = ops[k];
    int64_t isz = (int64_t)em_dtype_size(t->dtype);
    if (t->ndim > ndim) goto mismatch;
    for (int d = 0; d < ndim; d++) {
      int a = d - (ndim - t->ndim);
      if (a < 0) { st[d][k] = 0; continue; }
      if (t->sizes[a] == shape[d]) {
        st[d][k] = 0;
        if (shape[d] != 1 && it->numel != 0 &&
            em_mul_overflow_i64(t->strides[a], isz, &st[d][k]))
          return em_fail(EM_E_VALUE, "%s: stride %lld of dimension %d is too large to address",
                         op, (long long)t->strides[a], a + 1);
      }
      else if (t->sizes[a] == 1) st[d][k] = 0;
      else {
      mismatch:;
        char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
        return em_fail(EM_E_VALUE, "%s: shape %s cannot be broadcast to %s", op,
                       em_fmt_shape(b1, sizeof b1, t->ndim, t->sizes),
                       em_fmt_shape(b2, sizeof b2, ndim, shape));
      }
    }
    it->data[k] = (char *)em_tensor_data(t);
  }
  /* perm[i] = tensor axis of iteration dim i; start innermost = last axis */
  int perm[EM_MAX_DIMS];
  for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
  for (int i = 1; i < ndim; i++) {
    for (int j = i; j > 0; j--) {
      int c = compare_dims(it, (const int64_t(*)[EM_ITER_MAX_OPS])st, shape,
                           perm[j - 1], perm[j], is_reduction);
      if (c <= 0) break;
      int tmp = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = tmp;
    }
  }
  /* coalesce adjacent iteration dims when every operand allows it */
  int n = 0;
  for (int i = 0; i < ndim; i++) {
    int a = perm[i];
    if (n > 0 && it->numel != 0) { /* (empty: no merging, no overflow) */
      int64_t prev = it->shape[n - 1];
      bool ok = true;
      for (int k = 0; k < nops && ok; k++)
        if (!(shape[a] == 1 || prev == 1 ||
              it->strides[n - 1][k] * prev == st[a][k]))
          ok = false;
      if (ok) {
        if (prev == 1)
          for (int k = 0; k < nops; k++) it->strides[n - 1][k] = st[a][k];
        it->shape[n - 1] = prev * shape[a];
        continue;
      }
    }
    it->shape[n] = shape[a];
    it->perm[n] = a;
    for (int k = 0; k < nops; k++) it->strides[n][k] = st[a][k];
    n++;
  }
  if (n == 0) {
    it->shape[0] = 1;
    it->perm[0] = 0;
    for (int k = 0; k < nops; k++) it->strides[0][k] = 0;
    n = 1;
  }
  it->ndim = n;
  return EM_OK;
}

int em_has_internal_overlap(const em_tensor *t) {
  int64_t sz[EM_MAX_DIMS], stv[EM_MAX_DIMS];
  int n = 0;
  /* an empty tensor addresses nothing, whatever dim holds the 0 */
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] == 0) return 0;
  for (int i = 0; i < t->ndim; i++) {
    if (t->sizes[i] == 1) continue;
    if (t->strides[i] == 0) return 1;
    int j = n++;
    while (j > 0 && stv[j - 1] > t->strides[i]) {
      stv[j] = stv[j - 1]; sz[j] = sz[j - 1]; j--;
    }
    stv[j] = t->strides[i]; sz[j] = t->sizes[i];
  }
  int64_t extent = 0;  /* max offset reachable by the inner dims */
  for (int i = 0; i < n; i++) {
    if (stv[i] <= extent) return 1;
    extent += (sz[i] - 1) * stv[i];
  }
  return 0;
}

em_status em_check_writable(const char *op, const em_tensor *t) {
  if (em_has_internal_overlap(t)) return em_fail(EM_E_VALUE, EM_MSG_INTERNAL_OVERLAP, op);
  return EM_OK;
}

static void byte_range(const em_tensor *t, int64_t *lo, int64_t *hi) {
  int64_t isz = (int64_t)em_dtype_size(t->dtype);
  int64_t last = t->offset;
  for (int i = 0; i < t->ndim; i++) last += (t->sizes[i] - 1) * t->strides[i];
  *lo = t->offset * isz;
  *hi = (last + 1) * isz;
}

int em_may_overlap(const em_tensor *a, const em_tensor *b) {
  if (a->storage != b->storage) return 0;
  if (em_tensor_numel(a) == 0 || em_tensor_numel(b) == 0) return 0;
  int64_t alo, ahi, blo, bhi;
  byte_range(a, &alo, &ahi);
  byte_range(b, &blo, &bhi);
  return alo < bhi && blo < ahi;
}

int em_same_layout(const em_tensor *a, const em_tensor *b) {
  if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim ||
      a->dtype != b->dtype)
    return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->sizes[i] != b->sizes[i] ||
        (a->sizes[i] > 1 && a->strides[i] != b->strides[i]))
      return 0;
  return 1;
}

/* -- Output layout -------------------------------------------------------- */

void em_iter_output_strides(int nops, const em_tensor *const *ops, int ndim,
                            const int64_t *shape, int64_t *strides) {
  em_iter tmp; /* only nops is read by compare_dims */
  int64_t st[EM_MAX_DIMS][EM_ITER_MAX_OPS];
  if (nops > EM_ITER_MAX_OPS) nops = EM_ITER_MAX_OPS;
  tmp.nops = nops;
  for (int k = 0; k < nops; k++) {
    const em_tensor *t = ops[k];
    for (int d = 0; d < ndim; d++) {
      int a = d - (ndim - t->ndim);
      st[d][k] = (a < 0 || t->sizes[a] != shape[d] || shape[d] == 1) ? 0 : t->strides[a];
    }
  }
  int perm[EM_MAX_DIMS];
  for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
  for (int i = 1; i < ndim; i++) {
    for (int j = i; j > 0; j--) {
      int c = compare_dims(&tmp, (const int64_t(*)[EM_ITER_MAX_OPS])st, shape,
                           perm[j - 1], perm[j], false);
      if (c <= 0) break;
      int x = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = x;
    }
  }
  int64_t acc = 1;
  for (int i = 0; i < ndim; i++) {
    strides[perm[i]] = acc;
    acc *= shape[perm[i]] > 1 ? shape[perm[i]] : 1;
  }
}
