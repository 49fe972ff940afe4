/*
** l_reduce.c -- reductions and linear algebra (issue 5): argument parsing
** for t:sum(dims, keepdim | {keepdim=, dtype=, ...}) and friends, and the
** matmul family. Every function is both a method and a T. function.
**
** Reduction arguments: (t [, dim | {dims...}] [, keepdim] [, opts]); the
** options table may also carry dim/keepdim/dtype (and per-op keys). A
** positional boolean after the dims is keepdim for every reduction.
*/
#include <math.h>
#include <string.h>

#include "l_ember.h"

typedef struct redargs {
  int ndims;              /* -1: no dim given */
  int64_t dims[EM_MAX_DIMS];
  int keepdim;
  int dtype;              /* -1 when not given */
  int opts;               /* stack index of the options table, 0 if none */
} redargs;

static void read_dims(lua_State *L, int idx, const char *op, redargs *r) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    r->dims[0] = l_checkint(L, idx, op, "dim");
    r->ndims = 1;
    return;
  }
  int len = (int)lua_objlen(L, idx);
  if (len > EM_MAX_DIMS) l_errorf(L, "%s: too many dims (%d)", op, len);
  for (int i = 1; i <= len; i++) {
    lua_rawgeti(L, idx, i);
    r->dims[i - 1] = l_checkint(L, -1, op, "dim");
    lua_pop(L, 1);
  }
  r->ndims = len;  /* {} reduces every dim, as PyTorch's dim=[] */
}

/* Parses (t, [dim|dims], [keepdim], [opts]) from stack index 2. */
static void parse_red(lua_State *L, const char *op, redargs *r, const char *const *allowed) {
  int i = 2;
  r->ndims = -1;
  r->keepdim = 0;
  r->dtype = -1;
  r->opts = 0;
  if (lua_type(L, i) == LUA_TNUMBER || (lua_istable(L, i) && !l_isopts(L, i))) {
    read_dims(L, i, op, r);
    i++;
  } else if (lua_isnil(L, i) && lua_gettop(L) > i) {
    i++;
  }
  if (lua_type(L, i) == LUA_TBOOLEAN) {
    r->keepdim = lua_toboolean(L, i);
    i++;
  }
  if (lua_istable(L, i)) {
    l_checkopts(L, i, op, allowed);
    r->opts = i;
    lua_getfield(L, i, "dim");
    if (!lua_isnil(L, -1)) {
      if (r->ndims >= 0) l_errorf(L, "%s: dim given twice", op);
      read_dims(L, lua_gettop(L), op, r);
    }
    lua_pop(L, 1);
    r->keepdim = l_optbool(L, i, "keepdim", r->keepdim);
    r->dtype = l_optdtype(L, i, op, -1);
    i++;
  }
  if (!lua_isnone(L, i) && !lua_isnil(L, i))
    l_errorf(L, "%s: unexpected argument #%d (%s)", op, i, luaL_typename(L, i));
}

