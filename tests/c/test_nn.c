/* test_nn.c -- engine invariants of the nn kernels: conv2d equals a naive
** direct convolution (both dtypes, strided/grouped/dilated/padded, and on a
** transposed-layout input); the conv backward kernels are the adjoints of
** the forward (<go, conv(x)> = <conv_backward_input(go), x>, same for the
** weight); max-pool indices point at the maxima; cross_entropy equals
** log_softmax + nll_loss; failures leave outputs untouched; the thread
** count does not change results (beyond OpenBLAS's GEMM summation). */
#include <math.h>
#include <stdlib.h>

#include "ctest.h"
#include "core/core.h"

static em_tensor *randt(int ndim, const int64_t *sizes, em_dtype dt, unsigned seed) {
  em_tensor *t;
  if (em_empty(ndim, sizes, dt, em_cpu(), &t) != EM_OK) return NULL;
  srand(seed);
  for (int64_t i = 0; i < em_tensor_numel(t); i++) {
    em_scalar v = {EM_SCALAR_FLOAT, 0, (double)rand() / RAND_MAX * 2 - 1};
    em_set_flat(t, i, v);
  }
  return t;
}

static double at(const em_tensor *t, int64_t i) {
  double v;
  em_get_f64(t, i, &v);
  return v;
}

static double dot(const em_tensor *a, const em_tensor *b) {
  double s = 0;
  for (int64_t i = 0; i < em_tensor_numel(a); i++) s += at(a, i) * at(b, i);
  return s;
}

/* out[n][o][y][x] by the definition */
static double naive_conv(const em_tensor *x, const em_tensor *w, const em_tensor *b, int64_t n,
                         int64_t o, int64_t oy, int64_t ox, const int64_t *s, const int64_t *p,
                         const int64_t *d, int64_t g) {
  const int64_t *xs = em_tensor_sizes(x), *ws = em_tensor_sizes(w);
  int64_t Cg = ws[1], Og = ws[0] / g, grp = o / Og;
  double acc = b ? at(b, o) : 0;
  for (int64_t c = 0; c < Cg; c++)
    for (int64_t i = 0; i < ws[2]; i++)
      for (int64_t j = 0; j < ws[3]; j++) {
        int64_t iy = oy * s[0] - p[0] + i * d[0], ix = ox * s[1] - p[1] + j * d[1];
        if (iy < 0 || ix < 0 || iy >= xs[2] || ix >= xs[3]) continue;
        int64_t ci = grp * Cg + c;
        acc += at(x, ((n * xs[1] + ci) * xs[2] + iy) * xs[3] + ix) *
               at(w, ((o * Cg + c) * ws[2] + i) * ws[3] + j);
      }
  return acc;
}

