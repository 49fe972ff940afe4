/*
** l_init.c -- the module's hub: luaopen_ember_core opens the core area
** (l_core.c: the tensor userdata, dtype and device values, the collector
** hook, and the helpers every area uses) and then every area, as Lua keeps
** linit.c apart from lauxlib.c. Adding an area is a bindings/l_<area>.c
** with an l_open_<area> (declared in l_ember.h) and one line here.
*/
#include "l_ember.h"

static void (*const areas[])(lua_State *L) = {
    l_open_tensor,  l_open_index, l_open_view,   l_open_creation, l_open_math,
    l_open_reduce,  l_open_select, l_open_interop, l_open_nn,      l_open_plot,
    l_open_autograd, l_open_optim, l_open_layout, l_open_torch,
    l_open_tools,
    l_open_dist,
    l_open_amp,
    l_open_cuda,
    l_open_linalg,
    l_open_rnn,
    l_open_complex,
};

int luaopen_ember_core(lua_State *L) {
  lua_settop(L, 0);
  if (l_open_core(L)) return 1; /* opened before in this state: the same module */
  for (size_t i = 0; i < sizeof areas / sizeof areas[0]; i++) areas[i](L);
  lua_settop(L, 1);
  return 1;
}
