/*
** l_view.c -- views: narrow/select/transpose/permute/view/reshape/... (issue 3).
*/
#include "l_ember.h"

void l_open_view(lua_State *L) { (void)L; }
