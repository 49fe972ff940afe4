/*
** ops/linalg_lapack.c -- the LAPACK primitives of T.linalg (issue 19):
** LU (factor, solve), the fused solve, Cholesky, triangular solves, QR
** (geqrf, householder_product), SVD, the symmetric eigensolver and least
** squares, each batched over the leading dims (core/kern_linalg.h, lapack).
** lua/ember/linalg.lua builds T.linalg on them (det, inv, qr's modes,
** norms, ...) and records their derivatives.
**
** Guarantees:
** - float32/float64 and complex64/complex128 (the c/z routines); other dtypes get PyTorch's "Expected a
**   floating point or complex tensor as input. Got Long". The inputs are
**   never written.
** - eig (geev) gives complex results for real input too, as PyTorch.
** - Each op copies its operands once into fresh column-major buffers
**   (LAPACK overwrites them); a row-major input is copied as it lies and
**   handed over as its transpose where the routine can take that (solve,
**   lu_solve: trans; cholesky, eigh: the other triangle), so no transposing
**   copy is made there. Results are column-major views (strides (1, m) in
**   the last two dims, as PyTorch returns them).
** - Batch dims broadcast where PyTorch's do (solve, lu_solve,
**   solve_triangular, lstsq); a result with a zero-size dim makes no call.
** - check != 0: a numerical failure is PyTorch's error naming the op and
**   the 1-based batch element; check == 0 (the _ex forms): info is
**   returned (int32, the batch shape) and nothing raises.
** - They record no autograd (grad mode is paused inside); the Lua layer
**   records each decomposition's derivative.
*/
#include "core/kern_linalg.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"
#include "ops/composed.h"

#include <math.h>
#include <stdio.h>

/* -- Checks --------------------------------------------------------------- */

static int is_complex(em_dtype dt) { return dt == EM_COMPLEX64 || dt == EM_COMPLEX128; }

/* float32/float64/complex64/complex128 */
static em_status check_float(const char *op, const em_tensor *t) {
  if (t->dtype != EM_FLOAT32 && t->dtype != EM_FLOAT64 && !is_complex(t->dtype)) {
    static const char *const names[EM_NUM_DTYPES] = {
        "Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double",
        "ComplexFloat", "ComplexDouble"};
    return em_fail(EM_E_TYPE, "%s: Expected a floating point or complex tensor as input. Got %s",
                   op, names[t->dtype]);
  }
  return EM_OK;
}

/* the real dtype of a complex one's parts (float32 -> float32) */
static em_dtype value_dtype(em_dtype dt) {
  return dt == EM_COMPLEX64 ? EM_FLOAT32 : dt == EM_COMPLEX128 ? EM_FLOAT64 : dt;
}

/* the complex dtype of a real one's (complex64 for float32) */
static em_dtype complex_dtype(em_dtype dt) {
  return dt == EM_FLOAT32 || dt == EM_COMPLEX64 ? EM_COMPLEX64 : EM_COMPLEX128;
}

static em_status check_matrix(const char *op, const char *name, const em_tensor *t, int square) {
  em_status st = check_float(op, t);
  if (st != EM_OK) return st;
  if (t->ndim < 2)
    return em_fail(EM_E_VALUE, "%s: The input tensor %s must have at least 2 dimensions.", op,
                   name);
  int64_t m = t->sizes[t->ndim - 2], n = t->sizes[t->ndim - 1];
  if (square && m != n)
    return em_fail(EM_E_VALUE,
                   "%s: %s must be batches of square matrices, but they are %lld by %lld matrices",
                   op, name, (long long)m, (long long)n);
  if (m > INT_MAX / 2 || n > INT_MAX / 2)
    return em_fail(EM_E_VALUE, "%s: matrix dims beyond %d are not supported", op, INT_MAX / 2);
  return EM_OK;
}

static em_status check_same(const char *op, const em_tensor *a, const em_tensor *b) {
  em_status st = em_same_device_check(op, a->storage->device, b->storage->device);
  if (st != EM_OK) return st;
  if (a->dtype != b->dtype)
    return em_fail(EM_E_TYPE, "%s: Expected A and B to have the same dtype, but found A of type "
                   "%s and B of type %s instead", op, em_dtype_name(a->dtype),
                   em_dtype_name(b->dtype));
  return EM_OK;
}

static int64_t batch_count(int nb, const int64_t *bs) {
  int64_t n = 1;
  for (int i = 0; i < nb; i++) n *= bs[i];
  return n;
}

/* "(Batch element 3): " for element i (0-based) of a batch, "" unbatched */
static void batch_prefix(char *buf, size_t n, int nbatch, int64_t i) {
  if (nbatch > 0) snprintf(buf, n, "(Batch element %lld): ", (long long)(i + 1));
  else buf[0] = 0;
}

/* -- Buffers -------------------------------------------------------------- */

/* A fresh contiguous tensor of shape sh whose storage runs 128 bytes past
** its last element: OpenBLAS 0.3.21's vectorised gemv kernels (zgemv_n and
** cgemv_n, inside the complex gesdd's bidiagonalisation) read up to 16
** bytes beyond the end of a matrix (valgrind: "Invalid read ... 16 bytes
** after a block"), which the sanitizers' allocator can place at the end of
** a mapping; the slack keeps those reads inside memory we own. */
static em_status padded_empty(int nd, const int64_t *sh, em_dtype dt, em_device dev,
                              em_tensor **out) {
  int64_t numel = 1, strides[EM_MAX_DIMS];
  for (int i = nd - 1; i >= 0; i--) {
    strides[i] = numel;
    numel *= sh[i];
  }
  int64_t es = (int64_t)em_dtype_size(dt), total = numel + (128 + es - 1) / es;
  em_tensor *flat = NULL;
  em_status st = em_empty(1, &total, dt, dev, &flat);
  if (st != EM_OK) return st;
  st = em_as_strided(flat, nd, sh, strides, 0, out);
  em_tensor_release(flat);
  return st;
}

/* A fresh tensor of logical shape [bs..., rows, cols] (dtype dt, device
** dev) stored column-major per matrix: memory [bs..., cols, rows]
** contiguous, the result its transposed view. */
static em_status colmajor_empty(int nb, const int64_t *bs, int64_t rows, int64_t cols,
                                em_dtype dt, em_device dev, em_tensor **out) {
  int64_t sh[EM_MAX_DIMS];
  if (nb + 2 > EM_MAX_DIMS) return em_fail(EM_E_VALUE, "linalg: too many dims");
  memcpy(sh, bs, (size_t)nb * sizeof *sh);
  sh[nb] = cols;
  sh[nb + 1] = rows;
  em_tensor *mem = NULL;
  em_status st = padded_empty(nb + 2, sh, dt, dev, &mem);
  if (st != EM_OK) return st;
  st = em_transpose(mem, -2, -1, out);
  em_tensor_release(mem);
  return st;
}

