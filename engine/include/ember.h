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

/* (end of Reductions and linear algebra) */

/* -- The index family and assembling (cpu/select.c, assemble.c) ------------ */

/* (end of The index family and assembling) */

/* -- Interop: DLPack, .npy, serialization (dlpack.c, npy.c, serialize.c) --- */

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

/* (end of Interop: DLPack, .npy, serialization) */

#ifdef __cplusplus
}
#endif
#endif
