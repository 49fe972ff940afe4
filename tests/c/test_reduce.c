/* test_reduce.c -- engine invariants of reductions and linear algebra:
** results do not depend on the memory layout of the input, float sums are
** accurate (pairwise), failures leave outputs untouched and references
** balanced, matmul agrees with a naive reference on transposed, strided and
** broadcast operands for every supported dtype. */
#include <math.h>
#include <stdlib.h>

#include "ctest.h"
#include "core/core.h"

/* a [n0, n1, n2] float64 tensor holding 0..n-1 scrambled */
static em_tensor *make3(em_dtype dt, int64_t n0, int64_t n1, int64_t n2) {
  int64_t sizes[3] = {n0, n1, n2};
  em_tensor *t;
  if (em_empty(3, sizes, dt, em_cpu(), &t) != EM_OK) return NULL;
  int64_t n = n0 * n1 * n2;
  for (int64_t i = 0; i < n; i++) {
    em_scalar v = {EM_SCALAR_INT, (i * 37) % n - n / 2, 0};
    em_set_flat(t, i, v);
  }
  return t;
}

static int same_values(const em_tensor *a, const em_tensor *b, double tol) {
  if (em_tensor_numel(a) != em_tensor_numel(b) || em_tensor_ndim(a) != em_tensor_ndim(b))
    return 0;
  for (int64_t i = 0; i < em_tensor_numel(a); i++) {
    double x, y;
    em_get_f64(a, i, &x);
    em_get_f64(b, i, &y);
    if (!(fabs(x - y) <= tol * (1 + fabs(y)))) return 0;
  }
  return 1;
}

TEST(reductions_do_not_depend_on_layout) {
  /* t is [4, 5, 6]; p is the same values stored as a [6, 5, 4] base seen
  ** through strides (1, 4, 20) */
  em_tensor *t = make3(EM_FLOAT32, 4, 5, 6);
  int64_t bs[3] = {6, 5, 4};
  em_tensor *base;
  CHECK_OK(em_empty(3, bs, EM_FLOAT32, em_cpu(), &base));
  int64_t ps[3] = {4, 5, 6}, pst[3] = {1, 4, 20};
  em_tensor *p;
  CHECK_OK(em_as_strided(base, 3, ps, pst, 0, &p));
  CHECK_OK(em_copy_(p, t));
  int64_t dimsets[4][2] = {{1, 0}, {2, 0}, {-1, 0}, {1, 3}};
  int nds[4] = {1, 1, 1, 2};
  for (int k = 0; k < 4; k++) {
    for (int op = EM_REDUCE_SUM; op <= EM_REDUCE_ANY; op++) {
      em_tensor *r1, *r2;
      CHECK_OK(em_reduce((em_reduce_op)op, t, nds[k], dimsets[k], k % 2, -1, &r1));
      CHECK_OK(em_reduce((em_reduce_op)op, p, nds[k], dimsets[k], k % 2, -1, &r2));
      CHECK(same_values(r1, r2, 1e-6));
      em_tensor_release(r1);
      em_tensor_release(r2);
    }
    em_tensor *v1, *v2;
    CHECK_OK(em_var(t, nds[k], dimsets[k], 1, 0, 1, &v1));
    CHECK_OK(em_var(p, nds[k], dimsets[k], 1, 0, 1, &v2));
    CHECK(same_values(v1, v2, 1e-6));
    em_tensor_release(v1);
    em_tensor_release(v2);
  }
  em_tensor_release(t);
  em_tensor_release(p);
  em_tensor_release(base);
}

