/* test_nn_autograd.c -- a C host gets the autograd graph of the nn ops:
** the engine entries (em_conv2d, em_layer_norm, em_cross_entropy, ...)
** called from C record their nodes, em_backward run from C fills .grad, and
** the gradients equal central finite differences (float64). Second
** derivatives too: em_autograd_grad with create_graph, then em_backward of
** |grad|^2, against finite differences of the first gradient. Also: no node
** outside grad mode, the in-place check, and nothing leaked (ASan). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "core/core.h"

static em_tensor *randt(int ndim, const int64_t *sizes, unsigned seed, int requires_grad) {
  em_tensor *t;
  if (em_empty(ndim, sizes, EM_FLOAT64, em_cpu(), &t) != EM_OK) return NULL;
  srand(seed);
  double *d = em_tensor_data(t);
  for (int64_t i = 0; i < em_tensor_numel(t); i++) d[i] = (double)rand() / RAND_MAX * 2 - 1;
  if (requires_grad) em_tensor_set_requires_grad(t, 1);
  return t;
}

/* The case: params (float64 leaves) -> one tensor y; the loss is
** sum(y * r) for a fixed random r of y's shape. */
typedef em_status (*op_fn)(em_tensor *const *p, void *ctx, em_tensor **y);

typedef struct nncase {
  const char *name;   /* the grad_fn y must have */
  op_fn fn;
  void *ctx;
  int np;
  em_tensor *p[3];
  em_tensor *r;       /* made on first use */
} nncase;

static em_status loss_of(nncase *c, em_tensor **loss) {
  em_tensor *y = NULL, *yr = NULL;
  em_status st = c->fn(c->p, c->ctx, &y);
  if (st == EM_OK && !c->r) {
    c->r = randt(em_tensor_ndim(y), em_tensor_sizes(y), 99, 0);
    if (!c->r) st = EM_E_NOMEM;
  }
  if (st == EM_OK) st = em_binary(EM_OP_MUL, y, c->r, &yr);
  if (st == EM_OK) st = em_reduce(EM_REDUCE_SUM, yr, 0, NULL, 0, -1, loss);
  if (y) em_tensor_release(y);
  if (yr) em_tensor_release(yr);
  return st;
}

static double loss_value(nncase *c) {
  int on = em_grad_enabled();
  em_set_grad_enabled(0);
  em_tensor *l = NULL;
  double v = NAN;
  if (loss_of(c, &l) == EM_OK) em_get_f64(l, 0, &v);
  if (l) em_tensor_release(l);
  em_set_grad_enabled(on);
  return v;
}

/* max |analytic - numeric| / (1 + |numeric|) over every element of every
** param, given the analytic gradients g[k] */
static double fd_error(nncase *c, em_tensor *const *g, double (*value)(nncase *)) {
  double worst = 0, eps = 1e-6;
  for (int k = 0; k < c->np; k++) {
    double *d = em_tensor_data(c->p[k]);
    for (int64_t i = 0; i < em_tensor_numel(c->p[k]); i++) {
      double orig = d[i];
      d[i] = orig + eps;
      double up = value(c);
      d[i] = orig - eps;
      double down = value(c);
      d[i] = orig;
      double num = (up - down) / (2 * eps), an = NAN;
      if (g[k]) em_get_f64(g[k], i, &an);
      else an = 0;
      double e = fabs(an - num) / (1 + fabs(num));
      if (!(e <= worst)) worst = e;  /* NaN counts as the worst */
    }
  }
  return worst;
}

/* First order: the node's name, em_backward from C, .grad against finite
** differences. */
static void check_first(nncase *c) {
  em_tensor *l = NULL, *y = NULL;
  CHECK_OK(c->fn(c->p, c->ctx, &y));
  if (y) {
    const char *name = em_tensor_grad_fn_name(y);
    CHECK(name && strcmp(name, c->name) == 0);
    if (!(name && strcmp(name, c->name) == 0))
      printf("  %s: grad_fn %s\n", c->name, name ? name : "(none)");
    em_tensor_release(y);
  }
  CHECK_OK(loss_of(c, &l));
  if (!l) return;
  CHECK_OK(em_backward(1, &l, NULL, 0, 0));
  em_tensor *g[3] = {NULL, NULL, NULL};
  for (int k = 0; k < c->np; k++) g[k] = em_tensor_grad(c->p[k]);
  double e = fd_error(c, g, loss_value);
  if (!(e < 1e-7)) printf("  %s: first-order error %g\n", c->name, e);
  CHECK(e < 1e-7);
  for (int k = 0; k < c->np; k++) {
    if (g[k]) em_tensor_release(g[k]);
    em_tensor_set_grad(c->p[k], NULL);
  }
  em_tensor_release(l);
}

