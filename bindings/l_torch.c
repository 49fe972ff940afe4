/*
** l_torch.c -- PyTorch checkpoints from Lua: T.load_torch, T.save_torch,
** T.None and T.torch_kind (docs/serialization.md, "PyTorch checkpoints").
** The engine (io/torch.c) reads and writes the files and their Python value
** tree (em_pytree); this file turns that tree into Lua values and back:
**
**   None           T.None (a sentinel; Lua's nil cannot sit in a table)
**   bool, str      boolean, string (bytes too; a string that is not UTF-8
**                  is written back as bytes)
**   int, float     integer (LuaJIT: a number, a boxed int64_t past 2^53), number
**   tuple, list    an array 1..n whose metatable's __torch is "tuple"/"list"
**   dict,          a table whose metatable's __torch is "dict"/"OrderedDict"
**   OrderedDict    and whose keys() gives the keys in the file's order, as
**                  Module:state_dict() does
**   tensor         a tensor (tensors that shared a storage share one)
**   torch.float32  T.float32 (each dtype)
**
** Saving reads the same metatables; a table without one is a list when its
** keys are exactly 1..n (n >= 1), otherwise a dict (keys sorted: numbers,
** then strings, then booleans). A value reached twice is written once and
** loads as one object in PyTorch, as the pickle's memo does.
**
** Nothing C owns is held across a Lua error: the tree sits in a guard
** userdata whose __gc frees it.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "l_ember.h"

static char K_NONE, K_TREE_MT, K_LIST_MT, K_TUPLE_MT, K_DICT_MT, K_ODICT_MT;

enum { MAX_DEPTH = 200 };

static void getreg(lua_State *L, void *key) {
  lua_pushlightuserdata(L, key);
  lua_rawget(L, LUA_REGISTRYINDEX);
}

static int is_none(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA) return 0;
  getreg(L, &K_NONE);
  int is = lua_rawequal(L, idx < 0 ? idx - 1 : idx, -1);
  lua_pop(L, 1);
  return is;
}

/* -- The guard ------------------------------------------------------------- */

typedef struct {
  em_pytree *t;
} tree_box;

static int tree_gc(lua_State *L) {
  tree_box *b = lua_touserdata(L, 1);
  em_pytree_free(b->t);
  b->t = NULL;
  return 0;
}

static tree_box *push_tree_box(lua_State *L) {
  tree_box *b = lua_newuserdata(L, sizeof *b);
  b->t = NULL;
  getreg(L, &K_TREE_MT);
  lua_setmetatable(L, -2);
  return b;
}

/* -- Loading: the tree as Lua values ------------------------------------------ */

typedef struct {
  const em_pytree *t;
  int cache;  /* stack index: node -> its Lua value (containers, tensors) */
} dec;

static int keys_fn(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  return 1;
}

/* The metatable of a loaded dict: __torch = kind, __index.keys(). */
static void push_dict_mt(lua_State *L, const char *kind, int keys) {
  lua_createtable(L, 0, 2);
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "__torch");
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, keys);
  lua_pushcclosure(L, keys_fn, 1);
  lua_setfield(L, -2, "keys");
  lua_setfield(L, -2, "__index");
}

static const char *pykind_name(em_pykind k) {
  static const char *const names[] = {"None", "bool", "int", "float", "str", "bytes",
                                      "tuple", "list", "dict", "OrderedDict", "tensor",
                                      "dtype", "object"};
  return (unsigned)k <= EM_PY_OTHER ? names[k] : "object";
}

static void push_node(lua_State *L, dec *d, int64_t id, int depth);

static void push_int(lua_State *L, int64_t v) {
#if LUA_VERSION_NUM >= 503
  lua_pushinteger(L, (lua_Integer)v);
#else
  lua_pushnumber(L, (lua_Number)v);
#endif
}

