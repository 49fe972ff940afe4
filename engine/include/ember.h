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
/* The largest element (complex128): buffers that hold one element. */
enum { EM_MAX_ELEM_BYTES = 16 };

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
/* Sets this thread's message and returns code: for a host's callback the
** engine calls (a custom backward) to report its own failure. */
em_status em_set_error(em_status code, const char *msg);

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
  EM_COMPLEX64,   /* two float32: real, imaginary (docs/dtypes.md) */
  EM_COMPLEX128,  /* two float64 */
  EM_NUM_DTYPES
} em_dtype;

typedef enum em_dtype_kind {
  EM_KIND_BOOL = 0,
  EM_KIND_INT = 1,
  EM_KIND_FLOAT = 2,
  EM_KIND_COMPLEX = 3
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

/* A scalar as dt's element bytes (at most 16: EM_MAX_ELEM_BYTES) with the cast rules of
** docs/dtypes.md: what writing v into a tensor of dtype dt stores. */
void em_scalar_to_bytes(em_scalar v, em_dtype dt, void *out);

/* -- Devices ------------------------------------------------------------ */

/* EM_META: PyTorch's meta device: tensors with sizes, strides and dtype
** and no data; every op computes its result's metadata and no values
** (docs/architecture.md). */
typedef enum em_device_type { EM_CPU = 0, EM_CUDA = 1, EM_META = 2 } em_device_type;

typedef struct em_device {
  em_device_type type;
  int index;  /* 0 for the CPU and meta */
} em_device;

em_device em_cpu(void);
em_device em_meta(void);
int em_device_equal(em_device a, em_device b);
/* 1 when this build has CUDA and the machine a driver and a device
** (engine/src/cuda/runtime.c; docs/cuda.md). */
int em_cuda_available(void);
/* "cpu", "meta", "cuda:0" into buf (at least 24 bytes); returns buf. */
const char *em_device_str(em_device d, char *buf, size_t n);
/* 1 when the device's tensors hold values (every device but meta). */
int em_device_has_data(em_device d);

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
** storages made by the engine's allocator (the process's, and this OS
** thread's: allocated minus freed on it), and a per-thread hook called
** (a) when an allocation would take this thread's live bytes past this
** thread's soft limit (em_set_soft_limit sets the calling thread's), and
** (b) with failed = 1 when an allocation failed, after which the allocation
** is retried once. The hook may release tensors (run a collector); it must
** not call back into the engine operation in progress. */
typedef void (*em_pressure_hook)(void *ctx, size_t requested, int failed);
size_t em_memory_live_bytes(void);
size_t em_memory_thread_live_bytes(void);
/* Bytes this OS thread has allocated since it started (never decreases):
** a host's collector hook measures its garbage rate with it. */
uint64_t em_memory_thread_allocated_bytes(void);
void em_set_pressure_hook(em_pressure_hook hook, void *ctx);
void em_set_soft_limit(size_t bytes);
/* The limit, and a floor it follows this thread's live bytes down to:
** while live * 2 < limit, tensors freed (outside the hook too) lower the
** limit to max(live * 2, floor). em_set_soft_limit(b) is (b, b). */
void em_set_soft_limits(size_t limit, size_t floor);
size_t em_get_soft_limit(void);
/* The cache of freed large blocks (docs/memory.md): bytes it holds now (not
** live), freeing all of them, and how many large requests it served/missed. */
size_t em_memory_cached_bytes(void);
void em_memory_empty_cache(void);
void em_memory_cache_counts(long *hits, long *misses);

/* -- Tensors ------------------------------------------------------------ */

typedef struct em_tensor em_tensor;

void em_tensor_retain(em_tensor *t);
void em_tensor_release(em_tensor *t);
int em_tensor_refcount(const em_tensor *t);
/* Released tensor headers and the smallest storages (data of 64 bytes or
** less) are reused per OS thread (at most 8192 of each kept; freed at thread
** exit; none kept under AddressSanitizer). Trim frees the calling thread's;
** count says how many headers it holds. */
void em_tensor_cache_trim(void);
int em_tensor_cache_count(void);

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
/* EM_OK when t's values can be read (it is not a meta tensor); else the
** shared message "op: a meta tensor has no data". */
em_status em_tensor_check_values(const char *op, const em_tensor *t);
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
/* t takes the geometry in place (as_strided_); refused for a tensor that
** requires grad while grad mode is on (the change is not recorded). */
em_status em_as_strided_(em_tensor *t, int ndim, const int64_t *sizes, const int64_t *strides,
                         int64_t offset);
/* PyTorch's resize_: t takes sizes with contiguous strides at its offset
** (the same sizes keep its strides), its storage grown where too small
** (every tensor on it sees the grown bytes; wrapped memory is refused).
** Refused for a tensor that requires grad. */
em_status em_resize_(em_tensor *t, int ndim, const int64_t *sizes);
/* PyTorch's set_: t takes src's storage, offset, sizes and strides (same
** dtype and device); em_set_storage_ a storage and a geometry (strides
** NULL: contiguous), growing the storage where it is too small, as PyTorch
** 1.13. A leaf that requires grad is refused in grad mode, and so is set_
** where t or the source requires grad (no derivative). */
em_status em_set_(em_tensor *t, const em_tensor *src);
em_status em_set_storage_(em_tensor *t, em_storage *s, int64_t offset, int ndim,
                          const int64_t *sizes, const int64_t *strides);
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
/* A new tensor with t's sizes, dtype dt (t's when dt < 0), on t's device,
** laid out as PyTorch's preserve_format lays it out: t's strides when t is
** dense and non-overlapping, else dense with t's order of dimensions. */
em_status em_empty_like(const em_tensor *t, int dt, em_tensor **out);
/* The same with dtype and device given; contiguous != 0 asks for
** row-major strides (memory_format = "contiguous"). */
em_status em_empty_like_on(const em_tensor *t, em_dtype dt, em_device dev, int contiguous,
                           em_tensor **out);

/* -- Copies ------------------------------------------------------------- */

/* Copies src into dst, broadcasting src to dst's shape and casting. dst
** may not have internal overlap (an expanded tensor). */
em_status em_copy_(em_tensor *dst, const em_tensor *src);
em_status em_fill_(em_tensor *dst, em_scalar value);
/* Writes a computed result into a caller's out= tensor (op names the
** operation in errors): same dtype, the result's shape (an empty out is
** resized), and no autograd history (out= is not differentiable). */
em_status em_write_out(const char *op, const em_tensor *result, em_tensor *out);
/* A copy with independent storage. Dense non-overlapping tensors keep their
** strides exactly, those of size-1 dims included (PyTorch's
** preserve_format); others come out contiguous. */
em_status em_clone(const em_tensor *t, em_tensor **out);
/* A copy with independent storage and exactly the row-major strides
** (PyTorch's clone(memory_format=torch.contiguous_format)). */
em_status em_clone_contiguous(const em_tensor *t, em_tensor **out);
/* t itself (a new reference) when contiguous, else a contiguous copy. */
em_status em_contiguous(const em_tensor *t, em_tensor **out);
/* t itself when dtype and device already match and copy is 0; else a new
** tensor holding t's values converted. */
/* Autocast (docs/amp.md): per thread and device type, PyTorch's
** torch.autocast state. While enabled, the ops on the device's lists cast
** their floating inputs (never float64) to dtype (matmul/conv family) or to
** float32 (losses, prod; on cuda also reductions, softmax, layer_norm and
** the exp/log family). dtype: bfloat16 on the cpu, float16 or bfloat16 on
** cuda. */
em_status em_autocast_set(em_device_type d, int enabled, em_dtype dtype);
int em_autocast_enabled(em_device_type d, em_dtype *dtype);
em_status em_to(const em_tensor *t, em_dtype dt, em_device dev, int copy,
                em_tensor **out);

/* Reads element at flat row-major position pos (0-based, < numel) as a
** double / as an int64 (integers and bool exactly). */
em_status em_get_f64(const em_tensor *t, int64_t pos, double *out);
em_status em_get_i64(const em_tensor *t, int64_t pos, int64_t *out);
/* Writes v (converted with the cast rules) at flat row-major position pos. */
em_status em_set_flat(em_tensor *t, int64_t pos, em_scalar v);
/* Complex elements at flat position pos: (real, imaginary); a real dtype
** reads as (value, 0) and takes only a zero imaginary part. */
em_status em_get_complex(const em_tensor *t, int64_t pos, double out[2]);
em_status em_set_complex(em_tensor *t, int64_t pos, double re, double im);

/* -- Complex (ops/complex.c, docs/dtypes.md) ------------------------------ */

/* The complex dtype for values of dtype dt (float64 -> complex128, any other
** real dtype -> complex64; a complex dtype is itself). */
em_dtype em_complex_of(em_dtype dt);
/* Views: (..., 2) of the value dtype over a complex tensor's storage, and
** back (last dim 2 with stride 1, the other strides and the offset even). */
em_status em_view_as_real(const em_tensor *t, em_tensor **out);
em_status em_view_as_complex(const em_tensor *t, em_tensor **out);
/* part 1: the real part, 2: the imaginary part, as views (t.real, t.imag). */
em_status em_complex_part(const em_tensor *t, int part, em_tensor **out);
/* complex(real, imag): float32/float64 tensors of one dtype, broadcast. */
em_status em_complex_new(const em_tensor *re, const em_tensor *im, em_tensor **out);
em_status em_conj(const em_tensor *t, em_tensor **out);
em_status em_angle(const em_tensor *t, em_tensor **out);
/* The discrete Fourier transform of complex x along dim (1-based), exponent
** sign -1 when forward, every value times fct, as a new contiguous tensor
** (ops/fft.c; T.fft is lua/ember/fft.lua over it). */
em_status em_fft_c2c(const em_tensor *x, int64_t dim, int forward, double fct,
                     em_tensor **out);
