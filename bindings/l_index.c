/*
** l_index.c -- t[key] and t[key] = value for keys that are not strings.
** (The full index-expression parser of DESIGN §3 plugs in here.)
*/
#include "l_ember.h"

/* t[i]: select along dim 1 (the axis is removed; a view). */
static em_tensor *select_first(lua_State *L, em_tensor *t, int64_t i) {
  int nd = em_tensor_ndim(t);
  if (nd == 0) l_errorf(L, "index: invalid index of a 0-dim tensor");
  int64_t n = em_tensor_sizes(t)[0];
  int64_t k = i < 0 ? i + n : i - 1;
  if (i == 0 || k < 0 || k >= n)
    l_errorf(L, "index %lld is out of bounds for dimension 1 with size %lld",
               (long long)i, (long long)n);
  em_tensor **box = l_newbox(L);
  if (em_as_strided(t, nd - 1, em_tensor_sizes(t) + 1, em_tensor_strides(t) + 1,
                    em_tensor_offset(t) + k * em_tensor_strides(t)[0], box) != EM_OK)
    l_error(L);
  return *box;
}

int l_index_get(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "index");
  if (lua_type(L, 2) == LUA_TNUMBER) {
    select_first(L, t, l_checkint(L, 2, "index", "an index"));
    return 1;
  }
  return l_errorf(L, "index: unsupported index of type %s", luaL_typename(L, 2));
}

int l_index_set(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "index");
  if (lua_type(L, 2) != LUA_TNUMBER)
    return l_errorf(L, "index: unsupported index of type %s", luaL_typename(L, 2));
  em_tensor *dst = select_first(L, t, l_checkint(L, 2, "index", "an index"));
  em_tensor *src = l_totensor(L, 3);
  em_status st = src ? em_copy_(dst, src) : em_fill_(dst, l_checkscalar(L, 3, "index"));
  if (st != EM_OK) l_error(L);
  return 0;
}

void l_open_index(lua_State *L) { (void)L; }
