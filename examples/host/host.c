/*
** host.c -- a C program that embeds ember as its scripting layer.
**
** The host owns a 4x6 float buffer (think: a video frame). It wraps the
** buffer in an em_storage without copying, hands a tensor over it to a Lua
** script, lets the script edit it through views and an FFI pointer, and
** reads the result straight from its own memory. The script returns a view
** (row 4); the host checks that it points into the buffer. The buffer's
** deleter runs exactly once, after lua_close and the host's own releases.
**
**   usage: ember_host [script.lua [lua_dir]]
** Built by CMake and run by ctest (the last line is the C-CASES summary
** tools/run-tests.sh counts).
*/
#include <lauxlib.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ember.h"
#include "ember_lua.h"

#ifndef EMBER_LUA_DIR
#define EMBER_LUA_DIR "lua"
#endif
#ifndef EMBER_HOST_SCRIPT
#define EMBER_HOST_SCRIPT "examples/host/script.lua"
#endif

static float frame[4][6];   /* the host's own memory */
static int released;        /* how often the deleter ran */
static int passed, failed;

static void on_release(void *ctx, void *data, size_t nbytes) {
  released++;
  (void)ctx; (void)data; (void)nbytes;
}

static void check(int ok, const char *what) {
  if (ok) passed++;
  else { failed++; printf("  check failed: %s\n", what); }
}

int main(int argc, char **argv) {
  const char *script = argc > 1 ? argv[1] : EMBER_HOST_SCRIPT;
  const char *lua_dir = argc > 2 ? argv[2] : EMBER_LUA_DIR;
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 6; c++) frame[r][c] = (float)(10 * r + c);

  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (ember_lua_open(L, lua_dir) != 0) {
    fprintf(stderr, "ember_host: %s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_pop(L, 1);

  /* Share the buffer: a storage over it (no copy), a 4x6 tensor view. */
  em_storage *s;
  em_tensor *t;
  int64_t sizes[2] = {4, 6}, strides[2] = {6, 1};
  if (em_storage_wrap(frame, sizeof frame, em_cpu(), on_release, NULL, &s) != EM_OK ||
      em_tensor_new(s, 0, 2, sizes, strides, EM_FLOAT32, &t) != EM_OK) {
    fprintf(stderr, "ember_host: %s\n", em_last_error());
    return 1;
  }
  em_storage_release(s);         /* the tensor holds the storage now */
  em_tensor_retain(t);           /* one reference for the host, one for Lua */

  if (luaL_loadfile(L, script) != 0) {
    fprintf(stderr, "ember_host: %s\n", lua_tostring(L, -1));
    return 1;
  }
  ember_lua_push_tensor(L, t);   /* Lua takes over the second reference */
  lua_pushnumber(L, (lua_Number)(uintptr_t)frame);
  if (lua_pcall(L, 2, 1, 0) != 0) {
    fprintf(stderr, "ember_host: script failed: %s\n", lua_tostring(L, -1));
    return 1;
  }
  em_tensor *row4 = ember_lua_to_tensor(L, -1);
  check(row4 != NULL, "the script returns a tensor");
  if (row4) em_tensor_retain(row4); /* keep it past lua_close */

  /* The script's edits are in the host's memory: no copy back needed. */
  check(frame[0][0] == 100.0f, "FFI write through t:data() (frame[0][0] = 100)");
  for (int c = 0; c < 6; c++) check(frame[1][c] == 7.0f, "row 2 filled with 7 through a view");
  check(frame[2][3] == -1.0f, "element (3, 4) set to -1");
  check(frame[3][5] == 35.0f * 2, "row 4 doubled through the view the script returned");
  check(frame[0][1] == 1.0f && frame[2][0] == 20.0f, "other elements untouched");
  if (row4) {
    check(em_tensor_data(row4) == (void *)&frame[3][0], "the returned view points into the buffer");
    check(em_tensor_storage(row4) == em_tensor_storage(t), "one storage shared by host and script");
  }

  /* A buffer the host labels as device memory (cuda:0) is never handed out
  ** as a CPU pointer: t:data() asks for :cpu() first. (The bytes here are
  ** ordinary host memory that nothing reads; only the label matters.) */
  static float device_buffer[4];
  em_device gpu = {EM_CUDA, 0};
  int64_t four = 4, unit = 1;
  em_storage *gs;
  em_tensor *gt;
  if (em_storage_wrap(device_buffer, sizeof device_buffer, gpu, NULL, NULL, &gs) == EM_OK) {
    if (em_tensor_new(gs, 0, 1, &four, &unit, EM_FLOAT32, &gt) == EM_OK) {
      luaL_loadstring(L, "local t = ...; local ok, err = pcall(t.data, t); return err");
      ember_lua_push_tensor(L, gt);
      const char *err = lua_pcall(L, 1, 1, 0) == 0 ? lua_tostring(L, -1) : NULL;
      check(err && strstr(err, "use :cpu() first") != NULL, "t:data() of a cuda tensor asks for :cpu()");
      lua_pop(L, 1);
    }
    em_storage_release(gs);
  }

  lua_close(L);                  /* Lua's references go; the host's stay */
  check(released == 0, "buffer still alive after lua_close (the host holds views)");
  em_tensor_release(t);
  check(released == 0, "buffer alive while the returned view is held");
  if (row4) em_tensor_release(row4);
  check(released == 1, "deleter ran exactly once, after the last view");

  printf("host: frame row 4 = %g %g %g %g %g %g\n", frame[3][0], frame[3][1], frame[3][2],
         frame[3][3], frame[3][4], frame[3][5]);
  printf("C-CASES: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
