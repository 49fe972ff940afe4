/* test_meta_nn.c -- the nn and optimizer families on the meta device, as an
** embedding host calls them: every entry of both families is filled for the
** CPU and for meta; each nn op on meta tensors gives the metadata (sizes,
** strides, dtype) the same op gives on CPU tensors, on the meta device; the
** state an optimizer step makes on meta parameters is meta, the parameter's
** shape, and the written storages' versions move; tensors of two devices
** are refused with one message naming both. */
#include <stdlib.h>

#include "ctest.h"
#include "core/kernels.h"
#include "core/kern_nn.h"
#include "core/kern_optim.h"

/* A CPU tensor with values in (0.1, 0.9) (or ones, for integers). */
static em_tensor *cpu_t(int ndim, const int64_t *sizes, em_dtype dt) {
  em_tensor *t = NULL;
  CHECK_OK(em_empty(ndim, sizes, dt, em_cpu(), &t));
  if (dt == EM_FLOAT32 || dt == EM_FLOAT64) {
    CHECK_OK(em_uniform_(t, 0.1, 0.9));
  } else {
    em_scalar one = {EM_SCALAR_INT, 1, 1.0};
    CHECK_OK(em_fill_(t, one));
  }
  return t;
}

/* t's metadata on meta */
static em_tensor *meta_of(const em_tensor *t) {
  em_tensor *m = NULL;
  CHECK_OK(em_to(t, em_tensor_dtype(t), em_meta(), 0, &m));
  return m;
}

/* m is on meta with c's sizes, strides and dtype */
static int like(const em_tensor *c, const em_tensor *m) {
  if (!c || !m) return 0;
  if (em_tensor_device(m).type != EM_META || em_tensor_dtype(m) != em_tensor_dtype(c)) return 0;
  int nd = em_tensor_ndim(c);
  if (em_tensor_ndim(m) != nd) return 0;
  for (int i = 0; i < nd; i++)
    if (em_tensor_sizes(m)[i] != em_tensor_sizes(c)[i] ||
        em_tensor_strides(m)[i] != em_tensor_strides(c)[i])
      return 0;
  return 1;
}

static void release(int n, em_tensor **ts) {
  for (int i = 0; i < n; i++)
    if (ts[i]) em_tensor_release(ts[i]);
}

TEST(conv_on_meta_is_conv_on_cpu_without_values) {
  int64_t xs[4] = {2, 4, 9, 7}, ws[4] = {6, 2, 3, 2}, bs[1] = {6};
  int64_t s[2] = {2, 1}, p[2] = {1, 2}, d[2] = {1, 2};
  em_tensor *x = cpu_t(4, xs, EM_FLOAT32), *w = cpu_t(4, ws, EM_FLOAT32),
            *b = cpu_t(1, bs, EM_FLOAT32);
  em_tensor *mx = meta_of(x), *mw = meta_of(w), *mb = meta_of(b);
  em_tensor *y = NULL, *my = NULL, *gx = NULL, *mgx = NULL, *gw = NULL, *mgw = NULL;
  CHECK_OK(em_conv2d(x, w, b, s, p, d, 2, &y));
  CHECK_OK(em_conv2d(mx, mw, mb, s, p, d, 2, &my));
  CHECK(like(y, my));
  CHECK_OK(em_conv2d_backward_input(y, w, xs, s, p, d, 2, &gx));
  CHECK_OK(em_conv2d_backward_input(my, mw, xs, s, p, d, 2, &mgx));
  CHECK(like(gx, mgx));
  CHECK_OK(em_conv2d_backward_weight(y, x, ws, s, p, d, 2, &gw));
  CHECK_OK(em_conv2d_backward_weight(my, mx, ws, s, p, d, 2, &mgw));
  CHECK(like(gw, mgw));
  /* the geometry's errors are the op's, the same on meta */
  em_tensor *sentinel = (em_tensor *)0x1, *out = sentinel;
  CHECK_ERR(em_conv2d(mx, mw, mb, s, p, d, 1, &out), "expected input[2, 4, 9, 7] to have 2 channels");
  CHECK(out == sentinel);
  CHECK_ERR(em_conv2d(x, mw, NULL, s, p, d, 2, &out),
            "conv2d: expected all tensors to be on the same device, but found at least two "
            "devices, cpu and meta");
  CHECK(out == sentinel);
  em_tensor *rel[12] = {x, w, b, mx, mw, mb, y, my, gx, mgx, gw, mgw};
  release(12, rel);
}

