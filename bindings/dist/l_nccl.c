/*
** l_nccl.c -- ember.dist_nccl, the NCCL half of T.distributed (issue 17;
** docs/distributed.md "The nccl backend"). A separate Lua C module
** (build/ember/dist_nccl.so), built when the CUDA backend is on and the
** toolkit has NCCL; lua/ember/distributed.lua requires it on
** init_process_group{backend = "nccl"}. Like ember.dist (l_mpi.c) it moves
** raw buffers: every call takes device addresses (C._data_address of a
** contiguous cuda tensor), an element count, a dtype name and the stream to
** enqueue on (C._cuda_stream: the current stream of the tensors' device),
** and knows nothing of tensors.
**
** Communicators are made nonblocking (ncclConfig_t.blocking = 0): every
** call returns at once and the module polls ncclCommGetAsyncError against
** the group's timeout, so neither the set-up nor a collective a peer never
** joins can hang the process; on a timeout the communicator is aborted
** (ncclCommAbort, as PyTorch's watchdog does) and the call raises. A
** collective's request is a CUDA event recorded on the stream after it;
** test/wait query it (and the communicator's error) from the host.
**
** Status: compiled only. No GPU was available where this was written; the
** paths that need no device (loading, refusing without one) are tested.
*/
#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "lauxlib.h"
#include "lua.h"

#define MAX_COMMS 256
typedef struct {
  ncclComm_t c;
  int device;
  int aborted;
  float *scratch; /* one float on the device, for barrier */
} ncomm;
static ncomm comms[MAX_COMMS];
static int ncomms = 0;
static const char *broken_why = NULL;

#define REQ_MT "ember.dist_nccl.request"
typedef struct {
  cudaEvent_t ev;
  int comm;
  int active;
} nreq;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int nccl_fail(lua_State *L, const char *op, ncclResult_t rc, ncomm *c) {
  const char *last = c ? ncclGetLastError(c->c) : NULL;
  return luaL_error(L, "%s: NCCL error: %s%s%s", op, ncclGetErrorString(rc), last && *last ? ": " : "",
                    last ? last : "");
}
static int cuda_fail(lua_State *L, const char *op, cudaError_t e) {
  return luaL_error(L, "%s: CUDA error: %s", op, cudaGetErrorString(e));
}

static ncomm *check_comm(lua_State *L, int idx, const char *op) {
  lua_Integer id = luaL_checkinteger(L, idx);
  if (id < 0 || id >= ncomms || comms[id].c == NULL)
    luaL_error(L, "%s: the process group has been destroyed", op);
  if (comms[id].aborted) luaL_error(L, "%s: the process group's NCCL communicator was aborted after a timeout", op);
  return &comms[id];
}

static ncclDataType_t check_type(lua_State *L, int idx, const char *op) {
  const char *n = luaL_checkstring(L, idx);
  if (!strcmp(n, "float32")) return ncclFloat32;
  if (!strcmp(n, "float64")) return ncclFloat64;
  if (!strcmp(n, "float16")) return ncclFloat16;
  if (!strcmp(n, "bfloat16")) return ncclBfloat16;
  if (!strcmp(n, "int64")) return ncclInt64;
  if (!strcmp(n, "int32")) return ncclInt32;
  if (!strcmp(n, "int8")) return ncclInt8;
  if (!strcmp(n, "uint8") || !strcmp(n, "bool")) return ncclUint8;
  luaL_error(L, "%s: dtype %s has no NCCL type (NCCL moves float16/32/64, bfloat16, int8/32/64, uint8 and bool)",
             op, n);
  return ncclFloat32;
}

static ncclRedOp_t check_op(lua_State *L, int idx, const char *op) {
  const char *n = luaL_checkstring(L, idx);
  if (!strcmp(n, "sum")) return ncclSum;
  if (!strcmp(n, "prod")) return ncclProd;
  if (!strcmp(n, "max") || !strcmp(n, "lor")) return ncclMax; /* bool as uint8 0/1 */
  if (!strcmp(n, "min") || !strcmp(n, "land")) return ncclMin;
  if (!strcmp(n, "avg")) return ncclAvg;
  luaL_error(L, "%s: reduce op '%s' is not supported by the nccl backend (sum, avg, prod, min, max)", op, n);
  return ncclSum;
}

