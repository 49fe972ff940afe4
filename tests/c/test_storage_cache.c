/* test_storage_cache.c -- the cache of freed large blocks (storage.c):
** a freed large block is reused by the next request of its size class,
** cached bytes never count as live, the cache stays within its bound, it
** empties on request, and it is safe to use from several threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "ctest.h"

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

int main(void) {
  RUN(freed_large_block_is_reused_and_not_live);
  RUN(small_blocks_bypass_the_cache);
  RUN(cache_stays_within_its_bound);
  RUN(tensors_reuse_blocks);
  RUN(cache_is_thread_safe);
  return CTEST_END();
}
