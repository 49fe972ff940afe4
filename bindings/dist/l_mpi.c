/*
** l_mpi.c -- ember.dist, the MPI half of T.distributed (issue 17;
** docs/distributed.md). A separate Lua C module (build/ember/dist.so), so
** libember and ember.core never link MPI and a script that does not use
** T.distributed never loads it; lua/ember/distributed.lua requires it on
** init_process_group. It moves raw buffers: every call takes an address
** (C._data_address of a contiguous tensor), an element count and a dtype
** name, and knows nothing of tensors, dtypes' arithmetic or autograd.
**
** Every collective is MPI's nonblocking form and returns a request; wait
** polls it with MPI_Test (yielding the core; sleeping 1 ms between tests
** once it has waited 5 s) until it completes or the timeout passes. A timed-out request
** stays posted: the communicator can no longer be used, and the process
** calls MPI_Abort at exit instead of MPI_Finalize (which would wait for the
** peers forever), so mpirun ends the job.
*/
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lauxlib.h"
#include "lua.h"

#define MAX_COMMS 256
static MPI_Comm comms[MAX_COMMS];
static unsigned comm_seq[MAX_COMMS]; /* all_reduce schedules started on each */
static int ncomms = 0;
static int sched_ok = -1;            /* tags above 32767 exist (MPI_TAG_UB) and not turned off */
static int we_initialized = 0; /* MPI_Init was ours (so is MPI_Finalize) */
static int broken = 0;          /* a request timed out or was lost: abort at exit */
static const char *broken_why = NULL;

#define REQ_MT "ember.dist.request"
struct sched;
typedef struct dreq {
  MPI_Request req;
  int active;
  int source;          /* a receive's sender, once complete */
  struct sched *s;     /* ember's own schedule (all_reduce), or NULL */
  int err;             /* the MPI error that ended its schedule, or 0 */
} dreq;

/* -- all_reduce as a schedule of point-to-point steps ----------------------
** Open MPI's nonblocking collectives (libnbc) cost several times the
** blocking ones per call (4 KB on 2 ranks: ~6 us against ~3 us; 1 MB:
** 1.5x), and the group's timeout needs a nonblocking call. So all_reduce
** runs its own schedule over MPI_Isend/MPI_Irecv on the group's
** communicator and MPI_Reduce_local: recursive doubling for small messages
** on a power-of-two group (log2 n exchanges of the whole buffer), else the
** ring (reduce-scatter then all-gather: 2 (n-1) steps of 1/n of it), the
** algorithms MPI libraries use for the blocking call. Each chunk's sum is
** made on one rank (ring) or in the same pairwise order on both partners
** (recursive doubling: a + b == b + a), so every rank ends with the same
** bytes. Tags 32768 + (the group's collective count mod 1024) keep apart
** the collectives in flight and stay clear of the user's tags (0..32767).
** Every test of any request advances every schedule in flight, as MPI's
** own progress does, so ranks waiting on different ones cannot deadlock.
** EMBER_DIST_ALLREDUCE=mpi uses MPI_Iallreduce instead (for comparison). */
typedef struct sstep {
  int to, from;          /* group ranks */
  int soff, scount;      /* elements of buf sent */
  int roff, rcount;      /* elements received: into tmp and reduced into buf + roff, or into buf + roff */
  int reduce;
} sstep;
typedef struct sched {
  MPI_Comm c;
  MPI_Datatype t;
  MPI_Op op;
  int esize, tag, nsteps, step, posted;
  char *buf, *tmp;
  sstep *steps;
  MPI_Request q[2];
  dreq *owner;
  struct sched *prev, *next;
} sched;
static sched *inflight = NULL;
typedef union { size_t bytes; max_align_t align; } blkhdr; /* the block's size, then the schedule */
static blkhdr *spare = NULL; /* the kept schedule block (sched_alloc) */
static void spare_release(void) {
  free(spare);
  spare = NULL;
}
#define SCHED_TAG0 32768
#define SCHED_TAGS 1024
#define SCHED_RD_BYTES 65536 /* recursive doubling up to this size */

/* not an MPI error code: a schedule's block could not be allocated */
#define ERR_NOMEM (-1)

/* what error code rc says, into buf ("MPI error: ..."; ERR_NOMEM is ours) */
enum { ERR_TEXT = MPI_MAX_ERROR_STRING + 16 };
static const char *err_text(int rc, char buf[ERR_TEXT]) {
  if (rc == ERR_NOMEM) return "out of memory for the schedule";
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
  msg[len] = 0;
  snprintf(buf, ERR_TEXT, "MPI error: %s", len ? msg : "unknown");
  return buf;
}

static int fail(lua_State *L, const char *op, int rc) {
  char buf[ERR_TEXT];
  return luaL_error(L, "%s: %s", op, err_text(rc, buf));
}

/* what makes comm id unusable, or NULL */
static const char *comm_problem(lua_Integer id) {
  if (!we_initialized && ncomms == 0) return "MPI is not initialized";
  if (id < 0 || id >= ncomms || comms[id] == MPI_COMM_NULL) return "the process group has been destroyed";
  return NULL;
}

static MPI_Comm check_comm(lua_State *L, int idx, const char *op) {
  lua_Integer id = luaL_checkinteger(L, idx);
  const char *why = comm_problem(id);
  if (why) luaL_error(L, "%s: %s", op, why);
  return comms[id];
}

