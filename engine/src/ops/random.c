/*
** ops/random.c -- the random generator and the sampling ops: uniform_,
** normal_, exponential_, random_, bernoulli_, randperm, multinomial.
** Guarantees: the generator is counter-based (Philox4x32-10 keyed by the
** 64-bit seed). An operation reserves the blocks of counters its result
** needs (offset advances by their count) and the device's kernels
** (core/kern_random.h) turn them into numbers, each element from its own
** counters. So the same seed gives the same numbers on every machine, for
** every layout of the destination and for any thread count
** (docs/random.md).
**
** There is one generator, the CPU's (PyTorch's default generator). A meta
** tensor draws nothing and leaves it untouched, as PyTorch's meta kernels
** do: the same script gives the same numbers with or without meta tensors
** in it.
*/
#include "core/kern_random.h"
#include "core/kernels.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

/* -- The generator ---------------------------------------------------------
** seed and offset are atomics: an operation reserves its counters with one
** fetch_add, so concurrent callers never share numbers. The first use
** seeds from the OS, as PyTorch's default generator does. */

static _Atomic uint64_t g_seed, g_offset;
static atomic_int g_seeded;

static uint64_t entropy_seed(void) {
  uint64_t s = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (f) {
    if (fread(&s, sizeof s, 1, f) != 1) s = 0;
    fclose(f);
  }
  if (s == 0) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    s = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&s;
  }
  return s & ((UINT64_C(1) << 53) - 1);  /* exact as a Lua number */
}

static void ensure_seeded(void) {
  if (atomic_load(&g_seeded)) return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&g_seeded, &expected, 1)) {
    atomic_store(&g_seed, entropy_seed());
    atomic_store(&g_offset, 0);
  }
}

void em_manual_seed(uint64_t seed) {
  atomic_store(&g_seeded, 1);
  atomic_store(&g_seed, seed);
  atomic_store(&g_offset, 0);
}

uint64_t em_initial_seed(void) {
  ensure_seeded();
  return atomic_load(&g_seed);
}

uint64_t em_seed(void) {
  uint64_t s = entropy_seed();
  em_manual_seed(s);
  return s;
}

em_rng_state em_get_rng_state(void) {
  ensure_seeded();
  em_rng_state s = {atomic_load(&g_seed), atomic_load(&g_offset)};
  return s;
}

void em_set_rng_state(em_rng_state s) {
  atomic_store(&g_seeded, 1);
  atomic_store(&g_seed, s.seed);
  atomic_store(&g_offset, s.offset);
}

/* Reserves n counters for an operation on dev: the key and the first of
** them. On a device without data nothing is drawn and the generator is
** left as it is (see the top). */
static void reserve(em_device dev, uint64_t n, em_draw *d) {
  memset(d, 0, sizeof *d);
  if (!em_device_has_data(dev)) return;
  ensure_seeded();
  uint64_t seed = atomic_load(&g_seed);
  d->key[0] = (uint32_t)seed;
  d->key[1] = (uint32_t)(seed >> 32);
  d->offset = atomic_fetch_add(&g_offset, n);
}

void em_random_reserve(em_device dev, uint64_t n, em_draw *d) { reserve(dev, n, d); }

/* -- The in-place samplers --------------------------------------------------
** Element i of the destination (row-major, 0-based) uses lane
** i % em_sample_lanes of block offset + i / lanes. The kernel fills a
** contiguous tensor: the destination itself, else a contiguous temporary
** copied in (so element i is always row-major i). */

/* Runs the sampler over the contiguous tensor t. */
static em_status sample_contiguous(const char *op, const em_kernels *k, em_tensor *t,
                                   const em_sample *s) {
  em_iter it;
  const em_tensor *ops[1] = {t};
  em_status st = em_iter_build(&it, op, 1, ops, t->ndim, t->sizes, false);
  if (st == EM_OK) k->random->sample(&it, t->dtype, s);
  return st;
}

em_status em_uniform_draw_(em_tensor *t, const em_draw *d) {
  const em_kernels *k;
  em_status st = em_kernels_check("uniform", t->storage->device, &k);
  if (st != EM_OK) return st;
  if (t->dtype != EM_FLOAT32 || !em_tensor_is_contiguous(t))
    return em_fail(EM_E_VALUE, "uniform: a draw's uniforms fill a contiguous float32 tensor");
  em_sample s;
  memset(&s, 0, sizeof s);
  s.kind = EM_SAMPLE_UNIFORM;
  s.draw = *d;
  s.a = 0;
  s.b = 1;
  s.range = 1;
  if (em_tensor_numel(t) == 0) return EM_OK;
  st = sample_contiguous("uniform", k, t, &s);
  if (st == EM_OK) em_storage_bump_version(t->storage);
  return st;
}