TEST(float32_sum_is_pairwise_accurate) {
  /* 2^24 + a few ones: a float32 running sum would stop at 2^24 */
  int64_t n = (1 << 24) + 1000;
  int64_t sz[1] = {n};
  em_tensor *t, *s;
  em_scalar tenth = {EM_SCALAR_FLOAT, 0, 0.1};
  CHECK_OK(em_full(1, sz, tenth, EM_FLOAT32, em_cpu(), &t));
  CHECK_OK(em_reduce(EM_REDUCE_SUM, t, 0, NULL, 0, -1, &s));
  double got, exact = (double)n * (double)0.1f;
  em_get_f64(s, 0, &got);
  CHECK(fabs(got - exact) / exact < 1e-7);
  em_tensor_release(s);
  em_tensor_release(t);
}

/* Large single-output reductions run in fixed chunks whose partials are
** combined; every op's combine is checked against a naive long double loop. */
TEST(chunked_full_reductions_match_a_naive_reference) {
  int64_t n = 300001;
  int64_t sz[1] = {n};
  em_tensor *t, *q, *nanny;
  CHECK_OK(em_empty(1, sz, EM_FLOAT64, em_cpu(), &t));
  CHECK_OK(em_empty(1, sz, EM_FLOAT64, em_cpu(), &q));
  CHECK_OK(em_empty(1, sz, EM_FLOAT64, em_cpu(), &nanny));
  double *x = em_tensor_data(t), *y = em_tensor_data(q), *z = em_tensor_data(nanny);
  long double sum = 0, prod = 1, sq = 0, lse = 0, zs = 0;
  double mx = -INFINITY, mn = INFINITY;
  int64_t nnz = 0, zc = 0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = sin((double)i) * 10 + (i % 7 == 0 ? 100 : 0) + (i == 123457 ? 1000 : 0);
    if (i % 11 == 0) x[i] = 0;
    y[i] = 1 + 1e-6 * sin((double)i);
    z[i] = i % 5 == 0 ? NAN : x[i];
    sum += x[i]; prod *= y[i]; sq += (long double)x[i] * x[i];
    if (x[i] > mx) mx = x[i];
    if (x[i] < mn) mn = x[i];
    nnz += x[i] != 0;
    if (i % 5) { zs += z[i]; zc++; }
  }
  for (int64_t i = 0; i < n; i++) lse += expl((long double)x[i] - mx);
  long double mean = sum / n, m2 = 0;
  for (int64_t i = 0; i < n; i++) m2 += (x[i] - mean) * (x[i] - mean);
  struct { em_reduce_op op; const em_tensor *in; double want; } cases[] = {
      {EM_REDUCE_SUM, t, (double)sum},      {EM_REDUCE_MEAN, t, (double)mean},
      {EM_REDUCE_PROD, q, (double)prod},    {EM_REDUCE_AMAX, t, mx},
      {EM_REDUCE_AMIN, t, mn},              {EM_REDUCE_COUNT_NONZERO, t, (double)nnz},
      {EM_REDUCE_ALL, t, 0},                {EM_REDUCE_ANY, t, 1},
      {EM_REDUCE_ALL, q, 1},                {EM_REDUCE_NANSUM, nanny, (double)zs},
      {EM_REDUCE_NANMEAN, nanny, (double)(zs / zc)}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    em_tensor *r;
    double got;
    CHECK_OK(em_reduce(cases[k].op, cases[k].in, 0, NULL, 0, -1, &r));
    em_get_f64(r, 0, &got);
    if (!(fabs(got - cases[k].want) <= 1e-12 * (1 + fabs(cases[k].want))))
      printf("  op %d: got %.17g want %.17g\n", (int)cases[k].op, got, cases[k].want);
    CHECK(fabs(got - cases[k].want) <= 1e-12 * (1 + fabs(cases[k].want)));
    em_tensor_release(r);
  }
  em_tensor *r;
  double got;
  CHECK_OK(em_var(t, 0, NULL, 1, 0, 0, &r));
  em_get_f64(r, 0, &got);
  CHECK(fabs(got - (double)(m2 / (n - 1))) <= 1e-12 * (double)(m2 / (n - 1)));
  em_tensor_release(r);
  CHECK_OK(em_norm(t, 2, 0, NULL, 0, -1, &r));
  em_get_f64(r, 0, &got);
  CHECK(fabs(got - sqrt((double)sq)) <= 1e-12 * sqrt((double)sq));
  em_tensor_release(r);
  CHECK_OK(em_norm(t, INFINITY, 0, NULL, 0, -1, &r));
  em_get_f64(r, 0, &got);
  CHECK(got == mx && mx > 990);  /* the planted 1000 + sin term is the largest |x| */
  em_tensor_release(r);
  CHECK_OK(em_logsumexp(t, 0, NULL, 0, &r));
  em_get_f64(r, 0, &got);
  CHECK(fabs(got - (double)(logl(lse) + mx)) <= 1e-12 * fabs(got));
  em_tensor_release(r);
  em_tensor_release(t);
  em_tensor_release(q);
  em_tensor_release(nanny);
}

