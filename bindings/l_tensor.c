/*
** l_tensor.c -- creation from data and shapes, conversion, copies, and
** introspection: T.tensor, T.Tensor, empty/zeros/ones/full and *_like,
** to and the casts, clone/contiguous/copy_/fill_/zero_, item/tolist, and
** the metadata methods and properties.
*/
#include <math.h>
#include <string.h>

#include "l_ember.h"

/* Raises the engine's last error as the error of op: a message that names
** the engine's own constructor ("full: ..." for T.ones) is renamed, one that
** names no operation ("device cuda:0 is not available") gets op in front. */
static int creation_error(lua_State *L, const char *op) {
  const char *msg = em_last_error();
  const char *p = msg;
  while ((*p >= 'a' && *p <= 'z') || *p == '_') p++;
  if (p > msg && p[0] == ':' && p[1] == ' ')
    return l_errorf(L, "%s: %s", op, p + 2);
  return l_errorf(L, "%s: %s", op, msg);
}

/* After the sizes, only an options table (or nothing) may follow. */
static void check_after_sizes(lua_State *L, int next, const char *op) {
  int t = lua_type(L, next);
  if (t != LUA_TNONE && t != LUA_TNIL && t != LUA_TTABLE)
    l_errorf(L, "%s: expected a size (integers, a table of integers or a T.Size) "
             "or an options table for argument #%d, got %s", op, next,
             luaL_typename(L, next));
}

/* -- T.tensor: nested tables ---------------------------------------------- */

typedef struct {
  int ndim;
  int64_t sizes[EM_MAX_DIMS];
  int kind;          /* highest seen: 0 bool, 1 int, 2 float; -1 none */
  int64_t count;
  int tdt;           /* 0-d tensors seen: the promotion of every element's dtype
                        (a number's: bool, int64 or the default float); -1 none */
  int numdt;         /* the promotion of the numbers' dtypes alone; -1 none */
} data_info;

static void path_str(lua_State *L, int depth, const int64_t *path) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; i < depth; i++) {
    char num[32];
    snprintf(num, sizeof num, "[%lld]", (long long)path[i]);
    luaL_addstring(&b, num);
  }
  luaL_pushresult(&b);
}

/* Walks value at idx at the given depth; checks the shape is rectangular. */
static void scan_data(lua_State *L, int idx, int depth, data_info *info,
                      int64_t *path, const char *op) {
  int t = lua_type(L, idx);
  if (t == LUA_TTABLE && !l_totensor(L, idx)) {
    int64_t n = (int64_t)lua_objlen(L, idx);
    if (depth == info->ndim) {
      if (info->count > 0 || depth >= EM_MAX_DIMS) {
        path_str(L, depth, path);
        l_errorf(L, "%s: ragged nested table: expected a number at %s, got a table",
                   op, lua_tostring(L, -1));
      }
      info->sizes[info->ndim++] = n;
    } else if (n != info->sizes[depth]) {
      path_str(L, depth, path);
      l_errorf(L, "%s: ragged nested table: expected %lld elements at %s, got %lld",
                 op, (long long)info->sizes[depth],
                 depth ? lua_tostring(L, -1) : "the top level", (long long)n);
    }
    for (int64_t i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, (int)i);
      path[depth] = i;
      scan_data(L, lua_gettop(L), depth + 1, info, path, op);
      lua_pop(L, 1);
    }
    if (n == 0 && depth + 1 == info->ndim) info->count++; /* leaf level seen */
    return;
  }
  if (depth != info->ndim) {
    path_str(L, depth, path);
    l_errorf(L, "%s: ragged nested table: expected a table at %s, got %s", op,
               lua_tostring(L, -1), luaL_typename(L, idx));
  }
  int kind;
  if (t == LUA_TBOOLEAN) kind = 0;
  else if (t == LUA_TNUMBER) {
    double v = lua_tonumber(L, idx);
    kind = (v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? 1 : 2;
#if LUA_VERSION_NUM >= 503
    kind = lua_isinteger(L, idx) ? 1 : 2; /* Lua 5.4: math.type decides */
#endif
  } else if (l_isint64box(L, idx) && l_toint64(L, idx, &(int64_t){0}, op)) {
    kind = 1; /* LuaJIT's boxed int64_t */
  } else if (l_totensor(L, idx) && em_tensor_ndim(l_totensor(L, idx)) == 0 &&
             em_dtype_kindof(em_tensor_dtype(l_totensor(L, idx))) != EM_KIND_COMPLEX) {
    /* a 0-d tensor is a number of its dtype's kind (torch.tensor([t0, t1])) */
    em_dtype dt = em_tensor_dtype(l_totensor(L, idx));
    kind = dt == EM_BOOL ? 0 : em_dtype_kindof(dt) == EM_KIND_FLOAT ? 2 : 1;
    /* torch.tensor([t0, t1]): the tensors' own dtypes take part */
    info->tdt = info->tdt < 0 ? (int)dt : (int)em_promote_types((em_dtype)info->tdt, dt);
    if (kind > info->kind) info->kind = kind;
    info->count++;
    return;
  } else {
    path_str(L, depth, path);
    l_errorf(L, "%s: expected numbers, booleans or 0-d tensors, got %s at %s", op,
               luaL_typename(L, idx), depth ? lua_tostring(L, -1) : "the top level");
    return;
  }
  if (kind > info->kind) info->kind = kind;
  em_dtype ndt = kind == 0 ? EM_BOOL : kind == 1 ? EM_INT64 : l_default_dtype();
  info->numdt = info->numdt < 0 ? (int)ndt : (int)em_promote_types((em_dtype)info->numdt, ndt);
  info->count++;
}

