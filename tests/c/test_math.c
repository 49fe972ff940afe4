/* test_math.c -- engine invariants of the math area: the promotion table's
** algebra, output layouts, out/in-place rules and overlap, devices, thread
** independence, and each kernel against a naive double-precision reference
** over strided and broadcast layouts. */
#include <math.h>
#include <stdlib.h>

#include "ctest.h"
#include "ctest_ops.h"
#include "core/core.h"
#include "core/iter.h"

static em_tensor *arange_f32(int ndim, const int64_t *sizes) {
  em_tensor *t;
  if (em_empty(ndim, sizes, EM_FLOAT32, em_cpu(), &t) != EM_OK) return NULL;
  float *p = em_tensor_data(t);
  for (int64_t i = 0; i < em_tensor_numel(t); i++) p[i] = (float)i;
  return t;
}

TEST(promote_types_is_symmetric_and_bool_is_neutral) {
  for (int a = 0; a < EM_NUM_DTYPES; a++) {
    CHECK(em_promote_types((em_dtype)a, EM_BOOL) == (em_dtype)a);
    CHECK(em_promote_types((em_dtype)a, (em_dtype)a) == (em_dtype)a);
    for (int b = 0; b < EM_NUM_DTYPES; b++) {
      em_dtype p = em_promote_types((em_dtype)a, (em_dtype)b);
      CHECK(p == em_promote_types((em_dtype)b, (em_dtype)a));
      CHECK(em_can_cast((em_dtype)a, p) && em_can_cast((em_dtype)b, p));
    }
  }
  CHECK(em_promote_types(EM_UINT8, EM_INT8) == EM_INT16);
  CHECK(em_promote_types(EM_FLOAT16, EM_BFLOAT16) == EM_FLOAT32);
  CHECK(em_promote_types(EM_INT64, EM_FLOAT16) == EM_FLOAT16);
  CHECK(!em_can_cast(EM_FLOAT32, EM_INT64) && !em_can_cast(EM_INT8, EM_BOOL));
}

TEST(result_type_by_category) {
  int64_t s2[1] = {2};
  em_tensor *i8, *f64_0d;
  CHECK_OK(em_zeros(1, s2, EM_INT8, em_cpu(), &i8));
  CHECK_OK(em_zeros(0, NULL, EM_FLOAT64, em_cpu(), &f64_0d));
  em_operand a[2] = {T_(i8), S_int(1000)};
  CHECK(em_result_type(2, a, EM_FLOAT32) == EM_INT8);
  em_operand b[2] = {T_(i8), S_float(2.5)};
  CHECK(em_result_type(2, b, EM_FLOAT32) == EM_FLOAT32);
  CHECK(em_result_type(2, b, EM_FLOAT64) == EM_FLOAT64);
  em_operand c[2] = {T_(i8), T_(f64_0d)};
  CHECK(em_result_type(2, c, EM_FLOAT32) == EM_FLOAT64);
  em_operand d[1] = {S_int(3)};
  CHECK(em_result_type(1, d, EM_FLOAT32) == EM_INT64);
  em_tensor_release(i8);
  em_tensor_release(f64_0d);
}

/* A transposed input gives a transposed-layout output, as TensorIterator. */
TEST(output_layout_follows_the_inputs) {
  int64_t s32[2] = {3, 2}, s23[2] = {2, 3};
  em_tensor *base = arange_f32(2, s32), *x, *c, *r;
  int64_t tst[2] = {1, 2};
  CHECK_OK(em_as_strided(base, 2, s23, tst, 0, &x)); /* x = base^T */
  CHECK_OK(em_unary(EM_OP_EXP, x, &r));
  CHECK(em_tensor_strides(r)[0] == 1 && em_tensor_strides(r)[1] == 2);
  em_tensor_release(r);
  CHECK_OK(em_zeros(2, s23, EM_FLOAT32, em_cpu(), &c));
  CHECK_OK(em_binary(EM_OP_ADD, x, c, &r)); /* the first input decides */
  CHECK(em_tensor_strides(r)[0] == 1 && em_tensor_strides(r)[1] == 2);
  em_tensor_release(r);
  CHECK_OK(em_binary(EM_OP_ADD, c, x, &r));
  CHECK(em_tensor_strides(r)[0] == 3 && em_tensor_strides(r)[1] == 1);
  /* values are right whatever the layout: r[i][j] = x[i][j] = base[j][i] */
  double v;
  CHECK_OK(em_get_f64(r, 1, &v)); /* r[0][1] = base[1][0] = 2 */
  CHECK(v == 2.0);
  em_tensor_release(r);
  em_tensor_release(c);
  em_tensor_release(x);
  em_tensor_release(base);
}