/* The same transform in place on y, which must be contiguous, complex and
** not require grad (no autograd is recorded): for a result the caller made
** and owns, as the later dims of fftn/fft2 (lua/ember/fft.lua). */
em_status em_fft_c2c_(em_tensor *y, int64_t dim, int forward, double fct);
/* The forward transform of real x (float32/float64) along dim: its first
** n / 2 + 1 frequencies (complex64/complex128), times fct, contiguous. */
em_status em_fft_r2c(const em_tensor *x, int64_t dim, double fct, em_tensor **out);
/* The same into out (rfft's out=): written in place when out is a
** contiguous tensor of the result's dtype, shape and device that shares
** no storage with x and takes no part in autograd; otherwise computed
** fresh and written as em_write_out writes (an empty out is resized). */
em_status em_fft_r2c_out(const em_tensor *x, int64_t dim, double fct, em_tensor *out);

/* -- Autograd flags ------------------------------------------------------ */

int em_tensor_requires_grad(const em_tensor *t);
/* Only floating-point tensors can require gradients. */
em_status em_tensor_set_requires_grad(em_tensor *t, int on);

/* -- Views (view.c) -------------------------------------------------------- */

/* Every function here except em_reshape/em_flatten (which copy when no view
** is possible) and em_flip (always a copy) returns a new tensor sharing t's
** storage: only metadata is written. Dims and positions are 1-based;
** negative ones count from the end. */

/* Elements start..start+length-1 of dim (start may be negative; start may be
** size+1 when length is 0). */
em_status em_narrow(const em_tensor *t, int64_t dim, int64_t start,
                    int64_t length, em_tensor **out);
/* Position index of dim; the dim is removed. */
em_status em_select(const em_tensor *t, int64_t dim, int64_t index,
                    em_tensor **out);
em_status em_transpose(const em_tensor *t, int64_t dim0, int64_t dim1,
                       em_tensor **out);
/* t() for tensors of at most 2 dims (0-d and 1-d come back as aliases). */
em_status em_t(const em_tensor *t, em_tensor **out);
/* All dims reversed (the T property). */
em_status em_reverse_dims(const em_tensor *t, em_tensor **out);
/* The last two dims swapped (the mT property); needs ndim >= 2. */
em_status em_mT(const em_tensor *t, em_tensor **out);
/* dims: a permutation of the n = ndim dims. */
em_status em_permute(const em_tensor *t, int n, const int64_t *dims,
                     em_tensor **out);
/* Moves dims src[i] to positions dst[i]; the others keep their order. */
em_status em_movedim(const em_tensor *t, int n, const int64_t *src,
                     const int64_t *dst, em_tensor **out);
/* The strides a view of (old sizes, old strides) as new_sizes would have,
** by PyTorch's stride-compatibility rule. Returns 1 and fills new_strides
** when a view is possible, 0 otherwise. new_sizes has no -1. */
int em_view_strides(int old_ndim, const int64_t *old_sizes,
                    const int64_t *old_strides, int new_ndim,
                    const int64_t *new_sizes, int64_t *new_strides);
/* sizes may hold one -1 (inferred). An error when the strides forbid it. */
/* t:view(dtype): the same bytes as another dtype (PyTorch's view(dtype));
** not differentiable. */
em_status em_view_dtype(const em_tensor *t, em_dtype dt, em_tensor **out);
em_status em_view(const em_tensor *t, int ndim, const int64_t *sizes,
                  em_tensor **out);
/* A view when em_view_strides allows it, else a contiguous copy. */
em_status em_reshape(const em_tensor *t, int ndim, const int64_t *sizes,
                     em_tensor **out);
/* Dims start..end merged into one (by em_reshape). A 0-d tensor gives [1]. */
em_status em_flatten(const em_tensor *t, int64_t start, int64_t end,
                     em_tensor **out);
/* Dim dim split into sizes (one -1 allowed); a view. */
em_status em_unflatten(const em_tensor *t, int64_t dim, int n,
                       const int64_t *sizes, em_tensor **out);
/* Removes the listed dims that have size 1 (others are left alone, as in
** PyTorch); dims == NULL removes every size-1 dim. */
em_status em_squeeze(const em_tensor *t, int n, const int64_t *dims,
                     em_tensor **out);
/* Inserts a size-1 dim at position dim (1..ndim+1, or negative). */
em_status em_unsqueeze(const em_tensor *t, int64_t dim, em_tensor **out);
/* Broadcasts to sizes (stride 0 on expanded dims; -1 keeps a size). */
em_status em_expand(const em_tensor *t, int ndim, const int64_t *sizes,
                    em_tensor **out);
/* em_expand under the name broadcast_to (its messages say so). */
em_status em_broadcast_to(const em_tensor *t, int ndim, const int64_t *sizes,
                          em_tensor **out);
/* Slices of length size every step elements along dim, as a new last dim. */
em_status em_unfold(const em_tensor *t, int64_t dim, int64_t size,
                    int64_t step, em_tensor **out);
/* The diagonal of dims dim1, dim2 (removed) as a new last dim; offset > 0
** is above the main diagonal, < 0 below. */
em_status em_diagonal(const em_tensor *t, int64_t offset, int64_t dim1,
                      int64_t dim2, em_tensor **out);
/* A contiguous copy with the order of the listed dims reversed. */
em_status em_flip(const em_tensor *t, int n, const int64_t *dims,
                  em_tensor **out);

/* -- Index expressions (index.c) -----------------------------------------
** t[items] as DESIGN §3 describes, built by a binding from a script's key.
** INT selects (the dim goes), RANGE keeps the dim with first..last
** inclusive by step (> 0), clamped like a Python slice; FULL is the whole
** dim, NEWAXIS inserts a size-1 dim, ELLIPSIS stands for the dims no item
** names; TENSOR is an advanced index (int64/int32 positions, or a bool
** mask covering as many dims as it has). Positions are 1-based. */
typedef enum em_index_kind {
  EM_INDEX_INT = 0,
  EM_INDEX_RANGE = 1,
  EM_INDEX_FULL = 2,
  EM_INDEX_NEWAXIS = 3,
  EM_INDEX_ELLIPSIS = 4,
  EM_INDEX_TENSOR = 5
} em_index_kind;

typedef struct em_index_item {
  em_index_kind kind;
  int64_t first;   /* INT: the position; RANGE: the first position */
  int64_t last;    /* RANGE: the last position (inclusive) */
  int64_t step;    /* RANGE: > 0 */
  const em_tensor *tensor;  /* TENSOR: borrowed */
} em_index_item;

/* A view for basic items; a copy when any item is a tensor. */
em_status em_index_get(const em_tensor *t, int n, const em_index_item *items,
                       em_tensor **out);
/* Writes value (broadcast and cast) into t[items]. */
em_status em_index_put_(em_tensor *t, int n, const em_index_item *items,
                        const em_tensor *value);
/* Fills t[items] with a scalar. */
em_status em_index_fill_scalar_(em_tensor *t, int n, const em_index_item *items,
                                em_scalar value);
/* PyTorch's index_put_: indices[k] (NULL for a whole dim) index dim k;
** accumulate adds instead of writing (repeated positions add up). */
em_status em_index_put_tensors_(em_tensor *t, int n, const em_tensor *const *indices,
                                const em_tensor *values, int accumulate);

/* (end of Views) */

/* -- Creation and random numbers (creation.c, random.c) -------------------- */

/* Ranges. Values are PyTorch's: arange is half-open [start, end) with
** ceil((end - start) / step) elements; integer dtypes compute in int64
** (start, step truncated toward zero), floating dtypes in double, each
** element rounded once. linspace/logspace use PyTorch's symmetric formula
** (the first half counts up from start, the second half down from end).
** bool is not accepted. */
em_status em_arange(em_scalar start, em_scalar end, em_scalar step, em_dtype dt,
                    em_device dev, em_tensor **out);
em_status em_linspace(double start, double end, int64_t steps, em_dtype dt,
                      em_device dev, em_tensor **out);
em_status em_logspace(double start, double end, int64_t steps, double base,
                      em_dtype dt, em_device dev, em_tensor **out);
/* n x m with ones on the main diagonal (m < 0 means m = n). */
em_status em_eye(int64_t n, int64_t m, em_dtype dt, em_device dev,
                 em_tensor **out);

/* The random generator (random.c, docs/random.md): Philox4x32-10, keyed by
** the 64-bit seed. An operation over n elements serves L of them from each
** 128-bit block (L = 4, 2 or 1 by sampler and dtype): element i (row-major)
** takes lane i % L of the block at counter (offset + i / L, draw, 0), and
** the offset then advances by ceil(n / L). So the same seed gives the same
** numbers on every machine, for any layout and any thread count. One
** generator per process. */
typedef struct em_rng_state {
  uint64_t seed;
  uint64_t offset;  /* counters consumed since the seed was set */
} em_rng_state;

void em_manual_seed(uint64_t seed);      /* offset back to 0 */
uint64_t em_initial_seed(void);
/* Seeds from the operating system's entropy (a value below 2^53, so a Lua
** number holds it exactly) and returns the seed. */
uint64_t em_seed(void);
em_rng_state em_get_rng_state(void);
void em_set_rng_state(em_rng_state s);
/* The raw generator: Philox4x32-10 of counter ctr under key. */
void em_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]);

/* In-place samplers; each fills every element of t (of any layout). */
em_status em_uniform_(em_tensor *t, double from, double to);     /* floats */
em_status em_normal_(em_tensor *t, double mean, double std);     /* floats */
em_status em_exponential_(em_tensor *t, double lambd);           /* floats */
/* Integers uniformly in [low, high), without modulo bias. */
em_status em_random_(em_tensor *t, int64_t low, int64_t high);
/* 1 with probability p (t any dtype but must not overlap itself). */
em_status em_bernoulli_(em_tensor *t, double p);
/* p broadcast to t's shape, each in [0, 1]. */
em_status em_bernoulli_tensor_(em_tensor *t, const em_tensor *p);
/* A random permutation of 1..n (1-based positions, docs/random.md). */
em_status em_randperm(int64_t n, em_dtype dt, em_device dev, em_tensor **out);
/* n 1-based category positions per row of probs (1-d or 2-d, floating,
** non-negative, finite, with a positive sum); int64 of shape [n] or
** [rows, n]. Without replacement, n may not exceed the number of
** categories; as in PyTorch, once the categories of non-zero probability
** are used up the zero-probability ones follow in index order. */
em_status em_multinomial(const em_tensor *probs, int64_t n, int replacement,
                         em_tensor **out);

/* (end of Creation and random numbers) */

