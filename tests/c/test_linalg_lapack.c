/*
** test_linalg_lapack.c -- the LAPACK primitives of ops/linalg_lapack.c as
** an embedding host calls them: values, inputs left unwritten, results
** column-major, info per batch element instead of an error (check == 0),
** PyTorch's messages with 1-based batch elements, the meta device giving
** shapes without values, and a batch of small matrices solved in parallel
** agreeing with one matrix at a time. (tests/lua/linalg_lapack_spec.lua
** compares every function with torch.linalg.)
*/
#include <math.h>
#include <string.h>

#include "ctest.h"

static em_tensor *mat(int64_t b, int64_t m, int64_t n, const double *v, em_device dev) {
  int64_t sz[3] = {b, m, n};
  em_tensor *t = NULL;
  int nd = b > 0 ? 3 : 2;
  CHECK_OK(em_empty(nd, b > 0 ? sz : sz + 1, EM_FLOAT64, dev, &t));
  if (v)
    for (int64_t i = 0; i < (b > 0 ? b : 1) * m * n; i++) {
      em_scalar s = {EM_SCALAR_FLOAT, 0, v[i]};
      CHECK_OK(em_set_flat(t, i, s));
    }
  return t;
}

static double at(const em_tensor *t, int64_t i) {
  double v = NAN;
  CHECK_OK(em_get_f64(t, i, &v));
  return v;
}

TEST(solve_values_and_layout) {
  const double a[] = {4, 1, 2, 3}, b[] = {1, 2};
  em_tensor *A = mat(0, 2, 2, a, em_cpu()), *B = mat(0, 2, 1, b, em_cpu()), *X = NULL, *info = NULL;
  uint64_t v0 = em_storage_version(em_tensor_storage(A));
  CHECK_OK(em_linalg_solve(A, B, 1, &X, &info));
  /* 4x + y = 1, 2x + 3y = 2: x = 0.1, y = 0.6 */
  CHECK(fabs(at(X, 0) - 0.1) < 1e-15 && fabs(at(X, 1) - 0.6) < 1e-15);
  CHECK(at(info, 0) == 0);
  CHECK(em_storage_version(em_tensor_storage(A)) == v0); /* A is not written */
  CHECK(at(A, 0) == 4 && at(A, 3) == 3);
  em_tensor_release(X);
  /* column-major results: strides (1, rows) */
  em_tensor *LU = NULL, *piv = NULL, *inf2 = NULL;
  CHECK_OK(em_linalg_lu_factor(A, 1, &LU, &piv, &inf2));
  CHECK(em_tensor_strides(LU)[0] == 1 && em_tensor_strides(LU)[1] == 2);
  CHECK(em_tensor_dtype(piv) == EM_INT32);
  CHECK(at(piv, 0) == 1 && at(piv, 1) == 2); /* 1-based, as LAPACK gives them */
  em_tensor_release(LU);
  em_tensor_release(piv);
  em_tensor_release(inf2);
  em_tensor_release(info);
  em_tensor_release(A);
  em_tensor_release(B);
}

TEST(batched_failures_name_the_1_based_element) {
  const double a[] = {1, 0, 0, 1, 1, 2, 2, 4, -1, 0, 0, 1};
  em_tensor *A = mat(3, 2, 2, a, em_cpu()), *L = NULL, *info = NULL;
  CHECK_ERR(em_linalg_cholesky(A, 1, &L, &info),
            "linalg.cholesky: (Batch element 2): The factorization could not be completed "
            "because the input is not positive-definite (the leading minor of order 2 is not "
            "positive-definite).");
  CHECK_OK(em_linalg_cholesky(A, 0, &L, &info)); /* the _ex form: info, no error */
  CHECK(at(info, 0) == 0 && at(info, 1) == 2 && at(info, 2) == 1);
  em_tensor_release(L);
  em_tensor_release(info);
  em_tensor *X = NULL;
  CHECK_ERR(em_linalg_solve(A, A, 2, &X, &info),
            "linalg.inv: (Batch element 2): The diagonal element 2 is zero");
  em_tensor_release(A);
}

TEST(bad_arguments_are_named) {
  em_tensor *A = mat(0, 2, 3, NULL, em_cpu()), *X = NULL, *info = NULL, *r = NULL, *s = NULL,
            *R = NULL;
  CHECK_ERR(em_linalg_solve(A, A, 1, &X, &info),
            "linalg.solve: A must be batches of square matrices, but they are 2 by 3 matrices");
  CHECK_ERR(em_linalg_lstsq(A, A, 1e-10, 7, &X, &r, &s, &R), "linalg.lstsq: unknown driver 7");
  int64_t sz[2] = {2, 2};
  em_tensor *I = NULL;
  CHECK_OK(em_empty(2, sz, EM_INT64, em_cpu(), &I));
  CHECK_ERR(em_linalg_cholesky(I, 1, &X, &info),
            "linalg.cholesky: Expected a floating point or complex tensor as input. Got Long");
  em_tensor_release(I);
  em_tensor_release(A);
}

TEST(meta_gives_shapes_without_values) {
  em_tensor *A = mat(4, 5, 3, NULL, em_meta()), *U = NULL, *S = NULL, *Vh = NULL;
  CHECK_OK(em_linalg_svd(A, 0, 1, &U, &S, &Vh));
  CHECK(em_tensor_ndim(U) == 3 && em_tensor_sizes(U)[2] == 3 && em_tensor_sizes(S)[1] == 3);
  CHECK(em_tensor_sizes(Vh)[1] == 3 && em_tensor_sizes(Vh)[2] == 3);
  em_tensor_release(U);
  em_tensor_release(S);
  em_tensor_release(Vh);
  em_tensor_release(A);
}

