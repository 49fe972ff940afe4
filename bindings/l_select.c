/*
** l_select.c -- the index family and assembling: index_select/gather/
** scatter/put_/masked ops/nonzero/where, cat/stack/split/chunk/
** tensor_split/unbind/repeat/tile/repeat_interleave/roll (issue 4).
**
** Arguments are checked here; dims, positions and index values stay
** 1-based all the way into the engine. Results that are lists of tensors
** (split, chunk, unbind, nonzero{as_tuple}) are Lua arrays whose boxes are
** made before the engine runs, so no engine reference is ever held across
** a Lua allocation. Scratch arrays live in userdata (collected on error).
*/
#include <math.h>
#include <string.h>

#include "l_ember.h"

/* -- Argument helpers ---------------------------------------------------------- */

/* A dim at idx: a number, or an options table with `dim`, or def when
** absent. */
static int64_t opt_dim(lua_State *L, int idx, const char *op, int64_t def) {
  if (lua_type(L, idx) == LUA_TNUMBER) return l_checkint(L, idx, op, "dim");
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "dim");
    int64_t d = lua_isnil(L, -1) ? def : l_checkint(L, lua_gettop(L), op, "dim");
    lua_pop(L, 1);
    return d;
  }
  if (!lua_isnoneornil(L, idx))
    l_errorf(L, "%s: expected a dim (an integer) for argument #%d, got %s", op, idx,
             luaL_typename(L, idx));
  return def;
}

/* A fill value: a number, a boolean, or a 0-d tensor (read as a scalar of
** its kind). */
em_scalar l_value_arg(lua_State *L, int idx, const char *op) {
  em_tensor *v = l_totensor(L, idx);
  if (!v) return l_checkscalar(L, idx, op);
  if (em_tensor_ndim(v) != 0)
    l_errorf(L, "%s: only supports a 0-dimensional value tensor, but got one with "
             "%d dimensions", op, em_tensor_ndim(v));
  em_scalar s = {EM_SCALAR_INT, 0, 0.0};
  em_dtype dt = em_tensor_dtype(v);
  if (em_dtype_kindof(dt) == EM_KIND_COMPLEX) {
    /* a scalar holds no imaginary part: only a complex value whose
    ** imaginary part is 0 reaches here as its real part (PyTorch's checked
    ** conversion of a complex Scalar to a real dtype refuses the others) */
    double z[2];
    if (em_get_complex(v, 0, z) != EM_OK) l_error(L);
    if (z[1] != 0)
      l_errorf(L, "%s: value cannot be converted to a real dtype without overflow "
               "(a complex value with imaginary part %g)", op, z[1]);
    s.kind = EM_SCALAR_FLOAT;
    s.f = z[0];
  } else if (em_dtype_kindof(dt) == EM_KIND_FLOAT) {
    s.kind = EM_SCALAR_FLOAT;
    if (em_get_f64(v, 0, &s.f) != EM_OK) l_error(L);
  } else {
    s.kind = dt == EM_BOOL ? EM_SCALAR_BOOL : EM_SCALAR_INT;
    if (em_get_i64(v, 0, &s.i) != EM_OK) l_error(L);
    s.f = (double)s.i;
  }
  return s;
}