/* the MPI type of a dtype name (float16/bfloat16: moved as 16-bit words,
** not reduced), or MPI_DATATYPE_NULL */
static MPI_Datatype type_named(const char *n) {
  if (!strcmp(n, "float32")) return MPI_FLOAT;
  if (!strcmp(n, "float64")) return MPI_DOUBLE;
  if (!strcmp(n, "int64")) return MPI_INT64_T;
  if (!strcmp(n, "int32")) return MPI_INT32_T;
  if (!strcmp(n, "int16")) return MPI_INT16_T;
  if (!strcmp(n, "int8")) return MPI_INT8_T;
  if (!strcmp(n, "uint8")) return MPI_UINT8_T;
  if (!strcmp(n, "bool")) return MPI_C_BOOL;
  if (!strcmp(n, "float16") || !strcmp(n, "bfloat16")) return MPI_UINT16_T;
  return MPI_DATATYPE_NULL;
}

static MPI_Datatype check_type(lua_State *L, int idx, const char *op) {
  const char *n = luaL_checkstring(L, idx);
  MPI_Datatype t = type_named(n);
  if (t == MPI_DATATYPE_NULL) luaL_error(L, "%s: dtype %s has no MPI type", op, n);
  return t;
}

/* the MPI op of a reduce op name, or MPI_OP_NULL */
static MPI_Op op_named(const char *n) {
  if (!strcmp(n, "sum")) return MPI_SUM;
  if (!strcmp(n, "prod")) return MPI_PROD;
  if (!strcmp(n, "max")) return MPI_MAX;
  if (!strcmp(n, "min")) return MPI_MIN;
  if (!strcmp(n, "lor")) return MPI_LOR;
  if (!strcmp(n, "land")) return MPI_LAND;
  if (!strcmp(n, "band")) return MPI_BAND;
  if (!strcmp(n, "bor")) return MPI_BOR;
  if (!strcmp(n, "bxor")) return MPI_BXOR;
  return MPI_OP_NULL;
}

static MPI_Op check_op(lua_State *L, int idx, const char *op) {
  const char *n = luaL_checkstring(L, idx);
  MPI_Op o = op_named(n);
  if (o == MPI_OP_NULL) luaL_error(L, "%s: unknown reduce op '%s'", op, n);
  return o;
}

static int check_count(lua_State *L, int idx, const char *op) {
  lua_Number n = luaL_checknumber(L, idx);
  if (n < 0 || n > 2147483647.0)
    luaL_error(L, "%s: %.0f elements is more than one MPI call moves (2^31 - 1)", op, n);
  return (int)n;
}

/* an address argument: a lightuserdata, or nil for MPI_IN_PLACE */
static void *check_addr(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return MPI_IN_PLACE;
  luaL_checktype(L, idx, LUA_TLIGHTUSERDATA);
  return lua_touserdata(L, idx);
}

/* a request with `extra` bytes after it, for argument arrays MPI reads
** until the operation completes (the request userdata outlives it) */
static dreq *new_req_extra(lua_State *L, size_t extra) {
  dreq *r = lua_newuserdata(L, sizeof(dreq) + extra);
  r->req = MPI_REQUEST_NULL;
  r->active = 0;
  r->source = -1;
  r->s = NULL;
  r->err = 0;
  luaL_getmetatable(L, REQ_MT);
  lua_setmetatable(L, -2);
  return r;
}
static dreq *new_req(lua_State *L) {
  dreq *r = lua_newuserdata(L, sizeof *r);
  r->req = MPI_REQUEST_NULL;
  r->active = 0;
  r->source = -1;
  r->s = NULL;
  r->err = 0;
  luaL_getmetatable(L, REQ_MT);
  lua_setmetatable(L, -2);
  return r;
}

static int started(lua_State *L, dreq *r, int rc, const char *op) {
  if (rc != MPI_SUCCESS) return fail(L, op, rc);
  r->active = 1;
  return 1;
}

/* -- Set-up -------------------------------------------------------------- */

/* the thread levels by name, in MPI's order */
static const char *const LEVELS[] = {"single", "funneled", "serialized", "multiple", NULL};
static int level_value(int i) {
  return i == 0 ? MPI_THREAD_SINGLE : i == 1 ? MPI_THREAD_FUNNELED : i == 2 ? MPI_THREAD_SERIALIZED
                                                                     : MPI_THREAD_MULTIPLE;
}
static const char *level_name(int v) {
  for (int i = 0; LEVELS[i]; i++)
    if (level_value(i) == v) return LEVELS[i];
  return "unknown";
}

/* init(level) -> rank, size (of MPI_COMM_WORLD), the thread level MPI
** provides (a name of LEVELS): MPI_Init_thread asking for level ("funneled"
** by default: ember's own threads never call MPI), unless the host has
** initialized MPI (then its level stands) */
static int l_init(lua_State *L) {
  int want = luaL_checkoption(L, 1, "funneled", LEVELS);
  int flag = 0, provided = 0;
  MPI_Initialized(&flag);
  if (!flag) {
    int rc = MPI_Init_thread(NULL, NULL, level_value(want), &provided);
    if (rc != MPI_SUCCESS) return luaL_error(L, "init_process_group: MPI_Init failed");
    we_initialized = 1;
  } else {
    MPI_Query_thread(&provided);
  }
  if (ncomms == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    comms[0] = MPI_COMM_WORLD;
    ncomms = 1;
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  lua_pushinteger(L, rank);
  lua_pushinteger(L, size);
  lua_pushstring(L, level_name(provided));
  return 3;
}

/* The state's sentinel: at lua_close, finalize (or abort a broken job). */
static int l_sentinel_gc(lua_State *L) {
  (void)L;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin || !we_initialized) return 0;
  if (broken) {
    fprintf(stderr, "ember.distributed: aborting the job (%s)\n",
            broken_why ? broken_why : "a collective did not complete");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int i = 1; i < ncomms; i++)
    if (comms[i] != MPI_COMM_NULL) MPI_Comm_free(&comms[i]);
  spare_release();
  MPI_Finalize();
  return 0;
}

