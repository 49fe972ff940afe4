/*
** storage.c -- refcounted storages and the counted CPU allocator.
** A storage's deleter runs exactly once, when the refcount drops to zero.
** Bytes from the engine's allocator are counted so that a host with a
** garbage collector can be told about memory it cannot see (DESIGN §4).
*/
#include "core/kernels.h"
#include "core/errmsg.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

/* -- Counted CPU allocation ---------------------------------------------- */

/* live_bytes counts the whole process (what memory_stats reports). The
** pressure hook is per OS thread, and so is what triggers it: thread_live is
** the bytes allocated minus the bytes freed on this thread, checked against
** this thread's soft limit. A host with one Lua state per thread (each state
** collects only its own garbage, on its own thread) then bounds each state
** by its own garbage; with a process-wide trigger, one state's collection
** would set the limit from the other states' uncollected garbage and the
** limit would ratchet up (measured: 3 threads reached 4 GB live). A tensor
** freed on another thread than the one that made it skews both counters;
** that only moves when a collection is forced. */
static atomic_size_t live_bytes;
static _Thread_local int64_t thread_live;
static _Thread_local uint64_t thread_allocated; /* all this thread ever allocated */
static _Thread_local size_t soft_limit = (size_t)256 << 20;
/* The limit follows this thread's live bytes down (to the live bytes plus
** the larger of them and this floor) when tensors die outside a forced
** collection (a host's own
** collection, say): the limit a large working set earned must not stay
** once that set is gone, or the next loop of small temporaries runs on
** fresh, uncached blocks until it has made that much garbage.
** em_set_soft_limit sets floor = limit (the limit never moves by itself). */
static _Thread_local size_t soft_floor = (size_t)256 << 20;
static _Thread_local em_pressure_hook pressure_hook;
static _Thread_local void *pressure_ctx;

size_t em_memory_live_bytes(void) { return atomic_load(&live_bytes); }
size_t em_memory_thread_live_bytes(void) { return thread_live > 0 ? (size_t)thread_live : 0; }
uint64_t em_memory_thread_allocated_bytes(void) { return thread_allocated; }
void em_set_soft_limit(size_t bytes) { soft_limit = soft_floor = bytes; }
void em_set_soft_limits(size_t limit, size_t floor) {
  soft_limit = limit;
  soft_floor = floor < limit ? floor : limit;
}
size_t em_get_soft_limit(void) { return soft_limit; }

static void count_alloc(size_t nbytes) {
  atomic_fetch_add(&live_bytes, nbytes);
  thread_live += (int64_t)nbytes;
  thread_allocated += nbytes;
}
static void count_free(size_t nbytes) {
  atomic_fetch_sub(&live_bytes, nbytes);
  thread_live -= (int64_t)nbytes;
  size_t live = thread_live > 0 ? (size_t)thread_live : 0;
  size_t base = live + (live > soft_floor ? live : soft_floor);
  if (base < soft_limit) soft_limit = base;
}
/* Would this thread's next allocation of nbytes pass its soft limit? */
static int over_soft_limit(size_t nbytes) {
  int64_t after = thread_live + (int64_t)nbytes;
  return pressure_hook && after > 0 && (uint64_t)after > soft_limit;
}
/* Another device's allocator is out of memory: the host collects as after
** a failed host allocation (cuda/runtime.c; the hook of this thread). */
void em_memory_collect(size_t nbytes) {
  if (pressure_hook) pressure_hook(pressure_ctx, nbytes, 1);
}
void em_set_pressure_hook(em_pressure_hook hook, void *ctx) {
  pressure_hook = hook;
  pressure_ctx = ctx;
}

/* Allocations of 2 MiB and more are 2 MiB aligned and marked for
** transparent huge pages (as PyTorch's CPU allocator does): the first
** touch of a 64 MB tensor then costs 32 page faults instead of 16384. */
#define EM_HUGE_PAGE ((size_t)2 << 20)