/* A fresh contiguous (row-major) tensor [bs..., rows, cols]. */
static em_status rowmajor_empty(int nb, const int64_t *bs, int64_t rows, int64_t cols,
                                em_dtype dt, em_device dev, em_tensor **out) {
  int64_t sh[EM_MAX_DIMS];
  if (nb + 2 > EM_MAX_DIMS) return em_fail(EM_E_VALUE, "linalg: too many dims");
  memcpy(sh, bs, (size_t)nb * sizeof *sh);
  sh[nb] = rows;
  sh[nb + 1] = cols;
  return padded_empty(nb + 2, sh, dt, dev, out);
}

/* src broadcast to [bs..., rows, cols] and copied into a fresh buffer:
** column-major (colmajor) or row-major. */
static em_status load(const em_tensor *src, int nb, const int64_t *bs, int64_t rows,
                      int64_t cols, int colmajor, em_tensor **out) {
  em_tensor *buf = NULL;
  em_status st = colmajor ? colmajor_empty(nb, bs, rows, cols, src->dtype, src->storage->device, &buf)
                          : rowmajor_empty(nb, bs, rows, cols, src->dtype, src->storage->device, &buf);
  if (st == EM_OK && em_tensor_numel(buf) > 0) st = em_copy_(buf, src);
  if (st != EM_OK) {
    em_tensor_release(buf);
    return st;
  }
  *out = buf;
  return EM_OK;
}

static void *data_of(const em_tensor *t) {
  return t->storage->data ? (char *)t->storage->data + t->offset * (int64_t)em_dtype_size(t->dtype)
                          : NULL;
}

/* An int32 tensor of the batch shape (info) or [bs..., n] (pivots). */
static em_status int_empty(int nb, const int64_t *bs, int64_t last, em_dtype dt, em_device dev,
                           em_tensor **out) {
  int64_t sh[EM_MAX_DIMS];
  memcpy(sh, bs, (size_t)nb * sizeof *sh);
  int nd = nb;
  if (last >= 0) sh[nd++] = last;
  return em_empty(nd, sh, dt, dev, out);
}

/* Whether a batch element failed (info > 0; info != 0 when any): the first
** one's code in *code and its "(Batch element k): " prefix (1-based; "" for
** an unbatched op) in pre. info on a device (cuda's solvers write it
** there) is read through a copy to the host, which waits for the routine;
** a failed copy sets *st and answers 0. The meta device has no values:
** never. */
static int first_failure(const em_tensor *info, int64_t batch, int any, int nb, char *pre,
                         size_t npre, int *code, em_status *st) {
  em_tensor *host = NULL;
  if (info->storage->data && info->storage->device.type != EM_CPU) {
    *st = em_to(info, info->dtype, em_cpu(), 1, &host);
    if (*st != EM_OK) return 0;
    info = host;
  }
  const int32_t *iv = info->storage->data ? data_of(info) : NULL;
  int found = 0;
  for (int64_t i = 0; iv && i < batch && !found; i++)
    if (any ? iv[i] != 0 : iv[i] > 0) {
      *code = iv[i];
      batch_prefix(pre, npre, nb, i);
      found = 1;
    }
  em_tensor_release(host);
  return found;
}

static em_status run_job(const char *op, em_device dev, em_lapack_job *j) {
  const em_kernels *k;
  em_status st = em_kernels_check(op, dev, &k);
  if (st != EM_OK) return st;
  if (!k->linalg->lapack || !k->linalg->lapack_runs(j->op)) {
    /* staged before this (stage_begin); not reached */
    char d[32];
    return em_fail(EM_E_RUNTIME, "%s: no LAPACK kernels on %s", op, em_device_str(dev, d, sizeof d));
  }
  return k->linalg->lapack(j);
}

/* the batch dims of t as (nb, bs) */
#define BATCH_OF(t) ((t)->ndim - 2), (t)->sizes

/* broadcast batch shape of a and b (their last `keep_a`/`keep_b` dims are
** not batch) */
static em_status broadcast_batch(const char *op, const em_tensor *a, int keep_a,
                                 const em_tensor *b, int keep_b, int *nb, int64_t *bs) {
  em_tensor va, vb;
  memcpy(&va, a, sizeof va);
  memcpy(&vb, b, sizeof vb);
  va.ndim = a->ndim - keep_a;
  vb.ndim = b->ndim - keep_b;
  const em_tensor *ts[2] = {&va, &vb};
  return em_broadcast_shapes(op, 2, ts, nb, bs);
}

/* -- Host staging ------------------------------------------------------------
** A device with values but no LAPACK kernel for the op's routine (its
** table's lapack is NULL, or its lapack_runs says no: cuda's GELS and
** GEEV) runs T.linalg on the host, as PyTorch runs
** linalg.eig of a cuda tensor through LAPACK: the inputs cross to the CPU
** once, the CPU op runs there (same checks, errors and results), and each
** result crosses back. Inputs on different devices are not staged (the op
** then gives its mixed-device error). em_nn_force_math(1) stages CPU
** tensors too (a copy each way), so the tests run this path here. */
static _Thread_local int g_staging; /* inside a staged call: run it as it is */
static int64_t g_staged;            /* staged calls so far (tests) */
int64_t em_linalg_staged_calls(void) { return __atomic_load_n(&g_staged, __ATOMIC_RELAXED); }

typedef struct staged {
  em_device dev;
  em_tensor *h[3]; /* the inputs on the CPU */
  em_tensor *r[4]; /* the CPU op's results */
  em_status st;    /* of moving the inputs */
} staged;

/* Whether the op over inputs a, b, c (b, c may be NULL) runs host-staged;
** then s->h holds them on the CPU (s->st says whether they got there). */
static int stage_begin(staged *s, em_lapack_op op, const em_tensor *a, const em_tensor *b,
                       const em_tensor *c) {
  const em_tensor *in[3] = {a, b, c};
  em_device d = a->storage->device;
  if (g_staging) return 0;
  for (int i = 1; i < 3; i++)
    if (in[i] && !em_device_equal(in[i]->storage->device, d)) return 0;
  if (d.type == EM_CPU) {
    if (!em_nn_forced_math()) return 0;
  } else {
    const em_kernels *k = em_kernels_for(d);
    if (!k || !em_device_has_data(d)) return 0;
    if (k->linalg->lapack && k->linalg->lapack_runs(op)) return 0;
  }
  memset(s, 0, sizeof *s);
  s->dev = d;
  __atomic_fetch_add(&g_staged, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < 3 && s->st == EM_OK; i++)
    if (in[i]) s->st = em_to(in[i], in[i]->dtype, em_cpu(), 1, &s->h[i]);
  g_staging = 1;
  return 1;
}

/* Ends a staged call whose CPU op returned st: each result it made goes to
** the device into its slot (o0..o3, NULL where the op has fewer); a slot
** whose result the op did not make is left as the op leaves it. */
static em_status stage_end(staged *s, em_status st, em_tensor **o0, em_tensor **o1,
                           em_tensor **o2, em_tensor **o3) {
  em_tensor **slot[4] = {o0, o1, o2, o3}, *d[4] = {NULL, NULL, NULL, NULL};
  g_staging = 0;
  for (int i = 0; i < 3; i++) em_tensor_release(s->h[i]);
  for (int i = 0; i < 4 && st == EM_OK; i++)
    if (s->r[i]) st = em_to(s->r[i], s->r[i]->dtype, s->dev, 1, &d[i]);
  for (int i = 0; i < 4; i++) {
    em_tensor_release(s->r[i]);
    if (st != EM_OK) em_tensor_release(d[i]);
    else if (d[i]) *slot[i] = d[i];
  }
  return st;
}