TEST(writing_into_an_expanded_tensor_is_an_error) {
  int64_t s3[1] = {3}, s23[2] = {2, 3}, st[2] = {0, 1};
  em_tensor *row = arange_f32(1, s3), *ex;
  CHECK_OK(em_as_strided(row, 2, s23, st, 0, &ex));
  em_operand in[2] = {T_(ex), S_int(1)};
  CHECK_ERR(em_elementwise(EM_OP_ADD, 2, in, NULL, ex, NULL),
            "more than one element of the written-to tensor refers to a single memory location");
  float *p = em_tensor_data(row);
  CHECK(p[0] == 0 && p[1] == 1 && p[2] == 2);
  em_tensor_release(ex);
  em_tensor_release(row);
}

/* out = in * 10 where out is in shifted by one element: the input is read
** from a snapshot, so the result is as if every input were read first. */
TEST(partially_overlapping_input_reads_a_snapshot) {
  int64_t s6[1] = {6}, s5[1] = {5}, st[1] = {1};
  em_tensor *a = arange_f32(1, s6), *x, *y;
  CHECK_OK(em_as_strided(a, 1, s5, st, 0, &x));
  CHECK_OK(em_as_strided(a, 1, s5, st, 1, &y));
  em_operand in[2] = {T_(x), S_int(10)};
  CHECK_OK(em_elementwise(EM_OP_MUL, 2, in, NULL, y, NULL));
  float *p = em_tensor_data(a);
  CHECK(p[0] == 0 && p[1] == 0 && p[2] == 10 && p[3] == 20 && p[4] == 30 && p[5] == 40);
  em_tensor_release(x);
  em_tensor_release(y);
  em_tensor_release(a);
}

TEST(inplace_bumps_version_and_checks_cast) {
  int64_t s2[1] = {2};
  em_tensor *a;
  CHECK_OK(em_zeros(1, s2, EM_INT64, em_cpu(), &a));
  uint64_t v0 = em_storage_version(em_tensor_storage(a));
  em_operand ok[2] = {T_(a), S_int(3)};
  CHECK_OK(em_elementwise(EM_OP_ADD, 2, ok, NULL, a, NULL));
  CHECK(em_storage_version(em_tensor_storage(a)) > v0);
  CHECK(((int64_t *)em_tensor_data(a))[1] == 3);
  em_operand bad[2] = {T_(a), S_float(0.5)};
  CHECK_ERR(em_elementwise(EM_OP_ADD, 2, bad, NULL, a, NULL),
            "result type Float can't be cast to the desired output type Long");
  em_tensor_release(a);
}

TEST(empty_out_is_resized_other_views_keep_old_storage) {
  int64_t s0[1] = {0}, s23[2] = {2, 3};
  em_tensor *out, *alias, *x = arange_f32(2, s23), *r;
  CHECK_OK(em_empty(1, s0, EM_FLOAT32, em_cpu(), &out));
  CHECK_OK(em_alias(out, &alias));
  em_operand in[2] = {T_(x), S_int(1)};
  CHECK_OK(em_elementwise(EM_OP_ADD, 2, in, NULL, out, &r));
  CHECK(r == out);
  CHECK(em_tensor_ndim(out) == 2 && em_tensor_sizes(out)[1] == 3);
  CHECK(((float *)em_tensor_data(out))[5] == 6.0f);
  CHECK(em_tensor_numel(alias) == 0);
  em_tensor_release(r);
  em_tensor_release(out);
  em_tensor_release(alias);
  em_tensor_release(x);
}

TEST(mixed_devices_are_an_error) {
  static float buf[2];
  em_device cuda = {EM_CUDA, 0};
  em_storage *s;
  em_tensor *g, *c, *r = NULL;
  int64_t s2[1] = {2}, st[1] = {1};
  CHECK_OK(em_storage_wrap(buf, sizeof buf, cuda, NULL, NULL, &s));
  CHECK_OK(em_tensor_new(s, 0, 1, s2, st, EM_FLOAT32, &g));
  em_storage_release(s);
  CHECK_OK(em_zeros(1, s2, EM_FLOAT32, em_cpu(), &c));
  CHECK_ERR(em_binary(EM_OP_ADD, c, g, &r),
            "add: expected all tensors to be on the same device, but found at least two "
            "devices, cpu and cuda:0");
  CHECK(r == NULL);
  em_tensor_release(g);
  em_tensor_release(c);
}

