/*
** l_reduce.c -- reductions and linear algebra (issue 5).
*/
#include "l_ember.h"

void l_open_reduce(lua_State *L) { (void)L; }
