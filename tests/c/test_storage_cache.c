/* test_storage_cache.c -- the cache of freed blocks of 1 KiB and more
** (storage.c): a freed block is reused by the next request of its size class,
** cached bytes never count as live, the cache stays within its bound, it
** empties on request, and it is safe to use from several threads. The
** per-thread cache of released tensor headers (tensor.c) likewise. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctest.h"
#include "core/core.h" /* em_pool_count */

TEST(freed_large_block_is_reused_and_not_live) {
  em_memory_empty_cache();
  size_t live0 = em_memory_live_bytes();
  size_t n = (size_t)4 << 20;
  unsigned char *p = em_cpu_allocator()->alloc(NULL, n);
  CHECK(p != NULL);
  CHECK(((uintptr_t)p & 63) == 0);
  CHECK(em_memory_live_bytes() == live0 + n);
  memset(p, 7, n); /* the whole request is usable */
  em_cpu_allocator()->free(NULL, p, n);
  CHECK(em_memory_live_bytes() == live0);       /* cached bytes are not live */
  CHECK(em_memory_cached_bytes() >= n);
  long h0, m0, h1, m1;
  em_memory_cache_counts(&h0, &m0);
  /* a slightly smaller request of the same class takes the same block */
  unsigned char *q = em_cpu_allocator()->alloc(NULL, n - 1000);
  em_memory_cache_counts(&h1, &m1);
  CHECK(q == p);
  CHECK(h1 == h0 + 1 && m1 == m0);
  CHECK(em_memory_cached_bytes() == 0);
  CHECK(em_memory_live_bytes() == live0 + n - 1000);
  memset(q, 1, n - 1000);
  em_cpu_allocator()->free(NULL, q, n - 1000);
  em_memory_empty_cache();
  CHECK(em_memory_cached_bytes() == 0);
  CHECK(em_memory_live_bytes() == live0);
}

TEST(small_blocks_bypass_the_cache) {
  em_memory_empty_cache();
  void *p = em_cpu_allocator()->alloc(NULL, 1000);
  CHECK(p != NULL);
  em_cpu_allocator()->free(NULL, p, 1000);
  CHECK(em_memory_cached_bytes() == 0);
}

/* from 1 KiB on: a loop's small temporaries are reused without glibc,
** which could otherwise trim and regrow its heap top on every call */
TEST(kilobyte_blocks_are_cached) {
  em_memory_empty_cache();
  void *p = em_cpu_allocator()->alloc(NULL, 4096);
  CHECK(p != NULL);
  em_cpu_allocator()->free(NULL, p, 4096);
  CHECK(em_memory_cached_bytes() >= 4096);
  long h0, m0, h1, m1;
  em_memory_cache_counts(&h0, &m0);
  void *q = em_cpu_allocator()->alloc(NULL, 4000); /* the same class */
  em_memory_cache_counts(&h1, &m1);
  CHECK(q == p);
  CHECK(h1 == h0 + 1 && m1 == m0);
  em_cpu_allocator()->free(NULL, q, 4000);
  em_memory_empty_cache();
  CHECK(em_memory_cached_bytes() == 0);
}

TEST(cache_stays_within_its_bound) {
  em_memory_empty_cache();
  enum { N = 40 };
  size_t n = (size_t)16 << 20; /* 40 x 16 MiB = 640 MiB > the 256 MiB bound */
  void *ps[N];
  for (int i = 0; i < N; i++) ps[i] = em_cpu_allocator()->alloc(NULL, n);
  for (int i = 0; i < N; i++) {
    CHECK(ps[i] != NULL);
    em_cpu_allocator()->free(NULL, ps[i], n);
    CHECK(em_memory_cached_bytes() <= ((size_t)256 << 20));
  }
  CHECK(em_memory_cached_bytes() > 0);
  em_memory_empty_cache();
  CHECK(em_memory_cached_bytes() == 0);
}

TEST(tensors_reuse_blocks) {
  em_memory_empty_cache();
  int64_t sizes[1] = {1 << 20};
  em_tensor *a, *b;
  CHECK_OK(em_empty(1, sizes, EM_FLOAT32, em_cpu(), &a));
  void *pa = em_tensor_data(a);
  em_tensor_release(a);
  CHECK_OK(em_empty(1, sizes, EM_FLOAT32, em_cpu(), &b));
  CHECK(em_tensor_data(b) == pa);
  em_tensor_release(b);
  em_memory_empty_cache();
}

static void *churn(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  for (int i = 0; i < 2000; i++) {
    size_t n = ((size_t)128 << 10) + (size_t)(rand_r(&seed) % (6 << 20));
    unsigned char *p = em_cpu_allocator()->alloc(NULL, n);
    if (!p) return (void *)1;
    p[0] = 1;
    p[n - 1] = 2;
    em_cpu_allocator()->free(NULL, p, n);
  }
  return NULL;
}

