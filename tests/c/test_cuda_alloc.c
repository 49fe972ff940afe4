/*
** test_cuda_alloc.c -- the caching device allocator's logic (cuda/alloc.h)
** on the host, over a fake raw allocator: host memory with a byte budget,
** fake events completed by the test, and a collect hook. Runs in every
** build (the allocator is plain C); the real one sits on cudaMalloc.
*/
#include "ctest.h"
#include "cuda/alloc.h"

#include <stdlib.h>

#define MiB ((size_t)1 << 20)

typedef struct fake_event { int done; } fake_event;

typedef struct fake {
  size_t budget, used;
  long allocs, frees, events_live, collects;
  em_calloc *a;
  void *to_free_on_collect;   /* the "garbage" the collector frees */
  int sync_events;            /* event_record returns NULL (waited) */
  fake_event *last_event;
} fake;

typedef struct seg_hdr { size_t n; } seg_hdr;

static int fake_alloc(void *ctx, size_t n, void **p) {
  fake *f = ctx;
  if (f->used + n > f->budget) return 1;
  /* the pointer is a real host allocation, so the addresses are distinct */
  seg_hdr *h = malloc(sizeof(seg_hdr) + n);
  if (!h) return 1;
  h->n = n;
  f->used += n;
  f->allocs++;
  *p = h + 1;
  return 0;
}
static void fake_free(void *ctx, void *p) {
  fake *f = ctx;
  seg_hdr *h = (seg_hdr *)p - 1;
  f->used -= h->n;
  f->frees++;
  free(h);
}
static void *fake_record(void *ctx, void *stream) {
  fake *f = ctx;
  if (f->sync_events) return NULL;
  fake_event *e = calloc(1, sizeof *e);
  f->events_live++;
  f->last_event = e;
  return e;
}
static int fake_query(void *ctx, void *e) { return ((fake_event *)e)->done; }
static void fake_destroy(void *ctx, void *e) {
  fake *f = ctx;
  f->events_live--;
  free(e);
}
static void fake_collect(void *ctx, size_t n) {
  fake *f = ctx;
  f->collects++;
  if (f->to_free_on_collect) {
    em_calloc_free(f->a, f->to_free_on_collect);
    f->to_free_on_collect = NULL;
  }
}

static em_calloc *make(fake *f, size_t budget) {
  memset(f, 0, sizeof *f);
  f->budget = budget;
  em_calloc_raw raw = {f, 0, fake_alloc, fake_free, fake_record, fake_query, fake_destroy,
                       fake_collect};
  f->a = em_calloc_new(&raw);
  return f->a;
}
static em_calloc_stats stats(em_calloc *a) {
  em_calloc_stats s;
  em_calloc_get_stats(a, &s);
  return s;
}

static void *const S1 = (void *)0x1;  /* two fake streams */
static void *const S2 = (void *)0x2;

TEST(rounding_and_segments) {
  fake f;
  em_calloc *a = make(&f, 1 << 30);
  CHECK(em_calloc_round(1) == 512 && em_calloc_round(512) == 512 && em_calloc_round(513) == 1024);
  void *p;
  CHECK_OK(em_calloc_alloc(a, 100, NULL, &p));
  em_calloc_stats s = stats(a);
  CHECK(s.allocated == 512 && s.requested == 100);
  CHECK(s.reserved == 2 * MiB && f.allocs == 1);   /* a small segment */
  void *q;
  CHECK_OK(em_calloc_alloc(a, 3 * MiB, NULL, &q));  /* large pool: a 20 MiB segment */
  CHECK(stats(a).reserved == 22 * MiB && f.allocs == 2);
  void *r;
  CHECK_OK(em_calloc_alloc(a, 30 * MiB + 1, NULL, &r));  /* >= 10 MiB: its own, 2 MiB rounded */
  CHECK(stats(a).reserved == 54 * MiB && f.allocs == 3);
  em_calloc_free(a, p);
  em_calloc_free(a, q);
  em_calloc_free(a, r);
  CHECK(stats(a).allocated == 0 && stats(a).reserved == 54 * MiB && f.frees == 0);
  em_calloc_delete(a);
  CHECK(f.used == 0 && f.frees == 3);
}

