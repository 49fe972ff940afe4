/* test_vecmath.c -- the vector float32 math of cpu/vecmath.c against libm:
** - exp is within 1 ulp of the exact (double) result over a sweep of every
**   4099th float bit pattern, and exactly expf's value at the special
**   points: +-0, +-inf, NaN, the overflow and underflow thresholds, and
**   subnormal results;
** - sigmoid and silu are within 4 ulp of their double-precision values
**   (where exp(-x) fits in a float; 0 below, as in PyTorch) and give
**   PyTorch's special values;
** - an element's result does not depend on its position, the run length
**   or in-place use (the loops' vector body, peeled head and scalar tail
**   agree bit for bit);
** - tanh and log are within 2 ulp over the same sweep and give tanhf's and
**   logf's values at 0, +-inf, NaN, negative and subnormal inputs;
** - the float32 sum (double accumulation, pairwise over blocks) is within
**   a log2(n)-sized multiple of double's epsilon of the exact sum, and
**   gives the same bits for the same values at any alignment;
** - the library's (vectorised, AVX2-cloned) build gives the same bits as a
**   scalar build of the same source, compiled into this test;
** - through the engine, exp/sigmoid/silu of a strided float32 tensor equal
**   those of its contiguous copy bit for bit. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctest.h"
#include "cpu/vecmath.h"
#include "core/core.h"

static float tu2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* |got - want| in units of the float ulp at want (2^-149 in the subnormal
** range); a want beyond the float range must give the matching infinity. */
static double ulp_err(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e30;
  if (isinf((float)want)) return got == (float)want ? 0 : 1e30;
  if (isnan(got) || isinf(got)) return 1e30;
  int e;
  frexp(want, &e);
  double ulp = ldexp(1.0, e - 24);
  if (ulp < 0x1p-149) ulp = 0x1p-149;
  return fabs((double)got - want) / ulp;
}

/* vecmath.c built a second time at the end of this file, without clones
** and with this file's flags (no -fno-trapping-math, so scalar code) */
void scalar_vexp_f32(float *out, const float *in, int64_t n);
void scalar_vsigmoid_f32(float *out, const float *in, int64_t n);
void scalar_vsilu_f32(float *out, const float *in, int64_t n);
void scalar_vtanh_f32(float *out, const float *in, int64_t n);
void scalar_vlog_f32(float *out, const float *in, int64_t n);
double scalar_vsum_f32(const float *in, int64_t n);

static float vexp1(float x) { float y; em_vexp_f32(&y, &x, 1); return y; }
static float vtanh1(float x) { float y; em_vtanh_f32(&y, &x, 1); return y; }
static float vlog1(float x) { float y; em_vlog_f32(&y, &x, 1); return y; }
static float vsig1(float x) { float y; em_vsigmoid_f32(&y, &x, 1); return y; }
static float vsilu1(float x) { float y; em_vsilu_f32(&y, &x, 1); return y; }

/* Both divide by 1 + exp(-x) in float, as PyTorch's vectorised kernels do:
** below -88.72 exp(-x) overflows and the result is 0 (PyTorch 1.13 gives 0
** there too, e.g. sigmoid(-88.74)), not the subnormal exact value. */
static int exp_overflows(double x) { return -x > (double)0x1.62e42ep6f; }
static double sig_d(double x) { return exp_overflows(x) ? 0.0 : 1.0 / (1.0 + exp(-x)); }
static double silu_d(double x) { return exp_overflows(x) ? 0.0 : x / (1.0 + exp(-x)); }

enum { SWEEP_STEP = 4099, CHUNK = 4096 };

