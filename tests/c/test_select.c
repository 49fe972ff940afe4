/* test_select.c -- engine invariants of the index family and assembling:
** every per-dtype kernel against a naive reference on strided layouts,
** bounds checked before any write, no leaks on failure, views sharing
** storage, snapshots of overlapping sources, PyTorch's promotion table. */
#include <math.h>
#include <stdlib.h>

#include "ctest.h"
#include "core/core.h"

static const em_dtype ALL[] = {EM_BOOL, EM_UINT8, EM_INT8, EM_INT16, EM_INT32,
                               EM_INT64, EM_FLOAT16, EM_BFLOAT16, EM_FLOAT32,
                               EM_FLOAT64};
enum { NALL = sizeof ALL / sizeof ALL[0] };

/* A [rows, cols] tensor of dtype dt holding small distinct-ish values,
** returned transposed (a non-contiguous [cols, rows] view). */
static em_tensor *transposed(int64_t rows, int64_t cols, em_dtype dt) {
  int64_t sz[2] = {rows, cols};
  em_tensor *base, *v;
  if (em_empty(2, sz, dt, em_cpu(), &base) != EM_OK) return NULL;
  for (int64_t i = 0; i < rows * cols; i++) {
    em_scalar s = {EM_SCALAR_INT, (i * 7) % 11 - 3, 0};
    em_set_flat(base, i, s);
  }
  int64_t vs[2] = {cols, rows}, vst[2] = {1, cols};
  if (em_as_strided(base, 2, vs, vst, 0, &v) != EM_OK) v = NULL;
  em_tensor_release(base);
  return v;
}

static em_tensor *index_of(int n, const int64_t *vals, em_dtype dt) {
  int64_t sz[1] = {n};
  em_tensor *t;
  if (em_empty(1, sz, dt, em_cpu(), &t) != EM_OK) return NULL;
  for (int i = 0; i < n; i++) {
    em_scalar s = {EM_SCALAR_INT, vals[i], 0};
    em_set_flat(t, i, s);
  }
  return t;
}

static double at2(const em_tensor *t, int64_t i, int64_t j) {
  double v;
  em_get_f64(t, i * em_tensor_sizes(t)[1] + j, &v);
  return v;
}

TEST(promotion_matches_pytorch_table) {
  /* torch.promote_types over ember's dtype order, from PyTorch 1.13 */
  static const em_dtype ref[10][10] = {
    {EM_BOOL, EM_UINT8, EM_INT8, EM_INT16, EM_INT32, EM_INT64, EM_FLOAT16, EM_BFLOAT16, EM_FLOAT32, EM_FLOAT64},
    {EM_UINT8, EM_UINT8, EM_INT16, EM_INT16, EM_INT32, EM_INT64, EM_FLOAT16, EM_BFLOAT16, EM_FLOAT32, EM_FLOAT64},
    {EM_INT8, EM_INT16, EM_INT8, EM_INT16, EM_INT32, EM_INT64, EM_FLOAT16, EM_BFLOAT16, EM_FLOAT32, EM_FLOAT64},
    {EM_INT16, EM_INT16, EM_INT16, EM_INT16, EM_INT32, EM_INT64, EM_FLOAT16, EM_BFLOAT16, EM_FLOAT32, EM_FLOAT64},
    {EM_INT32, EM_INT32, EM_INT32, EM_INT32, EM_INT32, EM_INT64, EM_FLOAT16, EM_BFLOAT16, EM_FLOAT32, EM_FLOAT64},
    {EM_INT64, EM_INT64, EM_INT64, EM_INT64, EM_INT64, EM_INT64, EM_FLOAT16, EM_BFLOAT16, EM_FLOAT32, EM_FLOAT64},
    {EM_FLOAT16, EM_FLOAT16, EM_FLOAT16, EM_FLOAT16, EM_FLOAT16, EM_FLOAT16, EM_FLOAT16, EM_FLOAT32, EM_FLOAT32, EM_FLOAT64},
    {EM_BFLOAT16, EM_BFLOAT16, EM_BFLOAT16, EM_BFLOAT16, EM_BFLOAT16, EM_BFLOAT16, EM_FLOAT32, EM_BFLOAT16, EM_FLOAT32, EM_FLOAT64},
    {EM_FLOAT32, EM_FLOAT32, EM_FLOAT32, EM_FLOAT32, EM_FLOAT32, EM_FLOAT32, EM_FLOAT32, EM_FLOAT32, EM_FLOAT32, EM_FLOAT64},
    {EM_FLOAT64, EM_FLOAT64, EM_FLOAT64, EM_FLOAT64, EM_FLOAT64, EM_FLOAT64, EM_FLOAT64, EM_FLOAT64, EM_FLOAT64, EM_FLOAT64},
  };
  for (int a = 0; a < 10; a++)
    for (int b = 0; b < 10; b++) CHECK(em_promote_types(ALL[a], ALL[b]) == ref[a][b]);
}

