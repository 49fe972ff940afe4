/*
** ember.h -- the public C API of the ember tensor engine.
**
** A quick tour. Memory lives in an em_storage: a refcounted block of bytes on
** one device, released exactly once (through its deleter) when the last
** reference goes. An em_tensor is a strided view of a storage: sizes and
** strides in elements, a storage offset in elements, a dtype. View operations
** only write a new tensor's metadata; two tensors alias iff they share a
** storage.
**
**   int64_t sizes[2] = {2, 3};
**   em_tensor *t;
**   if (em_zeros(2, sizes, EM_FLOAT32, em_cpu(), &t) != EM_OK)
**       fprintf(stderr, "%s\n", em_last_error());
**   ...
**   em_tensor_release(t);
**
** Conventions (shared with the Lua surface):
** - Positions are 1-based: dims and element indices. A negative position
**   counts from the end (-1 is the last). Sizes, strides, offsets and counts
**   are plain quantities.
** - Element (i1..in) of a tensor lives at storage element
**   offset + sum((ik - 1) * stride_k). Offsets and strides are in elements,
**   never bytes.
** - Every fallible call returns an em_status. On failure it leaves a message
**   in a thread-local buffer, read with em_last_error(); the message names the
**   operation and the values. The engine never aborts, never prints and never
**   calls into a scripting language. Outputs are written only on success.
** - Every em_tensor* / em_storage* handed out is a new reference: release it.
**
** This header is plain C: no function-like macros, no varargs, no bitfields,
** so LuaJIT's ffi.cdef can read it.
*/
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { EM_MAX_DIMS = 16 };

/* -- Status ------------------------------------------------------------- */

typedef enum em_status {
  EM_OK = 0,
  EM_E_VALUE = 1,    /* a bad argument value (sizes, dims, options) */
  EM_E_INDEX = 2,    /* an index out of range */
  EM_E_TYPE = 3,     /* a dtype that the operation does not accept */
  EM_E_NOMEM = 4,    /* an allocation failed */
  EM_E_RUNTIME = 5,  /* anything else (device unavailable, I/O) */
} em_status;

/* The message of the last failed call on this thread ("" if none). */
const char *em_last_error(void);

/* -- dtypes ------------------------------------------------------------- */

typedef enum em_dtype {
  EM_BOOL = 0,
  EM_UINT8,
  EM_INT8,
  EM_INT16,
  EM_INT32,
  EM_INT64,
  EM_FLOAT16,
  EM_BFLOAT16,
  EM_FLOAT32,
  EM_FLOAT64,
  EM_NUM_DTYPES
} em_dtype;

typedef enum em_dtype_kind {
  EM_KIND_BOOL = 0,
  EM_KIND_INT = 1,
  EM_KIND_FLOAT = 2
} em_dtype_kind;

const char *em_dtype_name(em_dtype dt);      /* "float32" */
size_t em_dtype_size(em_dtype dt);           /* bytes per element */
em_dtype_kind em_dtype_kindof(em_dtype dt);
int em_dtype_is_signed(em_dtype dt);
/* Looks a dtype up by name or alias ("float", "long", ...). -1 if unknown. */
int em_dtype_from_name(const char *name);

/* Scalars as a script hands them over: a Lua number is integral or not by
** its value, which matters for type promotion. */
typedef enum em_scalar_kind {
  EM_SCALAR_BOOL = 0,
  EM_SCALAR_INT = 1,
  EM_SCALAR_FLOAT = 2
} em_scalar_kind;

typedef struct em_scalar {
  em_scalar_kind kind;
  int64_t i;   /* the value when kind is BOOL or INT */
  double f;    /* the value when kind is FLOAT */
} em_scalar;

/* -- Devices ------------------------------------------------------------ */

typedef enum em_device_type { EM_CPU = 0, EM_CUDA = 1 } em_device_type;

typedef struct em_device {
  em_device_type type;
  int index;  /* 0 for the CPU */
} em_device;

em_device em_cpu(void);
int em_device_equal(em_device a, em_device b);
int em_cuda_available(void);

/* -- Storages ----------------------------------------------------------- */

typedef struct em_storage em_storage;

/* Called exactly once, when the last reference to a storage goes. */
typedef void (*em_deleter)(void *ctx, void *data, size_t nbytes);

typedef struct em_allocator {
  void *(*alloc)(void *ctx, size_t nbytes);  /* NULL on failure */
  em_deleter free;
  void *ctx;
} em_allocator;

/* The engine's CPU allocator (64-byte aligned, counted in em_memory_*). */
const em_allocator *em_cpu_allocator(void);

