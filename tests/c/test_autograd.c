/*
** test_autograd.c -- engine invariants of autograd: graphs hold no cycles
** (everything is freed with the tensors), deep graphs neither overflow the
** stack when run nor when freed, grad mode is per thread, and the C API
** gives the gradients a host expects.
*/
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "ctest.h"

static em_tensor *vec(const double *v, int64_t n, int requires_grad) {
  em_tensor *t = NULL;
  em_zeros(1, &n, EM_FLOAT64, em_cpu(), &t);
  for (int64_t i = 0; i < n; i++) {
    em_scalar s = {EM_SCALAR_FLOAT, 0, v[i]};
    em_set_flat(t, i, s);
  }
  if (requires_grad) em_tensor_set_requires_grad(t, 1);
  return t;
}

static double at(const em_tensor *t, int64_t i) {
  double v = 0;
  em_get_f64(t, i, &v);
  return v;
}

TEST(backward_through_the_c_api) {
  double xv[3] = {1, 2, 3};
  em_tensor *x = vec(xv, 3, 1), *e = NULL, *y = NULL, *s = NULL;
  CHECK_OK(em_unary(EM_OP_EXP, x, &e));
  CHECK_OK(em_binary(EM_OP_MUL, e, x, &y));
  CHECK_OK(em_reduce(EM_REDUCE_SUM, y, 0, NULL, 0, -1, &s));
  CHECK(em_tensor_requires_grad(s));
  CHECK(!em_tensor_is_leaf(s) && em_tensor_is_leaf(x));
  CHECK(strcmp(em_tensor_grad_fn_name(s), "SumBackward0") == 0);
  CHECK_OK(em_backward(1, &s, NULL, 0, 0));
  em_tensor *g = em_tensor_grad(x);
  CHECK(g != NULL);
  for (int i = 0; g && i < 3; i++) {  /* d/dx x e^x = (x + 1) e^x */
    double want = (xv[i] + 1) * exp(xv[i]);
    CHECK(fabs(at(g, i) - want) < 1e-12 * want);
  }
  em_tensor_release(g);
  /* the graph was freed: a second backward is an error */
  CHECK_ERR(em_backward(1, &s, NULL, 0, 0), "backward through the graph a second time");
  em_tensor_release(s);
  em_tensor_release(y);
  em_tensor_release(e);
  em_tensor_release(x);
}

TEST(graphs_are_freed_with_their_tensors) {
  size_t before = em_memory_live_bytes();
  double xv[4] = {0.5, -1, 2, 0.25};
  em_tensor *x = vec(xv, 4, 1);
  for (int round = 0; round < 3; round++) {
    /* exp and tanh save their outputs: tensor -> node -> saved output
    ** must not hold the output itself */
    em_tensor *a = NULL, *b = NULL, *c = NULL, *s = NULL;
    CHECK_OK(em_unary(EM_OP_EXP, x, &a));
    CHECK_OK(em_unary(EM_OP_TANH, a, &b));
    CHECK_OK(em_binary(EM_OP_MUL, b, a, &c));
    CHECK_OK(em_reduce(EM_REDUCE_SUM, c, 0, NULL, 0, -1, &s));
    if (round == 1) CHECK_OK(em_backward(1, &s, NULL, 1, 0));  /* retained */
    if (round == 2) CHECK_OK(em_backward(1, &s, NULL, 0, 1));  /* create_graph */
    em_tensor_release(a);
    em_tensor_release(b);
    em_tensor_release(c);
    em_tensor_release(s);
  }
  /* x.grad from the create_graph round holds a graph that leads back to
  ** x itself (PyTorch has the same cycle); clearing it frees everything */
  CHECK_OK(em_tensor_set_grad(x, NULL));
  CHECK(em_tensor_refcount(x) == 1);
  em_tensor_release(x);
  CHECK(em_memory_live_bytes() == before);
}