/* The first gradient w.r.t. param 0 as a function: q = |dL/dp0|^2. */
static double grad_sq_value(nncase *c) {
  em_tensor *l = NULL, *g = NULL, *g2 = NULL, *s = NULL;
  double v = NAN;
  if (loss_of(c, &l) == EM_OK &&
      em_autograd_grad(1, &l, NULL, 1, (const em_tensor *const *)c->p, 0, 0, 0, &g) == EM_OK &&
      em_binary(EM_OP_MUL, g, g, &g2) == EM_OK &&
      em_reduce(EM_REDUCE_SUM, g2, 0, NULL, 0, -1, &s) == EM_OK)
    em_get_f64(s, 0, &v);
  em_tensor *rel[4] = {l, g, g2, s};
  for (int i = 0; i < 4; i++)
    if (rel[i]) em_tensor_release(rel[i]);
  return v;
}

/* Second order: g = dL/dp0 recorded (create_graph), q = sum(g^2),
** em_backward(q): dq/dp_k against finite differences of q. */
static void check_second(nncase *c) {
  em_tensor *l = NULL, *g = NULL, *g2 = NULL, *q = NULL;
  CHECK_OK(loss_of(c, &l));
  if (l) CHECK_OK(em_autograd_grad(1, &l, NULL, 1, (const em_tensor *const *)c->p, 1, 1, 0, &g));
  if (g) CHECK(em_tensor_grad_fn_name(g) != NULL); /* the backward was recorded */
  if (g) CHECK_OK(em_binary(EM_OP_MUL, g, g, &g2));
  if (g2) CHECK_OK(em_reduce(EM_REDUCE_SUM, g2, 0, NULL, 0, -1, &q));
  if (q) CHECK_OK(em_backward(1, &q, NULL, 0, 0));
  em_tensor *gg[3] = {NULL, NULL, NULL};
  for (int k = 0; k < c->np; k++) gg[k] = em_tensor_grad(c->p[k]);
  double e = fd_error(c, gg, grad_sq_value);
  if (!(e < 1e-7)) printf("  %s: second-order error %g\n", c->name, e);
  CHECK(e < 1e-7);
  for (int k = 0; k < c->np; k++) {
    if (gg[k]) em_tensor_release(gg[k]);
    em_tensor_set_grad(c->p[k], NULL);
  }
  em_tensor *rel[4] = {l, g, g2, q};
  for (int i = 0; i < 4; i++)
    if (rel[i]) em_tensor_release(rel[i]);
}

static void run_case(nncase *c, int second) {
  check_first(c);
  if (second) check_second(c);
  for (int k = 0; k < c->np; k++) em_tensor_release(c->p[k]);
  if (c->r) em_tensor_release(c->r);
}

/* -- the ops --------------------------------------------------------------- */

static const int64_t S2[2] = {2, 1}, P1[2] = {1, 1}, D1[2] = {1, 1};

static em_status conv2d_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  (void)ctx;
  return em_conv2d(p[0], p[1], p[2], S2, P1, D1, 1, y);
}
static em_status conv1d_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  (void)ctx;
  return em_conv1d(p[0], p[1], p[2], 2, 1, 1, 1, y);
}
static em_status layer_norm_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  (void)ctx;
  return em_layer_norm(p[0], 1, p[1], p[2], 1e-5, y, NULL, NULL);
}
static em_status cross_entropy_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  return em_cross_entropy(p[0], ctx, NULL, EM_REDUCTION_MEAN, -100, 0.1, y);
}
static em_status mse_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  (void)ctx;
  return em_mse_loss(p[0], p[1], EM_REDUCTION_SUM, y);
}
static em_status max_pool_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  (void)ctx;
  int64_t k[2] = {2, 2}, z[2] = {0, 0};
  return em_max_pool2d(p[0], k, k, z, D1, 0, y, NULL);
}
static em_status batch_norm_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  (void)ctx;
  return em_batch_norm(p[0], p[1], p[2], NULL, NULL, 1, 0.1, 1e-5, y, NULL, NULL);
}
static em_status embedding_op(em_tensor *const *p, void *ctx, em_tensor **y) {
  return em_embedding(p[0], ctx, 0, y);
}

TEST(conv2d_from_c) {
  int64_t xs[4] = {2, 2, 5, 4}, ws[4] = {3, 2, 3, 2}, bs[1] = {3};
  nncase c = {"ConvolutionBackward0", conv2d_op, NULL, 3,
              {randt(4, xs, 1, 1), randt(4, ws, 2, 1), randt(1, bs, 3, 1)}, NULL};
  run_case(&c, 1);
}

TEST(conv1d_from_c) {
  int64_t xs[3] = {2, 2, 7}, ws[3] = {3, 2, 3}, bs[1] = {3};
  nncase c = {"ConvolutionBackward0", conv1d_op, NULL, 3,
              {randt(3, xs, 4, 1), randt(3, ws, 5, 1), randt(1, bs, 6, 1)}, NULL};
  run_case(&c, 1);
}