TEST(failures_leave_outputs_and_references_alone) {
  em_tensor *t = make3(EM_INT64, 2, 3, 4);
  em_tensor *out = (em_tensor *)0x1;
  int64_t bad[1] = {4}, dup[2] = {1, -3};
  CHECK_ERR(em_reduce(EM_REDUCE_SUM, t, 1, bad, 0, -1, &out),
            "sum: dimension 4 out of range (expected to be in range of [-3, 3])");
  CHECK_ERR(em_reduce(EM_REDUCE_SUM, t, 2, dup, 0, -1, &out),
            "dim 1 appears multiple times");
  CHECK_ERR(em_reduce(EM_REDUCE_MEAN, t, 0, NULL, 0, -1, &out), "Got: Long");
  CHECK_ERR(em_var(t, 0, NULL, 1, 0, 0, &out), "only support floating point");
  CHECK(out == (em_tensor *)0x1);
  CHECK(em_tensor_refcount(t) == 1);
  em_tensor *f;
  CHECK_OK(em_to(t, EM_FLOAT32, em_cpu(), 0, &f));
  int64_t sz[2] = {3, 5};
  em_tensor *m, *r;
  CHECK_OK(em_zeros(2, sz, EM_FLOAT32, em_cpu(), &m));
  CHECK_ERR(em_matmul(f, m, &out), "cannot be multiplied");
  CHECK(out == (em_tensor *)0x1);
  /* successful products leave the operands' reference counts as they were */
  int64_t sz2[2] = {4, 5};
  em_tensor *m2;
  CHECK_OK(em_zeros(2, sz2, EM_FLOAT32, em_cpu(), &m2));
  CHECK_OK(em_matmul(f, m2, &r));
  CHECK(em_tensor_refcount(f) == 1 && em_tensor_refcount(m2) == 1);
  em_tensor_release(r);
  em_tensor_release(m);
  em_tensor_release(m2);
  em_tensor_release(f);
  em_tensor_release(t);
}

/* naive C[b, i, j] = sum_k A[b, i, k] B[b, k, j] in double over flat reads,
** with A and B given as [B, m, k] / [B, k, n] tensors (any layout) */
static double ref_at(const em_tensor *a, const em_tensor *b, int64_t bi, int64_t i,
                     int64_t j) {
  const int64_t *as = em_tensor_sizes(a), *bs = em_tensor_sizes(b);
  int64_t m = as[1], k = as[2], n = bs[2];
  double s = 0;
  for (int64_t x = 0; x < k; x++) {
    double av, bv;
    em_get_f64(a, bi * m * k + i * k + x, &av);
    em_get_f64(b, bi * k * n + x * n + j, &bv);
    s += av * bv;
  }
  return s;
}