/* Same bits whatever the thread count, on an iteration the parallel
** driver cuts into ranges (non-contiguous, broadcast operand). */
TEST(thread_count_does_not_change_results) {
  int64_t sz[2] = {1000, 301}, row[1] = {301};
  em_tensor *base = arange_f32(2, sz), *b = arange_f32(1, row), *x, *r1, *r4;
  int64_t vs[2] = {1000, 300}, vst[2] = {301, 1};
  CHECK_OK(em_as_strided(base, 2, vs, vst, 1, &x)); /* not contiguous */
  em_tensor *bb;
  int64_t bs[1] = {300}, bst[1] = {1};
  CHECK_OK(em_as_strided(b, 1, bs, bst, 0, &bb));
  int old = em_get_num_threads();
  CHECK_OK(em_set_num_threads(1));
  CHECK_OK(em_binary(EM_OP_ATAN2, x, bb, &r1));
  CHECK_OK(em_set_num_threads(4));
  CHECK_OK(em_binary(EM_OP_ATAN2, x, bb, &r4));
  CHECK_OK(em_set_num_threads(old));
  CHECK(memcmp(em_tensor_data(r1), em_tensor_data(r4), 1000 * 300 * sizeof(float)) == 0);
  /* and against the naive loop */
  const float *xp = em_tensor_data(base), *bp = em_tensor_data(b), *rp = em_tensor_data(r1);
  int bad = 0;
  for (int i = 0; i < 1000; i++)
    for (int j = 0; j < 300; j++)
      bad += rp[i * 300 + j] != atan2f(xp[i * 301 + j + 1], bp[j]);
  CHECK(bad == 0);
  em_tensor_release(r1);
  em_tensor_release(r4);
  em_tensor_release(x);
  em_tensor_release(bb);
  em_tensor_release(b);
  em_tensor_release(base);
  CHECK_ERR(em_set_num_threads(0), "positive");
}

/* Every binary kernel path (both dense, scalar on either side, strided)
** against a double reference, float64 so the comparison is exact. */
TEST(binary_paths_match_reference) {
  int64_t s[2] = {7, 5};
  em_tensor *a, *b;
  CHECK_OK(em_empty(2, s, EM_FLOAT64, em_cpu(), &a));
  CHECK_OK(em_empty(2, s, EM_FLOAT64, em_cpu(), &b));
  double *ap = em_tensor_data(a), *bp = em_tensor_data(b);
  for (int i = 0; i < 35; i++) { ap[i] = i * 0.37 - 5; bp[i] = 2 + (i % 7) * 0.5; }
  em_tensor *bt; /* b's transpose as a (5,7) view, then a (7,5) layout of a^T... */
  int64_t s57[2] = {5, 7}, st57[2] = {1, 5};
  CHECK_OK(em_as_strided(a, 2, s57, st57, 0, &bt));
  em_tensor *row, *r;
  int64_t s1[2] = {1, 7}, st1[2] = {0, 1};
  CHECK_OK(em_as_strided(b, 2, s1, st1, 0, &row));
  CHECK_OK(em_binary(EM_OP_MUL, bt, row, &r)); /* strided x broadcast row */
  int bad = 0;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 7; j++) {
      double want = ap[j * 5 + i] * bp[j];
      double got;
      em_get_f64(r, i * 7 + j, &got);
      bad += got != want;
    }
  CHECK(bad == 0);
  em_tensor_release(r);
  em_operand sa[2] = {S_float(1.5), T_(a)};
  CHECK_OK(em_elementwise(EM_OP_SUB, 2, sa, NULL, NULL, &r)); /* scalar first */
  for (int i = 0; i < 35; i++) bad += ((double *)em_tensor_data(r))[i] != 1.5 - ap[i];
  CHECK(bad == 0);
  em_tensor_release(r);
  em_tensor_release(row);
  em_tensor_release(bt);
  em_tensor_release(a);
  em_tensor_release(b);
}

TEST(integer_division_by_zero_writes_nothing) {
  int64_t s3[1] = {3};
  em_tensor *a, *z;
  CHECK_OK(em_full(1, s3, (em_scalar){EM_SCALAR_INT, 7, 0}, EM_INT32, em_cpu(), &a));
  CHECK_OK(em_zeros(1, s3, EM_INT32, em_cpu(), &z));
  ((int32_t *)em_tensor_data(z))[0] = 2;
  em_operand in[2] = {T_(a), T_(z)};
  em_ew_opts o = em_ew_defaults();
  o.rounding = EM_ROUND_FLOOR;
  CHECK_ERR(em_elementwise(EM_OP_DIV, 2, in, &o, a, NULL), "integer division by zero");
  CHECK(((int32_t *)em_tensor_data(a))[0] == 7);
  /* INT_MIN // -1 wraps instead of trapping */
  ((int32_t *)em_tensor_data(a))[0] = INT32_MIN;
  ((int32_t *)em_tensor_data(z))[0] = -1;
  ((int32_t *)em_tensor_data(z))[1] = -1;
  ((int32_t *)em_tensor_data(z))[2] = -1;
  CHECK_OK(em_elementwise(EM_OP_DIV, 2, in, &o, a, NULL));
  CHECK(((int32_t *)em_tensor_data(a))[0] == INT32_MIN);
  CHECK(((int32_t *)em_tensor_data(a))[1] == -7);
  em_tensor_release(a);
  em_tensor_release(z);
}

