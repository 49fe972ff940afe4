/*
** cuda/fft.c -- the FFT on the GPU through cuFFT (issue 16; the complex
** family's fft and rfft entries, core/kern_cplx.h; docs/cuda.md "FFT").
** The entries' contract is the CPU's (cpu/complex.c): values read as
** (outer, n, inner) contiguous elements, the transform along the middle
** dim, every value times fct. One cuFFT plan per layout:
**   inner == 1: batch = outer, element stride 1, distance n (one call);
**   inner  > 1: element stride inner, and a loop over the smaller of the
**               two batch dims while the plan batches the other (run()).
** complex64/float32 transform in float (C2C, R2C), complex128/float64 in
** double (Z2Z, D2Z), as the CPU's pocketfft builds and PyTorch's cuFFT do.
** cuFFT leaves the scaling to us: fct is applied after (cuda/complex.cu).
**
** libcufft is opened with dlopen on the first transform, as libcublas is
** (cuda/blas.c): a build with CUDA loads without it, and a script that
** never transforms on the GPU never loads it. Plans are kept (PLANS, least
** recently used out) per device and layout; their work areas come from
** the caching allocator for each call (cufftSetAutoAllocation off), so
** T.cuda.memory_allocated counts them. A real input that is not aligned
** to its complex type (cuFFT's requirement for R2C/D2Z) is copied to an
** aligned scratch first; an out-of-place R2C leaves its input as it was.
**
** COMPILED ONLY: no GPU has run this file.
*/
#include "core/kern_cplx.h"
#include "core/errmsg.h"

#ifdef EMBER_HAVE_CUDA

#include "cuda/cu_iface.h"
#include "cuda/cuda.h"

#include <cuda_runtime_api.h>
#include <cufft.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef cufftResult (*create_fn)(cufftHandle *);
typedef cufftResult (*destroy_fn)(cufftHandle);
typedef cufftResult (*auto_fn)(cufftHandle, int);
typedef cufftResult (*plan64_fn)(cufftHandle, int, long long *, long long *, long long, long long,
                                 long long *, long long, long long, cufftType, long long, size_t *);
typedef cufftResult (*stream_fn)(cufftHandle, cudaStream_t);
typedef cufftResult (*work_fn)(cufftHandle, void *);
typedef cufftResult (*c2c_fn)(cufftHandle, cufftComplex *, cufftComplex *, int);
typedef cufftResult (*z2z_fn)(cufftHandle, cufftDoubleComplex *, cufftDoubleComplex *, int);
typedef cufftResult (*r2c_fn)(cufftHandle, cufftReal *, cufftComplex *);
typedef cufftResult (*d2z_fn)(cufftHandle, cufftDoubleReal *, cufftDoubleComplex *);

