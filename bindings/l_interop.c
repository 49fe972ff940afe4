/*
** l_interop.c -- sharing memory with the outside: FFI, .npy, save/load, DLPack (issue 6).
*/
#include "l_ember.h"

void l_open_interop(lua_State *L) { (void)L; }
