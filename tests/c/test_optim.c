/*
** test_optim.c -- the fused optimizer updates (ops/optim.c) as an embedding
** host calls them: state slots created on the first step and handed back,
** values of hand-computed steps, versions bumped, a failed step changing
** nothing, 16-bit parameters, strided parameters, and bad options.
** (tests/lua/optim_spec.lua compares every switch with torch.optim.)
*/
#include <math.h>
#include <stdlib.h>

#include "ctest.h"

static em_tensor *filled(int n, double v, em_dtype dt) {
  int64_t sz[1] = {n};
  em_scalar s = {EM_SCALAR_FLOAT, 0, v};
  em_tensor *t = NULL;
  CHECK_OK(em_full(1, sz, s, dt, em_cpu(), &t));
  return t;
}

static double at(const em_tensor *t, int64_t i) {
  double v = NAN;
  CHECK_OK(em_get_f64(t, i, &v));
  return v;
}

TEST(sgd_momentum_buffer_is_made_then_reused) {
  em_tensor *p = filled(4, 1.0, EM_FLOAT64), *g = filled(4, 0.5, EM_FLOAT64), *buf = NULL;
  em_sgd_opts o = {.lr = 0.1, .momentum = 0.9};
  uint64_t v0 = em_storage_version(em_tensor_storage(p));
  CHECK_OK(em_sgd_step(p, g, &buf, &o));
  CHECK(buf != NULL);
  CHECK(at(buf, 3) == 0.5);          /* first step: the buffer is the direction */
  CHECK(fabs(at(p, 0) - 0.95) < 1e-15);
  CHECK(em_storage_version(em_tensor_storage(p)) > v0);
  em_tensor *same = buf;
  CHECK_OK(em_sgd_step(p, g, &buf, &o));
  CHECK(buf == same);                /* an existing buffer is updated in place */
  CHECK(fabs(at(buf, 0) - 0.95) < 1e-15);  /* 0.9 * 0.5 + 0.5 */
  CHECK(fabs(at(p, 0) - 0.855) < 1e-15);
  em_tensor_release(p);
  em_tensor_release(g);
  em_tensor_release(buf);
}

TEST(adam_first_step_moves_by_lr) {
  /* step 1: m_hat = g, v_hat = g^2, so p moves by lr * g / (|g| + eps') */
  em_tensor *p = filled(3, 1.0, EM_FLOAT64), *g = filled(3, 2.0, EM_FLOAT64);
  em_tensor *m = NULL, *v = NULL, *mx = NULL;
  em_adam_opts o = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .amsgrad = 1};
  CHECK_OK(em_adam_step(p, g, &m, &v, &mx, 1, &o));
  CHECK(m && v && mx);
  CHECK(fabs(at(p, 2) - 0.9) < 1e-8);
  CHECK(fabs(at(m, 0) - 0.2) < 1e-15);
  CHECK(fabs(at(v, 0) - 0.004) < 1e-15);
  CHECK(at(mx, 0) == at(v, 0));
  em_tensor_release(m);
  em_tensor_release(v);
  em_tensor_release(mx);
  /* AdamW: decay first, p * (1 - lr * wd) */
  m = v = NULL;
  em_tensor *q = filled(3, 1.0, EM_FLOAT64), *z = filled(3, 0.0, EM_FLOAT64);
  em_adam_opts w = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                    .weight_decay = 0.5, .decoupled = 1};
  CHECK_OK(em_adam_step(q, z, &m, &v, NULL, 1, &w));
  CHECK(fabs(at(q, 1) - 0.95) < 1e-15);
  em_tensor_release(m);
  em_tensor_release(v);
  em_tensor_release(q);
  em_tensor_release(z);
  em_tensor_release(p);
  em_tensor_release(g);
}