/* Whether v fits dtype dt when dt is an integer dtype (PyTorch's creation
** check: an out-of-range, infinite or NaN value raises "value cannot be
** converted to type ... without overflow" rather than wrapping); any value
** fits the other dtypes. */
static int int_fits(em_scalar v, em_dtype dt) {
  double lo, hi;
  switch (dt) {
    case EM_UINT8: lo = -255; hi = 255; break; /* c10: an unsigned type wraps -max..-1 */
    case EM_INT8: lo = -128; hi = 127; break;
    case EM_INT16: lo = -32768; hi = 32767; break;
    case EM_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
    case EM_INT64:
      if (v.kind != EM_SCALAR_FLOAT) return 1;
      return v.f >= -9223372036854775808.0 && v.f < 9223372036854775808.0;
    default: return 1;
  }
  if (v.kind == EM_SCALAR_BOOL) return 1;
  double x = v.kind == EM_SCALAR_INT ? (double)v.i : v.f;
  /* only an integer wraps into an unsigned type: a negative fraction is
  ** out of range (c10 checks a floating value against 0..max) */
  if (dt == EM_UINT8 && x < 0 && x != floor(x)) return 0;
  return x >= lo && x <= hi; /* false for NaN */
}

static void l_check_fits(lua_State *L, em_scalar v, em_dtype dt, const char *op) {
  if (!int_fits(v, dt))
    l_errorf(L, "%s: value cannot be converted to type %s without overflow", op,
             em_dtype_name(dt));
}

/* PyTorch's checked conversion of a Scalar to a tensor's type (c10's
** checked_convert, where a fill value, a bound or a where() operand is
** converted): integer dtypes as int_fits; float16, bfloat16, float32 refuse
** a finite value past their largest (infinities and NaN pass); float64,
** complex and bool take anything. */
void l_check_scalar_fits(lua_State *L, em_scalar v, em_dtype dt, const char *op) {
  double max = 0;
  switch (dt) {
    case EM_FLOAT16: max = 65504.0; break;
    case EM_BFLOAT16: max = 3.3895313892515355e38; break;
    case EM_FLOAT32: max = 3.4028234663852886e38; break;
    default: l_check_fits(L, v, dt, op); return;
  }
  double x = v.kind == EM_SCALAR_FLOAT ? v.f : v.kind == EM_SCALAR_INT ? (double)v.i : 0;
  if (isfinite(x) && (x > max || x < -max))
    l_errorf(L, "%s: value cannot be converted to type %s without overflow", op,
             em_dtype_name(dt));
}

/* Writes the leaves in order. A fresh CPU tensor (contiguous, data != NULL)
** is written directly, each value converted by em_scalar_to_bytes as
** em_set_flat converts it (its storage version is bumped once, after);
** any other goes through em_set_flat. */
static void fill_data(lua_State *L, int idx, em_tensor *t, char *data, int64_t *pos,
                      const char *op) {
  if (lua_type(L, idx) == LUA_TTABLE) {
    int n = (int)lua_objlen(L, idx);
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      fill_data(L, lua_gettop(L), t, data, pos, op);
      lua_pop(L, 1);
    }
    return;
  }
  em_scalar v = l_value_arg(L, idx, op);
  l_check_fits(L, v, em_tensor_dtype(t), op);
  if (data) {
    em_dtype dt = em_tensor_dtype(t);
    em_scalar_to_bytes(v, dt, data + (*pos)++ * (int64_t)em_dtype_size(dt));
  } else if (em_set_flat(t, (*pos)++, v) != EM_OK) {
    l_error(L);
  }
}

