/*
** cuda/alloc.c -- the caching device allocator's logic (cuda/alloc.h has
** the rules). Plain C over em_calloc_raw: built in every build, so the
** host tests (tests/c/test_cuda_alloc.c) check it with a fake allocator
** whether or not this build has CUDA.
**
** A segment is one raw allocation; its blocks are a doubly linked list in
** address order (prev/next), so a block with neither is a whole segment.
** A block is live (in the hash by address), free (in one bin of its pool)
** or pending (freed, waiting for events of the streams that used it).
*/
#include "cuda/alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ROUND ((size_t)512)
#define SMALL_MAX ((size_t)1 << 20)       /* small pool: requests <= 1 MiB */
#define SMALL_SEGMENT ((size_t)2 << 20)   /* carved from 2 MiB segments */
#define LARGE_SEGMENT ((size_t)20 << 20)  /* requests < 10 MiB: 20 MiB segments */
#define LARGE_DIRECT ((size_t)10 << 20)
#define LARGE_ROUND ((size_t)2 << 20)     /* larger ones: rounded to 2 MiB */
#define NBINS 64
#define NBUCKETS 1024

enum { B_FREE, B_LIVE, B_PENDING };

typedef struct pool pool;
typedef struct block {
  char *ptr;
  size_t size, requested;
  int state;
  pool *pool;
  struct block *prev, *next;        /* neighbours in the segment */
  struct block *link_prev, *link_next; /* bin, or the pending list */
  struct block *hash_next;
  void **uses;                      /* record_stream: other streams */
  int nuses, cap_uses;
  void **events;                    /* pending: one per use */
  int nevents;
} block;

struct pool {
  void *stream;
  int small;
  block *bins[NBINS];
  pool *next;
};

struct em_calloc {
  em_calloc_raw raw;
  pthread_mutex_t lock;
  pool *pools;
  block *live[NBUCKETS];
  block *pending;
  em_calloc_stats st;
};

size_t em_calloc_round(size_t nbytes) {
  if (nbytes == 0) return ROUND;
  return (nbytes + ROUND - 1) / ROUND * ROUND;
}