static void *raw_alloc(size_t nbytes) {
  void *p = NULL;
  size_t align = nbytes >= EM_HUGE_PAGE ? EM_HUGE_PAGE : 64;
  /* 64-byte alignment for vector loads; round the size up as C11 asks. */
  size_t rounded = (nbytes + align - 1) & ~(align - 1);
  if (rounded < nbytes) return NULL;
  if (posix_memalign(&p, align, rounded) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  if (align == EM_HUGE_PAGE) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

/* -- The block cache ------------------------------------------------------
** Blocks of EM_CACHE_MIN bytes and more are not returned to the C
** library when their storage dies: they wait in a cache, one LIFO list per
** size class, and the next allocation of the same class takes one back
** without a system call or a page fault (a freshly mapped 64 MB block costs
** tens of milliseconds of faults; a cached one costs nothing; a small one
** handed back to glibc could make it trim and regrow its heap top on every
** call: docs/memory.md).
**
** What holds:
**  - A block is allocated at its class size (a request is rounded up to the
**    next of four steps per power of two, at most 25% more address space;
**    pages past the request are never touched by the tensor, so they cost
**    no resident memory), so any cached block of a class fits any request of
**    that class.
**  - Cached bytes are not live: em_memory_live_bytes counts requested bytes
**    of live storages only, so the GC hook sees the same numbers with or
**    without the cache.
**  - The cache holds at most em_cache_limit bytes (default 256 MiB, the
**    environment variable EMBER_CACHE_BYTES overrides it; 0 disables the
**    cache); inserting past the limit first frees the oldest blocks.
**  - Under pressure (the soft limit is reached, or an allocation failed) the
**    whole cache goes back to the OS before the host is asked to collect.
**  - One mutex guards the lists: tensors die on any thread.
**  - Under AddressSanitizer a cached block is poisoned, so a use after free
**    is still reported. */
#define EM_CACHE_MIN ((size_t)1 << 10)
#define EM_CACHE_CLASSES 192

typedef struct cache_block {
  struct cache_block *next, *older, *newer; /* class list; global age list */
  size_t cls_bytes;
  int cls;
} cache_block;

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define CACHE_POISON(p, n) ASAN_POISON_MEMORY_REGION((char *)(p) + sizeof(cache_block), (n) - sizeof(cache_block))
#define CACHE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define CACHE_POISON(p, n) ((void)0)
#define CACHE_UNPOISON(p, n) ((void)0)
#endif

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_block *cache_lists[EM_CACHE_CLASSES];
static cache_block *cache_oldest, *cache_newest;
static size_t cache_bytes;              /* under cache_mu */
static atomic_size_t cache_bytes_pub;   /* a copy readable without the lock */
static atomic_long cache_hits, cache_misses;
static long cache_limit_env = -2;       /* -2: not read yet */

static size_t cache_limit(void) {
  if (cache_limit_env == -2) {
    const char *e = getenv("EMBER_CACHE_BYTES");
    long v = e && *e ? strtol(e, NULL, 10) : -1;
    cache_limit_env = v < 0 ? -1 : v;
  }
  return cache_limit_env >= 0 ? (size_t)cache_limit_env : (size_t)256 << 20;
}

/* Class of a request of n >= EM_CACHE_MIN bytes and its size; -1 when
** the request is too large to be classed (it bypasses the cache). */
static int size_class(size_t n, size_t *cls_bytes) {
  int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1) */
  if (k < 9 || k > 46) return -1;                            /* 512 B .. 128 TiB */
  size_t step = (size_t)1 << (k - 2);                        /* four steps per octave */
  size_t q = (n - ((size_t)1 << k) + step - 1) / step;       /* 1..4 */
  *cls_bytes = ((size_t)1 << k) + q * step;
  return (k - 9) * 4 + (int)q - 1;
}

static void age_unlink(cache_block *b) {
  if (b->older) b->older->newer = b->newer; else cache_oldest = b->newer;
  if (b->newer) b->newer->older = b->older; else cache_newest = b->older;
}

/* Removes b (under the lock) from its class list; it is at the head or
** found by a walk (eviction takes the oldest, anywhere in its list). */
static void class_unlink(cache_block *b) {
  cache_block **pp = &cache_lists[b->cls];
  while (*pp != b) pp = &(*pp)->next;
  *pp = b->next;
}

/* Pops the oldest blocks until the cache holds at most keep bytes; the
** blocks are freed after the lock is dropped. */
static void cache_trim(size_t keep) {
  cache_block *victims = NULL;
  pthread_mutex_lock(&cache_mu);
  while (cache_bytes > keep && cache_oldest) {
    cache_block *b = cache_oldest;
    age_unlink(b);
    class_unlink(b);
    cache_bytes -= b->cls_bytes;
    b->next = victims;
    victims = b;
  }
  atomic_store(&cache_bytes_pub, cache_bytes);
  pthread_mutex_unlock(&cache_mu);
  while (victims) {
    cache_block *b = victims;
    victims = b->next;
    CACHE_UNPOISON(b, b->cls_bytes);
    free(b);
  }
}

static void *cache_take(int cls) {
  pthread_mutex_lock(&cache_mu);
  cache_block *b = cache_lists[cls];
  if (b) {
    cache_lists[cls] = b->next;
    age_unlink(b);
    cache_bytes -= b->cls_bytes;
    atomic_store(&cache_bytes_pub, cache_bytes);
  }
  pthread_mutex_unlock(&cache_mu);
  if (b) CACHE_UNPOISON(b, b->cls_bytes);
  return b;
}

/* Keeps p (a block of class cls) in the cache; 0 when it does not fit. */
static int cache_put(void *p, int cls, size_t cls_bytes) {
  size_t limit = cache_limit();
  if (cls_bytes > limit) return 0;
  if (cache_bytes_pub + cls_bytes > limit) cache_trim(limit - cls_bytes);
  cache_block *b = p;
  b->cls = cls;
  b->cls_bytes = cls_bytes;
  /* poisoned before it is visible: once linked, another thread may take
  ** and unpoison it at once */
  CACHE_POISON(b, cls_bytes);
  pthread_mutex_lock(&cache_mu);
  b->next = cache_lists[cls];
  cache_lists[cls] = b;
  b->newer = NULL;
  b->older = cache_newest;
  if (cache_newest) cache_newest->newer = b; else cache_oldest = b;
  cache_newest = b;
  cache_bytes += cls_bytes;
  atomic_store(&cache_bytes_pub, cache_bytes);
  pthread_mutex_unlock(&cache_mu);
  return 1;
}

size_t em_memory_cached_bytes(void) { return atomic_load(&cache_bytes_pub); }
void em_memory_empty_cache(void) { cache_trim(0); }
void em_memory_cache_counts(long *hits, long *misses) {
  if (hits) *hits = atomic_load(&cache_hits);
  if (misses) *misses = atomic_load(&cache_misses);
}

/* A block of at least nbytes: from the cache, or fresh (at class size). */
static void *block_alloc(size_t nbytes) {
  size_t cls_bytes;
  int cls = nbytes >= EM_CACHE_MIN && cache_limit() > 0 ? size_class(nbytes, &cls_bytes) : -1;
  if (cls < 0) return raw_alloc(nbytes);
  void *p = cache_take(cls);
  if (p) {
    atomic_fetch_add_explicit(&cache_hits, 1, memory_order_relaxed);
    return p;
  }
  atomic_fetch_add_explicit(&cache_misses, 1, memory_order_relaxed);
  p = raw_alloc(cls_bytes);
  if (!p && cache_bytes_pub) { /* the cache may hold what the OS lacks */
    cache_trim(0);
    p = raw_alloc(cls_bytes);
  }
  return p;
}

static void block_free(void *p, size_t nbytes) {
  size_t cls_bytes;
  int cls = nbytes >= EM_CACHE_MIN ? size_class(nbytes, &cls_bytes) : -1;
  if (cls >= 0 && cache_limit() > 0 && cache_put(p, cls, cls_bytes)) return;
  free(p);
}

/* Kernel scratch (conv's column buffers): blocks of the cache, so that a
** workspace made on every call is warm memory rather than fresh pages
** (glibc maps large requests anew and unmaps them on free). Not counted
** as live (a kernel's scratch lives inside one call) and never calls the
** collector hook: a kernel may ask for it in the middle of its work. */
void *em_scratch_alloc(size_t nbytes) { return block_alloc(nbytes ? nbytes : 1); }
void em_scratch_free(void *p, size_t nbytes) {
  if (p) block_free(p, nbytes ? nbytes : 1);
}

void *em_cpu_alloc_bytes(size_t nbytes) {
  if (nbytes == 0) return NULL;
  if (over_soft_limit(nbytes)) {
    /* the collection refills the cache with what it frees: keep the blocks
    ** (the request below may take one), but not more than the bound */
    pressure_hook(pressure_ctx, nbytes, 0);
  }
  void *p = block_alloc(nbytes);
  if (!p) {
    cache_trim(0);
    if (pressure_hook) pressure_hook(pressure_ctx, nbytes, 1);
    p = block_alloc(nbytes);
    if (!p) { cache_trim(0); p = block_alloc(nbytes); }
  }
  if (p) count_alloc(nbytes);
  return p;
}

void em_cpu_free_bytes(void *p, size_t nbytes) {
  if (!p) return;
  count_free(nbytes);
  block_free(p, nbytes);
}

static void *cpu_alloc(void *ctx, size_t nbytes) {
  (void)ctx;
  return em_cpu_alloc_bytes(nbytes);
}
static void cpu_free(void *ctx, void *data, size_t nbytes) {
  (void)ctx;
  em_cpu_free_bytes(data, nbytes);
}

static const em_allocator cpu_allocator = {cpu_alloc, cpu_free, NULL};
const em_allocator *em_cpu_allocator(void) { return &cpu_allocator; }

/* -- Storages ----------------------------------------------------------- */

static em_status storage_make(void *data, size_t nbytes, em_device dev,
                              em_deleter del, void *ctx, em_storage **out) {
  em_storage *s = malloc(sizeof *s);
  if (!s) return em_fail(EM_E_NOMEM, "out of memory allocating a storage");
  atomic_init(&s->refcount, 1);
  s->data = data;
  s->nbytes = nbytes;
  s->device = dev;
  s->deleter = del;
  s->deleter_ctx = ctx;
  atomic_init(&s->version, 0);
  atomic_init(&s->ag_reinterpreted, 0);
  *out = s;
  return EM_OK;
}

/* Small storages of the engine's allocator hold their bytes inline: one
** malloc for the storage and its data instead of a malloc and a
** posix_memalign (whose splitting fragments glibc's bins: a loop of small
** temporaries spent most of its time in malloc_consolidate). The data is
** 32-byte aligned, which is more than any element or SIMD load of these
** sizes needs. The deleter only does the accounting; free(s) frees both. */
enum { EM_INLINE_MAX = 256, EM_INLINE_ALIGN = 16 };
#define INLINE_OFFSET ((sizeof(em_storage) + EM_INLINE_ALIGN - 1) & ~(size_t)(EM_INLINE_ALIGN - 1))

static void inline_free(void *ctx, void *data, size_t nbytes) {
  (void)ctx;
  (void)data;
  count_free(nbytes);
}

static em_status storage_new_inline(size_t nbytes, em_storage **out) {
  if (over_soft_limit(nbytes)) pressure_hook(pressure_ctx, nbytes, 0);
  /* the smallest are one size of block, kept in this thread's pool */
  bool small = nbytes <= EM_SMALL_STORAGE_BYTES;
  char *block = small ? em_pool_get(EM_POOL_SMALL_STORAGE) : NULL;
  if (!block) block = malloc(INLINE_OFFSET + (small ? EM_SMALL_STORAGE_BYTES : nbytes));
  if (!block) return em_fail(EM_E_NOMEM, "out of memory allocating a storage");
  em_storage *s = (em_storage *)block;
  atomic_init(&s->refcount, 1);
  s->data = block + INLINE_OFFSET;
  s->nbytes = nbytes;
  s->device = em_cpu();
  s->deleter = inline_free;
  s->deleter_ctx = NULL;
  atomic_init(&s->version, 0);
  atomic_init(&s->ag_reinterpreted, 0);
  count_alloc(nbytes);
  *out = s;
  return EM_OK;
}

/* A storage whose bytes come from a (never inline: em_storage_adopt may
** hand them to another storage struct). */
static em_status storage_new_block(size_t nbytes, const em_allocator *a, em_storage **out) {
  void *data = NULL;
  if (nbytes > 0) {
    data = a->alloc(a->ctx, nbytes);
    if (!data)
      return em_fail(EM_E_NOMEM, "out of memory: tried to allocate %zu bytes",
                     nbytes);
  }
  em_status st = storage_make(data, nbytes, em_cpu(), a->free, a->ctx, out);
  if (st != EM_OK && data) a->free(a->ctx, data, nbytes);
  return st;
}

em_status em_storage_new_with(size_t nbytes, const em_allocator *a,
                              em_storage **out) {
  if (a == &cpu_allocator && nbytes > 0 && nbytes <= EM_INLINE_MAX)
    return storage_new_inline(nbytes, out);
  return storage_new_block(nbytes, a, out);
}

/* The CPU's storages come from the counted host allocator above; another
** device's from its kernel table (core/kernels.h). A device without data
** (meta) gives a storage of nbytes whose data is NULL. */
static void device_free(void *ctx, void *data, size_t nbytes) {
  const em_storage *s = ctx;
  if (data) em_kernels_for(s->device)->free(s->device, data, nbytes);
}

/* Out of line, so that the CPU's path above stays what it was (a tensor
** made from a script allocates here). */
static __attribute__((noinline)) em_status storage_new_device(size_t nbytes, em_device dev,
                                                              em_storage **out) {
  const em_kernels *k = em_kernels_for(dev);
  char d[32];
  if (!k) return em_fail(EM_E_RUNTIME, EM_MSG_NO_DEVICE, em_device_str(dev, d, sizeof d));
  em_status st;
  /* a device that may be absent says so even for an empty storage */
  if (k->check && (st = k->check(NULL, dev)) != EM_OK) return st;
  void *data = NULL;
  if (nbytes > 0 && (st = k->alloc(dev, nbytes, &data)) != EM_OK) return st;
  st = storage_make(data, nbytes, dev, device_free, NULL, out);
  if (st != EM_OK) {
    if (data) k->free(dev, data, nbytes);
    return st;
  }
  (*out)->deleter_ctx = *out;
  return EM_OK;
}

em_status em_storage_new(size_t nbytes, em_device dev, em_storage **out) {
  if (dev.type == EM_CPU) return em_storage_new_with(nbytes, &cpu_allocator, out);
  return storage_new_device(nbytes, dev, out);
}

em_status em_storage_wrap(void *data, size_t nbytes, em_device dev,
                          em_deleter deleter, void *ctx, em_storage **out) {
  if (!data && nbytes > 0)
    return em_fail(EM_E_VALUE, "storage_wrap: NULL data for %zu bytes", nbytes);
  return storage_make(data, nbytes, dev, deleter, ctx, out);
}

/* -- Growing a storage in place (resize_, set_) ---------------------------
** Only the engine's own storages grow: a wrapped one (foreign memory, a
** file mapping, another library's array) belongs to its owner. */
int em_storage_resizable(const em_storage *s) {
  return s->deleter == cpu_free || s->deleter == inline_free || s->deleter == device_free;
}

/* A storage whose bytes are never inline (so that em_storage_adopt can
** hand them to another storage struct). */
em_status em_storage_new_movable(size_t nbytes, em_device dev, em_storage **out) {
  if (dev.type != EM_CPU) return storage_new_device(nbytes, dev, out);
  return storage_new_block(nbytes, &cpu_allocator, out);
}

/* s takes fresh's bytes (fresh from em_storage_new_movable, same device);
** fresh takes s's old ones, so that releasing fresh frees them. Every
** tensor on s sees the new bytes. */
void em_storage_adopt(em_storage *s, em_storage *fresh) {
  void *old = s->data;
  size_t old_n = s->nbytes;
  em_deleter old_del = s->deleter;
  void *old_ctx = s->deleter_ctx;
  s->data = fresh->data;
  s->nbytes = fresh->nbytes;
  s->deleter = fresh->deleter;
  s->deleter_ctx = fresh->deleter == device_free ? (void *)s : fresh->deleter_ctx;
  if (old_del == inline_free) { /* the bytes live in s's own block: only counted */
    count_free(old_n);
    fresh->data = NULL;
    fresh->nbytes = 0;
    fresh->deleter = NULL;
    fresh->deleter_ctx = NULL;
  } else {
    fresh->data = old;
    fresh->nbytes = old_n;
    fresh->deleter = old_del;
    fresh->deleter_ctx = old_del == device_free ? (void *)fresh : old_ctx;
  }
}

void em_storage_retain(em_storage *s) {
  if (s) atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
}

void em_storage_release(em_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1)
    return;
  if (s->deleter) s->deleter(s->deleter_ctx, s->data, s->nbytes);
  if (s->deleter == inline_free && s->nbytes <= EM_SMALL_STORAGE_BYTES &&
      em_pool_put(EM_POOL_SMALL_STORAGE, s))
    return;
  free(s);
}

void *em_storage_data(const em_storage *s) { return s->data; }
size_t em_storage_nbytes(const em_storage *s) { return s->nbytes; }
em_device em_storage_device(const em_storage *s) { return s->device; }
int em_storage_refcount(const em_storage *s) {
  return atomic_load(&((em_storage *)s)->refcount);
}
uint64_t em_storage_version(const em_storage *s) {
  return atomic_load(&((em_storage *)s)->version);
}
void em_storage_bump_version(em_storage *s) {
  atomic_fetch_add(&s->version, 1);
}
