/*
** test_random.c -- the generator's engine invariants: Philox4x32-10 matches
** Random123's known answers; a seed fixes the numbers; element i's numbers
** do not depend on the destination's layout; the state round-trips; the
** samplers keep their ranges; failures name the operation.
*/
#include <math.h>
#include <stdlib.h>

#include "core/kern_random.h"
#include "ctest.h"

TEST(philox_known_answers) {
  /* Random123 tests/kat_vectors, the "philox4x32 10" lines */
  static const uint32_t v[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
       0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
       0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int k = 0; k < 3; k++) {
    uint32_t out[4];
    em_philox4x32_10(v[k], v[k] + 4, out);
    for (int j = 0; j < 4; j++) CHECK(out[j] == v[k][6 + j]);
  }
}

static double *values(em_tensor *t) {
  int64_t n = em_tensor_numel(t);
  double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
  for (int64_t i = 0; i < n; i++) em_get_f64(t, i, &d[i]);
  return d;
}

TEST(same_seed_same_numbers) {
  int64_t sz[2] = {3, 5};
  em_tensor *a, *b, *c;
  CHECK_OK(em_empty(2, sz, EM_FLOAT64, em_cpu(), &a));
  CHECK_OK(em_empty(2, sz, EM_FLOAT64, em_cpu(), &b));
  CHECK_OK(em_empty(2, sz, EM_FLOAT64, em_cpu(), &c));
  em_manual_seed(42);
  CHECK(em_get_rng_state().offset == 0);
  CHECK_OK(em_normal_(a, 0, 1));
  CHECK(em_get_rng_state().offset == 8);  /* two normals per block */
  CHECK_OK(em_normal_(c, 0, 1));  /* the next numbers differ */
  em_manual_seed(42);
  CHECK_OK(em_normal_(b, 0, 1));
  double *da = values(a), *db = values(b), *dc = values(c);
  int same = 1, differ = 0;
  for (int i = 0; i < 15; i++) {
    same &= da[i] == db[i];
    differ += da[i] != dc[i];
  }
  CHECK(same);
  CHECK(differ == 15);
  CHECK(em_initial_seed() == 42);
  free(da); free(db); free(dc);
  em_tensor_release(a); em_tensor_release(b); em_tensor_release(c);
}

/* The samplers make their words PB blocks at a time (random.c); element i
** must still be lane i % L of Philox(counter = offset + i / L, key = seed),
** as the single-block reference below computes it, at every position of a
** batch and past its ends (sizes that are not multiples of the batch). */
static void ref_block(uint64_t idx, uint64_t seed, uint32_t w[4]) {
  const uint32_t ctr[4] = {(uint32_t)idx, (uint32_t)(idx >> 32), 0, 0};
  const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  em_philox4x32_10(ctr, key, w);
}

TEST(every_element_comes_from_its_documented_block_and_lane) {
  const int64_t sizes[] = {1, 3, 127, 129, 1000};
  for (int s = 0; s < 5; s++) {
    int64_t n = sizes[s];
    em_tensor *u, *b;
    CHECK_OK(em_empty(1, &n, EM_FLOAT32, em_cpu(), &u));
    CHECK_OK(em_empty(1, &n, EM_FLOAT64, em_cpu(), &b));
    em_manual_seed(0x123456789ull);
    CHECK_OK(em_uniform_(u, 0, 1));   /* float32: 4 lanes, 24 bits */
    uint64_t off = em_get_rng_state().offset;
    CHECK(off == (uint64_t)(n + 3) / 4);
    const double bp = s % 2 ? 0.5 : 0.3;  /* 0.5: p 2^53 an integer (the compare's edge) */
    CHECK_OK(em_bernoulli_(b, bp));  /* 2 lanes, 53-bit uniforms */
    const float *ud = em_tensor_data(u);
    const double *bd = em_tensor_data(b);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
      uint32_t w[4];
      ref_block((uint64_t)i / 4, 0x123456789ull, w);
      float want = (float)((double)(w[i % 4] >> 8) * 0x1p-24);
      bad += ud[i] != want;
      ref_block(off + (uint64_t)i / 2, 0x123456789ull, w);
      int l = (int)(i % 2);
      double u53 = (double)((((uint64_t)w[2 * l] << 32) | w[2 * l + 1]) >> 11) * 0x1p-53;
      bad += bd[i] != (u53 < bp ? 1.0 : 0.0);
    }
    CHECK(bad == 0);
    /* float32 takes its own loop for bernoulli (unit stride): the same
    ** numbers as the float64 draw from the same offset */
    em_tensor *bf;
    CHECK_OK(em_empty(1, &n, EM_FLOAT32, em_cpu(), &bf));
    em_manual_seed(0x123456789ull);
    CHECK_OK(em_uniform_(u, 0, 1));
    CHECK_OK(em_bernoulli_(bf, bp));
    const float *bfd = em_tensor_data(bf);
    for (int64_t i = 0; i < n; i++) bad += (double)bfd[i] != bd[i];
    CHECK(bad == 0);
    em_tensor_release(bf);
    em_tensor_release(u);
    em_tensor_release(b);
  }
}