/* -- Math: type promotion and elementwise ops (promote.c, cpu/elementwise.c) --- */

/* Type promotion, as PyTorch's result_type. Categories bool < integer <
** floating; within the winning category, dimensioned tensors beat 0-d
** tensors, which beat scalars; 0-d tensors and scalars only lift the
** category (a float scalar makes an integer tensor default_float).
** em_promote_types is the symmetric table of two dtypes (float16 and
** bfloat16 meet in float32; uint8 and int8 meet in int16). */
em_dtype em_promote_types(em_dtype a, em_dtype b);
/* PyTorch's can_cast: everything except floating -> integer/bool and
** non-bool -> bool. */
int em_can_cast(em_dtype from, em_dtype to);
/* PyTorch's name of a dtype in messages ("Float", "Long", "Bool"). */
const char *em_dtype_pt_name(em_dtype dt);

/* An operand of an elementwise op: a tensor, or (tensor == NULL) a scalar
** (a Lua number: integral or floating by its value, or a boolean). */
typedef struct em_operand {
  const em_tensor *tensor;
  em_scalar scalar;
} em_operand;

/* The dtype PyTorch's result_type gives for these operands; float scalars
** count as default_float (the default dtype, float32 unless changed). */
em_dtype em_result_type(int n, const em_operand *ops, em_dtype default_float);

/* Threads used by large kernels (OpenMP; 1 when built without it). Results
** of elementwise ops do not depend on it. n < 1 is an error. */
em_status em_set_num_threads(int n);
int em_get_num_threads(void);

/* The elementwise ops. Arity: binary ops take inputs (a, b); unary (x);
** EM_OP_LERP (start, end, weight); EM_OP_CLAMP (x, min, max), where a
** missing bound is any operand with has_min/has_max = 0. */
typedef enum em_ew_op {
  /* binary */
  EM_OP_ADD = 0, EM_OP_SUB, EM_OP_MUL, EM_OP_DIV, EM_OP_REMAINDER, EM_OP_FMOD,
  EM_OP_POW, EM_OP_ATAN2, EM_OP_MAXIMUM, EM_OP_MINIMUM,
  EM_OP_EQ, EM_OP_NE, EM_OP_LT, EM_OP_LE, EM_OP_GT, EM_OP_GE,
  EM_OP_LOGICAL_AND, EM_OP_LOGICAL_OR, EM_OP_LOGICAL_XOR,
  EM_OP_BITWISE_AND, EM_OP_BITWISE_OR, EM_OP_BITWISE_XOR,
  EM_OP_LSHIFT, EM_OP_RSHIFT,
  /* unary */
  EM_OP_NEG, EM_OP_ABS, EM_OP_SIGN, EM_OP_SQRT, EM_OP_RSQRT, EM_OP_SQUARE,
  EM_OP_RECIPROCAL, EM_OP_EXP, EM_OP_EXP2, EM_OP_EXPM1, EM_OP_LOG, EM_OP_LOG2,
  EM_OP_LOG10, EM_OP_LOG1P, EM_OP_SIN, EM_OP_COS, EM_OP_TAN, EM_OP_ASIN,
  EM_OP_ACOS, EM_OP_ATAN, EM_OP_SINH, EM_OP_COSH, EM_OP_TANH, EM_OP_SIGMOID,
  EM_OP_RELU, EM_OP_GELU, EM_OP_SILU, EM_OP_SOFTPLUS, EM_OP_ERF, EM_OP_FLOOR,
  EM_OP_CEIL, EM_OP_ROUND, EM_OP_TRUNC, EM_OP_FRAC, EM_OP_NAN_TO_NUM,
  EM_OP_ISNAN, EM_OP_ISINF, EM_OP_ISFINITE, EM_OP_LOGICAL_NOT, EM_OP_BITWISE_NOT,
  /* ternary */
  EM_OP_LERP, EM_OP_CLAMP,
  /* special functions (issue 19): binary */
  EM_OP_XLOGY, EM_OP_XLOG1PY, EM_OP_LOGADDEXP, EM_OP_LOGADDEXP2, EM_OP_HYPOT,
  EM_OP_COPYSIGN, EM_OP_NEXTAFTER, EM_OP_GCD, EM_OP_LCM, EM_OP_HEAVISIDE, EM_OP_ZETA,
  /* unary; EM_OP_POLYGAMMA reads polygamma_n, EM_OP_LOGIT has_eps/eps */
  EM_OP_ERFC, EM_OP_ERFINV, EM_OP_LGAMMA, EM_OP_DIGAMMA, EM_OP_POLYGAMMA, EM_OP_I0,
  EM_OP_I0E, EM_OP_I1, EM_OP_I1E, EM_OP_NDTR, EM_OP_NDTRI, EM_OP_LOG_NDTR,
  EM_OP_SINC, EM_OP_ENTR, EM_OP_LOGIT,
  /* unary: the inverse hyperbolic functions */
  EM_OP_ASINH, EM_OP_ACOSH, EM_OP_ATANH,
  /* special functions: gammainc/gammaincc (binary, a then x), erfcx and
  ** the Bessel functions of the first and second kind (unary; not
  ** differentiable, as PyTorch's) */
  EM_OP_GAMMAINC, EM_OP_GAMMAINCC, EM_OP_ERFCX, EM_OP_BESSEL_J0, EM_OP_BESSEL_J1,
  EM_OP_BESSEL_Y0, EM_OP_BESSEL_Y1,
  /* more special functions, none differentiable (PyTorch 1.13's): the
  ** modified Bessel functions of the second kind, plain and scaled by e^x,
  ** Airy's Ai and the spherical Bessel j0 (unary); the orthogonal
  ** polynomials (binary, x then the degree n) */
  EM_OP_BESSEL_K0, EM_OP_BESSEL_K1, EM_OP_BESSEL_K0E, EM_OP_BESSEL_K1E, EM_OP_AIRY_AI, EM_OP_SPHERICAL_J0,
  EM_OP_CHEB_T, EM_OP_CHEB_U, EM_OP_CHEB_V, EM_OP_CHEB_W, EM_OP_SCHEB_T, EM_OP_SCHEB_U,
  EM_OP_SCHEB_V, EM_OP_SCHEB_W, EM_OP_HERMITE_H, EM_OP_HERMITE_HE, EM_OP_LAGUERRE_L, EM_OP_LEGENDRE_P,
  EM_OP_COUNT
} em_ew_op;

typedef enum em_rounding {
  EM_ROUND_NONE = 0,   /* true division */
  EM_ROUND_TRUNC = 1,
  EM_ROUND_FLOOR = 2
} em_rounding;

/* Options; start from em_ew_defaults(). */
typedef struct em_ew_opts {
  em_scalar alpha;         /* add/sub: a + alpha*b (default 1) */
  em_rounding rounding;    /* div */
  int gelu_tanh;           /* gelu: the tanh approximation */
  double beta, threshold;  /* softplus (1, 20) */
  int64_t decimals;        /* round */
  int has_nan, has_posinf, has_neginf;  /* nan_to_num replacements ... */
  double nan, posinf, neginf;           /* ... default 0, dtype max, lowest */
  int has_min, has_max;    /* clamp: which bounds are given */
  em_dtype default_float;  /* what integer inputs of float ops become */
  int64_t polygamma_n;     /* polygamma: the order n >= 0 */
  int has_eps;             /* logit: clamp the input to [eps, 1 - eps] */
  double eps;
  const char *name;        /* the op's name in messages (NULL: em_ew_op_name) */
} em_ew_opts;

em_ew_opts em_ew_defaults(void);
const char *em_ew_op_name(em_ew_op op);  /* "add", "bitwise_left_shift" */
int em_ew_op_arity(em_ew_op op);         /* 1, 2 or 3 */

/* Runs op over the inputs, broadcast together. With out == NULL the result
** is a new tensor laid out like the inputs (PyTorch's TensorIterator rule:
** dims ordered by the inputs' strides). With out != NULL the result is
** written (cast) into out: out must have the broadcast shape, unless it has
** no elements, in which case it is resized; its dtype must accept the
** result type (em_can_cast); an in-place op passes inputs[0].tensor as out.
** An out with internal overlap (an expanded tensor) is an error; inputs
** that partly overlap out are read from a snapshot. *result (may be NULL
** when out is given) receives a new reference to the result. */
em_status em_elementwise(em_ew_op op, int n, const em_operand *inputs,
                         const em_ew_opts *opts, em_tensor *out,
                         em_tensor **result);
/* Shorthands with default options: a op b, op(x). */
em_status em_binary(em_ew_op op, const em_tensor *a, const em_tensor *b,
                    em_tensor **result);
em_status em_unary(em_ew_op op, const em_tensor *x, em_tensor **result);

/* (end of Math: type promotion and elementwise ops) */

/* -- Reductions (ops/reduce.c, softmax.c, cumulative.c, sort.c, compare.c)
** and linear algebra (cpu/linalg.c) ------------------------------------------ */

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
/* Unique slices along dim (1-based): values has t's shape with dim's size
** the number of distinct slices, in PyTorch's order (lexicographic after
** swapping dim with the first dim); inverse (size of
** dim, 1-based) and counts as em_unique. A slice holding NaN is distinct. */
em_status em_unique_dim(const em_tensor *t, int64_t dim, em_tensor **values,
                        em_tensor **inverse, em_tensor **counts);
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
/* LAPACK primitives of T.linalg (ops/linalg_lapack.c; lua/ember/linalg.lua
** builds the public functions and their derivatives on them). float32/
** float64/complex64/complex128 matrices (lstsq and lu_solve: real only)
** batched over the leading dims; results are fresh,
** column-major per matrix. check != 0: a numerical failure is PyTorch's
** error naming the 1-based batch element; check == 0: info (int32, the
** batch shape) is returned instead. None records autograd. */
em_status em_linalg_lu_factor(const em_tensor *A, int check, em_tensor **LU, em_tensor **pivots,
                              em_tensor **info);
em_status em_linalg_lu_solve(const em_tensor *LU, const em_tensor *pivots, const em_tensor *B,
                             int trans, em_tensor **X);
