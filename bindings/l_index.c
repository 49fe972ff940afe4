/*
** l_index.c -- t[key] and t[key] = value for keys that are not strings.
** The key becomes an array of em_index_item (DESIGN §3) and index.c does
** the rest, so the Lua layer only translates:
**   number            one integer item (select along dim 1)
**   tensor            one advanced item (int64/int32 positions or a bool mask);
**                     a 0-d integer tensor is an integer item, as in PyTorch
**   T.newaxis         one newaxis item
**   true / false      a 0-d bool mask (a new dim of size 1 / 0)
**   table             one item per entry:
**     number → integer; {} → whole dim; {i} → i..i; {first, last[, step]}
**     → inclusive range; T.newaxis; "..." → ellipsis; tensor → advanced;
**     a boolean → a 0-d mask.
** Tensors in the key stay referenced by the key (a stack argument) for the
** whole call, so the items may borrow them.
**
** Under LuaJIT, lua/ember/tensor.lua parses the common keys itself (compiled
** with the caller): integers, {}, {i}, {first, last[, step]} and "..." in a
** key table without metatables, values that are integers within 2^53 and
** steps > 0. It writes one item per four int64 slots (kind, first, last,
** step) into a buffer of this state (made by C._index_fast), after a stamp,
** and calls C._index_items(t, key, n, stamp), which reads them back before
** anything else can run (a stamp that differs: a debug hook indexed in
** between, and the key is parsed here as usual).
** Any other key goes to _index_get, which also raises every parse error.
*/
#include <stdio.h>
#include <string.h>

#include "l_ember.h"

enum { MAX_ITEMS = 64 };

static char K_NEWAXIS;

static int is_newaxis(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return 0;
  lua_pushlightuserdata(L, &K_NEWAXIS);
  lua_rawget(L, LUA_REGISTRYINDEX);
  int is = lua_rawequal(L, -1, idx < 0 ? idx - 1 : idx);
  lua_pop(L, 1);
  return is;
}

/* The list at idx (absolute) has n entries by its length: a key past them
** (an entry after a nil: LuaJIT's length may stop at the hole, so
** `{1, nil, 2}` would quietly lose its last entry) or a key that is not a
** position is refused. `where` names the list for the message. */
static void check_list(lua_State *L, int idx, int n, const char *where) {
  if (n > 0) lua_pushinteger(L, n);
  else lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TNUMBER) {
      lua_Number k = lua_tonumber(L, -1);
      if (k >= 1 && k <= n && k == (lua_Number)(int64_t)k) continue;
      if (k > n && k == (lua_Number)(int64_t)k)
        l_errorf(L, "index: %s has a nil at entry %d before entry %lld (a nil cannot "
                    "stand in an index)", where, n + 1, (long long)k);
    }
    l_errorf(L, "index: %s has a key that is not a position (%s %s)", where,
             luaL_typename(L, -1), lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "");
  }
}