TEST(freed_blocks_are_reused_without_the_raw_allocator) {
  fake f;
  em_calloc *a = make(&f, 1 << 30);
  void *p, *q;
  CHECK_OK(em_calloc_alloc(a, 4096, NULL, &p));
  em_calloc_free(a, p);
  CHECK_OK(em_calloc_alloc(a, 4000, NULL, &q));
  CHECK(q == p);                 /* the same block back */
  CHECK(f.allocs == 1 && f.frees == 0 && stats(a).cache_hits == 1);
  em_calloc_free(a, q);
  /* 1000 allocations and frees of 1 KiB: one segment, no raw call */
  for (int i = 0; i < 1000; i++) {
    CHECK_OK(em_calloc_alloc(a, 1024, NULL, &p));
    em_calloc_free(a, p);
  }
  CHECK(f.allocs == 1);
  em_calloc_delete(a);
  CHECK(f.used == 0);
}

TEST(large_blocks_are_split_and_coalesced) {
  fake f;
  em_calloc *a = make(&f, 1 << 30);
  void *p[4];
  /* four 4 MiB blocks from one 20 MiB segment, adjacent */
  for (int i = 0; i < 4; i++) CHECK_OK(em_calloc_alloc(a, 4 * MiB, NULL, &p[i]));
  CHECK(f.allocs == 1);
  for (int i = 1; i < 4; i++) CHECK((char *)p[i] == (char *)p[i - 1] + 4 * MiB);
  /* the 4 MiB remainder serves one more; a fifth 8 MiB block needs a new segment */
  void *big;
  CHECK_OK(em_calloc_alloc(a, 8 * MiB, NULL, &big));
  CHECK(f.allocs == 2);
  em_calloc_free(a, big);
  /* free two neighbours: coalesced into one 8 MiB block, which then serves an 8 MiB request */
  em_calloc_free(a, p[1]);
  em_calloc_free(a, p[2]);
  void *m;
  CHECK_OK(em_calloc_alloc(a, 8 * MiB, NULL, &m));
  CHECK(m == p[1] || m == big);  /* best fit: both are exactly 8 MiB */
  em_calloc_free(a, m);
  em_calloc_free(a, p[0]);
  em_calloc_free(a, p[3]);
  /* the whole first segment is one free block again: empty_cache gives back both */
  em_calloc_empty_cache(a);
  CHECK(f.frees == 2 && stats(a).reserved == 0 && f.used == 0);
  /* a small remainder of a large block is not split off (> 1 MiB only) */
  void *x, *y;
  CHECK_OK(em_calloc_alloc(a, 19 * MiB + 512 * 1024, NULL, &x));  /* 20 MiB segment, 0.5 MiB left */
  CHECK(stats(a).allocated == 20 * MiB);
  CHECK_OK(em_calloc_alloc(a, 512 * 1024, NULL, &y));   /* the small pool */
  CHECK(f.allocs == 4);
  em_calloc_delete(a);
  CHECK(f.used == 0);
}

TEST(stats_track_peaks) {
  fake f;
  em_calloc *a = make(&f, 1 << 30);
  void *p, *q;
  CHECK_OK(em_calloc_alloc(a, MiB, NULL, &p));
  CHECK_OK(em_calloc_alloc(a, MiB, NULL, &q));
  CHECK(stats(a).allocated == 2 * MiB && stats(a).max_allocated == 2 * MiB);
  em_calloc_free(a, q);
  CHECK(stats(a).allocated == MiB && stats(a).max_allocated == 2 * MiB);
  em_calloc_reset_peak(a);
  CHECK(stats(a).max_allocated == MiB);
  CHECK(stats(a).max_reserved == stats(a).reserved);
  em_calloc_free(a, p);
  CHECK(em_calloc_free(a, p) == 0);          /* a second free is ignored */
  CHECK(em_calloc_free(a, (void *)&f) == 0);  /* so is a foreign pointer */
  CHECK(stats(a).allocated == 0);
  em_calloc_delete(a);
}

TEST(streams_have_their_own_pools) {
  fake f;
  em_calloc *a = make(&f, 1 << 30);
  void *p, *q;
  CHECK_OK(em_calloc_alloc(a, 4096, S1, &p));
  em_calloc_free(a, p);
  CHECK_OK(em_calloc_alloc(a, 4096, S2, &q));
  CHECK(q != p && f.allocs == 2);   /* S1's free block is not S2's */
  em_calloc_free(a, q);
  CHECK_OK(em_calloc_alloc(a, 4096, S1, &q));
  CHECK(q == p);
  em_calloc_free(a, q);
  em_calloc_delete(a);
  CHECK(f.used == 0);
}