TEST(rmsprop_makes_the_state_its_options_need) {
  em_tensor *p = filled(2, 1.0, EM_FLOAT32), *g = filled(2, 1.0, EM_FLOAT32);
  em_tensor *sq = NULL, *buf = NULL, *ga = NULL;
  em_rmsprop_opts o = {.lr = 0.01, .alpha = 0.99, .eps = 1e-8};
  CHECK_OK(em_rmsprop_step(p, g, &sq, &buf, &ga, &o));
  CHECK(sq != NULL && buf == NULL && ga == NULL);
  /* sq = 0.01; p = 1 - 0.01 * 1 / (0.1 + 1e-8) */
  CHECK(fabs(at(p, 0) - (1 - 0.01 / 0.1)) < 1e-6);
  o.momentum = 0.5;
  o.centered = 1;
  CHECK_OK(em_rmsprop_step(p, g, &sq, &buf, &ga, &o));
  CHECK(buf != NULL && ga != NULL);
  em_tensor_release(sq);
  em_tensor_release(buf);
  em_tensor_release(ga);
  em_tensor_release(p);
  em_tensor_release(g);
}

TEST(a_failed_step_changes_nothing) {
  em_tensor *p = filled(4, 1.0, EM_FLOAT32), *g = filled(3, 1.0, EM_FLOAT32), *buf = NULL;
  em_sgd_opts o = {.lr = 0.1, .momentum = 0.9};
  uint64_t v0 = em_storage_version(em_tensor_storage(p));
  CHECK_ERR(em_sgd_step(p, g, &buf, &o), "the gradient of shape [3] does not match the parameter's shape [4]");
  CHECK(buf == NULL);
  CHECK(em_storage_version(em_tensor_storage(p)) == v0);
  CHECK(at(p, 0) == 1.0);
  em_tensor *g64 = filled(4, 1.0, EM_FLOAT64);
  CHECK_ERR(em_sgd_step(p, g64, &buf, &o), "the gradient has dtype float64 but the parameter has dtype float32");
  em_tensor *m = NULL, *v = NULL, *g4 = filled(4, 1.0, EM_FLOAT32), *bad = filled(5, 0.0, EM_FLOAT32);
  v = bad;
  em_adam_opts a = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
  CHECK_ERR(em_adam_step(p, g4, &m, &v, NULL, 1, &a), "exp_avg_sq of shape [5]");
  CHECK(m == NULL && v == bad);  /* the exp_avg it made is dropped again */
  em_tensor_release(bad);
  em_tensor_release(g64);
  em_tensor_release(g4);
  em_tensor_release(p);
  em_tensor_release(g);
}

TEST(bad_options_are_named) {
  em_tensor *p = filled(2, 1.0, EM_FLOAT64), *g = filled(2, 1.0, EM_FLOAT64);
  em_tensor *m = NULL, *v = NULL;
  em_sgd_opts s = {.lr = NAN};
  CHECK_ERR(em_sgd_step(p, g, NULL, &s), "SGD: lr must be finite, got nan");
  em_adam_opts a = {.lr = 0.1, .beta1 = 1.0, .beta2 = 0.999};
  CHECK_ERR(em_adam_step(p, g, &m, &v, NULL, 1, &a), "Adam: Invalid beta parameter at index 1: 1");
  a.beta1 = 0.9;
  CHECK_ERR(em_adam_step(p, g, &m, &v, NULL, 0, &a), "Adam: step must be 1 or more");
  a.decoupled = 1;
  a.eps = -1;
  CHECK_ERR(em_adam_step(p, g, &m, &v, NULL, 1, &a), "AdamW: Invalid epsilon value: -1");
  CHECK(m == NULL && v == NULL);
  int64_t sz[1] = {2};
  em_tensor *ip = NULL;
  CHECK_OK(em_zeros(1, sz, EM_INT64, em_cpu(), &ip));
  em_sgd_opts s2 = {.lr = 0.1};
  CHECK_ERR(em_sgd_step(ip, ip, NULL, &s2), "SGD: parameters must be floating point, got int64");
  em_tensor_release(ip);
  em_tensor_release(p);
  em_tensor_release(g);
}