/* The staged form of a call that runs the LAPACK routine OP: CALL runs the
** CPU op over s.h into s.r. */
#define STAGED(OP, A, B, C, CALL, O0, O1, O2, O3)                          \
  do {                                                                    \
    staged s_;                                                            \
    if (stage_begin(&s_, OP, A, B, C)) {                                  \
      em_tensor **const h = s_.h, **const r = s_.r;                       \
      return stage_end(&s_, s_.st == EM_OK ? (CALL) : s_.st, O0, O1, O2, O3); \
    }                                                                     \
  } while (0)

/* -- The pivoted factorizations ------------------------------------------------
** getrf (LU) and sytrf/hetrf (LDL, uplo 'L'): F holds each m x n matrix of
** A's batch factored in place (column-major), pivots min(m, n) int32 per
** matrix (1-based, as LAPACK's), info one int32 per matrix; with check, the
** first failure raises failmsg (a format of op, the batch prefix and the
** position twice). */
static em_status pivoted_factor(const char *op, const em_tensor *A, em_lapack_op lop, int64_t m,
                                int64_t n, char uplo, int herm, int check, const char *failmsg,
                                em_tensor **F, em_tensor **pivots, em_tensor **info) {
  int on = em_ag_pause();
  int nb = A->ndim - 2;
  int64_t k = m < n ? m : n;
  em_device dev = A->storage->device;
  em_tensor *f = NULL, *piv = NULL, *inf = NULL;
  em_status st = load(A, nb, A->sizes, m, n, 1, &f);
  if (st == EM_OK) st = int_empty(nb, A->sizes, k, EM_INT32, dev, &piv);
  if (st == EM_OK) st = int_empty(nb, A->sizes, -1, EM_INT32, dev, &inf);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0 && m > 0 && n > 0) {
    em_lapack_job j = {0};
    j.op = lop;
    j.dt = A->dtype;
    j.batch = batch;
    j.uplo = uplo;
    j.herm = herm;
    j.m = (int)m; j.n = (int)n;
    j.a = data_of(f); j.sa = m * n; j.lda = (int)(m > 1 ? m : 1);
    j.ipiv = data_of(piv); j.sp = k;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  } else if (st == EM_OK && batch > 0) {
    em_scalar z = {0};
    st = em_fill_(inf, z);
  }
  if (st == EM_OK && check && batch > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 0, nb, pre, sizeof pre, &code, &st))
      st = em_fail(EM_E_VALUE, failmsg, op, pre, code, code);
  }
  em_ag_resume(on);
  if (st != EM_OK) {
    em_tensor_release(f);
    em_tensor_release(piv);
    em_tensor_release(inf);
    return st;
  }
  *F = f;
  *pivots = piv;
  *info = inf;
  return EM_OK;
}

/* A pivoted factorization and its pivots for a solve (getrs, sytrs): F's
** n x n matrices loaded column-major over the batch bs, the pivots
** broadcast as that batch and converted to int32. On failure *f and *piv
** may hold what was made; the caller releases them. */
static em_status load_factors(const em_tensor *F, const em_tensor *pivots, int nb,
                              const int64_t *bs, int64_t n, em_device dev, em_tensor **f,
                              em_tensor **piv) {
  em_status st = load(F, nb, bs, n, n, 1, f);
  if (st != EM_OK) return st;
  int64_t sh[EM_MAX_DIMS];
  memcpy(sh, bs, (size_t)nb * sizeof *sh);
  sh[nb] = n;
  em_tensor *e = NULL;
  st = em_expand(pivots, nb + 1, sh, &e);
  if (st == EM_OK) st = em_empty(nb + 1, sh, EM_INT32, dev, piv);
  if (st == EM_OK && em_tensor_numel(*piv) > 0) st = em_copy_(*piv, e);
  em_tensor_release(e);
  return st;
}

/* -- LU ------------------------------------------------------------------- */

em_status em_linalg_lu_factor(const em_tensor *A, int check, em_tensor **LU, em_tensor **pivots,
                              em_tensor **info) {
  STAGED(EM_LAPACK_GETRF, A, NULL, NULL, em_linalg_lu_factor(h[0], check, &r[0], &r[1], &r[2]), LU, pivots, info, NULL);
  const char *op = "linalg.lu_factor";
  em_status st = check_matrix(op, "A", A, 0);
  if (st != EM_OK) return st;
  int nb = A->ndim - 2;
  return pivoted_factor(op, A, EM_LAPACK_GETRF, A->sizes[nb], A->sizes[nb + 1], 0, 0, check,
                        "%s: %sU[%d,%d] is zero and using it on lu_solve would result in a "
                        "division by zero. If you still want to perform the factorization, "
                        "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
                        LU, pivots, info);
}

/* A X = B (trans 0) or A^H X = B (trans 1: the transpose of a real A)
** from A's LU factors. */
em_status em_linalg_lu_solve(const em_tensor *LU, const em_tensor *pivots, const em_tensor *B,
                             int trans, em_tensor **X) {
  STAGED(EM_LAPACK_GETRS, LU, pivots, B, em_linalg_lu_solve(h[0], h[1], h[2], trans, &r[0]), X, NULL, NULL, NULL);
  const char *op = "linalg.lu_solve";
  em_status st = check_matrix(op, "LU", LU, 1);
  if (st == EM_OK) st = check_matrix(op, "B", B, 0);
  if (st == EM_OK) st = check_same(op, LU, B);
  if (st != EM_OK) return st;
  int64_t n = LU->sizes[LU->ndim - 1], k = B->sizes[B->ndim - 1];
  if (B->sizes[B->ndim - 2] != n)
    return em_fail(EM_E_VALUE, "%s: Incompatible shapes of A and B for the equation AX = B "
                   "(%lldx%lld and %lldx%lld)", op, (long long)n, (long long)n,
                   (long long)B->sizes[B->ndim - 2], (long long)k);
  if (pivots->dtype != EM_INT32)
    return em_fail(EM_E_TYPE, "%s: pivots should be a Tensor of scalar type Int, got %s", op,
                   em_dtype_name(pivots->dtype));
  if (pivots->ndim != LU->ndim - 1 || pivots->sizes[pivots->ndim - 1] != n)
    return em_fail(EM_E_VALUE, "%s: Expected pivots of shape [..., %lld] matching LU", op,
                   (long long)n);
  int nb;
  int64_t bs[EM_MAX_DIMS];
  st = broadcast_batch(op, LU, 2, B, 2, &nb, bs);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  em_device dev = LU->storage->device;
  em_tensor *lu = NULL, *piv = NULL, *x = NULL;
  st = load_factors(LU, pivots, nb, bs, n, dev, &lu, &piv);
  if (st == EM_OK) st = load(B, nb, bs, n, k, 1, &x);
  int64_t batch = batch_count(nb, bs);
  if (st == EM_OK && batch > 0 && n > 0 && k > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_GETRS;
    j.dt = LU->dtype;
    j.batch = batch;
    j.n = (int)n; j.nrhs = (int)k;
    j.trans = trans ? 'C' : 'N';
    j.a = data_of(lu); j.sa = n * n; j.lda = (int)(n > 1 ? n : 1);
    j.ipiv = data_of(piv); j.sp = n;
    j.b = data_of(x); j.sb = n * k; j.ldb = (int)(n > 1 ? n : 1);
    st = run_job(op, dev, &j);
  }
  em_ag_resume(on);
  em_tensor_release(lu);
  em_tensor_release(piv);
  if (st != EM_OK) {
    em_tensor_release(x);
    return st;
  }
  *X = x;
  return EM_OK;
}

