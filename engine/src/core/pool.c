/*
** pool.c -- per-OS-thread free lists of fixed-size engine objects: released
** tensor headers (tensor.c) and the smallest inline storages (storage.c).
** A script makes and drops such objects many times a second, and the Lua
** collector finalizes thousands of them at once; glibc keeps only 7 chunks
** of a size per thread, so every later allocation went through malloc's
** bins. Guarantees:
** - em_pool_get returns a block of the pool's size or NULL (the caller then
**   mallocs); em_pool_put keeps a block for the calling thread or says no
**   (the caller frees). No lock: each thread has its own lists.
** - A pool holds at most EM_POOL_MAX blocks per thread. The blocks were all
**   live together moments before, so the pools add nothing to the peak.
** - A thread's blocks are freed when it exits (a pthread key destructor);
**   em_pool_trim frees the calling thread's.
** - Under AddressSanitizer the pools are off (get gives NULL, put says
**   no), so a use after release is still reported.
*/
#include "core/core.h"

#include <pthread.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define POOLS_ON 0
#else
#define POOLS_ON 1
#endif

static _Thread_local struct {
  bool keyed; /* the destructor is registered for this thread */
  int n[EM_NUM_POOLS];
  void *slot[EM_NUM_POOLS][EM_POOL_MAX];
} pools;
static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

void em_pool_trim(void) {
  for (int p = 0; p < EM_NUM_POOLS; p++)
    while (pools.n[p] > 0) free(pools.slot[p][--pools.n[p]]);
}
static void pool_thread_exit(void *unused) {
  (void)unused;
  em_pool_trim();
  pools.keyed = false;
}
static void pool_key_init(void) { (void)pthread_key_create(&pool_key, pool_thread_exit); }

void *em_pool_get(int pool) {
  if (!POOLS_ON || pools.n[pool] == 0) return NULL;
  return pools.slot[pool][--pools.n[pool]];
}

bool em_pool_put(int pool, void *block) {
  if (!POOLS_ON || pools.n[pool] >= EM_POOL_MAX) return false;
  if (!pools.keyed) {
    /* the destructor only runs for threads with a non-NULL value */
    pthread_once(&pool_once, pool_key_init);
    pools.keyed = pthread_setspecific(pool_key, &pools) == 0;
    if (!pools.keyed) return false;
  }
  pools.slot[pool][pools.n[pool]++] = block;
  return true;
}

int em_pool_count(int pool) { return pools.n[pool]; }