TEST(half_and_strided_parameters) {
  em_tensor *p = filled(8, 1.0, EM_FLOAT16), *g = filled(8, 0.5, EM_FLOAT16);
  em_sgd_opts o = {.lr = 0.5};
  CHECK_OK(em_sgd_step(p, g, NULL, &o));
  CHECK(at(p, 7) == 0.75);
  /* a transposed (column-major) parameter steps like its contiguous copy */
  int64_t sz[2] = {3, 5};
  em_scalar one = {EM_SCALAR_FLOAT, 0, 1.0}, half = {EM_SCALAR_FLOAT, 0, 0.5};
  em_tensor *base = NULL, *t = NULL, *gt = NULL, *gb = NULL, *buf = NULL;
  CHECK_OK(em_full(2, sz, one, EM_FLOAT32, em_cpu(), &base));
  CHECK_OK(em_transpose(base, 1, 2, &t));
  int64_t tsz[2] = {5, 3};
  CHECK_OK(em_full(2, tsz, half, EM_FLOAT32, em_cpu(), &gb));
  gt = gb;
  em_sgd_opts m = {.lr = 0.1, .momentum = 0.9, .nesterov = 1};
  CHECK_OK(em_sgd_step(t, gt, &buf, &m));
  CHECK_OK(em_sgd_step(t, gt, &buf, &m));
  /* nesterov: d = g + 0.9 * buf; buf1 = 0.5, buf2 = 0.95 */
  float want = 1.0f - 0.1f * (0.5f + 0.9f * 0.5f);
  want = want - 0.1f * (0.5f + 0.9f * 0.95f);
  CHECK(fabs(at(base, 14) - want) < 1e-6);
  em_tensor_release(buf);
  em_tensor_release(gb);
  em_tensor_release(t);
  em_tensor_release(base);
  em_tensor_release(p);
  em_tensor_release(g);
}

/* em_optim_step (issue 18): made state starts as PyTorch's (Adagrad's sum
** full of initial_accumulator_value, Rprop's step_size full of lr), given
** state is updated in place, the scalar state comes back rounded to
** float32, and a failed step changes nothing. */
TEST(optim_step_state_and_scalars) {
  em_tensor *p = filled(3, 1.0, EM_FLOAT64), *g = filled(3, 2.0, EM_FLOAT64);
  em_tensor *state[2] = {NULL, NULL};
  em_optim_opts o = {.lr = 0.1, .eps = 1e-10, .initial_accumulator_value = 0.5};
  CHECK_OK(em_optim_step(EM_OPTIM_ADAGRAD, p, g, state, 1, NULL, &o));
  CHECK(state[0] != NULL && state[1] == NULL);
  CHECK(at(state[0], 0) == 4.5); /* 0.5 + 2 * 2 */
  CHECK(fabs(at(p, 1) - (1 - 0.1 * 2 / (sqrt(4.5) + 1e-10))) < 1e-15);
  em_tensor *sum = state[0];
  CHECK_OK(em_optim_step(EM_OPTIM_ADAGRAD, p, g, state, 2, NULL, &o));
  CHECK(state[0] == sum && at(sum, 2) == 8.5);
  em_tensor_release(sum);

  /* Rprop: step_size starts at lr; the first step moves by lr * sign(g) */
  em_tensor *q = filled(2, 1.0, EM_FLOAT32), *h = filled(2, -3.0, EM_FLOAT32);
  em_tensor *rs[2] = {NULL, NULL};
  em_optim_opts r = {.lr = 0.25, .etaminus = 0.5, .etaplus = 1.2, .step_size_min = 1e-6,
                     .step_size_max = 50};
  CHECK_OK(em_optim_step(EM_OPTIM_RPROP, q, h, rs, 1, NULL, &r));
  CHECK(rs[0] && rs[1]);
  CHECK(at(rs[1], 0) == 0.25 && at(q, 0) == 1.25 && at(rs[0], 1) == -3.0);
  em_tensor_release(rs[0]);
  em_tensor_release(rs[1]);

  /* ASGD: eta and mu come back as float32 values */
  em_tensor *ax[2] = {NULL, NULL};
  double sc[2] = {0.1, 1.0};
  em_optim_opts a = {.lr = 0.1, .lambd = 1e-4, .alpha = 0.75, .t0 = 1e6};
  CHECK_OK(em_optim_step(EM_OPTIM_ASGD, p, g, ax, 1, sc, &a));
  CHECK(sc[0] == (double)(float)(0.1 / pow(1 + 1e-4 * 0.1, 0.75)) && sc[1] == 1.0);
  CHECK(ax[0] != NULL);
  em_tensor_release(ax[0]);

  /* a failed step: no state made, the parameter untouched */
  em_tensor *g2 = filled(2, 1.0, EM_FLOAT64), *st2[2] = {NULL, NULL};
  uint64_t v0 = em_storage_version(em_tensor_storage(p));
  CHECK_ERR(em_optim_step(EM_OPTIM_ADAMAX, p, g2, st2, 1, NULL, &o), "Adamax: the gradient of shape [2]");
  CHECK(st2[0] == NULL && st2[1] == NULL);
  CHECK(em_storage_version(em_tensor_storage(p)) == v0);
  em_optim_opts n = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .maximize = 1};
  double mu[1] = {1.0};
  CHECK_ERR(em_optim_step(EM_OPTIM_NADAM, p, g, st2, 1, mu, &n), "NAdam: maximize is not an option");
  em_optim_opts e = {.lr = 0.1, .etaminus = 0.5, .etaplus = 0.9};
  CHECK_ERR(em_optim_step(EM_OPTIM_RPROP, p, g, st2, 1, NULL, &e), "Rprop: Invalid eta values: 0.5, 0.9");
  CHECK_ERR(em_optim_step(EM_OPTIM_ADADELTA, p, g, st2, 0, NULL, &o), "step must be 1 or more");
  CHECK(st2[0] == NULL);
  em_tensor_release(g2);
  em_tensor_release(q);
  em_tensor_release(h);
  em_tensor_release(p);
  em_tensor_release(g);
}

