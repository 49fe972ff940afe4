/*
** l_math.c -- math: elementwise ops, type promotion, metamethods (issue 5).
*/
#include "l_ember.h"

void l_open_math(lua_State *L) { (void)L; }