/* finalize(): MPI_Finalize now (the sentinel does it at exit) */
static int l_finalize(lua_State *L) { return l_sentinel_gc(L); }

static int l_abort(lua_State *L) {
  int code = (int)luaL_optinteger(L, 1, 1);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, code);
  return 0;
}

static int l_set_broken(lua_State *L) {
  broken = 1;
  lua_pushvalue(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, "ember.dist.why"); /* keeps the string alive */
  broken_why = lua_tostring(L, 1);
  return 0;
}

static int l_is_broken(lua_State *L) {
  lua_pushboolean(L, broken);
  return 1;
}

/* comm_create(parent, {ranks in parent, 0-based}, tag) -> id, rank, size;
** only the members call it (MPI_Comm_create_group). */
static int l_comm_create(lua_State *L) {
  MPI_Comm parent = check_comm(L, 1, "new_group");
  luaL_checktype(L, 2, LUA_TTABLE);
  int tag = (int)luaL_checkinteger(L, 3);
  int n = 0;
  while (1) {
    lua_rawgeti(L, 2, n + 1);
    int nil = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (nil) break;
    n++;
  }
  if (n < 1 || n > 65536) return luaL_error(L, "new_group: expected 1 to 65536 ranks");
  if (ncomms >= MAX_COMMS) return luaL_error(L, "new_group: more than %d live groups", MAX_COMMS - 1);
  int *rs = lua_newuserdata(L, sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 2, i + 1);
    rs[i] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  MPI_Group pg, g;
  MPI_Comm_group(parent, &pg);
  int rc = MPI_Group_incl(pg, n, rs, &g);
  MPI_Group_free(&pg);
  if (rc != MPI_SUCCESS) return fail(L, "new_group", rc);
  MPI_Comm c;
  rc = MPI_Comm_create_group(parent, g, tag, &c);
  MPI_Group_free(&g);
  if (rc != MPI_SUCCESS) return fail(L, "new_group", rc);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int id = -1;
  for (int i = 1; i < ncomms; i++)
    if (comms[i] == MPI_COMM_NULL) { id = i; break; }
  if (id < 0) id = ncomms++;
  comms[id] = c;
  comm_seq[id] = 0;
  int rank, size;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  lua_pushinteger(L, id);
  lua_pushinteger(L, rank);
  lua_pushinteger(L, size);
  return 3;
}

static int l_comm_free(lua_State *L) {
  lua_Integer id = luaL_checkinteger(L, 1);
  if (id > 0 && id < ncomms && comms[id] != MPI_COMM_NULL) {
    if (!broken) MPI_Comm_free(&comms[id]);
    comms[id] = MPI_COMM_NULL;
  }
  return 0;
}

/* -- Collectives: each returns a request ----------------------------------- */

/* A schedule's block (the struct, its steps and the receive buffer: half
** the message on 2 ranks) comes from one kept spare when it is big enough,
** and a finished schedule's block becomes the spare (the larger of the
** two is kept, up to SPARE_MAX): a loop of all_reduces of one size then
** allocates nothing, where a fresh 32 MB receive buffer per 64 MB call
** cost its page faults every time. finalize frees it. */
#define SPARE_MAX ((size_t)64 << 20)
static sched *sched_alloc(size_t bytes) {
  blkhdr *h;
  if (spare && spare->bytes >= bytes) {
    h = spare;
    spare = NULL;
  } else {
    h = malloc(sizeof(blkhdr) + bytes);
    if (!h) return NULL;
    h->bytes = bytes;
  }
  return (sched *)(h + 1);
}
static void sched_free(sched *x) {
  blkhdr *h = (blkhdr *)x - 1;
  if (h->bytes > SPARE_MAX || (spare && spare->bytes >= h->bytes)) {
    free(h);
    return;
  }
  free(spare);
  spare = h;
}

static void sched_unlink(sched *x) {
  if (x->prev) x->prev->next = x->next; else inflight = x->next;
  if (x->next) x->next->prev = x->prev;
  x->prev = x->next = NULL;
}

/* post step x->step's receive and send */
static int sched_post(sched *x) {
  const sstep *st = &x->steps[x->step];
  char *into = st->reduce ? x->tmp : x->buf + (size_t)st->roff * x->esize;
  int rc = MPI_Irecv(into, st->rcount, x->t, st->from, x->tag, x->c, &x->q[0]);
  if (rc == MPI_SUCCESS)
    rc = MPI_Isend(x->buf + (size_t)st->soff * x->esize, st->scount, x->t, st->to, x->tag, x->c, &x->q[1]);
  x->posted = rc == MPI_SUCCESS;
  return rc;
}