/* Bunch-Kaufman LDL of symmetric (Hermitian when herm, complex) A's lower
** triangle: LD (column-major, strict upper zeroed), LAPACK's int32 pivots,
** info; check: a singular D raises (1: named linalg.ldl_factor, 2:
** linalg.ldl_factor_ex). ldl_solve: A X = B from them. */
em_status em_linalg_ldl_factor(const em_tensor *A, int herm, int check, em_tensor **LD,
                               em_tensor **pivots, em_tensor **info);
em_status em_linalg_ldl_solve(const em_tensor *LD, const em_tensor *pivots, const em_tensor *B,
                              int herm, em_tensor **X);
/* check: 0 none, 1 solve's message, 2 inv's; or'ed with EM_SOLVE_FACTOR_A
** or EM_SOLVE_FACTOR_AT, which matrix LAPACK factors (a singular A's info
** and inf/NaN depend on it); neither: PyTorch 1.13's choice, A^T where A is
** contiguous and real, else A. A singular A is solved anyway (inf/NaN in X;
** inv: getrs on the identity), as PyTorch's solve_ex and inv_ex. */
enum { EM_SOLVE_FACTOR_A = 4, EM_SOLVE_FACTOR_AT = 8 };
em_status em_linalg_solve(const em_tensor *A, const em_tensor *B, int check, em_tensor **X,
                          em_tensor **info);
em_status em_linalg_inv(const em_tensor *A, int check, em_tensor **X, em_tensor **info);
em_status em_linalg_cholesky(const em_tensor *A, int check, em_tensor **L, em_tensor **info);
em_status em_linalg_solve_triangular(const em_tensor *A, const em_tensor *B, int upper, int left,
                                     int unitriangular, em_tensor **X);
em_status em_linalg_geqrf(const em_tensor *A, em_tensor **QR, em_tensor **tau);
em_status em_linalg_householder_product(const em_tensor *A, const em_tensor *tau,
                                        em_tensor **Q);
em_status em_linalg_svd(const em_tensor *A, int full_matrices, int compute_uv, em_tensor **U,
                        em_tensor **S, em_tensor **Vh);
em_status em_linalg_eigh(const em_tensor *A, int upper, int compute_v, em_tensor **L,
                         em_tensor **V);
/* L [..., n] eigenvalues, V [..., n, n] right eigenvectors (compute_v; unit
** columns as LAPACK's geev gives them): complex64 for float32/complex64
** input, complex128 for float64/complex128; inf/NaN input is an error. */
em_status em_linalg_eig(const em_tensor *A, int compute_v, em_tensor **L, em_tensor **V);
/* driver: 0 gels, 1 gelsy, 2 gelsd, 3 gelss; rank/S NULL where the driver
** gives none; R is B's whole solution buffer [..., max(m,n), k] */
em_status em_linalg_lstsq(const em_tensor *A, const em_tensor *B, double rcond, int driver,
                          em_tensor **X, em_tensor **rank, em_tensor **S, em_tensor **R);
em_status em_matmul(const em_tensor *a, const em_tensor *b, em_tensor **out);
em_status em_mm(const em_tensor *a, const em_tensor *b, em_tensor **out);
/* op ("mm", "bmm" or "matmul") of two 2-D or two 3-D float operands into
** out when out already is the result (shape, dtype, device, contiguous,
** sharing no storage with them) and nothing is recorded or autocast: the
** GEMM writes out and *done = 1. Else *done = 0 and out is untouched. */
em_status em_matmul_into(const char *op, const em_tensor *a, const em_tensor *b,
                         em_tensor *out, int *done);
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

/* -- The index family (ops/gather_scatter.c, masked.c, index.c) ------------ */

/* Index tensors are int64 or int32 and hold 1-based positions; a negative
** value counts from the end (-1 is the last). Every index is checked before
** anything is read or written: an out-of-range value fails the call with
** "op: index 5 is out of bounds for dimension 1 with size 4" and leaves
** the destination of an in-place op unchanged. In-place ops (names ending
** in _) require src to have self's dtype, as PyTorch does. */

/* How scatter-like writes combine with what is already there. */
typedef enum em_scatter_mode {
  EM_SCATTER_NONE = 0,   /* plain assignment (duplicates: one of them wins) */
  EM_SCATTER_SUM = 1,    /* "add"/"sum" */
  EM_SCATTER_PROD = 2,   /* "multiply"/"prod" */
  EM_SCATTER_MEAN = 3,   /* scatter_reduce only */
  EM_SCATTER_AMAX = 4,   /* scatter_reduce only */
  EM_SCATTER_AMIN = 5    /* scatter_reduce only */
} em_scatter_mode;

/* t's slices at positions index (a 1-d or 0-d index) along dim; a copy. */
em_status em_index_select(const em_tensor *t, int64_t dim,
                          const em_tensor *index, em_tensor **out);
/* The elements of t where mask (bool) is true, t and mask broadcast
** together, in row-major order; a 1-d copy. */
em_status em_masked_select(const em_tensor *t, const em_tensor *mask,
                           em_tensor **out);
/* t read as 1-d in row-major order at positions index; index's shape. */
em_status em_take(const em_tensor *t, const em_tensor *index, em_tensor **out);
/* Writes src (index's element count) at the row-major positions index of
** t; accumulate adds (duplicates sum) instead of assigning. */
em_status em_put_(em_tensor *t, const em_tensor *index, const em_tensor *src,
                  int accumulate);
/* out[i][j][k] = t[index[i][j][k]][j][k] for dim 1 (and so on); index has
** t's ndim and index.size(d) <= t.size(d) for d != dim. */
em_status em_gather(const em_tensor *t, int64_t dim, const em_tensor *index,
                    em_tensor **out);
/* t[index[i][j][k]][j][k] (op)= src[i][j][k] for dim 1; src may be NULL
** to write value instead. reduce: NONE, SUM or PROD. */
em_status em_scatter_(em_tensor *t, int64_t dim, const em_tensor *index,
                      const em_tensor *src, em_scalar value, em_scatter_mode reduce);
/* scatter_reduce: reduce is any em_scatter_mode but NONE; include_self = 0
** combines only the scattered values at the positions they reach. */
em_status em_scatter_reduce_(em_tensor *t, int64_t dim, const em_tensor *index,
                             const em_tensor *src, em_scatter_mode reduce,
                             int include_self);
/* The index_* family: index is 1-d (or 0-d); src has t's shape with
** index's length along dim. index_add_ adds alpha * src (duplicates sum). */
em_status em_index_fill_(em_tensor *t, int64_t dim, const em_tensor *index,
                         em_scalar value);
em_status em_index_copy_(em_tensor *t, int64_t dim, const em_tensor *index,
                         const em_tensor *src);
em_status em_index_add_(em_tensor *t, int64_t dim, const em_tensor *index,
                        const em_tensor *src, em_scalar alpha);
/* mask (bool) broadcasts to t's shape. masked_scatter_ takes source's
** elements in row-major order, one per true mask position. */
em_status em_masked_fill_(em_tensor *t, const em_tensor *mask, em_scalar value);
em_status em_masked_scatter_(em_tensor *t, const em_tensor *mask,
                             const em_tensor *source);
/* The 1-based positions of t's nonzero elements (NaN counts as nonzero),
** one row each, in row-major order: int64 [count, ndim]. */
em_status em_nonzero(const em_tensor *t, em_tensor **out);
/* cond ? a : b elementwise; cond (bool), a and b broadcast together; the
** result has dtype dt (the caller promotes; a and b are cast to it). */
em_status em_where(const em_tensor *cond, const em_tensor *a,
                   const em_tensor *b, em_dtype dt, em_tensor **out);

/* -- Assembling (ops/shape.c) -- */

/* Concatenates n tensors along dim into a new tensor of their promoted
** dtype. 1-d empty tensors are skipped (PyTorch's legacy rule). */
em_status em_cat(int64_t n, const em_tensor *const *ts, int64_t dim,
                 em_tensor **out);
/* Joins n tensors of one shape along a new dim (1..ndim+1 or negative). */
em_status em_stack(int64_t n, const em_tensor *const *ts, int64_t dim,
                   em_tensor **out);
em_status em_hstack(int64_t n, const em_tensor *const *ts, em_tensor **out);
em_status em_vstack(int64_t n, const em_tensor *const *ts, em_tensor **out);
em_status em_dstack(int64_t n, const em_tensor *const *ts, em_tensor **out);
/* Views of t along dim of the given sizes (they must sum to the dim's
** size): outs receives n new references, sharing t's storage. */
em_status em_split_with_sizes(const em_tensor *t, int64_t dim, int64_t n,
                              const int64_t *sizes, em_tensor **outs);
/* The sizes of split(split_size) / chunk(chunks) / tensor_split(sections)
** along a dim of size dim_size: *n parts, written to sizes when sizes is
** not NULL (call once with NULL to learn *n). */
em_status em_split_sizes(int64_t dim_size, int64_t split_size, int64_t *n,
                         int64_t *sizes);
em_status em_chunk_sizes(int64_t dim_size, int64_t chunks, int64_t *n,
                         int64_t *sizes);
em_status em_sections_sizes(int64_t dim_size, int64_t sections, int64_t *n,
                            int64_t *sizes);
/* tensor_split at npos 1-based positions (split before each; clamped like
** slice bounds; negative from the end): npos + 1 views. */
em_status em_tensor_split_at(const em_tensor *t, int64_t dim, int64_t npos,
                             const int64_t *positions, em_tensor **outs);
/* The size(dim) views t.select(dim, i), i = 1..size. */
em_status em_unbind(const em_tensor *t, int64_t dim, em_tensor **outs);
/* PyTorch's repeat (nreps >= ndim) and tile (any nreps). */
em_status em_repeat(const em_tensor *t, int nreps, const int64_t *reps,
                    em_tensor **out);
em_status em_tile(const em_tensor *t, int nreps, const int64_t *reps,
                  em_tensor **out);
/* Repeats each slice along dim (dim 0: of t flattened) repeats[i] times;
** repeats is an integer tensor of one element or of size(dim) elements. */
em_status em_repeat_interleave(const em_tensor *t, const em_tensor *repeats,
                               int64_t dim, em_tensor **out);
/* The same with one count for every position (a Lua number): the result's
** shape is known without reading values, so it works on every device. */
em_status em_repeat_interleave_int(const em_tensor *t, int64_t repeats, int64_t dim,
                                   em_tensor **out);
