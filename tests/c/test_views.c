/* test_views.c -- engine invariants of views and indexing:
** - the stride rule of view (em_view_strides) agrees with a brute-force
**   judge over generated layouts: a view exists iff the element addresses
**   of the source, in row-major order, are an affine function of the new
**   shape's positions; when it says yes, the strides it gives address
**   exactly those elements;
** - the copy kernel (including the blocked transpose path) and flip match a
**   naive element-by-element reference over generated shapes and strides;
** - index expressions: basic items give views with the right metadata,
**   errors leave no output, and advanced reads match a naive gather. */
#include <stdlib.h>

#include "ctest.h"
#include "core/core.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int64_t rnd(int64_t n) { /* 0..n-1 */
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (int64_t)(rng % (uint64_t)n);
}

/* storage address (in elements) of row-major element k */
static int64_t addr_of(int nd, const int64_t *sz, const int64_t *st, int64_t off,
                       int64_t k) {
  int64_t a = off;
  for (int i = nd - 1; i >= 0; i--) {
    a += (k % sz[i]) * st[i];
    k /= sz[i];
  }
  return a;
}

/* Brute force: is there a stride vector for new sizes reproducing the
** row-major addresses of (sz, st)? Strides of size>1 dims are forced by the
** address of the element one step along that dim. */
static int affine_fit(int nd, const int64_t *sz, const int64_t *st, int nn,
                      const int64_t *nsz, int64_t numel) {
  int64_t cand[EM_MAX_DIMS], unit = 1;
  for (int d = nn - 1; d >= 0; d--) {
    cand[d] = nsz[d] > 1 ? addr_of(nd, sz, st, 0, unit) - addr_of(nd, sz, st, 0, 0) : 0;
    unit *= nsz[d];
  }
  for (int64_t k = 0; k < numel; k++)
    if (addr_of(nd, sz, st, 0, k) != addr_of(nn, nsz, cand, 0, k)) return 0;
  return 1;
}

/* all factorisations of n into up to 4 factors, written to out (count) */
static int factorise(int64_t n, int64_t out[][4], int *lens, int max) {
  int c = 0;
  for (int64_t a = 1; a <= n; a++) {
    if (n % a) continue;
    if (c < max) { out[c][0] = n; lens[c++] = 1; }
    for (int64_t b = 1; b <= n / a; b++) {
      if ((n / a) % b) continue;
      int64_t r = n / a / b;
      if (c < max) { out[c][0] = a; out[c][1] = b; out[c][2] = r; lens[c++] = 3; }
      if (r == 1 && c < max) { out[c][0] = a; out[c][1] = b; lens[c++] = 2; }
      for (int64_t e = 1; e <= r; e++)
        if (r % e == 0 && c < max) {
          out[c][0] = a; out[c][1] = b; out[c][2] = e; out[c][3] = r / e; lens[c++] = 4;
        }
    }
  }
  return c;
}

TEST(view_rule_matches_brute_force) {
  int checked = 0, views = 0, refused_but_fits = 0;
  for (int trial = 0; trial < 150; trial++) {
    /* a random layout: a contiguous block, permuted, sliced with steps,
    ** sometimes with a size-1 or expanded dim */
    int nd = 1 + (int)rnd(4);
    int64_t sz[EM_MAX_DIMS], st[EM_MAX_DIMS], numel = 1;
    for (int i = 0; i < nd; i++) {
      sz[i] = 1 + rnd(4);
      numel *= sz[i];
    }
    int64_t full[EM_MAX_DIMS], step[EM_MAX_DIMS];
    for (int i = 0; i < nd; i++) { step[i] = 1 + rnd(2); full[i] = sz[i] * step[i]; }
    int64_t cst[EM_MAX_DIMS];
    em_contiguous_strides(nd, full, cst);
    for (int i = 0; i < nd; i++) st[i] = cst[i] * step[i];
    for (int i = nd - 1; i > 0; i--) { /* permute */
      int j = (int)rnd(i + 1);
      int64_t a = sz[i], b = st[i];
      sz[i] = sz[j]; st[i] = st[j]; sz[j] = a; st[j] = b;
    }
    if (rnd(5) == 0) { int i = (int)rnd(nd); numel /= sz[i]; sz[i] = 1 + rnd(3); st[i] = 0; numel *= sz[i]; }
    int64_t shapes[400][4];
    int lens[400];
    int ns = factorise(numel, shapes, lens, 400);
    for (int s = 0; s < ns; s++) {
      int64_t nst[EM_MAX_DIMS];
      int ok = em_view_strides(nd, sz, st, lens[s], shapes[s], nst);
      int fit = affine_fit(nd, sz, st, lens[s], shapes[s], numel);
      checked++;
      if (ok) {
        views++;
        CHECK(fit);
        for (int64_t k = 0; k < numel; k++)
          if (addr_of(nd, sz, st, 0, k) != addr_of(lens[s], shapes[s], nst, 0, k)) {
            CHECK(!"view strides address other elements");
            break;
          }
      } else if (fit) {
        refused_but_fits++;
      }
    }
  }
  /* on these layouts (permuted, stepped, some expanded) PyTorch's rule is
  ** exact: it refuses a view only when no strides could express one */
  printf("  view rule: %d layouts/shapes, %d views, %d refused although strides "
         "exist\n", checked, views, refused_but_fits);
  CHECK(refused_but_fits == 0);
  CHECK(checked > 500 && views > 100);
}

