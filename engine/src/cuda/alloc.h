/*
** cuda/alloc.h -- the caching device allocator (docs/cuda.md), as plain C
** over an abstract raw allocator: the CUDA backend gives it cudaMalloc /
** cudaFree and CUDA events (cuda/runtime.c); tests/c/test_cuda_alloc.c gives
** it a fake one and checks its logic on the host. No CUDA header here.
**
** The rules (PyTorch's CUDACachingAllocator, simplified):
** - Requests are rounded up to 512 bytes. Two pools: small (<= 1 MiB,
**   carved from 2 MiB segments) and large (carved from 20 MiB segments for
**   requests under 10 MiB, else a segment of the request rounded up to
**   2 MiB). Each stream has its own pools: a block is only reused on the
**   stream it was allocated for.
** - A freed block goes back to its pool's size-class bins (one bin per
**   power of two) and is coalesced with its free neighbours in the same
**   segment; an allocation takes the smallest free block that fits (best
**   fit) and splits it when the rest is worth keeping (>= 512 bytes in the
**   small pool, > 1 MiB in the large one). The raw allocator is only asked
**   when no cached block fits.
** - record_stream: a block used on streams other than its own is not
**   reused when freed until an event recorded on each of those streams at
**   the time of the free has completed.
** - Out of memory: the collect hook runs (the host's garbage collector may
**   free storages), every cached block that is a whole segment is given
**   back, and the raw allocation is tried once more; then a clear error.
** Thread safe (one mutex per allocator); the hooks run without it held.
*/
#ifndef EMBER_CUDA_ALLOC_H
#define EMBER_CUDA_ALLOC_H

#include "core/core.h"

typedef struct em_calloc_raw {
  void *ctx;
  int device;  /* the N of cuda:N, for messages */
  /* nbytes of device memory into *p: 0, or nonzero when there is none */
  int (*alloc)(void *ctx, size_t nbytes, void **p);
  void (*free)(void *ctx, void *p);
  /* An event recorded now on stream; NULL when the hook could not make
  ** one and has waited for the stream instead (the block is free at once). */
  void *(*event_record)(void *ctx, void *stream);
  /* 1 when the work before the event has completed */
  int (*event_query)(void *ctx, void *event);
  void (*event_destroy)(void *ctx, void *event);
  /* out of memory for nbytes: collect the host's garbage (may call
  ** em_calloc_free); may be NULL */
  void (*collect)(void *ctx, size_t nbytes);
} em_calloc_raw;

typedef struct em_calloc_stats {
  size_t allocated, max_allocated;  /* bytes of live blocks (rounded sizes) */
  size_t reserved, max_reserved;    /* bytes of segments from the raw allocator */
  size_t requested;                 /* bytes asked for by live blocks */
  long raw_allocs, raw_frees;       /* calls to the raw allocator */
  long cache_hits;                  /* allocations served from the cache */
  long oom_retries;                 /* allocations retried after out of memory */
  long pending_blocks;              /* freed blocks waiting for their streams' events */
} em_calloc_stats;

typedef struct em_calloc em_calloc;

/* A new allocator over raw (copied); NULL when out of host memory. */
em_calloc *em_calloc_new(const em_calloc_raw *raw);
/* Gives every segment back (live blocks included) and frees a. */
void em_calloc_delete(em_calloc *a);
/* A block of at least nbytes (> 0) for stream into *p; fails with em_fail
** (EM_E_NOMEM, "CUDA out of memory: ...") after the retry above. */
em_status em_calloc_alloc(em_calloc *a, size_t nbytes, void *stream, void **p);
/* p (from em_calloc_alloc, live) goes back to the cache. Unknown p: ignored, 0. */
int em_calloc_free(em_calloc *a, void *p);
/* The live block holding p is used on stream too (PyTorch's record_stream).
** EM_E_VALUE when p is not a live block. */
em_status em_calloc_record_stream(em_calloc *a, void *p, void *stream);
/* Every cached segment with no live block goes back to the raw allocator
** (after completed events have released their blocks). */
void em_calloc_empty_cache(em_calloc *a);
void em_calloc_get_stats(em_calloc *a, em_calloc_stats *s);
/* max_allocated = allocated, max_reserved = reserved */
void em_calloc_reset_peak(em_calloc *a);
/* The size a request of nbytes takes (rounded to 512). */
size_t em_calloc_round(size_t nbytes);

#endif