static struct {
  int ok;
  char why[256];
  create_fn create;
  destroy_fn destroy;
  auto_fn set_auto;
  plan64_fn plan64;
  stream_fn set_stream;
  work_fn set_work;
  c2c_fn c2c;
  z2z_fn z2z;
  r2c_fn r2c;
  d2z_fn d2z;
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_open(void) {
  static const char *names[] = {"libcufft.so.12", "libcufft.so.11", "libcufft.so", NULL};
  void *h = emcu_dlopen_first(names, "libcufft", lib.why, sizeof lib.why);
  if (!h) return;
  lib.create = (create_fn)dlsym(h, "cufftCreate");
  lib.destroy = (destroy_fn)dlsym(h, "cufftDestroy");
  lib.set_auto = (auto_fn)dlsym(h, "cufftSetAutoAllocation");
  lib.plan64 = (plan64_fn)dlsym(h, "cufftMakePlanMany64");
  lib.set_stream = (stream_fn)dlsym(h, "cufftSetStream");
  lib.set_work = (work_fn)dlsym(h, "cufftSetWorkArea");
  lib.c2c = (c2c_fn)dlsym(h, "cufftExecC2C");
  lib.z2z = (z2z_fn)dlsym(h, "cufftExecZ2Z");
  lib.r2c = (r2c_fn)dlsym(h, "cufftExecR2C");
  lib.d2z = (d2z_fn)dlsym(h, "cufftExecD2Z");
  if (!lib.create || !lib.destroy || !lib.set_auto || !lib.plan64 || !lib.set_stream ||
      !lib.set_work || !lib.c2c || !lib.z2z || !lib.r2c || !lib.d2z) {
    snprintf(lib.why, sizeof lib.why, "libcufft lacks cufftMakePlanMany64 or its exec calls");
    return;
  }
  lib.ok = 1;
}

static em_status cufft_fail(const char *call, cufftResult r) {
  return em_fail(EM_E_RUNTIME, "fft: %s: cuFFT status %d", call, (int)r);
}

/* -- the plan cache: the last PLANS plans by (device, layout) -------------- */

enum { PLANS = 8 };
typedef struct plan_key {
  int dev;
  cufftType type;
  long long n, stride, idist, odist, batch;
} plan_key;
typedef struct plan_slot {
  plan_key key;
  cufftHandle h;
  size_t work;
  unsigned long used;
  int live;
} plan_slot;
static plan_slot slots[PLANS];
static unsigned long tick;
/* held from looking a plan up to the end of its enqueued transform: a plan
** carries its stream and work area, so two threads never share one at once */
static pthread_mutex_t plan_mutex = PTHREAD_MUTEX_INITIALIZER;

static int key_eq(const plan_key *a, const plan_key *b) {
  return a->dev == b->dev && a->type == b->type && a->n == b->n && a->stride == b->stride &&
         a->idist == b->idist && a->odist == b->odist && a->batch == b->batch;
}

/* the cached or a new plan for k (under plan_mutex) */
static em_status plan_for(const plan_key *k, plan_slot **out) {
  plan_slot *victim = &slots[0];
  for (int i = 0; i < PLANS; i++) {
    if (slots[i].live && key_eq(&slots[i].key, k)) {
      slots[i].used = ++tick;
      *out = &slots[i];
      return EM_OK;
    }
    if (!slots[i].live || (victim->live && slots[i].used < victim->used)) victim = &slots[i];
  }
  if (victim->live) { /* destroyed on its own device (the cache is shared by all of them) */
    int cur = k->dev;
    if (victim->key.dev != cur) cudaSetDevice(victim->key.dev);
    lib.destroy(victim->h);
    if (victim->key.dev != cur) cudaSetDevice(cur);
    victim->live = 0;
  }
  cufftHandle h;
  cufftResult r = lib.create(&h);
  if (r != CUFFT_SUCCESS) return cufft_fail("cufftCreate", r);
  r = lib.set_auto(h, 0);
  long long n = k->n;
  /* rank 1: the embeds only switch the advanced layout on */
  long long inembed = k->n;
  long long onembed = k->type == CUFFT_R2C || k->type == CUFFT_D2Z ? k->n / 2 + 1 : k->n;
  size_t work = 0;
  if (r == CUFFT_SUCCESS)
    r = lib.plan64(h, 1, &n, &inembed, k->stride, k->idist, &onembed, k->stride, k->odist, k->type,
                   k->batch, &work);
  if (r != CUFFT_SUCCESS) {
    lib.destroy(h);
    return cufft_fail("cufftMakePlanMany64", r);
  }
  victim->key = *k;
  victim->h = h;
  victim->work = work;
  victim->used = ++tick;
  victim->live = 1;
  *out = victim;
  return EM_OK;
}

/* Transforms the (outer, n, inner) values at in into out (elements of ies
** and oes bytes). A plan has one batch stride and the layout two batch
** dims, so: one call in all when inner == 1; else a loop over the smaller
** of outer and inner, the plan batching the other (a real input loops over
** outer only: stepping by one real element would break the complex
** alignment cuFFT needs). */
static em_status run(cufftType type, const char *in, char *out, int64_t outer, int64_t n,
                     int64_t inner, int64_t ipitch, size_t ies, size_t oes, int forward) {
  pthread_once(&lib_once, lib_open);
  if (!lib.ok) return em_fail(EM_E_RUNTIME, "fft: %s", lib.why);
  int dev = emcu_device();
  em_device d = {EM_CUDA, dev};
  int real_in = type == CUFFT_R2C || type == CUFFT_D2Z;
  int64_t nout = real_in ? n / 2 + 1 : n, calls;
  size_t istep, ostep;
  plan_key k = {dev, type, n, 1, n, nout, outer};
  if (inner == 1) { /* lanes back to back */
    calls = 1, istep = ostep = 0;
  } else if (outer <= inner || real_in) { /* per outer position, inner lanes batched */
    k.stride = inner, k.idist = 1, k.odist = 1, k.batch = inner;
    calls = outer, istep = (size_t)ipitch * ies, ostep = (size_t)(nout * inner) * oes;
  } else { /* per inner position, outer lanes batched */
    k.stride = inner, k.idist = n * inner, k.odist = nout * inner, k.batch = outer;
    calls = inner, istep = ies, ostep = oes;
  }
  cudaStream_t s = (cudaStream_t)emcu_stream(dev);
  pthread_mutex_lock(&plan_mutex);
  plan_slot *p = NULL;
  em_status st = plan_for(&k, &p);
  void *work = NULL;
  if (st == EM_OK && p->work) st = emcu_alloc(d, p->work, &work);
  cufftResult r = CUFFT_SUCCESS;
  const char *call = "cufftSetStream";
  if (st == EM_OK) r = lib.set_stream(p->h, s);
  if (st == EM_OK && r == CUFFT_SUCCESS && work) call = "cufftSetWorkArea", r = lib.set_work(p->h, work);
  for (int64_t o = 0; st == EM_OK && r == CUFFT_SUCCESS && o < calls; o++) {
    char *i = (char *)in + (size_t)o * istep, *q = out + (size_t)o * ostep;
    int dir = forward ? CUFFT_FORWARD : CUFFT_INVERSE;
    switch (type) {
      case CUFFT_C2C: call = "cufftExecC2C", r = lib.c2c(p->h, (cufftComplex *)i, (cufftComplex *)q, dir); break;
      case CUFFT_Z2Z:
        call = "cufftExecZ2Z", r = lib.z2z(p->h, (cufftDoubleComplex *)i, (cufftDoubleComplex *)q, dir);
        break;
      case CUFFT_R2C: call = "cufftExecR2C", r = lib.r2c(p->h, (cufftReal *)i, (cufftComplex *)q); break;
      default: call = "cufftExecD2Z", r = lib.d2z(p->h, (cufftDoubleReal *)i, (cufftDoubleComplex *)q); break;
    }
  }
  if (work) emcu_free(d, work, p->work); /* stream-ordered: reused after the transforms */
  pthread_mutex_unlock(&plan_mutex);
  if (st != EM_OK) return st;
  if (r != CUFFT_SUCCESS) return cufft_fail(call, r);
  return EM_OK;
}

em_status emcu_fft(em_dtype dt, void *data, int64_t outer, int64_t n, int64_t inner, int forward,
                   double fct) {
  if (outer == 0 || n == 0 || inner == 0) return EM_OK;
  size_t es = em_dtype_size(dt);
  em_status st = run(dt == EM_COMPLEX64 ? CUFFT_C2C : CUFFT_Z2Z, data, data, outer, n, inner,
                     n * inner, es, es, forward);
  if (st != EM_OK) return st;
  int e = emcu_scale((int)dt, data, outer * n * inner, fct, emcu_stream(emcu_device()));
  return e ? emcu_fail("fft", "scale", e) : EM_OK;
}

em_status emcu_rfft(em_dtype dt, const void *in, void *out, int64_t outer, int64_t n, int64_t inner,
                    double fct) {
  if (outer == 0 || n == 0 || inner == 0) return EM_OK;
  size_t es = em_dtype_size(dt);
  int64_t nout = n / 2 + 1;
  /* cuFFT reads real input as if complex-aligned: each call's input (the
  ** base, and with inner > 1 each outer slice of n * inner values) must sit
  ** on a multiple of 2 * es bytes. Otherwise the input goes to an aligned
  ** scratch whose slices are padded to an even length. */
  int64_t slab = n * inner, pitch = slab;
  int slices = inner > 1 && outer > 1;
  if (slices && slab % 2) pitch = slab + 1;
  int dev = emcu_device();
  em_device d = {EM_CUDA, dev};
  void *scratch = NULL;
  const void *src = in;
  size_t bytes = (size_t)outer * (size_t)pitch * es;
  if ((uintptr_t)in % (2 * es) != 0 || pitch != slab) {
    em_status st = emcu_alloc(d, bytes, &scratch);
    if (st != EM_OK) return st;
    cudaError_t e = cudaMemcpy2DAsync(scratch, (size_t)pitch * es, in, (size_t)slab * es,
                                      (size_t)slab * es, (size_t)outer, cudaMemcpyDeviceToDevice,
                                      (cudaStream_t)emcu_stream(dev));
    if (e != cudaSuccess) {
      emcu_free(d, scratch, bytes);
      return emcu_fail("fft", "cudaMemcpy2DAsync", e);
    }
    src = scratch;
  }
  em_status st = run(dt == EM_FLOAT32 ? CUFFT_R2C : CUFFT_D2Z, src, out, outer, n, inner, pitch,
                     es, 2 * es, 1);
  if (scratch) emcu_free(d, scratch, bytes);
  if (st != EM_OK) return st;
  int e = emcu_scale(dt == EM_FLOAT32 ? (int)EM_COMPLEX64 : (int)EM_COMPLEX128, out,
                     outer * nout * inner, fct, emcu_stream(dev));
  return e ? emcu_fail("fft", "scale", e) : EM_OK;
}

#endif
