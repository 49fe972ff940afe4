/*
** l_core.c -- the Lua module ember.core: the tensor userdata and its one
** __index/__newindex dispatch, dtype and device values, T.Size, argument
** and option checking, and the collector hook of DESIGN §4.
** A tensor userdata boxes exactly one em_tensor reference (or NULL after
** __gc); every Lua object for a tensor is made by l_newbox.
*/
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <stdatomic.h>
#include <stddef.h>

#include "l_ember.h"

/* Registry keys: addresses of these statics (one set per lua_State). */
static char K_TENSOR_MT, K_SIZE_MT, K_DTYPES, K_DTYPE_IDS, K_DEVICES, K_METHODS,
    K_PROPS, K_MODULE, K_ANCHOR, K_THREADS;
#if LUA_VERSION_NUM < 503
static char K_I64_MAKE, K_I64_PARTS; /* the boxed-int64 helpers (LuaJIT) */
#endif

static em_dtype default_dtype = EM_FLOAT32;
em_dtype l_default_dtype(void) { return default_dtype; }

static void getreg(lua_State *L, char *key) {
  lua_pushlightuserdata(L, key);
  lua_rawget(L, LUA_REGISTRYINDEX);
}

/* -- Boxes -------------------------------------------------------------- */

static void claim_pressure_hook(lua_State *L);

em_tensor **l_newbox(lua_State *L) {
  /* the engine call that fills this box may allocate: point this thread's
  ** pressure hook at the running coroutine (see "Memory pressure") */
  claim_pressure_hook(L);
  em_tensor **box = lua_newuserdata(L, sizeof(em_tensor *));
  *box = NULL;
  getreg(L, &K_TENSOR_MT);
  lua_setmetatable(L, -2);
  return box;
}

/* Is a metatable the tensor metatable? Every tensor argument of every call
** asks, so the answer is remembered per OS thread: the address of the
** tensor metatable of the last state that asked. While that state lives,
** no object of another state can have that address, so a match needs no
** check of which state is asking. Closing a state bumps state_epoch
** (l_unhook), which empties every thread's cache, so a later state reusing
** the address is never mistaken for it. A miss falls back to the registry
** lookup, which refills the cache. */
static atomic_ulong state_epoch;
static _Thread_local struct {
  const void *mt;
  unsigned long epoch;
} mt_cache;

em_tensor *l_totensor(lua_State *L, int idx) {
  em_tensor **box = lua_touserdata(L, idx);
  if (!box || !lua_getmetatable(L, idx)) return NULL;
  const void *mt = lua_topointer(L, -1);
  if (mt == mt_cache.mt &&
      mt_cache.epoch == atomic_load_explicit(&state_epoch, memory_order_relaxed)) {
    lua_pop(L, 1);
    return *box;
  }
  getreg(L, &K_TENSOR_MT);
  int ok = lua_rawequal(L, -1, -2);
  if (ok) {
    mt_cache.mt = mt;
    mt_cache.epoch = atomic_load_explicit(&state_epoch, memory_order_relaxed);
  }
  lua_pop(L, 2);
  return ok ? *box : NULL;
}

em_tensor *l_checktensor(lua_State *L, int idx, const char *op) {
  claim_pressure_hook(L);
  em_tensor *t = l_totensor(L, idx);
  if (!t)
    l_errorf(L, "%s: expected a tensor for argument #%d, got %s", op, idx,
               luaL_typename(L, idx));
  return t;
}

int l_errorf(lua_State *L, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  luaL_where(L, 1);
  lua_pushstring(L, buf);
  lua_concat(L, 2);
  return lua_error(L);
}

int l_error(lua_State *L) { return l_errorf(L, "%s", em_last_error()); }
/* The engine's error under the name the user called: an engine op shared by
** several entry points (scatter_ for scatter_add_) names itself; a message
** that starts "inner: " is raised as "op: ...". */
int l_error_as(lua_State *L, const char *inner, const char *op) {
  const char *m = em_last_error();
  size_t n = strlen(inner);
  if (strncmp(m, inner, n) == 0 && m[n] == ':') return l_errorf(L, "%s%s", op, m + n);
  return l_errorf(L, "%s", m);
}

void l_push_result(lua_State *L, em_tensor *result, int idx) {
  if (idx != 0 && l_totensor(L, idx) == result) {
    em_tensor_release(result);
    lua_pushvalue(L, idx);
    return;
  }
  em_tensor **box = l_newbox(L);
  *box = result;
}

void ember_lua_push_tensor(lua_State *L, em_tensor *t) {
  em_tensor **box = l_newbox(L);
  *box = t;
}

em_tensor *ember_lua_to_tensor(lua_State *L, int idx) { return l_totensor(L, idx); }

/* -- Numbers and sizes -------------------------------------------------- */

/* Exact integers (docs/dtypes.md, "Integers in Lua"). Lua 5.4 has 64-bit
** integers: values cross as lua_Integer. LuaJIT has only doubles, plus the
** FFI's boxed int64_t/uint64_t: a value within +-2^53 crosses as a number
** and one beyond as a boxed int64_t, made and taken apart by two small Lua
** functions (the C API cannot make cdata), registered per state by
** l_open_core. A boxed value has lua_type 10 (LuaJIT's LUA_TCDATA). */
#define L_TCDATA 10
#define L_EXACT_DOUBLE 9007199254740992.0 /* 2^53 */

#if LUA_VERSION_NUM < 503
static const char I64_HELPERS[] =
    "local ok, ffi = pcall(require, 'ffi')\n"
    "if not ok then return end\n"
    "local i64, u64, istype, tonumber = ffi.typeof('int64_t'), ffi.typeof('uint64_t'), ffi.istype, tonumber\n"
    "return function(hi, lo) return i64(hi) * 4294967296 + lo end,\n"
    "  function(v)\n"
    "    local signed = istype(i64, v)\n"
    "    if not signed and not istype(u64, v) then return nil end\n"
    "    local u = u64(v)\n"
    "    return tonumber(u / 4294967296), tonumber(u % 4294967296), signed\n"
    "  end\n";

