/*
** cuda/runtime.c -- the CUDA backend's host side: is a device there, the
** caching allocator on cudaMalloc (cuda/alloc.c has its logic), streams,
** events, pinned host memory, the launch-error rule (docs/cuda.md).
**
** cudart is linked statically (CUDA::cudart_static): a build with CUDA
** needs no libcudart at run time, and on a machine without a driver
** (libcuda.so.1 missing) or without a device every call here fails with a
** message naming why, instead of the module failing to load.
**
** In a build without CUDA (EMBER_HAVE_CUDA unset) the same API says so.
*/
#include "core/core.h"
#include "core/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

#ifdef EMBER_HAVE_CUDA

#include "cuda/alloc.h"
#include "cuda/cuda.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 64

/* -- Is there a device? (once per process) --------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int ndevices;
static char why_not[256];

static void init_devices(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(why_not, sizeof why_not, "no CUDA driver or device found: cudaGetDeviceCount: %s",
             cudaGetErrorString(e));
    (void)cudaGetLastError();
    n = 0;
  } else if (n == 0) {
    snprintf(why_not, sizeof why_not, "no CUDA device found");
  }
  ndevices = n > MAX_DEVICES ? MAX_DEVICES : n;
}

int em_cuda_built(void) { return 1; }
int em_cuda_device_count(void) {
  pthread_once(&init_once, init_devices);
  return ndevices;
}
int em_cuda_available(void) { return em_cuda_device_count() > 0; }

/* -- The launch-error rule -------------------------------------------------- */

static _Thread_local char pending[512];

void emcu_note(const char *fmt, ...) {
  if (pending[0]) return; /* the first error is the one to see */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pending, sizeof pending, fmt, ap);
  va_end(ap);
  if (!pending[0]) snprintf(pending, sizeof pending, "a CUDA kernel failed");
}