TEST(record_stream_delays_reuse_until_the_event) {
  fake f;
  em_calloc *a = make(&f, 1 << 30);
  void *p, *q;
  CHECK_OK(em_calloc_alloc(a, 4096, S1, &p));
  CHECK_OK(em_calloc_record_stream(a, p, S2));
  CHECK_OK(em_calloc_record_stream(a, p, S2));   /* once per stream */
  CHECK_OK(em_calloc_record_stream(a, p, S1));   /* its own stream: nothing */
  em_calloc_free(a, p);
  CHECK(f.events_live == 1 && stats(a).pending_blocks == 1);
  fake_event *e = f.last_event;
  CHECK_OK(em_calloc_alloc(a, 4096, S1, &q));
  CHECK(q != p);                 /* S2 may still use p */
  em_calloc_free(a, q);
  e->done = 1;                   /* S2 reached the event */
  void *r;
  CHECK_OK(em_calloc_alloc(a, 4096, S1, &r));
  CHECK(stats(a).pending_blocks == 0 && f.events_live == 0);
  CHECK(r == p || r == q);       /* both are free again */
  em_calloc_free(a, r);
  /* a hook that waited instead of recording: free at once */
  CHECK_OK(em_calloc_alloc(a, 4096, S1, &p));
  CHECK_OK(em_calloc_record_stream(a, p, S2));
  f.sync_events = 1;
  em_calloc_free(a, p);
  CHECK(stats(a).pending_blocks == 0);
  CHECK_ERR(em_calloc_record_stream(a, p, S2), "record_stream: ");  /* no longer live */
  /* a pending block at delete: its event is destroyed, its segment freed */
  f.sync_events = 0;
  CHECK_OK(em_calloc_alloc(a, 4096, S1, &p));
  CHECK_OK(em_calloc_record_stream(a, p, S2));
  em_calloc_free(a, p);
  CHECK(f.events_live == 1);
  em_calloc_delete(a);
  CHECK(f.events_live == 0 && f.used == 0);
}

TEST(out_of_memory_collects_frees_the_cache_and_retries_once) {
  fake f;
  em_calloc *a = make(&f, 39 * MiB);
  void *p, *q, *r;
  /* a cached 20 MiB segment of stream S1, free but of no use to the
  ** default stream's requests: given back on out of memory */
  CHECK_OK(em_calloc_alloc(a, 5 * MiB, S1, &p));
  em_calloc_free(a, p);
  CHECK_OK(em_calloc_alloc(a, 12 * MiB, NULL, &q));  /* its own 12 MiB segment */
  CHECK(f.used == 32 * MiB);
  CHECK_OK(em_calloc_alloc(a, 16 * MiB, NULL, &r));   /* needs the cached 20 MiB back */
  CHECK(f.collects == 1 && f.frees == 1 && stats(a).oom_retries == 1);
  CHECK(stats(a).reserved == 28 * MiB);
  /* the collector frees q (Lua garbage): the retry finds its block */
  f.to_free_on_collect = q;
  void *s;
  CHECK_OK(em_calloc_alloc(a, 12 * MiB, NULL, &s));
  CHECK(s == q && f.collects == 2);
  /* nothing to free: a clear error after one retry */
  void *t = (void *)1;
  CHECK_ERR(em_calloc_alloc(a, 30 * MiB, NULL, &t),
            "CUDA out of memory on cuda:0: tried to allocate 31457280 bytes");
  CHECK(t == NULL && f.collects == 3);
  em_calloc_free(a, r);
  em_calloc_free(a, s);
  em_calloc_delete(a);
  CHECK(f.used == 0);
}

int main(void) {
  RUN(rounding_and_segments);
  RUN(freed_blocks_are_reused_without_the_raw_allocator);
  RUN(large_blocks_are_split_and_coalesced);
  RUN(stats_track_peaks);
  RUN(streams_have_their_own_pools);
  RUN(record_stream_delays_reuse_until_the_event);
  RUN(out_of_memory_collects_frees_the_cache_and_retries_once);
  return CTEST_END();
}