static void open_int64(lua_State *L) {
  if (luaL_loadbuffer(L, I64_HELPERS, sizeof I64_HELPERS - 1, "=ember.int64") != 0 ||
      lua_pcall(L, 0, 2, 0) != 0) {
    lua_pop(L, 1); /* no FFI: values beyond 2^53 are refused */
    return;
  }
  lua_pushlightuserdata(L, &K_I64_PARTS);
  lua_insert(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
  lua_pushlightuserdata(L, &K_I64_MAKE);
  lua_insert(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
}
#endif

void l_pushint64(lua_State *L, int64_t v) {
#if LUA_VERSION_NUM >= 503
  lua_pushinteger(L, (lua_Integer)v);
#else
  if (v >= -(INT64_C(1) << 53) && v <= (INT64_C(1) << 53)) {
    lua_pushnumber(L, (lua_Number)v);
    return;
  }
  getreg(L, &K_I64_MAKE);
  if (!lua_isfunction(L, -1))
    l_errorf(L, "int64 value %lld cannot be represented exactly as a Lua number "
               "(a double) and this Lua has no FFI int64_t", (long long)v);
  uint64_t u = (uint64_t)v;
  lua_pushnumber(L, (lua_Number)(uint32_t)(u >> 32));
  lua_pushnumber(L, (lua_Number)(uint32_t)u);
  lua_call(L, 2, 1);
#endif
}

int l_isint64box(lua_State *L, int idx) { return lua_type(L, idx) == L_TCDATA; }

int l_toint64(lua_State *L, int idx, int64_t *out, const char *op) {
  int t = lua_type(L, idx);
  if (t == LUA_TNUMBER) {
#if LUA_VERSION_NUM >= 503
    if (lua_isinteger(L, idx)) {
      *out = (int64_t)lua_tointeger(L, idx);
      return 1;
    }
#endif
    double v = lua_tonumber(L, idx);
    if (v == floor(v) && fabs(v) < 9223372036854775808.0) {
      *out = (int64_t)v;
      return 1;
    }
    return 0;
  }
#if LUA_VERSION_NUM < 503
  if (t == L_TCDATA) {
    int abs = idx > 0 || idx <= LUA_REGISTRYINDEX ? idx : lua_gettop(L) + idx + 1;
    getreg(L, &K_I64_PARTS);
    if (!lua_isfunction(L, -1)) { lua_pop(L, 1); return 0; }
    lua_pushvalue(L, abs);
    lua_call(L, 1, 3);
    if (lua_isnil(L, -3)) { lua_pop(L, 3); return 0; }
    uint64_t u = ((uint64_t)lua_tonumber(L, -3) << 32) | (uint64_t)lua_tonumber(L, -2);
    int is_signed = lua_toboolean(L, -1);
    lua_pop(L, 3);
    if (!is_signed && u > (uint64_t)INT64_MAX)
      l_errorf(L, "%s: uint64 value %llu is out of the int64 range", op, (unsigned long long)u);
    *out = (int64_t)u;
    return 1;
  }
#else
  (void)op;
#endif
  return 0;
}

int64_t l_checkint(lua_State *L, int idx, const char *op, const char *what) {
  /* a 0-d integer tensor is an integer, as PyTorch's int arguments take one
  ** (x:narrow(1, T.tensor(2), 3)) */
  em_tensor *x0 = lua_type(L, idx) == LUA_TUSERDATA ? l_totensor(L, idx) : NULL;
  if (x0 && em_tensor_ndim(x0) == 0 && em_dtype_kindof(em_tensor_dtype(x0)) == EM_KIND_INT) {
    int64_t v;
    if (em_get_i64(x0, 0, &v) != EM_OK) l_error(L);
    return v;
  }
  if (lua_type(L, idx) != LUA_TNUMBER)
    l_errorf(L, "%s: expected an integer for %s, got %s", op, what,
               luaL_typename(L, idx));
  double v = lua_tonumber(L, idx);
  if (v != v) l_errorf(L, "%s: expected an integer for %s, got nan", op, what);
  if (!(v == floor(v)))
    l_errorf(L, "%s: expected an integer for %s, got %.14g", op, what, v);
  if (!(fabs(v) < 9223372036854775808.0))
    l_errorf(L, "%s: %s = %.14g is out of the int64 range", op, what, v);
  return (int64_t)v;
}

/* l_checkint for element pos of a list named what: "what[pos]" is only
** formatted when the value is refused (formatting it for every size of
** every view was a snprintf per argument on the success path). */
int64_t l_checkint_at(lua_State *L, int idx, const char *op, const char *what, int pos) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    double v = lua_tonumber(L, idx);
    if (v == floor(v) && fabs(v) < 9223372036854775808.0) return (int64_t)v;
  }
  char name[64];
  snprintf(name, sizeof name, "%s[%d]", what, pos);
  return l_checkint(L, idx, op, name);
}

/* Sizes and positions given as arguments from idx: n numbers were read.
** A nil where they start (T.zeros(nil), x:view(nil)), or a nil between
** them and a later argument (T.zeros(2, nil, 3)), is refused naming the op
** and the argument, never read as the end of the list (issue 21). A nil
** after the numbers with nothing after it is a trailing argument, as
** Lua passes it. */
void l_check_no_hole(lua_State *L, int idx, int n, const char *op, const char *what) {
  int top = lua_gettop(L), p = idx + n;
  if (p > top || !lua_isnil(L, p)) return;
  int later = 0;
  for (int k = p + 1; k <= top && !later; k++) later = !lua_isnil(L, k);
  if (n == 0 || later)
    l_errorf(L, "%s: argument #%d is nil: expected %s (a nil cannot stand for a size "
               "or end a list early)", op, p, what);
}

static int is_size_table(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return 0;
  if (lua_getmetatable(L, idx)) {
    getreg(L, &K_SIZE_MT);
    int is = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (is) return 1;
  }
  if (lua_objlen(L, idx) > 0) return 1;
  lua_pushnil(L);
  if (lua_next(L, idx) == 0) return 1;  /* {} is the empty size */
  lua_pop(L, 2);
  return 0;
}

int l_isopts(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return 0;
  if (lua_getmetatable(L, idx)) { /* a T.Size or other object, not options */
    lua_pop(L, 1);
    return 0;
  }
  return !is_size_table(L, idx);
}

int l_checksizes(lua_State *L, int idx, const char *op, int64_t *sizes, int *next) {
  claim_pressure_hook(L);
  int n = 0;
  if (lua_type(L, idx) == LUA_TTABLE && is_size_table(L, idx)) {
    int len = (int)lua_objlen(L, idx);
    if (len > EM_MAX_DIMS)
      l_errorf(L, "%s: %d dimensions requested, at most %d are supported", op, len,
                 (int)EM_MAX_DIMS);
    for (int i = 1; i <= len; i++) {
      lua_rawgeti(L, idx, i);
      sizes[n++] = l_checkint_at(L, -1, op, "size", i);
      lua_pop(L, 1);
    }
    *next = idx + 1;
  } else {
    while (lua_type(L, idx + n) == LUA_TNUMBER) {
      if (n == EM_MAX_DIMS)
        l_errorf(L, "%s: more than %d dimensions requested", op, (int)EM_MAX_DIMS);
      sizes[n] = l_checkint_at(L, idx + n, op, "size", n + 1);
      n++;
    }
    l_check_no_hole(L, idx, n, op, "a size");
    *next = idx + n;
  }
  for (int i = 0; i < n; i++)
    if (sizes[i] < 0) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (int j = 0; j < n; j++) {
        char num[32];
        snprintf(num, sizeof num, j ? ", %lld" : "%lld", (long long)sizes[j]);
        luaL_addstring(&b, num);
      }
      luaL_pushresult(&b);
      l_errorf(L, "%s: negative dimension %lld in size [%s]", op,
                 (long long)sizes[i], lua_tostring(L, -1));
    }
  return n;
}