void *emcu_dlopen_first(const char *const *names, const char *lib, char *why, size_t nwhy) {
  void *h = NULL;
  for (int i = 0; names[i] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(why, nwhy, "cannot load %s (%s)", lib, dlerror());
  return h;
}

int emcu_launched(const char *what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return 0;
  emcu_note("%s: CUDA error: %s", what, cudaGetErrorString(e));
  return -1;
}

em_status emcu_fail(const char *op, const char *what, int cuda_error) {
  (void)cudaGetLastError();
  return em_fail(EM_E_RUNTIME, "%s%s%s: CUDA error: %s", op ? op : "", op ? ": " : "", what,
                 cudaGetErrorString((cudaError_t)cuda_error));
}

em_status em_cuda_check(const char *op, int device) {
  const char *sep = op ? ": " : "";
  if (!op) op = "";
  if (pending[0]) {
    char msg[512];
    memcpy(msg, pending, sizeof msg);
    pending[0] = '\0';
    return em_fail(EM_E_RUNTIME, "%s%san earlier operation on cuda failed: %s", op, sep, msg);
  }
  int n = em_cuda_device_count();
  if (n == 0) return em_fail(EM_E_RUNTIME, "%s%sCUDA is not available (%s)", op, sep, why_not);
  if (device < 0 || device >= n)
    return em_fail(EM_E_RUNTIME,
                   "%s%sdevice cuda:%d is not available: this machine has %d CUDA device%s "
                   "(cuda:0 to cuda:%d)",
                   op, sep, device, n, n == 1 ? "" : "s", n - 1);
  return EM_OK;
}

/* The device of the op at hand on this thread: every op passes the check
** entry (em_kernels_check) before its kernels, so the kernels, whose
** iterators carry addresses only, launch on the stream of that device. */
static _Thread_local int op_device = -1;

em_status emcu_ready(const char *op, em_device dev) {
  em_status st = em_cuda_check(op, dev.index);
  if (st != EM_OK) return st;
  if (dev.index != op_device) {
    cudaError_t e = cudaSetDevice(dev.index);
    if (e != cudaSuccess) return emcu_fail(op, "cudaSetDevice", e);
    op_device = dev.index;
  }
  return EM_OK;
}

int emcu_device(void) { return op_device < 0 ? 0 : op_device; }

em_status emcu_set_device(const char *op, int device) {
  em_status st = em_cuda_check(op, device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return emcu_fail(op, "cudaSetDevice", e);
  op_device = device;
  return EM_OK;
}

/* -- Streams ------------------------------------------------------------------ */

struct em_cuda_stream {
  int device;
  cudaStream_t s;
};
static _Thread_local em_cuda_stream *current[MAX_DEVICES];

void *emcu_stream(int device) {
  em_cuda_stream *s = device >= 0 && device < MAX_DEVICES ? current[device] : NULL;
  return s ? (void *)s->s : NULL;
}

em_status em_cuda_stream_new(int device, int priority, em_cuda_stream **out) {
  *out = NULL;
  em_status st = emcu_set_device("Stream", device);
  if (st != EM_OK) return st;
  em_cuda_stream *s = calloc(1, sizeof *s);
  if (!s) return em_fail(EM_E_NOMEM, "Stream: out of memory");
  cudaError_t e = cudaStreamCreateWithPriority(&s->s, cudaStreamNonBlocking, priority);
  if (e != cudaSuccess) {
    free(s);
    return emcu_fail("Stream", "cudaStreamCreateWithPriority", e);
  }
  s->device = device;
  *out = s;
  return EM_OK;
}

void em_cuda_stream_free(em_cuda_stream *s) {
  if (!s) return;
  for (int d = 0; d < MAX_DEVICES; d++)
    if (current[d] == s) current[d] = NULL;
  /* the caching allocator keeps this stream's free blocks keyed by its
  ** handle, which the driver may give to a later stream: wait for the
  ** work queued here first, so no block such a stream inherits is still
  ** in use (a stream is freed rarely: its Lua object's collection) */
  cudaStreamSynchronize(s->s);
  (void)cudaGetLastError();
  cudaStreamDestroy(s->s);
  free(s);
}

int em_cuda_stream_device(const em_cuda_stream *s) { return s ? s->device : 0; }

em_status em_cuda_current_stream(int device, em_cuda_stream **out) {
  *out = NULL;
  em_status st = em_cuda_check("current_stream", device);
  if (st == EM_OK) *out = current[device];
  return st;
}

em_status em_cuda_raw_stream(const char *op, int device, void **out) {
  *out = NULL;
  em_status st = em_cuda_check(op, device);
  if (st == EM_OK) *out = emcu_stream(device);
  return st;
}

em_status em_cuda_set_stream(int device, em_cuda_stream *s, em_cuda_stream **prev) {
  em_status st = em_cuda_check("stream", device);
  if (st != EM_OK) return st;
  if (s && s->device != device)
    return em_fail(EM_E_VALUE, "stream: the stream is on cuda:%d, not cuda:%d", s->device,
                   device);
  if (prev) *prev = current[device];
  current[device] = s;
  return EM_OK;
}

static cudaStream_t raw_stream(em_cuda_stream *s) { return s ? s->s : (cudaStream_t)0; }

em_status em_cuda_stream_synchronize(int device, em_cuda_stream *s) {
  em_status st = emcu_set_device("synchronize", device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaStreamSynchronize(raw_stream(s));
  return e == cudaSuccess ? EM_OK : emcu_fail("synchronize", "cudaStreamSynchronize", e);
}

em_status em_cuda_stream_query(int device, em_cuda_stream *s, int *done) {
  em_status st = emcu_set_device("query", device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaStreamQuery(raw_stream(s));
  *done = e == cudaSuccess;
  if (e == cudaSuccess || e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return EM_OK;
  }
  return emcu_fail("query", "cudaStreamQuery", e);
}

/* -- Events ------------------------------------------------------------------- */

struct em_cuda_event {
  int device, timing, recorded;
  cudaEvent_t e;
};

em_status em_cuda_event_new(int device, int enable_timing, em_cuda_event **out) {
  *out = NULL;
  em_status st = emcu_set_device("Event", device);
  if (st != EM_OK) return st;
  em_cuda_event *ev = calloc(1, sizeof *ev);
  if (!ev) return em_fail(EM_E_NOMEM, "Event: out of memory");
  cudaError_t e =
      cudaEventCreateWithFlags(&ev->e, enable_timing ? cudaEventDefault : cudaEventDisableTiming);
  if (e != cudaSuccess) {
    free(ev);
    return emcu_fail("Event", "cudaEventCreateWithFlags", e);
  }
  ev->device = device;
  ev->timing = enable_timing;
  *out = ev;
  return EM_OK;
}

void em_cuda_event_free(em_cuda_event *ev) {
  if (!ev) return;
  cudaEventDestroy(ev->e);
  free(ev);
}

em_status em_cuda_event_record(em_cuda_event *ev, em_cuda_stream *s) {
  if (s && s->device != ev->device)
    return em_fail(EM_E_VALUE, "record: the event is on cuda:%d and the stream on cuda:%d",
                   ev->device, s->device);
  em_status st = emcu_set_device("record", ev->device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaEventRecord(ev->e, s ? s->s : raw_stream(current[ev->device]));
  if (e != cudaSuccess) return emcu_fail("record", "cudaEventRecord", e);
  ev->recorded = 1;
  return EM_OK;
}

em_status em_cuda_stream_wait_event(int device, em_cuda_stream *s, em_cuda_event *ev) {
  em_status st = emcu_set_device("wait", device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaStreamWaitEvent(raw_stream(s), ev->e, 0);
  return e == cudaSuccess ? EM_OK : emcu_fail("wait", "cudaStreamWaitEvent", e);
}

em_status em_cuda_event_synchronize(em_cuda_event *ev) {
  em_status st = em_cuda_check("synchronize", ev->device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaEventSynchronize(ev->e);
  return e == cudaSuccess ? EM_OK : emcu_fail("synchronize", "cudaEventSynchronize", e);
}

em_status em_cuda_event_query(em_cuda_event *ev, int *done) {
  em_status st = em_cuda_check("query", ev->device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaEventQuery(ev->e);
  *done = e == cudaSuccess;
  if (e == cudaSuccess || e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return EM_OK;
  }
  return emcu_fail("query", "cudaEventQuery", e);
}

em_status em_cuda_event_elapsed(em_cuda_event *a, em_cuda_event *b, double *ms) {
  *ms = 0;
  if (!a->timing || !b->timing)
    return em_fail(EM_E_VALUE, "elapsed_time: both events need enable_timing = true");
  if (!a->recorded || !b->recorded)
    return em_fail(EM_E_VALUE, "elapsed_time: both events must be recorded first");
  em_status st = em_cuda_check("elapsed_time", a->device);
  if (st != EM_OK) return st;
  float f = 0;
  cudaError_t e = cudaEventElapsedTime(&f, a->e, b->e);
  if (e != cudaSuccess) return emcu_fail("elapsed_time", "cudaEventElapsedTime", e);
  *ms = f;
  return EM_OK;
}

em_status em_cuda_synchronize(const char *op, int device) {
  em_status st = emcu_set_device(op, device);
  if (st != EM_OK) return st;
  cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? EM_OK : emcu_fail(op, "cudaDeviceSynchronize", e);
}

/* -- The caching allocator on cudaMalloc -------------------------------------- */

typedef struct device_state {
  em_calloc *alloc;
  uint64_t seed;
  int seeded;
} device_state;
static device_state devices[MAX_DEVICES];
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;

/* The raw calls run on the block's device and give the thread's current
** device back after (emcu_ready trusts op_device to still be current). */
typedef struct on_device {
  int prev, switched;
} on_device;
static int device_enter(int dev, on_device *o) {
  o->prev = -1, o->switched = 0;
  if (cudaGetDevice(&o->prev) != cudaSuccess) {
    (void)cudaGetLastError();
    o->prev = -1;
  }
  if (o->prev == dev) return 0;
  if (cudaSetDevice(dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  o->switched = 1;
  return 0;
}
static void device_leave(const on_device *o) {
  if (o->switched && o->prev >= 0) cudaSetDevice(o->prev);
}

static int raw_alloc(void *ctx, size_t n, void **p) {
  on_device o;
  *p = NULL;
  if (device_enter((int)(intptr_t)ctx, &o)) return 1;
  cudaError_t e = cudaMalloc(p, n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* out of memory is not sticky */
    *p = NULL;
  }
  device_leave(&o);
  return e == cudaSuccess ? 0 : 1;
}
static void raw_free(void *ctx, void *p) {
  on_device o;
  if (device_enter((int)(intptr_t)ctx, &o)) return;
  cudaFree(p);
  device_leave(&o);
}
static void *raw_event_record(void *ctx, void *stream) {
  cudaEvent_t e;
  on_device o;
  void *r = NULL;
  if (device_enter((int)(intptr_t)ctx, &o)) {
    cudaStreamSynchronize((cudaStream_t)stream); /* the hook's promise: waited instead */
    return NULL;
  }
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventRecord(e, (cudaStream_t)stream) != cudaSuccess) {
    (void)cudaGetLastError();
    cudaStreamSynchronize((cudaStream_t)stream); /* the hook's promise: waited instead */
  } else {
    r = (void *)e;
  }
  device_leave(&o);
  return r;
}
static int raw_event_query(void *ctx, void *e) {
  cudaError_t r = cudaEventQuery((cudaEvent_t)e);
  if (r == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return 0;
  }
  return 1;
}
static void raw_event_destroy(void *ctx, void *e) { cudaEventDestroy((cudaEvent_t)e); }
static void raw_collect(void *ctx, size_t n) { em_memory_collect(n); }

static em_calloc *allocator(int device) {
  pthread_mutex_lock(&devices_lock);
  em_calloc *a = devices[device].alloc;
  if (!a) {
    em_calloc_raw raw = {(void *)(intptr_t)device, device, raw_alloc, raw_free, raw_event_record,
                         raw_event_query, raw_event_destroy, raw_collect};
    a = devices[device].alloc = em_calloc_new(&raw);
  }
  pthread_mutex_unlock(&devices_lock);
  return a;
}

em_status emcu_alloc(em_device dev, size_t nbytes, void **data) {
  em_status st = em_cuda_check(NULL, dev.index);
  if (st != EM_OK) return st;
  em_calloc *a = allocator(dev.index);
  if (!a) return em_fail(EM_E_NOMEM, "out of host memory for the cuda:%d allocator", dev.index);
  return em_calloc_alloc(a, nbytes, emcu_stream(dev.index), data);
}

void emcu_free(em_device dev, void *data, size_t nbytes) {
  if (dev.index >= 0 && dev.index < MAX_DEVICES && devices[dev.index].alloc)
    em_calloc_free(devices[dev.index].alloc, data);
}

em_status em_cuda_memory_stats(const char *op, int device, em_cuda_memstats *out) {
  memset(out, 0, sizeof *out);
  em_status st = em_cuda_check(op, device);
  if (st != EM_OK) return st;
  em_calloc *a = allocator(device);
  if (!a) return EM_OK;
  em_calloc_stats s;
  em_calloc_get_stats(a, &s);
  out->allocated = s.allocated;
  out->max_allocated = s.max_allocated;
  out->reserved = s.reserved;
  out->max_reserved = s.max_reserved;
  return EM_OK;
}

em_status em_cuda_reset_peak(const char *op, int device) {
  em_status st = em_cuda_check(op, device);
  if (st != EM_OK) return st;
  em_calloc *a = allocator(device);
  if (a) em_calloc_reset_peak(a);
  return EM_OK;
}

em_status em_cuda_empty_cache(const char *op) {
  em_status st = em_cuda_check(op, 0);
  if (st != EM_OK) return st;
  for (int d = 0; d < ndevices; d++)
    if (devices[d].alloc) em_calloc_empty_cache(devices[d].alloc);
  return EM_OK;
}

em_status em_cuda_manual_seed(const char *op, int device, uint64_t seed) {
  em_status st = em_cuda_check(op, device < 0 ? 0 : device);
  if (st != EM_OK) return st;
  pthread_mutex_lock(&devices_lock);
  for (int d = 0; d < ndevices; d++)
    if (device < 0 || d == device) {
      devices[d].seed = seed;
      devices[d].seeded = 1;
    }
  pthread_mutex_unlock(&devices_lock);
  return EM_OK;
}

em_status em_cuda_record_stream(em_tensor *t, em_cuda_stream *s) {
  em_storage *sto = em_tensor_storage(t);
  em_device dev = em_storage_device(sto);
  if (dev.type != EM_CUDA)
    return em_fail(EM_E_VALUE, "record_stream: expected a cuda tensor");
  em_status st = em_cuda_check("record_stream", dev.index);
  if (st != EM_OK) return st;
  if (!em_storage_data(sto)) return EM_OK;
  return em_calloc_record_stream(allocator(dev.index), em_storage_data(sto),
                                 s ? (void *)s->s : NULL);
}

/* -- Pinned host memory ------------------------------------------------------- */

static void pinned_free(void *ctx, void *data, size_t nbytes) {
  if (data) cudaFreeHost(data);
}

em_status em_cuda_pinned_storage(const char *op, size_t nbytes, em_storage **out) {
  *out = NULL;
  em_status st = em_cuda_check(op, 0);
  if (st != EM_OK) return st;
  void *p = NULL;
  if (nbytes > 0) {
    cudaError_t e = cudaHostAlloc(&p, nbytes, cudaHostAllocPortable);
    if (e != cudaSuccess) return emcu_fail(op, "cudaHostAlloc", e);
  }
  st = em_storage_wrap(p, nbytes, em_cpu(), pinned_free, NULL, out);
  if (st != EM_OK && p) cudaFreeHost(p);
  return st;
}

int em_storage_is_pinned(const em_storage *s) { return s && s->deleter == pinned_free; }

int emcu_is_pinned_ptr(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeHost;
}

#else /* a build without CUDA: the same API, saying so */

#define NO_CUDA "ember was built without CUDA (configure with the CUDA Toolkit and -DEMBER_CUDA=ON)"

static em_status no_cuda(const char *op) {
  return em_fail(EM_E_RUNTIME, "%s%s" NO_CUDA, op ? op : "", op ? ": " : "");
}

int em_cuda_built(void) { return 0; }
int em_cuda_device_count(void) { return 0; }
int em_cuda_available(void) { return 0; }
em_status em_cuda_check(const char *op, int device) { return no_cuda(op); }
em_status em_cuda_synchronize(const char *op, int device) { return no_cuda(op); }
em_status em_cuda_stream_new(int device, int priority, em_cuda_stream **out) {
  *out = NULL;
  return no_cuda("Stream");
}
void em_cuda_stream_free(em_cuda_stream *s) {}
int em_cuda_stream_device(const em_cuda_stream *s) { return 0; }
em_status em_cuda_current_stream(int device, em_cuda_stream **out) {
  *out = NULL;
  return no_cuda("current_stream");
}
em_status em_cuda_set_stream(int device, em_cuda_stream *s, em_cuda_stream **prev) {
  return no_cuda("stream");
}
em_status em_cuda_raw_stream(const char *op, int device, void **out) {
  *out = NULL;
  return no_cuda(op);
}
em_status em_cuda_stream_synchronize(int device, em_cuda_stream *s) { return no_cuda("synchronize"); }
em_status em_cuda_stream_query(int device, em_cuda_stream *s, int *done) { return no_cuda("query"); }
em_status em_cuda_stream_wait_event(int device, em_cuda_stream *s, em_cuda_event *e) {
  return no_cuda("wait");
}
em_status em_cuda_event_new(int device, int enable_timing, em_cuda_event **out) {
  *out = NULL;
  return no_cuda("Event");
}
void em_cuda_event_free(em_cuda_event *e) {}
em_status em_cuda_event_record(em_cuda_event *e, em_cuda_stream *s) { return no_cuda("record"); }
em_status em_cuda_event_synchronize(em_cuda_event *e) { return no_cuda("synchronize"); }
em_status em_cuda_event_query(em_cuda_event *e, int *done) { return no_cuda("query"); }
em_status em_cuda_event_elapsed(em_cuda_event *a, em_cuda_event *b, double *ms) {
  return no_cuda("elapsed_time");
}
em_status em_cuda_memory_stats(const char *op, int device, em_cuda_memstats *out) {
  return no_cuda(op);
}
em_status em_cuda_reset_peak(const char *op, int device) { return no_cuda(op); }
em_status em_cuda_empty_cache(const char *op) { return no_cuda(op); }
em_status em_cuda_manual_seed(const char *op, int device, uint64_t seed) { return no_cuda(op); }
em_status em_cuda_pinned_storage(const char *op, size_t nbytes, em_storage **out) {
  *out = NULL;
  return no_cuda(op);
}
int em_storage_is_pinned(const em_storage *s) { return 0; }
em_status em_cuda_record_stream(em_tensor *t, em_cuda_stream *s) { return no_cuda("record_stream"); }

#endif