/* cache[id] = the value on top (left there) */
static void cache_set(lua_State *L, dec *d, int64_t id) {
  push_int(L, id);
  lua_pushvalue(L, -2);
  lua_rawset(L, d->cache);
}

static void push_container(lua_State *L, dec *d, int64_t id, const em_pyvalue *v, int depth) {
  int dict = v->kind == EM_PY_DICT || v->kind == EM_PY_ODICT;
  lua_createtable(L, dict ? 0 : (v->n > 1024 ? 1024 : (int)v->n),
                  dict ? (v->n > 1024 ? 1024 : (int)v->n) : 0);
  int tbl = lua_gettop(L);
  cache_set(L, d, id);
  if (!dict) {
    getreg(L, v->kind == EM_PY_TUPLE ? (void *)&K_TUPLE_MT : (void *)&K_LIST_MT);
    lua_setmetatable(L, tbl);
    for (int64_t i = 0; i < v->n; i++) {
      push_node(L, d, em_pytree_item(d->t, id, i), depth + 1);
      lua_rawseti(L, tbl, (int)i + 1);
    }
    return;
  }
  lua_createtable(L, (int)(v->n > 1024 ? 1024 : v->n), 0); /* keys, in order */
  int keys = lua_gettop(L), nkeys = 0;
  for (int64_t i = 0; i < v->n; i++) {
    int64_t k = em_pytree_item(d->t, id, 2 * i);
    em_pyvalue kv;
    em_pytree_get(d->t, k, &kv);
    if (kv.kind != EM_PY_NONE && kv.kind != EM_PY_BOOL && kv.kind != EM_PY_INT &&
        kv.kind != EM_PY_FLOAT && kv.kind != EM_PY_STR && kv.kind != EM_PY_BYTES)
      l_errorf(L, "load_torch: a dict key is a %s (ember's tables take None, bools, "
                  "numbers and strings as keys)", pykind_name(kv.kind));
    if (kv.kind == EM_PY_FLOAT && isnan(kv.f)) l_errorf(L, "load_torch: a dict key is NaN");
    push_node(L, d, k, depth + 1);
    lua_pushvalue(L, -1);
    lua_rawget(L, tbl);
    int fresh = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (fresh) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, keys, ++nkeys);
    }
    push_node(L, d, em_pytree_item(d->t, id, 2 * i + 1), depth + 1);
    lua_rawset(L, tbl);
  }
  push_dict_mt(L, v->kind == EM_PY_ODICT ? "OrderedDict" : "dict", keys);
  lua_setmetatable(L, tbl);
  lua_settop(L, tbl);
}

static void push_node(lua_State *L, dec *d, int64_t id, int depth) {
  luaL_checkstack(L, 8, "load_torch: nesting too deep");
  if (depth > MAX_DEPTH) l_errorf(L, "load_torch: values nested deeper than %d", MAX_DEPTH);
  em_pyvalue v;
  if (em_pytree_get(d->t, id, &v) != EM_OK) l_error(L);
  switch (v.kind) {
    case EM_PY_NONE: getreg(L, &K_NONE); return;
    case EM_PY_BOOL: lua_pushboolean(L, (int)v.i); return;
    case EM_PY_INT: l_pushint64(L, v.i); return; /* exact: a boxed int64_t past 2^53 (LuaJIT) */
    case EM_PY_FLOAT: lua_pushnumber(L, v.f); return;
    case EM_PY_STR:
    case EM_PY_BYTES: lua_pushlstring(L, v.s, v.len); return;
    case EM_PY_DTYPE: l_pushdtype(L, v.dtype); return;
    case EM_PY_OTHER:
      l_errorf(L, "load_torch: the file holds the Python object '%s' as a value "
                  "(ember has no value for it)", v.s);
      return;
    default: break;
  }
  push_int(L, id);
  lua_rawget(L, d->cache);
  if (!lua_isnil(L, -1)) return;
  lua_pop(L, 1);
  if (v.kind == EM_PY_TENSOR) {
    em_tensor_retain(v.tensor);
    ember_lua_push_tensor(L, v.tensor);
    cache_set(L, d, id);
    return;
  }
  push_container(L, d, id, &v, depth);
}