TEST(cache_is_thread_safe) {
  size_t live0 = em_memory_live_bytes();
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 1));
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    bad += r != NULL;
  }
  CHECK(bad == 0);
  CHECK(em_memory_live_bytes() == live0);
  CHECK(em_memory_cached_bytes() <= ((size_t)256 << 20));
  em_memory_empty_cache();
}

/* -- tensor headers (tensor.c): released headers are reused per thread -- */

#if defined(__SANITIZE_ADDRESS__)
enum { HDR_CACHED = 0 }; /* off under ASan, so a use after release is caught */
#else
enum { HDR_CACHED = 8192 };
#endif

TEST(released_headers_are_reused) {
  em_tensor_cache_trim();
  CHECK(em_tensor_cache_count() == 0);
  int64_t sz[2] = {2, 3};
  em_tensor *a = NULL, *b = NULL, *v = NULL;
  CHECK_OK(em_empty(2, sz, EM_FLOAT32, em_cpu(), &a));
  CHECK_OK(em_transpose(a, 1, 2, &v));
  em_tensor_release(v); /* the view's header is released; a lives */
  CHECK(em_tensor_cache_count() == (HDR_CACHED ? 1 : 0));
  CHECK_OK(em_empty(2, sz, EM_FLOAT64, em_cpu(), &b));
  if (HDR_CACHED) CHECK(b == v); /* the same header, reinitialised */
  CHECK(em_tensor_cache_count() == 0);
  CHECK(em_tensor_dtype(b) == EM_FLOAT64);
  CHECK(em_tensor_refcount(b) == 1);
  CHECK(em_tensor_requires_grad(b) == 0);
  CHECK(em_tensor_strides(b)[0] == 3 && em_tensor_strides(b)[1] == 1);
  em_tensor_release(a);
  em_tensor_release(b);
  CHECK(em_tensor_cache_count() == (HDR_CACHED ? 2 : 0));
  em_tensor_cache_trim();
  CHECK(em_tensor_cache_count() == 0);
}

TEST(header_cache_stays_within_its_bound) {
  em_tensor_cache_trim();
  enum { N = 9000 };
  static em_tensor *ts[N];
  int64_t sz[1] = {1};
  for (int i = 0; i < N; i++) CHECK_OK(em_empty(1, sz, EM_FLOAT32, em_cpu(), &ts[i]));
  for (int i = 0; i < N; i++) em_tensor_release(ts[i]);
  CHECK(em_tensor_cache_count() == HDR_CACHED);
  em_tensor_cache_trim();
  CHECK(em_tensor_cache_count() == 0);
}

/* The smallest inline storages (data of 64 bytes or less) come back from
** the same per-thread pool; larger ones do not; live bytes stay exact. */
TEST(small_storages_are_reused) {
  em_tensor_cache_trim();
  size_t live0 = em_memory_live_bytes();
  int64_t one[1] = {1}, big[1] = {32};
  em_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  CHECK_OK(em_empty(1, one, EM_FLOAT32, em_cpu(), &a));
  em_storage *sa = em_tensor_storage(a);
  CHECK(em_memory_live_bytes() == live0 + 4);
  em_tensor_release(a);
  CHECK(em_memory_live_bytes() == live0);
  CHECK_OK(em_empty(1, big, EM_FLOAT64, em_cpu(), &c)); /* 256 bytes: not pooled */
  if (HDR_CACHED) CHECK(em_tensor_storage(c) != sa);
  CHECK_OK(em_empty(1, one, EM_FLOAT64, em_cpu(), &b)); /* 8 bytes: the pooled block */
  if (HDR_CACHED) CHECK(em_tensor_storage(b) == sa);
  CHECK(em_memory_live_bytes() == live0 + 8 + 256);
  double *p = em_tensor_data(b);
  p[0] = 2.5;
  CHECK(((double *)em_tensor_data(b))[0] == 2.5);
  CHECK(em_storage_nbytes(em_tensor_storage(b)) == 8);
  CHECK(em_pool_count(EM_POOL_SMALL_STORAGE) == 0);
  em_tensor_release(c);
  CHECK(em_pool_count(EM_POOL_SMALL_STORAGE) == 0); /* 256 bytes: freed, not kept */
  CHECK_OK(em_empty(1, one, EM_FLOAT32, em_cpu(), &d));
  em_tensor_release(b);
  CHECK(em_pool_count(EM_POOL_SMALL_STORAGE) == (HDR_CACHED ? 1 : 0));
  em_tensor_release(d);
  CHECK(em_memory_live_bytes() == live0);
  em_tensor_cache_trim();
}