TEST(view_rule_seed_examples) {
  /* grid[:, ::2] of a [5, 6] grid: sizes [5, 3], strides [6, 2] */
  int64_t sz[2] = {5, 3}, st[2] = {6, 2}, ns[1] = {15}, out[1];
  CHECK(em_view_strides(2, sz, st, 1, ns, out) && out[0] == 2);
  /* its transpose cannot be flattened */
  int64_t tsz[2] = {6, 5}, tst[2] = {1, 6}, n30[1] = {30};
  CHECK(!em_view_strides(2, tsz, tst, 1, n30, out));
}

/* -- copy kernel ------------------------------------------------------------ */

static double naive_get(const em_tensor *t, int64_t k) {
  double v;
  em_get_f64(t, k, &v);
  return v;
}

TEST(copy_kernel_matches_reference_over_layouts) {
  em_dtype dts[4] = {EM_FLOAT32, EM_INT64, EM_INT16, EM_FLOAT64};
  int mismatches = 0, runs = 0;
  for (int trial = 0; trial < 300; trial++) {
    int big = trial % 3 == 0; /* big enough for the blocked path */
    int nd = big ? 2 + (int)rnd(2) : 1 + (int)rnd(4);
    int64_t sz[EM_MAX_DIMS];
    for (int i = 0; i < nd; i++) sz[i] = 1 + rnd(big ? (nd == 2 ? 90 : 40) : 9);
    em_dtype sdt = dts[rnd(4)], ddt = rnd(2) ? sdt : dts[rnd(4)];
    em_tensor *src, *dst, *sv, *dv;
    CHECK_OK(em_empty(nd, sz, sdt, em_cpu(), &src));
    int64_t n = em_tensor_numel(src);
    for (int64_t k = 0; k < n; k++) {
      em_scalar v = {EM_SCALAR_INT, k % 30000, 0};
      em_set_flat(src, k, v);
    }
    /* permuted views of both sides */
    int64_t perm[EM_MAX_DIMS], perm2[EM_MAX_DIMS];
    for (int i = 0; i < nd; i++) perm[i] = perm2[i] = i + 1;
    for (int i = nd - 1; i > 0; i--) {
      int j = (int)rnd(i + 1); int64_t a = perm[i]; perm[i] = perm[j]; perm[j] = a;
      j = (int)rnd(i + 1); a = perm2[i]; perm2[i] = perm2[j]; perm2[j] = a;
    }
    CHECK_OK(em_permute(src, nd, perm, &sv));
    int64_t dsz[EM_MAX_DIMS];
    for (int i = 0; i < nd; i++) dsz[i] = em_tensor_sizes(sv)[i];
    /* dst: contiguous with sizes asz, viewed through perm2 as sizes dsz */
    int64_t asz[EM_MAX_DIMS];
    for (int i = 0; i < nd; i++) asz[perm2[i] - 1] = dsz[i];
    CHECK_OK(em_zeros(nd, asz, ddt, em_cpu(), &dst));
    CHECK_OK(em_permute(dst, nd, perm2, &dv));
    for (int i = 0; i < nd; i++) CHECK(em_tensor_sizes(dv)[i] == dsz[i]);
    CHECK_OK(em_copy_(dv, sv));
    runs++;
    for (int64_t k = 0; k < n; k++)
      if (naive_get(dv, k) != naive_get(sv, k)) { mismatches++; break; }
    em_tensor_release(sv); em_tensor_release(dv);
    em_tensor_release(src); em_tensor_release(dst);
  }
  CHECK(mismatches == 0);
  CHECK(runs == 300);
}