em_status em_storage_new(size_t nbytes, em_device dev, em_storage **out);
em_status em_storage_new_with(size_t nbytes, const em_allocator *a,
                              em_storage **out);
/* Wraps foreign memory without copying. deleter (may be NULL) is called
** exactly once with (ctx, data, nbytes) when the last reference goes. On
** failure the deleter is NOT called: the caller still owns data. */
em_status em_storage_wrap(void *data, size_t nbytes, em_device dev,
                          em_deleter deleter, void *ctx, em_storage **out);
void em_storage_retain(em_storage *s);
void em_storage_release(em_storage *s);
void *em_storage_data(const em_storage *s);
size_t em_storage_nbytes(const em_storage *s);
em_device em_storage_device(const em_storage *s);
int em_storage_refcount(const em_storage *s);
/* All views of one storage share this version counter; in-place writes
** bump it (autograd uses it to detect changed saved tensors). */
uint64_t em_storage_version(const em_storage *s);
void em_storage_bump_version(em_storage *s);

/* Memory accounting for hosts with a garbage collector: bytes held by live
** storages made by the engine's allocator, and a per-thread hook called
** (a) when an allocation would take the live bytes past the soft limit, and
** (b) with failed = 1 when an allocation failed, after which the allocation
** is retried once. The hook may release tensors (run a collector); it must
** not call back into the engine operation in progress. */
typedef void (*em_pressure_hook)(void *ctx, size_t requested, int failed);
size_t em_memory_live_bytes(void);
void em_set_pressure_hook(em_pressure_hook hook, void *ctx);
void em_set_soft_limit(size_t bytes);
size_t em_get_soft_limit(void);

/* -- Tensors ------------------------------------------------------------ */

typedef struct em_tensor em_tensor;

void em_tensor_retain(em_tensor *t);
void em_tensor_release(em_tensor *t);
int em_tensor_refcount(const em_tensor *t);

int em_tensor_ndim(const em_tensor *t);
const int64_t *em_tensor_sizes(const em_tensor *t);    /* ndim entries */
const int64_t *em_tensor_strides(const em_tensor *t);  /* in elements */
int64_t em_tensor_offset(const em_tensor *t);          /* in elements */
int64_t em_tensor_numel(const em_tensor *t);
em_dtype em_tensor_dtype(const em_tensor *t);
em_device em_tensor_device(const em_tensor *t);
em_storage *em_tensor_storage(const em_tensor *t);     /* borrowed */
/* Address of the first element (storage data + offset * element size). */
void *em_tensor_data(const em_tensor *t);
int em_tensor_is_contiguous(const em_tensor *t);
int em_tensor_is_non_overlapping_and_dense(const em_tensor *t);
/* Wraps `dim` (1-based, negative from the end) for a tensor of ndim dims;
** stores the 0-based axis. ndim 0 accepts dims as if ndim were 1. */
em_status em_wrap_dim(const char *op, int64_t dim, int ndim, int *axis);

/* A tensor over an existing storage; checks that every element it can
** address lies inside the storage. */
em_status em_tensor_new(em_storage *s, int64_t offset, int ndim,
                        const int64_t *sizes, const int64_t *strides,
                        em_dtype dt, em_tensor **out);
/* A new view of t's storage with other metadata (as_strided). */
em_status em_as_strided(const em_tensor *t, int ndim, const int64_t *sizes,
                        const int64_t *strides, int64_t offset,
                        em_tensor **out);
/* A new tensor object sharing t's storage and metadata (an alias). */
em_status em_alias(const em_tensor *t, em_tensor **out);

/* -- Creation ----------------------------------------------------------- */

/* Deterministic mode: em_empty fills NaN (floats) or the dtype's max. */
void em_set_deterministic(int on);
int em_get_deterministic(void);

em_status em_empty(int ndim, const int64_t *sizes, em_dtype dt, em_device dev,
                   em_tensor **out);
em_status em_zeros(int ndim, const int64_t *sizes, em_dtype dt, em_device dev,
                   em_tensor **out);
em_status em_full(int ndim, const int64_t *sizes, em_scalar value,
                  em_dtype dt, em_device dev, em_tensor **out);
/* A new contiguous tensor with t's sizes, dtype dt (t's when dt < 0). */
em_status em_empty_like(const em_tensor *t, int dt, em_tensor **out);

/* -- Copies ------------------------------------------------------------- */