static void check_conv(em_dtype dt, const int64_t *xsz, const int64_t *wsz, const int64_t *s,
                       const int64_t *p, const int64_t *d, int64_t g, double tol) {
  em_tensor *x = randt(4, xsz, dt, 1), *w = randt(4, wsz, dt, 2);
  int64_t bsz[1] = {wsz[0]};
  em_tensor *b = randt(1, bsz, dt, 3), *y = NULL;
  CHECK_OK(em_conv2d(x, w, b, s, p, d, g, &y));
  if (y) {
    const int64_t *ys = em_tensor_sizes(y);
    int ok = 1;
    for (int64_t n = 0; n < ys[0]; n++)
      for (int64_t o = 0; o < ys[1]; o++)
        for (int64_t oy = 0; oy < ys[2]; oy++)
          for (int64_t ox = 0; ox < ys[3]; ox++) {
            double want = naive_conv(x, w, b, n, o, oy, ox, s, p, d, g);
            double got = at(y, ((n * ys[1] + o) * ys[2] + oy) * ys[3] + ox);
            if (fabs(got - want) > tol * (1 + fabs(want))) ok = 0;
          }
    CHECK(ok);
    /* adjoints: <go, conv(x)> = <bwd_input(go), x> (bias off) */
    em_tensor *y0 = NULL, *go = randt(4, ys, dt, 4), *gx = NULL, *gw = NULL, *gb = NULL;
    CHECK_OK(em_conv2d(x, w, NULL, s, p, d, g, &y0));
    CHECK_OK(em_conv2d_backward_input(go, w, xsz, s, p, d, g, &gx));
    CHECK_OK(em_conv2d_backward_weight(go, x, wsz, s, p, d, g, &gw));
    CHECK_OK(em_conv2d_backward_bias(go, &gb));
    if (y0 && gx && gw && gb) {
      double lhs = dot(go, y0);
      CHECK(fabs(lhs - dot(gx, x)) <= tol * 10 * (1 + fabs(lhs)));
      CHECK(fabs(lhs - dot(gw, w)) <= tol * 10 * (1 + fabs(lhs)));
      double s0 = 0;
      for (int64_t n = 0; n < ys[0]; n++)
        for (int64_t l = 0; l < ys[2] * ys[3]; l++) s0 += at(go, n * ys[1] * ys[2] * ys[3] + l);
      CHECK(fabs(at(gb, 0) - s0) <= tol * (1 + fabs(s0)));
    }
    em_tensor *rel[5] = {y0, go, gx, gw, gb};
    for (int i = 0; i < 5; i++)
      if (rel[i]) em_tensor_release(rel[i]);
    em_tensor_release(y);
  }
  em_tensor_release(x);
  em_tensor_release(w);
  em_tensor_release(b);
}

TEST(conv2d_matches_the_definition) {
  int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  int64_t x1[4] = {2, 3, 7, 6}, w1[4] = {4, 3, 3, 3};
  check_conv(EM_FLOAT64, x1, w1, one, one, one, 1, 1e-12);
  check_conv(EM_FLOAT32, x1, w1, one, one, one, 1, 1e-5);
  int64_t s2[2] = {2, 3}, p2[2] = {2, 1}, d2[2] = {2, 1};
  int64_t x2[4] = {3, 4, 9, 10}, w2[4] = {6, 2, 3, 2};
  check_conv(EM_FLOAT64, x2, w2, s2, p2, d2, 2, 1e-12);
  int64_t x3[4] = {1, 1, 5, 5}, w3[4] = {2, 1, 1, 1};
  check_conv(EM_FLOAT64, x3, w3, one, zero, one, 1, 1e-12);
}

TEST(conv2d_reads_any_layout) {
  int64_t sz[4] = {2, 3, 5, 4}, wsz[4] = {2, 3, 2, 2}, one[2] = {1, 1}, zero[2] = {0, 0};
  int64_t perm[4] = {1, 2, 4, 3};
  em_tensor *x = randt(4, sz, EM_FLOAT64, 5), *w = randt(4, wsz, EM_FLOAT64, 6);
  /* xt: the same values stored with the last two dims swapped */
  em_tensor *t1 = NULL, *t2 = NULL, *t3 = NULL, *ya = NULL, *yb = NULL;
  CHECK_OK(em_permute(x, 4, perm, &t1));
  CHECK_OK(em_contiguous(t1, &t2));
  CHECK_OK(em_permute(t2, 4, perm, &t3)); /* t3 == x in value, transposed layout */
  CHECK(!em_tensor_is_contiguous(t3));
  CHECK_OK(em_conv2d(x, w, NULL, one, zero, one, 1, &ya));
  CHECK_OK(em_conv2d(t3, w, NULL, one, zero, one, 1, &yb));
  int eq = 0;
  CHECK_OK(em_equal(ya, yb, &eq));
  CHECK(eq);
  em_tensor *rel[7] = {x, w, t1, t2, t3, ya, yb};
  for (int i = 0; i < 7; i++) em_tensor_release(rel[i]);
}