TEST(pooling_on_meta) {
  int64_t xs[4] = {2, 3, 9, 8}, k[2] = {3, 3}, s[2] = {2, 2}, p[2] = {1, 1}, d[2] = {1, 1};
  em_tensor *x = cpu_t(4, xs, EM_FLOAT64), *mx = meta_of(x);
  em_tensor *y = NULL, *ix = NULL, *my = NULL, *mix = NULL, *g = NULL, *mg = NULL;
  em_tensor *a = NULL, *ma = NULL, *ga = NULL, *mga = NULL;
  CHECK_OK(em_max_pool2d(x, k, s, p, d, 1, &y, &ix));
  CHECK_OK(em_max_pool2d(mx, k, s, p, d, 1, &my, &mix));
  CHECK(like(y, my) && like(ix, mix));
  CHECK_OK(em_max_pool2d_backward(y, ix, xs, &g));
  CHECK_OK(em_max_pool2d_backward(my, mix, xs, &mg));
  CHECK(like(g, mg));
  CHECK_OK(em_avg_pool2d(x, k, s, p, 1, 0, 0, &a));
  CHECK_OK(em_avg_pool2d(mx, k, s, p, 1, 0, 0, &ma));
  CHECK(like(a, ma));
  CHECK_OK(em_avg_pool2d_backward(a, xs, k, s, p, 1, 0, 0, &ga));
  CHECK_OK(em_avg_pool2d_backward(ma, xs, k, s, p, 1, 0, 0, &mga));
  CHECK(like(ga, mga));
  em_tensor *rel[12] = {x, mx, y, ix, my, mix, g, mg, a, ma, ga, mga};
  release(12, rel);
}

TEST(norms_on_meta_keep_their_statistics_shapes) {
  int64_t xs[3] = {4, 3, 5}, ns[2] = {3, 5}, cs[1] = {3};
  em_tensor *x = cpu_t(3, xs, EM_FLOAT32), *w = cpu_t(2, ns, EM_FLOAT32);
  em_tensor *mx = meta_of(x), *mw = meta_of(w);
  em_tensor *y = NULL, *mu = NULL, *rs = NULL, *my = NULL, *mmu = NULL, *mrs = NULL;
  CHECK_OK(em_layer_norm(x, 2, w, NULL, 1e-5, &y, &mu, &rs));
  CHECK_OK(em_layer_norm(mx, 2, mw, NULL, 1e-5, &my, &mmu, &mrs));
  CHECK(like(y, my) && like(mu, mmu) && like(rs, mrs));
  em_tensor *gx = NULL, *gw = NULL, *mgx = NULL, *mgw = NULL;
  CHECK_OK(em_layer_norm_backward(y, x, 2, mu, rs, w, &gx, &gw, NULL));
  CHECK_OK(em_layer_norm_backward(my, mx, 2, mmu, mrs, mw, &mgx, &mgw, NULL));
  CHECK(like(gx, mgx) && like(gw, mgw));

  /* batch norm in training moves the running statistics: their versions
  ** move on meta too; evaluation leaves them */
  em_tensor *rm = NULL, *rv = NULL, *by = NULL, *bm = NULL, *bi = NULL, *cby = NULL;
  em_tensor *cbm = NULL, *cbi = NULL, *crm = cpu_t(1, cs, EM_FLOAT32), *crv = cpu_t(1, cs, EM_FLOAT32);
  rm = meta_of(crm);
  rv = meta_of(crv);
  uint64_t v0 = em_storage_version(em_tensor_storage(rm));
  CHECK_OK(em_batch_norm(x, NULL, NULL, crm, crv, 1, 0.1, 1e-5, &cby, &cbm, &cbi));
  CHECK_OK(em_batch_norm(mx, NULL, NULL, rm, rv, 1, 0.1, 1e-5, &by, &bm, &bi));
  CHECK(like(cby, by) && like(cbm, bm) && like(cbi, bi));
  uint64_t v1 = em_storage_version(em_tensor_storage(rm));
  CHECK(v1 > v0);
  em_tensor *ey = NULL;
  CHECK_OK(em_batch_norm(mx, NULL, NULL, rm, rv, 0, 0.1, 1e-5, &ey, NULL, NULL));
  CHECK(like(cby, ey));
  CHECK(em_storage_version(em_tensor_storage(rm)) == v1);
  em_tensor *bgx = NULL, *mbgx = NULL;
  CHECK_OK(em_batch_norm_backward(cby, x, NULL, cbm, cbi, 1, &bgx, NULL, NULL));
  CHECK_OK(em_batch_norm_backward(by, mx, NULL, bm, bi, 1, &mbgx, NULL, NULL));
  CHECK(like(bgx, mbgx));
  em_tensor *rel[25] = {x, w, mx, mw, y, mu, rs, my, mmu, mrs, gx, gw, mgx, mgw, rm, rv,
                        by, bm, bi, cby, cbm, cbi, crm, crv, ey};
  release(25, rel);
  release(1, &bgx);
  release(1, &mbgx);
}

