/* test_core.c -- refcounting, storages, dtype conversions, the iterator and
** the copy kernel against a naive reference over generated layouts. */
#include <math.h>
#include <stdlib.h>

#include "ctest.h"
#include "core/core.h"
#include "core/iter.h"

static int deleter_calls;
static void count_deleter(void *ctx, void *data, size_t nbytes) {
  deleter_calls++;
  *(int *)ctx = 1;
  (void)data; (void)nbytes;
}

TEST(foreign_deleter_called_exactly_once) {
  static float buf[6] = {0, 1, 2, 3, 4, 5};
  int released = 0;
  deleter_calls = 0;
  em_storage *s;
  CHECK_OK(em_storage_wrap(buf, sizeof buf, em_cpu(), count_deleter, &released, &s));
  int64_t sizes[2] = {2, 3}, strides[2] = {3, 1};
  em_tensor *a, *b;
  CHECK_OK(em_tensor_new(s, 0, 2, sizes, strides, EM_FLOAT32, &a));
  em_storage_release(s);        /* the tensor keeps the storage alive */
  CHECK(deleter_calls == 0);
  CHECK_OK(em_alias(a, &b));
  em_tensor_release(a);
  CHECK(deleter_calls == 0);
  CHECK(((float *)em_tensor_data(b))[4] == 4.0f);
  em_tensor_release(b);
  CHECK(deleter_calls == 1 && released == 1);
}

TEST(view_outlives_its_base) {
  int64_t sizes[2] = {3, 4};
  em_tensor *base, *view;
  CHECK_OK(em_zeros(2, sizes, EM_FLOAT64, em_cpu(), &base));
  int64_t vs[1] = {3}, vst[1] = {4};
  CHECK_OK(em_as_strided(base, 1, vs, vst, 1, &view));
  em_storage *s = em_tensor_storage(base);
  CHECK(em_storage_refcount(s) == 2);
  em_tensor_release(base);
  CHECK(em_storage_refcount(s) == 1);
  em_scalar v = {EM_SCALAR_FLOAT, 0, 2.5};
  CHECK_OK(em_fill_(view, v));
  double x;
  CHECK_OK(em_get_f64(view, 2, &x));
  CHECK(x == 2.5);
  em_tensor_release(view);
}

TEST(storages_released_when_last_tensor_goes) {
  size_t before = em_memory_live_bytes();
  int64_t sizes[1] = {1000};
  em_tensor *t;
  CHECK_OK(em_empty(1, sizes, EM_FLOAT32, em_cpu(), &t));
  CHECK(em_memory_live_bytes() == before + 4000);
  em_tensor_release(t);
  CHECK(em_memory_live_bytes() == before);
}

TEST(as_strided_cannot_reach_outside_storage) {
  int64_t sizes[1] = {6};
  em_tensor *t, *v = NULL;
  CHECK_OK(em_zeros(1, sizes, EM_INT32, em_cpu(), &t));
  int64_t s2[2] = {2, 3}, st2[2] = {3, 1};
  CHECK_OK(em_as_strided(t, 2, s2, st2, 0, &v));
  em_tensor_release(v);
  CHECK_ERR(em_as_strided(t, 2, s2, st2, 1, &v), "outside the storage");
  int64_t huge[2] = {INT64_MAX / 2, 4}, hst[2] = {1, 1};
  CHECK_ERR(em_as_strided(t, 2, huge, hst, 0, &v), "as_strided");
  int64_t neg[1] = {-1};
  CHECK_ERR(em_empty(1, neg, EM_FLOAT32, em_cpu(), &v), "negative dimension -1");
  int64_t over[2] = {INT64_MAX / 2, 3};
  CHECK_ERR(em_empty(2, over, EM_FLOAT32, em_cpu(), &v), "overflows");
  em_tensor_release(t);
}

