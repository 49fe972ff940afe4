/*
** l_dist.c -- what T.distributed needs from ember.core (issue 17): the
** address of a tensor's values, for the MPI module ember.dist
** (bindings/dist/l_mpi.c), which moves raw buffers and knows nothing of
** tensors. lua/ember/distributed.lua makes the buffers contiguous first.
*/
#include <stdint.h>
#include <string.h>

#include "l_ember.h"

/* C._data_address(t, op, write, device_type) -> lightuserdata: the address
** of t's first element (a tensor with values on device_type: "cpu", the
** default, for the mpi backend; "cuda" for nccl, a device address); write
** bumps t's version, as an in-place op does (the collective writes into it). */
static int l_data_address(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "distributed");
  const char *op = luaL_optstring(L, 2, "distributed");
  if (em_tensor_check_values(op, t) != EM_OK) return l_error(L);
  em_device d = em_tensor_device(t);
  int cuda = lua_isstring(L, 4) && !strcmp(lua_tostring(L, 4), "cuda");
  if (d.type != (cuda ? EM_CUDA : EM_CPU)) {
    char b[32];
    return l_errorf(L, "%s: the %s backend moves %s tensors, got a tensor on %s", op, cuda ? "nccl" : "mpi",
                    cuda ? "cuda" : "CPU", em_device_str(d, b, sizeof b));
  }
  if (lua_toboolean(L, 3)) em_storage_bump_version(em_tensor_storage(t));
  lua_pushlightuserdata(L, em_tensor_data(t));
  return 1;
}

/* C._cuda_stream(device) -> lightuserdata: the current stream of the device
** (NULL: its default stream), where the nccl backend enqueues */
static int l_cuda_stream(lua_State *L) {
  void *s;
  if (em_cuda_raw_stream("distributed", (int)luaL_checkinteger(L, 1), &s) != EM_OK) return l_error(L);
  lua_pushlightuserdata(L, s);
  return 1;
}

/* The FFI entry of the same (lua/ember/distributed.lua's all_reduce fast
** path under LuaJIT): the address of a contiguous CPU tensor's values, its
** element count and dtype id, with its version bumped as a write; NULL,
** with nothing changed, for any other tensor (the caller then takes the
** checked path above, which raises). Takes the em_tensor the tensor
** userdata holds (tensor.lua's header), never NULL there. */
static void *ffi_write_buffer(const em_tensor *t, int64_t *numel, int32_t *dtype) {
  if (em_tensor_device(t).type != EM_CPU || !em_tensor_is_contiguous(t)) return NULL;
  em_storage_bump_version(em_tensor_storage(t));
  *numel = em_tensor_numel(t);
  *dtype = (int32_t)em_tensor_dtype(t);
  return em_tensor_data(t);
}
typedef struct dist_ffi_api {
  void *(*write_buffer)(const em_tensor *, int64_t *, int32_t *);
} dist_ffi_api;
static const dist_ffi_api dist_ffi = {ffi_write_buffer};

/* C._dist_ffi() -> lightuserdata: the struct of the entries above */
static int l_dist_ffi(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&dist_ffi);
  return 1;
}

void l_open_dist(lua_State *L) {
  static const luaL_Reg fns[] = {{"_data_address", l_data_address}, {"_cuda_stream", l_cuda_stream},
                                 {"_dist_ffi", l_dist_ffi},         {NULL, NULL}};
  l_add_functions(L, fns);
}
