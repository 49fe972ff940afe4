/* The float-lane reductions (cpu/vreduce.c): the error bound of the
** cascade sums, NaN propagation of the extremes, the moments against long
** double, row stacks against per-column references and independent of how
** the columns are split, and the AVX2 build against the scalar build of the
** same source (the same bits). */
#include "ctest.h"
#include "cpu/vreduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the scalar build of vreduce.c (end of file) */
double scalar_vred_sum_f32(em_vred_kind k, const float *p, int64_t n);
float scalar_vred_ext_f32(em_vred_kind k, const float *p, int64_t n);
void scalar_vred_moments_f32(const float *p, int64_t n, double *mean, double *m2);
double scalar_vred_prod_f32_isa(const float *p, int64_t n, int isa, int *ran);
void scalar_vred_rows_f32(em_vred_kind k, double *acc, const float *p, int64_t rs,
                          int64_t nrows, int64_t ncols);

static float *values(int64_t n, uint32_t seed) {
  float *x = malloc((size_t)(n + 8) * sizeof *x);
  uint32_t r = seed;
  for (int64_t i = 0; i < n + 8; i++) {
    r = r * 1664525u + 1013904223u;
    /* mixed signs and magnitudes 2^-8 .. 2^8 */
    float m = (float)((int32_t)(r >> 8) - (1 << 23)) * 0x1p-23f;
    x[i] = ldexpf(m, (int)(r % 17) - 8);
  }
  return x;
}

static const int64_t NS[] = {0, 1, 7, 31, 32, 33, 127, 128, 511, 512, 513, 4096, 65537, 300007};

TEST(cascade_sums_are_within_their_bound) {
  float *x = values(300007, 12345);
  CHECK(x != NULL);
  if (!x) return;
  for (size_t k = 0; k < sizeof NS / sizeof NS[0]; k++) {
    int64_t n = NS[k];
    long double s = 0, sq = 0, as = 0, mag = 0, magsq = 0;
    for (int64_t i = 0; i < n; i++) {
      s += x[i];
      sq += (long double)x[i] * x[i];
      as += fabsl((long double)x[i]);
      mag += fabsl((long double)x[i]);
      magsq += (long double)x[i] * x[i];
    }
    /* at most 13 float additions (and one rounding of x*x) per element:
    ** 14 * 2^-24 of the magnitude, plus the double combination */
    double b = 14 * 0x1p-24 * (double)mag + 1e-300, bsq = 15 * 0x1p-24 * (double)magsq + 1e-300;
    CHECK(fabsl(em_vred_sum_f32(EM_VRED_SUM, x, n) - s) <= b);
    CHECK(fabsl(em_vred_sum_f32(EM_VRED_ASUM, x, n) - as) <= b);
    CHECK(fabsl(em_vred_sum_f32(EM_VRED_SUMSQ, x, n) - sq) <= bsq);
    /* the order depends only on n: the same values one float further on
    ** (another alignment) give the same bits */
    double a1 = em_vred_sum_f32(EM_VRED_SUM, x, n);
    memmove(x + 1, x, (size_t)n * sizeof *x);
    double a2 = em_vred_sum_f32(EM_VRED_SUM, x + 1, n);
    memmove(x, x + 1, (size_t)n * sizeof *x);
    CHECK(memcmp(&a1, &a2, sizeof a1) == 0);
  }
  /* 2^24 + 1000 copies of 0.1f: a float running sum stops at 2^24 */
  int64_t n = (1 << 24) + 1000;
  float *t = malloc((size_t)n * sizeof *t);
  CHECK(t != NULL);
  if (t) {
    for (int64_t i = 0; i < n; i++) t[i] = 0.1f;
    double exact = (double)n * (double)0.1f;
    CHECK(fabs(em_vred_sum_f32(EM_VRED_SUM, t, n) - exact) / exact < 1e-7);
    free(t);
  }
  free(x);
}