/* Rolls t by shifts[i] along dims[i]; ndims 0: t flattened, by shifts[0]. */
em_status em_roll(const em_tensor *t, int nshifts, const int64_t *shifts,
                  int ndims, const int64_t *dims, em_tensor **out);

/* (end of The index family and assembling) */

/* -- Interop: DLPack, .npy, safetensors, serialization (src/io/) ---------- */

/* Frees memory the interop calls below hand out as plain bytes (npy
** encodings, the metadata blob of em_load). NULL is accepted. */
void em_free(void *p);

/* DLPack (dlpack.c). The struct is DLPack's DLManagedTensor (Debian's
** libdlpack-dev, <dlpack/dlpack.h>, DLPACK_VERSION 60 = v0.6): include that
** header to look inside. dtypes map to DLPack codes both ways: bool is code 6
** (kDLBool of DLPack >= 0.8; 0.6 has no bool), uint8 kDLUInt, int8..int64
** kDLInt, float16/32/64 kDLFloat, bfloat16 kDLBfloat; lanes are always 1.
**
** em_to_dlpack: a DLManagedTensor describing t (shape, strides in elements,
** byte_offset 0, data = the first element). It holds a reference to t's
** storage until the consumer calls its deleter, exactly once; the deleter
** frees the struct itself. CPU tensors only.
**
** em_from_dlpack: a tensor over the producer's memory, without copying. On
** success ember owns m: m->deleter(m) is called exactly once, when the last
** view of the storage goes (immediately if this call's tensor is released).
** On failure (an unsupported dtype, lanes != 1, a device other than the CPU,
** negative strides, a misaligned pointer) ember does NOT take m: the caller
** still owns it and must call its deleter. */
struct DLManagedTensor;
em_status em_to_dlpack(const em_tensor *t, struct DLManagedTensor **out);
em_status em_from_dlpack(struct DLManagedTensor *m, em_tensor **out);

/* NumPy's .npy (npy.c): format versions 1.0, 2.0 and 3.0 on input; bool,
** uint8, int8..int64, float16/32/64; C or Fortran order; either byte order
** (converted to the host's on load). A Fortran-order array loads as a tensor
** with column-major strides (no copy on mmap). Writing produces version 1.0
** (2.0 for huge headers) exactly as numpy.save does: C order, or Fortran
** order for a tensor that is Fortran- but not C-contiguous; other layouts are
** written as a contiguous copy. bfloat16 has no NumPy dtype: an error. */
typedef enum em_npy_mode {
  EM_NPY_READ = 0,       /* read into fresh memory */
  EM_NPY_MMAP_COPY = 1,  /* map the file copy-on-write: writes stay in memory */
  EM_NPY_MMAP_SHARED = 2 /* map the file shared, writable: writes reach the file */
} em_npy_mode;
em_status em_npy_load(const char *path, em_npy_mode mode, em_tensor **out);
/* Decodes a whole .npy image held in memory (copies the data). */
em_status em_npy_decode(const void *buf, size_t len, em_tensor **out);
em_status em_npy_save(const char *path, const em_tensor *t);
/* The .npy image of t in a buffer from malloc (free with em_free). */
em_status em_npy_encode(const em_tensor *t, void **buf, size_t *len);

/* NumPy's .npz: a zip archive of .npy members, stored or deflated (zlib),
** with zip64 records (numpy writes them). Loading reads every member whose
** name ends in ".npy"; names are reported without that suffix. */
typedef struct em_npz em_npz;
em_status em_npz_load(const char *path, em_npz **out);
em_status em_npz_load_buffer(const void *buf, size_t len, em_npz **out);
int64_t em_npz_count(const em_npz *z);
const char *em_npz_name(const em_npz *z, int64_t i);     /* 0-based i */
em_tensor *em_npz_tensor(const em_npz *z, int64_t i);    /* borrowed */
void em_npz_free(em_npz *z);
/* Writes n tensors as members "<names[i]>.npy"; compress = 1 deflates them
** (numpy.savez_compressed), 0 stores them (numpy.savez). */
em_status em_npz_save(const char *path, int64_t n, const char *const *names,
                      const em_tensor *const *tensors, int compress);

/* Hugging Face's .safetensors (safetensors.c; docs/serialization.md):
** BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64 (the format's other
** dtypes are an error naming the tensor). Loading checks the header
** strictly (size, UTF-8, JSON, duplicate names, offsets tiling the byte
** buffer, sizes); mode is em_npy_load's: EM_NPY_READ copies each tensor,
** EM_NPY_MMAP_COPY / EM_NPY_MMAP_SHARED make every tensor a view of one
** storage over the file's mapping (copy-on-write / shared). Tensors come in
** the order of their data; metadata ("__metadata__", strings to strings)
** in key order. Saving writes the reference implementation's layout:
** tensors sorted by descending dtype alignment then name, any strides
** written as contiguous bytes, the header padded with spaces to a multiple
** of 8. Names and metadata are NUL-terminated UTF-8. */
typedef struct em_safetensors em_safetensors;
em_status em_safetensors_load(const char *path, em_npy_mode mode, em_safetensors **out);
em_status em_safetensors_decode(const void *buf, size_t len, em_safetensors **out);
int64_t em_safetensors_count(const em_safetensors *f);
const char *em_safetensors_name(const em_safetensors *f, int64_t i);    /* 0-based i */
em_tensor *em_safetensors_tensor(const em_safetensors *f, int64_t i);   /* borrowed */
int64_t em_safetensors_meta_count(const em_safetensors *f);
const char *em_safetensors_meta_key(const em_safetensors *f, int64_t i);
const char *em_safetensors_meta_value(const em_safetensors *f, int64_t i);
void em_safetensors_free(em_safetensors *f);
em_status em_safetensors_save(const char *path, int64_t n, const char *const *names,
                              const em_tensor *const *tensors, int64_t nmeta,
                              const char *const *keys, const char *const *values);

/* ember's own format (serialize.c; docs/serialization.md). A file holds a
** metadata blob (opaque to the engine: the Lua binding keeps the shape of a
** nested table there) and a list of tensors. Storages are written once
** each, so tensors that shared a storage when saved share one after
** loading. Every size in the file is checked against the file's length
** before anything is allocated. */
em_status em_save(const char *path, int64_t ntensors,
                  const em_tensor *const *tensors, const void *meta,
                  size_t metalen);
typedef struct em_loaded em_loaded;
em_status em_load(const char *path, em_loaded **out);
em_status em_load_buffer(const void *buf, size_t len, em_loaded **out);
int64_t em_loaded_count(const em_loaded *f);
em_tensor *em_loaded_tensor(const em_loaded *f, int64_t i);  /* borrowed, 0-based */
const void *em_loaded_meta(const em_loaded *f, size_t *len);
void em_loaded_free(em_loaded *f);

/* PyTorch checkpoints (torch.c; docs/serialization.md "PyTorch checkpoints"):
** the zip files torch.save writes (PyTorch >= 1.6), read by a pickle machine
** that runs no code (an allow-list of opcodes and globals; anything else is
** refused, naming it), and written as PyTorch 1.13 writes them. The Python
** value is an em_pytree: nodes numbered from 0, each a None, bool, int,
** float, str, bytes, tuple, list, dict, OrderedDict, tensor or dtype. A node
** may be reached twice (the pickle's memo) and containers may form cycles.
** Tensors that shared a storage in the file share one after loading. */
typedef enum em_pykind {
  EM_PY_NONE = 0, EM_PY_BOOL, EM_PY_INT, EM_PY_FLOAT, EM_PY_STR, EM_PY_BYTES,
  EM_PY_TUPLE, EM_PY_LIST, EM_PY_DICT, EM_PY_ODICT, EM_PY_TENSOR, EM_PY_DTYPE,
  EM_PY_OTHER  /* a Python class or function left as a value; s names it */
} em_pykind;
typedef struct em_pyvalue {
  em_pykind kind;
  int64_t i;          /* INT; BOOL (0 or 1) */
  double f;           /* FLOAT */
  const char *s;      /* STR, BYTES (len bytes, NUL-terminated); OTHER */
  size_t len;
  int64_t n;          /* containers: items (tuple, list) or pairs (dicts) */
  em_tensor *tensor;  /* TENSOR (borrowed) */
  em_dtype dtype;     /* DTYPE */
} em_pyvalue;
typedef struct em_pytree em_pytree;
em_status em_pytree_new(em_pytree **out);
void em_pytree_free(em_pytree *t);
/* A new node holding v (containers start empty; a tensor is retained). */
em_status em_pytree_add(em_pytree *t, const em_pyvalue *v, int64_t *node);
/* Appends item to a container; a dict takes a key, then its value. */
em_status em_pytree_append(em_pytree *t, int64_t container, int64_t item);
em_status em_pytree_get(const em_pytree *t, int64_t node, em_pyvalue *v);
/* Item i of a container (dicts: 2k is key k, 2k+1 its value); -1 if none. */
int64_t em_pytree_item(const em_pytree *t, int64_t node, int64_t i);
int64_t em_pytree_root(const em_pytree *t);
void em_pytree_set_root(em_pytree *t, int64_t node);
em_status em_torch_load(const char *path, em_pytree **out);
em_status em_torch_load_buffer(const void *buf, size_t len, em_pytree **out);
/* Writes the tree from its root: CPU tensors (each storage once) and meta
** tensors; the archive's folder is the file's name without its extension. */
em_status em_torch_save(const char *path, const em_pytree *t);

/* (end of Interop: DLPack, .npy, safetensors, serialization) */

