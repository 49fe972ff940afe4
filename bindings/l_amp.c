/*
** l_amp.c -- the C piece of automatic mixed precision (docs/amp.md; issue
** 16 item 4): C._autocast_set(device_type, enabled, dtype) and
** C._autocast_get(device_type) -> enabled, dtype, over the engine's
** per-thread state (engine/src/ops/autocast.c). T.autocast (lua/ember/amp.lua)
** saves, sets and restores it around the user's function.
*/
#include <string.h>

#include "l_ember.h"

static em_device_type check_type(lua_State *L, int idx, const char *op) {
  const char *s = luaL_checkstring(L, idx);
  if (!strcmp(s, "cpu")) return EM_CPU;
  if (!strcmp(s, "cuda")) return EM_CUDA;
  if (!strcmp(s, "meta")) return EM_META;
  l_errorf(L, "%s: unknown device type '%s' (expected 'cpu' or 'cuda')", op, s);
  return EM_CPU;
}

static int l_autocast_set(lua_State *L) {
  em_device_type d = check_type(L, 1, "autocast");
  int on = lua_toboolean(L, 2);
  em_dtype dt = l_checkdtype(L, 3, "autocast");
  if (em_autocast_set(d, on, dt) != EM_OK) return l_error(L);
  return 0;
}

static int l_autocast_get(lua_State *L) {
  em_device_type d = check_type(L, 1, "autocast");
  em_dtype dt;
  int on = em_autocast_enabled(d, &dt);
  lua_pushboolean(L, on);
  l_pushdtype(L, dt);
  return 2;
}

/* (on) -> nil: CPU tensors follow autocast's cuda lists and dtype on this
** thread (tests: amp_cuda_lists_spec runs the cuda lists without a device) */
void em_autocast_cpu_as_cuda(int on);
static int l_autocast_cpu_as_cuda(lua_State *L) {
  em_autocast_cpu_as_cuda(lua_toboolean(L, 1));
  return 0;
}

void l_open_amp(lua_State *L) {
  static const luaL_Reg fns[] = {{"_autocast_set", l_autocast_set},
                                 {"_autocast_get", l_autocast_get},
                                 {"_autocast_cpu_as_cuda", l_autocast_cpu_as_cuda},
                                 {NULL, NULL}};
  l_add_functions(L, fns);
}