static size_t check_count(lua_State *L, int idx) {
  lua_Number n = luaL_checknumber(L, idx);
  if (n < 0) luaL_error(L, "negative element count");
  return (size_t)n;
}

static void *check_addr(lua_State *L, int idx) {
  luaL_checktype(L, idx, LUA_TLIGHTUSERDATA);
  return lua_touserdata(L, idx);
}
static cudaStream_t check_stream(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return NULL;
  luaL_checktype(L, idx, LUA_TLIGHTUSERDATA);
  return (cudaStream_t)lua_touserdata(L, idx);
}

/* Waits until the communicator's last call has left ncclInProgress, for at
** most timeout seconds; aborts it on a timeout. 0: done; 1: timed out. */
static int settle(lua_State *L, ncomm *c, double timeout, const char *op) {
  double t0 = now();
  for (;;) {
    ncclResult_t st;
    ncclResult_t rc = ncclCommGetAsyncError(c->c, &st);
    if (rc != ncclSuccess) return nccl_fail(L, op, rc, c);
    if (st == ncclSuccess) return 0;
    if (st != ncclInProgress) return nccl_fail(L, op, st, c);
    if (now() - t0 > timeout) {
      ncclCommAbort(c->c);
      c->aborted = 1;
      return 1;
    }
    sched_yield();
  }
}

static int new_comm_slot(lua_State *L, const char *op) {
  for (int i = 0; i < ncomms; i++)
    if (comms[i].c == NULL && !comms[i].aborted) return i;
  if (ncomms == MAX_COMMS) luaL_error(L, "%s: more than %d NCCL communicators", op, MAX_COMMS);
  return ncomms++;
}

/* get_unique_id() -> string (NCCL_UNIQUE_ID_BYTES), made on one rank and
** broadcast to the others over MPI by distributed.lua */
static int l_get_unique_id(lua_State *L) {
  ncclUniqueId id;
  ncclResult_t rc = ncclGetUniqueId(&id);
  if (rc != ncclSuccess) return nccl_fail(L, "init_process_group", rc, NULL);
  lua_pushlstring(L, id.internal, sizeof id.internal);
  return 1;
}

/* comm_init(nranks, id, rank, device, timeout) -> comm id, or nil on a timeout */
static int l_comm_init(lua_State *L) {
  const char *op = "init_process_group";
  int nranks = (int)luaL_checkinteger(L, 1);
  size_t len;
  const char *id = luaL_checklstring(L, 2, &len);
  int rank = (int)luaL_checkinteger(L, 3);
  int device = (int)luaL_checkinteger(L, 4);
  double timeout = luaL_checknumber(L, 5);
  if (len != NCCL_UNIQUE_ID_BYTES) return luaL_error(L, "%s: a NCCL unique id has %d bytes, got %d", op,
                                                     NCCL_UNIQUE_ID_BYTES, (int)len);
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return cuda_fail(L, op, e);
  int slot = new_comm_slot(L, op);
  ncomm *c = &comms[slot];
  memset(c, 0, sizeof *c);
  c->device = device;
  e = cudaMalloc((void **)&c->scratch, sizeof(float));
  if (e != cudaSuccess) return cuda_fail(L, op, e);
  ncclUniqueId uid;
  memcpy(uid.internal, id, sizeof uid.internal);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t rc = ncclCommInitRankConfig(&c->c, nranks, uid, rank, &cfg);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    cudaFree(c->scratch);
    c->scratch = NULL;
    c->c = NULL;
    return nccl_fail(L, op, rc, NULL);
  }
  if (settle(L, c, timeout, op)) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, slot);
  return 1;
}