/* advance x without blocking; *done when its last step has completed */
static int sched_advance(sched *x, int *done) {
  *done = 0;
  while (x->step < x->nsteps) {
    int flag = 0;
    int rc = MPI_Testall(2, x->q, &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    if (!flag) return MPI_SUCCESS;
    const sstep *st = &x->steps[x->step];
    if (st->reduce) {
      rc = MPI_Reduce_local(x->tmp, x->buf + (size_t)st->roff * x->esize, st->rcount, x->t, x->op);
      if (rc != MPI_SUCCESS) return rc;
    }
    if (++x->step < x->nsteps && (rc = sched_post(x)) != MPI_SUCCESS) return rc;
  }
  *done = 1;
  return MPI_SUCCESS;
}

/* one pass over every schedule in flight; a finished one is freed and its
** request marked complete. Returns the first MPI error (that schedule is
** dropped: the job is broken) */
static int sched_progress_all(void) {
  sched *x = inflight;
  while (x) {
    sched *next = x->next;
    int done = 0, rc = sched_advance(x, &done);
    if (rc != MPI_SUCCESS || done) {
      sched_unlink(x);
      x->owner->active = 0;
      x->owner->s = NULL;
      if (rc != MPI_SUCCESS) { /* left allocated: MPI may still write its tmp */
        x->owner->err = rc;
        broken = 1;
        if (!broken_why) broken_why = "an all_reduce failed";
        return rc;
      }
      sched_free(x);
    }
    x = next;
  }
  return MPI_SUCCESS;
}

/* build and start the schedule of an in-place all_reduce of n elements */
static int sched_start(dreq *r, MPI_Comm c, unsigned seq, char *a, int n, MPI_Datatype t, MPI_Op op) {
  int me, size, esize;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &size);
  MPI_Type_size(t, &esize);
  int pow2 = (size & (size - 1)) == 0;
  int rd = pow2 && (long long)n * esize <= SCHED_RD_BYTES;
  int nsteps = 0, maxchunk = 0;
  if (rd) {
    for (int k = 1; k < size; k <<= 1) nsteps++;
    maxchunk = n;
  } else {
    nsteps = 2 * (size - 1);
    maxchunk = n / size + (n % size != 0);
  }
  size_t bytes = sizeof(sched) + (size_t)nsteps * sizeof(sstep) + (size_t)maxchunk * esize + 16;
  sched *x = sched_alloc(bytes);
  if (!x) return ERR_NOMEM;
  x->c = c, x->t = t, x->op = op, x->esize = esize;
  x->tag = SCHED_TAG0 + (int)(seq % SCHED_TAGS);
  x->nsteps = nsteps, x->step = 0, x->posted = 0;
  x->buf = a;
  x->steps = (sstep *)(x + 1);
  x->tmp = (char *)(((uintptr_t)(x->steps + nsteps) + 15) & ~(uintptr_t)15);
  x->q[0] = x->q[1] = MPI_REQUEST_NULL;
  if (rd) {
    int i = 0;
    for (int k = 1; k < size; k <<= 1, i++) {
      sstep *st = &x->steps[i];
      st->to = st->from = me ^ k;
      st->soff = 0, st->scount = n, st->roff = 0, st->rcount = n, st->reduce = 1;
    }
  } else {
    int base = n / size, rem = n % size;
    int right = (me + 1) % size, left = (me + size - 1) % size;
#define CH_OFF(i) ((i) * base + ((i) < rem ? (i) : rem))
#define CH_LEN(i) (base + ((i) < rem))
    for (int s2 = 0; s2 < size - 1; s2++) { /* reduce-scatter */
      int sc = ((me - s2) % size + size) % size, rcv = ((me - s2 - 1) % size + size) % size;
      sstep *st = &x->steps[s2];
      st->to = right, st->from = left;
      st->soff = CH_OFF(sc), st->scount = CH_LEN(sc), st->roff = CH_OFF(rcv), st->rcount = CH_LEN(rcv);
      st->reduce = 1;
    }
    for (int s2 = 0; s2 < size - 1; s2++) { /* all-gather: rank me owns chunk me + 1 */
      int sc = ((me + 1 - s2) % size + size) % size, rcv = ((me - s2) % size + size) % size;
      sstep *st = &x->steps[size - 1 + s2];
      st->to = right, st->from = left;
      st->soff = CH_OFF(sc), st->scount = CH_LEN(sc), st->roff = CH_OFF(rcv), st->rcount = CH_LEN(rcv);
      st->reduce = 0;
    }
#undef CH_OFF
#undef CH_LEN
  }
  int rc = sched_post(x);
  if (rc != MPI_SUCCESS) { sched_free(x); return rc; }
  x->owner = r;
  r->s = x;
  r->active = 1;
  x->prev = NULL, x->next = inflight;
  if (inflight) inflight->prev = x;
  inflight = x;
  return MPI_SUCCESS;
}

static int use_sched(void) {
  if (sched_ok < 0) {
    const char *e = getenv("EMBER_DIST_ALLREDUCE");
    void *v = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
    sched_ok = flag && v && *(int *)v >= SCHED_TAG0 + SCHED_TAGS - 1 && !(e && !strcmp(e, "mpi"));
  }
  return sched_ok;
}

/* starts the in-place all_reduce of n elements at a on r, the request of
** comm id's communicator c: ember's schedule, or MPI_Iallreduce */
static int allreduce_post(dreq *r, int id, MPI_Comm c, void *a, int n, MPI_Datatype t, MPI_Op op) {
  int size = 1;
  MPI_Comm_size(c, &size);
  if (size > 1 && a != MPI_IN_PLACE && use_sched()) return sched_start(r, c, comm_seq[id]++, a, n, t, op);
  int rc = MPI_Iallreduce(MPI_IN_PLACE, a, n, t, op, c, &r->req);
  if (rc == MPI_SUCCESS) r->active = 1;
  return rc;
}