TEST(failures_leave_outputs_untouched) {
  int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {2, 3, 3, 3}, one[2] = {1, 1};
  em_tensor *x = randt(4, xs, EM_FLOAT32, 1), *w = randt(4, ws, EM_FLOAT32, 2);
  em_tensor *sentinel = (em_tensor *)0x1, *out = sentinel, *idx = sentinel;
  CHECK_ERR(em_conv2d(x, w, NULL, one, one, one, 1, &out), "expected input[1, 4, 5, 5] to have 3 channels");
  CHECK(out == sentinel);
  int64_t k[2] = {2, 2}, bad[2] = {2, 2};
  CHECK_ERR(em_max_pool2d(x, k, k, bad, one, 0, &out, &idx), "pad should be at most half");
  CHECK(out == sentinel && idx == sentinel);
  int64_t ls[2] = {2, 3}, ts[1] = {2};
  em_tensor *logits = randt(2, ls, EM_FLOAT32, 3), *target;
  em_scalar five = {EM_SCALAR_INT, 5, 5};
  CHECK_OK(em_full(1, ts, five, EM_INT64, em_cpu(), &target));
  CHECK_ERR(em_cross_entropy(logits, target, NULL, EM_REDUCTION_MEAN, -100, 0, &out),
            "target 5 is out of bounds for 3 classes");
  CHECK(out == sentinel);
  CHECK_ERR(em_cross_entropy(logits, target, NULL, EM_REDUCTION_MEAN, -100, 1.5, &out),
            "label_smoothing must be between 0.0 and 1.0");
  em_tensor *ri;
  CHECK_OK(em_full(1, ts, five, EM_INT32, em_cpu(), &ri));
  CHECK_ERR(em_dropout(ri, 0.5, &out, NULL), "expected input of dtype float32 or float64, got int32");
  CHECK(out == sentinel);
  CHECK(em_tensor_refcount(x) == 1 && em_tensor_refcount(w) == 1);
  em_tensor *rel[5] = {x, w, logits, target, ri};
  for (int i = 0; i < 5; i++) em_tensor_release(rel[i]);
}

TEST(max_pool_indices_point_at_the_maxima) {
  int64_t xs[4] = {2, 3, 7, 6}, k[2] = {3, 2}, s[2] = {2, 2}, p[2] = {1, 1}, d[2] = {1, 1};
  em_tensor *x = randt(4, xs, EM_FLOAT64, 9), *y = NULL, *ix = NULL;
  CHECK_OK(em_max_pool2d(x, k, s, p, d, 1, &y, &ix));
  if (y && ix) {
    const int64_t *ys = em_tensor_sizes(y);
    int64_t plane = ys[2] * ys[3], ok = 1;
    for (int64_t i = 0; i < em_tensor_numel(y); i++) {
      int64_t pos;
      em_get_i64(ix, i, &pos);
      int64_t pl = i / plane;
      if (pos < 1 || pos > 42 || at(x, pl * 42 + pos - 1) != at(y, i)) ok = 0;
    }
    CHECK(ok);
    em_tensor_release(y);
    em_tensor_release(ix);
  }
  em_tensor_release(x);
}

TEST(cross_entropy_is_log_softmax_then_nll) {
  int64_t ls[2] = {5, 4}, ts[1] = {5};
  em_tensor *x = randt(2, ls, EM_FLOAT64, 11), *t, *lp = NULL, *a = NULL, *b = NULL;
  CHECK_OK(em_empty(1, ts, EM_INT64, em_cpu(), &t));
  for (int i = 0; i < 5; i++) {
    em_scalar v = {EM_SCALAR_INT, 1 + (i * 3) % 4, 0};
    em_set_flat(t, i, v);
  }
  CHECK_OK(em_softmax(x, 2, 1, -1, &lp));
  for (int r = 0; r < 3; r++) {
    em_reduction red = (em_reduction)r;
    CHECK_OK(em_cross_entropy(x, t, NULL, red, -100, 0.0, &a));
    CHECK_OK(em_nll_loss(lp, t, NULL, red, -100, &b, NULL));
    if (a && b) {
      int ok = em_tensor_numel(a) == em_tensor_numel(b);
      for (int64_t i = 0; ok && i < em_tensor_numel(a); i++)
        ok = fabs(at(a, i) - at(b, i)) < 1e-12;
      CHECK(ok);
    }
    if (a) em_tensor_release(a);
    if (b) em_tensor_release(b);
    a = b = NULL;
  }
  em_tensor_release(x);
  em_tensor_release(t);
  if (lp) em_tensor_release(lp);
}