static double optnum(lua_State *L, int opts, const char *key, double def, const char *op) {
  if (!opts) return def;
  lua_getfield(L, opts, key);
  double v = def;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      l_errorf(L, "%s: option %s must be a number, got %s", op, key, luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static const char *const RED_OPTS_NODT[] = {"dim", "keepdim", NULL};
static const char *const RED_OPTS_OUT[] = {"dim", "keepdim", "dtype", "out", NULL};
static const char *const RED_OPTS_NODT_OUT[] = {"dim", "keepdim", "out", NULL};

/* The out= option of a reduction: pushes it and returns it, or returns NULL
** (nothing pushed) when absent. */
static em_tensor *opt_out(lua_State *L, int opts, const char *op) {
  int outidx;
  return opts ? l_out_field(L, opts, op, &outidx) : NULL;
}

/* With out= the reduction computes in out's dtype (when the op takes a
** dtype and none was given, as PyTorch's sum(..., out=) does), then writes
** into out and returns the same Lua object. */
static int simple_reduce(lua_State *L, em_reduce_op rop, const char *op, int with_dtype) {
  em_tensor *t = l_checktensor(L, 1, op);
  redargs r;
  parse_red(L, op, &r, with_dtype ? RED_OPTS_OUT : RED_OPTS_NODT_OUT);
  em_tensor *out = opt_out(L, r.opts, op);
  if (out) {
    if (with_dtype && r.dtype < 0) r.dtype = (int)em_tensor_dtype(out);
    em_tensor *res = NULL;
    em_status st = em_reduce(rop, t, r.ndims, r.ndims > 0 ? r.dims : NULL, r.keepdim, r.dtype, &res);
    if (st == EM_OK) st = em_write_out(op, res, out);
    em_tensor_release(res);
    if (st != EM_OK) l_error(L);
    return 1;
  }
  em_tensor **box = l_newbox(L);
  if (em_reduce(rop, t, r.ndims, r.ndims > 0 ? r.dims : NULL, r.keepdim, r.dtype, box) != EM_OK)
    l_error(L);
  return 1;
}

static int l_sum(lua_State *L) { return simple_reduce(L, EM_REDUCE_SUM, "sum", 1); }
static int l_prod(lua_State *L) { return simple_reduce(L, EM_REDUCE_PROD, "prod", 1); }
static int l_mean(lua_State *L) { return simple_reduce(L, EM_REDUCE_MEAN, "mean", 1); }
static int l_amax(lua_State *L) { return simple_reduce(L, EM_REDUCE_AMAX, "amax", 0); }
static int l_amin(lua_State *L) { return simple_reduce(L, EM_REDUCE_AMIN, "amin", 0); }
static int l_all(lua_State *L) { return simple_reduce(L, EM_REDUCE_ALL, "all", 0); }
static int l_any(lua_State *L) { return simple_reduce(L, EM_REDUCE_ANY, "any", 0); }
static int l_nansum(lua_State *L) { return simple_reduce(L, EM_REDUCE_NANSUM, "nansum", 1); }
static int l_nanmean(lua_State *L) { return simple_reduce(L, EM_REDUCE_NANMEAN, "nanmean", 1); }
static int l_count_nonzero(lua_State *L) {
  return simple_reduce(L, EM_REDUCE_COUNT_NONZERO, "count_nonzero", 0);
}

/* max/min: no dim -> the value (0-d); one dim -> values, indices. */
static int max_min(lua_State *L, int is_min) {
  const char *op = is_min ? "min" : "max";
  em_tensor *t = l_checktensor(L, 1, op);
  redargs r;
  parse_red(L, op, &r, RED_OPTS_NODT);
  if (r.ndims < 0) {
    if (r.keepdim) l_errorf(L, "%s: keepdim needs a dim", op);
    em_tensor **box = l_newbox(L);
    em_status st = em_reduce(is_min ? EM_REDUCE_AMIN : EM_REDUCE_AMAX, t, 0, NULL, 0, -1, box);
    if (st != EM_OK) {
      /* PyTorch names max()/min() here, not amax() */
      const char *msg = em_last_error();
      const char *rest = strchr(msg, ':');
      return l_errorf(L, "%s()%s", op, rest ? rest : msg);
    }
    /* PyTorch's max()/min() node, not amax()'s */
    if (em_tensor_grad_fn_name(*box) &&
        em_tensor_name_grad_fn(*box, is_min ? "MinBackward1" : "MaxBackward1") != EM_OK)
      l_error(L);
    return 1;
  }
  if (r.ndims != 1) l_errorf(L, "%s: expected one dim, got %d (use amax/amin for several)", op, r.ndims);
  em_tensor **vb = l_newbox(L);
  em_tensor **ib = l_newbox(L);
  if (em_max_dim(t, r.dims[0], r.keepdim, is_min, vb, ib) != EM_OK) l_error(L);
  return 2;
}
static int l_max(lua_State *L) { return max_min(L, 0); }
static int l_min(lua_State *L) { return max_min(L, 1); }

static int arg_max_min(lua_State *L, int is_min) {
  const char *op = is_min ? "argmin" : "argmax";
  em_tensor *t = l_checktensor(L, 1, op);
  redargs r;
  parse_red(L, op, &r, RED_OPTS_NODT);
  if (r.ndims > 1) l_errorf(L, "%s: expected one dim, got %d", op, r.ndims);
  em_tensor **box = l_newbox(L);
  if (em_argmax(t, r.ndims == 1, r.ndims == 1 ? r.dims[0] : 0, r.keepdim, is_min, box) != EM_OK)
    l_error(L);
  return 1;
}
static int l_argmax(lua_State *L) { return arg_max_min(L, 0); }
static int l_argmin(lua_State *L) { return arg_max_min(L, 1); }

/* var/std's correction: `correction` (default 1), or the older boolean
** `unbiased` (true: 1, false: 0); both at once is an error (PyTorch 1.13's
** signatures take one or the other), so neither is silently dropped. */
static double correction_opt(lua_State *L, const redargs *r, const char *op) {
  double corr = 1;
  if (r->opts) {
    lua_getfield(L, r->opts, "unbiased");
    int has_unbiased = !lua_isnil(L, -1);
    if (has_unbiased) corr = lua_toboolean(L, -1) ? 1 : 0; /* a boolean: checked by the options' parser */
    lua_pop(L, 1);
    lua_getfield(L, r->opts, "correction");
    int has_correction = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (has_unbiased && has_correction)
      l_errorf(L, "%s: pass either unbiased or correction, not both", op);
    corr = optnum(L, r->opts, "correction", corr, op);
  }
  return corr;
}

static int var_std(lua_State *L, int take_sqrt) {
  const char *op = take_sqrt ? "std" : "var";
  static const char *const allowed[] = {"dim", "keepdim", "correction", "unbiased", NULL};
  em_tensor *t = l_checktensor(L, 1, op);
  redargs r;
  parse_red(L, op, &r, allowed);
  double corr = correction_opt(L, &r, op);
  em_tensor **box = l_newbox(L);
  if (em_var(t, r.ndims, r.ndims > 0 ? r.dims : NULL, corr, r.keepdim, take_sqrt, box) != EM_OK)
    l_error(L);
  return 1;
}
static int l_var(lua_State *L) { return var_std(L, 0); }
static int l_std(lua_State *L) { return var_std(L, 1); }

/* var_mean / std_mean: (var or std, mean) */
static int var_std_mean(lua_State *L, int take_sqrt) {
  const char *op = take_sqrt ? "std_mean" : "var_mean";
  static const char *const allowed[] = {"dim", "keepdim", "correction", "unbiased", NULL};
  em_tensor *t = l_checktensor(L, 1, op);
  redargs r;
  parse_red(L, op, &r, allowed);
  double corr = correction_opt(L, &r, op);
  em_tensor **vb = l_newbox(L);
  em_tensor **mb = l_newbox(L);
  if (em_var_mean(t, r.ndims, r.ndims > 0 ? r.dims : NULL, corr, r.keepdim, take_sqrt, vb,
                  mb) != EM_OK)
    l_error(L);
  return 2;
}
static int l_var_mean(lua_State *L) { return var_std_mean(L, 0); }
static int l_std_mean(lua_State *L) { return var_std_mean(L, 1); }

/* median/nanmedian: no dim -> the value; a dim -> values, indices */
static int median_impl(lua_State *L, int ignore_nan) {
  const char *op = ignore_nan ? "nanmedian" : "median";
  em_tensor *t = l_checktensor(L, 1, op);
  redargs r;
  parse_red(L, op, &r, RED_OPTS_NODT);
  if (r.ndims > 1) l_errorf(L, "%s: expected one dim, got %d", op, r.ndims);
  if (r.ndims < 1) {
    em_tensor **box = l_newbox(L);
    if (em_median(t, 0, 0, 0, ignore_nan, box, NULL) != EM_OK) l_error(L);
    return 1;
  }
  em_tensor **vb = l_newbox(L);
  em_tensor **ib = l_newbox(L);
  if (em_median(t, 1, r.dims[0], r.keepdim, ignore_nan, vb, ib) != EM_OK) l_error(L);
  return 2;
}
static int l_median(lua_State *L) { return median_impl(L, 0); }
static int l_nanmedian(lua_State *L) { return median_impl(L, 1); }

/* kthvalue(k, [dim=-1], [keepdim], [{dim=, keepdim=}]) -> values, indices */
static int l_kthvalue(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "kthvalue");
  int64_t k = l_checkint(L, 2, "kthvalue", "k");
  lua_remove(L, 2);
  redargs r;
  parse_red(L, "kthvalue", &r, RED_OPTS_NODT);
  if (r.ndims > 1) l_errorf(L, "kthvalue: expected one dim, got %d", r.ndims);
  em_tensor **vb = l_newbox(L);
  em_tensor **ib = l_newbox(L);
  if (em_kthvalue(t, k, r.ndims == 1 ? r.dims[0] : -1, r.keepdim, vb, ib) != EM_OK) l_error(L);
  return 2;
}

/* p as a number, "fro", "inf"/"-inf" (math.huge works too) */
static double check_p(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER) return lua_tonumber(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING) {
    const char *s = lua_tostring(L, idx);
    if (strcmp(s, "fro") == 0) return 2;
    if (strcmp(s, "inf") == 0) return INFINITY;
    if (strcmp(s, "-inf") == 0) return -INFINITY;
    l_errorf(L, "norm: unsupported p '%s' (expected a number, 'fro', 'inf' or '-inf')", s);
  }
  l_errorf(L, "norm: p must be a number or 'fro', got %s", luaL_typename(L, idx));
  return 2;
}