/* Sweeps bit patterns through fn in chunks (the vector path), returns the
** largest error against ref and counts results over maxulp. */
static double sweep(em_vec_f32_fn fn, double (*ref)(double), double maxulp, long *bad) {
  static float in[CHUNK], out[CHUNK];
  double worst = 0;
  *bad = 0;
  int m = 0;
  for (uint64_t u = 0;; u += SWEEP_STEP) {
    int last = u > 0xffffffffull;
    if (!last) in[m++] = tu2f((uint32_t)u);
    if (m == CHUNK || (last && m > 0)) {
      fn(out, in, m);
      for (int j = 0; j < m; j++) {
        double e = ulp_err(out[j], ref((double)in[j]));
        if (e > worst) worst = e;
        if (e > maxulp) {
          if (*bad < 5)
            printf("  %a -> %a, want %a (%.2f ulp)\n", in[j], out[j], ref((double)in[j]), e);
          (*bad)++;
        }
      }
      m = 0;
    }
    if (last) break;
  }
  return worst;
}


/* Each function over the sweep, within its bound: exp 1 ulp, sigmoid and
** silu 4 (2 seen), tanh and log 2. */
TEST(functions_within_their_ulp_bounds_over_a_sweep) {
  const struct {
    const char *name;
    em_vec_f32_fn fn;
    double (*ref)(double);
    double maxulp;
  } fs[] = {{"exp", em_vexp_f32, exp, 1.0},       {"sigmoid", em_vsigmoid_f32, sig_d, 4.0},
            {"silu", em_vsilu_f32, silu_d, 4.0},  {"tanh", em_vtanh_f32, tanh, 2.0},
            {"log", em_vlog_f32, log, 2.0}};
  for (size_t f = 0; f < sizeof fs / sizeof fs[0]; f++) {
    long bad;
    double worst = sweep(fs[f].fn, fs[f].ref, fs[f].maxulp, &bad);
    printf("  %s: max error %.3f ulp\n", fs[f].name, worst);
    CHECK(bad == 0);
  }
}

TEST(exp_special_values_are_expf_s) {
  const float pts[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1.0f, -1.0f,
                       0x1.62e42ep6f,  /* largest x with a finite expf */
                       0x1.62e430p6f,  /* smallest that overflows */
                       88.0f, 89.0f, 1e10f, FLT_MAX, -FLT_MAX,
                       -87.33654f, -87.5f, -100.0f, -103.0f,
                       -0x1.9fe368p6f, /* ~ -103.97: expf rounds to 2^-149 */
                       -0x1.9fe36ap6f, -104.0f, -110.0f, 1e-30f, -1e-30f,
                       0x1p-149f, -0x1p-149f};
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    float x = pts[i], got = vexp1(x), want = expf(x);
    if (isinf(want) || want == 0 || x == 0 || fabsf(x) < 1e-7f) {
      CHECK(f2u(got) == f2u(want));
      if (f2u(got) != f2u(want)) printf("  exp(%a) = %a, expf %a\n", x, got, want);
    } else {
      CHECK(ulp_err(got, exp((double)x)) <= 1.0);
    }
  }
  CHECK(isnan(vexp1(NAN)));
  CHECK(isnan(vexp1(-NAN)));
  CHECK(vexp1(0.0f) == 1.0f);
}

TEST(sigmoid_and_silu_special_values_are_pytorch_s) {
  CHECK(vsig1(INFINITY) == 1.0f);
  CHECK(vsig1(-INFINITY) == 0.0f);
  CHECK(vsig1(-100.0f) == 0.0f);
  CHECK(isnan(vsig1(NAN)));
  CHECK(vsilu1(INFINITY) == INFINITY);
  CHECK(isnan(vsilu1(-INFINITY)));
  CHECK(isnan(vsilu1(NAN)));
  CHECK(vsilu1(0.0f) == 0.0f);
}

