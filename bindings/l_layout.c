/*
** l_layout.c -- C._layout, the one declaration of the tensor layout the Lua
** layer's FFI fast paths read (lua/ember/tensor.lua). The only binding file
** that sees the engine's structs (core/core.h); every other one uses
** ember.h and l_ember.h.
*/
#include <stddef.h>

#include "core/core.h"
#include "l_ember.h"

/* C._layout(): where the fields the Lua layer reads through LuaJIT's FFI
** lie (lua/ember/tensor.lua, "FFI fast paths"): byte offsets taken from
** the structs of core/core.h by the compiler, so that file is the one
** declaration of the layout and the Lua side cannot drift from it. A
** tensor userdata's payload is one em_tensor pointer (l_newbox), NULL after
** __gc. Also the dtype values by id, and the id of each dtype the fast
** paths read. Integer fields are 32-bit (checked here at compile time). */
_Static_assert(sizeof(em_dtype) == 4 && sizeof(int) == 4 && sizeof(em_device_type) == 4,
               "the FFI layout reads ndim, dtype and device type as int32");
static int l_layout(lua_State *L) {
  lua_createtable(L, 0, 16);
#define FIELD(NAME, VALUE)                  \
  lua_pushnumber(L, (lua_Number)(VALUE));   \
  lua_setfield(L, -2, NAME)
  FIELD("box_size", sizeof(em_tensor *));
  FIELD("ndim", offsetof(em_tensor, ndim));
  FIELD("dtype", offsetof(em_tensor, dtype));
  FIELD("storage", offsetof(em_tensor, storage));
  FIELD("offset", offsetof(em_tensor, offset));
  FIELD("sizes", offsetof(em_tensor, sizes));
  FIELD("strides", offsetof(em_tensor, strides));
  FIELD("storage_data", offsetof(em_storage, data));
  FIELD("storage_device", offsetof(em_storage, device) + offsetof(em_device, type));
  FIELD("cpu", EM_CPU);
  FIELD("bool", EM_BOOL);
  FIELD("int32", EM_INT32);
  FIELD("int64", EM_INT64);
  FIELD("float32", EM_FLOAT32);
  FIELD("float64", EM_FLOAT64);
  FIELD("max_dims", EM_MAX_DIMS);
#undef FIELD
  l_push_dtype_values(L); /* [id + 1] = dtype value */
  lua_setfield(L, -2, "dtypes");
  l_push_size_mt(L);
  lua_setfield(L, -2, "Size_mt");
  return 1;
}

void l_open_layout(lua_State *L) {
  static const luaL_Reg fns[] = {{"_layout", l_layout}, {NULL, NULL}};
  l_add_functions(L, fns);
}