/* Each thread fills its own cache and exits: its leftovers are freed then
** (test-valgrind reports them otherwise); the main thread's is untouched. */
static void *header_churn(void *arg) {
  int64_t sz[1] = {4};
  int ok = 1;
  for (int r = 0; r < 50; r++) {
    em_tensor *t[64];
    for (int i = 0; i < 64; i++) ok &= em_empty(1, sz, EM_FLOAT32, em_cpu(), &t[i]) == EM_OK;
    for (int i = 0; i < 64; i++) em_tensor_release(t[i]);
  }
  ok &= em_tensor_cache_count() == (HDR_CACHED ? 64 : 0);
  (void)arg;
  return (void *)(uintptr_t)ok;
}

TEST(header_caches_are_per_thread) {
  em_tensor_cache_trim();
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, header_churn, NULL);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    CHECK(r == (void *)1);
  }
  CHECK(em_tensor_cache_count() == 0);
}

/* em_memory_thread_allocated_bytes: what this thread allocated, whatever it
** freed since (the GC hook's garbage rate); another thread's allocations do
** not count here. */
static void *alloc_one_mib(void *arg) {
  (void)arg;
  void *p = em_cpu_allocator()->alloc(NULL, (size_t)1 << 20);
  em_cpu_allocator()->free(NULL, p, (size_t)1 << 20);
  return p ? (void *)1 : NULL;
}
TEST(thread_allocated_bytes_only_grow) {
  uint64_t a0 = em_memory_thread_allocated_bytes();
  void *p = em_cpu_allocator()->alloc(NULL, 5000);
  CHECK(p != NULL);
  CHECK(em_memory_thread_allocated_bytes() == a0 + 5000);
  em_cpu_allocator()->free(NULL, p, 5000);
  CHECK(em_memory_thread_allocated_bytes() == a0 + 5000); /* a free takes nothing back */
  pthread_t th;
  void *r = NULL;
  pthread_create(&th, NULL, alloc_one_mib, NULL);
  pthread_join(th, &r);
  CHECK(r == (void *)1);
  CHECK(em_memory_thread_allocated_bytes() == a0 + 5000);
}

/* em_resize_ growing a storage (ops/view.c, em_storage_adopt): from the
** inline bytes of a small storage and from a block, every tensor on the
** storage sees the grown bytes with the old values, and the live bytes
** stay exact (the old bytes freed, the new counted once). */
TEST(growing_a_storage_keeps_values_and_exact_live_bytes) {
  em_memory_empty_cache();
  size_t live0 = em_memory_live_bytes();
  int64_t n4 = 4, n2 = 2;
  em_tensor *a = NULL, *b = NULL;
  CHECK_OK(em_empty(1, &n4, EM_FLOAT32, em_cpu(), &a)); /* 16 bytes: inline */
  float *p = em_tensor_data(a);
  for (int i = 0; i < 4; i++) p[i] = (float)i + 1;
  CHECK_OK(em_narrow(a, 1, 3, 2, &b)); /* elements 3, 4 (1-based start 3) */
  CHECK(em_memory_live_bytes() == live0 + 16);
  int64_t big = 100000;
  CHECK_OK(em_resize_(b, 1, &big)); /* offset 2 + 100000 floats */
  CHECK(em_storage_nbytes(em_tensor_storage(a)) == (size_t)(2 + big) * 4);
  CHECK(em_tensor_storage(a) == em_tensor_storage(b));
  CHECK(em_memory_live_bytes() == live0 + (size_t)(2 + big) * 4);
  const float *q = em_tensor_data(a), *r = em_tensor_data(b);
  CHECK(q[0] == 1 && q[1] == 2 && q[2] == 3 && q[3] == 4);
  CHECK(r[0] == 3 && r[1] == 4);
  ((float *)em_tensor_data(b))[big - 1] = 9; /* the grown bytes are writable */
  int64_t bigger = 3 * big;
  CHECK_OK(em_resize_(b, 1, &bigger)); /* from a block, again */
  CHECK(em_memory_live_bytes() == live0 + (size_t)(2 + bigger) * 4);
  CHECK(((const float *)em_tensor_data(b))[big - 1] == 9);
  CHECK_OK(em_resize_(a, 1, &n2)); /* shrinking keeps the storage */
  CHECK(em_storage_nbytes(em_tensor_storage(a)) == (size_t)(2 + bigger) * 4);
  em_tensor_release(a);
  em_tensor_release(b);
  em_memory_empty_cache();
  CHECK(em_memory_live_bytes() == live0);
}

int main(void) {
  RUN(thread_allocated_bytes_only_grow);
  RUN(growing_a_storage_keeps_values_and_exact_live_bytes);
  RUN(freed_large_block_is_reused_and_not_live);
  RUN(small_blocks_bypass_the_cache);
  RUN(kilobyte_blocks_are_cached);
  RUN(cache_stays_within_its_bound);
  RUN(tensors_reuse_blocks);
  RUN(cache_is_thread_safe);
  RUN(released_headers_are_reused);
  RUN(header_cache_stays_within_its_bound);
  RUN(header_caches_are_per_thread);
  RUN(small_storages_are_reused);
  return CTEST_END();
}
