/*
** cuda/cudnn.c -- conv2d's three passes through cuDNN (issue 16 item 2;
** docs/cuda.md "conv2d"), tried first by cuda/table.c's conv2d entry when
** T.backends.cudnn.enabled (the default, as PyTorch's); the im2col +
** cuBLAS driver runs when cuDNN is off, cannot be loaded, or refuses the
** problem (a dim beyond an int, an unsupported dtype, no algorithm).
**
** cuDNN's descriptor API (cudnnConvolutionForward, ...BackwardData,
** ...BackwardFilter, as PyTorch calls it): NCHW tensors, an [O, C/groups,
** kH, kW] filter, cross-correlation with the group count, padding, stride
** and dilation of em_conv2d_geo. The algorithm is the first of cuDNN's
** heuristic list (the _v7 queries) whose work area the caching allocator
** can give, deterministic ones only with T.backends.cudnn.deterministic;
** with T.backends.cudnn.benchmark, cuDNN's timed list (cudnnFind*, run
** once per problem and kept) instead of the heuristic one.
** float32 runs in float32 (CUDNN_FMA_MATH: no TF32) unless
** T.backends.cudnn.allow_tf32 (ember's default is off, unlike PyTorch's,
** so that float32 results stay within the CPU's tolerances, as matmul's);
** float64 in float64.
**
** libcudnn is opened with dlopen on the first convolution, as libcublas
** (cuda/blas.c): a build with CUDA loads without it. Handles are per
** thread and device, bound to the current stream before each call.
**
** COMPILED ONLY: no GPU has run this file.
*/
#include "core/kern_nn.h"
#include "core/errmsg.h"

#include <stdatomic.h>

/* enabled, allow_tf32, deterministic, benchmark */
static atomic_int settings[4] = {1, 0, 0, 0};

void em_cuda_cudnn_set(em_cudnn_setting what, int on) {
  if (what >= 0 && what < 4) atomic_store(&settings[what], on != 0);
}
int em_cuda_cudnn_get(em_cudnn_setting what) {
  return what >= 0 && what < 4 ? atomic_load(&settings[what]) : 0;
}

#ifdef EMBER_HAVE_CUDA

#include "cuda/cuda.h"

#include <cudnn.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef size_t (*version_fn)(void);
typedef const char *(*errstr_fn)(cudnnStatus_t);
typedef cudnnStatus_t (*create_fn)(cudnnHandle_t *);
typedef cudnnStatus_t (*stream_fn)(cudnnHandle_t, cudaStream_t);
typedef cudnnStatus_t (*mk_tensor_fn)(cudnnTensorDescriptor_t *);
typedef cudnnStatus_t (*rm_tensor_fn)(cudnnTensorDescriptor_t);
typedef cudnnStatus_t (*set_tensor_fn)(cudnnTensorDescriptor_t, cudnnTensorFormat_t, cudnnDataType_t, int,
                                       int, int, int);
typedef cudnnStatus_t (*mk_filter_fn)(cudnnFilterDescriptor_t *);
typedef cudnnStatus_t (*rm_filter_fn)(cudnnFilterDescriptor_t);
typedef cudnnStatus_t (*set_filter_fn)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t, int,
                                       int, int, int);
typedef cudnnStatus_t (*mk_conv_fn)(cudnnConvolutionDescriptor_t *);
typedef cudnnStatus_t (*rm_conv_fn)(cudnnConvolutionDescriptor_t);
typedef cudnnStatus_t (*set_conv_fn)(cudnnConvolutionDescriptor_t, int, int, int, int, int, int,
                                     cudnnConvolutionMode_t, cudnnDataType_t);
typedef cudnnStatus_t (*groups_fn)(cudnnConvolutionDescriptor_t, int);
typedef cudnnStatus_t (*math_fn)(cudnnConvolutionDescriptor_t, cudnnMathType_t);
typedef cudnnStatus_t (*fwd_algos_fn)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                      cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int *,
                                      cudnnConvolutionFwdAlgoPerf_t *);
typedef cudnnStatus_t (*bwd_data_algos_fn)(cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
                                           cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int *,
                                           cudnnConvolutionBwdDataAlgoPerf_t *);
typedef cudnnStatus_t (*bwd_filter_algos_fn)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                                             cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t, int, int *,
                                             cudnnConvolutionBwdFilterAlgoPerf_t *);