TEST(tanh_and_log_special_values_are_libm_s) {
  const float tp[] = {0.0f, -0.0f, INFINITY, -INFINITY, 0.625f, -0.625f, 9.0f, 50.0f, -50.0f,
                      1e-30f, 0x1p-149f, FLT_MAX, -FLT_MAX};
  for (size_t i = 0; i < sizeof tp / sizeof tp[0]; i++) {
    float got = vtanh1(tp[i]), want = tanhf(tp[i]);
    CHECK(ulp_err(got, tanh((double)tp[i])) <= 2.0);
    if (want == 0 || fabsf(want) == 1) CHECK(f2u(got) == f2u(want));
  }
  CHECK(isnan(vtanh1(NAN)));
  const float lp[] = {0.0f, -0.0f, INFINITY, 1.0f, 0x1p-149f, 0x1p-127f, 0x1p-126f,
                      FLT_MAX, 0.7071067f, 0.7071068f, 2.0f, 1e-40f};
  for (size_t i = 0; i < sizeof lp / sizeof lp[0]; i++) {
    float got = vlog1(lp[i]), want = logf(lp[i]);
    if (isinf(want) || want == 0) {
      CHECK(f2u(got) == f2u(want));
      if (f2u(got) != f2u(want)) printf("  log(%a) = %a, logf %a\n", lp[i], got, want);
    } else {
      CHECK(ulp_err(got, log((double)lp[i])) <= 2.0);
    }
  }
  CHECK(isnan(vlog1(-1.0f)));
  CHECK(isnan(vlog1(-INFINITY)));
  CHECK(isnan(vlog1(-0x1p-149f)));
  CHECK(isnan(vlog1(NAN)));
}

TEST(results_do_not_depend_on_position_length_or_in_place) {
  enum { N = 301 };
  float in[N + 8], ref[N + 8], out[N + 8], io[N + 8];
  em_vec_f32_fn fns[5] = {em_vexp_f32, em_vsigmoid_f32, em_vsilu_f32, em_vtanh_f32,
                          em_vlog_f32};
  for (int i = 0; i < N + 8; i++) in[i] = (float)((i * 7919) % 2001 - 1000) * 0.1f + 0.0137f;
  for (int f = 0; f < 5; f++) {
    for (int i = 0; i < N + 8; i++) fns[f](&ref[i], &in[i], 1);
    for (int off = 0; off < 8; off++)
      for (int n = 0; n <= N; n += 37) {
        fns[f](out + off, in + off, n);
        for (int i = 0; i < n; i++) CHECK(f2u(out[off + i]) == f2u(ref[off + i]));
        memcpy(io, in, sizeof in);
        fns[f](io + off, io + off, n);
        for (int i = 0; i < n; i++) CHECK(f2u(io[off + i]) == f2u(ref[off + i]));
      }
  }
}

TEST(sum_is_pairwise_accurate_and_alignment_free) {
  enum { MAXN = 300007 };
  float *x = malloc((MAXN + 8) * sizeof *x);
  CHECK(x != NULL);
  if (!x) return;
  uint32_t r = 12345;
  for (int i = 0; i < MAXN + 8; i++) {
    r = r * 1664525u + 1013904223u;
    x[i] = (float)((int32_t)(r >> 8) - (1 << 23)) * 0x1p-10f; /* mixed signs */
  }
  const int64_t ns[] = {0, 1, 15, 16, 17, 255, 256, 257, 511, 4096, 65537, MAXN};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    int64_t n = ns[k];
    long double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) { exact += x[i]; mag += fabsl((long double)x[i]); }
    double got = em_vsum_f32(x, n);
    /* each element passes through at most log2(n) + 5 additions */
    double bound = (double)mag * 0x1p-53 * (log2((double)n + 1) + 5);
    CHECK(fabs((double)((long double)got - exact)) <= bound);
    if (n == 0) CHECK(got == 0);
    /* the same values one element further on give the same bits */
    memmove(x + 1, x, (size_t)n * sizeof *x);
    double again = em_vsum_f32(x + 1, n);
    CHECK(memcmp(&got, &again, sizeof got) == 0);
    memmove(x, x + 1, (size_t)n * sizeof *x);
  }
  free(x);
}