/* -- LDL (Bunch-Kaufman) -------------------------------------------------- */

/* A = L D L^T (L D L^H when herm) of the lower triangle of symmetric
** (Hermitian) A: sytrf/hetrf with uplo 'L'; LD holds L below the diagonal
** and D's blocks on and next to it, its strict upper triangle zeroed;
** pivots as LAPACK's (1-based; a negative pair marks a 2 x 2 block). */
em_status em_linalg_ldl_factor(const em_tensor *A, int herm, int check, em_tensor **LD,
                               em_tensor **pivots, em_tensor **info) {
  STAGED(EM_LAPACK_SYTRF, A, NULL, NULL, em_linalg_ldl_factor(h[0], herm, check, &r[0], &r[1], &r[2]), LD, pivots, info, NULL);
  const char *op = check == 1 ? "linalg.ldl_factor" : "linalg.ldl_factor_ex";
  em_status st = check_matrix(op, "A", A, 1);
  if (st != EM_OK) return st;
  int64_t n = A->sizes[A->ndim - 2];
  return pivoted_factor(op, A, EM_LAPACK_SYTRF, n, n, 'L', herm && is_complex(A->dtype), check,
                        "%s: %sD[%d,%d] is exactly zero: the factorization was completed, but D "
                        "is singular and using it to solve a system would divide by zero (use "
                        "linalg.ldl_factor_ex to get info instead)",
                        LD, pivots, info);
}

/* A X = B from ldl_factor's LD and pivots (sytrs/hetrs, uplo 'L'); the
** batch dims of LD (with pivots) and B broadcast */
em_status em_linalg_ldl_solve(const em_tensor *LD, const em_tensor *pivots, const em_tensor *B,
                              int herm, em_tensor **X) {
  STAGED(EM_LAPACK_SYTRS, LD, pivots, B, em_linalg_ldl_solve(h[0], h[1], h[2], herm, &r[0]), X, NULL, NULL, NULL);
  const char *op = "linalg.ldl_solve";
  em_status st = check_matrix(op, "LD", LD, 1);
  if (st == EM_OK) st = check_matrix(op, "B", B, 0);
  if (st == EM_OK) st = check_same(op, LD, B);
  if (st != EM_OK) return st;
  int64_t n = LD->sizes[LD->ndim - 1], k = B->sizes[B->ndim - 1];
  if (B->sizes[B->ndim - 2] != n)
    return em_fail(EM_E_VALUE, "%s: Incompatible matrix sizes: each A matrix is %lld by %lld but "
                   "each b matrix is %lld by %lld", op, (long long)n, (long long)n,
                   (long long)B->sizes[B->ndim - 2], (long long)k);
  if (pivots->dtype != EM_INT32 && pivots->dtype != EM_INT64)
    return em_fail(EM_E_TYPE, "%s: pivots should be a Tensor of scalar type Int, got %s", op,
                   em_dtype_name(pivots->dtype));
  if (pivots->ndim != LD->ndim - 1 || pivots->sizes[pivots->ndim - 1] != n)
    return em_fail(EM_E_VALUE, "%s: Expected pivots of shape [..., %lld] matching LD", op,
                   (long long)n);
  for (int i = 0; i < pivots->ndim - 1; i++)
    if (pivots->sizes[i] != LD->sizes[i])
      return em_fail(EM_E_VALUE, "%s: Expected LD.shape[:-1] and pivots.shape to be the same, "
                     "but got pivots with dim %d of size %lld and LD's %lld", op, i + 1,
                     (long long)pivots->sizes[i], (long long)LD->sizes[i]);
  int nb;
  int64_t bs[EM_MAX_DIMS];
  st = broadcast_batch(op, LD, 2, B, 2, &nb, bs);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  em_device dev = LD->storage->device;
  em_tensor *ld = NULL, *piv = NULL, *x = NULL;
  st = load_factors(LD, pivots, nb, bs, n, dev, &ld, &piv);
  if (st == EM_OK && em_tensor_numel(piv) > 0) {  /* pivots from elsewhere: within [-n, n], not 0 */
    em_tensor *host = NULL;
    const em_tensor *pv = piv;
    if (piv->storage->device.type != EM_CPU) {
      st = em_to(piv, EM_INT32, em_cpu(), 1, &host);
      pv = host;
    }
    /* as sytrf (uplo 'L') writes them: p in 1..n, or a pair -p, -p (a
    ** 2 x 2 block); anything else would send sytrs out of the matrix */
    const int32_t *iv = st == EM_OK && pv->storage->data ? data_of(pv) : NULL;
    for (int64_t r = 0; iv && st == EM_OK && r < em_tensor_numel(pv) / n; r++) {
      const int32_t *row = iv + r * n;
      for (int64_t i = 0; i < n;) {
        int32_t p = row[i];
        int pair = p < 0 && i + 1 < n && row[i + 1] == p;
        if (p == 0 || p > n || p < -n || (p < 0 && !pair)) {
          st = em_fail(EM_E_VALUE, "%s: pivots[%lld] = %d is not a pivot of a %lld x %lld LD "
                       "(1 to %lld, or a pair of equal negative ones for a 2 x 2 block)", op,
                       (long long)i + 1, (int)p, (long long)n, (long long)n, (long long)n);
          break;
        }
        i += pair ? 2 : 1;
      }
    }
    em_tensor_release(host);
  }
  if (st == EM_OK) st = load(B, nb, bs, n, k, 1, &x);
  int64_t batch = batch_count(nb, bs);
  if (st == EM_OK && batch > 0 && n > 0 && k > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_SYTRS;
    j.dt = LD->dtype;
    j.batch = batch;
    j.uplo = 'L';
    j.herm = herm && is_complex(LD->dtype);
    j.n = (int)n; j.nrhs = (int)k;
    j.a = data_of(ld); j.sa = n * n; j.lda = (int)(n > 1 ? n : 1);
    j.ipiv = data_of(piv); j.sp = n;
    j.b = data_of(x); j.sb = n * k; j.ldb = (int)(n > 1 ? n : 1);
    st = run_job(op, dev, &j);
  }
  em_ag_resume(on);
  em_tensor_release(ld);
  em_tensor_release(piv);
  if (st != EM_OK) {
    em_tensor_release(x);
    return st;
  }
  *X = x;
  return EM_OK;
}

/* -- solve / inv ---------------------------------------------------------- */