/* all_reduce's arguments at 1..5 (comm, addr, count, dtype, op; in place),
** started on r: ember's schedule, or MPI_Iallreduce. r is made by mk once
** the arguments are checked (mk pushes nothing, or the request userdata). */
static dreq *allreduce_start(lua_State *L, dreq *(*mk)(lua_State *)) {
  lua_Integer id = luaL_checkinteger(L, 1);
  MPI_Comm c = check_comm(L, 1, "all_reduce");
  void *a = check_addr(L, 2);
  int n = check_count(L, 3, "all_reduce");
  MPI_Datatype t = check_type(L, 4, "all_reduce");
  MPI_Op op = check_op(L, 5, "all_reduce");
  dreq *r = mk(L);
  int rc = allreduce_post(r, (int)id, c, a, n, t, op);
  if (rc != MPI_SUCCESS) fail(L, "all_reduce", rc);
  return r;
}

/* iallreduce(comm, addr, count, dtype, op) -> request: in place */
static int l_iallreduce(lua_State *L) {
  allreduce_start(L, new_req);
  return 1;
}

/* ibcast(comm, addr, count, dtype, root) */
static int l_ibcast(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "broadcast");
  void *a = check_addr(L, 2);
  int n = check_count(L, 3, "broadcast");
  MPI_Datatype t = check_type(L, 4, "broadcast");
  int root = (int)luaL_checkinteger(L, 5);
  dreq *r = new_req(L);
  return started(L, r, MPI_Ibcast(a, n, t, root, c, &r->req), "broadcast");
}

/* ireduce(comm, addr, count, dtype, op, root, i_am_root): in place at the root */
static int l_ireduce(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "reduce");
  void *a = check_addr(L, 2);
  int n = check_count(L, 3, "reduce");
  MPI_Datatype t = check_type(L, 4, "reduce");
  MPI_Op op = check_op(L, 5, "reduce");
  int root = (int)luaL_checkinteger(L, 6);
  int me = lua_toboolean(L, 7);
  dreq *r = new_req(L);
  int rc = me ? MPI_Ireduce(MPI_IN_PLACE, a, n, t, op, root, c, &r->req)
              : MPI_Ireduce(a, NULL, n, t, op, root, c, &r->req);
  return started(L, r, rc, "reduce");
}

/* iallgather(comm, send|nil (in place), recv, count per rank, dtype) */
static int l_iallgather(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "all_gather");
  void *s = check_addr(L, 2), *d = check_addr(L, 3);
  int n = check_count(L, 4, "all_gather");
  MPI_Datatype t = check_type(L, 5, "all_gather");
  dreq *r = new_req(L);
  return started(L, r, MPI_Iallgather(s, s == MPI_IN_PLACE ? 0 : n, t, d, n, t, c, &r->req),
                 "all_gather");
}

/* ireduce_scatter(comm, send, recv, count per rank, dtype, op) */
static int l_ireduce_scatter(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "reduce_scatter");
  void *s = check_addr(L, 2), *d = check_addr(L, 3);
  int n = check_count(L, 4, "reduce_scatter");
  MPI_Datatype t = check_type(L, 5, "reduce_scatter");
  MPI_Op op = check_op(L, 6, "reduce_scatter");
  dreq *r = new_req(L);
  return started(L, r, MPI_Ireduce_scatter_block(s, d, n, t, op, c, &r->req), "reduce_scatter");
}

/* ialltoall(comm, send, recv, count per rank, dtype) */
static int l_ialltoall(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "all_to_all");
  void *s = check_addr(L, 2), *d = check_addr(L, 3);
  int n = check_count(L, 4, "all_to_all");
  MPI_Datatype t = check_type(L, 5, "all_to_all");
  dreq *r = new_req(L);
  return started(L, r, MPI_Ialltoall(s, n, t, d, n, t, c, &r->req), "all_to_all");
}

/* ialltoallv(comm, send, recv, sendcounts, recvcounts, dtype): the counts
** are Lua lists of n element counts (one per rank, in rank order); blocks
** are packed back to back in rank order on both sides */
static int l_ialltoallv(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "all_to_all");
  void *s = check_addr(L, 2), *d = check_addr(L, 3);
  luaL_checktype(L, 4, LUA_TTABLE);
  luaL_checktype(L, 5, LUA_TTABLE);
  MPI_Datatype t = check_type(L, 6, "all_to_all");
  int n = 0;
  MPI_Comm_size(c, &n);
  dreq *r = new_req_extra(L, 4 * (size_t)n * sizeof(int));
  int *sc = (int *)(r + 1), *sd = sc + n, *rc = sd + n, *rd = rc + n;
  long long so = 0, ro = 0;
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 4, i + 1);
    lua_rawgeti(L, 5, i + 1);
    lua_Integer a = lua_tointeger(L, -2), b = lua_tointeger(L, -1);
    lua_pop(L, 2);
    if (a < 0 || b < 0 || so + a > INT_MAX || ro + b > INT_MAX)
      return luaL_error(L, "all_to_all: split sizes must be counts that fit MPI's int (got %d and %d)", (int)a, (int)b);
    sc[i] = (int)a, sd[i] = (int)so, rc[i] = (int)b, rd[i] = (int)ro;
    so += a, ro += b;
  }
  return started(L, r, MPI_Ialltoallv(s, sc, sd, t, d, rc, rd, t, c, &r->req), "all_to_all");
}