/* em_philox_blocks (the batched rounds, in vector registers) gives the
** single-block words, for every batch length and across the 2^32 carry of
** the counter */
TEST(batched_blocks_equal_single_blocks) {
  const uint64_t firsts[] = {0, 5, 0xFFFFFFF0ull, 0x123456789abcull};
  const uint32_t key[2] = {0x9e3779b9u, 0x243f6a88u};
  int bad = 0;
  for (int f = 0; f < 4; f++)
    for (int nb = 1; nb <= EM_PHILOX_BATCH; nb++) {
      uint32_t w[EM_PHILOX_BATCH][4];
      em_philox_blocks(firsts[f], nb, key, w);
      for (int b = 0; b < nb; b++) {
        uint64_t idx = firsts[f] + (uint64_t)b;
        const uint32_t ctr[4] = {(uint32_t)idx, (uint32_t)(idx >> 32), 0, 0};
        uint32_t r[4];
        em_philox4x32_10(ctr, key, r);
        for (int j = 0; j < 4; j++) bad += w[b][j] != r[j];
      }
    }
  CHECK(bad == 0);
}

TEST(layout_does_not_change_the_numbers) {
  /* a transposed destination gets, at row-major position i, what a
  ** contiguous one gets at i */
  int64_t sz[2] = {4, 6}, tsz[2] = {6, 4}, tst[2] = {1, 4};
  em_tensor *a, *base, *t;
  CHECK_OK(em_empty(2, sz, EM_FLOAT32, em_cpu(), &a));
  CHECK_OK(em_empty(2, tsz, EM_FLOAT32, em_cpu(), &base));
  CHECK_OK(em_as_strided(base, 2, sz, tst, 0, &t));
  CHECK(!em_tensor_is_contiguous(t));
  em_manual_seed(7);
  CHECK_OK(em_uniform_(a, -1, 1));
  em_manual_seed(7);
  CHECK_OK(em_uniform_(t, -1, 1));
  double *da = values(a), *dt = values(t);
  int same = 1;
  for (int i = 0; i < 24; i++) same &= da[i] == dt[i] && da[i] >= -1 && da[i] < 1;
  CHECK(same);
  free(da); free(dt);
  em_tensor_release(a); em_tensor_release(base); em_tensor_release(t);
}

TEST(state_round_trips) {
  int64_t n = 10;
  em_tensor *a, *b;
  CHECK_OK(em_empty(1, &n, EM_INT64, em_cpu(), &a));
  CHECK_OK(em_empty(1, &n, EM_INT64, em_cpu(), &b));
  em_manual_seed(3);
  CHECK_OK(em_random_(a, 0, 5));
  em_rng_state s = em_get_rng_state();
  CHECK(s.seed == 3 && s.offset == 10);
  CHECK_OK(em_random_(a, -1000, 1000));
  em_set_rng_state(s);
  CHECK_OK(em_random_(b, -1000, 1000));
  int same = 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t x, y;
    em_get_i64(a, i, &x);
    em_get_i64(b, i, &y);
    same &= x == y && x >= -1000 && x < 1000;
  }
  CHECK(same);
  em_tensor_release(a); em_tensor_release(b);
}

TEST(random_covers_the_full_int64_range) {
  int64_t n = 64;
  em_tensor *a;
  CHECK_OK(em_empty(1, &n, EM_INT64, em_cpu(), &a));
  em_manual_seed(11);
  CHECK_OK(em_random_(a, INT64_MIN, INT64_MAX));
  int neg = 0, pos = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t x;
    em_get_i64(a, i, &x);
    neg += x < 0;
    pos += x > 0;
  }
  CHECK(neg > 10 && pos > 10);
  CHECK_ERR(em_random_(a, 5, 5), "random_: expects 'from' to be less than 'to'");
  em_tensor_release(a);
  int64_t m = 3;
  em_tensor *u8;
  CHECK_OK(em_empty(1, &m, EM_UINT8, em_cpu(), &u8));
  CHECK_ERR(em_random_(u8, 0, 300), "random_: to - 1 = 299 is out of bounds for ember.uint8");
  CHECK_OK(em_random_(u8, 0, 256));
  em_tensor_release(u8);
}