static const char *check_path(lua_State *L, const char *op) {
  if (lua_type(L, 1) != LUA_TSTRING)
    l_errorf(L, "%s: expected a file path (a string) for argument #1, got %s", op,
             luaL_typename(L, 1));
  return lua_tostring(L, 1);
}

/* T.load_torch(path) */
static int l_load_torch(lua_State *L) {
  const char *path = check_path(L, "load_torch");
  l_checknomore(L, 1, "load_torch");
  lua_settop(L, 1);
  tree_box *b = push_tree_box(L); /* 2 */
  if (em_torch_load(path, &b->t) != EM_OK) return l_error(L);
  lua_newtable(L); /* 3: cache */
  dec d = {b->t, 3};
  push_node(L, &d, em_pytree_root(b->t), 0);
  return 1;
}

/* -- Saving: Lua values as a tree ----------------------------------------------- */

typedef struct {
  em_pytree *t;
  int cache;  /* stack index: table/userdata/string -> node id */
  int hosts;  /* stack index: device storages' host copies, and their views (l_push_host) */
  int nhost;
} enc;

static int64_t add(lua_State *L, enc *e, const em_pyvalue *v) {
  int64_t id;
  if (em_pytree_add(e->t, v, &id) != EM_OK) l_error(L);
  return id;
}

static void append(lua_State *L, enc *e, int64_t c, int64_t item) {
  if (em_pytree_append(e->t, c, item) != EM_OK) l_error(L);
}

/* Is s well-formed UTF-8 (surrogates allowed, as Python's surrogatepass)? */
static int is_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    int k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (k < 0 || n - i - 1 < (size_t)k) return 0;
    uint32_t cp = k == 0 ? c : k == 1 ? c & 0x1f : k == 2 ? c & 0x0f : c & 0x07;
    for (int j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10ffff) return 0;
    i += (size_t)k + 1;
  }
  return 1;
}

static int64_t add_value(lua_State *L, enc *e, int idx, int depth, const char *where);

/* A key's place in a message: ".name", "['a b']" or "[3]". */
static const char *field(lua_State *L, int key, char *buf, size_t n) {
  if (lua_type(L, key) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, key, &len);
    int ident = len > 0 && len <= 60 && !(s[0] >= '0' && s[0] <= '9');
    for (size_t i = 0; i < len && ident; i++)
      ident = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_';
    if (ident) snprintf(buf, n, ".%s", s);
    else snprintf(buf, n, "['%.60s']", s);
  } else if (lua_type(L, key) == LUA_TNUMBER) {
    snprintf(buf, n, "[%.17g]", lua_tonumber(L, key));
  } else {
    snprintf(buf, n, "[%s]", luaL_typename(L, key));
  }
  return buf;
}

typedef struct {
  int type;       /* 0 number, 1 string, 2 boolean, 3 None */
  double num;
  const char *s;
  size_t len;
  int slot;       /* the key's position in the keys array */
} keyref;

static int key_cmp(const void *a, const void *b) {
  const keyref *x = a, *y = b;
  if (x->type != y->type) return x->type - y->type;
  if (x->type == 0) return (x->num > y->num) - (x->num < y->num);
  if (x->type == 1) {
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
  }
  if (x->type == 2) return (int)x->num - (int)y->num;
  return 0;
}