/* Makes a tensor from a number, boolean or nested table at idx. dt < 0
** infers: bool < int64 < the default float. Leaves it on the stack. */
static em_tensor *tensor_from_data(lua_State *L, int idx, int dt, em_device dev,
                                   const char *op) {
  data_info info = {0, {0}, -1, 0, -1, -1};
  int64_t path[EM_MAX_DIMS + 1];
  scan_data(L, idx, 0, &info, path, op);
  if (dt < 0 && info.tdt >= 0) /* 0-d tensors among the values: PyTorch's promotion */
    dt = info.numdt < 0 ? info.tdt : (int)em_promote_types((em_dtype)info.tdt, (em_dtype)info.numdt);
  else if (dt < 0)
    dt = info.kind == 0 ? EM_BOOL : info.kind == 1 ? EM_INT64 : (int)l_default_dtype();
  em_tensor **box = l_newbox(L);
  if (em_empty(info.ndim, info.sizes, (em_dtype)dt, dev, box) != EM_OK)
    creation_error(L, op);
  int64_t pos = 0;
  em_tensor *t = *box;
  char *data = em_tensor_device(t).type == EM_CPU && em_tensor_is_contiguous(t)
                   ? em_tensor_data(t) : NULL;
  fill_data(L, idx, t, data, &pos, op);
  if (data && pos > 0) em_storage_bump_version(em_tensor_storage(t));
  return t;
}

em_tensor *l_tensor_from_data(lua_State *L, int idx, em_device dev, const char *op) {
  return tensor_from_data(L, idx, -1, dev, op);
}

static int l_tensor(lua_State *L) {
  l_checkopts(L, 2, "tensor", l_creation_opts);
  int dt = l_optdtype(L, 2, "tensor", -1);
  em_device dev = l_optdevice(L, 2, "tensor", em_cpu());
  em_tensor *src = l_totensor(L, 1);
  if (src) { /* T.tensor(t) copies, as torch.tensor(array) does: a new
              ** leaf (t.clone().detach(), outside t's graph) */
    em_tensor **box = l_newbox(L);
    em_tensor *d = NULL;
    em_status st = em_detach(src, &d);
    if (st == EM_OK) st = em_to(d, dt < 0 ? em_tensor_dtype(src) : (em_dtype)dt, dev, 1, box);
    em_tensor_release(d);
    if (st != EM_OK) l_error(L);
    l_apply_requires_grad(L, 2, *box);
    return 1;
  }
  if (lua_isnoneornil(L, 1))
    return l_errorf(L, "tensor: expected data (a number, boolean or table), got %s",
                      luaL_typename(L, 1));
  em_tensor *t = tensor_from_data(L, 1, dt, dev, "tensor");
  l_apply_requires_grad(L, 2, t);
  return 1;
}

/* C._tensor_flat(n, kind): the tensor that T.tensor makes for a flat list of
** n >= 1 values whose highest kind is `kind` (0 bool, 1 integer, 2 float, as
** scan_data), its values not yet written, with the address of its first
** element (contiguous, on the CPU) and its dtype value; nothing when that dtype is not one of bool,
** int64, float32, float64 (a float16 default). Under LuaJIT, tensor.lua checks
** the list and writes the values itself (as em_scalar_to_bytes converts
** them); the storage version is bumped here, once, as tensor_from_data
** bumps it after writing. */
static int l_tensor_flat(lua_State *L) {
  lua_Number n = lua_tonumber(L, 1), kind = lua_tonumber(L, 2);
  if (!(n >= 1 && n < 9007199254740992.0 && n == floor(n)) ||
      !(kind == 0 || kind == 1 || kind == 2))
    return l_errorf(L, "tensor: _tensor_flat: bad arguments");
  int64_t size = (int64_t)n;
  em_dtype dt = kind == 0 ? EM_BOOL : kind == 1 ? EM_INT64 : l_default_dtype();
  if (dt != EM_BOOL && dt != EM_INT64 && dt != EM_FLOAT32 && dt != EM_FLOAT64)
    return 0; /* a default dtype the Lua side does not write: the C path */
  em_tensor **box = l_newbox(L);
  if (em_empty(1, &size, dt, em_cpu(), box) != EM_OK) creation_error(L, "tensor");
  em_storage_bump_version(em_tensor_storage(*box));
  /* the address as a number (exact: user-space addresses are below 2^53);
  ** LuaJIT 2.1 does not compile converting a light userdata to a pointer */
  lua_pushnumber(L, (lua_Number)(uintptr_t)em_tensor_data(*box));
  lua_pushnumber(L, (lua_Number)dt);
  return 3;
}