/* comm_split(parent, member, key, timeout) -> comm id (nil for a
** non-member, or false on a timeout); every rank of parent calls it */
static int l_comm_split(lua_State *L) {
  const char *op = "new_group";
  ncomm *p = check_comm(L, 1, op);
  int member = lua_toboolean(L, 2);
  int key = (int)luaL_checkinteger(L, 3);
  double timeout = luaL_checknumber(L, 4);
  int slot = new_comm_slot(L, op);
  ncomm *c = &comms[slot];
  memset(c, 0, sizeof *c);
  c->device = p->device;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t rc = ncclCommSplit(p->c, member ? 0 : NCCL_SPLIT_NOCOLOR, key, &c->c, &cfg);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    c->c = NULL;
    return nccl_fail(L, op, rc, p);
  }
  /* a nonblocking split: the new communicator (or, for a non-member, the
  ** parent) reports when it has finished */
  ncomm *w = member && c->c ? c : p;
  if (settle(L, w, timeout, op)) {
    if (w == p) c->c = NULL;
    lua_pushboolean(L, 0);
    return 1;
  }
  if (!member || c->c == NULL) {
    c->c = NULL;
    lua_pushnil(L);
    return 1;
  }
  cudaError_t e = cudaMalloc((void **)&c->scratch, sizeof(float));
  if (e != cudaSuccess) return cuda_fail(L, op, e);
  lua_pushinteger(L, slot);
  return 1;
}

static void comm_release(ncomm *c) {
  if (c->c) {
    if (c->aborted) {
      /* ncclCommAbort already freed it */
    } else if (broken_why) {
      ncclCommAbort(c->c);
    } else {
      ncclCommFinalize(c->c);
      ncclResult_t st = ncclInProgress;
      double t0 = now();
      while (st == ncclInProgress && now() - t0 < 60) {
        if (ncclCommGetAsyncError(c->c, &st) != ncclSuccess) break;
        sched_yield();
      }
      if (st == ncclSuccess) ncclCommDestroy(c->c);
      else ncclCommAbort(c->c);
    }
  }
  if (c->scratch) cudaFree(c->scratch);
  c->c = NULL;
  c->scratch = NULL;
}

static int l_comm_free(lua_State *L) {
  lua_Integer id = luaL_checkinteger(L, 1);
  if (id >= 0 && id < ncomms) {
    comm_release(&comms[id]);
    comms[id].aborted = 0;
  }
  return 0;
}

static int l_set_broken(lua_State *L) {
  lua_pushvalue(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, "ember.dist_nccl.broken"); /* keeps the string alive */
  broken_why = luaL_checkstring(L, 1);
  return 0;
}

/* -- requests ------------------------------------------------------------ */

/* the request of what was just enqueued on comm c and stream s */
static int push_req(lua_State *L, ncomm *c, int slot, cudaStream_t s, ncclResult_t rc, const char *op,
                    double timeout) {
  if (rc != ncclSuccess && rc != ncclInProgress) return nccl_fail(L, op, rc, c);
  if (rc == ncclInProgress && settle(L, c, timeout, op))
    return luaL_error(L, "%s: timed out after %g s while NCCL enqueued the operation; the communicator is aborted",
                      op, timeout);
  nreq *r = lua_newuserdata(L, sizeof *r);
  r->ev = NULL;
  r->comm = slot;
  r->active = 0;
  luaL_getmetatable(L, REQ_MT);
  lua_setmetatable(L, -2);
  cudaError_t e = cudaEventCreateWithFlags(&r->ev, cudaEventDisableTiming);
  if (e != cudaSuccess) return cuda_fail(L, op, e);
  e = cudaEventRecord(r->ev, s);
  if (e != cudaSuccess) return cuda_fail(L, op, e);
  r->active = 1;
  return 1;
}

static int req_gc(lua_State *L) {
  nreq *r = luaL_checkudata(L, 1, REQ_MT);
  if (r->ev) cudaEventDestroy(r->ev);
  r->ev = NULL;
  r->active = 0;
  return 0;
}