/* Tensor hooks (em_tensor_set_hook): a leaf's hook sees the summed
** gradient once and its replacement reaches .grad; the context is freed
** when the hook is replaced and when the tensor goes. */
static int hook_calls, hook_frees;
static em_status times3(void *ctx, em_tensor *g, em_tensor **out) {
  hook_calls++;
  return em_binary(EM_OP_MUL, g, (em_tensor *)ctx, out);
}
static void count_free(void *ctx) {
  (void)ctx;
  hook_frees++;
}

TEST(tensor_hooks_run_once_on_the_sum) {
  em_tensor *x = filled(2, 1.0, EM_FLOAT64), *three = filled(1, 3.0, EM_FLOAT64);
  em_tensor *ones = filled(2, 1.0, EM_FLOAT64), *y = NULL;
  CHECK_OK(em_tensor_requires_grad_(x, 1));
  CHECK_OK(em_tensor_set_hook(x, times3, three, count_free));
  CHECK(em_tensor_hook_ctx(x, times3) == three);
  CHECK_OK(em_binary(EM_OP_ADD, x, x, &y)); /* two edges into x */
  em_tensor *roots[1] = {y}, *grads[1] = {ones};
  CHECK_OK(em_backward(1, roots, grads, 0, 0));
  CHECK(hook_calls == 1);
  em_tensor *gx = em_tensor_grad(x);
  CHECK(gx && at(gx, 0) == 6.0);
  em_tensor_release(gx);
  /* a non-leaf's hook: y2 = x * 1 hooked, flows 3 * 1 into x */
  em_tensor *y2 = NULL;
  CHECK_OK(em_binary(EM_OP_MUL, x, ones, &y2));
  CHECK_OK(em_tensor_set_hook(y2, times3, three, count_free));
  CHECK_OK(em_tensor_set_hook(x, NULL, NULL, NULL)); /* removes x's: frees its ctx */
  CHECK(hook_frees == 1);
  em_tensor *r2[1] = {y2};
  CHECK_OK(em_backward(1, r2, grads, 0, 0));
  CHECK(hook_calls == 2);
  gx = em_tensor_grad(x);
  CHECK(gx && at(gx, 1) == 9.0);
  em_tensor_release(gx);
  em_tensor_release(y2); /* frees its node and the hook's ctx */
  CHECK(hook_frees == 2);
  CHECK_ERR(em_tensor_set_hook(three, times3, three, NULL), "doesn't require gradient");
  em_tensor_release(y);
  em_tensor_release(x);
  em_tensor_release(three);
  em_tensor_release(ones);
}

int main(void) {
  RUN(sgd_momentum_buffer_is_made_then_reused);
  RUN(adam_first_step_moves_by_lr);
  RUN(rmsprop_makes_the_state_its_options_need);
  RUN(a_failed_step_changes_nothing);
  RUN(bad_options_are_named);
  RUN(half_and_strided_parameters);
  RUN(optim_step_state_and_scalars);
  RUN(tensor_hooks_run_once_on_the_sum);
  return CTEST_END();
}
