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
/* Opens ember in a host's state (the standard libraries must be open):
** registers luaopen_ember_core as package.preload["ember.core"], puts
** lua_dir (the folder holding ember/init.lua; NULL to keep package.path)
** in front of package.path, and runs require "ember". Returns 0 with the
** module on the stack, or a Lua status code with the error message there. */
int ember_lua_open(lua_State *L, const char *lua_dir);
/* Pushes t as a Lua tensor. Takes over the reference the caller holds: do
** not release t afterwards (retain it first to keep using it from C). The
** Lua value keeps the storage alive; memory the host wrapped with
** em_storage_wrap is released through its deleter once both the host's
** references and every Lua view are gone. */
void ember_lua_push_tensor(lua_State *L, em_tensor *t);
/* The tensor at idx, or NULL if the value is not a tensor. Borrowed: valid
** while the Lua value is reachable; em_tensor_retain it to keep it longer
** (and em_tensor_release it when done), e.g. across lua_close. */
em_tensor *ember_lua_to_tensor(lua_State *L, int idx);

#ifdef __cplusplus
}
#endif
#endif
