/*
** storage.c -- refcounted storages and the counted CPU allocator.
** A storage's deleter runs exactly once, when the refcount drops to zero.
** Bytes from the engine's allocator are counted so that a host with a
** garbage collector can be told about memory it cannot see (DESIGN §4).
*/
#include "internal.h"

#include <stdlib.h>
#include <sys/mman.h>

/* -- Counted CPU allocation ---------------------------------------------- */

static atomic_size_t live_bytes;
static atomic_size_t soft_limit = (size_t)256 << 20;
static _Thread_local em_pressure_hook pressure_hook;
static _Thread_local void *pressure_ctx;

size_t em_memory_live_bytes(void) { return atomic_load(&live_bytes); }
void em_set_soft_limit(size_t bytes) { atomic_store(&soft_limit, bytes); }
size_t em_get_soft_limit(void) { return atomic_load(&soft_limit); }
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

void *em_cpu_alloc_bytes(size_t nbytes) {
  if (nbytes == 0) return NULL;
  if (pressure_hook && atomic_load(&live_bytes) + nbytes > atomic_load(&soft_limit))
    pressure_hook(pressure_ctx, nbytes, 0);
  void *p = raw_alloc(nbytes);
  if (!p && pressure_hook) {
    pressure_hook(pressure_ctx, nbytes, 1);
    p = raw_alloc(nbytes);
  }
  if (p) atomic_fetch_add(&live_bytes, nbytes);
  return p;
}

void em_cpu_free_bytes(void *p, size_t nbytes) {
  if (!p) return;
  free(p);
  atomic_fetch_sub(&live_bytes, nbytes);
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

/* -- Devices ------------------------------------------------------------ */

em_device em_cpu(void) {
  em_device d = {EM_CPU, 0};
  return d;
}
int em_device_equal(em_device a, em_device b) {
  return a.type == b.type && a.index == b.index;
}
int em_cuda_available(void) { return 0; }

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
  *out = s;
  return EM_OK;
}

em_status em_storage_new_with(size_t nbytes, const em_allocator *a,
                              em_storage **out) {
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

em_status em_storage_new(size_t nbytes, em_device dev, em_storage **out) {
  if (dev.type != EM_CPU)
    return em_fail(EM_E_RUNTIME,
                   "device cuda:%d is not available: ember was built without "
                   "CUDA or no GPU is present",
                   dev.index);
  return em_storage_new_with(nbytes, &cpu_allocator, out);
}

em_status em_storage_wrap(void *data, size_t nbytes, em_device dev,
                          em_deleter deleter, void *ctx, em_storage **out) {
  if (!data && nbytes > 0)
    return em_fail(EM_E_VALUE, "storage_wrap: NULL data for %zu bytes", nbytes);
  return storage_make(data, nbytes, dev, deleter, ctx, out);
}

void em_storage_retain(em_storage *s) {
  if (s) atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
}

void em_storage_release(em_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1)
    return;
  if (s->deleter) s->deleter(s->deleter_ctx, s->data, s->nbytes);
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