TEST(index_select_every_dtype_on_a_transposed_view) {
  int64_t pos[5] = {3, -1, 1, 1, 2};  /* 1-based, -1 the last (4th) */
  int64_t zb[5] = {2, 3, 0, 0, 1};    /* the same, 0-based */
  for (int k = 0; k < NALL; k++) {
    for (int it = 0; it < 2; it++) {
      em_tensor *t = transposed(3, 4, ALL[k]);   /* [4, 3] view */
      em_tensor *idx = index_of(5, pos, it ? EM_INT32 : EM_INT64), *out = NULL;
      CHECK_OK(em_index_select(t, 1, idx, &out));
      CHECK(out && em_tensor_sizes(out)[0] == 5 && em_tensor_sizes(out)[1] == 3);
      CHECK(out && em_tensor_dtype(out) == ALL[k]);
      for (int i = 0; out && i < 5; i++)
        for (int j = 0; j < 3; j++) CHECK(at2(out, i, j) == at2(t, zb[i], j));
      em_tensor_release(out);
      em_tensor_release(idx);
      em_tensor_release(t);
    }
  }
}

TEST(scatter_then_gather_round_trips_every_dtype) {
  int64_t perm[4] = {4, 2, 1, 3};
  for (int k = 0; k < NALL; k++) {
    em_tensor *src = transposed(1, 4, ALL[k]);   /* [4, 1] */
    int64_t isz[2] = {4, 1};
    em_tensor *idx1 = index_of(4, perm, EM_INT64), *idx, *dst, *back = NULL;
    em_as_strided(idx1, 2, isz, (int64_t[]){1, 1}, 0, &idx);
    em_zeros(2, isz, ALL[k], em_cpu(), &dst);
    em_scalar none = {EM_SCALAR_INT, 0, 0};
    CHECK_OK(em_scatter_(dst, 1, idx, src, none, EM_SCATTER_NONE));
    for (int i = 0; i < 4; i++) CHECK(at2(dst, perm[i] - 1, 0) == at2(src, i, 0));
    CHECK_OK(em_gather(dst, 1, idx, &back));
    for (int i = 0; back && i < 4; i++) CHECK(at2(back, i, 0) == at2(src, i, 0));
    em_tensor_release(back);
    em_tensor_release(dst);
    em_tensor_release(idx);
    em_tensor_release(idx1);
    em_tensor_release(src);
  }
}

TEST(integer_accumulation_wraps_like_pytorch) {
  int64_t sz[1] = {1}, pos[3] = {1, 1, 1};
  em_tensor *t, *src, *idx = index_of(3, pos, EM_INT64);
  em_scalar v100 = {EM_SCALAR_INT, 100, 0};
  em_zeros(1, sz, EM_INT8, em_cpu(), &t);
  int64_t ssz[1] = {3};
  em_full(1, ssz, v100, EM_INT8, em_cpu(), &src);
  CHECK_OK(em_index_add_(t, 1, idx, src, (em_scalar){EM_SCALAR_INT, 1, 0}));
  double v;
  em_get_f64(t, 0, &v);
  CHECK(v == 44);  /* 300 mod 256 = 44 */
  em_tensor_release(t);
  em_tensor_release(src);
  em_tensor_release(idx);
}