/* Which matrix LAPACK factors (check's EM_SOLVE_FACTOR_* bits): the info of
** a singular A and its inf/NaN depend on it. PyTorch 1.13 factors A^T where
** A is contiguous and real (its row-major buffer, handed over as it lies
** with trans 'T'), else A (a column-major copy, trans 'N'). Resolved before
** any staging copy, which may change A's layout. */
static int factor_choice(const em_tensor *A, int check) {
  if (check & (EM_SOLVE_FACTOR_A | EM_SOLVE_FACTOR_AT)) return check;
  int at = A && em_tensor_is_contiguous(A) && !is_complex(A->dtype);
  return check | (at ? EM_SOLVE_FACTOR_AT : EM_SOLVE_FACTOR_A);
}

em_status em_linalg_solve(const em_tensor *A, const em_tensor *B, int check, em_tensor **X,
                          em_tensor **info) {
  check = factor_choice(A, check);
  STAGED(EM_LAPACK_GESV, A, B, NULL, em_linalg_solve(h[0], h[1], check, &r[0], &r[1]), X, info, NULL, NULL);
  int fat = (check & EM_SOLVE_FACTOR_AT) != 0;
  check &= 3;
  const char *op = check == 2 ? "linalg.inv" : "linalg.solve";
  em_status st = check_matrix(op, "A", A, 1);
  if (st == EM_OK) st = check_matrix(op, "B", B, 0);
  if (st == EM_OK) st = check_same(op, A, B);
  if (st != EM_OK) return st;
  int64_t n = A->sizes[A->ndim - 1], k = B->sizes[B->ndim - 1];
  if (B->sizes[B->ndim - 2] != n)
    return em_fail(EM_E_VALUE, "%s: Incompatible shapes of A and B for the equation AX = B "
                   "(%lldx%lld and %lldx%lld)", op, (long long)n, (long long)n,
                   (long long)B->sizes[B->ndim - 2], (long long)k);
  int nb;
  int64_t bs[EM_MAX_DIMS];
  st = broadcast_batch(op, A, 2, B, 2, &nb, bs);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *piv = NULL, *x = NULL, *inf = NULL;
  /* A as it lies (row-major) is A^T column-major: solve A^T^T X = B
  ** (trans 'T'); or A's column-major copy, trans 'N' */
  st = load(A, nb, bs, n, n, !fat, &a);
  if (st == EM_OK) st = int_empty(nb, bs, n, EM_INT32, dev, &piv);
  if (st == EM_OK) st = int_empty(nb, bs, -1, EM_INT32, dev, &inf);
  if (st == EM_OK) st = load(B, nb, bs, n, k, 1, &x);
  int64_t batch = batch_count(nb, bs);
  if (st == EM_OK && batch > 0) {
    em_scalar z = {0};
    st = em_fill_(inf, z);
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_GESV;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = j.n = (int)n; j.nrhs = (int)k;
    j.trans = fat ? 'T' : 'N';
    j.a = data_of(a); j.sa = n * n; j.lda = (int)n;
    j.ipiv = data_of(piv); j.sp = n;
    j.b = data_of(x); j.sb = n * k; j.ldb = (int)n;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  }
  if (st == EM_OK && check && batch > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 0, nb, pre, sizeof pre, &code, &st)) {
      if (check == 2)
        st = em_fail(EM_E_VALUE, "%s: %sThe diagonal element %d is zero, the inversion could "
                     "not be completed because the input matrix is singular.", op, pre, code);
      else
        st = em_fail(EM_E_VALUE, "%s: %sThe solver failed because the input matrix is "
                     "singular.", op, pre);
    }
  }
  em_ag_resume(on);
  em_tensor_release(a);
  em_tensor_release(piv);
  if (st != EM_OK) {
    em_tensor_release(x);
    em_tensor_release(inf);
    return st;
  }
  *X = x;
  *info = inf;
  return EM_OK;
}

/* inv(A) by getrf and getri (fewer flops than solving A X = I; the C
** reference of bench/cref.c calls the same pair). A row-major copy of A is
** A^T column-major, whose inverse read row-major is inv(A): no transposing
** copy, and the result is contiguous. */
em_status em_linalg_inv(const em_tensor *A, int check, em_tensor **X, em_tensor **info) {
  check = factor_choice(A, check);
  STAGED(EM_LAPACK_GETRI, A, NULL, NULL, em_linalg_inv(h[0], check, &r[0], &r[1]), X, info, NULL, NULL);
  int fat = (check & EM_SOLVE_FACTOR_AT) != 0;
  check &= 3;
  const char *op = "linalg.inv";
  em_status st = check_matrix(op, "A", A, 1);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  int nb = A->ndim - 2;
  int64_t n = A->sizes[nb];
  em_device dev = A->storage->device;
  em_tensor *x = NULL, *piv = NULL, *inf = NULL;
  st = load(A, nb, A->sizes, n, n, !fat, &x);
  if (st == EM_OK) st = int_empty(nb, A->sizes, n, EM_INT32, dev, &piv);
  if (st == EM_OK) st = int_empty(nb, A->sizes, -1, EM_INT32, dev, &inf);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0) {
    em_scalar z = {0};
    st = em_fill_(inf, z);
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_GETRI;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = j.n = (int)n;
    j.trans = fat ? 'T' : 'N'; /* a singular A's getrs on I (cpu) */
    j.a = data_of(x); j.sa = n * n; j.lda = (int)n;
    j.ipiv = data_of(piv); j.sp = n;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  }
  if (st == EM_OK && check && batch > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 0, nb, pre, sizeof pre, &code, &st))
      st = em_fail(EM_E_VALUE, "%s: %sThe diagonal element %d is zero, the inversion could "
                   "not be completed because the input matrix is singular.", op, pre, code);
  }
  em_ag_resume(on);
  em_tensor_release(piv);
  if (st != EM_OK) {
    em_tensor_release(x);
    em_tensor_release(inf);
    return st;
  }
  *X = x;
  *info = inf;
  return EM_OK;
}

/* -- Cholesky ------------------------------------------------------------- */

/* The lower factor L (A = L L^H) from A's lower triangle; the strict upper
** triangle of the result is zeroed by the kernel (no tril pass after). */
em_status em_linalg_cholesky(const em_tensor *A, int check, em_tensor **L, em_tensor **info) {
  STAGED(EM_LAPACK_POTRF, A, NULL, NULL, em_linalg_cholesky(h[0], check, &r[0], &r[1]), L, info, NULL, NULL);
  const char *op = "linalg.cholesky";
  em_status st = check_matrix(op, "A", A, 1);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  int nb = A->ndim - 2;
  int64_t n = A->sizes[nb];
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *inf = NULL;
  /* row-major A is A^T column-major: its upper triangle is A's lower one,
  ** and potrf's U (A^T = U^T U) read row-major is L */
  st = load(A, nb, A->sizes, n, n, 0, &a);
  if (st == EM_OK) st = int_empty(nb, A->sizes, -1, EM_INT32, dev, &inf);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0) {
    em_scalar z = {0};
    st = em_fill_(inf, z);
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_POTRF;
    j.dt = A->dtype;
    j.batch = batch;
    j.n = (int)n;
    j.uplo = 'U';
    j.a = data_of(a); j.sa = n * n; j.lda = (int)n;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  }
  if (st == EM_OK && check && batch > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 0, nb, pre, sizeof pre, &code, &st))
      st = em_fail(EM_E_VALUE, "%s: %sThe factorization could not be completed because the "
                   "input is not positive-definite (the leading minor of order %d is not "
                   "positive-definite).", op, pre, code);
  }
  em_ag_resume(on);
  if (st != EM_OK) {
    em_tensor_release(a);
    em_tensor_release(inf);
    return st;
  }
  *L = a;
  *info = inf;
  return EM_OK;
}

