/*
** test_threads.c -- tensors, views and storages shared across OS threads
** (issue 8, docs/reliability.md). What must hold:
** - storage and tensor refcounts are atomic: many threads retaining and
**   releasing one storage leave it at its starting count, and its deleter
**   runs exactly once, after the last release on whichever thread;
** - views of one tensor made and dropped concurrently each hold one
**   reference; writes through disjoint views from different threads all
**   land, while other threads read a tensor nobody writes;
** - creation and destruction on many threads at once leave no bytes live;
** - the error message is per thread: a failure on one thread does not
**   change the message another thread reads;
** - several threads, each with its own lua_State, create and drop Lua
**   views of one storage shared by the host; the storage is freed once,
**   after the last state is closed.
** Run under the sanitizer build (make test-asan) and ThreadSanitizer
** (docs/reliability.md: a -fsanitize=thread build dir).
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lualib.h>

#include "ctest.h"
#include "ember_lua.h"

enum { NTHREADS = 8 };

static void run_threads(void *(*fn)(void *), void *args, size_t argsize) {
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++)
    pthread_create(&th[i], NULL, fn, (char *)args + i * argsize);
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
}

/* -- refcounts ----------------------------------------------------------- */

static atomic_int deleter_calls;
static void counting_deleter(void *ctx, void *data, size_t nbytes) {
  (void)ctx; (void)nbytes;
  free(data);
  atomic_fetch_add(&deleter_calls, 1);
}

typedef struct { em_storage *s; em_tensor *t; int id; int ok; } shared_arg;

static void *retain_release(void *p) {
  shared_arg *a = p;
  for (int i = 0; i < 20000; i++) {
    em_storage_retain(a->s);
    em_tensor_retain(a->t);
    em_tensor_release(a->t);
    em_storage_release(a->s);
  }
  return NULL;
}

TEST(storage_refcount_is_atomic) {
  atomic_store(&deleter_calls, 0);
  float *buf = malloc(64 * sizeof(float));
  em_storage *s;
  CHECK_OK(em_storage_wrap(buf, 64 * sizeof(float), em_cpu(), counting_deleter, NULL, &s));
  int64_t sz[1] = {64}, st[1] = {1};
  em_tensor *t;
  CHECK_OK(em_tensor_new(s, 0, 1, sz, st, EM_FLOAT32, &t));
  shared_arg args[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) args[i] = (shared_arg){s, t, i, 1};
  run_threads(retain_release, args, sizeof args[0]);
  CHECK(em_storage_refcount(s) == 2); /* ours and t's */
  CHECK(em_tensor_refcount(t) == 1);
  CHECK(atomic_load(&deleter_calls) == 0);
  em_storage_release(s);
  CHECK(atomic_load(&deleter_calls) == 0);
  em_tensor_release(t);
  CHECK(atomic_load(&deleter_calls) == 1);
}

/* The last reference dropped on a worker thread runs the deleter there,
** exactly once. */
static void *drop_views(void *p) {
  shared_arg *a = p;
  em_tensor *v = a->t; /* this thread's own view; it releases it */
  for (int i = 0; i < 1000; i++) {
    em_tensor *w;
    if (em_narrow(v, 1, 1 + i % 8, 8, &w) != EM_OK) { a->ok = 0; break; }
    em_tensor_release(w);
  }
  em_tensor_release(v);
  return NULL;
}

TEST(last_release_on_any_thread_frees_once) {
  atomic_store(&deleter_calls, 0);
  float *buf = calloc(16, sizeof(float));
  em_storage *s;
  CHECK_OK(em_storage_wrap(buf, 16 * sizeof(float), em_cpu(), counting_deleter, NULL, &s));
  int64_t sz[1] = {16}, st[1] = {1};
  shared_arg args[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    args[i] = (shared_arg){s, NULL, i, 1};
    CHECK_OK(em_tensor_new(s, 0, 1, sz, st, EM_FLOAT32, &args[i].t));
  }
  em_storage_release(s); /* only the threads' views hold it now */
  run_threads(drop_views, args, sizeof args[0]);
  for (int i = 0; i < NTHREADS; i++) CHECK(args[i].ok);
  CHECK(atomic_load(&deleter_calls) == 1);
}

/* -- disjoint writes, shared reads --------------------------------------- */