/* -- Options ------------------------------------------------------------ */

const char *const l_creation_opts[] = {"dtype", "device", "requires_grad", NULL};
const char *const l_like_opts[] = {"dtype", "device", "requires_grad", "memory_format", NULL};

/* The *_like functions' memory_format: "preserve" (the default: the source's
** layout, PyTorch's preserve_format) or "contiguous"; 1 for contiguous. */
int l_like_contiguous(lua_State *L, int opts, const char *op) {
  if (!lua_istable(L, opts)) return 0;
  lua_getfield(L, opts, "memory_format");
  int contig = 0;
  if (!lua_isnil(L, -1)) {
    const char *mf = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!mf || (strcmp(mf, "preserve") != 0 && strcmp(mf, "contiguous") != 0))
      l_errorf(L, "%s: memory_format must be 'preserve' or 'contiguous', got %s", op,
               mf ? mf : luaL_typename(L, -1));
    contig = strcmp(mf, "contiguous") == 0;
  }
  lua_pop(L, 1);
  return contig;
}

void l_apply_requires_grad(lua_State *L, int opts, em_tensor *t) {
  if (l_optbool(L, opts, "requires_grad", 0) && em_tensor_set_requires_grad(t, 1) != EM_OK)
    l_error(L);
}

/* Options whose value must be a boolean, whichever op takes them: checked
** here once, so `{requires_grad = "yes"}` is an error everywhere. */
static const char *const bool_opts[] = {
    "requires_grad", "copy", "keepdim", "non_blocking", "pin_memory",
    "unbiased", "largest", "sorted", "stable", "descending", "mmap",
    "return_inverse", "return_counts", "inplace", "right", NULL};

static int is_one_of(const char *k, const char *const *list) {
  for (; *list; list++)
    if (strcmp(k, *list) == 0) return 1;
  return 0;
}

void l_checkopts(lua_State *L, int idx, const char *op, const char *const *allowed) {
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx))
    l_errorf(L, "%s: expected an options table for argument #%d, got %s", op, idx,
             luaL_typename(L, idx));
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int v = lua_gettop(L);
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pushvalue(L, -2);
      l_errorf(L, "%s: unexpected positional entry [%s] in the options table", op,
               lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1)
                                              : luaL_typename(L, -1));
    }
    const char *k = lua_tostring(L, -2);
    if (!is_one_of(k, allowed)) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (const char *const *a = allowed; *a; a++) {
        if (a != allowed) luaL_addstring(&b, ", ");
        luaL_addstring(&b, *a);
      }
      luaL_pushresult(&b);
      l_errorf(L, "%s: unknown option '%s' (expected one of: %s)", op, k,
               lua_tostring(L, -1));
    }
    if (is_one_of(k, bool_opts) && lua_type(L, v) != LUA_TBOOLEAN)
      l_errorf(L, "%s: option '%s' must be a boolean, got %s", op, k,
               luaL_typename(L, v));
    if (strcmp(k, "dtype") == 0) l_checkdtype(L, v, op);
    if (strcmp(k, "device") == 0) l_checkdevice(L, v, op);
    lua_pop(L, 1);
  }
}

/* A table in an argument slot that holds a list: an options table when it has
** no [1] and some string key. */
int l_isoptions(lua_State *L, int idx) {
  if (!lua_istable(L, idx) || l_isdtype(L, idx)) return 0;
  lua_rawgeti(L, idx, 1);
  int has1 = !lua_isnil(L, -1);
  lua_pop(L, 1);
  if (has1) return 0;
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return 0;
}

void l_nooptions(lua_State *L, int from, int n, const char *op) {
  int top = lua_gettop(L);
  for (int i = from; i <= top; i++) {
    if (lua_isnil(L, i) || (i <= n && !lua_istable(L, i)) || (i <= n && l_isdtype(L, i)))
      continue;
    if (lua_istable(L, i)) {
      lua_pushnil(L);
      while (lua_next(L, i)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING)
          l_errorf(L, "%s: unknown option '%s' (%s takes no options)", op,
                   lua_tostring(L, -1), op);
      }
      l_errorf(L, "%s: takes no options (got a table for argument #%d)", op, i);
    }
    l_errorf(L, "%s: unexpected argument #%d (%s): %s takes at most %d arguments", op, i,
             luaL_typename(L, i), op, n);
  }
}

void l_checknomore(lua_State *L, int n, const char *op) { l_nooptions(L, n + 1, n, op); }

const char *const l_out_opts[] = {"out", NULL};

/* The options table of an op whose result can go to `out` (docs/math.md,
** "out="): checks its keys against allowed (which lists "out"), refuses an
** argument after it, and returns the out tensor with its Lua value pushed
** (*outidx its stack index), or NULL with nothing pushed. */
em_tensor *l_opt_out(lua_State *L, int idx, const char *op, const char *const *allowed,
                     int *outidx) {
  *outidx = 0;
  if (lua_gettop(L) > idx && !lua_isnoneornil(L, idx + 1))
    l_errorf(L, "%s: unexpected argument #%d (%s)", op, idx + 1, luaL_typename(L, idx + 1));
  l_checkopts(L, idx, op, allowed);
  return lua_istable(L, idx) ? l_out_field(L, idx, op, outidx) : NULL;
}

em_tensor *l_out_field(lua_State *L, int opts, const char *op, int *outidx) {
  lua_getfield(L, opts, "out");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  em_tensor *out = l_totensor(L, -1);
  if (!out)
    l_errorf(L, "%s: expected a tensor for option 'out', got %s", op, luaL_typename(L, -1));
  if (em_check_out(op, out) != EM_OK) l_error(L);
  *outidx = lua_gettop(L);
  return out;
}