static size_t segment_size(size_t size) {
  if (size <= SMALL_MAX) return SMALL_SEGMENT;
  if (size < LARGE_DIRECT) return LARGE_SEGMENT;
  return (size + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
}

/* Is the rest of a block, after size bytes are taken, worth a block? */
static int worth_splitting(const block *b, size_t size) {
  size_t rest = b->size - size;
  return b->pool->small ? rest >= ROUND : rest > SMALL_MAX;
}

static int bin_of(size_t size) {
  int i = 0;
  while (i < NBINS - 1 && (size >> (i + 1)) != 0) i++;
  return i;
}

/* -- Bins, the live hash, the pending list ---------------------------------- */

static void list_insert(block **head, block *b) {
  b->link_prev = NULL;
  b->link_next = *head;
  if (*head) (*head)->link_prev = b;
  *head = b;
}
static void list_remove(block **head, block *b) {
  if (b->link_prev) b->link_prev->link_next = b->link_next;
  else *head = b->link_next;
  if (b->link_next) b->link_next->link_prev = b->link_prev;
  b->link_prev = b->link_next = NULL;
}
static void bin_insert(block *b) {
  b->state = B_FREE;
  list_insert(&b->pool->bins[bin_of(b->size)], b);
}
static void bin_remove(block *b) { list_remove(&b->pool->bins[bin_of(b->size)], b); }

/* The smallest free block of p that holds size bytes. */
static block *best_fit(pool *p, size_t size) {
  for (int i = bin_of(size); i < NBINS; i++) {
    block *best = NULL;
    for (block *b = p->bins[i]; b; b = b->link_next)
      if (b->size >= size && (!best || b->size < best->size ||
                              (b->size == best->size && b->ptr < best->ptr)))
        best = b;
    if (best) return best;
  }
  return NULL;
}

static size_t bucket(const void *p) { return ((size_t)p / ROUND) % NBUCKETS; }
static void live_insert(em_calloc *a, block *b) {
  size_t h = bucket(b->ptr);
  b->hash_next = a->live[h];
  a->live[h] = b;
}
static block *live_remove(em_calloc *a, const void *p) {
  for (block **q = &a->live[bucket(p)]; *q; q = &(*q)->hash_next) {
    if ((*q)->ptr == p) {
      block *b = *q;
      *q = b->hash_next;
      b->hash_next = NULL;
      return b;
    }
  }
  return NULL;
}
static block *live_find(em_calloc *a, const void *p) {
  for (block *b = a->live[bucket(p)]; b; b = b->hash_next)
    if (b->ptr == p) return b;
  return NULL;
}

static pool *pool_for(em_calloc *a, void *stream, int small) {
  for (pool *p = a->pools; p; p = p->next)
    if (p->stream == stream && p->small == small) return p;
  pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->stream = stream;
  p->small = small;
  p->next = a->pools;
  a->pools = p;
  return p;
}

/* -- Freeing into the bins --------------------------------------------------- */

static void drop_block(block *b) {
  free(b->uses);
  free(b->events);
  free(b);
}

/* b (no longer live or pending) joins its free neighbours and its bin. */
static void release_block(block *b) {
  b->state = B_FREE;
  block *p = b->prev;
  if (p && p->state == B_FREE) {
    bin_remove(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    drop_block(b);
    b = p;
  }
  block *n = b->next;
  if (n && n->state == B_FREE) {
    bin_remove(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    drop_block(n);
  }
  bin_insert(b);
}

/* Pending blocks whose events have all completed become free. */
static void process_events(em_calloc *a) {
  block *b = a->pending;
  while (b) {
    block *next = b->link_next;
    int done = 1;
    for (int i = 0; i < b->nevents && done; i++)
      done = a->raw.event_query(a->raw.ctx, b->events[i]);
    if (done) {
      for (int i = 0; i < b->nevents; i++) a->raw.event_destroy(a->raw.ctx, b->events[i]);
      b->nevents = 0;
      list_remove(&a->pending, b);
      a->st.pending_blocks--;
      release_block(b);
    }
    b = next;
  }
}

/* Every free block that is a whole segment goes back to the raw allocator. */
static void release_cached(em_calloc *a) {
  for (pool *p = a->pools; p; p = p->next) {
    for (int i = 0; i < NBINS; i++) {
      block *b = p->bins[i];
      while (b) {
        block *next = b->link_next;
        if (!b->prev && !b->next) {
          list_remove(&p->bins[i], b);
          a->raw.free(a->raw.ctx, b->ptr);
          a->st.raw_frees++;
          a->st.reserved -= b->size;
          drop_block(b);
        }
        b = next;
      }
    }
  }
}

/* -- The API ----------------------------------------------------------------- */

em_calloc *em_calloc_new(const em_calloc_raw *raw) {
  em_calloc *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->raw = *raw;
  pthread_mutex_init(&a->lock, NULL);
  return a;
}

void em_calloc_delete(em_calloc *a) {
  if (!a) return;
  /* every block, from the live hash, the bins and the pending list: the
  ** segment heads (no prev) go back; the events of pending ones too */
  block *all = NULL;
  for (int h = 0; h < NBUCKETS; h++)
    while (a->live[h]) {
      block *b = a->live[h];
      a->live[h] = b->hash_next;
      b->hash_next = all;
      all = b;
    }
  for (pool *p = a->pools; p; p = p->next)
    for (int i = 0; i < NBINS; i++)
      for (block *b = p->bins[i]; b; b = b->link_next) {
        b->hash_next = all;
        all = b;
      }
  for (block *b = a->pending; b; b = b->link_next) {
    for (int i = 0; i < b->nevents; i++) a->raw.event_destroy(a->raw.ctx, b->events[i]);
    b->hash_next = all;
    all = b;
  }
  while (all) {
    block *b = all;
    all = b->hash_next;
    if (!b->prev) a->raw.free(a->raw.ctx, b->ptr);
    drop_block(b);
  }
  while (a->pools) {
    pool *p = a->pools;
    a->pools = p->next;
    free(p);
  }
  pthread_mutex_destroy(&a->lock);
  free(a);
}

/* A new segment of seg bytes for pool p: the raw allocator's, or NULL. */
static block *new_segment(em_calloc *a, pool *p, size_t seg) {
  block *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  void *ptr = NULL;
  if (a->raw.alloc(a->raw.ctx, seg, &ptr) != 0 || !ptr) {
    free(b);
    return NULL;
  }
  a->st.raw_allocs++;
  a->st.reserved += seg;
  if (a->st.reserved > a->st.max_reserved) a->st.max_reserved = a->st.reserved;
  b->ptr = ptr;
  b->size = seg;
  b->pool = p;
  b->state = B_FREE;
  bin_insert(b);
  return b;
}

em_status em_calloc_alloc(em_calloc *a, size_t nbytes, void *stream, void **out) {
  *out = NULL;
  size_t size = em_calloc_round(nbytes);
  int small = size <= SMALL_MAX;
  pthread_mutex_lock(&a->lock);
  process_events(a);
  pool *p = pool_for(a, stream, small);
  if (!p) {
    pthread_mutex_unlock(&a->lock);
    return em_fail(EM_E_NOMEM, "out of host memory allocating on cuda:%d", a->raw.device);
  }
  block *b = best_fit(p, size);
  if (b) {
    a->st.cache_hits++;
  } else {
    b = new_segment(a, p, segment_size(size));
    if (!b) {
      /* out of memory: the host's garbage first (its frees come back here,
      ** so the lock is not held), then the cache, then once more */
      a->st.oom_retries++;
      pthread_mutex_unlock(&a->lock);
      if (a->raw.collect) a->raw.collect(a->raw.ctx, nbytes);
      pthread_mutex_lock(&a->lock);
      process_events(a);
      b = best_fit(p, size);
      if (!b) {
        release_cached(a);
        b = new_segment(a, p, segment_size(size));
      }
      if (!b) {
        size_t alloc = a->st.allocated, res = a->st.reserved;
        pthread_mutex_unlock(&a->lock);
        return em_fail(EM_E_NOMEM,
                       "CUDA out of memory on cuda:%d: tried to allocate %zu bytes "
                       "(%zu bytes allocated by tensors, %zu reserved by ember's cache)",
                       a->raw.device, nbytes, alloc, res);
      }
    }
  }
  bin_remove(b);
  if (worth_splitting(b, size)) {
    block *r = calloc(1, sizeof *r);
    if (r) {
      r->ptr = b->ptr + size;
      r->size = b->size - size;
      r->pool = p;
      r->prev = b;
      r->next = b->next;
      if (b->next) b->next->prev = r;
      b->next = r;
      b->size = size;
      bin_insert(r);
    }
  }
  b->state = B_LIVE;
  b->requested = nbytes;
  live_insert(a, b);
  a->st.allocated += b->size;
  a->st.requested += nbytes;
  if (a->st.allocated > a->st.max_allocated) a->st.max_allocated = a->st.allocated;
  *out = b->ptr;
  pthread_mutex_unlock(&a->lock);
  return EM_OK;
}

int em_calloc_free(em_calloc *a, void *ptr) {
  if (!ptr) return 0;
  pthread_mutex_lock(&a->lock);
  block *b = live_remove(a, ptr);
  if (!b) {
    pthread_mutex_unlock(&a->lock);
    return 0;
  }
  a->st.allocated -= b->size;
  a->st.requested -= b->requested;
  b->requested = 0;
  if (b->nuses > 0) {
    /* used on other streams: an event on each, reused once they complete */
    void **ev = malloc(sizeof *ev * (size_t)b->nuses);
    int n = 0;
    for (int i = 0; i < b->nuses; i++) {
      void *e = a->raw.event_record(a->raw.ctx, b->uses[i]);
      if (e && ev) ev[n++] = e;
      else if (e) {  /* no host memory to keep it: wait for it here */
        while (!a->raw.event_query(a->raw.ctx, e)) {}
        a->raw.event_destroy(a->raw.ctx, e);
      }
    }
    b->nuses = 0;
    if (n > 0) {
      free(b->events);
      b->events = ev;
      b->nevents = n;
      b->state = B_PENDING;
      list_insert(&a->pending, b);
      a->st.pending_blocks++;
      pthread_mutex_unlock(&a->lock);
      return 1;
    }
    free(ev);
  }
  release_block(b);
  pthread_mutex_unlock(&a->lock);
  return 1;
}

em_status em_calloc_record_stream(em_calloc *a, void *ptr, void *stream) {
  pthread_mutex_lock(&a->lock);
  block *b = live_find(a, ptr);
  em_status st = EM_OK;
  if (!b) {
    st = em_fail(EM_E_VALUE, "record_stream: %p is not memory of ember's allocator on cuda:%d",
                 ptr, a->raw.device);
  } else if (stream != b->pool->stream) {
    int seen = 0;
    for (int i = 0; i < b->nuses; i++) seen |= b->uses[i] == stream;
    if (!seen) {
      if (b->nuses == b->cap_uses) {
        int cap = b->cap_uses ? 2 * b->cap_uses : 4;
        void **u = realloc(b->uses, sizeof *u * (size_t)cap);
        if (!u) {
          pthread_mutex_unlock(&a->lock);
          return em_fail(EM_E_NOMEM, "record_stream: out of host memory");
        }
        b->uses = u;
        b->cap_uses = cap;
      }
      b->uses[b->nuses++] = stream;
    }
  }
  pthread_mutex_unlock(&a->lock);
  return st;
}

void em_calloc_empty_cache(em_calloc *a) {
  pthread_mutex_lock(&a->lock);
  process_events(a);
  release_cached(a);
  pthread_mutex_unlock(&a->lock);
}

void em_calloc_get_stats(em_calloc *a, em_calloc_stats *s) {
  pthread_mutex_lock(&a->lock);
  *s = a->st;
  pthread_mutex_unlock(&a->lock);
}

void em_calloc_reset_peak(em_calloc *a) {
  pthread_mutex_lock(&a->lock);
  a->st.max_allocated = a->st.allocated;
  a->st.max_reserved = a->st.reserved;
  pthread_mutex_unlock(&a->lock);
}
