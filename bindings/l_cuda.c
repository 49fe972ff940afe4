/*
** l_cuda.c -- the CUDA runtime from Lua (docs/cuda.md): C._cuda_* for
** lua/ember/cuda.lua, which builds T.cuda (streams, events, memory stats)
** and checks the arguments; and the tensor methods pin_memory, is_pinned,
** record_stream. Streams and events are userdata freed by __gc. Every entry
** raises the engine's message when CUDA cannot be used ("op: CUDA is not
** available (...)", "op: ember was built without CUDA ...").
*/
#include <string.h>

#include "l_ember.h"

static const char K_STREAM_MT = 0, K_EVENT_MT = 0;

static int device_arg(lua_State *L, int idx, const char *op) {
  if (lua_isnoneornil(L, idx)) return 0;
  int64_t d = l_checkint(L, idx, op, "device");
  if (d < 0 || d > 1 << 20) l_errorf(L, "%s: invalid device index %lld", op, (long long)d);
  return (int)d;
}

/* -- streams ---------------------------------------------------------------- */

typedef struct { em_cuda_stream *s; } stream_box;
typedef struct { em_cuda_event *e; } event_box;

static em_cuda_stream *opt_stream(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return NULL;
  stream_box *b = lua_touserdata(L, idx);
  if (!b || !lua_getmetatable(L, idx)) l_errorf(L, "stream: expected a cuda stream");
  lua_pushlightuserdata(L, (void *)&K_STREAM_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  int ok = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (!ok) l_errorf(L, "stream: expected a cuda stream");
  return b->s;
}
static em_cuda_event *check_event(lua_State *L, int idx) {
  event_box *b = lua_touserdata(L, idx);
  if (!b || !lua_getmetatable(L, idx)) l_errorf(L, "Event: expected a cuda event");
  lua_pushlightuserdata(L, (void *)&K_EVENT_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  int ok = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (!ok || !b->e) l_errorf(L, "Event: expected a cuda event");
  return b->e;
}

static int stream_gc(lua_State *L) {
  stream_box *b = lua_touserdata(L, 1);
  if (b && b->s) em_cuda_stream_free(b->s);
  if (b) b->s = NULL;
  return 0;
}
static int event_gc(lua_State *L) {
  event_box *b = lua_touserdata(L, 1);
  if (b && b->e) em_cuda_event_free(b->e);
  if (b) b->e = NULL;
  return 0;
}

static int l_stream_new(lua_State *L) {
  int dev = device_arg(L, 1, "Stream");
  int prio = (int)l_checkint(L, 2, "Stream", "priority");
  stream_box *b = lua_newuserdata(L, sizeof *b);
  b->s = NULL;
  lua_pushlightuserdata(L, (void *)&K_STREAM_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  if (em_cuda_stream_new(dev, prio, &b->s) != EM_OK) return l_error(L);
  return 1;
}

/* (device, stream or nil): makes it the engine's current stream */
static int l_set_stream(lua_State *L) {
  int dev = device_arg(L, 1, "stream");
  if (em_cuda_set_stream(dev, opt_stream(L, 2), NULL) != EM_OK) return l_error(L);
  return 0;
}
static int l_stream_synchronize(lua_State *L) {
  if (em_cuda_stream_synchronize(device_arg(L, 1, "synchronize"), opt_stream(L, 2)) != EM_OK)
    return l_error(L);
  return 0;
}
static int l_stream_query(lua_State *L) {
  int done = 0;
  if (em_cuda_stream_query(device_arg(L, 1, "query"), opt_stream(L, 2), &done) != EM_OK)
    return l_error(L);
  lua_pushboolean(L, done);
  return 1;
}

/* -- events ----------------------------------------------------------------- */

static int l_event_new(lua_State *L) {
  int dev = device_arg(L, 1, "Event");
  int timing = lua_toboolean(L, 2);
  event_box *b = lua_newuserdata(L, sizeof *b);
  b->e = NULL;
  lua_pushlightuserdata(L, (void *)&K_EVENT_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  if (em_cuda_event_new(dev, timing, &b->e) != EM_OK) return l_error(L);
  return 1;
}
static int l_event_record(lua_State *L) {
  if (em_cuda_event_record(check_event(L, 1), opt_stream(L, 2)) != EM_OK) return l_error(L);
  return 0;
}
/* (event, device, stream or nil): the stream waits for the event */
static int l_event_wait(lua_State *L) {
  em_cuda_event *e = check_event(L, 1);
  if (em_cuda_stream_wait_event(device_arg(L, 2, "wait"), opt_stream(L, 3), e) != EM_OK)
    return l_error(L);
  return 0;
}
static int l_event_synchronize(lua_State *L) {
  if (em_cuda_event_synchronize(check_event(L, 1)) != EM_OK) return l_error(L);
  return 0;
}
static int l_event_query(lua_State *L) {
  int done = 0;
  if (em_cuda_event_query(check_event(L, 1), &done) != EM_OK) return l_error(L);
  lua_pushboolean(L, done);
  return 1;
}
static int l_event_elapsed(lua_State *L) {
  double ms = 0;
  if (em_cuda_event_elapsed(check_event(L, 1), check_event(L, 2), &ms) != EM_OK)
    return l_error(L);
  lua_pushnumber(L, ms);
  return 1;
}

/* -- the device ------------------------------------------------------------- */

static int l_built(lua_State *L) {
  lua_pushboolean(L, em_cuda_built());
  return 1;
}
static int l_device_count(lua_State *L) {
  lua_pushinteger(L, em_cuda_device_count());
  return 1;
}
/* (op, device): raises why op cannot use the device */
static int l_check(lua_State *L) {
  const char *op = luaL_checkstring(L, 1);
  if (em_cuda_check(op, device_arg(L, 2, op)) != EM_OK) return l_error(L);
  return 0;
}
static int l_synchronize(lua_State *L) {
  if (em_cuda_synchronize("synchronize", device_arg(L, 1, "synchronize")) != EM_OK)
    return l_error(L);
  return 0;
}
/* (op, device) -> allocated, max_allocated, reserved, max_reserved */
static int l_memory(lua_State *L) {
  const char *op = luaL_checkstring(L, 1);
  em_cuda_memstats m;
  if (em_cuda_memory_stats(op, device_arg(L, 2, op), &m) != EM_OK) return l_error(L);
  lua_pushinteger(L, (lua_Integer)m.allocated);
  lua_pushinteger(L, (lua_Integer)m.max_allocated);
  lua_pushinteger(L, (lua_Integer)m.reserved);
  lua_pushinteger(L, (lua_Integer)m.max_reserved);
  return 4;
}
static int l_reset_peak(lua_State *L) {
  const char *op = luaL_checkstring(L, 1);
  if (em_cuda_reset_peak(op, device_arg(L, 2, op)) != EM_OK) return l_error(L);
  return 0;
}
static int l_empty_cache(lua_State *L) {
  if (em_cuda_empty_cache("empty_cache") != EM_OK) return l_error(L);
  return 0;
}
/* (op, seed, device or -1 for all) */
static int l_manual_seed(lua_State *L) {
  const char *op = luaL_checkstring(L, 1);
  int64_t seed = l_checkint(L, 2, op, "seed");
  int dev = lua_isnoneornil(L, 3) ? -1 : (int)l_checkint(L, 3, op, "device");
  if (em_cuda_manual_seed(op, dev, (uint64_t)seed) != EM_OK) return l_error(L);
  return 0;
}

/* -- tensor methods ----------------------------------------------------------- */

/* t:pin_memory(): a copy of t in page-locked host memory (contiguous);
** t itself when it is pinned already. */
static int l_pin_memory(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "pin_memory");
  l_checknomore(L, 1, "pin_memory");
  if (em_tensor_device(t).type != EM_CPU) {
    char d[32];
    return l_errorf(L, "pin_memory: cannot pin a tensor on %s (only CPU tensors)",
                    em_device_str(em_tensor_device(t), d, sizeof d));
  }
  if (em_storage_is_pinned(em_tensor_storage(t))) {
    lua_pushvalue(L, 1);
    return 1;
  }
  int n = em_tensor_ndim(t);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int64_t numel = 1;
  for (int i = n - 1; i >= 0; i--) {
    sizes[i] = em_tensor_sizes(t)[i];
    strides[i] = numel;
    numel *= sizes[i];
  }
  em_storage *s = NULL;
  em_tensor **box = l_newbox(L);
  if (em_cuda_pinned_storage("pin_memory", (size_t)numel * em_dtype_size(em_tensor_dtype(t)),
                             &s) != EM_OK)
    return l_error(L);
  em_status st = em_tensor_new(s, 0, n, sizes, strides, em_tensor_dtype(t), box);
  em_storage_release(s);
  if (st == EM_OK) st = em_copy_(*box, t);
  if (st != EM_OK) return l_error(L);
  return 1;
}

static int l_is_pinned(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "is_pinned");
  l_checknomore(L, 1, "is_pinned");
  lua_pushboolean(L, em_storage_is_pinned(em_tensor_storage(t)));
  return 1;
}

/* C._cuda_allow_tf32([on]) -> whether float32 products on cuda may use
** TF32 (sets it first when on is given) */
static int l_allow_tf32(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) em_cuda_set_allow_tf32(lua_toboolean(L, 1));
  lua_pushboolean(L, em_cuda_get_allow_tf32());
  return 1;
}

/* C._cuda_cudnn(i[, on]) -> setting i of T.backends.cudnn (1 enabled, 2
** allow_tf32, 3 deterministic, 4 benchmark), set first when on is given */
static int l_cudnn(lua_State *L) {
  int i = (int)luaL_checkinteger(L, 1);
  if (i < 1 || i > 4) return luaL_error(L, "_cuda_cudnn: no setting %d", i);
  if (!lua_isnoneornil(L, 2)) em_cuda_cudnn_set((em_cudnn_setting)(i - 1), lua_toboolean(L, 2));
  lua_pushboolean(L, em_cuda_cudnn_get((em_cudnn_setting)(i - 1)));
  return 1;
}

/* C._cuda_cudnn_version() -> cudnnGetVersion(), or 0 (not loadable) */
static int l_cudnn_version(lua_State *L) {
  lua_pushinteger(L, em_cuda_cudnn_version());
  return 1;
}

/* t:record_stream(s): C._cuda_record_stream(t, stream userdata or nil) */
static int l_record_stream(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "record_stream");
  if (em_cuda_record_stream(t, opt_stream(L, 2)) != EM_OK) return l_error(L);
  return 0;
}