/* Ends such an op: box (on the stack top) holds the fresh result; with out
** it is written there (em_write_out: same dtype; an empty out is resized,
** another shape is an error; not differentiable) and out's Lua value is
** returned instead. */
int l_out_result(lua_State *L, em_tensor **box, em_tensor *out, int outidx, const char *op) {
  if (!out) return 1;
  em_status st = em_write_out(op, *box, out);
  em_tensor_release(*box);
  *box = NULL;
  if (st != EM_OK) l_error(L);
  lua_pushvalue(L, outidx);
  return 1;
}

int l_isdtype(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return 0;
  getreg(L, &K_DTYPE_IDS);
  lua_pushvalue(L, idx < 0 ? idx - 1 : idx);
  lua_rawget(L, -2);
  int is = !lua_isnil(L, -1);
  lua_pop(L, 2);
  return is;
}

static int todtype(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TSTRING) {
    const char *name = lua_tostring(L, idx);
    if (strncmp(name, "ember.", 6) == 0) name += 6;
    return em_dtype_from_name(name);
  }
  if (!lua_istable(L, idx)) return -1;
  getreg(L, &K_DTYPE_IDS);
  lua_pushvalue(L, idx < 0 ? idx - 1 : idx);
  lua_rawget(L, -2);
  int id = lua_isnil(L, -1) ? -1 : (int)lua_tointeger(L, -1);
  lua_pop(L, 2);
  return id;
}

em_dtype l_checkdtype(lua_State *L, int idx, const char *op) {
  int id = todtype(L, idx);
  if (id < 0) {
    if (lua_type(L, idx) == LUA_TSTRING) {
      char names[256] = "";
      for (int i = 0; i < EM_NUM_DTYPES; i++) {
        if (i) strncat(names, ", ", sizeof names - strlen(names) - 1);
        strncat(names, em_dtype_name((em_dtype)i), sizeof names - strlen(names) - 1);
      }
      l_errorf(L, "%s: unknown dtype '%s' (expected one of %s, or an alias such "
               "as long, int, float, double, half, byte)", op, lua_tostring(L, idx),
               names);
    }
    l_errorf(L, "%s: expected a dtype, got %s", op, luaL_typename(L, idx));
  }
  return (em_dtype)id;
}

int l_optdtype(lua_State *L, int idx, const char *op, int def) {
  if (!lua_istable(L, idx)) return def;
  lua_getfield(L, idx, "dtype");
  if (lua_isnil(L, -1)) { lua_pop(L, 1); return def; }
  int id = (int)l_checkdtype(L, lua_gettop(L), op);
  lua_pop(L, 1);
  return id;
}

int l_optbool(lua_State *L, int idx, const char *key, int def) {
  if (!lua_istable(L, idx)) return def;
  lua_getfield(L, idx, key);
  int v = lua_isnil(L, -1) ? def : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* -- dtype values ------------------------------------------------------- */

void l_pushdtype(lua_State *L, em_dtype dt) {
  getreg(L, &K_DTYPES);
  lua_rawgeti(L, -1, (int)dt + 1);
  lua_remove(L, -2);
}

static int dtype_tostring(lua_State *L) {
  lua_getfield(L, 1, "name");
  lua_pushfstring(L, "ember.%s", lua_tostring(L, -1));
  return 1;
}

static void make_dtypes(lua_State *L, int module) {
  lua_pushlightuserdata(L, &K_DTYPES);
  lua_createtable(L, EM_NUM_DTYPES, 0);
  lua_pushlightuserdata(L, &K_DTYPE_IDS);
  lua_createtable(L, 0, EM_NUM_DTYPES);
  lua_createtable(L, 0, 2); /* the metatable shared by dtype values */
  lua_pushcfunction(L, dtype_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "ember.dtype");
  lua_setfield(L, -2, "__name");
  int mt = lua_gettop(L), ids = mt - 1, arr = mt - 3;
  for (int i = 0; i < EM_NUM_DTYPES; i++) {
    em_dtype dt = (em_dtype)i;
    lua_createtable(L, 0, 6);
    lua_pushstring(L, em_dtype_name(dt));
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, (lua_Integer)em_dtype_size(dt));
    lua_setfield(L, -2, "itemsize");
    lua_pushboolean(L, em_dtype_kindof(dt) == EM_KIND_FLOAT);
    lua_setfield(L, -2, "is_floating_point");
    lua_pushboolean(L, em_dtype_is_signed(dt));
    lua_setfield(L, -2, "is_signed");
    lua_pushboolean(L, em_dtype_kindof(dt) == EM_KIND_COMPLEX);
    lua_setfield(L, -2, "is_complex");
    lua_pushvalue(L, mt);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, arr, i + 1);
    lua_pushvalue(L, -1);
    lua_pushinteger(L, i);
    lua_rawset(L, ids);
    lua_setfield(L, module, em_dtype_name(dt));
  }
  static const char *const aliases[][2] = {
      {"long", "int64"}, {"int", "int32"},     {"short", "int16"},
      {"byte", "uint8"}, {"char", "int8"},     {"half", "float16"},
      {"float", "float32"}, {"double", "float64"}};
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
    lua_getfield(L, module, aliases[i][1]);
    lua_setfield(L, module, aliases[i][0]);
  }
  lua_pop(L, 1);                        /* metatable */
  lua_rawset(L, LUA_REGISTRYINDEX);     /* K_DTYPE_IDS */
  lua_rawset(L, LUA_REGISTRYINDEX);     /* K_DTYPES */
}

/* -- Device values -------------------------------------------------------
** Interned by name, so `t.device == T.device("cpu")` holds. */

static int parse_device(const char *s, em_device *d) {
  if (strcmp(s, "cpu") == 0) { d->type = EM_CPU; d->index = 0; return 1; }
  if (strcmp(s, "meta") == 0) { d->type = EM_META; d->index = 0; return 1; }
  if (strcmp(s, "cuda") == 0) { d->type = EM_CUDA; d->index = 0; return 1; }
  int idx, n = 0;
  if (sscanf(s, "cuda:%d%n", &idx, &n) == 1 && s[n] == '\0' && idx >= 0) {
    d->type = EM_CUDA; d->index = idx; return 1;
  }
  return 0;
}

static int device_tostring(lua_State *L) {
  lua_getfield(L, 1, "_name");
  return 1;
}

void l_pushdevice(lua_State *L, em_device dev) {
  char name[32];
  em_device_str(dev, name, sizeof name);
  getreg(L, &K_DEVICES);
  lua_getfield(L, -1, name);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 3);
    lua_pushstring(L, dev.type == EM_CPU ? "cpu" : dev.type == EM_META ? "meta" : "cuda");
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, dev.index);
    lua_setfield(L, -2, "index");
    lua_pushstring(L, name);
    lua_setfield(L, -2, "_name");
    lua_getfield(L, -2, "__mt");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, name);
  }
  lua_remove(L, -2);
}