/* -- Triangular solve ------------------------------------------------------ */

em_status em_linalg_solve_triangular(const em_tensor *A, const em_tensor *B, int upper, int left,
                                     int unitriangular, em_tensor **X) {
  STAGED(EM_LAPACK_TRSM, A, B, NULL, em_linalg_solve_triangular(h[0], h[1], upper, left, unitriangular, &r[0]), X, NULL, NULL, NULL);
  const char *op = "linalg.solve_triangular";
  em_status st = check_matrix(op, "A", A, 1);
  if (st == EM_OK) st = check_matrix(op, "B", B, 0);
  if (st == EM_OK) st = check_same(op, A, B);
  if (st != EM_OK) return st;
  int64_t n = A->sizes[A->ndim - 1], r = B->sizes[B->ndim - 2], c = B->sizes[B->ndim - 1];
  if ((left ? r : c) != n)
    return em_fail(EM_E_VALUE, "%s: Incompatible shapes of A and B for the equation %s "
                   "(%lldx%lld and %lldx%lld)", op, left ? "AX = B" : "XA = B", (long long)n,
                   (long long)n, (long long)r, (long long)c);
  int nb;
  int64_t bs[EM_MAX_DIMS];
  st = broadcast_batch(op, A, 2, B, 2, &nb, bs);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *x = NULL;
  /* row-major A is A^T column-major: trans 'T', the other triangle */
  st = load(A, nb, bs, n, n, 0, &a);
  if (st == EM_OK) st = load(B, nb, bs, r, c, 1, &x);
  int64_t batch = batch_count(nb, bs);
  if (st == EM_OK && batch > 0 && r > 0 && c > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_TRSM;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = (int)r; j.n = (int)c;
    j.side = left ? 'L' : 'R';
    j.uplo = upper ? 'L' : 'U';
    j.trans = 'T';
    j.diag = unitriangular ? 'U' : 'N';
    j.a = data_of(a); j.sa = n * n; j.lda = (int)n;
    j.b = data_of(x); j.sb = r * c; j.ldb = (int)r;
    st = run_job(op, dev, &j);
  }
  em_ag_resume(on);
  em_tensor_release(a);
  if (st != EM_OK) {
    em_tensor_release(x);
    return st;
  }
  *X = x;
  return EM_OK;
}

/* -- QR ------------------------------------------------------------------- */

em_status em_linalg_geqrf(const em_tensor *A, em_tensor **QR, em_tensor **tau) {
  STAGED(EM_LAPACK_GEQRF, A, NULL, NULL, em_linalg_geqrf(h[0], &r[0], &r[1]), QR, tau, NULL, NULL);
  const char *op = "geqrf";
  em_status st = check_matrix(op, "A", A, 0);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  int nb = A->ndim - 2;
  int64_t m = A->sizes[nb], n = A->sizes[nb + 1], k = m < n ? m : n;
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *t = NULL;
  st = load(A, nb, A->sizes, m, n, 1, &a);
  if (st == EM_OK) st = int_empty(nb, A->sizes, k, A->dtype, dev, &t);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0 && k > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_GEQRF;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = (int)m; j.n = (int)n;
    j.a = data_of(a); j.sa = m * n; j.lda = (int)m;
    j.w = data_of(t); j.sw = k;
    st = run_job(op, dev, &j);
  }
  em_ag_resume(on);
  if (st != EM_OK) {
    em_tensor_release(a);
    em_tensor_release(t);
    return st;
  }
  *QR = a;
  *tau = t;
  return EM_OK;
}

em_status em_linalg_householder_product(const em_tensor *A, const em_tensor *tau,
                                        em_tensor **Q) {
  STAGED(EM_LAPACK_ORGQR, A, tau, NULL, em_linalg_householder_product(h[0], h[1], &r[0]), Q, NULL, NULL, NULL);
  const char *op = "linalg.householder_product";
  em_status st = check_matrix(op, "A", A, 0);
  if (st == EM_OK) st = check_float(op, tau);
  if (st == EM_OK) st = em_same_device_check(op, A->storage->device, tau->storage->device);
  if (st != EM_OK) return st;
  int nb = A->ndim - 2;
  int64_t m = A->sizes[nb], n = A->sizes[nb + 1];
  if (tau->dtype != A->dtype)
    return em_fail(EM_E_TYPE, "%s: tau dtype %s does not match input dtype %s", op,
                   em_dtype_name(tau->dtype), em_dtype_name(A->dtype));
  if (m < n)
    return em_fail(EM_E_VALUE, "%s: input.shape[-2] must be greater than or equal to "
                   "input.shape[-1]", op);
  if (tau->ndim != A->ndim - 1)
    return em_fail(EM_E_VALUE, "%s: input.dim() - tau.dim() must be equal to 1 but got %d",
                   op, A->ndim - tau->ndim);
  int64_t k = tau->sizes[tau->ndim - 1];
  if (k > n)
    return em_fail(EM_E_VALUE, "%s: input.shape[-1] must be greater than or equal to "
                   "tau.shape[-1]", op);
  for (int d = 0; d < nb; d++)
    if (tau->sizes[d] != A->sizes[d])
      return em_fail(EM_E_VALUE, "%s: Expected batch dimensions of tau to be equal to "
                     "input.shape[:-2], but got %lld at dimension %d", op,
                     (long long)tau->sizes[d], d + 1);
  int on = em_ag_pause();
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *t = NULL;
  st = load(A, nb, A->sizes, m, n, 1, &a);
  if (st == EM_OK) st = int_empty(nb, A->sizes, k, A->dtype, dev, &t);
  if (st == EM_OK && em_tensor_numel(t) > 0) st = em_copy_(t, tau);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0 && m > 0 && n > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_ORGQR;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = (int)m; j.n = (int)n; j.k = (int)k;
    j.a = data_of(a); j.sa = m * n; j.lda = (int)m;
    j.w = data_of(t); j.sw = k;
    st = run_job(op, dev, &j);
  }
  em_ag_resume(on);
  em_tensor_release(t);
  if (st != EM_OK) {
    em_tensor_release(a);
    return st;
  }
  *Q = a;
  return EM_OK;
}

/* -- SVD ------------------------------------------------------------------ */