/* The keys of table tbl into a fresh array at the top: the metatable's
** keys() order first (Module:state_dict, loaded dicts), then the rest sorted. */
static void ordered_keys(lua_State *L, int tbl) {
  lua_newtable(L);
  int keys = lua_gettop(L), n = 0;
  lua_newtable(L);
  int seen = lua_gettop(L);
  if (lua_getmetatable(L, tbl)) {
    lua_getfield(L, -1, "__index");
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "keys");
      if (lua_isfunction(L, -1)) {
        lua_pushvalue(L, tbl);
        lua_call(L, 1, 1);
        if (lua_istable(L, -1)) {
          int list = lua_gettop(L);
          for (int i = 1;; i++) {
            lua_rawgeti(L, list, i);
            if (lua_isnil(L, -1)) {
              lua_pop(L, 1);
              break;
            }
            lua_pushvalue(L, -1);
            lua_rawget(L, tbl);
            lua_pushvalue(L, -2);
            lua_rawget(L, seen);
            int take = !lua_isnil(L, -2) && lua_isnil(L, -1);
            lua_pop(L, 2);
            if (take) {
              lua_pushvalue(L, -1);
              lua_pushboolean(L, 1);
              lua_rawset(L, seen);
              lua_rawseti(L, keys, ++n);
            } else {
              lua_pop(L, 1);
            }
          }
        }
      }
    }
    lua_settop(L, seen);
  }
  int first_rest = n + 1;
  lua_pushnil(L);
  while (lua_next(L, tbl)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawget(L, seen);
    int was = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!was) {
      lua_pushvalue(L, -1);
      lua_rawseti(L, keys, ++n);
    }
  }
  int rest = n - first_rest + 1;
  if (rest > 1) {
    keyref *r = lua_newuserdata(L, (size_t)rest * sizeof *r);
    for (int i = 0; i < rest; i++) {
      lua_rawgeti(L, keys, first_rest + i);
      keyref *k = &r[i];
      k->slot = first_rest + i;
      k->s = NULL;
      k->len = 0;
      k->num = 0;
      switch (lua_type(L, -1)) {
        case LUA_TNUMBER: k->type = 0; k->num = lua_tonumber(L, -1); break;
        case LUA_TSTRING: k->type = 1; k->s = lua_tolstring(L, -1, &k->len); break;
        case LUA_TBOOLEAN: k->type = 2; k->num = lua_toboolean(L, -1); break;
        default: k->type = 3; break;
      }
      lua_pop(L, 1); /* strings stay anchored by the keys array */
    }
    qsort(r, (size_t)rest, sizeof *r, key_cmp);
    lua_createtable(L, rest, 0);
    for (int i = 0; i < rest; i++) {
      lua_rawgeti(L, keys, r[i].slot);
      lua_rawseti(L, -2, i + 1);
    }
    for (int i = 0; i < rest; i++) {
      lua_rawgeti(L, -1, i + 1);
      lua_rawseti(L, keys, first_rest + i);
    }
    lua_pop(L, 2);
  }
  lua_settop(L, keys);
}

/* The kind a table is written as. */
static em_pykind table_kind(lua_State *L, int tbl, const char *where) {
  const char *mark = NULL;
  int has_keys = 0;
  if (lua_getmetatable(L, tbl)) {
    lua_getfield(L, -1, "__torch");
    mark = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_getfield(L, -2, "__index");
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "keys");
      has_keys = lua_isfunction(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 3); /* the string stays valid: it is a field of the metatable */
  }
  if (mark) {
    if (strcmp(mark, "dict") == 0) return EM_PY_DICT;
    if (strcmp(mark, "OrderedDict") == 0) return EM_PY_ODICT;
    if (strcmp(mark, "list") == 0) return EM_PY_LIST;
    if (strcmp(mark, "tuple") == 0) return EM_PY_TUPLE;
    l_errorf(L, "save_torch: %s is marked __torch = '%s' (expected 'dict', 'OrderedDict', "
                "'list' or 'tuple')", where, mark);
  }
  if (has_keys) return EM_PY_ODICT;
  if (lua_getmetatable(L, tbl)) { /* a T.Size is a tuple */
    l_push_size_mt(L);
    int size = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (size) return EM_PY_TUPLE;
  }
  size_t n = lua_objlen(L, tbl), count = 0;
  lua_pushnil(L);
  while (lua_next(L, tbl)) {
    count++;
    lua_pop(L, 1);
  }
  if (n > 0 && count == n) {
    int seq = 1;
    for (size_t i = 1; i <= n && seq; i++) {
      lua_rawgeti(L, tbl, (int)i);
      seq = !lua_isnil(L, -1);
      lua_pop(L, 1);
    }
    if (seq) return EM_PY_LIST;
  }
  return EM_PY_DICT;
}