/* The tensors of a Lua array at idx, in a userdata scratch array. */
static const em_tensor **tensor_list(lua_State *L, int idx, const char *op, int64_t *n) {
  if (!lua_istable(L, idx) || l_totensor(L, idx))
    l_errorf(L, "%s: expected a table of tensors for argument #%d, got %s", op, idx,
             l_totensor(L, idx) ? "a tensor" : luaL_typename(L, idx));
  int len = (int)lua_objlen(L, idx);
  const em_tensor **arr = lua_newuserdata(L, sizeof(em_tensor *) * (size_t)(len ? len : 1));
  for (int i = 1; i <= len; i++) {
    lua_rawgeti(L, idx, i);
    arr[i - 1] = l_totensor(L, -1);
    if (!arr[i - 1])
      l_errorf(L, "%s: expected a tensor at entry %d of the list, got %s", op, i,
               luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  *n = len;
  return arr;
}

/* Integers from a number (one), a table of numbers, or varargs from idx.
** Returns the count. */
static int int_list(lua_State *L, int idx, const char *op, const char *what,
                    int64_t *out, int max) {
  if (lua_istable(L, idx) && !l_totensor(L, idx)) {
    if (l_isoptions(L, idx)) l_checknomore(L, idx - 1, op);
    int len = (int)lua_objlen(L, idx);
    if (len > max) l_errorf(L, "%s: at most %d %s are supported", op, max, what);
    for (int i = 1; i <= len; i++) {
      lua_rawgeti(L, idx, i);
      out[i - 1] = l_checkint_at(L, -1, op, what, i);
      lua_pop(L, 1);
    }
    return len;
  }
  int n = 0;
  while (lua_type(L, idx + n) == LUA_TNUMBER) {
    if (n == max) l_errorf(L, "%s: at most %d %s are supported", op, max, what);
    out[n] = l_checkint_at(L, idx + n, op, what, n + 1);
    n++;
  }
  l_check_no_hole(L, idx, n, op, what);
  return n;
}

/* A userdata scratch array for n piece sizes (n bounded: each piece
** becomes a Lua value). */
static int64_t *sizes_buf(lua_State *L, int64_t n, const char *op) {
  if (n > (1 << 30)) l_errorf(L, "%s: too many pieces (%lld) for a Lua array", op, (long long)n);
  return lua_newuserdata(L, sizeof(int64_t) * (size_t)(n ? n : 1));
}

/* Makes a Lua array of n fresh boxes on the stack top; returns a userdata
** scratch array of n em_tensor* (below it) for the engine to fill. */
static em_tensor **result_list(lua_State *L, int64_t n, em_tensor ****boxes,
                               const char *op) {
  if (n > (1 << 30))
    l_errorf(L, "%s: too many pieces (%lld) for a Lua array", op, (long long)n);
  em_tensor **outs = lua_newuserdata(L, sizeof(em_tensor *) * (size_t)(n ? n : 1));
  em_tensor ***bx = lua_newuserdata(L, sizeof(em_tensor **) * (size_t)(n ? n : 1));
  lua_createtable(L, (int)n, 0);
  for (int64_t i = 0; i < n; i++) {
    bx[i] = l_newbox(L);
    lua_rawseti(L, -2, (int)(i + 1));
    outs[i] = NULL;
  }
  *boxes = bx;
  return outs;
}

/* Moves the engine's outputs into their boxes (no Lua allocation). */
static void fill_list(em_tensor **outs, em_tensor ***boxes, int64_t n) {
  for (int64_t i = 0; i < n; i++) *boxes[i] = outs[i];
}

static em_scatter_mode parse_reduce(lua_State *L, const char *name, const char *op, int scatter) {
  if (scatter) {
    if (strcmp(name, "add") == 0) return EM_SCATTER_SUM;
    if (strcmp(name, "multiply") == 0) return EM_SCATTER_PROD;
    l_errorf(L, "%s: reduce argument must be either 'add' or 'multiply', got '%s'", op,
             name);
  }
  if (strcmp(name, "sum") == 0) return EM_SCATTER_SUM;
  if (strcmp(name, "prod") == 0) return EM_SCATTER_PROD;
  if (strcmp(name, "mean") == 0) return EM_SCATTER_MEAN;
  if (strcmp(name, "amax") == 0) return EM_SCATTER_AMAX;
  if (strcmp(name, "amin") == 0) return EM_SCATTER_AMIN;
  l_errorf(L, "%s: reduce argument must be one of 'sum', 'prod', 'mean', 'amax', "
           "'amin', got '%s'", op, name);
  return EM_SCATTER_NONE;
}

/* -- Index family ---------------------------------------------------------------- */

static int l_index_select(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "index_select");
  int64_t dim = l_checkint(L, 2, "index_select", "dim");
  em_tensor *idx = l_checktensor(L, 3, "index_select");
  int outidx;
  em_tensor *out = l_opt_out(L, 4, "index_select", l_out_opts, &outidx);
  em_tensor **box = l_newbox(L);
  if (em_index_select(t, dim, idx, box) != EM_OK) l_error(L);
  return l_out_result(L, box, out, outidx, "index_select");
}

static int l_masked_select(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "masked_select");
  em_tensor *m = l_checktensor(L, 2, "masked_select");
  int outidx;
  em_tensor *out = l_opt_out(L, 3, "masked_select", l_out_opts, &outidx);
  em_tensor **box = l_newbox(L);
  if (em_masked_select(t, m, box) != EM_OK) l_error(L);
  return l_out_result(L, box, out, outidx, "masked_select");
}

static int l_take(lua_State *L) {
  l_checknomore(L, 2, "take");
  em_tensor *t = l_checktensor(L, 1, "take");
  em_tensor *idx = l_checktensor(L, 2, "take");
  em_tensor **box = l_newbox(L);
  if (em_take(t, idx, box) != EM_OK) l_error(L);
  return 1;
}