TEST(losses_on_meta) {
  int64_t xs[2] = {4, 5}, ts[1] = {4};
  em_tensor *x = cpu_t(2, xs, EM_FLOAT64), *t = cpu_t(1, ts, EM_INT64);
  em_tensor *mx = meta_of(x), *mt = meta_of(t);
  em_tensor *l = NULL, *tw = NULL, *ml = NULL, *mtw = NULL;
  CHECK_OK(em_nll_loss(x, t, NULL, EM_REDUCTION_MEAN, -100, &l, &tw));
  CHECK_OK(em_nll_loss(mx, mt, NULL, EM_REDUCTION_MEAN, -100, &ml, &mtw));
  CHECK(like(l, ml) && like(tw, mtw));
  em_tensor *g = NULL, *mg = NULL;
  CHECK_OK(em_nll_loss_backward(l, x, t, NULL, EM_REDUCTION_MEAN, -100, tw, &g));
  CHECK_OK(em_nll_loss_backward(ml, mx, mt, NULL, EM_REDUCTION_MEAN, -100, mtw, &mg));
  CHECK(like(g, mg));
  em_tensor *ce = NULL, *mce = NULL, *cg = NULL, *mcg = NULL;
  CHECK_OK(em_cross_entropy(x, t, NULL, EM_REDUCTION_NONE, -100, 0.1, &ce));
  CHECK_OK(em_cross_entropy(mx, mt, NULL, EM_REDUCTION_NONE, -100, 0.1, &mce));
  CHECK(like(ce, mce));
  CHECK_OK(em_cross_entropy_backward(ce, x, t, NULL, EM_REDUCTION_NONE, -100, 0.1, &cg));
  CHECK_OK(em_cross_entropy_backward(mce, mx, mt, NULL, EM_REDUCTION_NONE, -100, 0.1, &mcg));
  CHECK(like(cg, mcg));
  /* the pointwise losses, per element (the reduced ones end in em_reduce) */
  em_tensor *b = NULL, *mb = NULL, *bg = NULL, *mbg = NULL;
  CHECK_OK(em_binary_cross_entropy(x, x, NULL, EM_REDUCTION_NONE, &b));
  CHECK_OK(em_binary_cross_entropy(mx, mx, NULL, EM_REDUCTION_NONE, &mb));
  CHECK(like(b, mb));
  CHECK_OK(em_mse_loss_backward(tw, x, x, EM_REDUCTION_MEAN, &bg));
  CHECK_OK(em_mse_loss_backward(mtw, mx, mx, EM_REDUCTION_MEAN, &mbg));
  CHECK(like(bg, mbg));
  /* no values: the class ids are not read, so none is out of range */
  em_tensor *bad = NULL, *mbad = NULL, *r = NULL;
  em_scalar nine = {EM_SCALAR_INT, 9, 9.0};
  CHECK_OK(em_full(1, ts, nine, EM_INT64, em_cpu(), &bad));
  CHECK_ERR(em_cross_entropy(x, bad, NULL, EM_REDUCTION_MEAN, -100, 0, &r),
            "target 9 is out of bounds for 5 classes");
  mbad = meta_of(bad);
  CHECK_OK(em_cross_entropy(mx, mbad, NULL, EM_REDUCTION_MEAN, -100, 0, &r));
  em_tensor *rel[21] = {x, t, mx, mt, l, tw, ml, mtw, g, mg, ce, mce, cg, mcg,
                        b, mb, bg, mbg, bad, mbad, r};
  release(21, rel);
}

