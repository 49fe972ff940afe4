/*
** l_creation.c -- creation: arange/linspace/logspace/eye and the random generator (issue 2).
*/
#include "l_ember.h"

void l_open_creation(lua_State *L) { (void)L; }