/* norm([p], [dim], [keepdim], [{p=, dim=, keepdim=, dtype=}]) */
static int l_norm(lua_State *L) {
  static const char *const allowed[] = {"p", "dim", "keepdim", "dtype", NULL};
  em_tensor *t = l_checktensor(L, 1, "norm");
  double p = 2;
  if (lua_type(L, 2) == LUA_TNUMBER || lua_type(L, 2) == LUA_TSTRING) {
    p = check_p(L, 2);
    lua_remove(L, 2);
  } else if (lua_isnil(L, 2) && lua_gettop(L) > 2) {
    lua_remove(L, 2);
  }
  redargs r;
  parse_red(L, "norm", &r, allowed);
  if (r.opts) {
    lua_getfield(L, r.opts, "p");
    if (!lua_isnil(L, -1)) p = check_p(L, lua_gettop(L));
    lua_pop(L, 1);
  }
  em_tensor **box = l_newbox(L);
  if (em_norm(t, p, r.ndims, r.ndims > 0 ? r.dims : NULL, r.keepdim, r.dtype, box) != EM_OK)
    l_error(L);
  return 1;
}

static int l_logsumexp(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "logsumexp");
  redargs r;
  parse_red(L, "logsumexp", &r, RED_OPTS_NODT);
  em_tensor **box = l_newbox(L);
  if (em_logsumexp(t, r.ndims, r.ndims > 0 ? r.dims : NULL, r.keepdim, box) != EM_OK)
    l_error(L);
  return 1;
}