TEST(randperm_is_a_permutation_of_1_to_n) {
  em_tensor *p;
  em_manual_seed(5);
  CHECK_OK(em_randperm(1000, EM_INT64, em_cpu(), &p));
  char seen[1001] = {0};
  int ok = 1, moved = 0;
  for (int64_t i = 0; i < 1000; i++) {
    int64_t x;
    em_get_i64(p, i, &x);
    ok &= x >= 1 && x <= 1000 && !seen[x];
    if (x >= 1 && x <= 1000) seen[x] = 1;
    moved += x != i + 1;
  }
  CHECK(ok);
  CHECK(moved > 900);
  em_tensor_release(p);
  CHECK_ERR(em_randperm(-1, EM_INT64, em_cpu(), &p), "randperm: n must be non-negative, got -1");
  CHECK_ERR(em_randperm(300, EM_UINT8, em_cpu(), &p), "randperm: n = 300 is too large for ember.uint8");
}

TEST(samplers_check_their_arguments) {
  int64_t n = 4;
  em_tensor *f, *i;
  CHECK_OK(em_empty(1, &n, EM_FLOAT32, em_cpu(), &f));
  CHECK_OK(em_empty(1, &n, EM_INT32, em_cpu(), &i));
  CHECK_ERR(em_uniform_(i, 0, 1), "uniform_: expects a floating-point tensor, got ember.int32");
  CHECK_ERR(em_uniform_(f, 2, 1), "uniform_: expects to return a [from, to) range, but found from=2 > to=1");
  CHECK_ERR(em_normal_(f, 0, -1), "normal_: expects std >= 0.0, but found std -1");
  CHECK_ERR(em_exponential_(f, -1), "exponential_: expects lambda >= 0.0, but found lambda=-1");
  CHECK_ERR(em_bernoulli_(f, 1.5), "bernoulli_: expects p to be in [0, 1], but got p=1.5");
  CHECK_OK(em_bernoulli_(i, 0.5));
  em_tensor *probs;
  CHECK_OK(em_zeros(1, &n, EM_FLOAT32, em_cpu(), &probs));
  em_tensor *out = NULL;
  CHECK_ERR(em_multinomial(probs, 1, 0, &out),
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)");
  CHECK_ERR(em_multinomial(probs, 5, 0, &out), "cannot sample n_sample (5) > prob_dist.size(-1) (4)");
  CHECK_ERR(em_multinomial(i, 1, 0, &out), "multinomial: only supports floating-point dtypes");
  CHECK(out == NULL);
  em_tensor_release(f); em_tensor_release(i); em_tensor_release(probs);
}

TEST(ranges_and_eye) {
  em_tensor *t;
  em_scalar s0 = {EM_SCALAR_INT, 0, 0}, s10 = {EM_SCALAR_INT, 10, 10},
            s3 = {EM_SCALAR_INT, 3, 3}, zero = {EM_SCALAR_INT, 0, 0};
  CHECK_OK(em_arange(s0, s10, s3, EM_INT64, em_cpu(), &t));
  CHECK(em_tensor_numel(t) == 4);
  int64_t x;
  em_get_i64(t, 3, &x);
  CHECK(x == 9);
  em_tensor_release(t);
  CHECK_ERR(em_arange(s0, s10, zero, EM_INT64, em_cpu(), &t), "arange: step must be nonzero");
  CHECK_ERR(em_arange(s10, s0, s3, EM_FLOAT32, em_cpu(), &t),
            "arange: upper bound and lower bound inconsistent with step sign");
  CHECK_OK(em_linspace(0, 1, 5, EM_FLOAT64, em_cpu(), &t));
  double v;
  em_get_f64(t, 4, &v);
  CHECK(v == 1.0);
  em_get_f64(t, 1, &v);
  CHECK(v == 0.25);
  em_tensor_release(t);
  CHECK_OK(em_eye(3, 4, EM_FLOAT32, em_cpu(), &t));
  int ok = 1;
  for (int64_t i = 0; i < 12; i++) {
    em_get_f64(t, i, &v);
    ok &= v == ((i / 4 == i % 4) ? 1.0 : 0.0);
  }
  CHECK(ok);
  em_tensor_release(t);
  CHECK_ERR(em_eye(-1, -1, EM_FLOAT32, em_cpu(), &t), "eye: n must be greater or equal to 0, got -1");
}

int main(void) {
  RUN(philox_known_answers);
  RUN(same_seed_same_numbers);
  RUN(every_element_comes_from_its_documented_block_and_lane);
  RUN(batched_blocks_equal_single_blocks);
  RUN(layout_does_not_change_the_numbers);
  RUN(state_round_trips);
  RUN(random_covers_the_full_int64_range);
  RUN(randperm_is_a_permutation_of_1_to_n);
  RUN(samplers_check_their_arguments);
  RUN(ranges_and_eye);
  return CTEST_END();
}
