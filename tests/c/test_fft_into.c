/* cpu/pocketfft_into.h: rfft_forward_into(plan, in, out, fct) gives the
** bits of pocketfft's own path (in copied to out, rfft_forward in place)
** for every kind of plan (radix 2, 3, 4, 5 first, the generic pass first,
** Bluestein, length 1), both scale factors, in == out, in each build the
** engine calls (double and float, baseline and AVX2 + FMA), and leaves its
** input untouched. */
#include "ctest.h"
#include "pocketfft/pocketfft.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int rfft_forward_into(rfft_plan, const double *, double *, double);
void *em_pf_f32_make_r(size_t);
void em_pf_f32_destroy_r(void *);
int em_pf_f32_fwd_r(void *, float *, float);
int em_pf_f32_fwd_r_into(void *, const float *, float *, float);
#ifdef EMBER_VEC_AVX2
rfft_plan em_pf_avx2_make_rfft_plan(size_t);
void em_pf_avx2_destroy_rfft_plan(rfft_plan);
int em_pf_avx2_rfft_forward(rfft_plan, double *, double);
int em_pf_avx2_rfft_forward_into(rfft_plan, const double *, double *, double);
void *em_pf_f32avx2_make_r(size_t);
void em_pf_f32avx2_destroy_r(void *);
int em_pf_f32avx2_fwd_r(void *, float *, float);
int em_pf_f32avx2_fwd_r_into(void *, const float *, float *, float);
#endif

/* every length up to 130 (2, 3, 4, 5, 7, 11, 13 ... first), then powers of
** two and four, products with a generic factor, primes that Bluestein takes */
static const size_t EXTRA[] = {256, 1024, 4096, 65536, 1 << 18, 2 * 4096, 3 * 4096, 5 * 1024,
                               28, 49, 98, 196, 308, 420, 7 * 11 * 13, 1009, 2 * 1009,
                               4 * 2003, 10007, 3 * 5 * 7 * 11 * 4};

static uint32_t rng = 2463534242u;
static double next_value(void) {
  rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
  return (double)(int32_t)rng / 2147483648.0;
}

typedef struct {
  const char *name;
  void *(*make)(size_t);
  void (*destroy)(void *);
  int (*inplace)(void *, void *, double); /* through the typed shims below */
  int (*into)(void *, const void *, void *, double);
  size_t elt;
} build;

static int d_in(void *p, void *c, double f) { return rfft_forward(p, c, f); }
static int d_into(void *p, const void *i, void *o, double f) { return rfft_forward_into(p, i, o, f); }
static void *d_make(size_t n) { return make_rfft_plan(n); }
static void d_destroy(void *p) { destroy_rfft_plan(p); }
static int f_in(void *p, void *c, double f) { return em_pf_f32_fwd_r(p, c, (float)f); }
static int f_into(void *p, const void *i, void *o, double f) { return em_pf_f32_fwd_r_into(p, i, o, (float)f); }
#ifdef EMBER_VEC_AVX2
static int da_in(void *p, void *c, double f) { return em_pf_avx2_rfft_forward(p, c, f); }
static int da_into(void *p, const void *i, void *o, double f) { return em_pf_avx2_rfft_forward_into(p, i, o, f); }
static void *da_make(size_t n) { return em_pf_avx2_make_rfft_plan(n); }
static void da_destroy(void *p) { em_pf_avx2_destroy_rfft_plan(p); }
static int fa_in(void *p, void *c, double f) { return em_pf_f32avx2_fwd_r(p, c, (float)f); }
static int fa_into(void *p, const void *i, void *o, double f) { return em_pf_f32avx2_fwd_r_into(p, i, o, (float)f); }
#endif

/* the lengths of one build on which into differs from copy + in place */
static int differing(const build *b, size_t n) {
  size_t bytes = n * b->elt;
  unsigned char *in = malloc(bytes), *keep = malloc(bytes), *want = malloc(bytes),
                *got = malloc(bytes);
  void *plan = b->make(n);
  int bad = 0;
  if (!in || !keep || !want || !got || !plan) { bad = 1; goto done; }
  for (size_t i = 0; i < n; i++) {
    double v = next_value();
    if (b->elt == sizeof(double)) ((double *)in)[i] = v;
    else ((float *)in)[i] = (float)v;
  }
  memcpy(keep, in, bytes);
  const double fcts[] = {1.0, 0.5};
  for (int f = 0; f < 2; f++) {
    memcpy(want, in, bytes);
    memset(got, 0xA5, bytes);
    bad |= b->inplace(plan, want, fcts[f]) != 0;
    bad |= b->into(plan, in, got, fcts[f]) != 0;
    bad |= memcmp(want, got, bytes) != 0;
    bad |= memcmp(in, keep, bytes) != 0; /* the input is read only */
    memcpy(got, in, bytes);               /* in == out: the in-place path */
    bad |= b->into(plan, got, got, fcts[f]) != 0;
    bad |= memcmp(want, got, bytes) != 0;
  }
done:
  if (plan) b->destroy(plan);
  free(in); free(keep); free(want); free(got);
  return bad;
}

static void check_build(const build *b) {
  int bad = 0;
  for (size_t n = 1; n <= 130; n++)
    if (differing(b, n)) { bad++; printf("# %s: n = %zu differs\n", b->name, n); }
  for (size_t k = 0; k < sizeof EXTRA / sizeof EXTRA[0]; k++)
    if (differing(b, EXTRA[k])) { bad++; printf("# %s: n = %zu differs\n", b->name, EXTRA[k]); }
  CHECK(bad == 0);
}

TEST(double_baseline_into_equals_copy_then_in_place) {
  build b = {"double", d_make, d_destroy, d_in, d_into, sizeof(double)};
  check_build(&b);
}
TEST(float_baseline_into_equals_copy_then_in_place) {
  build b = {"float", em_pf_f32_make_r, em_pf_f32_destroy_r, f_in, f_into, sizeof(float)};
  check_build(&b);
}
TEST(avx2_builds_into_equal_copy_then_in_place) {
#ifdef EMBER_VEC_AVX2
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  build d = {"double avx2", da_make, da_destroy, da_in, da_into, sizeof(double)};
  build f = {"float avx2", em_pf_f32avx2_make_r, em_pf_f32avx2_destroy_r, fa_in, fa_into,
             sizeof(float)};
  check_build(&d);
  check_build(&f);
#endif
}

int main(void) {
  RUN(double_baseline_into_equals_copy_then_in_place);
  RUN(float_baseline_into_equals_copy_then_in_place);
  RUN(avx2_builds_into_equal_copy_then_in_place);
  return CTEST_END();
}