int l_isdevice(lua_State *L, int idx) {
  if (!lua_istable(L, idx) || !lua_getmetatable(L, idx)) return 0;
  getreg(L, &K_DEVICES);
  lua_getfield(L, -1, "__mt");
  int is = lua_rawequal(L, -1, -3);
  lua_pop(L, 3);
  return is;
}

em_device l_checkdevice(lua_State *L, int idx, const char *op) {
  em_device d = em_cpu();
  if (lua_type(L, idx) == LUA_TSTRING) {
    if (!parse_device(lua_tostring(L, idx), &d))
      l_errorf(L, "%s: unknown device '%s' (expected 'cpu', 'meta', 'cuda' or 'cuda:N')", op,
                 lua_tostring(L, idx));
    return d;
  }
  if (l_isdevice(L, idx)) {
    lua_getfield(L, idx, "_name");
    parse_device(lua_tostring(L, -1), &d);
    lua_pop(L, 1);
    return d;
  }
  l_errorf(L, "%s: expected a device, got %s", op, luaL_typename(L, idx));
  return d;
}

em_device l_optdevice(lua_State *L, int idx, const char *op, em_device def) {
  if (!lua_istable(L, idx)) return def;
  lua_getfield(L, idx, "device");
  if (lua_isnil(L, -1)) { lua_pop(L, 1); return def; }
  em_device d = l_checkdevice(L, lua_gettop(L), op);
  lua_pop(L, 1);
  return d;
}

static int l_device_new(lua_State *L) {
  l_checknomore(L, 1, "device");
  l_pushdevice(L, l_checkdevice(L, 1, "device"));
  return 1;
}

/* -- Sizes and scalars --------------------------------------------------- */

void l_pushsize(lua_State *L, int n, const int64_t *sizes) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)sizes[i]);
    lua_rawseti(L, -2, i + 1);
  }
  getreg(L, &K_SIZE_MT);
  lua_setmetatable(L, -2);
}

em_scalar l_checkscalar(lua_State *L, int idx, const char *op) {
  em_scalar s = {EM_SCALAR_INT, 0, 0};
  if (lua_type(L, idx) == LUA_TBOOLEAN) {
    s.kind = EM_SCALAR_BOOL;
    s.i = lua_toboolean(L, idx);
    return s;
  }
  if (lua_type(L, idx) != LUA_TNUMBER) {
    if (l_isint64box(L, idx) && l_toint64(L, idx, &s.i, op)) { /* LuaJIT's boxed int64 */
      s.f = (double)s.i;
      return s;
    }
    l_errorf(L, "%s: expected a number, got %s", op, luaL_typename(L, idx));
  }
  double v = lua_tonumber(L, idx);
#if LUA_VERSION_NUM >= 503
  if (lua_isinteger(L, idx)) { /* Lua 5.4: math.type decides, and the value is exact */
    s.i = (int64_t)lua_tointeger(L, idx);
    s.f = (double)s.i;
    return s;
  }
  int integral = 0;
#else
  /* -0.0 stays a float, so a float destination keeps its sign */
  int integral = v == floor(v) && fabs(v) < 9223372036854775808.0 && !(v == 0 && signbit(v));
#endif
  if (integral) {
    s.i = (int64_t)v;
    s.f = v;
  } else {
    s.kind = EM_SCALAR_FLOAT;
    s.f = v;
  }
  return s;
}

void l_pushelement(lua_State *L, const em_tensor *t, int64_t pos, const char *op) {
  em_dtype dt = em_tensor_dtype(t);
  if (dt == EM_BOOL) {
    int64_t v;
    if (em_get_i64(t, pos, &v) != EM_OK) l_error(L);
    lua_pushboolean(L, v != 0);
  } else if (dt <= EM_INT64) { /* the integer dtypes: exact (l_pushint64) */
    int64_t v;
    if (em_get_i64(t, pos, &v) != EM_OK) l_error(L);
    (void)op;
    l_pushint64(L, v);
  } else if (em_dtype_kindof(dt) == EM_KIND_COMPLEX) { /* a {re, im} pair */
    double c[2];
    if (em_get_complex(t, pos, c) != EM_OK) l_error(L);
    lua_createtable(L, 2, 0);
    lua_pushnumber(L, c[0]);
    lua_rawseti(L, -2, 1);
    lua_pushnumber(L, c[1]);
    lua_rawseti(L, -2, 2);
  } else {
    double v;
    if (em_get_f64(t, pos, &v) != EM_OK) l_error(L);
    lua_pushnumber(L, v);
  }
}

/* -- The tensor metatable ------------------------------------------------ */

static int l_tensor_gc(lua_State *L) {
  em_tensor **box = lua_touserdata(L, 1);
  if (box && *box) {
    em_tensor_release(*box);
    *box = NULL;
  }
  return 0;
}

/* upvalues: 1 methods, 2 property getters */
static int l_tensor_index(lua_State *L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    if (!lua_isnil(L, -1)) return 1;
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(2));
    if (lua_isnil(L, -1)) return 1;
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
  }
  return l_index_get(L);
}

static int l_tensor_newindex(lua_State *L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    /* settable properties are "set_<name>" entries of the getters table */
    lua_pushfstring(L, "set_%s", lua_tostring(L, 2));
    lua_rawget(L, lua_upvalueindex(2));
    if (lua_isnil(L, -1))
      return l_errorf(L, "cannot set field '%s' of a tensor", lua_tostring(L, 2));
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 3);
    /* the setter's error at the assignment's line: raised inside the
    ** setter (a C function called from here), it has no position */
    if (lua_pcall(L, 2, 0, 0) != 0) {
      if (lua_type(L, -1) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
      }
      return lua_error(L);
    }
    return 0;
  }
  return l_index_set(L);
}

static int l_tensor_len(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "#");
  if (em_tensor_ndim(t) == 0) return l_errorf(L, "#: len() of a 0-d tensor");
  lua_pushinteger(L, (lua_Integer)em_tensor_sizes(t)[0]);
  return 1;
}

/* Placeholder printing until the Lua layer installs its __tostring. */
static int l_tensor_tostring(lua_State *L) {
  lua_pushfstring(L, "ember.Tensor: %p", lua_topointer(L, 1));
  return 1;
}