static int64_t add_table(lua_State *L, enc *e, int tbl, int depth, const char *where) {
  em_pykind kind = table_kind(L, tbl, where);
  em_pyvalue v = {.kind = kind};
  int64_t id = add(L, e, &v);
  lua_pushvalue(L, tbl);
  push_int(L, id);
  lua_rawset(L, e->cache);
  char buf[96];
  if (kind == EM_PY_LIST || kind == EM_PY_TUPLE) {
    const char *kn = kind == EM_PY_LIST ? "list" : "tuple";
    lua_Number n = 0;
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, tbl)) {
      count++;
      lua_Number k = lua_type(L, -2) == LUA_TNUMBER ? lua_tonumber(L, -2) : 0;
      if (k < 1 || k != floor(k) || k > 2147483647.0) {
        int kt = lua_type(L, -2);
        if (kt == LUA_TSTRING) snprintf(buf, sizeof buf, "'%.60s'", lua_tostring(L, -2));
        else if (kt == LUA_TNUMBER) snprintf(buf, sizeof buf, "%.17g", lua_tonumber(L, -2));
        else snprintf(buf, sizeof buf, "(a %s)", luaL_typename(L, -2));
        l_errorf(L, "save_torch: %s is a %s but has the key %s (a %s holds items 1..n)", where,
                 kn, buf, kn);
      }
      if (k > n) n = k;
      lua_pop(L, 1);
    }
    if ((lua_Number)count != n)
      l_errorf(L, "save_torch: %s is a %s with holes (%d items, the last at [%d])", where, kn,
               (int)count, (int)n);
    for (int i = 1; i <= (int)n; i++) {
      lua_rawgeti(L, tbl, i);
      snprintf(buf, sizeof buf, "%.60s[%d]", where, i);
      int64_t item = add_value(L, e, lua_gettop(L), depth + 1, buf);
      append(L, e, id, item);
      lua_pop(L, 1);
    }
    return id;
  }
  ordered_keys(L, tbl);
  int keys = lua_gettop(L);
  for (int i = 1;; i++) {
    lua_rawgeti(L, keys, i);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    int k = lua_gettop(L);
    int kt = lua_type(L, k);
    if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN && !is_none(L, k))
      l_errorf(L, "save_torch: %s has a %s as a key (PyTorch's dict keys here are strings, "
                  "numbers, booleans or T.None)", where, luaL_typename(L, k));
    if (kt == LUA_TBOOLEAN) { /* Python's True == 1 and False == 0: one key would be lost */
      int b = lua_toboolean(L, k);
      lua_pushnumber(L, b);
      lua_rawget(L, tbl);
      if (!lua_isnil(L, -1))
        l_errorf(L, "save_torch: %s has both %s and %d as keys (equal keys in Python: one "
                    "entry would be lost)", where, b ? "true" : "false", b);
      lua_pop(L, 1);
    }
    append(L, e, id, add_value(L, e, k, depth + 1, where));
    lua_pushvalue(L, k);
    lua_rawget(L, tbl);
    char sub[160];
    snprintf(sub, sizeof sub, "%.60s%s", where, field(L, k, buf, sizeof buf));
    append(L, e, id, add_value(L, e, lua_gettop(L), depth + 1, sub));
    lua_settop(L, keys);
  }
  lua_pop(L, 1);
  return id;
}