/* (t, dim, [opts]) for ops whose dim is required: one dim only. With
** with_out the options may hold out (*opts: the table's index, else 0). */
static int64_t one_dim(lua_State *L, const char *op, int *dtype, int with_out, int *optsidx) {
  static const char *const allowed[] = {"dim", "dtype", NULL};
  static const char *const allowed_out[] = {"dim", "dtype", "out", NULL};
  int64_t dim = 0;
  int have = 0, opts = 0;
  if (optsidx) *optsidx = 0;
  if (lua_type(L, 2) == LUA_TNUMBER) { dim = l_checkint(L, 2, op, "dim"); have = 1; opts = 3; }
  else opts = 2;
  if (lua_istable(L, opts)) {
    l_checkopts(L, opts, op, with_out ? allowed_out : allowed);
    lua_getfield(L, opts, "dim");
    if (!lua_isnil(L, -1)) { dim = l_checkint(L, -1, op, "dim"); have = 1; }
    lua_pop(L, 1);
    *dtype = l_optdtype(L, opts, op, -1);
    if (optsidx) *optsidx = opts;
  } else if (!lua_isnoneornil(L, opts)) {
    l_errorf(L, "%s: unexpected argument #%d (%s)", op, opts, luaL_typename(L, opts));
  }
  if (!have) l_errorf(L, "%s: the dim argument is required", op);
  return dim;
}