static void tablekey(lua_State *L, char *key) {
  lua_pushlightuserdata(L, key);
  lua_newtable(L);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

void l_add_methods(lua_State *L, const luaL_Reg *fns) {
  getreg(L, &K_METHODS);
  for (; fns->name; fns++) {
    lua_pushcfunction(L, fns->func);
    lua_setfield(L, -2, fns->name);
  }
  lua_pop(L, 1);
}

void l_add_props(lua_State *L, const luaL_Reg *fns) {
  getreg(L, &K_PROPS);
  for (; fns->name; fns++) {
    lua_pushcfunction(L, fns->func);
    lua_setfield(L, -2, fns->name);
  }
  lua_pop(L, 1);
}

void l_add_functions(lua_State *L, const luaL_Reg *fns) {
  getreg(L, &K_MODULE);
  for (; fns->name; fns++) {
    lua_pushcfunction(L, fns->func);
    lua_setfield(L, -2, fns->name);
  }
  lua_pop(L, 1);
}

/* -- Memory pressure (DESIGN §4) ----------------------------------------- */

#define SOFT_LIMIT_FLOOR_MB 16

/* The engine keeps one pressure hook per OS thread; it must collect the Lua
** state whose code is allocating, on the coroutine that is running: a
** collection run on any other thread of the state (a parked helper thread,
** say) runs the finalizers there and leaves LuaJIT's idea of the running
** coroutine wrong -- measured: a segfault soon after. So every binding
** entry point that may allocate (l_newbox, l_checktensor, l_checksizes)
** claims the hook for the running coroutine L (TLS active_L; a pointer
** compare when it is already the one). Between Lua calls active_L may be
** parked or dead: the hook looks it up in a weak table of the state first
** (through the state's anchor thread, by API calls that run no Lua code),
** and a collected coroutine is never touched. A state's sentinel __gc
** unhooks the thread when the state closes. Limitation (docs/memory.md):
** an engine call that bypasses the binding (a C host, or LuaJIT's FFI) is
** collected for only when the coroutine that last called the binding is
** dead or yielded (then nothing is collected) or is the one running. */
/* The next soft limit after a forced collection (see l_pressure). */
static const size_t SOFT_LIMIT_FLOOR = (size_t)SOFT_LIMIT_FLOOR_MB << 20;
enum { HEAP_FACTOR = 4, REQUEST_FACTOR = 4, PACE_FACTOR = 32 };
/* EMBER_GC_PACE (read when the module first opens): the pace factor, 0
** turns the pace term off; l_open_core refuses anything but a whole number
** from 0 to 1000. -1: not read yet. */
static _Atomic int pace_factor = -1;
#define REQUEST_ALLOWANCE_MAX_MB 64
#define PACE_ALLOWANCE_MAX_MB 64
static const size_t REQUEST_ALLOWANCE_MAX = (size_t)REQUEST_ALLOWANCE_MAX_MB << 20;
static const size_t PACE_ALLOWANCE_MAX = (size_t)PACE_ALLOWANCE_MAX_MB << 20;
static _Thread_local lua_State *active_L;      /* the coroutine to collect on */
static _Thread_local lua_State *active_anchor; /* its state's anchor thread */
static _Thread_local int in_pressure;          /* no nested collections */
/* How often the hook ran, for T.memory_stats (tests and tuning). */
static _Atomic long forced_collections, failed_allocations;

/* Is active_L still a live coroutine of its state, and not parked in a
** yield (a yielded coroutine is certainly not the one running)? */
static int active_is_alive(void) {
  lua_State *A = active_anchor;
  if (!A || !active_L || !lua_checkstack(A, 3)) return 0;
  lua_pushlightuserdata(A, &K_THREADS);
  lua_rawget(A, LUA_REGISTRYINDEX);
  if (!lua_istable(A, -1)) { lua_pop(A, 1); return 0; }
  lua_pushlightuserdata(A, active_L);
  lua_rawget(A, -2);
  int alive = lua_tothread(A, -1) == active_L;
  lua_pop(A, 2);
  return alive && lua_status(active_L) == 0;
}

/* The collection runs in protected mode: LuaJIT re-raises an error thrown
** by a __gc finalizer out of lua_gc, and here that would unwind through the
** engine's allocation frames (which hold memory). Such an error is dropped,
** as Lua 5.2+ does with finalizer errors in its own collector. */
static int gc_protected(lua_State *L) {
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}

/* The soft limit after a full collection: this thread's live bytes (the
** survivors) plus an allowance of new bytes before the next forced
** collection, the largest of:
** - the survivors again: they may double first;
** - HEAP_FACTOR times the Lua heap: a full collection costs about the heap
**   it marks, so tensor garbage of a few heaps pays for it (a script with a
**   large heap of Lua tables collects less often);
** - the pace term: as many bytes as this thread made between the last two
**   forced collections per CPU second, times the pace factor (PACE_FACTOR,
**   32; the environment's EMBER_GC_PACE, 0 for none) times the last
**   collection's CPU time, averaged with the term before, up to
**   PACE_ALLOWANCE_MAX_MB. In steady state the collections then take about
**   1/32 (3%) of the thread's time.
**   A collection marks a heap that the tensor traffic since the last one
**   has pushed out of cache: ember's own 2.5 MB heap (its Lua modules) took
**   0.9 ms to collect back to back and 3.1 ms between 64 matmuls of
**   256x256 (pointer chasing at DRAM latency), against ~20 us to stream a
**   MB; with only the other terms (16 MiB of garbage per collection) the
**   collections were most of an allocating `a + b` on 256K floats (93-98
**   us against 37 us into an out=) and 10-15% of `T.mm` of 256x256. The
**   price is memory: garbage up to the cap waits for the collector (the
**   nginx example's workers rose from 40-60 MB to 67-90 MB resident), and
**   EMBER_GC_PACE=0 buys the old rule back. The cap: blocks are cold in
**   DRAM long before it, and 4 MB results were slower at 160 MB of garbage
**   per collection than at 80 (docs/memory.md has the runs);
** - REQUEST_FACTOR times the request that forced this collection, up to
**   REQUEST_ALLOWANCE_MAX_MB: a loop whose temporaries are a good part of
**   the floor (8 MB results with a 16 MB floor) otherwise collects on
**   every call, and the collection was 6-14% of an rfft of 2^20 doubles;
**   such blocks are past the caches anyway, and past the cap a block costs
**   far more to touch than a collection;
** - the floor, SOFT_LIMIT_FLOOR_MB. Small, so that temporaries are freed
**   and their blocks reused while they are still warm in cache: with a
**   floor of 256 MiB every result of a loop of 256x256 matmuls was a block
**   last touched 1,000 calls before (docs/memory.md has the numbers).
** A failed request (T.empty(1e12)) calls the hook again with failed set,
** which sets the limit without it: a request that cannot be served must
** not leave a limit of terabytes and no forced collection ever after. */
/* The floor the engine lets the limit follow the live bytes down to
** (em_set_soft_limits) when survivors die outside the hook (a script's own
** collectgarbage()) is the heap and floor terms: after a large working set
** is gone, a loop of small temporaries then collects at the floor again
** instead of at twice the old set (measured: T.mm of 256x256 after a 256 MB
** tensor was freed, 4.0-4.4 ms a call against 1.3-1.9 on a loaded VM). */
static void set_next_soft_limit(lua_State *L, size_t requested, size_t pace) {
  size_t live = em_memory_thread_live_bytes();
  size_t heap = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024;
  size_t floor = SOFT_LIMIT_FLOOR;
  if (heap * HEAP_FACTOR > floor) floor = heap * HEAP_FACTOR;
  if (pace > floor) floor = pace;
  size_t allow = floor > live ? floor : live;
  size_t req = requested < REQUEST_ALLOWANCE_MAX / REQUEST_FACTOR
                   ? requested * REQUEST_FACTOR
                   : REQUEST_ALLOWANCE_MAX;
  if (req > allow) allow = req;
  em_set_soft_limits(live + allow, floor);
}

/* This thread's CPU time in ns (0 when the clock is unavailable). */
static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The pace term of set_next_soft_limit: the bytes made per CPU second since
** the end of the last forced collection, times the pace factor times this
** collection's CPU time (gc_ns), up to PACE_ALLOWANCE_MAX; 0 without a
** previous forced collection on this thread. */
static _Thread_local uint64_t pace_end_ns, pace_end_alloc;
static _Thread_local double pace_avg; /* the term, averaged over collections */
static size_t pace_allowance(uint64_t start_ns, uint64_t gc_ns, uint64_t made) {
  if (pace_factor <= 0 || !pace_end_ns || start_ns <= pace_end_ns || !gc_ns) return 0;
  double rate = (double)made / (double)(start_ns - pace_end_ns); /* bytes per ns */
  double pace = rate * (double)pace_factor * (double)gc_ns;
  if (pace > (double)PACE_ALLOWANCE_MAX) pace = (double)PACE_ALLOWANCE_MAX;
  /* one slow collection (a descheduled thread, a page fault storm) moves
  ** the term half way, not all the way */
  pace_avg = pace_avg > 0 ? (pace_avg + pace) / 2 : pace;
  return (size_t)pace_avg;
}

static void l_pressure(void *ctx, size_t requested, int failed) {
  (void)ctx;
  if (in_pressure || !active_is_alive() || !lua_checkstack(active_L, 4)) return;
  in_pressure = 1;
  if (failed) failed_allocations++;
  else forced_collections++;
  uint64_t made = em_memory_thread_allocated_bytes() - pace_end_alloc + requested;
  uint64_t t0 = thread_cpu_ns();
#if LUA_VERSION_NUM >= 502 /* Lua 5.4 has no lua_cpcall */
  lua_pushcfunction(active_L, gc_protected);
  if (lua_pcall(active_L, 0, 0, 0) != 0) lua_pop(active_L, 1);
#else
  if (lua_cpcall(active_L, gc_protected, NULL) != 0) lua_pop(active_L, 1);
#endif
  uint64_t t1 = thread_cpu_ns();
  in_pressure = 0;
  /* a failed request says nothing about the pace: it keeps none */
  size_t pace = failed || !t0 || t1 < t0 ? 0 : pace_allowance(t0, t1 - t0, made);
  pace_end_ns = t1;
  pace_end_alloc = em_memory_thread_allocated_bytes() + (failed ? 0 : requested);
  set_next_soft_limit(active_L, failed ? 0 : requested, pace);
}

static void claim_pressure_hook(lua_State *L) {
  if (L == active_L) return;
  getreg(L, &K_ANCHOR);
  lua_State *anchor = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (!anchor) return; /* still inside luaopen_ember_core */
  getreg(L, &K_THREADS); /* weak values: [lightuserdata L] = L */
  lua_pushlightuserdata(L, L);
  lua_pushthread(L);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  active_L = L;
  active_anchor = anchor;
  em_set_pressure_hook(l_pressure, NULL);
  /* a thread's first hook starts from the policy's limit rather than the
  ** engine's default for threads without a collector (256 MiB) */
  static _Thread_local int limit_set;
  if (!limit_set) {
    limit_set = 1;
    set_next_soft_limit(L, 0, 0);
  }
}

/* __gc of the sentinel userdata that holds this state's anchor thread: the
** state is closing. Unhook this thread if it targets the state, and drop the
** anchor from the registry so that a tensor made by a later finalizer of
** this state cannot claim the hook again (claim needs the anchor). */
static int l_unhook(lua_State *L) {
  atomic_fetch_add(&state_epoch, 1); /* forget the metatable (l_totensor) */
  lua_State **p = lua_touserdata(L, 1);
  if (p && *p && *p == active_anchor) {
    em_set_pressure_hook(NULL, NULL);
    active_L = active_anchor = NULL;
  }
  lua_pushlightuserdata(L, &K_ANCHOR);
  lua_pushnil(L);
  lua_rawset(L, LUA_REGISTRYINDEX);
  return 0;
}

static int l_memory_stats(lua_State *L) {
  l_checknomore(L, 0, "memory_stats");
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)em_memory_live_bytes());
  lua_setfield(L, -2, "live_bytes");
  lua_pushinteger(L, (lua_Integer)em_memory_thread_live_bytes());
  lua_setfield(L, -2, "thread_live_bytes");
  lua_pushinteger(L, (lua_Integer)em_get_soft_limit());
  lua_setfield(L, -2, "soft_limit");
  lua_pushinteger(L, (lua_Integer)forced_collections);
  lua_setfield(L, -2, "forced_collections");
  lua_pushinteger(L, (lua_Integer)failed_allocations);
  lua_setfield(L, -2, "failed_allocations");
  long hits = 0, misses = 0;
  em_memory_cache_counts(&hits, &misses);
  lua_pushinteger(L, (lua_Integer)em_memory_cached_bytes());
  lua_setfield(L, -2, "cached_bytes");
  lua_pushinteger(L, (lua_Integer)hits);
  lua_setfield(L, -2, "cache_hits");
  lua_pushinteger(L, (lua_Integer)misses);
  lua_setfield(L, -2, "cache_misses");
  return 1;
}