static int64_t add_value(lua_State *L, enc *e, int idx, int depth, const char *where) {
  luaL_checkstack(L, 12, "save_torch: nesting too deep");
  if (depth > MAX_DEPTH) l_errorf(L, "save_torch: values nested deeper than %d", MAX_DEPTH);
  em_pyvalue v = {.kind = EM_PY_NONE};
  int t = lua_type(L, idx);
  if (t == LUA_TBOOLEAN) {
    v.kind = EM_PY_BOOL;
    v.i = lua_toboolean(L, idx);
    return add(L, e, &v);
  }
  if (t == LUA_TNUMBER) {
    double d = lua_tonumber(L, idx);
#if LUA_VERSION_NUM >= 503
    int integral = lua_isinteger(L, idx);
#else
    /* -0.0 stays a float: an int would lose its sign */
    int integral = d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
                   !(d == 0 && signbit(d));
#endif
    if (integral) {
      v.kind = EM_PY_INT;
#if LUA_VERSION_NUM >= 503
      v.i = (int64_t)lua_tointeger(L, idx);
#else
      v.i = (int64_t)d;
#endif
    } else {
      v.kind = EM_PY_FLOAT;
      v.f = d;
    }
    return add(L, e, &v);
  }
  if (l_isint64box(L, idx)) { /* LuaJIT's boxed int64_t / uint64_t */
    v.kind = EM_PY_INT;
    if (!l_toint64(L, idx, &v.i, "save_torch"))
      return l_errorf(L, "save_torch: %s is a cdata that is not an int64_t", where);
    return add(L, e, &v);
  }
  if (t == LUA_TSTRING || t == LUA_TTABLE || t == LUA_TUSERDATA) {
    lua_pushvalue(L, idx);
    lua_rawget(L, e->cache);
    if (!lua_isnil(L, -1)) {
      int64_t id = (int64_t)lua_tonumber(L, -1);
      lua_pop(L, 1);
      return id;
    }
    lua_pop(L, 1);
  }
  int64_t id;
  if (t == LUA_TSTRING) {
    v.s = lua_tolstring(L, idx, &v.len);
    v.kind = is_utf8((const unsigned char *)v.s, v.len) ? EM_PY_STR : EM_PY_BYTES;
    id = add(L, e, &v);
  } else if (is_none(L, idx)) {
    id = add(L, e, &v);
  } else if (l_totensor(L, idx)) {
    /* a device tensor is written as host bytes (as PyTorch's save writes
    ** them), its host view anchored in e->hosts until the file is written */
    l_push_host(L, idx, e->hosts);
    v.kind = EM_PY_TENSOR;
    v.tensor = l_totensor(L, -1);
    lua_rawseti(L, e->hosts, ++e->nhost);
    id = add(L, e, &v);
  } else if (l_isdtype(L, idx)) {
    v.kind = EM_PY_DTYPE;
    v.dtype = l_checkdtype(L, idx, "save_torch");
    id = add(L, e, &v);
  } else if (t == LUA_TTABLE) {
    return add_table(L, e, idx, depth, where);
  } else {
    return l_errorf(L, "save_torch: %s is a %s (tensors, tables, numbers, strings, booleans, "
                       "dtypes and T.None only)", where, luaL_typename(L, idx));
  }
  lua_pushvalue(L, idx);
  push_int(L, id);
  lua_rawset(L, e->cache);
  return id;
}

/* T.save_torch(path, value) */
static int l_save_torch(lua_State *L) {
  const char *path = check_path(L, "save_torch");
  if (lua_isnoneornil(L, 2)) return l_errorf(L, "save_torch: expected a value to save");
  l_checknomore(L, 2, "save_torch");
  lua_settop(L, 2);
  tree_box *b = push_tree_box(L); /* 3 */
  if (em_pytree_new(&b->t) != EM_OK) return l_error(L);
  lua_newtable(L);                /* 4: cache */
  lua_newtable(L);                /* 5: host copies of device tensors */
  enc e = {b->t, 4, 5, 0};
  int64_t root = add_value(L, &e, 2, 0, "the value");
  em_pytree_set_root(b->t, root);
  if (em_torch_save(path, b->t) != EM_OK) return l_error(L);
  return 0;
}

