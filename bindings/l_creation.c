/*
** l_creation.c -- ranges (arange/linspace/logspace/eye), the random
** generator and its samplers (rand/randn/randint/randperm, the *_like forms,
** uniform_/normal_/exponential_/random_/bernoulli/multinomial, manual_seed
** and the generator state), and the two C helpers of the printer
** (lua/ember/print.lua): the summarised values of a tensor and exact
** number formatting.
*/
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "l_ember.h"

static double checknum(lua_State *L, int idx, const char *op, const char *what) {
  em_tensor *t = l_totensor(L, idx);
  if (t && em_tensor_ndim(t) == 0 && em_dtype_kindof(em_tensor_dtype(t)) != EM_KIND_COMPLEX) {
    double v; /* a 0-d tensor stands for its value, as in PyTorch */
    if (em_get_f64(t, 0, &v) != EM_OK) l_error(L);
    return v;
  }
  if (lua_type(L, idx) != LUA_TNUMBER)
    l_errorf(L, "%s: expected a number for %s, got %s", op, what, luaL_typename(L, idx));
  return lua_tonumber(L, idx);
}

static double optnum(lua_State *L, int idx, const char *op, const char *what, double def) {
  return lua_isnoneornil(L, idx) ? def : checknum(L, idx, op, what);
}

/* Options at idx (none, nil or a table); returns idx for the l_opt* helpers. */
static int checkopts(lua_State *L, int idx, const char *op, const char *const *allowed) {
  if (!lua_isnoneornil(L, idx) && !lua_istable(L, idx))
    l_errorf(L, "%s: expected an options table for argument #%d, got %s", op, idx,
             luaL_typename(L, idx));
  l_checkopts(L, idx, op, allowed);
  if (lua_gettop(L) > idx)
    l_errorf(L, "%s: unexpected argument #%d (%s) after the options", op, idx + 1,
             luaL_typename(L, idx + 1));
  return idx;
}

/* -- Ranges ----------------------------------------------------------------- */

/* A bound of arange at idx: a number, LuaJIT's boxed int64, or a real
** 0-d tensor (its value, of its kind, as PyTorch's Scalar arguments). */
static int is_bound(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER || l_isint64box(L, idx)) return 1;
  em_tensor *t = l_totensor(L, idx);
  if (!t || em_tensor_ndim(t) != 0) return 0;
  em_dtype_kind k = em_dtype_kindof(em_tensor_dtype(t));
  return k == EM_KIND_INT || k == EM_KIND_FLOAT;
}