TEST(matmul_matches_naive_on_strided_operands_for_every_dtype) {
  em_dtype dts[6] = {EM_FLOAT32, EM_FLOAT64, EM_INT64, EM_INT32, EM_FLOAT16, EM_BFLOAT16};
  for (int d = 0; d < 6; d++) {
    /* A: [2, 3, 4] seen transposed from a [2, 4, 3] base; B: [2, 4, 5]
    ** with columns taken every other element from a [2, 4, 10] base */
    em_tensor *abase = make3(dts[d], 2, 4, 3), *bbase = make3(dts[d], 2, 4, 10);
    int64_t asz[3] = {2, 3, 4}, ast[3] = {12, 1, 3};
    int64_t bsz[3] = {2, 4, 5}, bst[3] = {40, 10, 2};
    em_tensor *a, *b, *c;
    CHECK_OK(em_as_strided(abase, 3, asz, ast, 0, &a));
    CHECK_OK(em_as_strided(bbase, 3, bsz, bst, 1, &b));
    /* keep the values small so that half types hold the products exactly */
    if (dts[d] == EM_FLOAT16 || dts[d] == EM_BFLOAT16) {
      for (int64_t i = 0; i < 24; i++) {
        em_scalar v = {EM_SCALAR_INT, i % 5 - 2, 0};
        em_set_flat(abase, i, v);
      }
      for (int64_t i = 0; i < 80; i++) {
        em_scalar v = {EM_SCALAR_INT, i % 3 - 1, 0};
        em_set_flat(bbase, i, v);
      }
    }
    CHECK_OK(em_matmul(a, b, &c));
    CHECK(em_tensor_dtype(c) == dts[d]);
    int ok = 1;
    for (int64_t bi = 0; bi < 2; bi++)
      for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 5; j++) {
          double got;
          em_get_f64(c, bi * 15 + i * 5 + j, &got);
          if (fabs(got - ref_at(a, b, bi, i, j)) > 1e-3 * (1 + fabs(got))) ok = 0;
        }
    CHECK(ok);
    em_tensor_release(a);
    em_tensor_release(b);
    em_tensor_release(c);
    em_tensor_release(abase);
    em_tensor_release(bbase);
  }
}

TEST(sort_is_stable_and_unique_inverts) {
  int64_t sz[1] = {8};
  em_tensor *t, *v, *ix, *u, *inv, *cnt;
  CHECK_OK(em_empty(1, sz, EM_INT32, em_cpu(), &t));
  int vals[8] = {3, 1, 3, 2, 1, 3, 2, 1};
  for (int i = 0; i < 8; i++) {
    em_scalar s = {EM_SCALAR_INT, vals[i], 0};
    em_set_flat(t, i, s);
  }
  CHECK_OK(em_sort(t, 1, 1, &v, &ix));
  int64_t want[8] = {1, 3, 6, 4, 7, 2, 5, 8};
  int ok = 1;
  for (int i = 0; i < 8; i++) {
    int64_t g;
    em_get_i64(ix, i, &g);
    if (g != want[i]) ok = 0;
  }
  CHECK(ok);
  CHECK_OK(em_unique(t, &u, &inv, &cnt));
  CHECK(em_tensor_numel(u) == 3);
  ok = 1;
  for (int i = 0; i < 8; i++) {
    int64_t p, uv;
    em_get_i64(inv, i, &p);
    em_get_i64(u, p - 1, &uv);
    if (uv != vals[i]) ok = 0;
  }
  CHECK(ok);
  em_tensor_release(t);
  em_tensor_release(v);
  em_tensor_release(ix);
  em_tensor_release(u);
  em_tensor_release(inv);
  em_tensor_release(cnt);
}

TEST(blas_thread_count_is_settable) {
  int before = em_blas_get_num_threads();
  em_blas_set_num_threads(1);
  CHECK(em_blas_get_num_threads() == 1);
  em_blas_set_num_threads(0);  /* clamped */
  CHECK(em_blas_get_num_threads() == 1);
  em_blas_set_num_threads(before);
  CHECK(em_blas_get_num_threads() == before);
}

