/*
** l_select.c -- the index family and assembling: index_select/gather/scatter/cat/stack/split (issue 4).
*/
#include "l_ember.h"

void l_open_select(lua_State *L) { (void)L; }