TEST(blocked_transpose_copy_is_exact) {
  /* large enough for the tiled path, with ragged edges */
  int64_t sz[2] = {131, 77};
  em_tensor *a, *at, *c;
  CHECK_OK(em_empty(2, sz, EM_FLOAT64, em_cpu(), &a));
  for (int64_t k = 0; k < 131 * 77; k++) ((double *)em_tensor_data(a))[k] = (double)k;
  CHECK_OK(em_transpose(a, 1, 2, &at));
  CHECK_OK(em_contiguous(at, &c));
  CHECK(em_tensor_is_contiguous(c) && c != at);
  int bad = 0;
  for (int64_t i = 0; i < 77; i++)
    for (int64_t j = 0; j < 131; j++)
      bad += ((double *)em_tensor_data(c))[i * 131 + j] != (double)(j * 77 + i);
  CHECK(bad == 0);
  /* a batch of transposes: [4, 40, 50] permuted (1, 3, 2) */
  int64_t bs[3] = {4, 40, 50}, p[3] = {1, 3, 2};
  em_tensor *b, *bp, *bc;
  CHECK_OK(em_empty(3, bs, EM_INT32, em_cpu(), &b));
  for (int64_t k = 0; k < 8000; k++) ((int32_t *)em_tensor_data(b))[k] = (int32_t)k;
  CHECK_OK(em_permute(b, 3, p, &bp));
  CHECK_OK(em_contiguous(bp, &bc));
  bad = 0;
  for (int64_t k = 0; k < 8000; k++) {
    double x, y;
    em_get_f64(bc, k, &x);
    em_get_f64(bp, k, &y);
    bad += x != y;
  }
  CHECK(bad == 0);
  em_tensor_release(a); em_tensor_release(at); em_tensor_release(c);
  em_tensor_release(b); em_tensor_release(bp); em_tensor_release(bc);
  /* float32 (the AVX2 path's 64x64 tiles of 8x8 blocks): several whole
  ** tiles, ragged tiles and ragged 8x8 blocks, at 1 and 2 threads */
  int64_t fs[2] = {403, 250}; /* above the parallel threshold */
  int old = em_get_num_threads();
  for (int th = 1; th <= 2; th++) {
    CHECK_OK(em_set_num_threads(th));
    em_tensor *f, *ft, *fc;
    CHECK_OK(em_empty(2, fs, EM_FLOAT32, em_cpu(), &f));
    for (int64_t k = 0; k < 403 * 250; k++) ((float *)em_tensor_data(f))[k] = (float)k;
    CHECK_OK(em_transpose(f, 1, 2, &ft));
    CHECK_OK(em_contiguous(ft, &fc));
    bad = 0;
    for (int64_t i = 0; i < 250; i++)
      for (int64_t j = 0; j < 403; j++)
        bad += ((float *)em_tensor_data(fc))[i * 403 + j] != (float)(j * 250 + i);
    CHECK(bad == 0);
    em_tensor_release(f); em_tensor_release(ft); em_tensor_release(fc);
  }
  CHECK_OK(em_set_num_threads(old));
}

TEST(flip_reverses_and_copies) {
  int64_t sz[3] = {3, 4, 5}, dims[2] = {1, -1};
  em_tensor *a, *f;
  CHECK_OK(em_empty(3, sz, EM_INT64, em_cpu(), &a));
  for (int64_t k = 0; k < 60; k++) ((int64_t *)em_tensor_data(a))[k] = k;
  CHECK_OK(em_flip(a, 2, dims, &f));
  CHECK(em_tensor_storage(f) != em_tensor_storage(a));
  int bad = 0;
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 4; j++)
      for (int64_t k = 0; k < 5; k++) {
        int64_t v;
        em_get_i64(f, i * 20 + j * 5 + k, &v);
        bad += v != (2 - i) * 20 + j * 5 + (4 - k);
      }
  CHECK(bad == 0);
  int64_t rep[2] = {1, 1};
  CHECK_ERR(em_flip(a, 2, rep, &f), "appears more than once");
  em_tensor_release(a);
  em_tensor_release(f);
}