TEST(results_do_not_depend_on_the_thread_count) {
  int64_t xs[4] = {16, 8, 20, 20}, ws[4] = {16, 8, 3, 3}, one[2] = {1, 1};
  em_tensor *x = randt(4, xs, EM_FLOAT32, 21), *w = randt(4, ws, EM_FLOAT32, 22);
  int nt = em_get_num_threads();
  em_tensor *y1 = NULL, *y2 = NULL, *m1 = NULL, *m2 = NULL;
  em_set_num_threads(1);
  CHECK_OK(em_conv2d(x, w, NULL, one, one, one, 1, &y1));
  CHECK_OK(em_layer_norm(x, 2, NULL, NULL, 1e-5, &m1, NULL, NULL));
  em_set_num_threads(nt > 1 ? nt : 2);
  CHECK_OK(em_conv2d(x, w, NULL, one, one, one, 1, &y2));
  CHECK_OK(em_layer_norm(x, 2, NULL, NULL, 1e-5, &m2, NULL, NULL));
  em_set_num_threads(nt);
  /* our kernels are exact across thread counts; OpenBLAS may split its
  ** GEMM sums differently, so the conv is compared to float rounding */
  int e2 = 0, close = 0;
  if (y1 && y2) CHECK_OK(em_allclose(y1, y2, 1e-5, 1e-5, 0, &close));
  if (m1 && m2) CHECK_OK(em_equal(m1, m2, &e2));
  CHECK(close);
  CHECK(e2);
  em_tensor *rel[6] = {x, w, y1, y2, m1, m2};
  for (int i = 0; i < 6; i++)
    if (rel[i]) em_tensor_release(rel[i]);
}

TEST(conv1d_is_conv2d_over_a_height_of_one) {
  int64_t xs[3] = {2, 4, 11}, ws[3] = {6, 2, 3}, bs[1] = {6};
  em_tensor *x = randt(3, xs, EM_FLOAT64, 31), *w = randt(3, ws, EM_FLOAT64, 32),
            *b = randt(1, bs, EM_FLOAT64, 33), *y = NULL, *x4 = NULL, *w4 = NULL, *y4 = NULL;
  CHECK_OK(em_conv1d(x, w, b, 2, 1, 2, 2, &y));
  CHECK_OK(em_unsqueeze(x, 4, &x4));
  CHECK_OK(em_unsqueeze(w, 4, &w4));
  int64_t s[2] = {2, 1}, p[2] = {1, 0}, d[2] = {2, 1};
  CHECK_OK(em_conv2d(x4, w4, b, s, p, d, 2, &y4));
  if (y && y4) {
    CHECK(em_tensor_ndim(y) == 3 && em_tensor_sizes(y)[2] == 5);
    int ok = em_tensor_numel(y) == em_tensor_numel(y4);
    for (int64_t i = 0; ok && i < em_tensor_numel(y); i++) ok = at(y, i) == at(y4, i);
    CHECK(ok);
  }
  CHECK_ERR(em_conv1d(x4, w, b, 1, 0, 1, 1, &y4), "conv1d: expected input to be 3-d, got 4-d");
  em_tensor *rel[7] = {x, w, b, y, x4, w4, y4};
  for (int i = 0; i < 7; i++)
    if (rel[i]) em_tensor_release(rel[i]);
}

int main(void) {
  RUN(conv1d_is_conv2d_over_a_height_of_one);
  RUN(conv2d_matches_the_definition);
  RUN(conv2d_reads_any_layout);
  RUN(failures_leave_outputs_untouched);
  RUN(max_pool_indices_point_at_the_maxima);
  RUN(cross_entropy_is_log_softmax_then_nll);
  RUN(results_do_not_depend_on_the_thread_count);
  return CTEST_END();
}
