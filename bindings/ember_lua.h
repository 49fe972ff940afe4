/*
** ember_lua.h -- Lua glue for host programs that embed ember.
** Open the module in a lua_State, push an em_tensor* as a Lua value, and
** read one back. See examples/host/ for a host that shares its own buffer
** with a Lua script without copying.
*/
#ifndef EMBER_LUA_H
#define EMBER_LUA_H

#include <lua.h>

#include "ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The C module `ember.core` (require "ember" loads it and the Lua layer). */
int luaopen_ember_core(lua_State *L);
/* Pushes t as a Lua tensor. Takes over the reference the caller holds. */
void ember_lua_push_tensor(lua_State *L, em_tensor *t);
/* The tensor at idx (borrowed: retain it to keep it), or NULL. */
em_tensor *ember_lua_to_tensor(lua_State *L, int idx);

#ifdef __cplusplus
}
#endif
#endif