TEST(failed_writes_change_nothing_and_leak_nothing) {
  size_t before = em_memory_live_bytes();
  int64_t sz[1] = {4}, good[2] = {1, 2}, bad[2] = {2, 5};
  em_tensor *t, *src, *gi = index_of(2, good, EM_INT64), *bi = index_of(2, bad, EM_INT64);
  em_scalar seven = {EM_SCALAR_INT, 7, 0}, one = {EM_SCALAR_INT, 1, 0};
  em_zeros(1, sz, EM_FLOAT32, em_cpu(), &t);
  int64_t ssz[1] = {2};
  em_full(1, ssz, seven, EM_FLOAT32, em_cpu(), &src);
  CHECK_ERR(em_index_copy_(t, 1, bi, src), "index 5 is out of bounds for dimension 1 with size 4");
  CHECK_ERR(em_index_add_(t, 1, bi, src, one), "index_add_: index 5");
  CHECK_ERR(em_index_fill_(t, 1, bi, seven), "index_fill_: index 5");
  CHECK_ERR(em_put_(t, bi, src, 1), "put_: index 5 is out of bounds for a tensor of 4 elements");
  CHECK_ERR(em_scatter_(t, 1, bi, src, seven, EM_SCATTER_NONE), "scatter_: index 5");
  CHECK_ERR(em_scatter_reduce_(t, 1, bi, src, EM_SCATTER_MEAN, 0), "scatter_reduce: index 5");
  for (int i = 0; i < 4; i++) {
    double v;
    em_get_f64(t, i, &v);
    CHECK(v == 0);
  }
  em_tensor *fi;
  em_to(gi, EM_FLOAT32, em_cpu(), 1, &fi);
  em_tensor *out = NULL;
  CHECK_ERR(em_index_select(t, 1, fi, &out), "expected an int64 or int32 index tensor, got float32");
  CHECK(out == NULL);
  em_tensor_release(fi);
  em_tensor_release(t);
  em_tensor_release(src);
  em_tensor_release(gi);
  em_tensor_release(bi);
  CHECK(em_memory_live_bytes() == before);
}

TEST(writing_into_an_expanded_tensor_is_refused) {
  int64_t sz[1] = {1}, pos[1] = {1};
  em_tensor *base, *wide, *idx = index_of(1, pos, EM_INT64), *mask;
  em_zeros(1, sz, EM_FLOAT32, em_cpu(), &base);
  int64_t wsz[2] = {3, 1}, wst[2] = {0, 1};
  em_as_strided(base, 2, wsz, wst, 0, &wide);   /* 3 rows, one memory location */
  em_full(2, wsz, (em_scalar){EM_SCALAR_BOOL, 1, 0}, EM_BOOL, em_cpu(), &mask);
  em_tensor *src;
  em_zeros(2, wsz, EM_FLOAT32, em_cpu(), &src);
  CHECK_ERR(em_masked_scatter_(wide, mask, src), "more than one element of the written-to tensor");
  CHECK_ERR(em_index_copy_(wide, 2, idx, src), "more than one element");
  /* value fills write the same bytes to every alias: allowed (PyTorch) */
  CHECK_OK(em_masked_fill_(wide, mask, (em_scalar){EM_SCALAR_INT, 1, 0}));
  CHECK_OK(em_index_fill_(wide, 2, idx, (em_scalar){EM_SCALAR_INT, 2, 0}));
  double v = 0;
  CHECK_OK(em_get_f64(base, 0, &v));
  CHECK(v == 2.0);
  em_tensor_release(src);
  em_tensor_release(mask);
  em_tensor_release(wide);
  em_tensor_release(base);
  em_tensor_release(idx);
}

TEST(overlapping_source_reads_a_snapshot) {
  /* t = [0, 1, 2, 3]; t.index_copy_(1, [2, 3, 4], t[1:3]) must read the
  ** source before writing: [0, 0, 1, 2] */
  int64_t sz[1] = {4}, pos[3] = {2, 3, 4};
  em_tensor *t, *src, *idx = index_of(3, pos, EM_INT64);
  em_empty(1, sz, EM_INT64, em_cpu(), &t);
  for (int i = 0; i < 4; i++) em_set_flat(t, i, (em_scalar){EM_SCALAR_INT, i, 0});
  int64_t ssz[1] = {3}, sst[1] = {1};
  em_as_strided(t, 1, ssz, sst, 0, &src);
  CHECK_OK(em_index_copy_(t, 1, idx, src));
  int64_t want[4] = {0, 0, 1, 2};
  for (int i = 0; i < 4; i++) {
    int64_t v;
    em_get_i64(t, i, &v);
    CHECK(v == want[i]);
  }
  em_tensor_release(src);
  em_tensor_release(t);
  em_tensor_release(idx);
}