/* One entry of an index table (or the whole key) at idx into *it. */
static void to_item(lua_State *L, int idx, int pos, em_device dev, em_index_item *it) {
  memset(it, 0, sizeof *it);
  em_tensor *x;
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
      it->kind = EM_INDEX_INT;
      it->first = l_checkint(L, idx, "index", "an index");
      return;
    case LUA_TSTRING:
      if (strcmp(lua_tostring(L, idx), "...") == 0) {
        it->kind = EM_INDEX_ELLIPSIS;
        return;
      }
      l_errorf(L, "index: unexpected string '%s' in the index (only \"...\" is "
                  "allowed)", lua_tostring(L, idx));
      return;
    case LUA_TUSERDATA:
      if ((x = l_totensor(L, idx))) {
        em_dtype dt = em_tensor_dtype(x);
        if (em_tensor_ndim(x) == 0 && dt >= EM_INT8 && dt <= EM_INT64) {
          /* a 0-d integer tensor is an integer (PyTorch's applySelect): it
          ** takes no part in the advanced-index broadcast or adjacency */
          it->kind = EM_INDEX_INT;
          if (em_get_i64(x, 0, &it->first) != EM_OK) l_error(L);
          return;
        }
        it->kind = EM_INDEX_TENSOR;
        it->tensor = x;
        return;
      }
      break;
    case LUA_TTABLE: {
      if (is_newaxis(L, idx)) {
        it->kind = EM_INDEX_NEWAXIS;
        return;
      }
      int n = (int)lua_objlen(L, idx);
      char where[64];
      snprintf(where, sizeof where, "the range at position %d of the index", pos);
      check_list(L, idx, n, where);
      if (n == 0) {
        it->kind = EM_INDEX_FULL;
        return;
      }
      if (n > 3)
        l_errorf(L, "index: a range is {first, last[, step]}, got a table of %d "
                    "entries at position %d of the index", n, pos);
      int64_t v[3] = {0, 0, 1};
      for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        if (lua_isnil(L, -1))
          l_errorf(L, "index: the range at position %d of the index has a nil at entry %d "
                      "(a nil cannot stand in an index)", pos, i);
        if (lua_type(L, -1) != LUA_TNUMBER)
          l_errorf(L, "index: a range is {first, last[, step]} of integers, got %s "
                      "at entry %d of position %d of the index",
                      luaL_typename(L, -1), i, pos);
        v[i - 1] = l_checkint(L, -1, "index", "a range bound");
        lua_pop(L, 1);
      }
      if (n == 1) v[1] = v[0];
      if (v[2] <= 0)
        l_errorf(L, "index: the step of a range must be positive, got %lld (for a "
                    "reversed order use :flip(dims))", (long long)v[2]);
      it->kind = EM_INDEX_RANGE;
      it->first = v[0];
      it->last = v[1];
      it->step = v[2];
      return;
    }
    case LUA_TBOOLEAN: {
      /* true / false: a 0-d bool mask, as PyTorch's t[True] (a new dim of
      ** size 1) and t[False] (of size 0); its box stays on the stack */
      em_scalar v = {EM_SCALAR_BOOL, lua_toboolean(L, idx), 0};
      em_tensor **box = l_newbox(L);
      if (em_full(0, NULL, v, EM_BOOL, dev, box) != EM_OK) l_error(L);
      it->kind = EM_INDEX_TENSOR;
      it->tensor = *box;
      return;
    }
    case LUA_TNIL:
      l_errorf(L, "index: entry %d of the index is nil (a nil cannot stand in an index)", pos);
      return;
    default:
      break;
  }
  l_errorf(L, "index: unsupported index of type %s at position %d", luaL_typename(L, idx),
           pos);
}

/* Parses the key at stack index 2 into items; returns their count. */
static int parse_key(lua_State *L, em_device dev, em_index_item *items) {
  if (lua_istable(L, 2) && !is_newaxis(L, 2)) {
    int n = (int)lua_objlen(L, 2);
    if (n > MAX_ITEMS)
      l_errorf(L, "index: too many entries in the index (%d)", n);
    check_list(L, 2, n, "the index table");
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, 2, i);
      int at = lua_gettop(L);
      to_item(L, at, i, dev, &items[i - 1]);
      lua_remove(L, at); /* a tensor entry stays referenced by the key table */
    }
    return n;
  }
  to_item(L, 2, 1, dev, &items[0]);
  return 1;
}

int l_index_get(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "index");
  em_index_item items[MAX_ITEMS];
  int n = parse_key(L, em_tensor_device(t), items);
  em_tensor **box = l_newbox(L);
  if (em_index_get(t, n, items, box) != EM_OK) l_error(L);
  return 1;
}

int l_index_set(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "index");
  em_tensor *src = l_totensor(L, 3);
  em_scalar v = {EM_SCALAR_INT, 0, 0.0};
  if (!src && lua_type(L, 3) == LUA_TTABLE && !lua_getmetatable(L, 3)) {
    /* t[k] = {1, 2, 3}: a plain table is a tensor of its values, as PyTorch
    ** makes one of a list (its dtype inferred, then converted on the way in) */
    src = l_tensor_from_data(L, 3, em_tensor_device(t), "index");
  } else if (!src) { /* a number that does not fit the dtype is refused, as fill_ */
    v = l_checkscalar(L, 3, "index");
    l_check_scalar_fits(L, v, em_tensor_dtype(t), "index");
  }
  em_index_item items[MAX_ITEMS];
  int n = parse_key(L, em_tensor_device(t), items);
  em_status st = src ? em_index_put_(t, n, items, src) : em_index_fill_scalar_(t, n, items, v);
  if (st != EM_OK) l_error(L);
  return 0;
}