/* T.Tensor(sizes...) uninitialised default float; T.Tensor(t) an alias of
** t; T.Tensor{data} the default float type from data; T.Tensor() empty. */
static int l_Tensor(lua_State *L) {
  em_tensor *src = l_totensor(L, 1);
  if (src) {
    l_checknomore(L, 1, "Tensor");
    em_tensor **box = l_newbox(L);
    if (em_alias(src, box) != EM_OK) l_error(L);
    return 1;
  }
  em_dtype dt = l_default_dtype();
  if (lua_istable(L, 1) && !lua_getmetatable(L, 1)) {
    l_checknomore(L, 1, "Tensor");
    tensor_from_data(L, 1, (int)dt, em_cpu(), "Tensor");
    return 1;
  }
  int64_t sizes[EM_MAX_DIMS];
  int next = 1, ndim = 1;
  sizes[0] = 0; /* T.Tensor() is an empty vector, as torch.Tensor() */
  if (!lua_isnoneornil(L, 1)) ndim = l_checksizes(L, 1, "Tensor", sizes, &next);
  if (lua_istable(L, next)) l_checknomore(L, next - 1, "Tensor");
  if (!lua_isnone(L, next))
    return l_errorf(L, "Tensor: expected sizes, a table of data or a tensor; got %s "
                    "for argument #%d (T.Tensor takes no options: use T.empty or "
                    "T.tensor with {dtype = ...})", luaL_typename(L, next), next);
  em_tensor **box = l_newbox(L);
  if (em_empty(ndim, sizes, dt, em_cpu(), box) != EM_OK) creation_error(L, "Tensor");
  return 1;
}

/* -- Shape constructors --------------------------------------------------- */

typedef enum { FILL_NONE, FILL_ZERO, FILL_ONE, FILL_VALUE } fill_kind;

/* The fill value at idx when it is a 0-d complex tensor, else NULL: a
** complex destination is filled by copying it (an em_scalar has no
** imaginary part); a real one takes it through l_value_arg. */
static em_tensor *complex_value(lua_State *L, int idx) {
  em_tensor *v = l_totensor(L, idx);
  if (v && em_tensor_ndim(v) == 0 && em_dtype_kindof(em_tensor_dtype(v)) == EM_KIND_COMPLEX)
    return v;
  return NULL;
}

static int make_filled(lua_State *L, const char *op, fill_kind fk) {
  int64_t sizes[EM_MAX_DIMS];
  int next = 1, ndim = 0;
  if (lua_isnil(L, 1) && !lua_isnone(L, 1)) l_check_no_hole(L, 1, 0, op, "a size");
  if (!lua_isnoneornil(L, 1) && !l_isopts(L, 1))
    ndim = l_checksizes(L, 1, op, sizes, &next);
  em_scalar value = {EM_SCALAR_INT, 0, 0};
  em_tensor *cvalue = NULL;
  if (fk == FILL_ONE) value.i = 1;
  if (fk == FILL_VALUE) {
    if (lua_isnoneornil(L, next) || lua_istable(L, next))
      l_errorf(L, "full: expected a fill value (a number or boolean) after the size "
               "for argument #%d, got %s", next, luaL_typename(L, next));
    cvalue = complex_value(L, next);
    if (!cvalue) value = l_value_arg(L, next, op); /* a 0-d tensor stands for its value */
    next++;
  } else {
    check_after_sizes(L, next, op);
  }
  l_checkopts(L, next, op, l_creation_opts);
  int def = (int)l_default_dtype();
  if (fk == FILL_VALUE) /* full infers from the value, as PyTorch does */
    def = cvalue ? (def == EM_FLOAT64 ? EM_COMPLEX128 : EM_COMPLEX64)
          : value.kind == EM_SCALAR_BOOL ? EM_BOOL
          : value.kind == EM_SCALAR_INT ? EM_INT64 : def;
  em_dtype dt = (em_dtype)l_optdtype(L, next, op, def);
  em_device dev = l_optdevice(L, next, op, em_cpu());
  int copy = cvalue && em_dtype_kindof(dt) == EM_KIND_COMPLEX;
  if (cvalue && !copy) value = l_value_arg(L, next - 1, op);
  if (fk == FILL_VALUE && !copy) l_check_scalar_fits(L, value, dt, op);
  em_tensor **box = l_newbox(L);
  em_status st;
  if (fk == FILL_NONE) st = em_empty(ndim, sizes, dt, dev, box);
  else if (fk == FILL_ZERO) st = em_zeros(ndim, sizes, dt, dev, box);
  else if (copy) {
    st = em_empty(ndim, sizes, dt, dev, box);
    if (st == EM_OK) st = em_copy_(*box, cvalue);
  } else st = em_full(ndim, sizes, value, dt, dev, box);
  if (st != EM_OK) creation_error(L, op);
  l_apply_requires_grad(L, next, *box);
  return 1;
}