em_status em_linalg_svd(const em_tensor *A, int full_matrices, int compute_uv, em_tensor **U,
                        em_tensor **S, em_tensor **Vh) {
  STAGED(EM_LAPACK_GESDD, A, NULL, NULL, em_linalg_svd(h[0], full_matrices, compute_uv, &r[0], &r[1], &r[2]), U, S, Vh, NULL);
  const char *op = compute_uv ? "linalg.svd" : "linalg.svdvals";
  em_status st = check_matrix(op, "A", A, 0);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  int nb = A->ndim - 2;
  int64_t m = A->sizes[nb], n = A->sizes[nb + 1], k = m < n ? m : n;
  int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *s = NULL, *u = NULL, *vh = NULL, *inf = NULL;
  st = load(A, nb, A->sizes, m, n, 1, &a);
  if (st == EM_OK) st = int_empty(nb, A->sizes, k, value_dtype(A->dtype), dev, &s);
  if (st == EM_OK && compute_uv) st = colmajor_empty(nb, A->sizes, m, ucols, A->dtype, dev, &u);
  if (st == EM_OK && compute_uv) st = colmajor_empty(nb, A->sizes, vrows, n, A->dtype, dev, &vh);
  if (st == EM_OK) st = int_empty(nb, A->sizes, -1, EM_INT32, dev, &inf);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0 && k == 0 && compute_uv && full_matrices) {
    /* U and V^H of an empty matrix are identities */
    em_tensor *e = NULL;
    em_scalar z = {0}, one;
    one.kind = EM_SCALAR_FLOAT;
    one.f = 1;
    st = em_fill_(u, z);
    if (st == EM_OK) st = em_fill_(vh, z);
    if (st == EM_OK && m > 0) st = em_diagonal(u, 0, -2, -1, &e);
    if (st == EM_OK && e) st = em_fill_(e, one);
    em_tensor_release(e);
    e = NULL;
    if (st == EM_OK && n > 0) st = em_diagonal(vh, 0, -2, -1, &e);
    if (st == EM_OK && e) st = em_fill_(e, one);
    em_tensor_release(e);
  }
  if (st == EM_OK && batch > 0 && k > 0) {
    em_scalar z = {0};
    st = em_fill_(inf, z);
  }
  if (st == EM_OK && batch > 0 && k > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_GESDD;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = (int)m; j.n = (int)n;
    j.jobz = compute_uv ? (full_matrices ? 'A' : 'S') : 'N';
    j.a = data_of(a); j.sa = m * n; j.lda = (int)m;
    j.w = data_of(s); j.sw = k;
    j.b = compute_uv ? data_of(u) : NULL; j.sb = m * ucols; j.ldb = (int)m;
    j.c = compute_uv ? data_of(vh) : NULL; j.sc = vrows * n; j.ldc = (int)vrows;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  }
  if (st == EM_OK && batch > 0 && k > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 1, nb, pre, sizeof pre, &code, &st))
      st = em_fail(EM_E_VALUE, "%s: %sThe algorithm failed to converge because the input "
                   "matrix is ill-conditioned or has too many repeated singular values "
                   "(error code: %d).", op, pre, code);
  }
  em_ag_resume(on);
  em_tensor_release(a);
  em_tensor_release(inf);
  if (st != EM_OK) {
    em_tensor_release(s);
    em_tensor_release(u);
    em_tensor_release(vh);
    return st;
  }
  *S = s;
  if (compute_uv) {
    *U = u;
    *Vh = vh;
  }
  return EM_OK;
}

/* -- Symmetric eigensolver ------------------------------------------------ */

em_status em_linalg_eigh(const em_tensor *A, int upper, int compute_v, em_tensor **L,
                         em_tensor **V) {
  STAGED(EM_LAPACK_SYEVD, A, NULL, NULL, em_linalg_eigh(h[0], upper, compute_v, &r[0], &r[1]), L, V, NULL, NULL);
  const char *op = compute_v ? "linalg.eigh" : "linalg.eigvalsh";
  em_status st = check_matrix(op, "A", A, 1);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  int nb = A->ndim - 2;
  int64_t n = A->sizes[nb];
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *w = NULL, *inf = NULL, *v = NULL;
  /* real: row-major A is A^T column-major, so its other triangle. complex:
  ** that would be conj(A) (Hermitian), so A is copied column-major */
  int cx = is_complex(A->dtype);
  st = load(A, nb, A->sizes, n, n, cx, &a);
  if (st == EM_OK) st = int_empty(nb, A->sizes, n, value_dtype(A->dtype), dev, &w);
  if (st == EM_OK) st = int_empty(nb, A->sizes, -1, EM_INT32, dev, &inf);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0 && n > 0) {
    em_scalar z = {0};
    st = em_fill_(inf, z);
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_SYEVD;
    j.dt = A->dtype;
    j.batch = batch;
    j.n = (int)n;
    j.jobz = compute_v ? 'V' : 'N';
    j.uplo = (upper != 0) == (cx != 0) ? 'U' : 'L';
    j.a = data_of(a); j.sa = n * n; j.lda = (int)n;
    j.w = data_of(w); j.sw = n;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 1, nb, pre, sizeof pre, &code, &st))
      st = em_fail(EM_E_VALUE, "%s: %sThe algorithm failed to converge because the input "
                   "matrix is ill-conditioned or has too many repeated eigenvalues (error "
                   "code: %d).", op, pre, code);
  }
  /* the eigenvectors are column-major in the buffer: its transpose (a
  ** complex a is that view already) */
  if (st == EM_OK && compute_v) {
    if (cx) {
      v = a;
      a = NULL;
    } else {
      st = em_transpose(a, -2, -1, &v);
    }
  }
  em_ag_resume(on);
  em_tensor_release(a);
  em_tensor_release(inf);
  if (st != EM_OK) {
    em_tensor_release(w);
    return st;
  }
  *L = w;
  if (compute_v) *V = v;
  return EM_OK;
}

/* -- General eigensolver ---------------------------------------------------- */

/* The first batch element (0-based) of the buffer a (batch x nvals values
** of a's value type, contiguous) that holds an inf or NaN, or -1. The meta
** device has no values: -1. Host memory only: eig runs host-staged on
** every device without GEEV (cuda's lapack_runs says no). */
static int64_t first_nonfinite(const em_tensor *a, int64_t batch, int64_t nvals) {
  const void *p = a->storage->data ? data_of(a) : NULL;
  int f32 = value_dtype(a->dtype) == EM_FLOAT32;
  for (int64_t i = 0; p && i < batch; i++)
    for (int64_t e = i * nvals; e < (i + 1) * nvals; e++)
      if (!isfinite(f32 ? (double)((const float *)p)[e] : ((const double *)p)[e])) return i;
  return -1;
}