/* A node handle keeps its part of the graph alive after the tensors are
** gone; walking it hands out references that free everything when
** released. */
TEST(grad_fn_handles_walk_the_graph_and_hold_it) {
  size_t before = em_memory_live_bytes();
  double xv[3] = {1, 2, 3};
  em_tensor *x = vec(xv, 3, 1), *e = NULL, *s = NULL;
  CHECK_OK(em_unary(EM_OP_EXP, x, &e));
  CHECK_OK(em_reduce(EM_REDUCE_SUM, e, 0, NULL, 0, -1, &s));
  CHECK(em_tensor_grad_fn(x) == NULL);
  em_grad_fn *fs = em_tensor_grad_fn(s);
  CHECK(fs != NULL && strcmp(em_grad_fn_name(fs), "SumBackward0") == 0);
  em_tensor_release(s);
  em_tensor_release(e);
  em_grad_fn *fe = NULL, *none = NULL;
  em_tensor *leaf = NULL;
  int nr = -1;
  CHECK(em_grad_fn_next(fs, 0, &fe, &leaf, &nr) == 1);
  CHECK(fe != NULL && leaf == NULL && nr == 0);
  CHECK(fe && strcmp(em_grad_fn_name(fe), "ExpBackward0") == 0);
  CHECK(em_grad_fn_next(fs, 1, &none, &leaf, &nr) == 0);
  em_grad_fn_release(fs); /* the exp node is still held through fe */
  CHECK(em_grad_fn_next(fe, 0, &none, &leaf, &nr) == 1);
  CHECK(none == NULL && leaf == x && nr == 0);
  CHECK(em_tensor_refcount(x) == 3); /* x, the edge, and leaf */
  em_tensor_release(leaf);
  em_grad_fn_release(fe);
  em_grad_fn_release(NULL);
  CHECK(em_tensor_refcount(x) == 1);
  em_tensor_release(x);
  CHECK(em_memory_live_bytes() == before);
}

TEST(deep_graphs_run_and_free_without_recursion) {
  double v = 1;
  em_tensor *x = vec(&v, 1, 1), *y = x;
  em_tensor_retain(y);
  for (int i = 0; i < 200000; i++) {
    em_tensor *z = NULL;
    CHECK_OK(em_unary(EM_OP_NEG, y, &z));
    em_tensor_release(y);
    y = z;
  }
  CHECK_OK(em_backward(1, &y, NULL, 0, 0));
  em_tensor *g = em_tensor_grad(x);
  CHECK(g && at(g, 0) == 1);
  em_tensor_release(g);
  em_tensor_release(y);  /* frees 200000 nodes, one after another */
  CHECK(em_tensor_refcount(x) == 1);
  em_tensor_release(x);
}

static void *no_grad_thread(void *arg) {
  (void)arg;
  em_set_grad_enabled(0);
  double v = 2;
  em_tensor *x = vec(&v, 1, 1), *y = NULL;
  em_binary(EM_OP_MUL, x, x, &y);
  int recorded = y && em_tensor_requires_grad(y);
  em_tensor_release(y);
  em_tensor_release(x);
  return (void *)(intptr_t)recorded;
}

TEST(grad_mode_is_per_thread) {
  pthread_t th;
  void *res = NULL;
  CHECK(pthread_create(&th, NULL, no_grad_thread, NULL) == 0);
  pthread_join(th, &res);
  CHECK(res == NULL);              /* that thread recorded nothing ... */
  CHECK(em_grad_enabled() == 1);   /* ... and this one is still on */
  double v = 2;
  em_tensor *x = vec(&v, 1, 1), *y = NULL;
  CHECK_OK(em_binary(EM_OP_MUL, x, x, &y));
  CHECK(em_tensor_requires_grad(y));
  em_tensor_release(y);
  em_tensor_release(x);
}

TEST(autograd_grad_and_version_checks) {
  double xv[2] = {1.5, -2};
  em_tensor *x = vec(xv, 2, 1), *y = NULL, *s = NULL, *g = NULL;
  CHECK_OK(em_binary(EM_OP_MUL, x, x, &y));
  CHECK_OK(em_reduce(EM_REDUCE_SUM, y, 0, NULL, 0, -1, &s));
  const em_tensor *in[1] = {x};
  CHECK_OK(em_autograd_grad(1, &s, NULL, 1, in, 1, 0, 0, &g));
  CHECK(g && at(g, 0) == 3 && at(g, 1) == -4);
  CHECK(em_tensor_grad(x) == NULL);  /* .grad untouched */
  em_tensor_release(g);
  /* x is saved by the multiplication; changing it in place (no grad mode,
  ** so the leaf may be written) makes the backward an error */
  em_set_grad_enabled(0);
  em_scalar one = {EM_SCALAR_INT, 1, 0};
  CHECK_OK(em_fill_(x, one));
  em_set_grad_enabled(1);
  CHECK_ERR(em_backward(1, &s, NULL, 0, 0),
            "modified by an inplace operation");
  em_tensor_release(s);
  em_tensor_release(y);
  em_tensor_release(x);
}