static int l_empty(lua_State *L) { return make_filled(L, "empty", FILL_NONE); }
static int l_zeros(lua_State *L) { return make_filled(L, "zeros", FILL_ZERO); }
static int l_ones(lua_State *L) { return make_filled(L, "ones", FILL_ONE); }
static int l_full(lua_State *L) { return make_filled(L, "full", FILL_VALUE); }

static int make_like(lua_State *L, const char *op, fill_kind fk) {
  em_tensor *src = l_checktensor(L, 1, op);
  int next = 2;
  em_scalar value = {EM_SCALAR_INT, fk == FILL_ONE, 0};
  em_tensor *cvalue = fk == FILL_VALUE ? complex_value(L, next) : NULL;
  if (fk == FILL_VALUE) next++;
  l_checkopts(L, next, op, l_like_opts);
  em_dtype dt = (em_dtype)l_optdtype(L, next, op, (int)em_tensor_dtype(src));
  em_device dev = l_optdevice(L, next, op, em_tensor_device(src));
  int contig = l_like_contiguous(L, next, op);
  int copy = cvalue && em_dtype_kindof(dt) == EM_KIND_COMPLEX;
  if (fk == FILL_VALUE && !copy) {
    value = l_value_arg(L, next - 1, op);
    l_check_scalar_fits(L, value, dt, op);
  }
  em_tensor **box = l_newbox(L);
  em_status st = em_empty_like_on(src, dt, dev, contig, box);
  if (st == EM_OK && copy) st = em_copy_(*box, cvalue);
  else if (st == EM_OK && fk != FILL_NONE) st = em_fill_(*box, value);
  if (st != EM_OK) creation_error(L, op);
  l_apply_requires_grad(L, next, *box);
  return 1;
}

static int l_empty_like(lua_State *L) { return make_like(L, "empty_like", FILL_NONE); }
static int l_zeros_like(lua_State *L) { return make_like(L, "zeros_like", FILL_ZERO); }
static int l_ones_like(lua_State *L) { return make_like(L, "ones_like", FILL_ONE); }
static int l_full_like(lua_State *L) { return make_like(L, "full_like", FILL_VALUE); }

/* -- Conversion ----------------------------------------------------------- */

/* The box on the stack top holds the engine's result; when that is the very
** tensor at idx (nothing changed), the box is emptied and the argument's own
** Lua object replaces it, so `t:to(t.dtype) == t`. The box is made before
** the engine call (not after, as l_push_result does), so a Lua allocation
** failure can never strand the result. */
static void same_or_box(lua_State *L, int idx) {
  em_tensor **box = lua_touserdata(L, -1);
  if (*box && *box == l_totensor(L, idx)) {
    em_tensor_release(*box);
    *box = NULL;
    lua_pop(L, 1);
    lua_pushvalue(L, idx);
  }
}

static const char *const to_opts[] = {"dtype", "device", "copy", "non_blocking", NULL};

/* After a host -> cuda copy without non_blocking, the host waits for it, as
** PyTorch's copy does: the source (pinned memory is copied asynchronously)
** may then be changed at once. With non_blocking the copy stays queued on
** the current stream. A copy to the host always waits (its memory is
** pageable). */
static void finish_copy(lua_State *L, const char *op, const em_tensor *from, em_device to,
                        int non_blocking) {
  if (non_blocking || to.type != EM_CUDA || em_tensor_device(from).type != EM_CPU) return;
  if (em_cuda_synchronize(op, to.index) != EM_OK) l_error(L);
}