TEST(dropout_of_p_one_on_meta) {
  int64_t xs[2] = {5, 4};
  em_tensor *x = cpu_t(2, xs, EM_FLOAT32), *mx = meta_of(x);
  em_tensor *y = NULL, *m = NULL, *my = NULL, *mm = NULL;
  CHECK_OK(em_dropout(x, 1.0, &y, &m));
  CHECK_OK(em_dropout(mx, 1.0, &my, &mm));
  CHECK(like(y, my) && like(m, mm));
  em_tensor *rel[6] = {x, mx, y, m, my, mm};
  release(6, rel);
}

TEST(optimizer_steps_on_meta_make_meta_state) {
  int64_t ps[2] = {3, 4};
  em_tensor *p = NULL, *g = NULL;
  CHECK_OK(em_empty(2, ps, EM_FLOAT32, em_meta(), &p));
  CHECK_OK(em_empty(2, ps, EM_FLOAT32, em_meta(), &g));
  em_tensor *ref = cpu_t(2, ps, EM_FLOAT32);
  uint64_t v0 = em_storage_version(em_tensor_storage(p));
  em_tensor *buf = NULL;
  em_sgd_opts so = {.lr = 0.1, .momentum = 0.9};
  CHECK_OK(em_sgd_step(p, g, &buf, &so));
  CHECK(like(ref, buf));
  CHECK(em_storage_version(em_tensor_storage(p)) > v0);
  em_tensor *m = NULL, *v = NULL, *mx = NULL;
  em_adam_opts ao = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .amsgrad = 1};
  CHECK_OK(em_adam_step(p, g, &m, &v, &mx, 1, &ao));
  CHECK(like(ref, m) && like(ref, v) && like(ref, mx));
  em_tensor *sq = NULL, *rb = NULL, *ga = NULL;
  em_rmsprop_opts ro = {.lr = 0.1, .alpha = 0.99, .eps = 1e-8, .momentum = 0.5, .centered = 1};
  CHECK_OK(em_rmsprop_step(p, g, &sq, &rb, &ga, &ro));
  CHECK(like(ref, sq) && like(ref, rb) && like(ref, ga));
  /* the checks run as on the CPU: a state of the wrong shape, a gradient
  ** on another device */
  em_tensor *cg = cpu_t(2, ps, EM_FLOAT32), *keep = buf;
  CHECK_ERR(em_sgd_step(p, cg, &buf, &so),
            "SGD: expected all tensors to be on the same device, but found at least two "
            "devices, meta and cpu");
  CHECK(buf == keep);
  em_tensor *m2 = NULL, *v2 = NULL;
  ao.amsgrad = 0;
  CHECK_ERR(em_adam_step(ref, g, &m2, &v2, NULL, 1, &ao),
            "Adam: expected all tensors to be on the same device, but found at least two "
            "devices, cpu and meta");
  CHECK(m2 == NULL && v2 == NULL);
  em_tensor *rel[11] = {p, g, ref, buf, m, v, mx, sq, rb, ga, cg};
  release(11, rel);
}

int main(void) {
  RUN(conv_on_meta_is_conv_on_cpu_without_values);
  RUN(pooling_on_meta);
  RUN(norms_on_meta_keep_their_statistics_shapes);
  RUN(losses_on_meta);
  RUN(dropout_of_p_one_on_meta);
  RUN(optimizer_steps_on_meta_make_meta_state);
  return CTEST_END();
}
