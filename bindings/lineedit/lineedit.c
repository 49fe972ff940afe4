/*
** lineedit.c -- the Lua module ember.lineedit: line editing, history and
** tab completion for the prompt of bin/ember (lua/ember/repl.lua), on
** libedit's readline interface (BSD licence; GNU readline is GPL and is not
** used). Built only when libedit is found; the prompt works without it.
**
**   lineedit.readline(prompt)      -> the line, or nil at end of input
**   lineedit.add_history(line)
**   lineedit.read_history(path), lineedit.write_history(path) -> ok
**   lineedit.set_completer(fn)     fn(word, line) -> list of candidates
**   lineedit.isatty(fd)            -> boolean
**
** One prompt per process (readline's state is global): the completer is kept
** in the registry of the lua_State that set it, which must be the one that
** calls readline.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "lauxlib.h"
#include "lua.h"

#if LUA_VERSION_NUM >= 502
#define lua_objlen(L, i) lua_rawlen(L, (i))
#endif

static lua_State *completer_state; /* set while readline runs */
static char K_COMPLETER;

/* The candidates fn(word, line) returned, handed out one by one as
** readline's generator asks (state 0 starts over). */
static char **candidates;
static int ncandidates, next_candidate;

static void free_candidates(void) {
  for (int i = next_candidate; i < ncandidates; i++) free(candidates[i]);
  free(candidates);
  candidates = NULL;
  ncandidates = next_candidate = 0;
}

static int call_completer(lua_State *L) {
  const char *word = lua_tostring(L, 1), *line = lua_tostring(L, 2);
  lua_pushlightuserdata(L, &K_COMPLETER);
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_isfunction(L, -1)) return 0;
  lua_pushstring(L, word);
  lua_pushstring(L, line);
  lua_call(L, 2, 1);
  if (!lua_istable(L, -1)) return 0;
  int n = (int)lua_objlen(L, -1);
  candidates = calloc((size_t)n + 1, sizeof *candidates);
  if (!candidates) return 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    const char *s = lua_tostring(L, -1);
    if (s && (candidates[ncandidates] = strdup(s)) != NULL) ncandidates++;
    lua_pop(L, 1);
  }
  return 0;
}

static char *generator(const char *text, int state) {
  if (state == 0) {
    free_candidates();
    lua_State *L = completer_state;
    if (!L) return NULL;
    lua_pushcfunction(L, call_completer);
    lua_pushstring(L, text);
    lua_pushstring(L, rl_line_buffer ? rl_line_buffer : "");
    /* an error in the completer completes nothing; the prompt goes on */
    if (lua_pcall(L, 2, 0, 0) != 0) lua_pop(L, 1);
  }
  if (next_candidate < ncandidates) return candidates[next_candidate++]; /* readline frees it */
  return NULL;
}

static char **attempt(const char *text, int start, int end) {
  (void)start, (void)end;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  rl_completion_append_character = '\0'; /* "T.zeros" then "(", not "T.zeros (" */
  return rl_completion_matches(text, generator);
}

static int l_readline(lua_State *L) {
  const char *prompt = luaL_optstring(L, 1, "");
  completer_state = L;
  char *line = readline(prompt);
  completer_state = NULL;
  free_candidates();
  if (!line) return 0;
  lua_pushstring(L, line);
  free(line);
  return 1;
}

static int l_add_history(lua_State *L) {
  const char *line = luaL_checkstring(L, 1);
  if (*line) add_history(line);
  stifle_history(1000); /* the history file keeps the last 1000 lines */
  return 0;
}

static int l_read_history(lua_State *L) {
  lua_pushboolean(L, read_history(luaL_checkstring(L, 1)) == 0);
  return 1;
}

static int l_write_history(lua_State *L) {
  lua_pushboolean(L, write_history(luaL_checkstring(L, 1)) == 0);
  return 1;
}

static int l_set_completer(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_pushlightuserdata(L, &K_COMPLETER);
  lua_pushvalue(L, 1);
  lua_rawset(L, LUA_REGISTRYINDEX);
  return 0;
}

static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)) == 1);
  return 1;
}

int luaopen_ember_lineedit(lua_State *L) {
  static const luaL_Reg fns[] = {{"readline", l_readline},
                                 {"add_history", l_add_history},
                                 {"read_history", l_read_history},
                                 {"write_history", l_write_history},
                                 {"set_completer", l_set_completer},
                                 {"isatty", l_isatty},
                                 {NULL, NULL}};
  rl_readline_name = "ember";
  rl_attempted_completion_function = attempt;
  /* '.' and ':' stay inside a word, so "T.ze" and "x:si" complete whole */
  static char breaks[] = " \t\n\"\\'`@$><=;|&{}()[],+-*/%^~#";
  rl_basic_word_break_characters = breaks;
  lua_newtable(L);
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
  return 1;
}