TEST(layer_norm_from_c) {
  int64_t xs[2] = {3, 5}, ws[1] = {5};
  nncase c = {"NativeLayerNormBackward0", layer_norm_op, NULL, 3,
              {randt(2, xs, 7, 1), randt(1, ws, 8, 1), randt(1, ws, 9, 1)}, NULL};
  run_case(&c, 1);
}

TEST(cross_entropy_from_c) {
  int64_t xs[2] = {4, 3}, ts[1] = {4};
  em_tensor *t = NULL;
  CHECK_OK(em_empty(1, ts, EM_INT64, em_cpu(), &t));
  if (!t) return;
  int64_t ids[4] = {1, 3, 2, 3};
  memcpy(em_tensor_data(t), ids, sizeof ids);
  nncase c = {"NllLossBackward0", cross_entropy_op, t, 1, {randt(2, xs, 10, 1)}, NULL};
  run_case(&c, 1);
  em_tensor_release(t);
}

TEST(mse_loss_from_c) {
  int64_t xs[2] = {3, 4};
  nncase c = {"MseLossBackward0", mse_op, NULL, 2, {randt(2, xs, 11, 1), randt(2, xs, 12, 1)},
              NULL};
  run_case(&c, 1);
}

TEST(max_pool_batch_norm_embedding_from_c) {
  int64_t xs[4] = {1, 2, 4, 4};
  nncase c = {"MaxPool2DWithIndicesBackward0", max_pool_op, NULL, 1, {randt(4, xs, 13, 1)},
              NULL};
  run_case(&c, 0); /* piecewise linear: the gradient does not depend on x */
  int64_t bs[3] = {4, 3, 2}, cs[1] = {3};
  nncase b = {"NativeBatchNormBackward0", batch_norm_op, NULL, 3,
              {randt(3, bs, 14, 1), randt(1, cs, 15, 1), randt(1, cs, 16, 1)}, NULL};
  run_case(&b, 1);
  int64_t es[2] = {5, 3}, is[2] = {2, 2};
  em_tensor *ids = NULL;
  CHECK_OK(em_empty(2, is, EM_INT64, em_cpu(), &ids));
  if (!ids) return;
  int64_t v[4] = {1, 5, 5, 2};
  memcpy(em_tensor_data(ids), v, sizeof v);
  nncase e = {"EmbeddingBackward0", embedding_op, ids, 1, {randt(2, es, 17, 1)}, NULL};
  run_case(&e, 0); /* linear in the weight: no second derivative to check */
  em_tensor_release(ids);
}

TEST(no_node_outside_grad_mode_and_the_inplace_check) {
  int64_t xs[4] = {1, 2, 4, 4}, ws[4] = {3, 2, 3, 3};
  em_tensor *x = randt(4, xs, 18, 0), *w = randt(4, ws, 19, 1), *y = NULL, *s = NULL;
  em_set_grad_enabled(0);
  CHECK_OK(em_conv2d(x, w, NULL, D1, P1, D1, 1, &y));
  em_set_grad_enabled(1);
  if (y) {
    CHECK(em_tensor_grad_fn_name(y) == NULL && !em_tensor_requires_grad(y));
    em_tensor_release(y);
    y = NULL;
  }
  /* w is saved by the node: changing it in place (under no_grad) makes the
  ** backward fail with PyTorch's message, naming the node */
  CHECK_OK(em_conv2d(x, w, NULL, D1, P1, D1, 1, &y));
  if (y) CHECK_OK(em_reduce(EM_REDUCE_SUM, y, 0, NULL, 0, -1, &s));
  em_set_grad_enabled(0);
  em_operand ops[2] = {{w, {EM_SCALAR_INT, 0, 0}}, {NULL, {EM_SCALAR_FLOAT, 0, 2.0}}};
  CHECK_OK(em_elementwise(EM_OP_MUL, 2, ops, NULL, w, NULL));
  em_set_grad_enabled(1);
  if (s) CHECK_ERR(em_backward(1, &s, NULL, 0, 0), "modified by an inplace operation");
  em_tensor *rel[4] = {x, w, y, s};
  for (int i = 0; i < 4; i++)
    if (rel[i]) em_tensor_release(rel[i]);
}

int main(void) {
  RUN(conv2d_from_c);
  RUN(conv1d_from_c);
  RUN(layer_norm_from_c);
  RUN(cross_entropy_from_c);
  RUN(mse_loss_from_c);
  RUN(max_pool_batch_norm_embedding_from_c);
  RUN(no_node_outside_grad_mode_and_the_inplace_check);
  return CTEST_END();
}