/* -- nn: convolution, pooling, normalisation, losses (ops/conv.c, ops/nn.c,
** ops/norm.c, ops/loss.c; the kernels: core/kern_nn.h) -------------------------
** Forward kernels with separate backward kernels. Floating inputs only
** (float32/float64; a mix is an error), all on one device; results are new
** contiguous tensors of the input's dtype on its device. Shapes follow PyTorch (batched NCHW); class ids and
** embedding ids are 1-based. pairs (stride, padding, dilation, kernel) are
** {height, width}.
** Autograd (docs/nn.md): each forward records its own graph node (PyTorch's
** name: ConvolutionBackward0, NllLossBackward0, ...) in grad mode when an
** input requires grad, so a C host gets gradients from em_backward. The
** backward kernels of conv, pooling, embedding and nll_loss record nodes
** too (they are differentiable ops: second derivatives); the fused ones
** (layer/batch norm, cross_entropy, mse/l1/bce) refuse to run in grad mode
** on tensors that require grad (the forward's recorded backward uses
** engine ops there instead). */
typedef enum em_reduction {
  EM_REDUCTION_NONE = 0,
  EM_REDUCTION_MEAN = 1,
  EM_REDUCTION_SUM = 2
} em_reduction;

/* input [N, C, H, W], weight [O, C/groups, kH, kW], bias [O] or NULL ->
** [N, O, oH, oW] with oH = (H + 2 pad - dil (kH - 1) - 1) / stride + 1. */
em_status em_conv2d(const em_tensor *input, const em_tensor *weight,
                    const em_tensor *bias, const int64_t stride[2],
                    const int64_t padding[2], const int64_t dilation[2],
                    int64_t groups, em_tensor **out);
/* input [N, C, L], weight [O, C/groups, k]: conv2d over a width of 1. */
em_status em_conv1d(const em_tensor *input, const em_tensor *weight,
                    const em_tensor *bias, int64_t stride, int64_t padding,
                    int64_t dilation, int64_t groups, em_tensor **out);
/* Gradients of em_conv2d given grad_out [N, O, oH, oW]. input_sizes /
** weight_sizes are the 4 sizes of the forward's input / weight. */
em_status em_conv2d_backward_input(const em_tensor *grad_out, const em_tensor *weight,
                                   const int64_t input_sizes[4], const int64_t stride[2],
                                   const int64_t padding[2], const int64_t dilation[2],
                                   int64_t groups, em_tensor **grad_input);
em_status em_conv2d_backward_weight(const em_tensor *grad_out, const em_tensor *input,
                                    const int64_t weight_sizes[4], const int64_t stride[2],
                                    const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups, em_tensor **grad_weight);
/* The sum of grad_out over N, oH, oW: [O]. */
em_status em_conv2d_backward_bias(const em_tensor *grad_out, em_tensor **grad_bias);

/* Max pooling over [N, C, H, W] (padding pads with -inf, at most half the
** kernel). indices (int64, may be NULL) hold the 1-based row-major position
** of each maximum inside its H x W plane (NaN counts as the maximum). */
em_status em_max_pool2d(const em_tensor *input, const int64_t kernel[2],
                        const int64_t stride[2], const int64_t padding[2],
                        const int64_t dilation[2], int ceil_mode,
                        em_tensor **out, em_tensor **indices);
/* grad_input (input_sizes, zeros) with grad_out added at the indices. */
em_status em_max_pool2d_backward(const em_tensor *grad_out, const em_tensor *indices,
                                 const int64_t input_sizes[4], em_tensor **grad_input);
/* Average pooling; count_include_pad counts padded cells in the divisor;
** divisor_override != 0 replaces the divisor (a negative one too, as
** PyTorch); 0: none. */
em_status em_avg_pool2d(const em_tensor *input, const int64_t kernel[2],
                        const int64_t stride[2], const int64_t padding[2],
                        int ceil_mode, int count_include_pad,
                        int64_t divisor_override, em_tensor **out);
em_status em_avg_pool2d_backward(const em_tensor *grad_out, const int64_t input_sizes[4],
                                 const int64_t kernel[2], const int64_t stride[2],
                                 const int64_t padding[2], int ceil_mode,
                                 int count_include_pad, int64_t divisor_override,
                                 em_tensor **grad_input);

/* Rows of weight [num, dim] at the 1-based ids (any shape, int64/int32):
** ids.shape .. [dim]. padding_idx (1-based; 0 for none): the row whose
** gradient stays zero. */
em_status em_embedding(const em_tensor *weight, const em_tensor *ids, int64_t padding_idx,
                       em_tensor **out);
/* [num, dim] zeros with grad_out's rows added at the ids (duplicates sum);
** rows of padding_idx (1-based; 0 for none) get no gradient. */
em_status em_embedding_backward(const em_tensor *grad_out, const em_tensor *ids,
                                int64_t num_weights, int64_t padding_idx,
                                em_tensor **grad_weight);

/* Layer norm over the last normalized_ndim dims; weight/bias (that shape)
** may be NULL. mean/rstd (may be NULL) get the per-row statistics with
** size 1 on the normalized dims, as PyTorch saves them. */
em_status em_layer_norm(const em_tensor *input, int normalized_ndim,
                        const em_tensor *weight, const em_tensor *bias, double eps,
                        em_tensor **out, em_tensor **mean, em_tensor **rstd);
/* Any of grad_input/grad_weight/grad_bias may be NULL (not computed). */
em_status em_layer_norm_backward(const em_tensor *grad_out, const em_tensor *input,
                                 int normalized_ndim, const em_tensor *mean,
                                 const em_tensor *rstd, const em_tensor *weight,
                                 em_tensor **grad_input, em_tensor **grad_weight,
                                 em_tensor **grad_bias);
/* Batch norm over [N, C, ...] per channel. training: batch statistics,
** and running_mean/var (may be NULL) move by momentum toward the batch mean
** and the unbiased batch variance; otherwise running stats are used.
** save_mean/save_invstd (may be NULL): the statistics used ([C]). */
em_status em_batch_norm(const em_tensor *input, const em_tensor *weight,
                        const em_tensor *bias, em_tensor *running_mean,
                        em_tensor *running_var, int training, double momentum,
                        double eps, em_tensor **out, em_tensor **save_mean,
                        em_tensor **save_invstd);
em_status em_batch_norm_backward(const em_tensor *grad_out, const em_tensor *input,
                                 const em_tensor *weight, const em_tensor *save_mean,
                                 const em_tensor *save_invstd, int training,
                                 em_tensor **grad_input, em_tensor **grad_weight,
                                 em_tensor **grad_bias);

/* Zeroes each element with probability p (from the generator) and scales
** the rest by 1 / (1 - p). mask (may be NULL) receives the factor per
** element (0 or 1 / (1 - p)); the backward is grad_out * mask. */
em_status em_dropout(const em_tensor *input, double p, em_tensor **out, em_tensor **mask);

/* Scaled dot-product attention (ops/attention.c, docs/attention.md):
** softmax(query key^T * scale + mask) value with query (..., L, E), key
** (..., S, E), value (..., S, Ev) of one float dtype and the same batch
** dims -> (..., L, Ev), by one fused kernel that never holds the L x S
** scores whole. attn_mask (may be NULL): bool (true keeps) or of query's
** dtype (added), broadcastable to (..., L, S); is_causal keeps key j <=
** query i and excludes a mask; scale NaN means 1 / sqrt(E); dropout_p in
** [0, 1] drops probabilities with the generator. logsumexp (may be NULL):
** each row's log-sum-exp of the scores, (..., L). */
em_status em_scaled_dot_product_attention(const em_tensor *query, const em_tensor *key,
                                          const em_tensor *value, const em_tensor *attn_mask,
                                          double dropout_p, int is_causal, double scale,
                                          em_tensor **out, em_tensor **logsumexp);
/* Its gradients from the forward's out and logsumexp; seed and offset name
** the forward's dropout draw (the generator's seed and the first block it
** reserved). Any of the three gradients may be NULL. */
em_status em_scaled_dot_product_attention_backward(
    const em_tensor *grad_out, const em_tensor *query, const em_tensor *key,
    const em_tensor *value, const em_tensor *out, const em_tensor *logsumexp,
    const em_tensor *attn_mask, double dropout_p, int is_causal, double scale, uint64_t seed,
    uint64_t offset, em_tensor **grad_query, em_tensor **grad_key, em_tensor **grad_value);
/* One layer and direction of a recurrent net (ops/rnn.c; docs/rnn.md):
** PyTorch's RNN (tanh, relu), LSTM (gates i f g o, optional projection) and
** GRU (gates r z n, n = tanh(W_in x + b_in + r (W_hn h + b_hn))). The
** operands in[EM_RNN_NOPS]: x [L, N, I]; h0 [N, P] and c0 [N, H] (LSTM)
** or NULL (zeros); w_ih [G H, I], w_hh [G H, P], b_ih and b_hh [G H] or
** NULL; w_hr [P, H] (LSTM's proj_size P) or NULL (P = H). lengths (int64,
** [N], on the CPU, counts in 0..L) or NULL: sequence n runs over its first
** lengths[n] steps (outputs after them are 0; reverse starts at its own
** last step; its state is the one after its last step). out [L, N, P],
** h_n [N, P], c_n [N, H] (LSTM only; else may be NULL). One node records
** the whole loop; its backward runs the reverse time loop in C (not itself
** differentiable: create_graph through it is refused). */
typedef enum em_rnn_mode { EM_RNN_TANH, EM_RNN_RELU, EM_RNN_LSTM, EM_RNN_GRU } em_rnn_mode;
enum {
  EM_RNN_X, EM_RNN_H0, EM_RNN_C0, EM_RNN_W_IH, EM_RNN_W_HH, EM_RNN_B_IH, EM_RNN_B_HH,
  EM_RNN_W_HR, EM_RNN_NOPS
};
em_status em_rnn_layer(em_rnn_mode mode, const em_tensor *const *in, const em_tensor *lengths,
                       int reverse, em_tensor **out, em_tensor **h_n, em_tensor **c_n);
/* The fused backward from the forward's workspace (the node saves it):
** grads[i] (i an EM_RNN_* operand) is computed when want has bit i and the
** operand is given; grad_out, grad_hn, grad_cn may be NULL (zeros). */
em_status em_rnn_layer_backward(em_rnn_mode mode, const em_tensor *const *in,
                                const em_tensor *lengths, int reverse,
                                const em_tensor *workspace, const em_tensor *grad_out,
                                const em_tensor *grad_hn, const em_tensor *grad_cn, int want,
                                em_tensor **grads);