/* -- index expressions ------------------------------------------------------ */

TEST(index_items_make_views) {
  int64_t sz[3] = {2, 3, 4};
  em_tensor *t, *v;
  CHECK_OK(em_empty(3, sz, EM_FLOAT32, em_cpu(), &t));
  em_index_item items[3] = {
      {EM_INDEX_INT, -1, 0, 0, NULL},
      {EM_INDEX_NEWAXIS, 0, 0, 0, NULL},
      {EM_INDEX_RANGE, 1, -1, 2, NULL}};
  CHECK_OK(em_index_get(t, 3, items, &v));
  CHECK(em_tensor_ndim(v) == 3);
  CHECK(em_tensor_sizes(v)[0] == 1 && em_tensor_sizes(v)[1] == 2 && em_tensor_sizes(v)[2] == 4);
  CHECK(em_tensor_strides(v)[1] == 8 && em_tensor_strides(v)[2] == 1);
  CHECK(em_tensor_offset(v) == 12);
  CHECK(em_tensor_storage(v) == em_tensor_storage(t));
  em_tensor_release(v);
  em_tensor *keep = (em_tensor *)0x1;
  v = keep;
  em_index_item bad[1] = {{EM_INDEX_INT, 3, 0, 0, NULL}};
  CHECK_ERR(em_index_get(t, 1, bad, &v), "index 3 is out of bounds for dimension 1 with size 2");
  CHECK(v == keep); /* outputs only on success */
  em_index_item zero[1] = {{EM_INDEX_RANGE, 1, 2, 0, NULL}};
  CHECK_ERR(em_index_get(t, 1, zero, &v), ":flip");
  em_index_item two[2] = {{EM_INDEX_ELLIPSIS, 0, 0, 0, NULL}, {EM_INDEX_ELLIPSIS, 0, 0, 0, NULL}};
  CHECK_ERR(em_index_get(t, 2, two, &v), "single ellipsis");
  em_tensor_release(t);
}

TEST(advanced_gather_matches_naive) {
  int64_t sz[2] = {6, 7}, isz[1] = {5};
  em_tensor *t, *idx, *r;
  CHECK_OK(em_empty(2, sz, EM_INT64, em_cpu(), &t));
  for (int64_t k = 0; k < 42; k++) ((int64_t *)em_tensor_data(t))[k] = k * 10;
  CHECK_OK(em_empty(1, isz, EM_INT64, em_cpu(), &idx));
  int64_t pos[5] = {7, -1, 1, 3, 3};
  for (int k = 0; k < 5; k++) ((int64_t *)em_tensor_data(idx))[k] = pos[k];
  em_index_item items[2] = {{EM_INDEX_FULL, 0, 0, 0, NULL}, {EM_INDEX_TENSOR, 0, 0, 0, idx}};
  CHECK_OK(em_index_get(t, 2, items, &r));
  CHECK(em_tensor_ndim(r) == 2 && em_tensor_sizes(r)[0] == 6 && em_tensor_sizes(r)[1] == 5);
  int bad = 0;
  for (int64_t i = 0; i < 6; i++)
    for (int k = 0; k < 5; k++) {
      int64_t c = pos[k] > 0 ? pos[k] - 1 : 7 + pos[k], v;
      em_get_i64(r, i * 5 + k, &v);
      bad += v != (i * 7 + c) * 10;
    }
  CHECK(bad == 0);
  em_tensor_release(r);
  ((int64_t *)em_tensor_data(idx))[2] = 8;
  CHECK_ERR(em_index_get(t, 2, items, &r), "index 8 is out of bounds for dimension 2 with size 7");
  em_tensor_release(idx);
  em_tensor_release(t);
}