/* igather(comm, send, recv|nil (not the root), count per rank, dtype, root) */
static int l_igather(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "gather");
  void *s = check_addr(L, 2), *d = lua_isnoneornil(L, 3) ? NULL : check_addr(L, 3);
  int n = check_count(L, 4, "gather");
  MPI_Datatype t = check_type(L, 5, "gather");
  int root = (int)luaL_checkinteger(L, 6);
  dreq *r = new_req(L);
  return started(L, r, MPI_Igather(s, n, t, d, n, t, root, c, &r->req), "gather");
}

/* iscatter(comm, send|nil (not the root), recv, count per rank, dtype, root) */
static int l_iscatter(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "scatter");
  void *s = lua_isnoneornil(L, 2) ? NULL : check_addr(L, 2), *d = check_addr(L, 3);
  int n = check_count(L, 4, "scatter");
  MPI_Datatype t = check_type(L, 5, "scatter");
  int root = (int)luaL_checkinteger(L, 6);
  dreq *r = new_req(L);
  return started(L, r, MPI_Iscatter(s, n, t, d, n, t, root, c, &r->req), "scatter");
}

static int l_ibarrier(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "barrier");
  dreq *r = new_req(L);
  return started(L, r, MPI_Ibarrier(c, &r->req), "barrier");
}

/* isend(comm, addr, count, dtype, dst, tag) */
static int l_isend(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "send");
  void *a = check_addr(L, 2);
  int n = check_count(L, 3, "send");
  MPI_Datatype t = check_type(L, 4, "send");
  int dst = (int)luaL_checkinteger(L, 5), tag = (int)luaL_checkinteger(L, 6);
  dreq *r = new_req(L);
  return started(L, r, MPI_Isend(a, n, t, dst, tag, c, &r->req), "send");
}

/* irecv(comm, addr, count, dtype, src (-1: any), tag) */
static int l_irecv(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "recv");
  void *a = check_addr(L, 2);
  int n = check_count(L, 3, "recv");
  MPI_Datatype t = check_type(L, 4, "recv");
  int src = (int)luaL_checkinteger(L, 5), tag = (int)luaL_checkinteger(L, 6);
  dreq *r = new_req(L);
  return started(L, r, MPI_Irecv(a, n, t, src < 0 ? MPI_ANY_SOURCE : src, tag, c, &r->req),
                 "recv");
}

/* -- Blocking forms: for a group without a timeout (timeout = math.huge),
** where waiting forever is what was asked and MPI's blocking collectives
** are faster than the nonblocking ones (Open MPI's libnbc) -- */

/* allreduce(comm, addr, count, dtype, op): in place */
static int l_allreduce(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "all_reduce");
  void *a = check_addr(L, 2);
  int n = check_count(L, 3, "all_reduce");
  MPI_Datatype t = check_type(L, 4, "all_reduce");
  MPI_Op op = check_op(L, 5, "all_reduce");
  int rc = MPI_Allreduce(MPI_IN_PLACE, a, n, t, op, c);
  if (rc != MPI_SUCCESS) return fail(L, "all_reduce", rc);
  return 0;
}

/* bcast(comm, addr, count, dtype, root) */
static int l_bcast(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "broadcast");
  void *a = check_addr(L, 2);
  int n = check_count(L, 3, "broadcast");
  MPI_Datatype t = check_type(L, 4, "broadcast");
  int root = (int)luaL_checkinteger(L, 5);
  int rc = MPI_Bcast(a, n, t, root, c);
  if (rc != MPI_SUCCESS) return fail(L, "broadcast", rc);
  return 0;
}

static int l_barrier(lua_State *L) {
  MPI_Comm c = check_comm(L, 1, "barrier");
  int rc = MPI_Barrier(c);
  if (rc != MPI_SUCCESS) return fail(L, "barrier", rc);
  return 0;
}

/* -- Completion ---------------------------------------------------------- */

/* one test of r: *done when it has completed; returns the MPI error that
** ended it, or MPI_SUCCESS */
static int test_rc(dreq *r, int *done) {
  MPI_Status stt;
  int flag = 0;
  if (inflight) { /* every schedule in flight moves on, this one's or not */
    int rc = sched_progress_all();
    if (rc != MPI_SUCCESS) return rc;
  }
  if (r->err) return r->err;
  if (r->s || !r->active) { /* a schedule: done when progress took it off the list */
    *done = !r->active;
    return MPI_SUCCESS;
  }
  int rc = MPI_Test(&r->req, &flag, &stt);
  if (rc != MPI_SUCCESS) {
    r->active = 0;
    return rc;
  }
  if (flag) {
    r->active = 0;
    r->source = stt.MPI_SOURCE;
  }
  *done = flag;
  return MPI_SUCCESS;
}
static void test_once(lua_State *L, dreq *r, const char *op, int *done) {
  int rc = test_rc(r, done);
  if (rc != MPI_SUCCESS) fail(L, op, rc);
}

/* progress(): advances every all_reduce schedule in flight, without
** waiting (DDP calls it from its gradient hooks, so buckets move while the
** backward runs); an error surfaces at that request's wait */
static int l_progress(lua_State *L) {
  (void)L;
  if (inflight) sched_progress_all();
  return 0;
}