typedef cudnnStatus_t (*fwd_fn)(cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *,
                                cudnnFilterDescriptor_t, const void *, cudnnConvolutionDescriptor_t,
                                cudnnConvolutionFwdAlgo_t, void *, size_t, const void *,
                                cudnnTensorDescriptor_t, void *);
typedef cudnnStatus_t (*bwd_data_fn)(cudnnHandle_t, const void *, cudnnFilterDescriptor_t, const void *,
                                     cudnnTensorDescriptor_t, const void *, cudnnConvolutionDescriptor_t,
                                     cudnnConvolutionBwdDataAlgo_t, void *, size_t, const void *,
                                     cudnnTensorDescriptor_t, void *);
typedef cudnnStatus_t (*bwd_filter_fn)(cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *,
                                       cudnnTensorDescriptor_t, const void *, cudnnConvolutionDescriptor_t,
                                       cudnnConvolutionBwdFilterAlgo_t, void *, size_t, const void *,
                                       cudnnFilterDescriptor_t, void *);
typedef cudnnStatus_t (*add_fn)(cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *,
                                const void *, cudnnTensorDescriptor_t, void *);

static struct {
  int ok;
  char why[256];
  version_fn version;
  errstr_fn errstr;
  create_fn create;
  stream_fn set_stream;
  mk_tensor_fn mk_tensor;
  rm_tensor_fn rm_tensor;
  set_tensor_fn set_tensor;
  mk_filter_fn mk_filter;
  rm_filter_fn rm_filter;
  set_filter_fn set_filter;
  mk_conv_fn mk_conv;
  rm_conv_fn rm_conv;
  set_conv_fn set_conv;
  groups_fn set_groups;
  math_fn set_math;
  fwd_algos_fn fwd_algos, fwd_find;
  bwd_data_algos_fn bwd_data_algos, bwd_data_find;
  bwd_filter_algos_fn bwd_filter_algos, bwd_filter_find;
  fwd_fn fwd;
  bwd_data_fn bwd_data;
  bwd_filter_fn bwd_filter;
  add_fn add;
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_open(void) {
  static const char *names[] = {"libcudnn.so.9", "libcudnn.so", NULL};
  void *h = emcu_dlopen_first(names, "libcudnn", lib.why, sizeof lib.why);
  if (!h) return;
#define SYM(field, type, name)                                                       \
  if (!(lib.field = (type)dlsym(h, name))) {                                          \
    snprintf(lib.why, sizeof lib.why, "libcudnn lacks %s", name);                     \
    return;                                                                           \
  }
  SYM(version, version_fn, "cudnnGetVersion")
  SYM(errstr, errstr_fn, "cudnnGetErrorString")
  SYM(create, create_fn, "cudnnCreate")
  SYM(set_stream, stream_fn, "cudnnSetStream")
  SYM(mk_tensor, mk_tensor_fn, "cudnnCreateTensorDescriptor")
  SYM(rm_tensor, rm_tensor_fn, "cudnnDestroyTensorDescriptor")
  SYM(set_tensor, set_tensor_fn, "cudnnSetTensor4dDescriptor")
  SYM(mk_filter, mk_filter_fn, "cudnnCreateFilterDescriptor")
  SYM(rm_filter, rm_filter_fn, "cudnnDestroyFilterDescriptor")
  SYM(set_filter, set_filter_fn, "cudnnSetFilter4dDescriptor")
  SYM(mk_conv, mk_conv_fn, "cudnnCreateConvolutionDescriptor")
  SYM(rm_conv, rm_conv_fn, "cudnnDestroyConvolutionDescriptor")
  SYM(set_conv, set_conv_fn, "cudnnSetConvolution2dDescriptor")
  SYM(set_groups, groups_fn, "cudnnSetConvolutionGroupCount")
  SYM(set_math, math_fn, "cudnnSetConvolutionMathType")
  SYM(fwd_algos, fwd_algos_fn, "cudnnGetConvolutionForwardAlgorithm_v7")
  SYM(bwd_data_algos, bwd_data_algos_fn, "cudnnGetConvolutionBackwardDataAlgorithm_v7")
  SYM(bwd_filter_algos, bwd_filter_algos_fn, "cudnnGetConvolutionBackwardFilterAlgorithm_v7")
  SYM(fwd_find, fwd_algos_fn, "cudnnFindConvolutionForwardAlgorithm")
  SYM(bwd_data_find, bwd_data_algos_fn, "cudnnFindConvolutionBackwardDataAlgorithm")
  SYM(bwd_filter_find, bwd_filter_algos_fn, "cudnnFindConvolutionBackwardFilterAlgorithm")
  SYM(fwd, fwd_fn, "cudnnConvolutionForward")
  SYM(bwd_data, bwd_data_fn, "cudnnConvolutionBackwardData")
  SYM(bwd_filter, bwd_filter_fn, "cudnnConvolutionBackwardFilter")
  SYM(add, add_fn, "cudnnAddTensor")
#undef SYM
  lib.ok = 1;
}

int em_cuda_cudnn_version(void) {
  pthread_once(&lib_once, lib_open);
  return lib.ok ? (int)lib.version() : 0;
}

#define MAX_HANDLES 64
static _Thread_local cudnnHandle_t handles[MAX_HANDLES];

/* Descriptors of one problem, made and destroyed per call. */
typedef struct conv_descs {
  cudnnTensorDescriptor_t x, y, bias;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
} conv_descs;

static void descs_free(conv_descs *d) {
  if (d->x) lib.rm_tensor(d->x);
  if (d->y) lib.rm_tensor(d->y);
  if (d->bias) lib.rm_tensor(d->bias);
  if (d->w) lib.rm_filter(d->w);
  if (d->conv) lib.rm_conv(d->conv);
}

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* CUDNN_STATUS_SUCCESS, or the first failure of making the descriptors */
static cudnnStatus_t descs_make(conv_descs *d, const em_conv2d_geo *g, cudnnDataType_t t, int f64) {
  cudnnStatus_t s = lib.mk_tensor(&d->x);
  if (s == CUDNN_STATUS_SUCCESS) s = lib.mk_tensor(&d->y);
  if (s == CUDNN_STATUS_SUCCESS) s = lib.mk_tensor(&d->bias);
  if (s == CUDNN_STATUS_SUCCESS) s = lib.mk_filter(&d->w);
  if (s == CUDNN_STATUS_SUCCESS) s = lib.mk_conv(&d->conv);
  if (s == CUDNN_STATUS_SUCCESS)
    s = lib.set_tensor(d->x, CUDNN_TENSOR_NCHW, t, (int)g->N, (int)g->C, (int)g->H, (int)g->W);
  if (s == CUDNN_STATUS_SUCCESS)
    s = lib.set_tensor(d->y, CUDNN_TENSOR_NCHW, t, (int)g->N, (int)g->O, (int)g->oH, (int)g->oW);
  if (s == CUDNN_STATUS_SUCCESS) s = lib.set_tensor(d->bias, CUDNN_TENSOR_NCHW, t, 1, (int)g->O, 1, 1);
  if (s == CUDNN_STATUS_SUCCESS)
    s = lib.set_filter(d->w, t, CUDNN_TENSOR_NCHW, (int)g->O, (int)g->Cg, (int)g->kH, (int)g->kW);
  if (s == CUDNN_STATUS_SUCCESS)
    s = lib.set_conv(d->conv, (int)g->p[0], (int)g->p[1], (int)g->s[0], (int)g->s[1], (int)g->d[0],
                     (int)g->d[1], CUDNN_CROSS_CORRELATION, t);
  if (s == CUDNN_STATUS_SUCCESS) s = lib.set_groups(d->conv, (int)g->groups);
  if (s == CUDNN_STATUS_SUCCESS)
    s = lib.set_math(d->conv, f64 ? CUDNN_DEFAULT_MATH
                                  : em_cuda_cudnn_get(EM_CUDNN_ALLOW_TF32) ? CUDNN_TENSOR_OP_MATH
                                                                            : CUDNN_FMA_MATH);
  return s;
}

enum { ALGOS = 16 };

/* -- benchmark: cudnnFind*'s timed list per problem, kept -------------------
** (PyTorch's torch.backends.cudnn.benchmark) Finding runs every algorithm
** once, so its answer is kept per problem (device, pass, dtype, the math
** settings, the geometry): FOUND entries, the least recently used out. */
enum { FOUND = 32 };
typedef struct found_key {
  int dev, pass, f64, tf32, det;
  int64_t geo[22];
} found_key;
typedef struct found_slot {
  found_key key;
  int live, n;
  int algo[ALGOS];
  size_t mem[ALGOS];
  unsigned long used;
} found_slot;
static found_slot found[FOUND];
static unsigned long found_tick;
static pthread_mutex_t found_mutex = PTHREAD_MUTEX_INITIALIZER;

static void found_key_of(found_key *k, int dev, int pass, int f64, int tf32, int det,
                         const em_conv2d_geo *g) {
  memset(k, 0, sizeof *k);
  k->dev = dev, k->pass = pass, k->f64 = f64, k->tf32 = tf32, k->det = det;
  const int64_t v[22] = {g->N,  g->C,  g->H,  g->W,  g->O,  g->Cg, g->kH, g->kW,
                         g->oH, g->oW, g->groups, g->Og, g->K, g->L, g->s[0], g->s[1],
                         g->p[0], g->p[1], g->d[0], g->d[1], 0, 0};
  memcpy(k->geo, v, sizeof v);
}

/* the kept list for k into algo/mem (1), or 0 */
static int found_get(const found_key *k, int *algo, size_t *mem, int *n) {
  int hit = 0;
  pthread_mutex_lock(&found_mutex);
  for (int i = 0; i < FOUND && !hit; i++)
    if (found[i].live && !memcmp(&found[i].key, k, sizeof *k)) {
      found[i].used = ++found_tick;
      *n = found[i].n;
      memcpy(algo, found[i].algo, sizeof found[i].algo);
      memcpy(mem, found[i].mem, sizeof found[i].mem);
      hit = 1;
    }
  pthread_mutex_unlock(&found_mutex);
  return hit;
}

static void found_put(const found_key *k, const int *algo, const size_t *mem, int n) {
  pthread_mutex_lock(&found_mutex);
  found_slot *v = &found[0];
  for (int i = 0; i < FOUND; i++)
    if (!found[i].live || (v->live && found[i].used < v->used)) v = &found[i];
  v->key = *k;
  v->live = 1;
  v->n = n;
  memcpy(v->algo, algo, sizeof v->algo);
  memcpy(v->mem, mem, sizeof v->mem);
  v->used = ++found_tick;
  pthread_mutex_unlock(&found_mutex);
}

/* One pass on cuDNN (cuda/cuda.h). */
em_status emcu_cudnn_conv2d(const char *op, int pass_, const em_tensor *a, const em_tensor *b,
                            const em_tensor *bias, em_tensor *out, const em_conv2d_geo *g,
                            int *taken) {
  em_conv_pass pass = (em_conv_pass)pass_;
  *taken = 0;
  if (!em_cuda_cudnn_get(EM_CUDNN_ENABLED)) return EM_OK;
  em_dtype dt = a->dtype;
  if (dt != EM_FLOAT32 && dt != EM_FLOAT64) return EM_OK;
  /* cuDNN's 4-d descriptors take int dims, and its tensors count elements in an int */
  if (!fits_int(g->N * g->C * g->H * g->W) || !fits_int(g->N * g->O * g->oH * g->oW) ||
      !fits_int(g->O * g->Cg * g->kH * g->kW))
    return EM_OK;
  pthread_once(&lib_once, lib_open);
  if (!lib.ok) return EM_OK;
  int dev = emcu_device();
  if (dev < 0 || dev >= MAX_HANDLES) return EM_OK;
  if (!handles[dev] && lib.create(&handles[dev]) != CUDNN_STATUS_SUCCESS) {
    handles[dev] = NULL;
    return EM_OK;
  }
  cudnnHandle_t h = handles[dev];
  if (lib.set_stream(h, (cudaStream_t)emcu_stream(dev)) != CUDNN_STATUS_SUCCESS) return EM_OK;
  int f64 = dt == EM_FLOAT64;
  cudnnDataType_t t = f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  conv_descs d = {0};
  if (descs_make(&d, g, t, f64) != CUDNN_STATUS_SUCCESS) {
    descs_free(&d);
    return EM_OK;
  }
  int det = em_cuda_cudnn_get(EM_CUDNN_DETERMINISTIC);
  int bench = em_cuda_cudnn_get(EM_CUDNN_BENCHMARK);
  /* the algorithms to try, in order: cuDNN's heuristic list, or with
  ** benchmark its timed list (found once per problem) */
  int algo[ALGOS], n = 0;
  size_t mem[ALGOS];
  memset(algo, 0, sizeof algo);
  memset(mem, 0, sizeof mem);
  found_key fk;
  found_key_of(&fk, dev, (int)pass, f64, em_cuda_cudnn_get(EM_CUDNN_ALLOW_TF32), det, g);
  int have = bench && found_get(&fk, algo, mem, &n);
  /* PF the query's result type, CALL the query filling pf and n */
#define PICK(PF, CALL)                                                                        \
  do {                                                                                        \
    PF pf[ALGOS];                                                                             \
    if ((CALL) != CUDNN_STATUS_SUCCESS) n = 0;                                                \
    int k = 0;                                                                                \
    for (int i = 0; i < n; i++)                                                               \
      if (pf[i].status == CUDNN_STATUS_SUCCESS && (!det || pf[i].determinism == CUDNN_DETERMINISTIC)) \
        algo[k] = (int)pf[i].algo, mem[k++] = pf[i].memory;                                   \
    n = k;                                                                                    \
  } while (0)
  if (have) {
    /* kept from an earlier find */
  } else if (pass == EM_CONV_FORWARD) {
    fwd_algos_fn q = bench ? lib.fwd_find : lib.fwd_algos;
    PICK(cudnnConvolutionFwdAlgoPerf_t, q(h, d.x, d.w, d.conv, d.y, ALGOS, &n, pf));
  } else if (pass == EM_CONV_BACKWARD_INPUT) {
    bwd_data_algos_fn q = bench ? lib.bwd_data_find : lib.bwd_data_algos;
    PICK(cudnnConvolutionBwdDataAlgoPerf_t, q(h, d.w, d.y, d.conv, d.x, ALGOS, &n, pf));
  } else {
    bwd_filter_algos_fn q = bench ? lib.bwd_filter_find : lib.bwd_filter_algos;
    PICK(cudnnConvolutionBwdFilterAlgoPerf_t, q(h, d.x, d.y, d.conv, d.w, ALGOS, &n, pf));
  }
#undef PICK
  if (bench && !have && n > 0) found_put(&fk, algo, mem, n);
  em_device ed = {EM_CUDA, dev};
  float af = 1.0f, bf = 0.0f, b1f = 1.0f;
  double ad = 1.0, bd = 0.0, b1d = 1.0;
  const void *one = f64 ? (const void *)&ad : (const void *)&af;
  const void *zero = f64 ? (const void *)&bd : (const void *)&bf;
  const void *beta1 = f64 ? (const void *)&b1d : (const void *)&b1f;
  cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
  int ran = 0;
  for (int i = 0; i < n && !ran; i++) {
    void *work = NULL;
    if (mem[i] && emcu_alloc(ed, mem[i], &work) != EM_OK) {
      continue; /* the next algorithm (its work area may be smaller) */
    }
    if (pass == EM_CONV_FORWARD)
      s = lib.fwd(h, one, d.x, em_tensor_data(a), d.w, em_tensor_data(b), d.conv,
                  (cudnnConvolutionFwdAlgo_t)algo[i], work, mem[i], zero, d.y, em_tensor_data(out));
    else if (pass == EM_CONV_BACKWARD_INPUT)
      s = lib.bwd_data(h, one, d.w, em_tensor_data(b), d.y, em_tensor_data(a), d.conv,
                       (cudnnConvolutionBwdDataAlgo_t)algo[i], work, mem[i], zero, d.x,
                       em_tensor_data(out));
    else
      s = lib.bwd_filter(h, one, d.x, em_tensor_data(b), d.y, em_tensor_data(a), d.conv,
                         (cudnnConvolutionBwdFilterAlgo_t)algo[i], work, mem[i], zero, d.w,
                         em_tensor_data(out));
    if (work) emcu_free(ed, work, mem[i]); /* stream-ordered */
    ran = s == CUDNN_STATUS_SUCCESS;
  }
  if (ran && pass == EM_CONV_FORWARD && bias)
    s = lib.add(h, one, d.bias, em_tensor_data(bias), beta1, d.y, em_tensor_data(out));
  descs_free(&d);
  if (!ran) return EM_OK; /* nothing written: the im2col driver does it */
  *taken = 1;
  if (s != CUDNN_STATUS_SUCCESS)
    return em_fail(EM_E_RUNTIME, "%s: cudnnAddTensor: %s", op, lib.errstr(s));
  return EM_OK;
}

#else

int em_cuda_cudnn_version(void) { return 0; }

#endif