/* T.arange(end), T.arange(start, end), T.arange(start, end, step), each
** with an optional trailing options table. */
static int l_arange(lua_State *L) {
  int nnum = 0;
  while (nnum < 3 && is_bound(L, nnum + 1)) nnum++;
  if (nnum == 0)
    return l_errorf(L, "arange: expected numbers (end | start, end | start, end, step), got %s",
                    luaL_typename(L, 1));
  int o = checkopts(L, nnum + 1, "arange", l_creation_opts);
  em_scalar a[3];
  int integral = 1;
  for (int i = 0; i < nnum; i++) {
    a[i] = l_value_arg(L, i + 1, "arange");
    if (a[i].kind == EM_SCALAR_FLOAT) integral = 0;
  }
  em_scalar zero = {EM_SCALAR_INT, 0, 0.0}, one = {EM_SCALAR_INT, 1, 1.0};
  em_scalar start = nnum == 1 ? zero : a[0];
  em_scalar end = nnum == 1 ? a[0] : a[1];
  em_scalar step = nnum == 3 ? a[2] : one;
  int def = integral ? EM_INT64 : (int)l_default_dtype();
  em_dtype dt = (em_dtype)l_optdtype(L, o, "arange", def);
  em_device dev = l_optdevice(L, o, "arange", em_cpu());
  em_tensor **box = l_newbox(L);
  if (em_arange(start, end, step, dt, dev, box) != EM_OK) l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

static int lin_common(lua_State *L, const char *op, int log) {
  static const char *const lin_opts[] = {"dtype", "device", "requires_grad", NULL};
  static const char *const log_opts[] = {"dtype", "device", "requires_grad", "base", NULL};
  double start = checknum(L, 1, op, "start");
  double end = checknum(L, 2, op, "end");
  int64_t steps = l_checkint(L, 3, op, "steps");
  int o = checkopts(L, 4, op, log ? log_opts : lin_opts);
  double base = 10.0;
  if (log && lua_istable(L, o)) {
    lua_getfield(L, o, "base");
    if (!lua_isnil(L, -1)) base = checknum(L, lua_gettop(L), op, "base");
    lua_pop(L, 1);
  }
  em_dtype dt = (em_dtype)l_optdtype(L, o, op, (int)l_default_dtype());
  em_device dev = l_optdevice(L, o, op, em_cpu());
  if (dt == EM_BOOL) return l_errorf(L, "%s: not implemented for 'bool'", op);
  if (!log && em_dtype_kindof(dt) == EM_KIND_INT) {
    /* the endpoints become the dtype first, as PyTorch converts them
    ** (checked: out of range raises; uint8 takes -255..-1 and wraps) */
    double *ends[2] = {&start, &end};
    for (int i = 0; i < 2; i++) {
      double v = trunc(*ends[i]);
      em_scalar s = {EM_SCALAR_FLOAT, 0, v};
      l_check_scalar_fits(L, s, dt, op);
      if (dt == EM_UINT8 && v < 0) v += 256;
      *ends[i] = v;
    }
  }
  em_tensor **box = l_newbox(L);
  /* a complex dtype: the real range in its part's dtype, imaginary parts 0
  ** (real endpoints: Lua has no complex numbers) */
  int cx = em_dtype_kindof(dt) == EM_KIND_COMPLEX;
  em_dtype rdt = dt == EM_COMPLEX128 ? EM_FLOAT64 : cx ? EM_FLOAT32 : dt;
  em_status st = log ? em_logspace(start, end, steps, base, rdt, dev, box)
                     : em_linspace(start, end, steps, rdt, dev, box);
  if (st == EM_OK && cx) {
    em_tensor *r = *box;
    *box = NULL;
    st = em_to(r, dt, dev, 0, box);
    em_tensor_release(r);
  }
  if (st != EM_OK) l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

static int l_linspace(lua_State *L) { return lin_common(L, "linspace", 0); }
static int l_logspace(lua_State *L) { return lin_common(L, "logspace", 1); }

static int l_eye(lua_State *L) {
  int64_t n = l_checkint(L, 1, "eye", "n"), m = -1;
  int o = 2;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    m = l_checkint(L, 2, "eye", "m");
    if (m < 0)
      return l_errorf(L, "eye: m must be greater or equal to 0, got %lld", (long long)m);
    o = 3;
  }
  checkopts(L, o, "eye", l_creation_opts);
  em_dtype dt = (em_dtype)l_optdtype(L, o, "eye", (int)l_default_dtype());
  em_device dev = l_optdevice(L, o, "eye", em_cpu());
  em_tensor **box = l_newbox(L);
  if (em_eye(n, m, dt, dev, box) != EM_OK) l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

/* -- The generator ---------------------------------------------------------- */

/* A seed: an integer (a Lua number, a Lua 5.4 integer, exact, or LuaJIT's
** boxed int64_t); negative seeds wrap to uint64 as in PyTorch. */
static uint64_t checkseed(lua_State *L, int idx, const char *op) {
  int64_t i;
#if LUA_VERSION_NUM >= 503
  if (lua_isinteger(L, idx)) return (uint64_t)lua_tointeger(L, idx);
#endif
  if (l_isint64box(L, idx) && l_toint64(L, idx, &i, op)) return (uint64_t)i;
  if (lua_type(L, idx) != LUA_TNUMBER)
    l_errorf(L, "%s: expected an integer seed, got %s", op, luaL_typename(L, idx));
  double v = lua_tonumber(L, idx);
  if (v != floor(v) || !(v >= -9223372036854775808.0 && v < 18446744073709551616.0))
    l_errorf(L, "%s: expected an integer seed in [-2^63, 2^64), got %s", op,
             lua_tostring(L, idx));
  return v >= 9223372036854775808.0 ? (uint64_t)v : (uint64_t)(int64_t)v;
}

/* A seed or offset back to Lua, exactly (l_pushint64) below 2^63 (T.seed()
** draws below 2^53; manual_seed takes any), as the nearest double above. */
static void pushseed(lua_State *L, uint64_t v) {
  if (v <= (uint64_t)INT64_MAX) l_pushint64(L, (int64_t)v);
  else lua_pushnumber(L, (lua_Number)v);
}

static int l_manual_seed(lua_State *L) {
  l_checknomore(L, 1, "manual_seed");
  em_manual_seed(checkseed(L, 1, "manual_seed"));
  return 0;
}

static int l_seed(lua_State *L) {
  l_checknomore(L, 0, "seed");
  pushseed(L, em_seed());
  return 1;
}

static int l_initial_seed(lua_State *L) {
  l_checknomore(L, 0, "initial_seed");
  pushseed(L, em_initial_seed());
  return 1;
}

/* The state as a Lua value: {seed = s, offset = o}. */
static int l_get_rng_state(lua_State *L) {
  l_checknomore(L, 0, "get_rng_state");
  em_rng_state s = em_get_rng_state();
  lua_createtable(L, 0, 2);
  pushseed(L, s.seed);
  lua_setfield(L, -2, "seed");
  pushseed(L, s.offset);
  lua_setfield(L, -2, "offset");
  return 1;
}

static int l_set_rng_state(lua_State *L) {
  l_checknomore(L, 1, "set_rng_state");
  if (!lua_istable(L, 1))
    return l_errorf(L, "set_rng_state: expected a state table {seed = s, offset = o} "
                    "(from get_rng_state), got %s", luaL_typename(L, 1));
  em_rng_state s;
  lua_getfield(L, 1, "seed");
  s.seed = checkseed(L, -1, "set_rng_state");
  lua_getfield(L, 1, "offset");
  int64_t off;
  if (l_toint64(L, -1, &off, "set_rng_state") && off >= 0) {
    s.offset = (uint64_t)off;
  } else {
    if (lua_type(L, -1) != LUA_TNUMBER || lua_tonumber(L, -1) < 0 ||
        lua_tonumber(L, -1) != floor(lua_tonumber(L, -1)) ||
        lua_tonumber(L, -1) >= 18446744073709551616.0)
      return l_errorf(L, "set_rng_state: state.offset must be a non-negative integer, got %s",
                      luaL_typename(L, -1));
    s.offset = (uint64_t)lua_tonumber(L, -1);
  }
  em_set_rng_state(s);
  return 0;
}

/* -- Random tensors ------------------------------------------------------------ */

typedef enum { R_RAND, R_RANDN } rand_kind;

/* A complex t: each part uniform on [0, 1) (rand), or each part normal with
** variance 1/2 so that |z|^2 has mean 1 (randn), as PyTorch's. */
static em_status fill_random(em_tensor *t, rand_kind k) {
  if (em_dtype_kindof(em_tensor_dtype(t)) == EM_KIND_COMPLEX) {
    em_tensor *rv;
    em_status st = em_view_as_real(t, &rv);
    if (st != EM_OK) return st;
    st = k == R_RAND ? em_uniform_(rv, 0.0, 1.0) : em_normal_(rv, 0.0, sqrt(0.5));
    em_tensor_release(rv);
    return st;
  }
  return k == R_RAND ? em_uniform_(t, 0.0, 1.0) : em_normal_(t, 0.0, 1.0);
}

static void check_float_dtype(lua_State *L, const char *op, em_dtype dt) {
  em_dtype_kind k = em_dtype_kindof(dt);
  if (k != EM_KIND_FLOAT && k != EM_KIND_COMPLEX)
    l_errorf(L, "%s: expected a floating-point or complex dtype, got ember.%s", op,
             em_dtype_name(dt));
}

static int make_random(lua_State *L, const char *op, rand_kind k) {
  int64_t sizes[EM_MAX_DIMS];
  int next = 1, ndim = 0;
  if (lua_isnil(L, 1) && !lua_isnone(L, 1)) l_check_no_hole(L, 1, 0, op, "a size");
  if (!lua_isnoneornil(L, 1) && !l_isopts(L, 1)) ndim = l_checksizes(L, 1, op, sizes, &next);
  int o = checkopts(L, next, op, l_creation_opts);
  em_dtype dt = (em_dtype)l_optdtype(L, o, op, (int)l_default_dtype());
  check_float_dtype(L, op, dt);
  em_device dev = l_optdevice(L, o, op, em_cpu());
  em_tensor **box = l_newbox(L);
  if (em_empty(ndim, sizes, dt, dev, box) != EM_OK || fill_random(*box, k) != EM_OK)
    l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

static int l_rand(lua_State *L) { return make_random(L, "rand", R_RAND); }
static int l_randn(lua_State *L) { return make_random(L, "randn", R_RANDN); }

static int make_random_like(lua_State *L, const char *op, rand_kind k) {
  em_tensor *src = l_checktensor(L, 1, op);
  int o = checkopts(L, 2, op, l_like_opts);
  em_dtype dt = (em_dtype)l_optdtype(L, o, op, (int)em_tensor_dtype(src));
  check_float_dtype(L, op, dt);
  em_device dev = l_optdevice(L, o, op, em_tensor_device(src));
  int contig = l_like_contiguous(L, o, op);
  em_tensor **box = l_newbox(L);
  if (em_empty_like_on(src, dt, dev, contig, box) != EM_OK || fill_random(*box, k) != EM_OK)
    l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

static int l_rand_like(lua_State *L) { return make_random_like(L, "rand_like", R_RAND); }
static int l_randn_like(lua_State *L) { return make_random_like(L, "randn_like", R_RANDN); }

/* Reads [low,] high from idx on: k numbers (1 or 2). */
static void read_bounds(lua_State *L, int idx, int k, const char *op, int64_t *low,
                        int64_t *high) {
  *low = 0;
  if (k == 2) *low = l_checkint(L, idx, op, "low");
  *high = l_checkint(L, idx + k - 1, op, "high");
}

/* T.randint([low,] high, size, opts): size must be a table or T.Size, since
** Lua has no tuples to tell it from the bounds. */
static int l_randint(lua_State *L) {
  int k = 0;
  while (lua_type(L, k + 1) == LUA_TNUMBER) k++;
  if (k < 1 || k > 2 || !lua_istable(L, k + 1) || l_isopts(L, k + 1))
    return l_errorf(L, "randint: expected ([low,] high, size[, options]) with size a "
                    "table, e.g. T.randint(0, 10, {2, 3})");
  int64_t low, high, sizes[EM_MAX_DIMS];
  read_bounds(L, 1, k, "randint", &low, &high);
  int next, ndim = l_checksizes(L, k + 1, "randint", sizes, &next);
  int o = checkopts(L, next, "randint", l_creation_opts);
  em_dtype dt = (em_dtype)l_optdtype(L, o, "randint", EM_INT64);
  em_device dev = l_optdevice(L, o, "randint", em_cpu());
  em_tensor **box = l_newbox(L);
  if (em_empty(ndim, sizes, dt, dev, box) != EM_OK || em_random_(*box, low, high) != EM_OK)
    l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

static int l_randint_like(lua_State *L) {
  em_tensor *src = l_checktensor(L, 1, "randint_like");
  int k = 0;
  while (lua_type(L, k + 2) == LUA_TNUMBER) k++;
  if (k < 1 || k > 2)
    return l_errorf(L, "randint_like: expected (tensor, [low,] high[, options])");
  int64_t low, high;
  read_bounds(L, 2, k, "randint_like", &low, &high);
  int o = checkopts(L, k + 2, "randint_like", l_like_opts);
  em_dtype dt = (em_dtype)l_optdtype(L, o, "randint_like", (int)em_tensor_dtype(src));
  em_device dev = l_optdevice(L, o, "randint_like", em_tensor_device(src));
  int contig = l_like_contiguous(L, o, "randint_like");
  em_tensor **box = l_newbox(L);
  if (em_empty_like_on(src, dt, dev, contig, box) != EM_OK ||
      em_random_(*box, low, high) != EM_OK)
    l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

static int l_randperm(lua_State *L) {
  int64_t n = l_checkint(L, 1, "randperm", "n");
  int o = checkopts(L, 2, "randperm", l_creation_opts);
  em_dtype dt = (em_dtype)l_optdtype(L, o, "randperm", EM_INT64);
  em_device dev = l_optdevice(L, o, "randperm", em_cpu());
  em_tensor **box = l_newbox(L);
  if (em_randperm(n, dt, dev, box) != EM_OK) l_error(L);
  l_apply_requires_grad(L, o, *box);
  return 1;
}

/* -- In-place samplers ------------------------------------------------------- */

static int l_uniform_(lua_State *L) {
  l_nooptions(L, 2, 3, "uniform_");
  em_tensor *t = l_checktensor(L, 1, "uniform_");
  double from = optnum(L, 2, "uniform_", "from", 0.0);
  double to = optnum(L, 3, "uniform_", "to", 1.0);
  if (em_uniform_(t, from, to) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_normal_(lua_State *L) {
  l_nooptions(L, 2, 3, "normal_");
  em_tensor *t = l_checktensor(L, 1, "normal_");
  double mean = optnum(L, 2, "normal_", "mean", 0.0);
  double std = optnum(L, 3, "normal_", "std", 1.0);
  if (em_normal_(t, mean, std) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_exponential_(lua_State *L) {
  l_nooptions(L, 2, 2, "exponential_");
  em_tensor *t = l_checktensor(L, 1, "exponential_");
  double lambd = optnum(L, 2, "exponential_", "lambd", 1.0);
  if (em_exponential_(t, lambd) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* t:random_(to) draws from [0, to); t:random_(from, to) from [from, to);
** t:random_() from [0, 2^mantissa] for floats or the dtype's range. */
static int l_random_(lua_State *L) {
  l_nooptions(L, 2, 3, "random_");
  em_tensor *t = l_checktensor(L, 1, "random_");
  int64_t low = 0, high;
  if (lua_isnoneornil(L, 2)) {
    switch (em_tensor_dtype(t)) {
      case EM_BOOL: high = 2; break;
      case EM_UINT8: high = 256; break;
      case EM_INT8: high = 128; break;
      case EM_INT16: high = 32768; break;
      case EM_INT32: high = 2147483648LL; break;
      case EM_FLOAT16: high = (1 << 11) + 1; break;
      case EM_BFLOAT16: high = (1 << 8) + 1; break;
      case EM_FLOAT32: high = (1 << 24) + 1; break;
      case EM_FLOAT64: high = (INT64_C(1) << 53) + 1; break;
      default: high = INT64_MAX; break;
    }
  } else if (lua_isnoneornil(L, 3)) {
    high = l_checkint(L, 2, "random_", "to");
  } else {
    low = l_checkint(L, 2, "random_", "from");
    high = l_checkint(L, 3, "random_", "to");
  }
  if (em_random_(t, low, high) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_bernoulli_(lua_State *L) {
  l_nooptions(L, 2, 2, "bernoulli_");
  em_tensor *t = l_checktensor(L, 1, "bernoulli_");
  em_tensor *p = l_totensor(L, 2);
  em_status st = p ? em_bernoulli_tensor_(t, p)
                   : em_bernoulli_(t, optnum(L, 2, "bernoulli_", "p", 0.5));
  if (st != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* T.bernoulli(input) draws 1 with probability input[i]; T.bernoulli(input, p)
** with the one probability p. The result has input's shape and dtype. */
static int l_bernoulli(lua_State *L) {
  l_nooptions(L, 2, 2, "bernoulli");
  em_tensor *in = l_checktensor(L, 1, "bernoulli");
  int has_p = !lua_isnoneornil(L, 2);
  double p = has_p ? checknum(L, 2, "bernoulli", "p") : 0.0;
  em_tensor **box = l_newbox(L);
  if (em_empty(em_tensor_ndim(in), em_tensor_sizes(in), em_tensor_dtype(in),
               em_tensor_device(in), box) != EM_OK)
    l_error(L);
  em_status st = has_p ? em_bernoulli_(*box, p) : em_bernoulli_tensor_(*box, in);
  if (st != EM_OK) l_error(L);
  return 1;
}

/* T.multinomial(probs, n[, replacement]) or with {replacement = true}. */
static int l_multinomial(lua_State *L) {
  static const char *const mn_opts[] = {"replacement", NULL};
  em_tensor *p = l_checktensor(L, 1, "multinomial");
  int64_t n = l_checkint(L, 2, "multinomial", "num_samples");
  int replacement = 0;
  if (lua_type(L, 3) == LUA_TBOOLEAN) replacement = lua_toboolean(L, 3);
  else if (!lua_isnoneornil(L, 3)) {
    checkopts(L, 3, "multinomial", mn_opts);
    replacement = l_optbool(L, 3, "replacement", 0);
  }
  em_tensor **box = l_newbox(L);
  if (em_multinomial(p, n, replacement, box) != EM_OK) l_error(L);
  return 1;
}

/* -- Printer helpers -------------------------------------------------------------
** C._print_values(t, edgeitems, summarize) -> the elements PyTorch's
** get_summarized_data keeps, as one flat row-major list: along every dim
** longer than 2 * edgeitems (when summarize) the first and last edgeitems
** entries. Floats come back as numbers; integers as exact decimal strings
** (int64 beyond 2^53 too); bools as "True"/"False". It reads only those
** elements, so a 10^7-element tensor costs a few dozen reads. */

static int l_print_values(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "print");
  int64_t edge = l_checkint(L, 2, "print", "edgeitems");
  int summarize = lua_toboolean(L, 3);
  int nd = em_tensor_ndim(t);
  const int64_t *sz = em_tensor_sizes(t);
  em_dtype dt = em_tensor_dtype(t);
  int kind = em_dtype_kindof(dt);
  if (em_tensor_numel(t) == 0) { lua_newtable(L); return 1; }
  /* per dim: how many kept, and the map kept-index -> real index */
  int64_t kept[EM_MAX_DIMS], head[EM_MAX_DIMS], rowstride[EM_MAX_DIMS];
  int64_t total = 1;
  for (int d = 0; d < nd; d++) {
    if (summarize && sz[d] > 2 * edge) {
      /* edgeitems = 0 keeps the whole dim, as Python's x[-0:] does */
      kept[d] = edge > 0 ? 2 * edge : sz[d];
      head[d] = edge > 0 ? edge : 0;
    } else {
      kept[d] = sz[d];
      head[d] = sz[d];
    }
    total *= kept[d];
  }
  int64_t r = 1;
  for (int d = nd - 1; d >= 0; d--) { rowstride[d] = r; r *= sz[d]; }
  lua_createtable(L, total > (1 << 24) ? (1 << 24) : (int)total, 0);
  int64_t idx[EM_MAX_DIMS] = {0};
  char buf[32];
  for (int64_t k = 0; k < total; k++) {
    int64_t pos = 0;
    for (int d = 0; d < nd; d++) {
      int64_t real = idx[d] < head[d] ? idx[d] : sz[d] - (kept[d] - idx[d]);
      pos += real * rowstride[d];
    }
    if (kind == EM_KIND_FLOAT) {
      double v;
      if (em_get_f64(t, pos, &v) != EM_OK) l_error(L);
      lua_pushnumber(L, v);
    } else {
      int64_t v;
      if (em_get_i64(t, pos, &v) != EM_OK) l_error(L);
      if (kind == EM_KIND_BOOL) lua_pushstring(L, v ? "True" : "False");
      else {
        snprintf(buf, sizeof buf, "%lld", (long long)v);
        lua_pushstring(L, buf);
      }
    }
    lua_rawseti(L, -2, (int)(k + 1));
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < kept[d]) break;
      idx[d] = 0;
    }
  }
  return 1;
}

/* C._fmt_float(v, conv, precision[, width]): Python's "{:W.Pf}" / "{:W.Pe}"
** of a double, exactly (C's printf rounds the exact binary value, as
** Python does; LuaJIT's string.format does not round ties to even). NaN
** is "nan" whatever its sign bit, as Python writes it. */
/* v as %*.*e or %*.*f (nan as "nan" in width) into buf: snprintf's count */
static int fmt_float(char *buf, size_t size, double v, int e, int width, int prec) {
  if (isnan(v)) return snprintf(buf, size, "%*s", width, "nan");
  if (e) return snprintf(buf, size, "%*.*e", width, prec, v);
  return snprintf(buf, size, "%*.*f", width, prec, v);
}

static int l_fmt_float(lua_State *L) {
  double v = luaL_checknumber(L, 1);
  const char *conv = luaL_checkstring(L, 2);
  lua_Integer p = luaL_checkinteger(L, 3);
  lua_Integer w = luaL_optinteger(L, 4, 0);
  /* Python takes any precision and width up to INT_MAX ("precision too
  ** big" past it); the string is as long as it needs to be */
  if (p < 0 || p > INT_MAX) return l_errorf(L, "print: precision %lld out of range", (long long)p);
  if (w < 0 || w > INT_MAX) return l_errorf(L, "print: width %lld out of range", (long long)w);
  int prec = (int)p, width = (int)w;
  int e = conv[0] == 'e';
  char small[512];
  int n = fmt_float(small, sizeof small, v, e, width, prec);
  if (n < 0) return l_errorf(L, "print: precision %d too big", prec);
  if ((size_t)n < sizeof small) {
    lua_pushlstring(L, small, (size_t)n);
    return 1;
  }
  /* a long one: a buffer the collector owns (nothing to free on an error) */
  char *buf = lua_newuserdata(L, (size_t)n + 1);
  fmt_float(buf, (size_t)n + 1, v, e, width, prec);
  lua_pushlstring(L, buf, (size_t)n);
  return 1;
}

void l_open_creation(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"arange", l_arange},
      {"linspace", l_linspace},
      {"logspace", l_logspace},
      {"eye", l_eye},
      {"manual_seed", l_manual_seed},
      {"seed", l_seed},
      {"initial_seed", l_initial_seed},
      {"get_rng_state", l_get_rng_state},
      {"set_rng_state", l_set_rng_state},
      {"rand", l_rand},
      {"randn", l_randn},
      {"rand_like", l_rand_like},
      {"randn_like", l_randn_like},
      {"randint", l_randint},
      {"randint_like", l_randint_like},
      {"randperm", l_randperm},
      {"bernoulli", l_bernoulli},
      {"multinomial", l_multinomial},
      {"_print_values", l_print_values},
      {"_fmt_float", l_fmt_float},
      {NULL, NULL}};
  static const luaL_Reg methods[] = {
      {"uniform_", l_uniform_},
      {"normal_", l_normal_},
      {"exponential_", l_exponential_},
      {"random_", l_random_},
      {"bernoulli_", l_bernoulli_},
      {"bernoulli", l_bernoulli},
      {"multinomial", l_multinomial},
      {NULL, NULL}};
  l_add_functions(L, fns);
  l_add_methods(L, methods);
}