TEST(split_pieces_are_views_and_cat_restores_them) {
  int64_t sz[2] = {2, 5};
  em_tensor *t, *parts[3] = {NULL, NULL, NULL}, *back = NULL;
  em_empty(2, sz, EM_INT32, em_cpu(), &t);
  for (int i = 0; i < 10; i++) em_set_flat(t, i, (em_scalar){EM_SCALAR_INT, i, 0});
  int64_t sizes[3] = {2, 0, 3};
  CHECK_OK(em_split_with_sizes(t, 2, 3, sizes, parts));
  CHECK(em_storage_refcount(em_tensor_storage(t)) == 4);
  CHECK(em_tensor_storage(parts[2]) == em_tensor_storage(t));
  CHECK(em_tensor_offset(parts[2]) == 2);
  CHECK_OK(em_cat(3, (const em_tensor *const *)parts, -1, &back));
  for (int i = 0; back && i < 10; i++) {
    int64_t a, b;
    em_get_i64(t, i, &a);
    em_get_i64(back, i, &b);
    CHECK(a == b);
  }
  int64_t bad[2] = {2, 2};
  em_tensor *more[2] = {NULL, NULL};
  CHECK_ERR(em_split_with_sizes(t, 2, 2, bad, more), "must sum exactly to 5");
  CHECK(more[0] == NULL && more[1] == NULL);
  for (int i = 0; i < 3; i++) em_tensor_release(parts[i]);
  em_tensor_release(back);
  CHECK(em_storage_refcount(em_tensor_storage(t)) == 1);
  em_tensor_release(t);
}

TEST(split_count_arithmetic) {
  int64_t n, s[8];
  CHECK_OK(em_split_sizes(7, 3, &n, s));
  CHECK(n == 3 && s[0] == 3 && s[1] == 3 && s[2] == 1);
  CHECK_OK(em_chunk_sizes(4, 3, &n, s));
  CHECK(n == 2 && s[0] == 2 && s[1] == 2);
  CHECK_OK(em_sections_sizes(4, 3, &n, s));
  CHECK(n == 3 && s[0] == 2 && s[1] == 1 && s[2] == 1);
  CHECK_OK(em_chunk_sizes(0, 3, &n, s));
  CHECK(n == 3 && s[0] == 0 && s[2] == 0);
  CHECK_ERR(em_split_sizes(7, 0, &n, s), "split_size can only be 0 if dimension size is 0");
}

TEST(nonzero_every_dtype_counts_nan) {
  for (int k = 0; k < NALL; k++) {
    em_tensor *t = transposed(2, 3, ALL[k]), *nz = NULL;   /* [3, 2] view */
    CHECK_OK(em_nonzero(t, &nz));
    int64_t want = 0;
    for (int64_t i = 0; i < 6; i++) {
      double v;
      em_get_f64(t, i, &v);
      want += v != 0;
    }
    CHECK(nz && em_tensor_sizes(nz)[0] == want && em_tensor_sizes(nz)[1] == 2);
    em_tensor_release(nz);
    em_tensor_release(t);
  }
  int64_t sz[1] = {3};
  em_tensor *f, *nz = NULL;
  em_zeros(1, sz, EM_FLOAT16, em_cpu(), &f);
  em_set_flat(f, 1, (em_scalar){EM_SCALAR_FLOAT, 0, NAN});
  CHECK_OK(em_nonzero(f, &nz));
  int64_t p = 0;
  CHECK(nz && em_tensor_sizes(nz)[0] == 1);
  if (nz) em_get_i64(nz, 0, &p);
  CHECK(p == 2);
  em_tensor_release(nz);
  em_tensor_release(f);
}