/* softmax / log_softmax of float32 over a contiguous dim (the vector path
** of reduce.c) against a double-precision reference, and against the
** general path (a transposed input, strided lanes): lanes with -inf, a NaN,
** +inf and all -inf give the general path's values. */
TEST(softmax_f32_contiguous_lanes_match_reference_and_strided_path) {
  enum { R = 6, L = 301 };
  int64_t sz[2] = {R, L}, szt[2] = {L, R};
  em_tensor *t, *tt, *tc;
  CHECK_OK(em_empty(2, sz, EM_FLOAT32, em_cpu(), &t));
  float *p = em_tensor_data(t);
  for (int i = 0; i < R * L; i++) p[i] = (float)((i * 7919) % 4001) * 0.02f - 40.0f;
  p[1 * L + 5] = -INFINITY;
  p[2 * L + 7] = NAN;
  p[3 * L + 9] = INFINITY;
  for (int j = 0; j < L; j++) p[4 * L + j] = -INFINITY;
  /* the same values laid out transposed: a strided dim 1 after transpose */
  CHECK_OK(em_empty(2, szt, EM_FLOAT32, em_cpu(), &tc));
  float *q = em_tensor_data(tc);
  for (int i = 0; i < R; i++)
    for (int j = 0; j < L; j++) q[j * R + i] = p[i * L + j];
  CHECK_OK(em_transpose(tc, 1, 2, &tt));
  for (int lg = 0; lg < 2; lg++) {
    em_tensor *a, *b;
    CHECK_OK(em_softmax(t, 2, lg, -1, &a));
    CHECK_OK(em_softmax(tt, 2, lg, -1, &b));
    const float *fa = em_tensor_data(a);
    em_tensor *bc;
    CHECK_OK(em_contiguous(b, &bc));
    const float *fb = em_tensor_data(bc);
    int bad = 0;
    for (int i = 0; i < R; i++) {
      double m = -INFINITY, s = 0;
      for (int j = 0; j < L; j++) m = p[i * L + j] > m ? p[i * L + j] : m;
      for (int j = 0; j < L; j++) s += exp((double)p[i * L + j] - m);
      for (int j = 0; j < L; j++) {
        float x = fa[i * L + j], y = fb[i * L + j];
        if (i == 0 || i == 1 || i == 5) { /* finite lanes: the reference */
          double want = lg ? (double)p[i * L + j] - m - log(s) : exp((double)p[i * L + j] - m) / s;
          /* softmax: x - max is rounded to float before exp (as in
          ** PyTorch), a relative error of up to |x - max| * 2^-24, then
          ** exp's ulp and the final rounding */
          double dx = fabs((double)p[i * L + j] - m);
          double tol = lg ? 1e-5 + 1e-6 * fabs(want) : want * (3e-7 + dx * 0x1p-24) + 1e-37;
          bad += !((double)x == want || fabs((double)x - want) <= tol);
        }
        /* every lane: the general path's value, NaN for NaN */
        bad += (x != x) != (y != y);
        if (x == x) bad += !(x == y || fabsf(x - y) <= 1e-5f + 1e-5f * fabsf(y));
      }
    }
    CHECK(bad == 0);
    em_tensor_release(a);
    em_tensor_release(b);
    em_tensor_release(bc);
  }
  em_tensor_release(t);
  em_tensor_release(tt);
  em_tensor_release(tc);
}

int main(void) {
  RUN(reductions_do_not_depend_on_layout);
  RUN(float32_sum_is_pairwise_accurate);
  RUN(chunked_full_reductions_match_a_naive_reference);
  RUN(failures_leave_outputs_and_references_alone);
  RUN(matmul_matches_naive_on_strided_operands_for_every_dtype);
  RUN(sort_is_stable_and_unique_inverts);
  RUN(blas_thread_count_is_settable);
  RUN(softmax_f32_contiguous_lanes_match_reference_and_strided_path);
  return CTEST_END();
}