/* Hostile index expressions and view arguments: extreme values, every
** kind, index tensors of every dtype. Nothing may crash or overflow (run
** under ASan/UBSan by make test-asan); a success must address only
** elements of the storage, which em_get_f64 over the result reads. */
static int64_t extreme(void) {
  static const int64_t v[] = {INT64_MIN, INT64_MIN + 1, -4611686018427387904LL, -5, -1,
                              0, 1, 2, 3, 7, 4611686018427387904LL, INT64_MAX};
  return rnd(3) ? rnd(9) - 4 : v[rnd(sizeof v / sizeof v[0])];
}

TEST(hostile_index_expressions_fail_cleanly) {
  int64_t sz[3] = {3, 1, 4}, isz[1] = {2};
  em_tensor *t, *idx[4];
  CHECK_OK(em_zeros(3, sz, EM_FLOAT32, em_cpu(), &t));
  em_dtype idt[4] = {EM_INT64, EM_INT32, EM_BOOL, EM_FLOAT32};
  for (int k = 0; k < 4; k++) CHECK_OK(em_zeros(1, isz, idt[k], em_cpu(), &idx[k]));
  int ok = 0, failed = 0;
  for (int trial = 0; trial < 4000; trial++) {
    em_index_item items[6];
    int n = (int)rnd(6);
    for (int i = 0; i < n; i++) {
      items[i].kind = (em_index_kind)rnd(7); /* 6 is not a kind */
      items[i].first = extreme();
      items[i].last = extreme();
      items[i].step = extreme();
      int64_t *p = (int64_t *)em_tensor_data(idx[0]);
      p[0] = extreme(); p[1] = extreme();
      ((int32_t *)em_tensor_data(idx[1]))[0] = (int32_t)rnd(9) - 4;
      ((bool *)em_tensor_data(idx[2]))[0] = rnd(2);
      items[i].tensor = rnd(8) ? idx[rnd(4)] : NULL;
    }
    em_tensor *r = NULL;
    if (em_index_get(t, n, items, &r) == EM_OK) {
      ok++;
      double v, sum = 0;
      for (int64_t k = 0; k < em_tensor_numel(r); k++) { em_get_f64(r, k, &v); sum += v; }
      CHECK(sum == 0);
      em_tensor_release(r);
    } else {
      failed++;
      CHECK(r == NULL && em_last_error()[0] != 0);
    }
    em_scalar one = {EM_SCALAR_INT, 1, 0};
    if (em_index_fill_scalar_(t, n, items, one) == EM_OK) {
      em_scalar zero = {EM_SCALAR_INT, 0, 0};
      CHECK_OK(em_fill_(t, zero));
    }
    /* view ops with extreme arguments: a success is released at once */
    int64_t a = extreme(), b = extreme(), c = extreme();
    int64_t shp[2] = {a, b};
    for (int op = 0; op < 8; op++) {
      em_tensor *v2 = NULL;
      em_status st = EM_OK;
      switch (op) {
        case 0: st = em_narrow(t, a, b, c, &v2); break;
        case 1: st = em_select(t, a, b, &v2); break;
        case 2: st = em_unfold(t, a, b, c, &v2); break;
        case 3: st = em_diagonal(t, a, b, c, &v2); break;
        case 4: st = em_unsqueeze(t, a, &v2); break;
        case 5: st = em_view(t, 2, shp, &v2); break;
        case 6: st = em_expand(t, 2, shp, &v2); break;
        default: st = em_reshape(t, 2, shp, &v2); break;
      }
      CHECK((st == EM_OK) == (v2 != NULL));
      if (v2) {
        double v;
        for (int64_t k = 0; k < em_tensor_numel(v2) && k < 64; k++) em_get_f64(v2, k, &v);
        em_tensor_release(v2);
      }
    }
  }
  printf("  hostile: %d index reads succeeded, %d failed cleanly\n", ok, failed);
  CHECK(ok > 100 && failed > 100);
  for (int k = 0; k < 4; k++) em_tensor_release(idx[k]);
  em_tensor_release(t);
}

int main(void) {
  RUN(view_rule_matches_brute_force);
  RUN(view_rule_seed_examples);
  RUN(copy_kernel_matches_reference_over_layouts);
  RUN(blocked_transpose_copy_is_exact);
  RUN(flip_reverses_and_copies);
  RUN(index_items_make_views);
  RUN(advanced_gather_matches_naive);
  RUN(hostile_index_expressions_fail_cleanly);
  return CTEST_END();
}