static int softmax_impl(lua_State *L, int log) {
  const char *op = log ? "log_softmax" : "softmax";
  em_tensor *t = l_checktensor(L, 1, op);
  int dtype = -1;
  int64_t dim = one_dim(L, op, &dtype, 0, NULL);
  em_tensor **box = l_newbox(L);
  if (em_softmax(t, dim, log, dtype, box) != EM_OK) l_error(L);
  return 1;
}
static int l_softmax(lua_State *L) { return softmax_impl(L, 0); }
static int l_log_softmax(lua_State *L) { return softmax_impl(L, 1); }

/* cumsum/cumprod; with out= (and no dtype) the scan runs in out's dtype,
** as PyTorch's cumsum(..., out=) does, then out is written and returned */
static int cum_impl(lua_State *L, int prod) {
  const char *op = prod ? "cumprod" : "cumsum";
  em_tensor *t = l_checktensor(L, 1, op);
  int dtype = -1, opts = 0, outidx = 0;
  int64_t dim = one_dim(L, op, &dtype, 1, &opts);
  em_tensor *out = opts ? l_out_field(L, opts, op, &outidx) : NULL;
  if (out && dtype < 0) dtype = (int)em_tensor_dtype(out);
  em_tensor **box = l_newbox(L);
  if (em_cumulative(t, dim, prod, dtype, box) != EM_OK) l_error(L);
  return l_out_result(L, box, out, outidx, op);
}
static int l_cumsum(lua_State *L) { return cum_impl(L, 0); }

/* cummax/cummin; out = {values, indices}: values of the input's dtype,
** indices int64 (exactly, as PyTorch), each written and both returned */
static int cumext_impl(lua_State *L, int is_min) {
  const char *op = is_min ? "cummin" : "cummax";
  em_tensor *t = l_checktensor(L, 1, op);
  int dtype = -1, opts = 0, vidx = 0;
  int64_t dim = one_dim(L, op, &dtype, 1, &opts);
  if (dtype >= 0) l_errorf(L, "%s: takes no dtype", op);
  em_tensor *vout = NULL, *iout = NULL;
  if (opts) {
    lua_getfield(L, opts, "out");
    if (!lua_isnil(L, -1)) {
      int tab = lua_gettop(L);
      if (lua_istable(L, tab) && !l_totensor(L, tab)) {
        lua_rawgeti(L, tab, 1);
        lua_rawgeti(L, tab, 2);
        vout = l_totensor(L, tab + 1);
        iout = l_totensor(L, tab + 2);
      }
      if (!vout || !iout)
        l_errorf(L, "%s: expected option 'out' to be a table of two tensors {values, indices}", op);
      vidx = tab + 1;
    } else {
      lua_pop(L, 1);
    }
  }
  em_tensor **vb = l_newbox(L);
  em_tensor **ib = l_newbox(L);
  if (em_cumextreme(t, dim, is_min, vb, ib) != EM_OK) l_error(L);
  if (!vout) return 2;
  em_status st = em_write_out(op, *vb, vout);
  if (st == EM_OK) st = em_write_out(op, *ib, iout);
  if (st != EM_OK) l_error(L);
  lua_pushvalue(L, vidx);
  lua_pushvalue(L, vidx + 1);
  return 2;
}
static int l_cummax(lua_State *L) { return cumext_impl(L, 0); }
static int l_cummin(lua_State *L) { return cumext_impl(L, 1); }
static int l_cumprod(lua_State *L) { return cum_impl(L, 1); }