TEST(half_and_bfloat16_round_to_nearest_even) {
  CHECK(em_float_to_half(1.0f) == 0x3c00);
  CHECK(em_float_to_half(65504.0f) == 0x7bff);
  CHECK(em_float_to_half(65520.0f) == 0x7c00);  /* ties to even: inf */
  CHECK(em_float_to_half(65519.0f) == 0x7bff);
  CHECK(em_float_to_half(1.0f + 0x1p-11f) == 0x3c00);  /* tie -> even */
  CHECK(em_float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(em_float_to_half(0x1p-24f) == 0x0001);          /* smallest subnormal */
  CHECK(em_float_to_half(0x1p-25f) == 0x0000);          /* tie -> even (0) */
  CHECK(em_half_to_float(0x0001) == 0x1p-24f);
  CHECK(isnan(em_half_to_float(em_float_to_half(NAN))));
  CHECK(em_float_to_bf16(1.0f) == 0x3f80);
  CHECK(em_bf16_to_float(em_float_to_bf16(1.00390625f)) == 1.0f); /* tie -> even */
  CHECK(em_bf16_to_float(em_float_to_bf16(1.01171875f)) == 1.015625f);
  for (uint32_t h = 0; h < 0x7c00; h++)  /* every finite half round-trips */
    if (em_float_to_half(em_half_to_float((em_half)h)) != h) { CHECK(0); break; }
}

TEST(float_to_int_conversions_are_defined) {
  int64_t sizes[1] = {5};
  em_tensor *f, *i8, *i64;
  CHECK_OK(em_empty(1, sizes, EM_FLOAT64, em_cpu(), &f));
  double vals[5] = {NAN, 1e300, -1e300, -2.7, 300.5};
  for (int k = 0; k < 5; k++) {
    em_scalar s = {EM_SCALAR_FLOAT, 0, vals[k]};
    CHECK_OK(em_set_flat(f, k, s));
  }
  CHECK_OK(em_to(f, EM_INT8, em_cpu(), 0, &i8));
  CHECK_OK(em_to(f, EM_INT64, em_cpu(), 0, &i64));
  int8_t *a = em_tensor_data(i8);
  int64_t *b = em_tensor_data(i64);
  CHECK(a[0] == 0 && a[1] == 127 && a[2] == -128 && a[3] == -2 && a[4] == 127);
  CHECK(b[0] == 0 && b[1] == INT64_MAX && b[2] == INT64_MIN && b[3] == -2 && b[4] == 300);
  em_tensor_release(f); em_tensor_release(i8); em_tensor_release(i64);
}

TEST(int_to_int_wraps) {
  int64_t sizes[1] = {2};
  em_tensor *t, *u;
  CHECK_OK(em_empty(1, sizes, EM_INT64, em_cpu(), &t));
  em_scalar a = {EM_SCALAR_INT, -1, 0}, b = {EM_SCALAR_INT, 300, 0};
  CHECK_OK(em_set_flat(t, 0, a));
  CHECK_OK(em_set_flat(t, 1, b));
  CHECK_OK(em_to(t, EM_UINT8, em_cpu(), 0, &u));
  uint8_t *p = em_tensor_data(u);
  CHECK(p[0] == 255 && p[1] == 44);
  em_tensor_release(t); em_tensor_release(u);
}

TEST(iterator_coalesces_contiguous_operands) {
  int64_t sizes[3] = {4, 5, 6};
  em_tensor *a, *b;
  CHECK_OK(em_zeros(3, sizes, EM_FLOAT32, em_cpu(), &a));
  CHECK_OK(em_zeros(3, sizes, EM_FLOAT64, em_cpu(), &b));
  em_iter it;
  const em_tensor *ops[2] = {a, b};
  CHECK_OK(em_iter_build(&it, "test", 2, ops, 3, sizes, false));
  CHECK(it.ndim == 1 && it.shape[0] == 120);
  CHECK(it.strides[0][0] == 4 && it.strides[0][1] == 8);
  /* a transposed operand: the output's order wins, nothing coalesces */
  int64_t ts[2] = {6, 4}, tst[2] = {1, 6}, s2[2] = {6, 4};
  em_tensor *tr, *out;
  CHECK_OK(em_as_strided(a, 2, ts, tst, 0, &tr));
  CHECK_OK(em_zeros(2, s2, EM_FLOAT32, em_cpu(), &out));
  const em_tensor *ops2[2] = {out, tr};
  CHECK_OK(em_iter_build(&it, "test", 2, ops2, 2, s2, false));
  CHECK(it.ndim == 2 && it.shape[0] == 4 && it.strides[0][0] == 4 && it.strides[0][1] == 24);
  em_tensor_release(a); em_tensor_release(b); em_tensor_release(tr); em_tensor_release(out);
}

TEST(broadcast_error_names_shapes_and_dim) {
  int64_t s1[2] = {2, 3}, s2[2] = {4, 3};
  em_tensor *a, *b;
  CHECK_OK(em_zeros(2, s1, EM_FLOAT32, em_cpu(), &a));
  CHECK_OK(em_zeros(2, s2, EM_FLOAT32, em_cpu(), &b));
  const em_tensor *ts[2] = {a, b};
  int nd;
  int64_t shape[EM_MAX_DIMS];
  CHECK_ERR(em_broadcast_shapes("add", 2, ts, &nd, shape),
            "add: shapes [2, 3] and [4, 3] cannot be broadcast");
  CHECK_ERR(em_broadcast_shapes("add", 2, ts, &nd, shape), "dimension 1");
  em_tensor_release(a); em_tensor_release(b);
}

/* Random layouts: copy_ must equal an element-by-element reference. */
static unsigned rng_state = 12345;
static unsigned rnd(unsigned n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 16) % n;
}