static em_status sample_into_nograd(const char *op, em_tensor *t, em_sample *s) {
  em_status st = em_check_writable(op, t);
  const em_kernels *k;
  em_device dev = t->storage->device;
  if (st == EM_OK) st = em_kernels_check(op, dev, &k);
  if (st != EM_OK) return st;
  int64_t n = em_tensor_numel(t);
  uint64_t lanes = (uint64_t)em_sample_lanes(s->kind, t->dtype);
  reserve(dev, ((uint64_t)n + lanes - 1) / lanes, &s->draw);
  if (n == 0) return EM_OK;
  if (em_tensor_is_contiguous(t)) {
    st = sample_contiguous(op, k, t, s);
    if (st == EM_OK) em_storage_bump_version(t->storage);
    return st;
  }
  em_tensor *tmp;
  st = em_empty(t->ndim, t->sizes, t->dtype, dev, &tmp);
  if (st != EM_OK) return st;
  st = sample_contiguous(op, k, tmp, s);
  if (st == EM_OK) st = em_copy_(t, tmp);
  em_tensor_release(tmp);
  return st;
}

static em_status need_float(const char *op, const em_tensor *t) {
  if (em_dtype_kindof(t->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: expects a floating-point tensor, got ember.%s", op,
                   em_dtype_name(t->dtype));
  return EM_OK;
}

/* Autograd: filling a leaf that requires grad is an error in grad mode; a
** filled non-leaf gets no gradient from its old values (autograd.h). */
static em_status ag_fill(const char *op, em_tensor *t, int on) {
  if (!on || !t->requires_grad || em_dtype_kindof(t->dtype) != EM_KIND_FLOAT) return EM_OK;
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = "FillBackward0";
  const em_tensor *in[1] = {t};
  return em_ag_record(EM_AG_OVERWRITE, 1, in, 1, &t, &p);
}

static em_status sample_into(const char *op, em_tensor *t, em_sample *s) {
  int on = em_grad_enabled();
  em_status st = on && (t->requires_grad || t->nograd_view) ? em_ag_check_inplace(op, t) : EM_OK;
  if (st == EM_OK) st = sample_into_nograd(op, t, s);
  if (st == EM_OK) st = ag_fill(op, t, on);
  return st;
}

em_status em_uniform_(em_tensor *t, double from, double to) {
  em_status st = need_float("uniform_", t);
  if (st != EM_OK) return st;
  if (!isfinite(from) || !isfinite(to))
    return em_fail(EM_E_VALUE, "uniform_: from and to must be finite, got from=%g, to=%g",
                   from, to);
  if (from > to)
    return em_fail(EM_E_VALUE,
                   "uniform_: expects to return a [from, to) range, but found "
                   "from=%g > to=%g", from, to);
  /* PyTorch's: bounds past the dtype's finite range are refused (they would
  ** fill with inf) */
  double lim = em_dtype_float_max(t->dtype);
  if (from < -lim || from > lim || to < -lim || to > lim)
    return em_fail(EM_E_VALUE, "uniform_: %s=%g is out of bounds for %s",
                   from < -lim || from > lim ? "from" : "to", from < -lim || from > lim ? from : to,
                   em_dtype_name(t->dtype));
  em_sample s = {0};
  s.kind = EM_SAMPLE_UNIFORM;
  s.a = from;
  s.b = to;
  return sample_into("uniform_", t, &s);
}

em_status em_normal_(em_tensor *t, double mean, double std) {
  em_status st = need_float("normal_", t);
  if (st != EM_OK) return st;
  if (!(std >= 0.0))
    return em_fail(EM_E_VALUE, "normal_: expects std >= 0.0, but found std %g", std);
  em_sample s = {0};
  s.kind = EM_SAMPLE_NORMAL;
  s.a = mean;
  s.b = std;
  return sample_into("normal_", t, &s);
}

em_status em_exponential_(em_tensor *t, double lambd) {
  em_status st = need_float("exponential_", t);
  if (st != EM_OK) return st;
  if (!(lambd >= 0.0))
    return em_fail(EM_E_VALUE, "exponential_: expects lambda >= 0.0, but found lambda=%g",
                   lambd);
  em_sample s = {0};
  s.kind = EM_SAMPLE_EXPONENTIAL;
  s.a = lambd;
  return sample_into("exponential_", t, &s);
}

/* The integers exactly representable in dt, as PyTorch bounds random_. */
static void dtype_int_range(em_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
    case EM_BOOL: *lo = 0; *hi = 1; break;
    case EM_UINT8: *lo = 0; *hi = UINT8_MAX; break;
    case EM_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case EM_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case EM_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case EM_FLOAT16: *lo = -(1 << 11); *hi = 1 << 11; break;
    case EM_BFLOAT16: *lo = -(1 << 8); *hi = 1 << 8; break;
    case EM_FLOAT32: *lo = -(1 << 24); *hi = 1 << 24; break;
    case EM_FLOAT64: *lo = -(INT64_C(1) << 53); *hi = INT64_C(1) << 53; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
  }
}