/* one look: 1 done, 0 not yet; raises on an error */
static int test_once(lua_State *L, nreq *r, const char *op) {
  if (!r->active) return 1;
  cudaError_t e = cudaEventQuery(r->ev);
  if (e == cudaSuccess) {
    r->active = 0;
    return 1;
  }
  if (e != cudaErrorNotReady) return cuda_fail(L, op, e);
  ncomm *c = &comms[r->comm];
  if (c->aborted) return luaL_error(L, "%s: the NCCL communicator was aborted", op);
  if (c->c) {
    ncclResult_t st;
    if (ncclCommGetAsyncError(c->c, &st) == ncclSuccess && st != ncclSuccess && st != ncclInProgress)
      return nccl_fail(L, op, st, c);
  }
  return 0;
}

/* test(req, op) -> done */
static int l_test(lua_State *L) {
  nreq *r = luaL_checkudata(L, 1, REQ_MT);
  lua_pushboolean(L, test_once(L, r, luaL_optstring(L, 2, "is_completed")));
  return 1;
}

/* wait(req, timeout, op) -> true, or false after timeout seconds (the
** communicator is then aborted, so the kernels waiting on a peer end) */
static int l_wait(lua_State *L) {
  nreq *r = luaL_checkudata(L, 1, REQ_MT);
  double timeout = luaL_checknumber(L, 2);
  const char *op = luaL_optstring(L, 3, "wait");
  double t0 = now();
  while (!test_once(L, r, op)) {
    double waited = now() - t0;
    if (waited > timeout) {
      ncomm *c = &comms[r->comm];
      if (c->c && !c->aborted) {
        ncclCommAbort(c->c);
        c->aborted = 1;
      }
      lua_pushboolean(L, 0);
      return 1;
    }
    if (waited > 5) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_progress(lua_State *L) { return 0; }

/* -- collectives: (comm, ..., stream, timeout) -> request ---------------- */
#define COMM_ARGS(op)                                   \
  const char *opname = op;                              \
  int slot = (int)luaL_checkinteger(L, 1);              \
  ncomm *c = check_comm(L, 1, opname)

static int l_iallreduce(lua_State *L) { /* comm, addr, count, dtype, op, stream, timeout */
  COMM_ARGS("all_reduce");
  void *a = check_addr(L, 2);
  ncclResult_t rc = ncclAllReduce(a, a, check_count(L, 3), check_type(L, 4, opname), check_op(L, 5, opname), c->c,
                                  check_stream(L, 6));
  return push_req(L, c, slot, check_stream(L, 6), rc, opname, luaL_checknumber(L, 7));
}

static int l_ibcast(lua_State *L) { /* comm, addr, count, dtype, root, stream, timeout */
  COMM_ARGS("broadcast");
  void *a = check_addr(L, 2);
  ncclResult_t rc = ncclBroadcast(a, a, check_count(L, 3), check_type(L, 4, opname), (int)luaL_checkinteger(L, 5),
                                  c->c, check_stream(L, 6));
  return push_req(L, c, slot, check_stream(L, 6), rc, opname, luaL_checknumber(L, 7));
}

static int l_ireduce(lua_State *L) { /* comm, addr, count, dtype, op, root, stream, timeout */
  COMM_ARGS("reduce");
  void *a = check_addr(L, 2);
  ncclResult_t rc = ncclReduce(a, a, check_count(L, 3), check_type(L, 4, opname), check_op(L, 5, opname),
                               (int)luaL_checkinteger(L, 6), c->c, check_stream(L, 7));
  return push_req(L, c, slot, check_stream(L, 7), rc, opname, luaL_checknumber(L, 8));
}

static int l_iallgather(lua_State *L) { /* comm, send, recv, count, dtype, stream, timeout */
  COMM_ARGS("all_gather");
  ncclResult_t rc = ncclAllGather(check_addr(L, 2), check_addr(L, 3), check_count(L, 4), check_type(L, 5, opname),
                                  c->c, check_stream(L, 6));
  return push_req(L, c, slot, check_stream(L, 6), rc, opname, luaL_checknumber(L, 7));
}

static int l_ireduce_scatter(lua_State *L) { /* comm, send, recv, count, dtype, op, stream, timeout */
  COMM_ARGS("reduce_scatter");
  ncclResult_t rc = ncclReduceScatter(check_addr(L, 2), check_addr(L, 3), check_count(L, 4),
                                      check_type(L, 5, opname), check_op(L, 6, opname), c->c, check_stream(L, 7));
  return push_req(L, c, slot, check_stream(L, 7), rc, opname, luaL_checknumber(L, 8));
}

static size_t dtype_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

/* the counts and offsets (in elements) of a table of n numbers at idx */
static void read_counts(lua_State *L, int idx, int n, size_t *cnt, size_t *off, const char *op) {
  luaL_checktype(L, idx, LUA_TTABLE);
  size_t o = 0;
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    lua_Number v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (v < 0) luaL_error(L, "%s: negative split size", op);
    cnt[i] = (size_t)v;
    off[i] = o;
    o += cnt[i];
  }
}

/* all-to-all as grouped sends and receives: counts (n of each) or a uniform k */
static int alltoall(lua_State *L, ncomm *c, int slot, char *send, char *recv, const size_t *sc, const size_t *so,
                    const size_t *rc_, const size_t *ro, int n, ncclDataType_t t, cudaStream_t s, double timeout,
                    const char *op) {
  size_t es = dtype_size(t);
  ncclResult_t rc = ncclGroupStart();
  for (int p = 0; p < n && (rc == ncclSuccess || rc == ncclInProgress); p++) {
    if (sc[p]) rc = ncclSend(send + so[p] * es, sc[p], t, p, c->c, s);
    if ((rc == ncclSuccess || rc == ncclInProgress) && rc_[p]) rc = ncclRecv(recv + ro[p] * es, rc_[p], t, p, c->c, s);
  }
  ncclResult_t end = ncclGroupEnd();
  if (rc == ncclSuccess || rc == ncclInProgress) rc = end;
  return push_req(L, c, slot, s, rc, op, timeout);
}

static int comm_size(lua_State *L, ncomm *c, const char *op) {
  int n;
  ncclResult_t rc = ncclCommCount(c->c, &n);
  if (rc != ncclSuccess) nccl_fail(L, op, rc, c);
  return n;
}
static int comm_rank(lua_State *L, ncomm *c, const char *op) {
  int r;
  ncclResult_t rc = ncclCommUserRank(c->c, &r);
  if (rc != ncclSuccess) nccl_fail(L, op, rc, c);
  return r;
}

static int l_ialltoall(lua_State *L) { /* comm, send, recv, k, dtype, stream, timeout */
  COMM_ARGS("all_to_all");
  int n = comm_size(L, c, opname);
  size_t *v = lua_newuserdata(L, 4 * (size_t)n * sizeof *v); /* freed by the collector */
  size_t k = check_count(L, 4);
  for (int i = 0; i < n; i++) v[i] = v[2 * n + i] = k, v[n + i] = v[3 * n + i] = k * i;
  return alltoall(L, c, slot, check_addr(L, 2), check_addr(L, 3), v, v + n, v + 2 * n, v + 3 * n, n,
                  check_type(L, 5, opname), check_stream(L, 6), luaL_checknumber(L, 7), opname);
}

static int l_ialltoallv(lua_State *L) { /* comm, send, recv, sends, recvs, dtype, stream, timeout */
  COMM_ARGS("all_to_all");
  int n = comm_size(L, c, opname);
  size_t *v = lua_newuserdata(L, 4 * (size_t)n * sizeof *v);
  read_counts(L, 4, n, v, v + n, opname);
  read_counts(L, 5, n, v + 2 * n, v + 3 * n, opname);
  return alltoall(L, c, slot, check_addr(L, 2), check_addr(L, 3), v, v + n, v + 2 * n, v + 3 * n, n,
                  check_type(L, 6, opname), check_stream(L, 7), luaL_checknumber(L, 8), opname);
}

/* gather(comm, send, recv or nil, k, dtype, root, stream, timeout): every
** rank sends k elements to root, which receives rank p's into recv + p k;
** scatter(comm, send or nil, recv, k, dtype, root, stream, timeout): the
** mirror image. Both are all-to-alls with every other count zero. */
static int rooted(lua_State *L, int gather) {
  COMM_ARGS(gather ? "gather" : "scatter");
  int n = comm_size(L, c, opname), me = comm_rank(L, c, opname);
  int root = (int)luaL_checkinteger(L, 6);
  size_t *v = lua_newuserdata(L, 4 * (size_t)n * sizeof *v); /* freed by the collector */
  size_t k = check_count(L, 4);
  memset(v, 0, 4 * (size_t)n * sizeof *v);
  size_t *one = gather ? v : v + 2 * n, *all = gather ? v + 2 * n : v; /* counts; offsets follow at + n */
  one[root] = k;
  if (me == root)
    for (int i = 0; i < n; i++) all[i] = k, all[n + i] = k * i;
  void *send = lua_isnil(L, 2) ? NULL : check_addr(L, 2), *recv = lua_isnil(L, 3) ? NULL : check_addr(L, 3);
  return alltoall(L, c, slot, send, recv, v, v + n, v + 2 * n, v + 3 * n, n, check_type(L, 5, opname),
                  check_stream(L, 7), luaL_checknumber(L, 8), opname);
}
static int l_igather(lua_State *L) { return rooted(L, 1); }
static int l_iscatter(lua_State *L) { return rooted(L, 0); }

/* barrier(comm, stream, timeout): an all_reduce of one float, as PyTorch's
** NCCL barrier */
static int l_ibarrier(lua_State *L) {
  COMM_ARGS("barrier");
  cudaStream_t s = check_stream(L, 2);
  ncclResult_t rc = ncclAllReduce(c->scratch, c->scratch, 1, ncclFloat32, ncclSum, c->c, s);
  return push_req(L, c, slot, s, rc, opname, luaL_checknumber(L, 3));
}

/* isend/irecv(comm, addr, count, dtype, peer, stream, timeout) */
static int l_isend(lua_State *L) {
  COMM_ARGS("send");
  ncclResult_t rc = ncclSend(check_addr(L, 2), check_count(L, 3), check_type(L, 4, opname),
                             (int)luaL_checkinteger(L, 5), c->c, check_stream(L, 6));
  return push_req(L, c, slot, check_stream(L, 6), rc, opname, luaL_checknumber(L, 7));
}
static int l_irecv(lua_State *L) {
  COMM_ARGS("recv");
  ncclResult_t rc = ncclRecv(check_addr(L, 2), check_count(L, 3), check_type(L, 4, opname),
                             (int)luaL_checkinteger(L, 5), c->c, check_stream(L, 6));
  return push_req(L, c, slot, check_stream(L, 6), rc, opname, luaL_checknumber(L, 7));
}

static int l_version(lua_State *L) {
  int v = 0;
  ncclGetVersion(&v);
  lua_pushinteger(L, v);
  return 1;
}

/* at exit (the module's sentinel is collected): communicators released */
static int l_sentinel_gc(lua_State *L) {
  for (int i = 0; i < ncomms; i++) comm_release(&comms[i]);
  ncomms = 0;
  return 0;
}

int luaopen_ember_dist_nccl(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"get_unique_id", l_get_unique_id}, {"comm_init", l_comm_init}, {"comm_split", l_comm_split},
      {"comm_free", l_comm_free}, {"set_broken", l_set_broken}, {"test", l_test}, {"wait", l_wait},
      {"progress", l_progress}, {"iallreduce", l_iallreduce}, {"ibcast", l_ibcast}, {"ireduce", l_ireduce},
      {"iallgather", l_iallgather}, {"ireduce_scatter", l_ireduce_scatter}, {"ialltoall", l_ialltoall},
      {"ialltoallv", l_ialltoallv}, {"igather", l_igather}, {"iscatter", l_iscatter}, {"ibarrier", l_ibarrier},
      {"isend", l_isend}, {"irecv", l_irecv}, {"version", l_version}, {NULL, NULL}};
  luaL_newmetatable(L, REQ_MT);
  lua_pushcfunction(L, req_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
  /* a sentinel userdata whose __gc releases the communicators at exit */
  lua_newuserdata(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, l_sentinel_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "_sentinel");
  return 1;
}