/* T.torch_kind(t) -> "dict" | "OrderedDict" | "list" | "tuple" | nil;
** T.torch_kind(t, kind) marks t to be saved as kind and returns t. */
static int l_torch_kind(lua_State *L) {
  l_nooptions(L, 2, 2, "torch_kind");
  if (!lua_istable(L, 1) || l_isdtype(L, 1))
    return l_errorf(L, "torch_kind: expected a table for argument #1, got %s",
                    l_isdtype(L, 1) ? "a dtype" : luaL_typename(L, 1));
  if (lua_isnoneornil(L, 2)) {
    if (!lua_getmetatable(L, 1)) return 0;
    lua_getfield(L, -1, "__torch");
    return 1;
  }
  const char *kind = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
  if (!kind)
    return l_errorf(L, "torch_kind: expected a kind (a string) for argument #2, got %s",
                    luaL_typename(L, 2));
  void *shared = strcmp(kind, "dict") == 0 ? (void *)&K_DICT_MT
                 : strcmp(kind, "OrderedDict") == 0 ? (void *)&K_ODICT_MT
                 : strcmp(kind, "list") == 0 ? (void *)&K_LIST_MT
                 : strcmp(kind, "tuple") == 0 ? (void *)&K_TUPLE_MT : NULL;
  if (!shared)
    return l_errorf(L, "torch_kind: unknown kind '%s' (expected 'dict', 'OrderedDict', "
                       "'list' or 'tuple')", kind);
  lua_settop(L, 2);
  int own = 0;
  if (lua_getmetatable(L, 1)) { /* 3 */
    own = 1;
    void *keys[] = {&K_DICT_MT, &K_ODICT_MT, &K_LIST_MT, &K_TUPLE_MT};
    for (int i = 0; i < 4 && own; i++) {
      getreg(L, keys[i]);
      if (lua_rawequal(L, -1, 3)) own = 0;
      lua_pop(L, 1);
    }
    lua_getfield(L, 3, "__metatable");
    if (!lua_isnil(L, -1))
      return l_errorf(L, "torch_kind: the table's metatable is locked");
    lua_pop(L, 1);
  }
  if (own) {
    lua_pushvalue(L, 2);
    lua_setfield(L, 3, "__torch");
  } else {
    getreg(L, shared);
    lua_setmetatable(L, 1);
  }
  lua_settop(L, 1);
  return 1;
}

static int none_tostring(lua_State *L) {
  lua_pushliteral(L, "None");
  return 1;
}

static void kind_mt(lua_State *L, void *key, const char *kind) {
  lua_pushlightuserdata(L, key);
  lua_createtable(L, 0, 1);
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "__torch");
  lua_rawset(L, LUA_REGISTRYINDEX);
}

void l_open_torch(lua_State *L) {
  lua_pushlightuserdata(L, &K_TREE_MT);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, tree_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_rawset(L, LUA_REGISTRYINDEX);
  kind_mt(L, &K_LIST_MT, "list");
  kind_mt(L, &K_TUPLE_MT, "tuple");
  kind_mt(L, &K_DICT_MT, "dict");
  kind_mt(L, &K_ODICT_MT, "OrderedDict");

  /* T.None: one userdata, the same in every module load of this state */
  lua_pushlightuserdata(L, &K_NONE);
  lua_newuserdata(L, 1);
  lua_createtable(L, 0, 3);
  lua_pushcfunction(L, none_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "ember.None");
  lua_setfield(L, -2, "__name");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
  getreg(L, &K_NONE);
  lua_setfield(L, 1, "None");

  static const luaL_Reg fns[] = {{"load_torch", l_load_torch},
                                 {"save_torch", l_save_torch},
                                 {"torch_kind", l_torch_kind},
                                 {NULL, NULL}};
  l_add_functions(L, fns);
}