em_status em_random_(em_tensor *t, int64_t low, int64_t high) {
  if (low >= high)
    return em_fail(EM_E_VALUE,
                   "random_: expects 'from' to be less than 'to', but got from=%lld "
                   ">= to=%lld", (long long)low, (long long)high);
  int64_t lo, hi;
  dtype_int_range(t->dtype, &lo, &hi);
  if (low < lo || low > hi)
    return em_fail(EM_E_VALUE, "random_: from=%lld is out of bounds for ember.%s",
                   (long long)low, em_dtype_name(t->dtype));
  if (high - 1 > hi)
    return em_fail(EM_E_VALUE, "random_: to - 1 = %lld is out of bounds for ember.%s",
                   (long long)(high - 1), em_dtype_name(t->dtype));
  em_sample s = {0};
  s.kind = EM_SAMPLE_RANDOM;
  s.low = low;
  s.range = (uint64_t)high - (uint64_t)low;
  return sample_into("random_", t, &s);
}

em_status em_bernoulli_(em_tensor *t, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    return em_fail(EM_E_VALUE, "bernoulli_: expects p to be in [0, 1], but got p=%g", p);
  em_sample s = {0};
  s.kind = EM_SAMPLE_BERNOULLI;
  s.a = p;
  return sample_into("bernoulli_", t, &s);
}

/* -- bernoulli with a tensor of probabilities --------------------------------
** u (float64 uniforms, one per element of t) is compared with p broadcast
** to t's shape; the 0/1 result is cast into t. */