/* Copies src into dst, broadcasting src to dst's shape and casting. dst
** may not have internal overlap (an expanded tensor). */
em_status em_copy_(em_tensor *dst, const em_tensor *src);
em_status em_fill_(em_tensor *dst, em_scalar value);
/* A copy with independent storage. Dense non-overlapping tensors keep their
** strides (PyTorch's preserve_format); others come out contiguous. */
em_status em_clone(const em_tensor *t, em_tensor **out);
/* t itself (a new reference) when contiguous, else a contiguous copy. */
em_status em_contiguous(const em_tensor *t, em_tensor **out);
/* t itself when dtype and device already match and copy is 0; else a new
** tensor holding t's values converted. */
em_status em_to(const em_tensor *t, em_dtype dt, em_device dev, int copy,
                em_tensor **out);

/* Reads element at flat row-major position pos (0-based, < numel) as a
** double / as an int64 (integers and bool exactly). */
em_status em_get_f64(const em_tensor *t, int64_t pos, double *out);
em_status em_get_i64(const em_tensor *t, int64_t pos, int64_t *out);
/* Writes v (converted with the cast rules) at flat row-major position pos. */
em_status em_set_flat(em_tensor *t, int64_t pos, em_scalar v);

/* -- Autograd flags ------------------------------------------------------ */

int em_tensor_requires_grad(const em_tensor *t);
/* Only floating-point tensors can require gradients. */
em_status em_tensor_set_requires_grad(em_tensor *t, int on);

/* -- Views (view.c) -------------------------------------------------------- */

/* (end of Views) */

/* -- Creation and random numbers (creation.c, random.c) -------------------- */

/* (end of Creation and random numbers) */

/* -- Math: type promotion and elementwise ops (promote.c, cpu/elementwise.c) --- */

/* (end of Math: type promotion and elementwise ops) */

/* -- Reductions and linear algebra (cpu/reduce.c, cpu/linalg.c) ------------ */

/* Dims are 1-based, negative from the end. A list of dims (ndims > 0)
** reduces those; ndims <= 0 (or dims NULL) reduces every dim. keepdim keeps
** reduced dims with size 1. dtype < 0 means "the default for the op"; a
** dtype casts the input first (PyTorch's dtype= argument). */
typedef enum em_reduce_op {
  EM_REDUCE_SUM = 0,  /* ints and bool give int64 */
  EM_REDUCE_PROD,     /* ints and bool give int64 */
  EM_REDUCE_MEAN,     /* floating dtypes only */
  EM_REDUCE_AMAX,     /* NaN propagates; an empty reduced dim is an error */
  EM_REDUCE_AMIN,
  EM_REDUCE_ALL,      /* bool (uint8 for uint8 input) */
  EM_REDUCE_ANY,
  EM_REDUCE_NANSUM,   /* sum skipping NaN */
  EM_REDUCE_NANMEAN,  /* mean of the non-NaN values (floating only) */
  EM_REDUCE_COUNT_NONZERO  /* int64 */
} em_reduce_op;

em_status em_reduce(em_reduce_op op, const em_tensor *t, int ndims,
                    const int64_t *dims, int keepdim, int dtype, em_tensor **out);
/* var (take_sqrt 0) or std (1): sum((x - mean)^2) / max(0, N - correction). */
em_status em_var(const em_tensor *t, int ndims, const int64_t *dims,
                 double correction, int keepdim, int take_sqrt, em_tensor **out);
/* var/std and the mean in one pass (mean gets the input's dtype). */
em_status em_var_mean(const em_tensor *t, int ndims, const int64_t *dims,
                      double correction, int keepdim, int take_sqrt,
                      em_tensor **var, em_tensor **mean);
/* The vector p-norm over dims: p = 2, 1, 0 (count of nonzeros), +-inf, or
** any other real p. */
em_status em_norm(const em_tensor *t, double p, int ndims, const int64_t *dims,
                  int keepdim, int dtype, em_tensor **out);
em_status em_logsumexp(const em_tensor *t, int ndims, const int64_t *dims,
                       int keepdim, em_tensor **out);
/* max/min along one dim: values and 1-based int64 indices (first extreme;
** NaN counts as the extreme). values may be NULL (argmax/argmin). */
em_status em_max_dim(const em_tensor *t, int64_t dim, int keepdim, int is_min,
                     em_tensor **values, em_tensor **indices);
/* argmax/argmin (is_min): over the flattened tensor when has_dim is 0. */
em_status em_argmax(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int is_min, em_tensor **out);
/* cummax / cummin (is_min) along dim: running extremes and the 1-based
** position where each was reached (the last of equal values; each NaN
** takes over and stays, as PyTorch). */
em_status em_cumextreme(const em_tensor *t, int64_t dim, int is_min,
                        em_tensor **values, em_tensor **indices);