/* test(req, op) -> done, source */
static int l_test(lua_State *L) {
  dreq *r = luaL_checkudata(L, 1, REQ_MT);
  const char *op = luaL_optstring(L, 2, "is_completed");
  int done = !r->active;
  if (!done || r->err) test_once(L, r, op, &done);
  lua_pushboolean(L, done);
  lua_pushinteger(L, r->source);
  return 2;
}

/* polls r until it completes (*done = 1) or timeout_s (<= 0: none) passes
** (*done = 0: the job is then marked broken); returns the MPI error that
** ended it, or MPI_SUCCESS */
static int wait_rc(dreq *r, double timeout, int *done) {
  *done = !r->active;
  if (r->err) return r->err;
  /* the first 32 tests read no clock (a read costs about a fifth of a
  ** test here, and a small message completes within them); the wait is
  ** timed from the first read, a few microseconds late */
  double t0 = -1;
  int spins = 0;
  while (!*done) {
    int rc = test_rc(r, done);
    if (rc != MPI_SUCCESS) return rc;
    if (*done) break;
    if (spins < 32) {
      spins++;
      continue;
    }
    double now = MPI_Wtime();
    if (t0 < 0) t0 = now;
    double el = now - t0;
    if (timeout > 0 && el >= timeout) {
      broken = 1;
      if (!broken_why) broken_why = "a collective timed out";
      return MPI_SUCCESS;
    }
    /* MPI progresses a nonblocking collective only inside MPI calls, on
    ** every rank: test without pause for the first 50 us (a small message
    ** is done by then), then yield the core to the peers between tests
    ** while a large transfer is under way; only a wait of seconds (a
    ** straggler) sleeps between tests */
    if (el > 5.0) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    } else if (el > 50e-6) {
      sched_yield();
    }
  }
  return MPI_SUCCESS;
}
/* wait_rc, raising its MPI error: 1 done, 0 timed out */
static int wait_loop(lua_State *L, dreq *r, double timeout, const char *op) {
  int done = 0, rc = wait_rc(r, timeout, &done);
  if (rc != MPI_SUCCESS) fail(L, op, rc);
  return done;
}