/* C._index_items(t, key, n, stamp): t[key] from the n items that the Lua
** fast path just wrote into the buffer (upvalue 1) after `stamp`. Copied out
** first: nothing between the write and this copy allocates. When the stamp
** in the buffer is not this call's, a debug hook's indexing wrote there in
** between: the key is parsed as by _index_get. The kinds are checked (never
** EM_INDEX_TENSOR: a pointer is not taken from Lua). */
static int l_index_items(lua_State *L) {
  const int64_t *buf = lua_touserdata(L, lua_upvalueindex(1));
  lua_Number nn = lua_tonumber(L, 3);
  if (!(nn >= 0 && nn <= MAX_ITEMS))
    return l_errorf(L, "index: _index_items: bad item count");
  if (((const double *)buf)[4 * MAX_ITEMS] != lua_tonumber(L, 4)) return l_index_get(L);
  int n = (int)nn;
  em_index_item items[MAX_ITEMS];
  for (int i = 0; i < n; i++, buf += 4) {
    em_index_item *it = &items[i];
    it->kind = (em_index_kind)buf[0];
    it->first = buf[1];
    it->last = buf[2];
    it->step = buf[3];
    it->tensor = NULL;
    switch (buf[0]) {
      case EM_INDEX_INT: case EM_INDEX_FULL: case EM_INDEX_NEWAXIS: case EM_INDEX_ELLIPSIS:
        break;
      case EM_INDEX_RANGE:
        if (it->step > 0) break;
        /* fall through */
      default:
        return l_errorf(L, "index: _index_items: bad item at position %d", i + 1);
    }
  }
  em_tensor *t = l_checktensor(L, 1, "index");
  em_tensor **box = l_newbox(L);
  if (em_index_get(t, n, items, box) != EM_OK) l_error(L);
  return 1;
}

/* C._index_fast(): a new item buffer (MAX_ITEMS x 4 int64 and a stamp, a
** full userdata),
** the _index_items closure that reads it, MAX_ITEMS and the item kinds
** ({int, full, range, ellipsis}). tensor.lua makes one set per state and
** keeps it in C. */
static int l_index_fast(lua_State *L) {
  size_t size = (MAX_ITEMS * 4 + 1) * sizeof(int64_t); /* items, stamp (a double) */
  memset(lua_newuserdata(L, size), 0, size);
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, l_index_items, 1);
  lua_pushnumber(L, MAX_ITEMS);
  lua_createtable(L, 0, 4);
  lua_pushnumber(L, EM_INDEX_INT);
  lua_setfield(L, -2, "int");
  lua_pushnumber(L, EM_INDEX_FULL);
  lua_setfield(L, -2, "full");
  lua_pushnumber(L, EM_INDEX_RANGE);
  lua_setfield(L, -2, "range");
  lua_pushnumber(L, EM_INDEX_ELLIPSIS);
  lua_setfield(L, -2, "ellipsis");
  return 4;
}

/* C._set_newaxis(v): the Lua layer registers its T.newaxis sentinel. */
static int l_set_newaxis(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushlightuserdata(L, &K_NEWAXIS);
  lua_pushvalue(L, 1);
  lua_rawset(L, LUA_REGISTRYINDEX);
  return 0;
}

void l_open_index(lua_State *L) {
  /* _index_get: the non-string-key path, for the Lua __index that
  ** lua/ember/tensor.lua installs */
  static const luaL_Reg fns[] = {{"_set_newaxis", l_set_newaxis},
                                 {"_index_get", l_index_get},
                                 {"_index_fast", l_index_fast},
                                 {NULL, NULL}};
  l_add_functions(L, fns);
}