/* t:to(dtype | device | tensor | {dtype=, device=, copy=, non_blocking=})
** and the positional pair t:to(device, dtype). */
static int l_to(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "to");
  em_dtype dt = em_tensor_dtype(t);
  em_device dev = em_tensor_device(t);
  int copy = 0, non_blocking = 0, top = lua_gettop(L);
  for (int i = 2; i <= top; i++) {
    em_tensor *other;
    if (lua_isnil(L, i)) continue;
    if ((other = l_totensor(L, i))) {
      dt = em_tensor_dtype(other);
      dev = em_tensor_device(other);
    } else if (l_isdtype(L, i)) {
      dt = l_checkdtype(L, i, "to");
    } else if (l_isdevice(L, i)) {
      dev = l_checkdevice(L, i, "to");
    } else if (lua_type(L, i) == LUA_TSTRING) {
      const char *s = lua_tostring(L, i);
      if (em_dtype_from_name(strncmp(s, "ember.", 6) == 0 ? s + 6 : s) >= 0)
        dt = l_checkdtype(L, i, "to");
      else
        dev = l_checkdevice(L, i, "to");
    } else if (lua_istable(L, i)) {
      l_checkopts(L, i, "to", to_opts);
      dt = (em_dtype)l_optdtype(L, i, "to", (int)dt);
      dev = l_optdevice(L, i, "to", dev);
      copy = l_optbool(L, i, "copy", copy);
      non_blocking = l_optbool(L, i, "non_blocking", non_blocking);
    } else if (lua_type(L, i) == LUA_TBOOLEAN) {
      copy = lua_toboolean(L, i);
    } else {
      return l_errorf(L, "to: expected a dtype, device, tensor or options table "
                        "for argument #%d, got %s", i, luaL_typename(L, i));
    }
  }
  em_tensor **box = l_newbox(L);
  if (em_to(t, dt, dev, copy, box) != EM_OK) l_error(L);
  finish_copy(L, "to", t, dev, non_blocking);
  same_or_box(L, 1);
  return 1;
}

static int cast_to(lua_State *L, em_dtype dt, const char *op) {
  l_checknomore(L, 1, op);
  em_tensor *t = l_checktensor(L, 1, op);
  em_tensor **box = l_newbox(L);
  if (em_to(t, dt, em_tensor_device(t), 0, box) != EM_OK) l_error(L);
  same_or_box(L, 1);
  return 1;
}

#define CAST_METHOD(NAME, DT) \
  static int l_##NAME(lua_State *L) { return cast_to(L, DT, #NAME); }
CAST_METHOD(float, EM_FLOAT32)
CAST_METHOD(double, EM_FLOAT64)
CAST_METHOD(half, EM_FLOAT16)
CAST_METHOD(bfloat16, EM_BFLOAT16)
CAST_METHOD(long, EM_INT64)
CAST_METHOD(int, EM_INT32)
CAST_METHOD(short, EM_INT16)
CAST_METHOD(char, EM_INT8)
CAST_METHOD(byte, EM_UINT8)
CAST_METHOD(bool, EM_BOOL)

static const char *const move_opts[] = {"non_blocking", NULL};

/* opts: the stack index of an options table ({non_blocking=}) or 0 */
static int move_to(lua_State *L, em_device dev, const char *op, int nargs, int opts) {
  l_checknomore(L, nargs, op);
  em_tensor *t = l_checktensor(L, 1, op);
  int non_blocking = 0;
  if (opts) {
    l_checkopts(L, opts, op, move_opts);
    non_blocking = l_optbool(L, opts, "non_blocking", 0);
  }
  em_tensor **box = l_newbox(L);
  if (em_to(t, em_tensor_dtype(t), dev, 0, box) != EM_OK) l_error(L);
  finish_copy(L, op, t, dev, non_blocking);
  same_or_box(L, 1);
  return 1;
}

static int l_cpu(lua_State *L) { return move_to(L, em_cpu(), "cpu", 1, 0); }
/* t:cuda([index][, {non_blocking = bool}]) */
static int l_cuda(lua_State *L) {
  em_device d = {EM_CUDA, 0};
  int at = 2;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    d.index = (int)l_checkint(L, 2, "cuda", "device index");
    at = 3;
  }
  int opts = lua_istable(L, at) ? at : 0;
  return move_to(L, d, "cuda", opts ? at : at - 1, opts);
}

static const char *const clone_opts[] = {"memory_format", NULL};

/* clone(t[, {memory_format = "preserve" | "contiguous"}]): a copy with the
** same strides where t is dense (em_clone), or row-major on request. */
static int l_clone(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "clone");
  if (lua_gettop(L) > 2 && !lua_isnoneornil(L, 3))
    return l_errorf(L, "clone: unexpected argument #3 (%s)", luaL_typename(L, 3));
  l_checkopts(L, 2, "clone", clone_opts);
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "memory_format");
    const char *mf = lua_isnil(L, -1) ? "preserve" : lua_tostring(L, -1);
    if (!mf || (strcmp(mf, "preserve") != 0 && strcmp(mf, "contiguous") != 0))
      return l_errorf(L, "clone: memory_format must be 'preserve' or 'contiguous', got %s",
                      mf ? mf : luaL_typename(L, -1));
    int contig = strcmp(mf, "contiguous") == 0;
    lua_pop(L, 1);
    if (contig) {
      em_tensor **box = l_newbox(L);
      if (em_clone_contiguous(t, box) != EM_OK) l_error(L);
      return 1;
    }
  }
  em_tensor **box = l_newbox(L);
  if (em_clone(t, box) != EM_OK) l_error(L);
  return 1;
}