/* sort([dim=-1], [descending=false], [{dim=, descending=, stable=}]) */
/* t:sort / t:argsort ([dim], [descending] | {dim=, descending=, stable=});
** always stable, so stable is honoured whatever its value. */
static int sort_impl(lua_State *L, const char *op) {
  static const char *const allowed[] = {"dim", "descending", "stable", NULL};
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = -1;
  int desc = 0, i = 2;
  if (lua_type(L, i) == LUA_TNUMBER) dim = l_checkint(L, i++, op, "dim");
  if (lua_type(L, i) == LUA_TBOOLEAN) desc = lua_toboolean(L, i++);
  if (lua_istable(L, i)) {
    l_checkopts(L, i, op, allowed);
    lua_getfield(L, i, "dim");
    if (!lua_isnil(L, -1)) dim = l_checkint(L, -1, op, "dim");
    lua_pop(L, 1);
    desc = l_optbool(L, i, "descending", desc);
    i++;
  }
  if (!lua_isnoneornil(L, i))
    l_errorf(L, "%s: unexpected argument #%d (%s)", op, i, luaL_typename(L, i));
  em_tensor **vb = l_newbox(L);
  em_tensor **ib = l_newbox(L);
  if (em_sort(t, dim, desc, vb, ib) != EM_OK) l_error(L);
  return 2;
}
static int l_sort(lua_State *L) { return sort_impl(L, "sort"); }

/* argsort: the indices of sort */
static int l_argsort(lua_State *L) {
  int n = sort_impl(L, "argsort");
  (void)n;
  return 1;  /* the indices box is on top */
}

/* topk(k, [dim=-1], [largest=true], [sorted=true], [{dim=, largest=, sorted=}]) */
static int l_topk(lua_State *L) {
  static const char *const allowed[] = {"dim", "largest", "sorted", NULL};
  em_tensor *t = l_checktensor(L, 1, "topk");
  int64_t k = l_checkint(L, 2, "topk", "k");
  int64_t dim = -1;
  int largest = 1, i = 3;
  if (lua_type(L, i) == LUA_TNUMBER) dim = l_checkint(L, i++, "topk", "dim");
  if (lua_type(L, i) == LUA_TBOOLEAN) largest = lua_toboolean(L, i++);
  if (lua_type(L, i) == LUA_TBOOLEAN) i++;  /* sorted: results are always sorted */
  if (lua_istable(L, i)) {
    l_checkopts(L, i, "topk", allowed);
    lua_getfield(L, i, "dim");
    if (!lua_isnil(L, -1)) dim = l_checkint(L, -1, "topk", "dim");
    lua_pop(L, 1);
    largest = l_optbool(L, i, "largest", largest);
    i++;
  }
  if (!lua_isnoneornil(L, i))
    l_errorf(L, "topk: unexpected argument #%d (%s)", i, luaL_typename(L, i));
  em_tensor **vb = l_newbox(L);
  em_tensor **ib = l_newbox(L);
  if (em_topk(t, k, dim, largest, vb, ib) != EM_OK) l_error(L);
  return 2;
}

/* unique([{sorted=true, return_inverse=false, return_counts=false, dim=}]) ->
** values[, inverse][, counts] */
static int l_unique(lua_State *L) {
  static const char *const allowed[] = {"sorted", "return_inverse", "return_counts", "dim",
                                        NULL};
  em_tensor *t = l_checktensor(L, 1, "unique");
  l_checkopts(L, 2, "unique", allowed);
  int inv = l_optbool(L, 2, "return_inverse", 0);
  int cnt = l_optbool(L, 2, "return_counts", 0);
  int has_dim = 0;
  int64_t dim = 0;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "dim");
    if (!lua_isnil(L, -1)) {
      dim = l_checkint(L, -1, "unique", "dim");
      has_dim = 1;
    }
    lua_pop(L, 1);
  }
  em_tensor **vb = l_newbox(L);
  em_tensor **ib = inv ? l_newbox(L) : NULL;
  em_tensor **cb = cnt ? l_newbox(L) : NULL;
  em_status st = has_dim ? em_unique_dim(t, dim, vb, ib, cb) : em_unique(t, vb, ib, cb);
  if (st != EM_OK) l_error(L);
  return 1 + inv + cnt;
}

static int l_equal(lua_State *L) {
  l_checknomore(L, 2, "equal");
  em_tensor *a = l_checktensor(L, 1, "equal");
  em_tensor *b = l_checktensor(L, 2, "equal");
  int r;
  if (em_equal(a, b, &r) != EM_OK) l_error(L);
  lua_pushboolean(L, r);
  return 1;
}