TEST(extremes_and_products) {
  float *x = values(4099, 777);
  CHECK(x != NULL);
  if (!x) return;
  for (int64_t n = 1; n <= 4099; n += 97) {
    float mx = -INFINITY, mn = INFINITY, amx = 0, amn = INFINITY;
    long double pr = 1;
    for (int64_t i = 0; i < n; i++) {
      if (x[i] > mx) mx = x[i];
      if (x[i] < mn) mn = x[i];
      if (fabsf(x[i]) > amx) amx = fabsf(x[i]);
      if (fabsf(x[i]) < amn) amn = fabsf(x[i]);
      pr *= 1 + x[i] * 1e-3L;
    }
    CHECK(em_vred_ext_f32(EM_VRED_MAX, x, n) == mx);
    CHECK(em_vred_ext_f32(EM_VRED_MIN, x, n) == mn);
    CHECK(em_vred_ext_f32(EM_VRED_MAXABS, x, n) == amx);
    CHECK(em_vred_ext_f32(EM_VRED_MINABS, x, n) == amn);
    /* a NaN anywhere (in the lanes or in the tail) gives NaN: the
    ** input's first (its sign and payload; |NaN| for the abs kinds) */
    for (int64_t at = 0; at < n; at += n / 3 + 1) {
      float keep = x[at], nan1, got;
      uint32_t bits = 0xffc01234u, u;
      memcpy(&nan1, &bits, 4);
      x[at] = nan1;
      CHECK(isnan(em_vred_ext_f32(EM_VRED_MAX, x, n)));
      got = em_vred_ext_f32(EM_VRED_MIN, x, n);
      memcpy(&u, &got, 4);
      CHECK(u == bits);
      got = em_vred_ext_f32(EM_VRED_MINABS, x, n);
      memcpy(&u, &got, 4);
      CHECK(u == (bits & 0x7fffffffu));
      x[at] = keep;
    }
  }
  CHECK(em_vred_ext_f32(EM_VRED_MAX, x, 0) == -INFINITY);
  CHECK(em_vred_ext_f32(EM_VRED_MIN, x, 0) == INFINITY);
  float *y = malloc(4099 * sizeof *y);
  CHECK(y != NULL);
  if (y) {
    long double pr = 1;
    for (int i = 0; i < 4099; i++) { y[i] = 1 + x[i] * 1e-3f; pr *= y[i]; }
    CHECK(fabsl(em_vred_sum_f32(EM_VRED_PROD, y, 4099) - pr) <= 1e-12L * fabsl(pr));
    CHECK(em_vred_sum_f32(EM_VRED_PROD, y, 0) == 1);
    free(y);
  }
  free(x);
}

TEST(moments_match_long_double) {
  float *x = values(300007, 99);
  CHECK(x != NULL);
  if (!x) return;
  /* a large mean against a small spread: the naive sum of squares loses it */
  for (int i = 0; i < 300007; i++) x[i] = 1000 + x[i] * 0x1p-8f;
  for (size_t k = 1; k < sizeof NS / sizeof NS[0]; k++) {
    int64_t n = NS[k];
    long double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    long double mean = s / n, m2 = 0;
    for (int64_t i = 0; i < n; i++) m2 += (x[i] - mean) * (x[i] - mean);
    double gm, gq;
    em_vred_moments_f32(x, n, &gm, &gq);
    CHECK(fabsl(gm - mean) <= 1e-14L * fabsl(mean));
    CHECK(fabsl(gq - m2) <= 1e-9L * m2 + 1e-300L);
  }
  free(x);
}

TEST(row_stacks_match_columns_and_any_split) {
  enum { R = 37, C = 2500, RS = 2600 };
  float *x = values((int64_t)R * RS, 4242);
  CHECK(x != NULL);
  if (!x) return;
  x[5 * RS + 17] = NAN;
  em_vred_kind kinds[] = {EM_VRED_SUM, EM_VRED_SUMSQ, EM_VRED_ASUM, EM_VRED_MAX, EM_VRED_MIN,
                          EM_VRED_MAXABS, EM_VRED_MINABS, EM_VRED_PROD, EM_VRED_VAR};
  static double a1[3 * C], a2[3 * C], a3[3 * C];
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    em_vred_kind kd = kinds[k];
    int w = kd == EM_VRED_VAR ? 3 : 1;
    double init = kd == EM_VRED_PROD ? 1 : (kd == EM_VRED_MAX || kd == EM_VRED_MAXABS)
                                               ? -INFINITY
                                               : (kd == EM_VRED_MIN || kd == EM_VRED_MINABS)
                                                     ? INFINITY : 0;
    for (int j = 0; j < w * C; j++) a1[j] = a2[j] = a3[j] = kd == EM_VRED_VAR ? 0 : init;
    em_vred_rows_f32(kd, a1, x, RS, R, C);
    /* the columns cut anywhere: the same bits */
    em_vred_rows_f32(kd, a2, x, RS, R, 1000);
    em_vred_rows_f32(kd, a2 + 1000 * w, x + 1000, RS, R, 3);
    em_vred_rows_f32(kd, a2 + 1003 * w, x + 1003, RS, R, C - 1003);
    scalar_vred_rows_f32(kd, a3, x, RS, R, C);
    long bad = 0;
    for (int j = 0; j < w * C; j++) {
      bad += memcmp(&a1[j], &a2[j], sizeof a1[j]) != 0 && !(isnan(a1[j]) && isnan(a2[j]));
      bad += memcmp(&a1[j], &a3[j], sizeof a1[j]) != 0 && !(isnan(a1[j]) && isnan(a3[j]));
    }
    CHECK(bad == 0);
    /* each column against a long double reference */
    for (int j = 0; j < C; j++) {
      long double s = 0, mag = 0, p = 1;
      for (int r = 0; r < R; r++) {
        long double v = x[r * RS + j];
        s += kd == EM_VRED_SUMSQ ? v * v : kd == EM_VRED_ASUM ? fabsl(v) : v;
        mag += kd == EM_VRED_SUMSQ ? v * v : fabsl(v);
        p *= v;
      }
      if (j == 17) { CHECK(isnan(a1[w * j + (w == 3 ? 2 : 0)])); continue; }
      if (kd == EM_VRED_SUM || kd == EM_VRED_SUMSQ || kd == EM_VRED_ASUM)
        CHECK(fabsl(a1[j] - s) <= 8 * 0x1p-24L * mag);
      else if (kd == EM_VRED_PROD)
        CHECK(fabsl(a1[j] - p) <= 1e-13L * fabsl(p));
      else if (kd == EM_VRED_VAR) {
        long double mean = s / R, m2 = 0;
        for (int r = 0; r < R; r++) m2 += (x[r * RS + j] - mean) * (x[r * RS + j] - mean);
        CHECK(a1[3 * j] == R);
        CHECK(fabsl(a1[3 * j + 1] - mean) <= 1e-13L * mag / R);
        CHECK(fabsl(a1[3 * j + 2] - m2) <= 1e-12L * m2);
      }
    }
  }
  free(x);
}