typedef struct {
  em_tensor *grid;   /* [NTHREADS, 256] float64: thread i writes row i+1 */
  em_tensor *ro;     /* read by everyone, written by nobody */
  double ro_sum;     /* its expected sum */
  int id, ok;
} rw_arg;

static void *write_row_read_shared(void *p) {
  rw_arg *a = p;
  for (int rep = 0; rep < 50; rep++) {
    em_tensor *row, *col;
    if (em_select(a->grid, 1, a->id + 1, &row) != EM_OK) { a->ok = 0; return NULL; }
    em_scalar v = {EM_SCALAR_FLOAT, 0, (double)(a->id * 1000 + rep)};
    if (em_fill_(row, v) != EM_OK) a->ok = 0;
    /* a strided view of the same row: every other element */
    em_index_item it = {EM_INDEX_RANGE, 1, -1, 2, NULL};
    if (em_index_get(row, 1, &it, &col) != EM_OK) { a->ok = 0; em_tensor_release(row); return NULL; }
    em_scalar w = {EM_SCALAR_FLOAT, 0, -(double)rep};
    if (em_fill_(col, w) != EM_OK) a->ok = 0;
    double x;
    em_get_f64(row, 0, &x); if (x != -(double)rep) a->ok = 0;
    em_get_f64(row, 1, &x); if (x != (double)(a->id * 1000 + rep)) a->ok = 0;
    em_tensor_release(col);
    em_tensor_release(row);
    /* read the shared read-only tensor through a transposed view */
    em_tensor *tr, *sum;
    if (em_transpose(a->ro, 1, 2, &tr) != EM_OK) { a->ok = 0; return NULL; }
    if (em_reduce(EM_REDUCE_SUM, tr, 0, NULL, 0, -1, &sum) == EM_OK) {
      double got;
      em_get_f64(sum, 0, &got);
      if (got != a->ro_sum) a->ok = 0;
      em_tensor_release(sum);
    } else a->ok = 0;
    em_tensor_release(tr);
  }
  return NULL;
}

TEST(disjoint_writes_and_shared_reads) {
  int64_t gsz[2] = {NTHREADS, 256}, rsz[2] = {16, 16};
  em_tensor *grid, *ro;
  CHECK_OK(em_zeros(2, gsz, EM_FLOAT64, em_cpu(), &grid));
  CHECK_OK(em_zeros(2, rsz, EM_FLOAT64, em_cpu(), &ro));
  double expect = 0;
  for (int i = 0; i < 256; i++) {
    em_scalar v = {EM_SCALAR_FLOAT, 0, (double)i};
    em_set_flat(ro, i, v);
    expect += i;
  }
  rw_arg args[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) args[i] = (rw_arg){grid, ro, expect, i, 1};
  run_threads(write_row_read_shared, args, sizeof args[0]);
  for (int i = 0; i < NTHREADS; i++) CHECK(args[i].ok);
  /* every row holds its thread's last values: -49 at odd positions
  ** (1-based), id*1000+49 at even ones */
  for (int i = 0; i < NTHREADS; i++)
    for (int j = 0; j < 256; j++) {
      double x;
      em_get_f64(grid, i * 256 + j, &x);
      CHECK(x == (j % 2 == 0 ? -49.0 : (double)(i * 1000 + 49)));
    }
  CHECK(em_storage_refcount(em_tensor_storage(grid)) == 1);
  em_tensor_release(grid);
  em_tensor_release(ro);
}

/* -- creation and destruction; per-thread errors ------------------------- */

static void *churn(void *p) {
  shared_arg *a = p;
  for (int i = 0; i < 300; i++) {
    int64_t sz[2] = {1 + (i + a->id) % 7, 33};
    em_tensor *t, *v, *c;
    if (em_zeros(2, sz, EM_FLOAT32, em_cpu(), &t) != EM_OK) { a->ok = 0; continue; }
    if (em_transpose(t, 1, 2, &v) == EM_OK) {
      if (em_contiguous(v, &c) == EM_OK) em_tensor_release(c); else a->ok = 0;
      em_tensor_release(v);
    } else a->ok = 0;
    /* an error on this thread: its message names this thread's values */
    em_tensor *bad;
    int64_t dim = 10 + a->id;
    if (em_select(t, dim, 1, &bad) == EM_OK) { a->ok = 0; em_tensor_release(bad); }
    char want[64];
    snprintf(want, sizeof want, "dimension %d out of range", (int)dim);
    if (!strstr(em_last_error(), want)) a->ok = 0;
    em_tensor_release(t);
  }
  return NULL;
}