void l_open_cuda(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&K_STREAM_MT);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, stream_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "ember.cuda.stream");
  lua_setfield(L, -2, "__name");
  lua_rawset(L, LUA_REGISTRYINDEX);
  lua_pushlightuserdata(L, (void *)&K_EVENT_MT);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, event_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "ember.cuda.event");
  lua_setfield(L, -2, "__name");
  lua_rawset(L, LUA_REGISTRYINDEX);

  static const luaL_Reg fns[] = {
      {"_cuda_built", l_built},
      {"_cuda_device_count", l_device_count},
      {"_cuda_check", l_check},
      {"_cuda_synchronize", l_synchronize},
      {"_cuda_stream_new", l_stream_new},
      {"_cuda_set_stream", l_set_stream},
      {"_cuda_stream_synchronize", l_stream_synchronize},
      {"_cuda_stream_query", l_stream_query},
      {"_cuda_event_new", l_event_new},
      {"_cuda_event_record", l_event_record},
      {"_cuda_event_wait", l_event_wait},
      {"_cuda_event_synchronize", l_event_synchronize},
      {"_cuda_event_query", l_event_query},
      {"_cuda_event_elapsed", l_event_elapsed},
      {"_cuda_memory", l_memory},
      {"_cuda_reset_peak", l_reset_peak},
      {"_cuda_empty_cache", l_empty_cache},
      {"_cuda_manual_seed", l_manual_seed},
      {"_cuda_record_stream", l_record_stream},
      {"_cuda_allow_tf32", l_allow_tf32},
      {"_cuda_cudnn", l_cudnn},
      {"_cuda_cudnn_version", l_cudnn_version},
      {NULL, NULL}};
  l_add_functions(L, fns);
  static const luaL_Reg methods[] = {
      {"pin_memory", l_pin_memory},
      {"is_pinned", l_is_pinned},
      {NULL, NULL}};
  l_add_methods(L, methods);
}