static em_status bernoulli_tensor_nograd(em_tensor *t, const em_tensor *p) {
  if (em_dtype_kindof(p->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "bernoulli_: expects floating-point probabilities, got ember.%s",
                   em_dtype_name(p->dtype));
  em_status st = em_check_writable("bernoulli_", t);
  if (st != EM_OK) return st;
  em_device dev = t->storage->device;
  st = em_same_device_check("bernoulli_", dev, p->storage->device);
  if (st != EM_OK) return st;
  const em_kernels *k;
  st = em_kernels_check("bernoulli_", dev, &k);
  if (st != EM_OK) return st;
  em_tensor *pd = NULL, *u = NULL;
  st = em_to(p, EM_FLOAT64, dev, 0, &pd);
  if (st != EM_OK) return st;
  /* check every probability before writing anything */
  em_iter it;
  const em_tensor *pops[1] = {pd};
  st = em_iter_build(&it, "bernoulli_", 1, pops, pd->ndim, pd->sizes, false);
  if (st != EM_OK) goto done;
  double bad = 0;
  if (k->random->prob_check(&it, &bad)) {
    st = isnan(bad) ? em_fail(EM_E_VALUE, "bernoulli_: expects all probabilities to be in [0, 1], got nan")
                    : em_fail(EM_E_VALUE, "bernoulli_: expects all probabilities to be in [0, 1], got %g",
                              bad);
    goto done;
  }
  st = em_empty(t->ndim, t->sizes, EM_FLOAT64, dev, &u);
  if (st != EM_OK) goto done;
  const em_tensor *ops[2] = {u, pd};
  st = em_iter_build(&it, "bernoulli_", 2, ops, t->ndim, t->sizes, false);
  if (st != EM_OK) goto done;
  st = em_uniform_(u, 0.0, 1.0);
  if (st != EM_OK) goto done;
  k->random->bernoulli_lt(&it);
  st = em_copy_(t, u);
done:
  em_tensor_release(pd);
  em_tensor_release(u);
  return st;
}

em_status em_bernoulli_tensor_(em_tensor *t, const em_tensor *p) {
  int on = em_ag_pause();
  em_status st = on && (t->requires_grad || t->nograd_view) ? em_ag_check_inplace("bernoulli_", t) : EM_OK;
  if (st == EM_OK) st = bernoulli_tensor_nograd(t, p);
  em_ag_resume(on);
  if (st == EM_OK) st = ag_fill("bernoulli_", t, on);
  return st;
}

/* -- randperm ----------------------------------------------------------------
** n counters, one per Fisher-Yates step (core/kern_random.h); the int64
** permutation is cast to dt. */

em_status em_randperm(int64_t n, em_dtype dt, em_device dev, em_tensor **out) {
  if (n < 0)
    return em_fail(EM_E_VALUE, "randperm: n must be non-negative, got %lld", (long long)n);
  int64_t lo, hi;
  dtype_int_range(dt, &lo, &hi);
  if (dt == EM_BOOL ? n > 1 : n > hi)
    return em_fail(EM_E_VALUE, "randperm: n = %lld is too large for ember.%s",
                   (long long)n, em_dtype_name(dt));
  const em_kernels *k;
  em_status st = em_kernels_check("randperm", dev, &k);
  if (st != EM_OK) return st;
  em_tensor *perm;
  st = em_empty(1, &n, EM_INT64, dev, &perm);
  if (st != EM_OK) return st;
  em_draw d;
  reserve(dev, (uint64_t)n, &d);
  k->random->randperm(perm, &d);
  if (dt == EM_INT64) { *out = perm; return EM_OK; }
  st = em_to(perm, dt, dev, 0, out);
  em_tensor_release(perm);
  return st;
}

/* -- multinomial ------------------------------------------------------------
** The rows are read from a contiguous float64 copy and checked before
** anything is drawn; then rows * n counters (with replacement) or
** rows * cats (without) are reserved (core/kern_random.h has the
** algorithms). */

em_status em_multinomial(const em_tensor *probs, int64_t n, int replacement,
                         em_tensor **out) {
  if (probs->ndim != 1 && probs->ndim != 2)
    return em_fail(EM_E_VALUE, "multinomial: prob_dist must be 1 or 2 dim, got %d dims",
                   probs->ndim);
  if (em_dtype_kindof(probs->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE,
                   "multinomial: only supports floating-point dtypes for input, got ember.%s",
                   em_dtype_name(probs->dtype));
  if (n <= 0)
    return em_fail(EM_E_VALUE, "multinomial: cannot sample n_sample <= 0 samples (got %lld)",
                   (long long)n);
  int64_t rows = probs->ndim == 2 ? probs->sizes[0] : 1;
  int64_t cats = probs->sizes[probs->ndim - 1];
  if (cats == 0)
    return em_fail(EM_E_VALUE, "multinomial: the number of categories cannot be zero");
  if (!replacement && n > cats)
    return em_fail(EM_E_VALUE,
                   "multinomial: cannot sample n_sample (%lld) > prob_dist.size(-1) (%lld) "
                   "samples without replacement", (long long)n, (long long)cats);
  em_device dev = probs->storage->device;
  const em_kernels *k;
  em_status st = em_kernels_check("multinomial", dev, &k);
  if (st != EM_OK) return st;
  em_tensor *p64 = NULL, *pd = NULL, *res = NULL;
  st = em_to(probs, EM_FLOAT64, dev, 0, &p64);
  if (st == EM_OK) st = em_contiguous(p64, &pd);
  em_tensor_release(p64);
  if (st != EM_OK) return st;
  int64_t osz[2] = {rows, n};
  st = probs->ndim == 2 ? em_empty(2, osz, EM_INT64, dev, &res)
                        : em_empty(1, &n, EM_INT64, dev, &res);
  if (st != EM_OK) goto fail;
  switch (k->random->multinomial_check(pd)) {
    case EM_PROBS_OK: break;
    case EM_PROBS_BAD_VALUE:
      st = em_fail(EM_E_VALUE, "multinomial: probability tensor contains either "
                   "`inf`, `nan` or element < 0");
      goto fail;
    case EM_PROBS_ZERO_SUM:
      st = em_fail(EM_E_VALUE, "multinomial: invalid multinomial distribution "
                   "(sum of probabilities <= 0)");
      goto fail;
  }
  em_draw d;
  reserve(dev, (uint64_t)(rows * (replacement ? n : cats)), &d);
  st = k->random->multinomial(pd, res, replacement, &d);
  if (st != EM_OK) goto fail;
  em_tensor_release(pd);
  *out = res;
  return EM_OK;
fail:
  em_tensor_release(pd);
  em_tensor_release(res);
  return st;
}