/* d/dx x^2 = 2 x g, written with engine ops (so it can be differentiated) */
static int ctx_freed;
static em_status square_backward(void *ctx, int nsaved, em_tensor *const *saved, int nout,
                                 em_tensor *const *gout, int nin, em_tensor **gin) {
  (void)ctx;
  if (nsaved != 1 || nout != 1 || nin != 1) return EM_E_VALUE;
  em_tensor *gx = NULL;
  em_status st = em_binary(EM_OP_MUL, gout[0], saved[0], &gx);
  if (st == EM_OK) {
    em_operand ops[2] = {{gx, {EM_SCALAR_INT, 0, 0}}, {NULL, {EM_SCALAR_INT, 2, 0}}};
    st = em_elementwise(EM_OP_MUL, 2, ops, NULL, NULL, &gin[0]);
  }
  em_tensor_release(gx);
  return st;
}
static void free_ctx(void *ctx) { ctx_freed += ctx == (void *)&ctx_freed; }

TEST(custom_ops_join_the_graph) {
  double xv[2] = {1.5, -3};
  em_tensor *x = vec(xv, 2, 1), *y = NULL, *s = NULL, *g = NULL, *gg = NULL;
  em_set_grad_enabled(0);  /* the host's own forward kernel */
  CHECK_OK(em_binary(EM_OP_MUL, x, x, &y));
  em_set_grad_enabled(1);
  const em_tensor *in[1] = {x};
  ctx_freed = 0;
  CHECK_OK(em_autograd_record("SquareBackward", 1, in, 1, &y, 1, in, square_backward,
                              &ctx_freed, free_ctx));
  CHECK(em_tensor_requires_grad(y) && strcmp(em_tensor_grad_fn_name(y), "SquareBackward") == 0);
  CHECK_OK(em_reduce(EM_REDUCE_SUM, y, 0, NULL, 0, -1, &s));
  CHECK_OK(em_autograd_grad(1, &s, NULL, 1, in, 1, 1, 0, &g));
  CHECK(g && at(g, 0) == 3 && at(g, 1) == -6);
  em_tensor *gs = NULL;
  CHECK_OK(em_reduce(EM_REDUCE_SUM, g, 0, NULL, 0, -1, &gs));
  CHECK_OK(em_autograd_grad(1, &gs, NULL, 1, in, 0, 0, 0, &gg));  /* second derivative */
  CHECK(gg && at(gg, 0) == 2 && at(gg, 1) == 2);
  em_tensor_release(gg);
  em_tensor_release(gs);
  em_tensor_release(g);
  em_tensor_release(s);
  CHECK(ctx_freed == 0);
  em_tensor_release(y);  /* the last reference to the node */
  CHECK(ctx_freed == 1);
  /* nothing to record: ctx is freed at once */
  em_set_grad_enabled(0);
  CHECK_OK(em_autograd_record("X", 1, in, 1, &x, 0, NULL, square_backward, &ctx_freed,
                              free_ctx));
  em_set_grad_enabled(1);
  CHECK(ctx_freed == 2);
  em_tensor_release(x);
}

/* The post-accumulate-grad hook (em_tensor_set_grad_hook; DDP's): once per
** backward, after the last of several gradients into the leaf, with .grad
** complete; not for em_autograd_grad; an error stops the backward; the ctx
** is freed when replaced and with the tensor. */
typedef struct hook_log {
  int calls, freed;
  double grad0; /* .grad[0] seen by the last call */
  int fail;
} hook_log;

static em_status count_hook(void *ctx, em_tensor *t) {
  hook_log *h = ctx;
  h->calls++;
  em_tensor *g = em_tensor_grad(t);
  h->grad0 = g ? at(g, 0) : -1;
  em_tensor_release(g);
  if (h->fail) return em_set_error(EM_E_RUNTIME, "hook: failed on purpose");
  return EM_OK;
}
static void count_free(void *ctx) { ((hook_log *)ctx)->freed++; }