/* wait(req, timeout_s (<= 0: none), op) -> true, source | false (timed out:
** the job is then marked broken) */
static int l_wait(lua_State *L) {
  dreq *r = luaL_checkudata(L, 1, REQ_MT);
  double timeout = luaL_optnumber(L, 2, 0);
  const char *op = luaL_optstring(L, 3, "wait");
  if (!wait_loop(L, r, timeout, op)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushboolean(L, 1);
  lua_pushinteger(L, r->source);
  return 2;
}

/* allreduce_timed(comm, addr, count, dtype, op, timeout_s) -> done: a
** blocking all_reduce (in place) under the group's timeout, started and
** waited on in one call with no request object: iallreduce + wait without
** the userdata and its finalizer per call. The request lives here; a
** timed-out schedule stays in flight on it (the job is broken then, and
** MPI_Abort ends it at exit), so it is never reused after one. */
static dreq blocking_req;
static const char BLOCKING_LOST[] = "the process group is unusable after a timed-out all_reduce";
/* the blocking request, reset for a new call; NULL while a timed-out
** schedule still holds it */
static dreq *blocking_take(void) {
  dreq *r = &blocking_req;
  if (r->active) return NULL;
  r->req = MPI_REQUEST_NULL;
  r->source = -1;
  r->s = NULL;
  r->err = 0;
  return r;
}
static dreq *blocking(lua_State *L) {
  dreq *r = blocking_take();
  if (!r) luaL_error(L, "all_reduce: %s", BLOCKING_LOST);
  return r;
}
static int l_allreduce_timed(lua_State *L) {
  double timeout = luaL_optnumber(L, 6, 0);
  dreq *r = allreduce_start(L, blocking);
  lua_pushboolean(L, wait_loop(L, r, timeout, "all_reduce"));
  return 1;
}

/* -- The FFI entry --------------------------------------------------------
** lua/ember/distributed.lua's fast path under LuaJIT: all_reduce(t) with no
** options on a contiguous CPU tensor, in place, called from a compiled
** trace. A Lua C function there ends the trace (LuaJIT stitches around it)
** and reads its arguments through the Lua API: about 1 us a call on top of
** MPI's 1.5-2 us for 4 KB on 2 ranks. The entry takes plain C values and
** never raises (an FFI callee must not unwind through LuaJIT's frames): it
** returns 0 when done, 1 when timed out (the job is then marked broken), 2
** on an error whose message last_error() returns. dtype and op are 1-based
** positions in FFI_DTYPES and FFI_OPS (ffi_api() gives both lists);
** timeout: math.huge is MPI's blocking MPI_Allreduce, as l_allreduce. */
static const char *const FFI_DTYPES[] = {"float32", "float64", "int64", "int32", "int16",
                                         "int8",    "uint8",   "bool",  NULL};
static const char *const FFI_OPS[] = {"sum", "prod", "max", "min", NULL};
enum { FFI_NDTYPES = sizeof FFI_DTYPES / sizeof *FFI_DTYPES - 1,
       FFI_NOPS = sizeof FFI_OPS / sizeof *FFI_OPS - 1 };
/* the MPI types and ops of the codes, looked up by name (type_named,
** op_named) once, by ffi_api() */
static MPI_Datatype ffi_types[FFI_NDTYPES];
static MPI_Op ffi_ops[FFI_NOPS];
static char ffi_err[ERR_TEXT + 64];
static int ffi_fail(const char *why) {
  snprintf(ffi_err, sizeof ffi_err, "all_reduce: %s", why);
  return 2;
}
static int ffi_allreduce(int id, void *a, int64_t n, int dt, int opc, double timeout) {
  const char *why = comm_problem(id);
  if (why) return ffi_fail(why);
  if (n < 0 || n > INT_MAX || dt < 1 || dt > FFI_NDTYPES || opc < 1 || opc > FFI_NOPS) {
    snprintf(ffi_err, sizeof ffi_err, "all_reduce: bad arguments to the FFI entry (count %lld, dtype code %d, "
             "op code %d)", (long long)n, dt, opc);
    return 2;
  }
  MPI_Datatype t = ffi_types[dt - 1];
  MPI_Op op = ffi_ops[opc - 1];
  char buf[ERR_TEXT];
  if (timeout == HUGE_VAL) {
    int rc = MPI_Allreduce(MPI_IN_PLACE, a, (int)n, t, op, comms[id]);
    return rc == MPI_SUCCESS ? 0 : ffi_fail(err_text(rc, buf));
  }
  dreq *r = blocking_take();
  if (!r) return ffi_fail(BLOCKING_LOST);
  int done = 0, rc = allreduce_post(r, id, comms[id], a, (int)n, t, op);
  if (rc == MPI_SUCCESS) rc = wait_rc(r, timeout, &done);
  if (rc != MPI_SUCCESS) return ffi_fail(err_text(rc, buf));
  return done ? 0 : 1;
}
typedef struct ffi_api_t {
  int (*allreduce)(int, void *, int64_t, int, int, double);
} ffi_api_t;
static const ffi_api_t ffi_api_v = {ffi_allreduce};

/* ffi_api() -> lightuserdata (a struct of the entries), dtype names, op
** names (the codes' lists) */
static int l_ffi_api(lua_State *L) {
  for (int i = 0; i < FFI_NDTYPES; i++) ffi_types[i] = type_named(FFI_DTYPES[i]);
  for (int i = 0; i < FFI_NOPS; i++) ffi_ops[i] = op_named(FFI_OPS[i]);
  lua_pushlightuserdata(L, (void *)&ffi_api_v);
  for (int k = 0; k < 2; k++) {
    const char *const *names = k ? FFI_OPS : FFI_DTYPES;
    lua_newtable(L);
    for (int i = 0; names[i]; i++) {
      lua_pushstring(L, names[i]);
      lua_rawseti(L, -2, i + 1);
    }
  }
  return 3;
}
/* last_error() -> the message of the FFI entry's last error */
static int l_last_error(lua_State *L) {
  lua_pushstring(L, ffi_err);
  return 1;
}

static int l_req_gc(lua_State *L) {
  dreq *r = luaL_checkudata(L, 1, REQ_MT);
  if (r->active) { /* collected while posted: MPI may still write its buffer */
    broken = 1;
    if (!broken_why) broken_why = "a request was dropped before it completed";
    if (r->s) { /* MPI may still write its tmp: unlinked, left allocated */
      sched_unlink(r->s);
      r->s = NULL;
    }
  }
  return 0;
}

/* trim(): frees the kept schedule block (destroy_process_group) */
static int l_trim(lua_State *L) {
  (void)L;
  spare_release();
  return 0;
}

static int l_wtime(lua_State *L) {
  lua_pushnumber(L, MPI_Wtime());
  return 1;
}

static int l_version(lua_State *L) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  lua_pushlstring(L, v, (size_t)len);
  return 1;
}

int luaopen_ember_dist(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"init", l_init},           {"finalize", l_finalize},
      {"abort", l_abort},         {"set_broken", l_set_broken},
      {"is_broken", l_is_broken}, {"comm_create", l_comm_create},
      {"comm_free", l_comm_free}, {"iallreduce", l_iallreduce},
      {"ibcast", l_ibcast},       {"ireduce", l_ireduce},
      {"iallgather", l_iallgather}, {"ireduce_scatter", l_ireduce_scatter},
      {"progress", l_progress}, {"ialltoall", l_ialltoall}, {"ialltoallv", l_ialltoallv}, {"igather", l_igather},
      {"iscatter", l_iscatter},   {"ibarrier", l_ibarrier},
      {"isend", l_isend},         {"irecv", l_irecv},
      {"allreduce", l_allreduce}, {"allreduce_timed", l_allreduce_timed}, {"bcast", l_bcast},
      {"barrier", l_barrier},
      {"test", l_test},           {"wait", l_wait},
      {"wtime", l_wtime},         {"version", l_version},
      {"trim", l_trim},
      {"ffi_api", l_ffi_api},     {"last_error", l_last_error},
      {NULL, NULL}};
  if (luaL_newmetatable(L, REQ_MT)) {
    lua_pushcfunction(L, l_req_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  /* the sentinel: finalizes MPI when the state closes */
  lua_getfield(L, LUA_REGISTRYINDEX, "ember.dist.sentinel");
  if (lua_isnil(L, -1)) {
    lua_newuserdata(L, 1);
    lua_newtable(L);
    lua_pushcfunction(L, l_sentinel_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "ember.dist.sentinel");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
  return 1;
}