/* T.empty_cache(): hands the cached freed blocks back to the OS. */
static int l_empty_cache(lua_State *L) {
  l_checknomore(L, 0, "empty_cache");
  (void)L;
  em_memory_empty_cache();
  return 0;
}

/* -- Module functions ----------------------------------------------------- */

static int l_is_tensor(lua_State *L) {
  l_checknomore(L, 1, "is_tensor");
  lua_pushboolean(L, l_totensor(L, 1) != NULL);
  return 1;
}

static int l_set_default_dtype(lua_State *L) {
  l_checknomore(L, 1, "set_default_dtype");
  em_dtype dt = l_checkdtype(L, 1, "set_default_dtype");
  if (em_dtype_kindof(dt) != EM_KIND_FLOAT)
    return l_errorf(L, "set_default_dtype: only floating-point types are supported "
                      "as the default type, got ember.%s", em_dtype_name(dt));
  default_dtype = dt;
  return 0;
}

static int l_get_default_dtype(lua_State *L) {
  l_checknomore(L, 0, "get_default_dtype");
  l_pushdtype(L, default_dtype);
  return 1;
}

static int l_use_deterministic(lua_State *L) {
  l_checknomore(L, 1, "use_deterministic_algorithms");
  if (lua_type(L, 1) != LUA_TBOOLEAN)
    return l_errorf(L, "use_deterministic_algorithms: expected a boolean, got %s",
                    luaL_typename(L, 1));
  em_set_deterministic(lua_toboolean(L, 1));
  return 0;
}