/* (a, b, [rtol], [atol], [equal_nan], [{rtol=, atol=, equal_nan=}]) */
static void close_args(lua_State *L, const char *op, double *rtol, double *atol, int *en) {
  static const char *const allowed[] = {"rtol", "atol", "equal_nan", NULL};
  int i = 3;
  *rtol = 1e-5;
  *atol = 1e-8;
  *en = 0;
  if (lua_type(L, i) == LUA_TNUMBER) *rtol = lua_tonumber(L, i++);
  if (lua_type(L, i) == LUA_TNUMBER) *atol = lua_tonumber(L, i++);
  if (lua_type(L, i) == LUA_TBOOLEAN) *en = lua_toboolean(L, i++);
  if (lua_istable(L, i)) {
    l_checkopts(L, i, op, allowed);
    *rtol = optnum(L, i, "rtol", *rtol, op);
    *atol = optnum(L, i, "atol", *atol, op);
    *en = l_optbool(L, i, "equal_nan", *en);
    i++;
  }
  if (!lua_isnoneornil(L, i))
    l_errorf(L, "%s: unexpected argument #%d (%s)", op, i, luaL_typename(L, i));
}

static int l_isclose(lua_State *L) {
  em_tensor *a = l_checktensor(L, 1, "isclose");
  em_tensor *b = l_checktensor(L, 2, "isclose");
  double rtol, atol;
  int en;
  close_args(L, "isclose", &rtol, &atol, &en);
  em_tensor **box = l_newbox(L);
  if (em_isclose(a, b, rtol, atol, en, box) != EM_OK) l_error(L);
  return 1;
}

static int l_allclose(lua_State *L) {
  em_tensor *a = l_checktensor(L, 1, "allclose");
  em_tensor *b = l_checktensor(L, 2, "allclose");
  double rtol, atol;
  int en, r;
  close_args(L, "allclose", &rtol, &atol, &en);
  if (em_allclose(a, b, rtol, atol, en, &r) != EM_OK) l_error(L);
  lua_pushboolean(L, r);
  return 1;
}

/* -- Linear algebra ---------------------------------------------------------- */

typedef em_status (*binop_fn)(const em_tensor *, const em_tensor *, em_tensor **);

static int binop(lua_State *L, const char *op, binop_fn f) {
  em_tensor *a = l_checktensor(L, 1, op);
  em_tensor *b = l_checktensor(L, 2, op);
  int outidx;
  em_tensor *out = lua_gettop(L) > 2 ? l_opt_out(L, 3, op, l_out_opts, &outidx) : NULL;
  if (out && (f == em_mm || f == em_bmm || f == em_matmul)) {
    int done = 0; /* written straight into out when it already is the result */
    if (em_matmul_into(op, a, b, out, &done) != EM_OK) l_error(L);
    if (done) {
      lua_pushvalue(L, outidx);
      return 1;
    }
  }
  em_tensor **box = l_newbox(L);
  if (f(a, b, box) != EM_OK) l_error(L);
  return out ? l_out_result(L, box, out, outidx, op) : 1;
}
static int l_matmul(lua_State *L) { return binop(L, "matmul", em_matmul); }
static int l_mm(lua_State *L) { return binop(L, "mm", em_mm); }
static int l_bmm(lua_State *L) { return binop(L, "bmm", em_bmm); }
static int l_mv(lua_State *L) { return binop(L, "mv", em_mv); }
static int l_dot(lua_State *L) { return binop(L, "dot", em_dot); }
static int l_outer(lua_State *L) { return binop(L, "outer", em_outer); }

typedef em_status (*addop_fn)(const em_tensor *, const em_tensor *, const em_tensor *,
                              double, double, em_tensor **);