/* nll_loss: input [N, C] (or [C], or [N, C, d...]) of log-probabilities,
** target int64/int32 class ids 1..C (shape without the C dim); weight [C]
** or NULL; targets equal to ignore_index contribute nothing (and to no
** mean's denominator). total_weight (may be NULL) gets the mean's
** denominator (0-d) for the backward. */
em_status em_nll_loss(const em_tensor *input, const em_tensor *target,
                      const em_tensor *weight, em_reduction reduction,
                      int64_t ignore_index, em_tensor **out, em_tensor **total_weight);
em_status em_nll_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                               const em_tensor *target, const em_tensor *weight,
                               em_reduction reduction, int64_t ignore_index,
                               const em_tensor *total_weight, em_tensor **grad_input);
/* cross_entropy of logits: log_softmax over dim 2 (1 for 1-d input) then
** nll_loss, with label_smoothing in [0, 1]. A floating target of input's
** shape holds class probabilities instead of ids. */
em_status em_cross_entropy(const em_tensor *input, const em_tensor *target,
                           const em_tensor *weight, em_reduction reduction,
                           int64_t ignore_index, double label_smoothing,
                           em_tensor **out);
em_status em_cross_entropy_backward(const em_tensor *grad_out, const em_tensor *input,
                                    const em_tensor *target, const em_tensor *weight,
                                    em_reduction reduction, int64_t ignore_index,
                                    double label_smoothing, em_tensor **grad_input);
/* Pointwise losses: input and target broadcast together; grad_out is 0-d
** for MEAN/SUM, else of the broadcast shape. The backward gives the
** gradient for input (the target's is its negative for mse/l1). */
em_status em_mse_loss(const em_tensor *input, const em_tensor *target,
                      em_reduction reduction, em_tensor **out);
em_status em_mse_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                               const em_tensor *target, em_reduction reduction,
                               em_tensor **grad_input);
em_status em_l1_loss(const em_tensor *input, const em_tensor *target,
                     em_reduction reduction, em_tensor **out);
em_status em_l1_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                              const em_tensor *target, em_reduction reduction,
                              em_tensor **grad_input);
/* Binary cross entropy of probabilities (logs clamped at -100, as PyTorch);
** weight (may be NULL) broadcasts to input. */
em_status em_binary_cross_entropy(const em_tensor *input, const em_tensor *target,
                                  const em_tensor *weight, em_reduction reduction,
                                  em_tensor **out);
em_status em_binary_cross_entropy_backward(const em_tensor *grad_out,
                                           const em_tensor *input,
                                           const em_tensor *target,
                                           const em_tensor *weight,
                                           em_reduction reduction,
                                           em_tensor **grad_input);
/* Of logits, computed stably; pos_weight (may be NULL) weighs the positive
** term, broadcast along the last dim. */
em_status em_binary_cross_entropy_with_logits(const em_tensor *input,
                                              const em_tensor *target,
                                              const em_tensor *weight,
                                              const em_tensor *pos_weight,
                                              em_reduction reduction, em_tensor **out);
em_status em_binary_cross_entropy_with_logits_backward(
    const em_tensor *grad_out, const em_tensor *input, const em_tensor *target,
    const em_tensor *weight, const em_tensor *pos_weight, em_reduction reduction,
    em_tensor **grad_input);

/* (end of nn) */
/* -- Autograd (autograd.c, autograd/formulas.c; docs/autograd.md) ---------- */

/* Grad mode and inference mode, per thread (grad mode on, inference mode
** off by default). Ops record a node for backward only in grad mode, out of
** inference mode, and when an input requires grad: em_grad_enabled() says
** whether they record now, em_grad_mode() what grad mode is set to (an
** enable_grad inside inference mode sets it and records nothing, as
** PyTorch's InferenceMode). */
int em_grad_enabled(void);
int em_grad_mode(void);
void em_set_grad_enabled(int on);
int em_inference_mode(void);
void em_set_inference_mode(int on);

/* May `out` (an out= destination, not an in-place target) be written in
** the current mode? In grad mode out= is not differentiable: an out that
** requires grad is refused (PyTorch's message), and so is a view that may
** not be written in place (made under no_grad of a tensor that requires
** grad, a hooked module's output, one of split's views), as copy_ refuses
** it. EM_OK otherwise, and always outside grad mode. Every out= path asks
** before it writes (docs/math.md, "out="). */
em_status em_check_out(const char *op, const em_tensor *out);

/* t.grad: a new reference, or NULL. set_grad checks shape and dtype (g may
** be NULL to clear it). */
em_tensor *em_tensor_grad(const em_tensor *t);
em_status em_tensor_set_grad(em_tensor *t, em_tensor *g);
/* The name of t's grad_fn ("AddBackward0"), NULL for leaves. */
const char *em_tensor_grad_fn_name(const em_tensor *t);
/* Renames the grad_fn of t, a fresh result (the name is copied): a
** composite built from several ops names its last node as PyTorch names
** the op ("MedianBackward0"). An error for a leaf. */
em_status em_tensor_name_grad_fn(em_tensor *t, const char *name);
/* Marks t (a module output that a full backward hook watches) so that an
** in-place write to it in grad mode is refused. */
void em_tensor_mark_hook_view(em_tensor *t);
/* Anomaly mode (per thread): a backward fails naming the node whose
** gradient holds NaN. */
void em_set_detect_anomaly(int on);
int em_is_anomaly_enabled(void);
/* The i-th (0-based) next function of t's grad_fn: its name
** ("AccumulateGrad" for a leaf, NULL when that input needs no gradient) and
** input number. Returns 0 past the last. */
int em_tensor_grad_fn_next(const em_tensor *t, int i, const char **name, int *nr);
/* The graph as PyTorch walks it (grad_fn, next_functions): an opaque node
** handle that holds one reference, so the node, what it saved and the
** nodes after it stay alive while it is held. */
typedef struct em_node em_grad_fn;
/* t's grad_fn with a new reference; NULL for leaves. */
em_grad_fn *em_tensor_grad_fn(const em_tensor *t);
void em_grad_fn_retain(em_grad_fn *fn);
void em_grad_fn_release(em_grad_fn *fn); /* NULL is ignored */
const char *em_grad_fn_name(const em_grad_fn *fn);
/* Edge i (0-based) of fn; 0 past the last. Otherwise *next is the node
** the gradient flows to (a new reference) or NULL, *leaf the leaf whose
** .grad it accumulates into (a new reference) or NULL (both NULL: that
** input needs no gradient), *nr the input number (0-based). */
int em_grad_fn_next(const em_grad_fn *fn, int i, em_grad_fn **next, em_tensor **leaf, int *nr);
/* Leaves: tensors without a grad_fn (every tensor that does not require
** grad is a leaf). */
int em_tensor_is_leaf(const em_tensor *t);
/* Keep the gradient of a non-leaf in its .grad at the next backward. */
em_status em_tensor_retain_grad(em_tensor *t);
int em_tensor_retains_grad(const em_tensor *t);
/* requires_grad_ with PyTorch's rule: only leaves can be switched off. */
em_status em_tensor_requires_grad_(em_tensor *t, int on);
/* A new tensor sharing t's storage, without history or requires_grad. */
em_status em_detach(const em_tensor *t, em_tensor **out);
/* t itself loses its history and requires_grad. */
em_status em_detach_(em_tensor *t);

/* Backpropagates from tensors[0..n): grads[i] (NULL for a one-element
** tensor, meaning 1) is the gradient of tensors[i]; leaves that require grad
** accumulate into their .grad (and non-leaves that retain_grad). Without
** retain_graph the graph's saved tensors are freed; create_graph records the
** backward itself (higher-order derivatives). */
em_status em_backward(int n, em_tensor *const *tensors, em_tensor *const *grads,
                      int retain_graph, int create_graph);
/* The gradients of outputs w.r.t. inputs (returned in results[0..nin), new
** references; NULL for an unused input when allow_unused), without touching
** any .grad. */
em_status em_autograd_grad(int nout, em_tensor *const *outputs, em_tensor *const *grads,
                           int nin, const em_tensor *const *inputs, int retain_graph,
                           int create_graph, int allow_unused, em_tensor **results);

/* A differentiable op of the host's own (PyTorch's autograd.Function; the
** engine's own ops, nn included, record without it): after computing
** outputs from inputs (NULL entries allowed), record a node named name.
** backward receives the saved tensors (checked against in-place changes),
** the gradients of the outputs (zeros for outputs no gradient reached) and
** fills grad_inputs[0..nin) with new references (NULL: no gradient); it runs
** in grad mode when the backward is being recorded (create_graph), so a
** backward written with engine ops supports higher derivatives. Nothing is
** recorded outside grad mode or when no input requires grad. ctx belongs to
** the node from this call on (free_ctx, may be NULL, is called once, also
** when nothing is recorded or on failure). */
typedef em_status (*em_autograd_backward_fn)(void *ctx, int nsaved, em_tensor *const *saved,
                                             int nout, em_tensor *const *grad_outputs,
                                             int nin, em_tensor **grad_inputs);
em_status em_autograd_record(const char *name, int nin, const em_tensor *const *inputs,
                             int nout, em_tensor *const *outputs, int nsaved,
                             const em_tensor *const *saved, em_autograd_backward_fn backward,
                             void *ctx, void (*free_ctx)(void *ctx));

/* A leaf's post-accumulate-grad hook (PyTorch 2's
** register_post_accumulate_grad_hook): during a backward that accumulates
** into .grad (em_backward, not em_autograd_grad), fn(ctx, t) runs once per
** backward, after every gradient reaching t in it has been added to t's
** .grad, while the rest of the backward is still to run (DistributedDataParallel
** starts its all-reduce there). An error it returns stops the backward with
** its message. One hook per tensor: setting one frees the previous ctx
** (free_ctx, may be NULL; also called when the tensor is freed); fn NULL
** removes it. t must be a leaf that requires grad. */
/* Tensor hooks (t:register_hook): during a backward fn(ctx, grad, &out)
** runs on the gradient flowing to t: for a non-leaf, the summed gradient of
** t before t's grad_fn runs (and before a retained .grad takes it); for a
** leaf, the sum of this backward's gradients before they are added to
** .grad (backward only: autograd.grad's inputs take theirs unhooked). out
** left NULL keeps grad; a tensor there (a new reference) replaces it and
** must have grad's shape and dtype. One hook per tensor (fn NULL removes
** it); ctx is freed with free_ctx when replaced or when t (a leaf) or
** t's grad_fn is freed. */
typedef em_status (*em_tensor_hook_fn)(void *ctx, em_tensor *grad, em_tensor **out);
em_status em_tensor_set_hook(em_tensor *t, em_tensor_hook_fn fn, void *ctx,
                             void (*free_ctx)(void *ctx));