/* softmax / log_softmax (log) along dim, computed in double. */
em_status em_softmax(const em_tensor *t, int64_t dim, int log, int dtype,
                     em_tensor **out);
/* cumsum / cumprod (prod) along dim; ints and bool give int64. */
em_status em_cumulative(const em_tensor *t, int64_t dim, int prod, int dtype,
                        em_tensor **out);
/* A stable sort along dim: values and 1-based int64 indices. NaN sorts as
** the largest value. */
em_status em_sort(const em_tensor *t, int64_t dim, int descending,
                  em_tensor **values, em_tensor **indices);
/* The k largest (or smallest) along dim, in sorted order. */
em_status em_topk(const em_tensor *t, int64_t k, int64_t dim, int largest,
                  em_tensor **values, em_tensor **indices);
/* The k-th smallest (1-based k) along dim, values and 1-based indices. */
em_status em_kthvalue(const em_tensor *t, int64_t k, int64_t dim, int keepdim,
                      em_tensor **values, em_tensor **indices);
/* The lower median along dim (values, indices), or of the flattened tensor
** when has_dim is 0 (indices may then be NULL). NaN is the median of a lane
** holding one, unless ignore_nan (nanmedian). */
em_status em_median(const em_tensor *t, int has_dim, int64_t dim, int keepdim,
                    int ignore_nan, em_tensor **values, em_tensor **indices);
/* Sorted unique values of the flattened tensor; inverse (t's shape, 1-based
** positions into values) and counts are made when asked (non-NULL). */
em_status em_unique(const em_tensor *t, em_tensor **values, em_tensor **inverse,
                    em_tensor **counts);
/* Same shape and equal values (NaN is unequal to everything). */
em_status em_equal(const em_tensor *a, const em_tensor *b, int *result);
/* |a - b| <= atol + rtol * |b| elementwise (broadcasting), as a bool tensor;
** equal infinities are close; NaNs are close to each other iff equal_nan. */
em_status em_isclose(const em_tensor *a, const em_tensor *b, double rtol,
                     double atol, int equal_nan, em_tensor **out);
em_status em_allclose(const em_tensor *a, const em_tensor *b, double rtol,
                      double atol, int equal_nan, int *result);

/* Linear algebra (cpu/linalg.c). Operands must share dtype and device.
** float32/float64 run on OpenBLAS; float16/bfloat16 compute in float32 and
** round once; integers use a blocked int64 kernel that wraps in the dtype;
** bool is not supported. */
em_status em_matmul(const em_tensor *a, const em_tensor *b, em_tensor **out);
em_status em_mm(const em_tensor *a, const em_tensor *b, em_tensor **out);
em_status em_bmm(const em_tensor *a, const em_tensor *b, em_tensor **out);
em_status em_mv(const em_tensor *a, const em_tensor *v, em_tensor **out);
em_status em_dot(const em_tensor *a, const em_tensor *b, em_tensor **out);
em_status em_outer(const em_tensor *a, const em_tensor *b, em_tensor **out);
/* beta * input + alpha * (m1 @ m2); input broadcasts to the product's
** shape; with beta == 0 input is not read (NaN in it does not propagate). */
em_status em_addmm(const em_tensor *input, const em_tensor *m1, const em_tensor *m2,
                   double beta, double alpha, em_tensor **out);
em_status em_addmv(const em_tensor *input, const em_tensor *m, const em_tensor *v,
                   double beta, double alpha, em_tensor **out);
em_status em_baddbmm(const em_tensor *input, const em_tensor *b1, const em_tensor *b2,
                     double beta, double alpha, em_tensor **out);
/* x @ W^T + b (b may be NULL). */
em_status em_linear(const em_tensor *x, const em_tensor *w, const em_tensor *b,
                    em_tensor **out);
/* The number of threads OpenBLAS uses for float GEMMs (its own pool, apart
** from the engine's OpenMP threads); n < 1 is taken as 1. A thread-count
** setting for the whole engine should set this too. */
void em_blas_set_num_threads(int n);
int em_blas_get_num_threads(void);

/* (end of Reductions and linear algebra) */

/* -- The index family and assembling (cpu/select.c, assemble.c) ------------ */

/* (end of The index family and assembling) */

/* -- Interop: DLPack, .npy, serialization (dlpack.c, npy.c, serialize.c) --- */

/* (end of Interop: DLPack, .npy, serialization) */

#ifdef __cplusplus
}
#endif
#endif
