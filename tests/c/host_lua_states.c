/* host_lua_states.c -- ember embedded in a C host with several lua_States:
** the memory-pressure hook (bindings/l_core.c, docs/memory.md) collects the
** state that allocates, survives states closing (also while a finalizer of
** the closing state makes tensors), works per OS thread, and leaves engine
** calls made by the host after every state closed alone. Loads the real
** ember/core.so (the engine inside it is the one the hook is set in) and
** calls its engine functions through dlsym, as a host linking the module
** would. Run by ctest as "host_lua_states". */
#include <dlfcn.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>

#include "ctest.h"

typedef em_status (*empty_fn)(int, const int64_t *, em_dtype, em_device, em_tensor **);
typedef void (*release_fn)(em_tensor *);
typedef const char *(*last_error_fn)(void);
static empty_fn p_empty;
static release_fn p_release;
static last_error_fn p_last_error;

static em_device em_cpu_value(void) {
  em_device d = {EM_CPU, 0};
  return d;
}

/* Opens a state with ember as T; pre runs first (before ember is loaded). */
static lua_State *new_state_after(const char *pre) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (pre && luaL_dostring(L, pre) != 0) {
    printf("  lua error: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return NULL;
  }
  int rc = luaL_dostring(L, "package.path = '" EMBER_LUA_DIR "/?.lua;" EMBER_LUA_DIR
                            "/?/init.lua;' .. package.path\n"
                            "package.cpath = '" EMBER_BUILD_DIR "/?.so;' .. package.cpath\n"
                            "T = require 'ember'");
  if (rc != 0) {
    printf("  opening ember failed: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return NULL;
  }
  return L;
}

static lua_State *new_state(void) { return new_state_after(NULL); }

/* Runs a chunk; on error prints it and returns 0. */
static int run(lua_State *L, const char *code) {
  if (luaL_dostring(L, code) == 0) return 1;
  printf("  lua error: %s\n", lua_tostring(L, -1));
  lua_pop(L, 1);
  return 0;
}

/* 40 temporaries of 64 MB (not touched): bounded only if collected. The
** live bytes are process-wide: with several threads allocating at once the
** bound is BOUND_MB (each state frees only its own garbage). */
#define LOOP                                                   \
  "for i = 1, 40 do local t = T.empty(16 * 1024 * 1024) end\n"  \
  "local s = T.memory_stats()\n"                                 \
  "assert(s.live_bytes < (BOUND_MB or 1024) * 2^20, s.live_bytes)\n" \
  "assert(s.thread_live_bytes < 1024 * 2^20, s.thread_live_bytes)\n" \
  "local ok, err = pcall(T.empty, 1e12)\n"                      \
  "assert(not ok and err:find('out of memory', 1, true), err)"

/* A host call far past any limit: the hook must not touch a closed state. */
static int host_alloc_fails_cleanly(void) {
  int64_t huge = (int64_t)1e12, small = 10;
  em_tensor *t = NULL;
  em_status st = p_empty(1, &huge, EM_FLOAT32, em_cpu_value(), &t);
  if (st != EM_E_NOMEM) return 0;
  st = p_empty(1, &small, EM_FLOAT32, em_cpu_value(), &t);
  if (st != EM_OK) return 0;
  p_release(t);
  return 1;
}

TEST(two_states_on_one_thread_each_collect_and_survive_closing) {
  lua_State *L1 = new_state(), *L2 = new_state();
  CHECK(L1 && L2);
  if (!L1 || !L2) return;
  CHECK(run(L1, "garbage = {} for i = 1, 3 do garbage[i] = T.empty(16 * 1024 * 1024) end "
                "garbage = nil"));
  CHECK(run(L2, LOOP));
  lua_close(L2); /* it was the last to allocate: the thread's hook targets it */
  CHECK(host_alloc_fails_cleanly());
  CHECK(run(L1, LOOP)); /* L1 claims the hook back and collects itself */
  lua_close(L1);
  CHECK(host_alloc_fails_cleanly());
}

/* Finalizers that make tensors while the state closes, made before and
** after ember's own sentinel (the close runs them in some order: one of the
** two runs after the sentinel unhooked the state). */

TEST(a_finalizer_making_tensors_while_its_state_closes) {
  lua_State *L = new_state_after(
      "local p = newproxy(true)\n"
      "getmetatable(p).__gc = function() for i = 1, 3 do local t = T.zeros(100) end end\n"
      "keep_before = p\n");
  CHECK(L != NULL);
  if (!L) return;
  CHECK(run(L, "local p = newproxy(true)\n"
               "getmetatable(p).__gc = function() for i = 1, 3 do local t = T.zeros(100) end end\n"
               "keep_after = p\n" LOOP));
  lua_close(L);
  CHECK(host_alloc_fails_cleanly());
}

static void *thread_main(void *arg) {
  int *ok = arg;
  lua_State *L = new_state();
  /* 3 threads x 2 x 40 x 64 MB = 15 GB made in all; each thread is
  ** bounded by its own garbage (per-thread trigger), so 3 x 1 GB */
  *ok = L && run(L, "BOUND_MB = 3072") && run(L, LOOP) && run(L, LOOP);
  if (L) lua_close(L);
  *ok = *ok && host_alloc_fails_cleanly();
  return NULL;
}

TEST(states_on_different_threads_collect_independently) {
  pthread_t th[3];
  int ok[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++) CHECK(pthread_create(&th[i], NULL, thread_main, &ok[i]) == 0);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++) CHECK(ok[i]);
}

int main(void) {
  /* keep the module loaded across lua_close (which dlcloses it) */
  void *lib = dlopen(EMBER_BUILD_DIR "/ember/core.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("FAIL cannot load core.so: %s\nC-CASES: 0 passed, 1 failed\n", dlerror());
    return 1;
  }
  p_empty = (empty_fn)dlsym(lib, "em_empty");
  p_release = (release_fn)dlsym(lib, "em_tensor_release");
  p_last_error = (last_error_fn)dlsym(lib, "em_last_error");
  if (!p_empty || !p_release || !p_last_error) {
    printf("FAIL core.so lacks the engine symbols\nC-CASES: 0 passed, 1 failed\n");
    return 1;
  }
  RUN(two_states_on_one_thread_each_collect_and_survive_closing);
  RUN(a_finalizer_making_tensors_while_its_state_closes);
  RUN(states_on_different_threads_collect_independently);
  return CTEST_END();
}