TEST(vector_build_equals_scalar_build) {
  float *x = values(70001, 31337);
  CHECK(x != NULL);
  if (!x) return;
  x[69000] = NAN;
  em_vred_kind sums[] = {EM_VRED_SUM, EM_VRED_SUMSQ, EM_VRED_ASUM, EM_VRED_PROD};
  em_vred_kind exts[] = {EM_VRED_MAX, EM_VRED_MIN, EM_VRED_MAXABS, EM_VRED_MINABS};
  long differ = 0;
  for (int64_t n = 0; n < 68000; n = n * 3 + 7) {
    for (int k = 0; k < 4; k++) {
      double a = em_vred_sum_f32(sums[k], x, n), b = scalar_vred_sum_f32(sums[k], x, n);
      differ += memcmp(&a, &b, sizeof a) != 0;
      float c = em_vred_ext_f32(exts[k], x + 3, n), d = scalar_vred_ext_f32(exts[k], x + 3, n);
      differ += memcmp(&c, &d, sizeof c) != 0;
    }
    if (n > 0) {
      double m1, q1, m2, q2;
      em_vred_moments_f32(x + 1, n, &m1, &q1);
      scalar_vred_moments_f32(x + 1, n, &m2, &q2);
      differ += memcmp(&m1, &m2, sizeof m1) != 0 || memcmp(&q1, &q2, sizeof q1) != 0;
    }
  }
  CHECK(differ == 0);
  CHECK(isnan(em_vred_ext_f32(EM_VRED_MAX, x, 70001)));
  free(x);
}

/* The product's AVX2 and AVX-512 versions (each one this CPU runs) give
** the scalar build's bits, at every length around the 64-lane step and
** with the run starting off any alignment. */
TEST(product_versions_equal_scalar_build) {
  float *x = values(70001, 4242);
  CHECK(x != NULL);
  if (!x) return;
  for (int64_t i = 0; i < 70001; i++) /* within 1% of 1: no overflow */
    x[i] = 1.0f + (float)((int64_t)((uint64_t)i * 2654435761u % 2001) - 1000) * 1e-5f;
  long differ = 0, ran_versions = 0;
  for (int isa = 0; isa <= 2; isa++) {
    int ran = 0;
    (void)em_vred_prod_f32_isa(x, 1, isa, &ran);
    if (!ran) continue;
    ran_versions++;
    for (int64_t n = 0; n < 69000; n = n < 200 ? n + 1 : n * 2 + 13) {
      double a = em_vred_prod_f32_isa(x + (n % 7), n, isa, NULL);
      double b = scalar_vred_sum_f32(EM_VRED_PROD, x + (n % 7), n);
      differ += memcmp(&a, &b, sizeof a) != 0;
    }
  }
  CHECK(ran_versions >= 1);
  CHECK(differ == 0);
  int ran = 1;
  CHECK(em_vred_prod_f32_isa(x, 10, 9, &ran) == 1 && ran == 0);
  free(x);
}

int main(void) {
  RUN(cascade_sums_are_within_their_bound);
  RUN(extremes_and_products);
  RUN(moments_match_long_double);
  RUN(row_stacks_match_columns_and_any_split);
  RUN(vector_build_equals_scalar_build);
  RUN(product_versions_equal_scalar_build);
  return CTEST_END();
}

/* The second build of vreduce.c: no clones (baseline x86-64 only). */
#define EMBER_NO_CLONES
#define em_vred_sum_f32 scalar_vred_sum_f32
#define em_vred_ext_f32 scalar_vred_ext_f32
#define em_vred_moments_f32 scalar_vred_moments_f32
#define em_vred_rows_f32 scalar_vred_rows_f32
#define em_vred_prod_f32_isa scalar_vred_prod_f32_isa
#include "cpu/vreduce.c"