static const char *const put_opts[] = {"accumulate", NULL};

static int l_put_(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "put_");
  em_tensor *idx = l_checktensor(L, 2, "put_");
  em_tensor *src = l_checktensor(L, 3, "put_");
  int acc = 0;
  if (lua_type(L, 4) == LUA_TBOOLEAN) acc = lua_toboolean(L, 4);
  else if (!lua_isnoneornil(L, 4)) {
    l_checkopts(L, 4, "put_", put_opts);
    acc = l_optbool(L, 4, "accumulate", 0);
  }
  if (em_put_(t, idx, src, acc) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_gather(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "gather");
  int64_t dim = l_checkint(L, 2, "gather", "dim");
  em_tensor *idx = l_checktensor(L, 3, "gather");
  int outidx;
  em_tensor *out = l_opt_out(L, 4, "gather", l_out_opts, &outidx);
  em_tensor **box = l_newbox(L);
  if (em_gather(t, dim, idx, box) != EM_OK) l_error(L);
  return l_out_result(L, box, out, outidx, "gather");
}

static const char *const scatter_opts[] = {"reduce", NULL};

/* t:scatter_(dim, index, src | value, [reduce | {reduce = "add"}]) */
static int l_scatter_(lua_State *L) {
  const char *op = "scatter_";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = l_checkint(L, 2, op, "dim");
  em_tensor *idx = l_checktensor(L, 3, op);
  em_tensor *src = l_totensor(L, 4);
  em_scalar value = {EM_SCALAR_INT, 0, 0.0};
  if (!src) value = l_checkscalar(L, 4, op);
  em_scatter_mode r = EM_SCATTER_NONE;
  if (lua_type(L, 5) == LUA_TSTRING) {
    r = parse_reduce(L, lua_tostring(L, 5), op, 1);
  } else if (!lua_isnoneornil(L, 5)) {
    l_checkopts(L, 5, op, scatter_opts);
    lua_getfield(L, 5, "reduce");
    if (!lua_isnil(L, -1)) {
      if (lua_type(L, -1) != LUA_TSTRING)
        l_errorf(L, "%s: reduce must be a string, got %s", op, luaL_typename(L, -1));
      r = parse_reduce(L, lua_tostring(L, -1), op, 1);
    }
    lua_pop(L, 1);
  }
  if (em_scatter_(t, dim, idx, src, value, r) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_scatter_add_(lua_State *L) {
  l_checknomore(L, 4, "scatter_add_");
  const char *op = "scatter_add_";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = l_checkint(L, 2, op, "dim");
  em_tensor *idx = l_checktensor(L, 3, op);
  em_tensor *src = l_checktensor(L, 4, op);
  em_scalar unused = {EM_SCALAR_INT, 0, 0.0};
  if (em_scatter_(t, dim, idx, src, unused, EM_SCATTER_SUM) != EM_OK) l_error_as(L, "scatter_", op);
  lua_settop(L, 1);
  return 1;
}

static const char *const scatter_reduce_opts[] = {"include_self", NULL};

/* t:scatter_reduce_(dim, index, src, reduce, [{include_self = false}]) */
static int l_scatter_reduce_(lua_State *L) {
  const char *op = "scatter_reduce_";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = l_checkint(L, 2, op, "dim");
  em_tensor *idx = l_checktensor(L, 3, op);
  em_tensor *src = l_checktensor(L, 4, op);
  if (lua_type(L, 5) != LUA_TSTRING)
    return l_errorf(L, "%s: expected a reduce name ('sum', 'prod', 'mean', 'amax', "
                    "'amin') for argument #5, got %s", op, luaL_typename(L, 5));
  em_scatter_mode r = parse_reduce(L, lua_tostring(L, 5), op, 0);
  int include_self = 1;
  if (lua_type(L, 6) == LUA_TBOOLEAN) include_self = lua_toboolean(L, 6);
  else if (!lua_isnoneornil(L, 6)) {
    l_checkopts(L, 6, op, scatter_reduce_opts);
    include_self = l_optbool(L, 6, "include_self", 1);
  }
  if (em_scatter_reduce_(t, dim, idx, src, r, include_self) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_index_fill_(lua_State *L) {
  l_checknomore(L, 4, "index_fill_");
  const char *op = "index_fill_";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = l_checkint(L, 2, op, "dim");
  em_tensor *idx = l_checktensor(L, 3, op);
  em_scalar v = l_value_arg(L, 4, op);
  l_check_scalar_fits(L, v, em_tensor_dtype(t), op);
  if (em_index_fill_(t, dim, idx, v) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_index_copy_(lua_State *L) {
  l_checknomore(L, 4, "index_copy_");
  const char *op = "index_copy_";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = l_checkint(L, 2, op, "dim");
  em_tensor *idx = l_checktensor(L, 3, op);
  em_tensor *src = l_checktensor(L, 4, op);
  if (em_index_copy_(t, dim, idx, src) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static const char *const alpha_opts[] = {"alpha", NULL};

static int l_index_add_(lua_State *L) {
  const char *op = "index_add_";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = l_checkint(L, 2, op, "dim");
  em_tensor *idx = l_checktensor(L, 3, op);
  em_tensor *src = l_checktensor(L, 4, op);
  em_scalar alpha = {EM_SCALAR_INT, 1, 1.0};
  if (lua_type(L, 5) == LUA_TNUMBER) {
    alpha = l_checkscalar(L, 5, op);
  } else if (!lua_isnoneornil(L, 5)) {
    l_checkopts(L, 5, op, alpha_opts);
    lua_getfield(L, 5, "alpha");
    if (!lua_isnil(L, -1)) alpha = l_checkscalar(L, lua_gettop(L), op);
    lua_pop(L, 1);
  }
  if (em_index_add_(t, dim, idx, src, alpha) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_masked_fill_(lua_State *L) {
  l_checknomore(L, 3, "masked_fill_");
  const char *op = "masked_fill_";
  em_tensor *t = l_checktensor(L, 1, op);
  em_tensor *m = l_checktensor(L, 2, op);
  em_scalar v = l_value_arg(L, 3, op);
  l_check_scalar_fits(L, v, em_tensor_dtype(t), op);
  if (em_masked_fill_(t, m, v) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_masked_scatter_(lua_State *L) {
  l_checknomore(L, 3, "masked_scatter_");
  const char *op = "masked_scatter_";
  em_tensor *t = l_checktensor(L, 1, op);
  em_tensor *m = l_checktensor(L, 2, op);
  em_tensor *src = l_checktensor(L, 3, op);
  if (em_masked_scatter_(t, m, src) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static const char *const nonzero_opts[] = {"as_tuple", NULL};

/* Pushes nonzero(t) as a tensor, or as a Lua array of its columns (views)
** when as_tuple. */
static int push_nonzero(lua_State *L, em_tensor *t, int as_tuple) {
  em_tensor **box = l_newbox(L);
  if (em_nonzero(t, box) != EM_OK) l_error(L);
  if (!as_tuple) return 1;
  em_tensor *nz = *box;
  int64_t count = em_tensor_sizes(nz)[0];
  int nd = em_tensor_ndim(t);
  em_tensor ***bx;
  em_tensor **outs = result_list(L, nd ? nd : 1, &bx, "nonzero");
  if (nd == 0) { /* a 0-d tensor reads as 1-d: its one position is 1 */
    em_scalar one = {EM_SCALAR_INT, 1, 1.0};
    if (em_full(1, &count, one, EM_INT64, em_tensor_device(t), &outs[0]) != EM_OK) l_error(L);
  }
  for (int j = 0; j < nd; j++) {
    int64_t stride = nd;
    if (em_as_strided(nz, 1, &count, &stride, em_tensor_offset(nz) + j, &outs[j]) != EM_OK) {
      for (int k = 0; k < j; k++) em_tensor_release(outs[k]);
      l_error(L);
    }
  }
  fill_list(outs, bx, nd ? nd : 1);
  return 1;
}

static int l_nonzero(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "nonzero");
  int as_tuple = 0;
  if (!lua_isnoneornil(L, 2)) {
    l_checkopts(L, 2, "nonzero", nonzero_opts);
    as_tuple = l_optbool(L, 2, "as_tuple", 0);
  }
  lua_settop(L, 1);
  return push_nonzero(L, t, as_tuple);
}

static int l_argwhere(lua_State *L) {
  l_checknomore(L, 1, "argwhere");
  em_tensor *t = l_checktensor(L, 1, "argwhere");
  lua_settop(L, 1);
  return push_nonzero(L, t, 0);
}

/* PyTorch's result_type over where's two value operands (tensors, 0-d
** tensors and Lua numbers, each in its tier): the engine's em_result_type. */
static em_dtype where_result_type(em_tensor *a, em_scalar sa, em_tensor *b, em_scalar sb) {
  em_operand ops[2] = {{a, sa}, {b, sb}};
  return em_result_type(2, ops, l_default_dtype());
}

/* T.where(cond) is nonzero(cond, {as_tuple = true}); T.where(cond, a, b)
** picks a where cond is true, else b; a and b are tensors or Lua numbers
** (numbers take part in type promotion as PyTorch's wrapped scalars). */
static int l_where(lua_State *L) {
  const char *op = "where";
  em_tensor *cond = l_checktensor(L, 1, op);
  if (lua_gettop(L) == 1) return push_nonzero(L, cond, 1);
  em_tensor *a = l_totensor(L, 2), *b = l_totensor(L, 3);
  em_scalar sa = {EM_SCALAR_INT, 0, 0.0}, sb = sa;
  if (!a) sa = l_checkscalar(L, 2, op);
  if (!b) sb = l_checkscalar(L, 3, op);
  em_dtype dt = where_result_type(a, sa, b, sb);
  if (!a) l_check_scalar_fits(L, sa, dt, op);
  if (!b) l_check_scalar_fits(L, sb, dt, op);
  em_device dev = em_tensor_device(cond);  /* scalars become 0-d tensors there */
  lua_settop(L, 5);
  int outidx;
  em_tensor *out = l_opt_out(L, 4, op, l_out_opts, &outidx);
  if (!a) {
    em_tensor **ba = l_newbox(L);
    if (em_full(0, NULL, sa, dt, dev, ba) != EM_OK) l_error(L);
    a = *ba;
  }
  if (!b) {
    em_tensor **bb = l_newbox(L);
    if (em_full(0, NULL, sb, dt, dev, bb) != EM_OK) l_error(L);
    b = *bb;
  }
  em_tensor **box = l_newbox(L);
  if (em_where(cond, a, b, dt, box) != EM_OK) l_error(L);
  return l_out_result(L, box, out, outidx, op);
}

/* -- Assembling ------------------------------------------------------------------- */

typedef em_status (*joiner)(int64_t, const em_tensor *const *, int64_t, em_tensor **);

/* fn(list[, dim][, {out = t}]) */
static int join(lua_State *L, const char *op, joiner fn) {
  int64_t n;
  lua_settop(L, 4);
  if (l_isopts(L, 2)) { /* fn(list, {out = t}) */
    if (!lua_isnil(L, 3))
      return l_errorf(L, "%s: unexpected argument #3 (%s)", op, luaL_typename(L, 3));
    lua_pushvalue(L, 2);
    lua_replace(L, 3);
    lua_pushnil(L);
    lua_replace(L, 2);
  }
  const em_tensor **ts = tensor_list(L, 1, op, &n);
  static const char *const join_opts[] = {"dim", "out", NULL};
  int outidx;
  em_tensor *out = l_opt_out(L, 3, op, join_opts, &outidx);
  int64_t dim = opt_dim(L, 2, op, 1);
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "dim");
    if (!lua_isnil(L, -1)) {
      if (!lua_isnil(L, 2))
        return l_errorf(L, "%s: dim given twice (argument #2 and option 'dim')", op);
      dim = l_checkint(L, lua_gettop(L), op, "dim");
    }
    lua_pop(L, 1);
  }
  em_tensor **box = l_newbox(L);
  if (fn(n, ts, dim, box) != EM_OK) l_error(L);
  return l_out_result(L, box, out, outidx, op);
}

/* T.cat(list[, dim]), and Torch7's spelling T.cat(t1, t2, ...[, dim]). */
static int l_cat(lua_State *L) {
  if (l_totensor(L, 1)) {
    int top = lua_gettop(L), n = 0;
    while (n < top && l_totensor(L, n + 1)) n++;
    if (n < 2) /* T.cat(t): a tensor where the list belongs */
      return l_errorf(L, "cat: expected a list of tensors for argument #1, got a tensor "
                         "(T.cat{t} joins one; Torch7's T.cat(t1, t2, ...) takes two or more)");
    /* Torch7's spelling T.cat(t1, t2, ...[, dim][, opts]): rebuilt as
    ** (list, dim, opts, extra) */
    lua_createtable(L, n, 0);
    for (int i = 1; i <= n; i++) {
      lua_pushvalue(L, i);
      lua_rawseti(L, -2, i);
    }
    int rest = top - n; /* the arguments after the tensors, at most 3 kept */
    if (rest > 3)
      return l_errorf(L, "cat: unexpected argument #%d (%s)", n + 4, luaL_typename(L, n + 4));
    for (int i = 0; i < 3; i++) {
      if (i < rest) lua_pushvalue(L, n + 1 + i);
      else lua_pushnil(L);
    }
    /* stack: args..., list, r1, r2, r3 -> move the last four to 1..4 */
    for (int i = 1; i <= 4; i++) {
      lua_pushvalue(L, top + i);
      lua_replace(L, i);
    }
    lua_settop(L, 4);
  }
  return join(L, "cat", em_cat);
}
static int l_stack(lua_State *L) { return join(L, "stack", em_stack); }

typedef em_status (*stacker)(int64_t, const em_tensor *const *, em_tensor **);

static int stack_like(lua_State *L, const char *op, stacker fn) {
  int64_t n;
  lua_settop(L, 3);
  const em_tensor **ts = tensor_list(L, 1, op, &n);
  int outidx;
  em_tensor *out = l_opt_out(L, 2, op, l_out_opts, &outidx);
  em_tensor **box = l_newbox(L);
  if (fn(n, ts, box) != EM_OK) l_error(L);
  return l_out_result(L, box, out, outidx, op);
}

static int l_hstack(lua_State *L) { return stack_like(L, "hstack", em_hstack); }
static int l_vstack(lua_State *L) { return stack_like(L, "vstack", em_vstack); }
static int l_dstack(lua_State *L) { return stack_like(L, "dstack", em_dstack); }

/* The size of t along dim (checked), for the split family. */
static int64_t split_dim_size(lua_State *L, em_tensor *t, int64_t dim, const char *op) {
  int axis;
  if (em_tensor_ndim(t) == 0) l_errorf(L, "%s: a 0-d tensor cannot be split", op);
  if (em_wrap_dim(op, dim, em_tensor_ndim(t), &axis) != EM_OK) l_error(L);
  return em_tensor_sizes(t)[axis];
}

/* Pushes the views of t cut into n pieces of the given sizes along dim;
** node (or NULL) names their grad_fn as PyTorch's op that cut them. */
static int push_pieces(lua_State *L, em_tensor *t, int64_t dim, int64_t n,
                       const int64_t *sizes, const char *op, const char *node) {
  em_tensor ***bx;
  em_tensor **outs = result_list(L, n, &bx, op);
  if (em_split_with_sizes(t, dim, n, sizes, outs) != EM_OK) l_error(L);
  for (int64_t i = 0; node && i < n; i++)
    if (em_tensor_grad_fn_name(outs[i]) && em_tensor_name_grad_fn(outs[i], node) != EM_OK)
      l_error(L);
  fill_list(outs, bx, n);
  return 1;
}

/* t:split(size | {sizes...}, [dim]) */
static int l_split(lua_State *L) {
  l_nooptions(L, 3, 3, "split");
  const char *op = "split";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = opt_dim(L, 3, op, 1);
  int64_t dsize = split_dim_size(L, t, dim, op), n;
  int64_t *sizes;
  if (lua_istable(L, 2)) {
    n = (int64_t)lua_objlen(L, 2);
    sizes = lua_newuserdata(L, sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
      lua_rawgeti(L, 2, (int)(i + 1));
      sizes[i] = l_checkint(L, -1, op, "a split size");
      lua_pop(L, 1);
    }
  } else {
    int64_t size = l_checkint(L, 2, op, "split_size");
    if (em_split_sizes(dsize, size, &n, NULL) != EM_OK) l_error(L);
    sizes = sizes_buf(L, n, op);
    em_split_sizes(dsize, size, &n, sizes);
    return push_pieces(L, t, dim, n, sizes, op, "SplitBackward0");
  }
  return push_pieces(L, t, dim, n, sizes, op, NULL);
}

static int l_chunk(lua_State *L) {
  l_nooptions(L, 3, 3, "chunk");
  const char *op = "chunk";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t chunks = l_checkint(L, 2, op, "chunks");
  int64_t dim = opt_dim(L, 3, op, 1);
  int64_t dsize = split_dim_size(L, t, dim, op), n;
  if (em_chunk_sizes(dsize, chunks, &n, NULL) != EM_OK) l_error(L);
  int64_t *sizes = sizes_buf(L, n, op);
  em_chunk_sizes(dsize, chunks, &n, sizes);
  return push_pieces(L, t, dim, n, sizes, op, "SplitBackward0");
}

/* t:tensor_split(sections | {positions...} | tensor, [dim]) */
static int l_tensor_split(lua_State *L) {
  l_nooptions(L, 3, 3, "tensor_split");
  const char *op = "tensor_split";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = opt_dim(L, 3, op, 1);
  int64_t dsize = split_dim_size(L, t, dim, op);
  em_tensor *it = l_totensor(L, 2);
  int64_t npos = -1, *pos = NULL, sections = 0;
  if (it) {
    em_dtype dt = em_tensor_dtype(it);
    if (dt != EM_INT64 && dt != EM_INT32)
      return l_errorf(L, "%s: expected an int64 or int32 tensor of sections or "
                      "positions, got %s", op, em_dtype_name(dt));
    if (em_tensor_ndim(it) > 1)
      return l_errorf(L, "%s: expected a 0-d or 1-d tensor of sections or positions, "
                      "got %d dimensions", op, em_tensor_ndim(it));
    if (em_tensor_ndim(it) == 0) {
      if (em_get_i64(it, 0, &sections) != EM_OK) l_error(L);
    } else {
      npos = em_tensor_numel(it);
      pos = lua_newuserdata(L, sizeof(int64_t) * (size_t)(npos ? npos : 1));
      for (int64_t i = 0; i < npos; i++)
        if (em_get_i64(it, i, &pos[i]) != EM_OK) l_error(L);
    }
  } else if (lua_istable(L, 2)) {
    npos = (int64_t)lua_objlen(L, 2);
    pos = lua_newuserdata(L, sizeof(int64_t) * (size_t)(npos ? npos : 1));
    for (int64_t i = 0; i < npos; i++) {
      lua_rawgeti(L, 2, (int)(i + 1));
      pos[i] = l_checkint(L, -1, op, "a split position");
      lua_pop(L, 1);
    }
  } else {
    sections = l_checkint(L, 2, op, "sections");
  }
  if (npos < 0) {
    int64_t n;
    if (em_sections_sizes(dsize, sections, &n, NULL) != EM_OK) l_error(L);
    int64_t *sizes = sizes_buf(L, n, op);
    em_sections_sizes(dsize, sections, &n, sizes);
    return push_pieces(L, t, dim, n, sizes, op, "SliceBackward0");
  }
  em_tensor ***bx;
  em_tensor **outs = result_list(L, npos + 1, &bx, op);
  if (em_tensor_split_at(t, dim, npos, pos, outs) != EM_OK) l_error(L);
  fill_list(outs, bx, npos + 1);
  return 1;
}

static int l_unbind(lua_State *L) {
  l_nooptions(L, 2, 2, "unbind");
  const char *op = "unbind";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t dim = opt_dim(L, 2, op, 1);
  int64_t n = split_dim_size(L, t, dim, op);
  em_tensor ***bx;
  em_tensor **outs = result_list(L, n, &bx, op);
  if (em_unbind(t, dim, outs) != EM_OK) l_error(L);
  fill_list(outs, bx, n);
  return 1;
}

/* t:repeat_tensor(r1, r2, ...) or ({r1, r2, ...}); t["repeat"] is the same. */
static int l_repeat(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "repeat");
  int64_t reps[EM_MAX_DIMS];
  int n = int_list(L, 2, "repeat", "repeats", reps, EM_MAX_DIMS);
  l_checknomore(L, lua_istable(L, 2) ? 2 : 1 + n, "repeat");
  em_tensor **box = l_newbox(L);
  if (em_repeat(t, n, reps, box) != EM_OK) l_error(L);
  return 1;
}

static int l_tile(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "tile");
  int64_t reps[EM_MAX_DIMS];
  int n = int_list(L, 2, "tile", "dims", reps, EM_MAX_DIMS);
  l_checknomore(L, lua_istable(L, 2) ? 2 : 1 + n, "tile");
  em_tensor **box = l_newbox(L);
  if (em_tile(t, n, reps, box) != EM_OK) l_error(L);
  return 1;
}

/* t:repeat_interleave(repeats, [dim][, {output_size = n}]) with repeats a
** number or an integer tensor; without dim, t is flattened.
** T.repeat_interleave(repeats) with one tensor repeats its positions 1..n.
** output_size, when given, must be the result's length (PyTorch uses it
** to skip a device sync and fails when it is wrong; here it is checked). */
static const char *const ri_opts[] = {"output_size", NULL};

static int l_repeat_interleave(lua_State *L) {
  const char *op = "repeat_interleave";
  int64_t output_size = -1;
  int top = lua_gettop(L);
  if (top >= 2 && l_isopts(L, top)) {
    l_checkopts(L, top, op, ri_opts);
    lua_getfield(L, top, "output_size");
    if (!lua_isnil(L, -1)) {
      output_size = l_checkint(L, -1, op, "output_size");
      if (output_size < 0)
        return l_errorf(L, "%s: output_size must be non-negative, got %lld", op,
                        (long long)output_size);
    }
    lua_settop(L, top - 1);
  }
  l_nooptions(L, 2, 3, op);
  em_tensor *t = l_checktensor(L, 1, op);
  em_tensor **box;
  if (lua_isnoneornil(L, 2)) {
    box = l_newbox(L);
    if (em_repeat_interleave(NULL, t, 0, box) != EM_OK) l_error(L);
  } else {
    int64_t dim = opt_dim(L, 3, op, 0);
    if (lua_type(L, 3) == LUA_TNUMBER && dim == 0)
      return l_errorf(L, "%s: dimension 0 is invalid: dimensions are 1-based", op);
    em_tensor *reps = l_totensor(L, 2);
    lua_settop(L, 2);
    if (!reps) {
      int64_t r = l_checkint(L, 2, op, "repeats");
      box = l_newbox(L);
      if (em_repeat_interleave_int(t, r, dim, box) != EM_OK) l_error(L);
    } else {
      box = l_newbox(L);
      if (em_repeat_interleave(t, reps, dim, box) != EM_OK) l_error(L);
    }
    if (output_size >= 0 && dim != 0) {
      int64_t d = dim > 0 ? dim - 1 : dim + em_tensor_ndim(*box);
      int64_t got = em_tensor_sizes(*box)[d];
      if (got != output_size)
        return l_errorf(L, "%s: output_size %lld does not match the repeated length %lld",
                        op, (long long)output_size, (long long)got);
      return 1;
    }
  }
  if (output_size >= 0 && em_tensor_numel(*box) != output_size)
    return l_errorf(L, "%s: output_size %lld does not match the repeated length %lld", op,
                    (long long)output_size, (long long)em_tensor_numel(*box));
  return 1;
}

/* t:roll(shifts, [dims]) with numbers or tables. */
static int l_roll(lua_State *L) {
  l_checknomore(L, 3, "roll");
  const char *op = "roll";
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t shifts[EM_MAX_DIMS], dims[EM_MAX_DIMS];
  int ns, nd = 0;
  if (lua_istable(L, 2)) ns = int_list(L, 2, op, "shifts", shifts, EM_MAX_DIMS);
  else ns = 1, shifts[0] = l_checkint(L, 2, op, "shifts");
  if (lua_istable(L, 3)) nd = int_list(L, 3, op, "dims", dims, EM_MAX_DIMS);
  else if (!lua_isnoneornil(L, 3)) nd = 1, dims[0] = l_checkint(L, 3, op, "dims");
  em_tensor **box = l_newbox(L);
  if (em_roll(t, ns, shifts, nd, dims, box) != EM_OK) l_error(L);
  return 1;
}

void l_open_select(lua_State *L) {
  /* methods whose first argument is the tensor; also module functions */
  static const luaL_Reg both[] = {
      {"index_select", l_index_select},
      {"masked_select", l_masked_select},
      {"take", l_take},
      {"put_", l_put_},
      {"gather", l_gather},
      {"scatter_", l_scatter_},
      {"scatter_add_", l_scatter_add_},
      {"scatter_reduce_", l_scatter_reduce_},
      {"index_fill_", l_index_fill_},
      {"index_copy_", l_index_copy_},
      {"index_add_", l_index_add_},
      {"masked_fill_", l_masked_fill_},
      {"masked_scatter_", l_masked_scatter_},
      {"nonzero", l_nonzero},
      {"argwhere", l_argwhere},
      {"split", l_split},
      {"chunk", l_chunk},
      {"tensor_split", l_tensor_split},
      {"unbind", l_unbind},
      {"repeat_tensor", l_repeat},
      {"repeat", l_repeat},
      {"tile", l_tile},
      {"repeat_interleave", l_repeat_interleave},
      {"roll", l_roll},
      {NULL, NULL}};
  static const luaL_Reg fns[] = {
      {"where", l_where},   {"cat", l_cat},       {"concat", l_cat},
      {"concatenate", l_cat}, {"stack", l_stack}, {"hstack", l_hstack},
      {"vstack", l_vstack}, {"row_stack", l_vstack}, {"dstack", l_dstack},
      {NULL, NULL}};
  l_add_methods(L, both);
  l_add_functions(L, both);
  l_add_functions(L, fns);
}