static int l_are_deterministic(lua_State *L) {
  l_checknomore(L, 0, "are_deterministic_algorithms_enabled");
  lua_pushboolean(L, em_get_deterministic());
  return 1;
}

static int l_is_dtype(lua_State *L) {
  l_checknomore(L, 1, "is_dtype");
  lua_pushboolean(L, l_isdtype(L, 1));
  return 1;
}

static int l_cuda_is_available(lua_State *L) {
  lua_pushboolean(L, em_cuda_available());
  return 1;
}

/* The core area (l_init.c opens it first): the module table at index 1,
** the registry tables, the tensor metatable, dtype and device values, and
** the collector hook. Returns 1, with the module at index 1, when the
** module was opened before in this state (busted restores package.loaded
** between files; a host may open it twice): the same module is handed
** back, so dtype values, metatables and the collector hook stay the ones
** tensors use. */
/* EMBER_GC_PACE: unset or empty is PACE_FACTOR; a bad value is refused
** when the module opens, naming it. */
static int read_pace_factor(lua_State *L) {
  const char *e = getenv("EMBER_GC_PACE");
  if (!e || !*e) return PACE_FACTOR;
  char *end = NULL;
  long v = strtol(e, &end, 10);
  if (*end || v < 0 || v > 1000)
    luaL_error(L, "ember: EMBER_GC_PACE must be a whole number from 0 (no pace term) to 1000, "
                  "got '%s'", e);
  return (int)v;
}

int l_open_core(lua_State *L) {
  getreg(L, &K_MODULE);
  if (lua_istable(L, -1)) return 1;
  lua_pop(L, 1);
  if (pace_factor < 0) pace_factor = read_pace_factor(L);
  lua_newtable(L); /* 1: module */
  lua_pushlightuserdata(L, &K_MODULE);
  lua_pushvalue(L, 1);
  lua_rawset(L, LUA_REGISTRYINDEX);
  tablekey(L, &K_METHODS);
  tablekey(L, &K_PROPS);
  tablekey(L, &K_SIZE_MT);
  tablekey(L, &K_DEVICES);
  getreg(L, &K_DEVICES);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, device_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_setfield(L, -2, "__mt");
  lua_pop(L, 1);

  /* the tensor metatable */
  lua_pushlightuserdata(L, &K_TENSOR_MT);
  lua_createtable(L, 0, 8);
  getreg(L, &K_METHODS);
  getreg(L, &K_PROPS);
  lua_pushcclosure(L, l_tensor_index, 2);
  lua_pushvalue(L, -1);
  lua_setfield(L, 1, "_tensor_index"); /* kept for lua/ember/tensor.lua */
  lua_setfield(L, -2, "__index");
  getreg(L, &K_METHODS);
  getreg(L, &K_PROPS);
  lua_pushcclosure(L, l_tensor_newindex, 2);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, l_tensor_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_tensor_len);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, l_tensor_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "ember.Tensor");
  lua_setfield(L, -2, "__name");
  lua_pushvalue(L, -1);
  lua_setfield(L, 1, "_Tensor_mt");
  lua_rawset(L, LUA_REGISTRYINDEX);

  getreg(L, &K_METHODS);
  lua_setfield(L, 1, "_methods");
  getreg(L, &K_PROPS);
  lua_setfield(L, 1, "_props");
  getreg(L, &K_SIZE_MT);
  lua_setfield(L, 1, "_Size_mt");
  make_dtypes(L, 1);

  static const luaL_Reg fns[] = {
      {"is_tensor", l_is_tensor},
      {"is_dtype", l_is_dtype},
      {"device", l_device_new},
      {"set_default_dtype", l_set_default_dtype},
      {"get_default_dtype", l_get_default_dtype},
      {"use_deterministic_algorithms", l_use_deterministic},
      {"are_deterministic_algorithms_enabled", l_are_deterministic},
      {"memory_stats", l_memory_stats},
      {"empty_cache", l_empty_cache},
      {"_cuda_is_available", l_cuda_is_available},
      {NULL, NULL}};
  l_add_functions(L, fns);

  /* the collector hook runs on a thread of our own, anchored in the
  ** registry, so it never refers to a coroutine that may be collected */
  /* the memory-pressure bookkeeping: a weak table of the coroutines that
  ** made tensors, an anchor thread to read it with, and a sentinel that
  ** unhooks the engine when the state closes -- once per state: opening the
  ** module again (busted restores package.loaded between files) must not
  ** replace the anchor a thread's hook may point to */
  getreg(L, &K_ANCHOR);
  int have_anchor = lua_isthread(L, -1);
  lua_pop(L, 1);
  if (!have_anchor) {
    lua_pushlightuserdata(L, &K_THREADS);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, &K_ANCHOR);
    lua_State *anchor = lua_newthread(L);
    lua_rawset(L, LUA_REGISTRYINDEX);
    lua_State **sentinel = lua_newuserdata(L, sizeof *sentinel);
    *sentinel = anchor;
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_unhook);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    luaL_ref(L, LUA_REGISTRYINDEX);
  }
  claim_pressure_hook(L);
#if LUA_VERSION_NUM < 503
  open_int64(L);
#endif
  lua_settop(L, 1);
  return 0;
}

/* The registry's tables for the areas that need them (l_layout.c). */
void l_push_dtype_values(lua_State *L) { getreg(L, &K_DTYPES); }
void l_push_size_mt(lua_State *L) { getreg(L, &K_SIZE_MT); }