/* The library's build (the AVX2 clone on an AVX2 machine, vectorised)
** against the scalar build of the same source: the same bits, as no
** clone fuses operations or reorders them. */
TEST(vector_build_equals_scalar_build) {
  em_vec_f32_fn lib[5] = {em_vexp_f32, em_vsigmoid_f32, em_vsilu_f32, em_vtanh_f32,
                          em_vlog_f32};
  em_vec_f32_fn sca[5] = {scalar_vexp_f32, scalar_vsigmoid_f32, scalar_vsilu_f32,
                          scalar_vtanh_f32, scalar_vlog_f32};
  static float in[CHUNK], o1[CHUNK], o2[CHUNK];
  long differ = 0;
  for (uint64_t base = 0; base <= 0xffffffffull; base += (uint64_t)CHUNK * 8191) {
    for (int i = 0; i < CHUNK; i++) in[i] = tu2f((uint32_t)(base + (uint64_t)i * 8191));
    for (int f = 0; f < 5; f++) {
      lib[f](o1, in, CHUNK);
      sca[f](o2, in, CHUNK);
      for (int i = 0; i < CHUNK; i++)
        differ += f2u(o1[i]) != f2u(o2[i]) && !(o1[i] != o1[i] && o2[i] != o2[i]);
    }
  }
  CHECK(differ == 0);
  for (int i = 0; i < CHUNK; i++) in[i] = (float)(i % 977) * 0.37f - 150.0f;
  double s1 = em_vsum_f32(in, CHUNK - 3), s2 = scalar_vsum_f32(in, CHUNK - 3);
  CHECK(memcmp(&s1, &s2, sizeof s1) == 0);
}

TEST(engine_strided_equals_contiguous) {
  int64_t sizes[2] = {37, 41};
  em_tensor *t, *tt, *c;
  CHECK_OK(em_empty(2, sizes, EM_FLOAT32, em_cpu(), &t));
  float *p = em_tensor_data(t);
  for (int i = 0; i < 37 * 41; i++) p[i] = (float)(i % 613) * 0.37f - 110.0f;
  CHECK_OK(em_transpose(t, 1, 2, &tt));  /* strided */
  CHECK_OK(em_contiguous(tt, &c));
  em_ew_op ops[5] = {EM_OP_EXP, EM_OP_SIGMOID, EM_OP_SILU, EM_OP_TANH, EM_OP_LOG};
  for (int k = 0; k < 5; k++) {
    em_tensor *r1, *r2, *r1c;
    CHECK_OK(em_unary(ops[k], tt, &r1));
    CHECK_OK(em_unary(ops[k], c, &r2));
    CHECK_OK(em_contiguous(r1, &r1c));
    CHECK(memcmp(em_tensor_data(r1c), em_tensor_data(r2), 4 * 37 * 41) == 0);
    em_tensor_release(r1);
    em_tensor_release(r2);
    em_tensor_release(r1c);
  }
  em_tensor_release(t);
  em_tensor_release(tt);
  em_tensor_release(c);
}

int main(void) {
  RUN(functions_within_their_ulp_bounds_over_a_sweep);
  RUN(exp_special_values_are_expf_s);
  RUN(sigmoid_and_silu_special_values_are_pytorch_s);
  RUN(tanh_and_log_special_values_are_libm_s);
  RUN(results_do_not_depend_on_position_length_or_in_place);
  RUN(sum_is_pairwise_accurate_and_alignment_free);
  RUN(vector_build_equals_scalar_build);
  RUN(engine_strided_equals_contiguous);
  return CTEST_END();
}

/* The second build of vecmath.c for vector_build_equals_scalar_build. */
#define EMBER_NO_CLONES
#define em_vexp_f32 scalar_vexp_f32
#define em_vsigmoid_f32 scalar_vsigmoid_f32
#define em_vsilu_f32 scalar_vsilu_f32
#define em_vtanh_f32 scalar_vtanh_f32
#define em_vlog_f32 scalar_vlog_f32
#define em_vsum_f32 scalar_vsum_f32
#define em_verf_f32 scalar_verf_f32
#define em_vgelu_f32 scalar_vgelu_f32
#define em_vgelu_tanh_f32 scalar_vgelu_tanh_f32
#include "cpu/vecmath.c"