TEST(repeat_and_roll_match_a_naive_reference) {
  em_tensor *t = transposed(2, 3, EM_FLOAT64), *r = NULL, *ro = NULL;  /* [3, 2] */
  int64_t reps[3] = {2, 2, 3};
  CHECK_OK(em_repeat(t, 3, reps, &r));
  CHECK(r && em_tensor_sizes(r)[0] == 2 && em_tensor_sizes(r)[1] == 6 &&
        em_tensor_sizes(r)[2] == 6);
  for (int64_t a = 0; r && a < 2; a++)
    for (int64_t i = 0; i < 6; i++)
      for (int64_t j = 0; j < 6; j++) {
        double v;
        em_get_f64(r, (a * 6 + i) * 6 + j, &v);
        CHECK(v == at2(t, i % 3, j % 2));
      }
  int64_t sh[2] = {1, -1}, dims[2] = {1, 2};
  CHECK_OK(em_roll(t, 2, sh, 2, dims, &ro));
  for (int64_t i = 0; ro && i < 3; i++)
    for (int64_t j = 0; j < 2; j++)
      CHECK(at2(ro, i, j) == at2(t, (i + 2) % 3, (j + 1) % 2));
  em_tensor_release(r);
  em_tensor_release(ro);
  em_tensor_release(t);
}

/* masked_select of a contiguous tensor and mask runs in fixed runs of the
** mask (cpu/index.c): runs with no true element, all true, a true last
** element, every element size, on 1 and 2 threads, against a naive loop. */
TEST(masked_select_dense_runs_match_naive) {
  const int64_t n = 3 * (1 << 18) + 12345;
  const em_dtype dts[] = {EM_UINT8, EM_INT16, EM_FLOAT32, EM_FLOAT64};
  int64_t sz[1] = {n};
  em_tensor *mask;
  CHECK_OK(em_empty(1, sz, EM_BOOL, em_cpu(), &mask));
  bool *m = em_tensor_data(mask);
  uint32_t r = 7;
  for (int64_t i = 0; i < n; i++) {
    r = r * 1664525u + 1013904223u;
    m[i] = i < (1 << 18) ? 0                      /* run 1: none */
           : i < 2 * (1 << 18) ? 1                /* run 2: all */
           : (r >> 13) & 1;
  }
  m[n - 1] = 1;
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    em_tensor *t, *o1, *o2;
    CHECK_OK(em_empty(1, sz, dts[d], em_cpu(), &t));
    size_t es = em_dtype_size(dts[d]);
    unsigned char *tp = em_tensor_data(t);
    for (int64_t i = 0; i < n * (int64_t)es; i++) tp[i] = (unsigned char)(i * 31 + 7);
    CHECK_OK(em_set_num_threads(1));
    CHECK_OK(em_masked_select(t, mask, &o1));
    CHECK_OK(em_set_num_threads(2));
    CHECK_OK(em_masked_select(t, mask, &o2));
    int64_t k = 0, bad = 0;
    const unsigned char *op = em_tensor_data(o1);
    for (int64_t i = 0; i < n; i++)
      if (m[i]) bad += memcmp(op + k++ * es, tp + i * es, es) != 0;
    CHECK(bad == 0);
    CHECK(o1->ndim == 1 && o1->sizes[0] == k && o2->sizes[0] == k);
    CHECK(memcmp(em_tensor_data(o1), em_tensor_data(o2), (size_t)k * es) == 0);
    em_tensor_release(t);
    em_tensor_release(o1);
    em_tensor_release(o2);
  }
  em_tensor_release(mask);
}

int main(void) {
  RUN(promotion_matches_pytorch_table);
  RUN(index_select_every_dtype_on_a_transposed_view);
  RUN(scatter_then_gather_round_trips_every_dtype);
  RUN(integer_accumulation_wraps_like_pytorch);
  RUN(failed_writes_change_nothing_and_leak_nothing);
  RUN(writing_into_an_expanded_tensor_is_refused);
  RUN(overlapping_source_reads_a_snapshot);
  RUN(split_pieces_are_views_and_cat_restores_them);
  RUN(split_count_arithmetic);
  RUN(nonzero_every_dtype_counts_nan);
  RUN(repeat_and_roll_match_a_naive_reference);
  RUN(masked_select_dense_runs_match_naive);
  return CTEST_END();
}