TEST(parallel_batch_matches_one_at_a_time) {
  enum { NB = 40, N = 5 };
  double a[NB * N * N], b[NB * N];
  for (int i = 0; i < NB * N * N; i++) a[i] = sin(i * 0.7) + ((i % (N * N)) % (N + 1) == 0 ? N : 0);
  for (int i = 0; i < NB * N; i++) b[i] = cos(i * 0.3);
  em_tensor *A = mat(NB, N, N, a, em_cpu()), *B = mat(NB, N, 1, b, em_cpu()), *X = NULL,
            *info = NULL;
  CHECK_OK(em_linalg_solve(A, B, 1, &X, &info));
  for (int k = 0; k < NB; k += 13) {
    em_tensor *Ak = mat(0, N, N, a + k * N * N, em_cpu()), *Bk = mat(0, N, 1, b + k * N, em_cpu());
    em_tensor *Xk = NULL, *ik = NULL;
    CHECK_OK(em_linalg_solve(Ak, Bk, 1, &Xk, &ik));
    for (int i = 0; i < N; i++) CHECK(fabs(at(Xk, i) - at(X, k * N + i)) < 1e-13);
    em_tensor_release(Ak);
    em_tensor_release(Bk);
    em_tensor_release(Xk);
    em_tensor_release(ik);
  }
  em_tensor_release(A);
  em_tensor_release(B);
  em_tensor_release(X);
  em_tensor_release(info);
}

/* eig of real input: complex results, a conjugate pair's eigenvectors as
** conjugate columns; a parallel batch agrees with one matrix at a time
** (geev's workspace per thread) */
TEST(eig_real_input_and_parallel_batch) {
  enum { NB = 24, N = 4 };
  double a[NB * N * N];
  for (int i = 0; i < NB * N * N; i++) a[i] = sin(i * 1.3) + cos(i * 0.4);
  em_tensor *A = mat(NB, N, N, a, em_cpu()), *L = NULL, *V = NULL, *Lr = NULL, *Vr = NULL;
  CHECK_OK(em_linalg_eig(A, 1, &L, &V));
  CHECK(em_tensor_dtype(L) == EM_COMPLEX128 && em_tensor_dtype(V) == EM_COMPLEX128);
  CHECK(em_tensor_ndim(L) == 2 && em_tensor_ndim(V) == 3);
  CHECK_OK(em_view_as_real(L, &Lr));
  CHECK_OK(em_view_as_real(V, &Vr));
  for (int k = 0; k < NB; k += 7) {
    em_tensor *Ak = mat(0, N, N, a + k * N * N, em_cpu()), *Lk = NULL, *Vk = NULL, *Lkr = NULL;
    CHECK_OK(em_linalg_eig(Ak, 0, &Lk, &Vk));
    CHECK(Vk == NULL);
    CHECK_OK(em_view_as_real(Lk, &Lkr));
    for (int i = 0; i < 2 * N; i++) CHECK(fabs(at(Lkr, i) - at(Lr, k * 2 * N + i)) < 1e-12);
    em_tensor_release(Ak);
    em_tensor_release(Lk);
    em_tensor_release(Lkr);
  }
  em_tensor_release(L);
  em_tensor_release(V);
  em_tensor_release(Lr);
  em_tensor_release(Vr);
  em_tensor_release(A);
  /* a rotation: eigenvalues +-i, eigenvectors conjugate */
  const double r[] = {0, -1, 1, 0};
  A = mat(0, 2, 2, r, em_cpu());
  CHECK_OK(em_linalg_eig(A, 1, &L, &V));
  CHECK_OK(em_view_as_real(L, &Lr));
  CHECK_OK(em_view_as_real(V, &Vr));
  CHECK(fabs(at(Lr, 0)) < 1e-15 && fabs(at(Lr, 1) - 1) < 1e-15);
  CHECK(fabs(at(Lr, 2)) < 1e-15 && fabs(at(Lr, 3) + 1) < 1e-15);
  /* V[r][c] at (r, c) of the (2, 2, 2) real view: V[.][0] = conj(V[.][1]) */
  for (int row = 0; row < 2; row++) {
    int64_t i0 = row * 4, i1 = row * 4 + 2; /* flat positions of (row, 0) and (row, 1) */
    CHECK(fabs(at(Vr, i0) - at(Vr, i1)) < 1e-15);
    CHECK(fabs(at(Vr, i0 + 1) + at(Vr, i1 + 1)) < 1e-15);
  }
  em_tensor_release(L);
  em_tensor_release(V);
  em_tensor_release(Lr);
  em_tensor_release(Vr);
  em_tensor_release(A);
  /* non-finite input is an error naming the op */
  const double bad[] = {1, NAN, 0, 1};
  A = mat(0, 2, 2, bad, em_cpu());
  L = V = NULL;
  CHECK(em_linalg_eig(A, 1, &L, &V) != EM_OK);
  CHECK(strstr(em_last_error(), "linalg.eig: input tensor should not contain infs or NaNs") != NULL);
  CHECK(L == NULL && V == NULL);
  em_tensor_release(A);
}

int main(void) {
  RUN(solve_values_and_layout);
  RUN(batched_failures_name_the_1_based_element);
  RUN(bad_arguments_are_named);
  RUN(meta_gives_shapes_without_values);
  RUN(parallel_batch_matches_one_at_a_time);
  RUN(eig_real_input_and_parallel_batch);
  return CTEST_END();
}