TEST(every_op_has_a_name_and_arity) {
  for (int op = 0; op < EM_OP_COUNT; op++) {
    CHECK(strlen(em_ew_op_name((em_ew_op)op)) > 0);
    CHECK(em_ew_op_arity((em_ew_op)op) >= 1 && em_ew_op_arity((em_ew_op)op) <= 3);
  }
  CHECK_ERR(em_elementwise(EM_OP_ADD, 1, NULL, NULL, NULL, NULL), "expected 2 operands");
}


/* The loops' inlined half/bfloat16 conversions agree bit for bit with
** dtype.c's: every half/bf16 value times 1 comes back unchanged (NaN stays
** NaN), and every value plus a few addends rounds as em_float_to_half /
** em_float_to_bf16 round the float sum. */
static int half_types_match(em_dtype dt) {
  int64_t n = 65536, one = 1;
  em_tensor *x, *y, *r;
  int bad = 0;
  if (em_empty(1, &n, dt, em_cpu(), &x) != EM_OK) return 0;
  uint16_t *xp = em_tensor_data(x);
  for (int64_t i = 0; i < n; i++) xp[i] = (uint16_t)i;
  float (*ld)(uint16_t) = dt == EM_FLOAT16 ? em_half_to_float : em_bf16_to_float;
  uint16_t (*st)(float) = dt == EM_FLOAT16 ? em_float_to_half : em_float_to_bf16;
  const float addends[4] = {1.0f, 0.333333f, -1e-3f, 3e4f};
  for (int k = -1; k < 4; k++) {
    em_full(1, &one, (em_scalar){EM_SCALAR_FLOAT, 0, k < 0 ? 1.0 : addends[k]}, dt,
            em_cpu(), &y);
    if (em_binary(k < 0 ? EM_OP_MUL : EM_OP_ADD, x, y, &r) != EM_OK) return 0;
    const uint16_t *rp = em_tensor_data(r);
    float yv = ld(*(uint16_t *)em_tensor_data(y));
    for (int64_t i = 0; i < n; i++) {
      float xv = ld((uint16_t)i);
      if (xv != xv) { bad += ld(rp[i]) == ld(rp[i]); continue; }
      uint16_t want = k < 0 ? (uint16_t)i : st(xv + yv);
      bad += rp[i] != want;
    }
    em_tensor_release(r);
    em_tensor_release(y);
  }
  em_tensor_release(x);
  return bad == 0;
}

TEST(inlined_half_conversions_match_dtype_c) {
  CHECK(half_types_match(EM_FLOAT16));
  CHECK(half_types_match(EM_BFLOAT16));
}