TEST(concurrent_creation_leaves_nothing_live) {
  size_t live0 = em_memory_live_bytes();
  shared_arg args[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) args[i] = (shared_arg){NULL, NULL, i, 1};
  run_threads(churn, args, sizeof args[0]);
  for (int i = 0; i < NTHREADS; i++) CHECK(args[i].ok);
  CHECK(em_memory_live_bytes() == live0);
}

/* -- one lua_State per thread over one shared storage -------------------- */

static const char *lua_script =
  "local T = require 'ember'\n"
  "local shared, id = ...\n"
  "for i = 1, 200 do\n"
  "  local row = shared[id]\n"                 /* a view of the host's storage */
  "  row:fill_(id * 10 + i % 3)\n"
  "  local v = row:view(4, 4):t():narrow(1, 2, 2)\n"
  "  assert(T.shares_storage(v, shared))\n"
  "  local c = v:clone() + 1\n"
  "  assert(c:sum():item() == 8 * (id * 10 + i % 3 + 1))\n"
  "  if i % 50 == 0 then collectgarbage() end\n"
  "end\n"
  "local ok, err = pcall(function() return shared:select(5, 1) end)\n"
  "assert(not ok and tostring(err):find('select'), tostring(err))\n"
  "return shared[id]:sum():item()\n";

typedef struct { em_tensor *shared; int id, ok; double result; } lua_arg;

static void *lua_thread(void *p) {
  lua_arg *a = p;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (ember_lua_open(L, EMBER_LUA_DIR) != 0) {
    printf("  thread %d: %s\n", a->id, lua_tostring(L, -1));
    a->ok = 0;
    lua_close(L);
    return NULL;
  }
  lua_pop(L, 1);
  if (luaL_loadstring(L, lua_script) != 0) { a->ok = 0; lua_close(L); return NULL; }
  em_tensor_retain(a->shared); /* the state takes this reference */
  ember_lua_push_tensor(L, a->shared);
  lua_pushinteger(L, a->id);
  if (lua_pcall(L, 2, 1, 0) != 0) {
    printf("  thread %d: %s\n", a->id, lua_tostring(L, -1));
    a->ok = 0;
  } else {
    a->result = lua_tonumber(L, -1);
  }
  lua_close(L);
  return NULL;
}

TEST(one_lua_state_per_thread_shares_a_storage) {
  atomic_store(&deleter_calls, 0);
  double *buf = calloc(NTHREADS * 16, sizeof(double));
  em_storage *s;
  CHECK_OK(em_storage_wrap(buf, NTHREADS * 16 * sizeof(double), em_cpu(),
                           counting_deleter, NULL, &s));
  int64_t sz[2] = {NTHREADS, 16}, st[2] = {16, 1};
  em_tensor *shared;
  CHECK_OK(em_tensor_new(s, 0, 2, sz, st, EM_FLOAT64, &shared));
  em_storage_release(s);
  lua_arg args[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) args[i] = (lua_arg){shared, i + 1, 1, 0};
  run_threads(lua_thread, args, sizeof args[0]);
  for (int i = 0; i < NTHREADS; i++) {
    CHECK(args[i].ok);
    /* the last fill: i % 3 for i = 200 is 2 */
    CHECK(args[i].result == 16.0 * ((i + 1) * 10 + 2));
    CHECK(buf[i * 16] == (i + 1) * 10 + 2);
  }
  /* every state is closed: only the host's tensor holds the storage */
  CHECK(em_storage_refcount(em_tensor_storage(shared)) == 1);
  CHECK(atomic_load(&deleter_calls) == 0);
  em_tensor_release(shared);
  CHECK(atomic_load(&deleter_calls) == 1);
}

int main(void) {
  RUN(storage_refcount_is_atomic);
  RUN(last_release_on_any_thread_frees_once);
  RUN(disjoint_writes_and_shared_reads);
  RUN(concurrent_creation_leaves_nothing_live);
  RUN(one_lua_state_per_thread_shares_a_storage);
  return CTEST_END();
}