TEST(post_accumulate_grad_hooks) {
  double xv[2] = {1, 2};
  em_tensor *x = vec(xv, 2, 1), *a = NULL, *b = NULL, *y = NULL, *s = NULL;
  hook_log h = {0, 0, 0, 0};
  CHECK_OK(em_tensor_set_grad_hook(x, count_hook, &h, count_free));
  CHECK(em_tensor_grad_hook_ctx(x, count_hook) == &h);
  /* x reaches the loss along two paths: s = sum(3x + x*x) */
  double tv[2] = {3, 3};
  em_tensor *three = vec(tv, 2, 0);
  CHECK_OK(em_binary(EM_OP_MUL, x, three, &a));
  em_tensor_release(three);
  CHECK_OK(em_binary(EM_OP_MUL, x, x, &b));
  CHECK_OK(em_binary(EM_OP_ADD, a, b, &y));
  CHECK_OK(em_reduce(EM_REDUCE_SUM, y, 0, NULL, 0, -1, &s));
  CHECK_OK(em_backward(1, &s, NULL, 1, 0));
  CHECK(h.calls == 1 && h.grad0 == 5); /* 3 + 2x at x = 1: both paths summed */
  em_tensor *r = NULL;
  CHECK_OK(em_autograd_grad(1, &s, NULL, 1, (const em_tensor *const *)&x, 1, 0, 0, &r));
  CHECK(h.calls == 1); /* no accumulation, no hook */
  em_tensor_release(r);
  h.fail = 1;
  CHECK_ERR(em_backward(1, &s, NULL, 1, 0), "hook: failed on purpose");
  CHECK(h.calls == 2 && h.grad0 == 10);
  /* non-leaves and tensors without grad are refused (and ctx freed) */
  hook_log h2 = {0, 0, 0, 0};
  CHECK_ERR(em_tensor_set_grad_hook(y, count_hook, &h2, count_free), "non-leaf tensors");
  CHECK(h2.freed == 1);
  /* replacing frees the old ctx; the tensor's release frees the new one */
  CHECK_OK(em_tensor_set_grad_hook(x, count_hook, &h2, count_free));
  CHECK(h.freed == 1 && h2.freed == 1);
  em_tensor_release(s);
  em_tensor_release(y);
  em_tensor_release(b);
  em_tensor_release(a);
  em_tensor_release(x);
  CHECK(h2.freed == 2);
}

/* out= in grad mode: an out that requires grad, or a view made under
** no_grad of one, is refused by every engine path before anything is
** written (elementwise, em_write_out, the direct GEMM); under no_grad the
** same calls write. */
TEST(out_is_checked_in_grad_mode) {
  double av[4] = {1, 2, 3, 4}, zv[4] = {0, 0, 0, 0};
  em_tensor *a = vec(av, 4, 0), *leaf = vec(zv, 4, 1), *view = NULL, *r = NULL;
  int64_t sq[2] = {2, 2};
  em_set_grad_enabled(0);
  CHECK_OK(em_view(leaf, 1, (int64_t[]){4}, &view));
  em_set_grad_enabled(1);
  em_tensor *a2 = NULL, *leaf2 = NULL, *view2 = NULL;
  CHECK_OK(em_view(a, 2, sq, &a2));
  CHECK_OK(em_view(leaf, 2, sq, &leaf2));
  em_set_grad_enabled(0);
  CHECK_OK(em_view(leaf, 2, sq, &view2));
  em_set_grad_enabled(1);
  em_operand in[2] = {{a, {EM_SCALAR_INT, 0, 0}}, {a, {EM_SCALAR_INT, 0, 0}}};
  CHECK_ERR(em_elementwise(EM_OP_ADD, 2, in, NULL, leaf, NULL), "functions with out= arguments");
  CHECK_ERR(em_elementwise(EM_OP_ADD, 2, in, NULL, view, NULL), "no_grad mode");
  CHECK_ERR(em_write_out("sum", a, view), "no_grad mode");
  int done = 1;
  CHECK_ERR(em_matmul_into("mm", a2, a2, leaf2, &done), "functions with out= arguments");
  CHECK(done == 0);
  CHECK_ERR(em_matmul_into("mm", a2, a2, view2, &done), "no_grad mode");
  for (int i = 0; i < 4; i++) CHECK(at(leaf, i) == 0);  /* nothing written */
  em_set_grad_enabled(0);
  CHECK_OK(em_elementwise(EM_OP_ADD, 2, in, NULL, view, &r));
  CHECK(at(leaf, 3) == 8);
  em_tensor_release(r);
  CHECK_OK(em_matmul_into("mm", a2, a2, view2, &done));
  CHECK(done == 1 && at(leaf, 0) == 7 && at(leaf, 3) == 22);
  em_set_grad_enabled(1);
  em_tensor_release(view2);
  em_tensor_release(leaf2);
  em_tensor_release(a2);
  em_tensor_release(view);
  em_tensor_release(leaf);
  em_tensor_release(a);
}

int main(void) {
  RUN(custom_ops_join_the_graph);
  RUN(grad_fn_handles_walk_the_graph_and_hold_it);
  RUN(backward_through_the_c_api);
  RUN(graphs_are_freed_with_their_tensors);
  RUN(deep_graphs_run_and_free_without_recursion);
  RUN(grad_mode_is_per_thread);
  RUN(autograd_grad_and_version_checks);
  RUN(post_accumulate_grad_hooks);
  RUN(out_is_checked_in_grad_mode);
  return CTEST_END();
}