/* Eigenvalues L [..., n] and right eigenvectors V [..., n, n] (column-
** major, unit norm, as geev gives them) of a square A, complex64 for
** float32/complex64 input, complex128 for float64/complex128. */
em_status em_linalg_eig(const em_tensor *A, int compute_v, em_tensor **L, em_tensor **V) {
  STAGED(EM_LAPACK_GEEV, A, NULL, NULL, em_linalg_eig(h[0], compute_v, &r[0], &r[1]), L, V, NULL, NULL);
  const char *op = compute_v ? "linalg.eig" : "linalg.eigvals";
  em_status st = check_matrix(op, "A", A, 1);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  int nb = A->ndim - 2;
  int64_t n = A->sizes[nb];
  em_dtype cdt = complex_dtype(A->dtype);
  em_device dev = A->storage->device;
  em_tensor *a = NULL, *w = NULL, *v = NULL, *inf = NULL;
  st = load(A, nb, A->sizes, n, n, 1, &a);
  if (st == EM_OK) st = int_empty(nb, A->sizes, n, cdt, dev, &w);
  if (st == EM_OK && compute_v) st = colmajor_empty(nb, A->sizes, n, n, cdt, dev, &v);
  if (st == EM_OK) st = int_empty(nb, A->sizes, -1, EM_INT32, dev, &inf);
  int64_t batch = batch_count(nb, A->sizes);
  if (st == EM_OK && batch > 0 && n > 0) {
    int64_t bad = first_nonfinite(a, batch, n * n * (is_complex(A->dtype) ? 2 : 1));
    if (bad >= 0) {
      char pre[64];
      batch_prefix(pre, sizeof pre, nb, bad);
      st = em_fail(EM_E_VALUE, "%s: %sinput tensor should not contain infs or NaNs.", op, pre);
    }
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    em_scalar z = {0};
    st = em_fill_(inf, z);
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_GEEV;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = j.n = (int)n;
    j.jobz = compute_v ? 'V' : 'N';
    j.a = data_of(a); j.sa = n * n; j.lda = (int)n;
    j.w = data_of(w); j.sw = n;
    j.b = compute_v ? data_of(v) : NULL; j.sb = n * n; j.ldb = (int)n;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  }
  if (st == EM_OK && batch > 0 && n > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 1, nb, pre, sizeof pre, &code, &st))
      st = em_fail(EM_E_VALUE, "%s: %sThe algorithm failed to converge because the input "
                   "matrix is ill-conditioned or has too many repeated eigenvalues (error "
                   "code: %d).", op, pre, code);
  }
  em_ag_resume(on);
  em_tensor_release(a);
  em_tensor_release(inf);
  if (st != EM_OK) {
    em_tensor_release(w);
    em_tensor_release(v);
    return st;
  }
  *L = w;
  if (compute_v) *V = v;
  return EM_OK;
}

/* -- Least squares -------------------------------------------------------- */

/* X [bs..., n, k] minimising |A X - B| (A [.., m, n], B [.., m, k],
** batch dims broadcast); rank (int64, batch shape) for gelsy/gelsd/gelss,
** S [bs..., min(m,n)] for gelsd/gelss (else NULL); R: B's buffer
** [bs..., max(m,n), k] whose rows n+1..m hold the residual rows for
** gels/gelsd/gelss of a full-rank A (the caller sums their squares). */
em_status em_linalg_lstsq(const em_tensor *A, const em_tensor *B, double rcond, int driver,
                          em_tensor **X, em_tensor **rank, em_tensor **S, em_tensor **R) {
  STAGED(EM_LAPACK_GELS, A, B, NULL, em_linalg_lstsq(h[0], h[1], rcond, driver, &r[0], &r[1], &r[2], &r[3]), X, rank, S, R);
  const char *op = "linalg.lstsq";
  em_status st = check_matrix(op, "A", A, 0);
  if (st == EM_OK) st = check_matrix(op, "B", B, 0);
  if (st == EM_OK) st = check_same(op, A, B);
  if (st != EM_OK) return st;
  if (driver < EM_LSTSQ_GELS || driver > EM_LSTSQ_GELSS)
    return em_fail(EM_E_VALUE, "%s: unknown driver %d", op, driver);
  int64_t m = A->sizes[A->ndim - 2], n = A->sizes[A->ndim - 1], k = B->sizes[B->ndim - 1];
  if (B->sizes[B->ndim - 2] != m)
    return em_fail(EM_E_VALUE, "%s: input.size(-2) should match other.size(-2)", op);
  int nb;
  int64_t bs[EM_MAX_DIMS];
  st = broadcast_batch(op, A, 2, B, 2, &nb, bs);
  if (st != EM_OK) return st;
  int on = em_ag_pause();
  em_device dev = A->storage->device;
  int64_t mx = m > n ? m : n, mn = m < n ? m : n;
  em_tensor *a = NULL, *b = NULL, *rk = NULL, *s = NULL, *x = NULL, *inf = NULL;
  st = load(A, nb, bs, m, n, 1, &a);
  if (st == EM_OK) st = colmajor_empty(nb, bs, mx, k, A->dtype, dev, &b);
  if (st == EM_OK && em_tensor_numel(b) > 0) {
    em_scalar z = {0};
    st = em_fill_(b, z);
  }
  if (st == EM_OK && m > 0 && em_tensor_numel(b) > 0) {
    em_tensor *top = NULL;
    st = em_narrow(b, -2, 1, m, &top);
    if (st == EM_OK) st = em_copy_(top, B);
    em_tensor_release(top);
  }
  int want_rank = driver != EM_LSTSQ_GELS, want_s = driver == EM_LSTSQ_GELSD ||
                                                     driver == EM_LSTSQ_GELSS;
  if (st == EM_OK && want_rank) st = int_empty(nb, bs, -1, EM_INT64, dev, &rk);
  if (st == EM_OK && want_s) st = int_empty(nb, bs, mn, value_dtype(A->dtype), dev, &s);
  if (st == EM_OK) st = int_empty(nb, bs, -1, EM_INT32, dev, &inf);
  int64_t batch = batch_count(nb, bs);
  if (st == EM_OK && rk && batch > 0) {
    em_scalar z = {0};
    st = em_fill_(rk, z);
  }
  if (st == EM_OK && batch > 0 && mn > 0 && k > 0) {
    em_lapack_job j = {0};
    j.op = EM_LAPACK_GELS;
    j.dt = A->dtype;
    j.batch = batch;
    j.m = (int)m; j.n = (int)n; j.nrhs = (int)k;
    j.driver = (em_lstsq_driver)driver;
    j.rcond = rcond;
    j.a = data_of(a); j.sa = m * n; j.lda = (int)m;
    j.b = data_of(b); j.sb = mx * k; j.ldb = (int)mx;
    j.w = s ? data_of(s) : NULL; j.sw = mn;
    j.rank = rk ? data_of(rk) : NULL;
    j.info = data_of(inf);
    st = run_job(op, dev, &j);
  } else if (st == EM_OK && s && em_tensor_numel(s) > 0) {
    em_scalar z = {0};
    st = em_fill_(s, z);
  }
  if (st == EM_OK && batch > 0 && mn > 0 && k > 0) {
    char pre[64];
    int code;
    if (first_failure(inf, batch, 0, nb, pre, sizeof pre, &code, &st))
      st = em_fail(EM_E_VALUE, driver == EM_LSTSQ_GELS
                   ? "%s: %sThe least squares solution could not be computed because the "
                     "input matrix does not have full rank (error code: %d)."
                   : "%s: %sThe algorithm failed to converge (error code: %d).",
                   op, pre, code);
  }
  if (st == EM_OK) st = em_narrow(b, -2, 1, n, &x);
  em_ag_resume(on);
  em_tensor_release(a);
  em_tensor_release(inf);
  if (st != EM_OK) {
    em_tensor_release(b);
    em_tensor_release(rk);
    em_tensor_release(s);
    em_tensor_release(x);
    return st;
  }
  *X = x;
  *rank = rk;
  *S = s;
  *R = b;
  return EM_OK;
}