static int l_contiguous(lua_State *L) {
  l_checknomore(L, 1, "contiguous");
  em_tensor *t = l_checktensor(L, 1, "contiguous");
  em_tensor **box = l_newbox(L);
  if (em_contiguous(t, box) != EM_OK) l_error(L);
  same_or_box(L, 1);
  return 1;
}

static int l_copy_(lua_State *L) {
  l_checknomore(L, 2, "copy_");
  em_tensor *dst = l_checktensor(L, 1, "copy_");
  em_tensor *src = l_checktensor(L, 2, "copy_");
  if (em_copy_(dst, src) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_fill_(lua_State *L) {
  l_checknomore(L, 2, "fill_");
  em_tensor *dst = l_checktensor(L, 1, "fill_");
  em_tensor *src = l_totensor(L, 2);
  em_status st;
  if (src) {
    if (em_tensor_ndim(src) != 0)
      return l_errorf(L, "fill_: only supports a 0-dimension value tensor, but got "
                        "one with %d dimensions", em_tensor_ndim(src));
    if (em_dtype_kindof(em_tensor_dtype(dst)) != EM_KIND_COMPLEX)
      (void)l_value_arg(L, 2, "fill_"); /* a complex value's imaginary part must be 0 */
    st = em_copy_(dst, src);
  } else {
    em_scalar v = l_checkscalar(L, 2, "fill_");
    l_check_scalar_fits(L, v, em_tensor_dtype(dst), "fill_");
    st = em_fill_(dst, v);
  }
  if (st != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int l_zero_(lua_State *L) {
  l_checknomore(L, 1, "zero_");
  em_tensor *dst = l_checktensor(L, 1, "zero_");
  em_scalar z = {EM_SCALAR_INT, 0, 0};
  if (em_fill_(dst, z) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* -- Values --------------------------------------------------------------- */

static int l_item(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "item");
  l_checknomore(L, 1, "item");
  if (em_tensor_check_values("item", t) != EM_OK) l_error(L);
  int64_t n = em_tensor_numel(t);
  if (n != 1)
    return l_errorf(L, "item: a tensor with %lld elements cannot be converted to a "
                      "Lua number (item needs exactly one element)", (long long)n);
  l_pushelement(L, t, 0, "item");
  return 1;
}

static void tolist_rec(lua_State *L, const em_tensor *t, int dim, int64_t *pos) {
  int nd = em_tensor_ndim(t);
  if (dim == nd) {
    l_pushelement(L, t, (*pos)++, "tolist");
    return;
  }
  int64_t n = em_tensor_sizes(t)[dim];
  lua_createtable(L, n > 1 << 20 ? 1 << 20 : (int)n, 0);
  for (int64_t i = 0; i < n; i++) {
    tolist_rec(L, t, dim + 1, pos);
    lua_rawseti(L, -2, (int)(i + 1));
  }
}

static int l_tolist(lua_State *L) {
  l_checknomore(L, 1, "tolist");
  em_tensor *t = l_checktensor(L, 1, "tolist");
  if (em_tensor_check_values("tolist", t) != EM_OK) l_error(L);
  int64_t pos = 0;
  tolist_rec(L, t, 0, &pos);
  return 1;
}

/* -- Metadata ------------------------------------------------------------- */

static int l_size(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "size");
  l_nooptions(L, 2, 2, "size");
  int nd = em_tensor_ndim(t);
  if (lua_isnoneornil(L, 2)) {
    l_pushsize(L, nd, em_tensor_sizes(t));
    return 1;
  }
  int axis;
  if (nd == 0)
    return l_errorf(L, "size: dimension specified as %s but tensor has no dimensions",
                      lua_tostring(L, 2));
  if (em_wrap_dim("size", l_checkint(L, 2, "size", "dim"), nd, &axis) != EM_OK) l_error(L);
  lua_pushinteger(L, (lua_Integer)em_tensor_sizes(t)[axis]);
  return 1;
}

static int l_stride(lua_State *L) {
  l_nooptions(L, 2, 2, "stride");
  em_tensor *t = l_checktensor(L, 1, "stride");
  int nd = em_tensor_ndim(t);
  const int64_t *st = em_tensor_strides(t);
  if (lua_isnoneornil(L, 2)) {
    lua_createtable(L, nd, 0);
    for (int i = 0; i < nd; i++) {
      lua_pushinteger(L, (lua_Integer)st[i]);
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  int axis;
  if (nd == 0)
    return l_errorf(L, "stride: dimension specified as %s but tensor has no dimensions",
                      lua_tostring(L, 2));
  if (em_wrap_dim("stride", l_checkint(L, 2, "stride", "dim"), nd, &axis) != EM_OK)
    l_error(L);
  lua_pushinteger(L, (lua_Integer)st[axis]);
  return 1;
}

#define NUMBER_METHOD(NAME, EXPR)                      \
  static int l_##NAME(lua_State *L) {                  \
    em_tensor *t = l_checktensor(L, 1, #NAME);         \
    l_checknomore(L, 1, #NAME);                        \
    lua_pushinteger(L, (lua_Integer)(EXPR));           \
    return 1;                                          \
  }
NUMBER_METHOD(dim, em_tensor_ndim(t))
NUMBER_METHOD(numel, em_tensor_numel(t))
NUMBER_METHOD(storage_offset, em_tensor_offset(t))
NUMBER_METHOD(element_size, em_dtype_size(em_tensor_dtype(t)))
NUMBER_METHOD(nbytes, em_tensor_numel(t) * (int64_t)em_dtype_size(em_tensor_dtype(t)))
/* 0 for an empty tensor, as PyTorch's (TensorImpl::data is nullptr there) */
NUMBER_METHOD(data_ptr, em_tensor_numel(t) == 0 ? 0 : (uintptr_t)em_tensor_data(t))

static int l_is_contiguous(lua_State *L) {
  l_checknomore(L, 1, "is_contiguous");
  lua_pushboolean(L, em_tensor_is_contiguous(l_checktensor(L, 1, "is_contiguous")));
  return 1;
}

static int l_is_floating_point(lua_State *L) {
  l_checknomore(L, 1, "is_floating_point");
  em_tensor *t = l_checktensor(L, 1, "is_floating_point");
  lua_pushboolean(L, em_dtype_kindof(em_tensor_dtype(t)) == EM_KIND_FLOAT);
  return 1;
}


/* Properties */
static int p_shape(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "shape");
  l_pushsize(L, em_tensor_ndim(t), em_tensor_sizes(t));
  return 1;
}
static int p_ndim(lua_State *L) { return l_dim(L); }
static int p_dtype(lua_State *L) {
  l_pushdtype(L, em_tensor_dtype(l_checktensor(L, 1, "dtype")));
  return 1;
}
static int p_device(lua_State *L) {
  l_pushdevice(L, em_tensor_device(l_checktensor(L, 1, "device")));
  return 1;
}
static int p_is_cuda(lua_State *L) {
  lua_pushboolean(L, em_tensor_device(l_checktensor(L, 1, "is_cuda")).type == EM_CUDA);
  return 1;
}

void l_open_tensor(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"tensor", l_tensor},         {"Tensor", l_Tensor},
      {"empty", l_empty},           {"zeros", l_zeros},
      {"ones", l_ones},             {"full", l_full},
      {"empty_like", l_empty_like}, {"zeros_like", l_zeros_like},
      {"ones_like", l_ones_like},   {"full_like", l_full_like},
      {"clone", l_clone},           {"_tensor_flat", l_tensor_flat},
      {NULL, NULL}};
  static const luaL_Reg methods[] = {
      {"to", l_to},
      {"float", l_float},
      {"double", l_double},
      {"half", l_half},
      {"bfloat16", l_bfloat16},
      {"long", l_long},
      {"int", l_int},
      {"short", l_short},
      {"char", l_char},
      {"byte", l_byte},
      {"bool", l_bool},
      {"cpu", l_cpu},
      {"cuda", l_cuda},
      {"clone", l_clone},
      {"contiguous", l_contiguous},
      {"copy_", l_copy_},
      {"fill_", l_fill_},
      {"zero_", l_zero_},
      {"item", l_item},
      {"tolist", l_tolist},
      {"size", l_size},
      {"stride", l_stride},
      {"dim", l_dim},
      {"ndimension", l_dim},
      {"numel", l_numel},
      {"nelement", l_numel},
      {"storage_offset", l_storage_offset},
      {"element_size", l_element_size},
      {"nbytes", l_nbytes},
      {"data_ptr", l_data_ptr},
      {"is_contiguous", l_is_contiguous},
      {"is_floating_point", l_is_floating_point},
      {NULL, NULL}};
  static const luaL_Reg props[] = {
      {"shape", p_shape},
      {"ndim", p_ndim},
      {"dtype", p_dtype},
      {"device", p_device},
      {"is_cuda", p_is_cuda},
      {NULL, NULL}};
  l_add_functions(L, fns);
  l_add_methods(L, methods);
  l_add_props(L, props);
}