/* The per-call path of em_elementwise (two small contiguous float tensors
** of one shape): same values and the same result layout as the general
** path's em_iter_output_strides, alpha honoured, and the cases it must not
** take (rounding, autograd, >= 16,384 elements) still right. */
TEST(small_binary_path_matches_the_general_path) {
  static const int64_t shapes[][4] = {{0}, {1, 1}, {1, 3}, {2, 1, 1}, {3, 2, 1, 3},
                                      {1, 0}, {3, 2, 0, 3}, {3, 1, 4, 1}, {2, 128, 127},
                                      {2, 128, 128}};
  static const em_ew_op ops[] = {EM_OP_ADD, EM_OP_SUB, EM_OP_MUL, EM_OP_DIV};
  static const em_dtype dts[] = {EM_FLOAT32, EM_FLOAT64};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int di = 0; di < 2; di++)
      for (int oi = 0; oi < 4; oi++) {
        int nd = (int)shapes[si][0];
        const int64_t *sz = &shapes[si][1];
        em_tensor *a = NULL, *b = NULL, *r = NULL;
        CHECK_OK(em_empty(nd, sz, dts[di], em_cpu(), &a));
        CHECK_OK(em_empty(nd, sz, dts[di], em_cpu(), &b));
        int64_t n = em_tensor_numel(a);
        for (int64_t i = 0; i < n; i++) {
          double x = 0.25 * (double)(i % 97) - 3.0, y = 1.5 + (double)(i % 13);
          if (dts[di] == EM_FLOAT32) {
            ((float *)em_tensor_data(a))[i] = (float)x;
            ((float *)em_tensor_data(b))[i] = (float)y;
          } else {
            ((double *)em_tensor_data(a))[i] = x;
            ((double *)em_tensor_data(b))[i] = y;
          }
        }
        CHECK_OK(em_binary(ops[oi], a, b, &r));
        if (!r) continue;
        const em_tensor *io[2] = {a, b};
        int64_t want[EM_MAX_DIMS];
        em_iter_output_strides(2, io, nd, sz, want);
        CHECK(em_tensor_ndim(r) == nd && em_tensor_dtype(r) == dts[di]);
        for (int d = 0; d < nd; d++)
          CHECK(em_tensor_sizes(r)[d] == sz[d] && em_tensor_strides(r)[d] == want[d]);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
          if (dts[di] == EM_FLOAT32) {
            float x = ((float *)em_tensor_data(a))[i], y = ((float *)em_tensor_data(b))[i];
            float e = ops[oi] == EM_OP_ADD ? x + y : ops[oi] == EM_OP_SUB ? x - y
                    : ops[oi] == EM_OP_MUL ? x * y : x / y;
            bad += ((float *)em_tensor_data(r))[i] != e;
          } else {
            double x = ((double *)em_tensor_data(a))[i], y = ((double *)em_tensor_data(b))[i];
            double e = ops[oi] == EM_OP_ADD ? x + y : ops[oi] == EM_OP_SUB ? x - y
                     : ops[oi] == EM_OP_MUL ? x * y : x / y;
            bad += ((double *)em_tensor_data(r))[i] != e;
          }
        }
        CHECK(bad == 0);
        em_tensor_release(r);
        /* alpha (int and float), and rounding, which the path leaves alone */
        if (ops[oi] == EM_OP_ADD || ops[oi] == EM_OP_SUB || ops[oi] == EM_OP_DIV) {
          em_ew_opts o = em_ew_defaults();
          if (ops[oi] == EM_OP_DIV) o.rounding = EM_ROUND_FLOOR;
          else { o.alpha.kind = EM_SCALAR_FLOAT; o.alpha.f = 0.5; }
          em_operand in[2] = {T_(a), T_(b)};
          CHECK_OK(em_elementwise(ops[oi], 2, in, &o, NULL, &r));
          for (int64_t i = 0; r && i < n && i < 50; i++) {
            double x = dts[di] == EM_FLOAT32 ? ((float *)em_tensor_data(a))[i] : ((double *)em_tensor_data(a))[i];
            double y = dts[di] == EM_FLOAT32 ? ((float *)em_tensor_data(b))[i] : ((double *)em_tensor_data(b))[i];
            double got = dts[di] == EM_FLOAT32 ? ((float *)em_tensor_data(r))[i] : ((double *)em_tensor_data(r))[i];
            double e = ops[oi] == EM_OP_DIV ? floor(x / y) : ops[oi] == EM_OP_ADD ? x + 0.5 * y : x - 0.5 * y;
            CHECK(fabs(got - e) <= 1e-6 * (1 + fabs(e)));
          }
          em_tensor_release(r);
        }
        /* autograd: an operand that requires grad gets a recorded result */
        if (n > 0 && n < 100) {
          CHECK_OK(em_tensor_requires_grad_(a, 1));
          CHECK_OK(em_binary(ops[oi], a, b, &r));
          CHECK(r && em_tensor_requires_grad(r) && !em_tensor_is_leaf(r));
          em_tensor_release(r);
        }
        em_tensor_release(a);
        em_tensor_release(b);
      }
}

int main(void) {
  RUN(small_binary_path_matches_the_general_path);
  RUN(promote_types_is_symmetric_and_bool_is_neutral);
  RUN(result_type_by_category);
  RUN(output_layout_follows_the_inputs);
  RUN(writing_into_an_expanded_tensor_is_an_error);
  RUN(partially_overlapping_input_reads_a_snapshot);
  RUN(inplace_bumps_version_and_checks_cast);
  RUN(empty_out_is_resized_other_views_keep_old_storage);
  RUN(mixed_devices_are_an_error);
  RUN(thread_count_does_not_change_results);
  RUN(binary_paths_match_reference);
  RUN(integer_division_by_zero_writes_nothing);
  RUN(every_op_has_a_name_and_arity);
  RUN(inlined_half_conversions_match_dtype_c);
  return CTEST_END();
}