TEST(copy_matches_reference_on_generated_layouts) {
  for (int trial = 0; trial < 300; trial++) {
    int nd = 1 + (int)rnd(4);
    int64_t sizes[4], perm[4], base_sizes[4], strides[4];
    for (int i = 0; i < nd; i++) { sizes[i] = 1 + rnd(5); perm[i] = i; }
    for (int i = nd - 1; i > 0; i--) { int j = (int)rnd((unsigned)i + 1); int64_t t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    /* a base with room for steps of 1 or 2 in a permuted order */
    int64_t step[4], acc = 1;
    for (int k = nd - 1; k >= 0; k--) {
      int d = (int)perm[k];
      step[d] = 1 + rnd(2);
      strides[d] = acc * step[d];
      acc *= sizes[d] * step[d];
    }
    base_sizes[0] = acc + 3;
    em_tensor *base, *src, *dst, *ref;
    CHECK_OK(em_empty(1, base_sizes, EM_FLOAT64, em_cpu(), &base));
    for (int64_t k = 0; k < base_sizes[0]; k++) ((double *)em_tensor_data(base))[k] = (double)k;
    int64_t off = rnd(3);
    CHECK_OK(em_as_strided(base, nd, sizes, strides, off, &src));
    em_dtype dts[3] = {EM_FLOAT32, EM_INT32, EM_FLOAT64};
    em_dtype dt = dts[rnd(3)];
    CHECK_OK(em_empty(nd, sizes, dt, em_cpu(), &dst));
    CHECK_OK(em_copy_(dst, src));
    int64_t n = em_tensor_numel(src);
    int bad = 0;
    for (int64_t p = 0; p < n; p++) {
      int64_t rest = p, o = off;
      for (int i = nd - 1; i >= 0; i--) { o += (rest % sizes[i]) * strides[i]; rest /= sizes[i]; }
      double got;
      em_get_f64(dst, p, &got);
      if (got != (double)o) bad = 1;
    }
    CHECK(!bad);
    (void)ref;
    em_tensor_release(base); em_tensor_release(src); em_tensor_release(dst);
  }
}

TEST(copy_from_overlapping_source_reads_a_snapshot) {
  int64_t sizes[1] = {5};
  em_tensor *t, *a, *b;
  CHECK_OK(em_empty(1, sizes, EM_INT64, em_cpu(), &t));
  for (int k = 0; k < 5; k++) ((int64_t *)em_tensor_data(t))[k] = k;
  int64_t s4[1] = {4}, st[1] = {1};
  CHECK_OK(em_as_strided(t, 1, s4, st, 1, &a)); /* t[2..5] */
  CHECK_OK(em_as_strided(t, 1, s4, st, 0, &b)); /* t[1..4] */
  CHECK_OK(em_copy_(a, b));
  int64_t *p = em_tensor_data(t);
  CHECK(p[0] == 0 && p[1] == 0 && p[2] == 1 && p[3] == 2 && p[4] == 3);
  em_tensor_release(t); em_tensor_release(a); em_tensor_release(b);
}

TEST(writing_into_an_expanded_tensor_is_an_error) {
  int64_t sizes[1] = {3};
  em_tensor *t, *e;
  CHECK_OK(em_zeros(1, sizes, EM_FLOAT32, em_cpu(), &t));
  int64_t es[2] = {4, 3}, est[2] = {0, 1};
  CHECK_OK(em_as_strided(t, 2, es, est, 0, &e));
  em_tensor *src;
  CHECK_OK(em_zeros(2, es, EM_FLOAT32, em_cpu(), &src));
  CHECK_ERR(em_copy_(e, src), "single memory location");
  /* a value fill writes the same bytes to every alias: allowed (PyTorch) */
  em_scalar one = {EM_SCALAR_INT, 1, 0};
  CHECK_OK(em_fill_(e, one));
  double v = 0;
  CHECK_OK(em_get_f64(t, 2, &v));
  CHECK(v == 1.0);
  em_tensor_release(src);
  em_tensor_release(t); em_tensor_release(e);
}

TEST(empty_tensor_with_huge_sizes_has_defined_strides) {
  int64_t sizes[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
  em_tensor *t = NULL;
  CHECK_OK(em_empty(3, sizes, EM_FLOAT32, em_cpu(), &t));
  CHECK(t && em_tensor_numel(t) == 0);
  if (t) CHECK(em_tensor_strides(t)[0] == INT64_MAX);
  em_tensor_release(t);
}

int main(void) {
  RUN(empty_tensor_with_huge_sizes_has_defined_strides);
  RUN(foreign_deleter_called_exactly_once);
  RUN(view_outlives_its_base);
  RUN(storages_released_when_last_tensor_goes);
  RUN(as_strided_cannot_reach_outside_storage);
  RUN(half_and_bfloat16_round_to_nearest_even);
  RUN(float_to_int_conversions_are_defined);
  RUN(int_to_int_wraps);
  RUN(iterator_coalesces_contiguous_operands);
  RUN(broadcast_error_names_shapes_and_dim);
  RUN(copy_matches_reference_on_generated_layouts);
  RUN(copy_from_overlapping_source_reads_a_snapshot);
  RUN(writing_into_an_expanded_tensor_is_an_error);
  return CTEST_END();
}