/* (input, m1, m2, [{beta=1, alpha=1}]) */
static int addop(lua_State *L, const char *op, addop_fn f) {
  static const char *const allowed[] = {"beta", "alpha", NULL};
  l_checknomore(L, 4, op);
  em_tensor *in = l_checktensor(L, 1, op);
  em_tensor *a = l_checktensor(L, 2, op);
  em_tensor *b = l_checktensor(L, 3, op);
  l_checkopts(L, 4, op, allowed);
  int opts = lua_istable(L, 4) ? 4 : 0;
  double beta = optnum(L, opts, "beta", 1, op), alpha = optnum(L, opts, "alpha", 1, op);
  em_dtype_kind kind = em_dtype_kindof(em_tensor_dtype(a));
  if (kind != EM_KIND_FLOAT && kind != EM_KIND_COMPLEX &&
      (beta != floor(beta) || alpha != floor(alpha)))
    l_errorf(L, "%s: for integer tensors beta and alpha must be integers, got beta=%g alpha=%g",
             op, beta, alpha);
  em_tensor **box = l_newbox(L);
  if (f(in, a, b, beta, alpha, box) != EM_OK) l_error(L);
  return 1;
}
static int l_addmm(lua_State *L) { return addop(L, "addmm", em_addmm); }
static int l_addmv(lua_State *L) { return addop(L, "addmv", em_addmv); }
static int l_baddbmm(lua_State *L) { return addop(L, "baddbmm", em_baddbmm); }

static int l_linear(lua_State *L) {
  l_checknomore(L, 3, "linear");
  em_tensor *x = l_checktensor(L, 1, "linear");
  em_tensor *w = l_checktensor(L, 2, "linear");
  em_tensor *b = lua_isnoneornil(L, 3) ? NULL : l_checktensor(L, 3, "linear");
  em_tensor **box = l_newbox(L);
  if (em_linear(x, w, b, box) != EM_OK) l_error(L);
  return 1;
}

/* T._C._strided(t, sizes, strides, offset): a view with other metadata,
** kept private for the specs (non-contiguous operands) until the view
** functions land; T.as_strided is the public spelling. */
static int l_strided_hook(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "_strided");
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int next;
  int n = l_checksizes(L, 2, "_strided", sizes, &next);
  int m = (int)lua_objlen(L, 3);
  if (m != n) l_errorf(L, "_strided: %d sizes but %d strides", n, m);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 3, i + 1);
    strides[i] = l_checkint(L, -1, "_strided", "stride");
    lua_pop(L, 1);
  }
  int64_t off = l_checkint(L, 4, "_strided", "offset");
  em_tensor **box = l_newbox(L);
  if (em_as_strided(t, n, sizes, strides, off, box) != EM_OK) l_error(L);
  return 1;
}

void l_open_reduce(lua_State *L) {
  static const luaL_Reg both[] = {
      {"sum", l_sum}, {"prod", l_prod}, {"mean", l_mean}, {"amax", l_amax},
      {"amin", l_amin}, {"all", l_all}, {"any", l_any}, {"max", l_max}, {"min", l_min},
      {"nansum", l_nansum}, {"nanmean", l_nanmean}, {"count_nonzero", l_count_nonzero},
      {"var_mean", l_var_mean}, {"std_mean", l_std_mean}, {"median", l_median},
      {"nanmedian", l_nanmedian}, {"kthvalue", l_kthvalue}, {"cummax", l_cummax},
      {"cummin", l_cummin},
      {"argmax", l_argmax}, {"argmin", l_argmin}, {"var", l_var}, {"std", l_std},
      {"norm", l_norm}, {"logsumexp", l_logsumexp}, {"softmax", l_softmax},
      {"log_softmax", l_log_softmax}, {"cumsum", l_cumsum}, {"cumprod", l_cumprod},
      {"sort", l_sort}, {"argsort", l_argsort}, {"topk", l_topk}, {"unique", l_unique},
      {"equal", l_equal}, {"isclose", l_isclose}, {"allclose", l_allclose},
      {"matmul", l_matmul}, {"mm", l_mm}, {"bmm", l_bmm}, {"mv", l_mv}, {"dot", l_dot},
      {"outer", l_outer}, {"addmm", l_addmm}, {"addmv", l_addmv}, {"baddbmm", l_baddbmm},
      {NULL, NULL}};
  static const luaL_Reg fns[] = {{"linear", l_linear}, {"_strided", l_strided_hook},
                                 {NULL, NULL}};
  l_add_methods(L, both);
  l_add_functions(L, both);
  l_add_functions(L, fns);
}