void *em_tensor_hook_ctx(const em_tensor *t, em_tensor_hook_fn fn);
typedef em_status (*em_grad_hook_fn)(void *ctx, em_tensor *t);
em_status em_tensor_set_grad_hook(em_tensor *t, em_grad_hook_fn fn, void *ctx,
                                  void (*free_ctx)(void *ctx));
/* The ctx of t's hook when that hook is fn; else NULL. */
void *em_tensor_grad_hook_ctx(const em_tensor *t, em_grad_hook_fn fn);

/* (end of Autograd) */

/* -- Optimizers (ops/optim.c, cpu/optim.c; docs/training.md) ----------------
** One fused, in-place update of a parameter p from its gradient g, with
** PyTorch 1.13's update rule for that optimizer (torch.optim, the
** single-tensor form), op for op in p's dtype. p, g and the state tensors
** share one shape, one floating dtype and one device. A state slot holding
** NULL is created (contiguous, p's shape, on p's device) and handed back through the slot (a new
** reference the caller owns); on failure the slots are left as they were.
** p and the state are written in place (their versions bumped); nothing is
** recorded by autograd. Option values are checked (finite lr, betas in
** [0, 1), eps >= 0, ...) with PyTorch's messages where it has them. */
typedef struct em_sgd_opts {
  double lr, momentum, dampening, weight_decay;
  int nesterov, maximize;
} em_sgd_opts;
/* momentum_buffer: used (and may be created) only when momentum != 0; may
** be NULL otherwise. A NULL buffer is this parameter's first step: the
** buffer becomes the step's direction, as torch.clone(d_p). */
em_status em_sgd_step(em_tensor *p, const em_tensor *g, em_tensor **momentum_buffer,
                      const em_sgd_opts *o);

/* Adam (decoupled = 0) and AdamW (decoupled = 1: the weight decay scales p
** by 1 - lr * weight_decay instead of joining the gradient). step is the
** step count including this one (1 on the first step); max_exp_avg_sq is
** used only with amsgrad (may be NULL otherwise). */
typedef struct em_adam_opts {
  double lr, beta1, beta2, eps, weight_decay;
  int amsgrad, maximize, decoupled;
} em_adam_opts;
em_status em_adam_step(em_tensor *p, const em_tensor *g, em_tensor **exp_avg,
                       em_tensor **exp_avg_sq, em_tensor **max_exp_avg_sq, int64_t step,
                       const em_adam_opts *o);

/* RMSprop: momentum_buffer is used when momentum > 0, grad_avg when
** centered (each may be NULL otherwise). */
typedef struct em_rmsprop_opts {
  double lr, alpha, eps, weight_decay, momentum;
  int centered, maximize;
} em_rmsprop_opts;
em_status em_rmsprop_step(em_tensor *p, const em_tensor *g, em_tensor **square_avg,
                          em_tensor **momentum_buffer, em_tensor **grad_avg,
                          const em_rmsprop_opts *o);

/* Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop (issue 18):
** PyTorch 1.13's single-tensor updates, op for op in p's dtype, through one
** entry. state[0..1] are the kind's state tensors (NULL: created, as
** PyTorch creates them, and handed back):
**   Adagrad  sum (made full of initial_accumulator_value), -
**   Adadelta square_avg, acc_delta       Adamax exp_avg, exp_inf
**   NAdam    exp_avg, exp_avg_sq         RAdam  exp_avg, exp_avg_sq
**   ASGD     ax, -                       Rprop  prev, step_size (made full of lr)
** step is the step count including this one. scalars is the kind's scalar
** state, read and written: NAdam {mu_product}; ASGD {eta, mu} (PyTorch
** keeps these as float32 0-d tensors: they are rounded to float32 here as
** there). maximize is refused by NAdam and RAdam (1.13 has none). */
typedef enum em_optim_kind {
  EM_OPTIM_ADAGRAD, EM_OPTIM_ADADELTA, EM_OPTIM_ADAMAX, EM_OPTIM_NADAM,
  EM_OPTIM_RADAM, EM_OPTIM_ASGD, EM_OPTIM_RPROP
} em_optim_kind;
typedef struct em_optim_opts {
  double lr, weight_decay, eps;
  double beta1, beta2;                 /* Adamax, NAdam, RAdam */
  double lr_decay, initial_accumulator_value; /* Adagrad */
  double rho;                          /* Adadelta */
  double momentum_decay;               /* NAdam */
  double lambd, alpha, t0;             /* ASGD */
  double etaminus, etaplus, step_size_min, step_size_max; /* Rprop */
  int maximize;
} em_optim_opts;
em_status em_optim_step(em_optim_kind kind, em_tensor *p, const em_tensor *g,
                        em_tensor **state, int64_t step, double *scalars,
                        const em_optim_opts *o);

/* Gathering (docs/optim.md, "One launch for many parameters"): between
** em_optim_gather_begin and em_optim_gather_end on one thread, the steps
** above check, make state and bump versions as always, but an update whose
** tensors are all contiguous is queued (its tensors held) and run with
** others of its kind in one call of the device's multi entry (on cuda one
** kernel launch): when the queue is full, when the next update cannot
** join it, and at em_optim_gather_end, which returns the first error of
** what it ran. The caller reads and writes none of the queued parameters
** and states in between (T.optim's step loop calls only the steps).
** em_optim_multi_calls counts the multi calls made in this process. */
void em_optim_gather_begin(void);
em_status em_optim_gather_end(void);
int64_t em_optim_multi_calls(void);

/* (end of Optimizers) */

#ifdef __cplusplus
}
#endif
/* -- CUDA (engine/src/cuda/runtime.c; docs/cuda.md) ----------------------
** Every call works in every build: without CUDA, or without a driver or
** device, the ones that need a device fail with a message naming op and
** saying why ("op: CUDA is not available (no CUDA driver or device found:
** cudaGetDeviceCount: ...)", "op: ember was built without CUDA ..."). */
int em_cuda_built(void);          /* 1 when this build has the CUDA backend */
int em_cuda_device_count(void);   /* 0 without a driver or device */
/* EM_OK when device (0-based) can be used now; else the reason, naming op.
** Also raises (once) the error of an earlier asynchronous kernel launch. */
em_status em_cuda_check(const char *op, int device);
typedef struct em_cuda_stream em_cuda_stream;  /* NULL: the device's default stream */
typedef struct em_cuda_event em_cuda_event;
em_status em_cuda_synchronize(const char *op, int device);
em_status em_cuda_stream_new(int device, int priority, em_cuda_stream **out);
void em_cuda_stream_free(em_cuda_stream *s);
int em_cuda_stream_device(const em_cuda_stream *s);
/* The current stream of device on this thread (NULL: the default one). */
em_status em_cuda_current_stream(int device, em_cuda_stream **out);
/* Makes s the current stream of its device on this thread; *prev the one before. */
em_status em_cuda_set_stream(int device, em_cuda_stream *s, em_cuda_stream **prev);
/* The current stream of device on this thread as the runtime's cudaStream_t
** (NULL: the default stream), for libraries that enqueue on it (NCCL). */
em_status em_cuda_raw_stream(const char *op, int device, void **out);
em_status em_cuda_stream_synchronize(int device, em_cuda_stream *s);
em_status em_cuda_stream_query(int device, em_cuda_stream *s, int *done);
em_status em_cuda_stream_wait_event(int device, em_cuda_stream *s, em_cuda_event *e);
em_status em_cuda_event_new(int device, int enable_timing, em_cuda_event **out);
void em_cuda_event_free(em_cuda_event *e);
em_status em_cuda_event_record(em_cuda_event *e, em_cuda_stream *s);
em_status em_cuda_event_synchronize(em_cuda_event *e);
em_status em_cuda_event_query(em_cuda_event *e, int *done);
em_status em_cuda_event_elapsed(em_cuda_event *start, em_cuda_event *end, double *ms);
typedef struct em_cuda_memstats {
  size_t allocated, max_allocated, reserved, max_reserved;
} em_cuda_memstats;
em_status em_cuda_memory_stats(const char *op, int device, em_cuda_memstats *out);
em_status em_cuda_reset_peak(const char *op, int device);
em_status em_cuda_empty_cache(const char *op);
/* TF32 tensor cores for float32 products on cuda (PyTorch's
** torch.backends.cuda.matmul.allow_tf32; off by default). */
void em_cuda_set_allow_tf32(int on);
int em_cuda_get_allow_tf32(void);
/* T.backends.cudnn (torch.backends.cudnn): conv2d on cuda through cuDNN
** (enabled, default on; off: im2col + cuBLAS), TF32 for float32 (default
** off: unlike PyTorch's default, float32 convolutions keep float32, as
** matmul's), deterministic algorithms only (default off), the fastest
** algorithm by timing each once per problem (benchmark, default off). Process-wide;
** every build keeps them. em_cuda_cudnn_version: cudnnGetVersion(), or 0
** when libcudnn cannot be loaded or ember was built without CUDA. */
typedef enum em_cudnn_setting {
  EM_CUDNN_ENABLED, EM_CUDNN_ALLOW_TF32, EM_CUDNN_DETERMINISTIC, EM_CUDNN_BENCHMARK
} em_cudnn_setting;
void em_cuda_cudnn_set(em_cudnn_setting what, int on);
int em_cuda_cudnn_get(em_cudnn_setting what);
int em_cuda_cudnn_version(void);
/* The seed of every device's generator (T.cuda.manual_seed). */
em_status em_cuda_manual_seed(const char *op, int device, uint64_t seed);
/* A CPU storage of nbytes in page-locked (pinned) host memory. */
em_status em_cuda_pinned_storage(const char *op, size_t nbytes, em_storage **out);
int em_storage_is_pinned(const em_storage *s);
/* t's storage is in use on stream s too (PyTorch's record_stream). */
em_status em_cuda_record_stream(em_tensor *t, em_cuda_stream *s);

#endif
