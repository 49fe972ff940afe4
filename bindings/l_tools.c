/*
** l_tools.c -- the C piece of the tensor tools written in Lua
** (lua/ember/tools.lua: tril/triu, diag, diag_embed, einsum, meshgrid, pad,
** one_hot, normalize, cosine_similarity, cdist; issue 18): C._write_out,
** which puts a composite's fresh result into the caller's out= tensor with
** the same rules as every op's out= (em_write_out: same dtype, the result's
** shape, an empty out resized, no autograd history).
*/
#include "l_ember.h"

/* C._write_out(op, result, out) -> out */
static int l_write_out(lua_State *L) {
  const char *op = luaL_checkstring(L, 1);
  em_tensor *res = l_checktensor(L, 2, op);
  em_tensor *out = l_totensor(L, 3);
  if (!out)
    return l_errorf(L, "%s: expected a tensor for option 'out', got %s", op,
                    luaL_typename(L, 3));
  if (em_write_out(op, res, out) != EM_OK) l_error(L);
  lua_settop(L, 3);
  return 1;
}

void l_open_tools(lua_State *L) {
  static const luaL_Reg fns[] = {{"_write_out", l_write_out}, {NULL, NULL}};
  l_add_functions(L, fns);
}
