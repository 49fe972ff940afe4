/*
** core/core.h -- engine-private definitions: the storage and tensor structs,
** the dtype X-macro list, scalar conversions, and the error helpers.
**
** Invariants every engine file relies on:
** - A tensor holds exactly one reference to its storage, for its whole life.
** - sizes/strides/offset are in elements; every element a tensor can address
**   lies inside its storage (checked at construction, em_tensor_new).
** - numel is the product of sizes and never overflows int64 (checked by
**   em_numel_checked before any tensor exists).
*/
#ifndef EMBER_INTERNAL_H
#define EMBER_INTERNAL_H

#include "ember.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/* -- Objects ------------------------------------------------------------ */

struct em_storage {
  atomic_int refcount;
  void *data;            /* NULL when nbytes == 0 */
  size_t nbytes;
  em_device device;
  em_deleter deleter;    /* called once with (deleter_ctx, data, nbytes) */
  void *deleter_ctx;
  atomic_uint_least64_t version;  /* shared by every view of this storage */
  atomic_int ag_reinterpreted;    /* autograd recorded a view of it as another dtype
                                     (view_as_real/complex): in-place writes are refused */
};

/* Field order: everything em_tensor_release and the small-tensor paths
** read (refcount, storage, autograd, and for ndim <= 2 the sizes) lies in
** the first 64 bytes, so releasing a temporary that the collector frees
** late, on cold memory, misses one cache line rather than two. The Lua
** layer reads ndim, dtype, storage, offset and sizes through LuaJIT's FFI
** at offsets taken from this struct (C._layout, bindings/l_core.c). */
struct em_tensor {
  atomic_int refcount;
  int ndim;
  em_dtype dtype;
  bool requires_grad;
  /* a view made in no_grad mode of a tensor that requires grad (or of such a
  ** view): an in-place write to it in grad mode is refused (PyTorch's
  ** CreationMeta::NO_GRAD_MODE); autograd.c, EM_AG_GATHER/EM_AG_CALL */
  bool nograd_view;
  /* an output of a module with a full backward hook (an identity view that
  ** collects grad_output): in-place writes are refused in grad mode, as
  ** PyTorch's BackwardHookFunction outputs refuse them */
  bool hook_view;
  /* one of several views a single op returned (split, chunk, unbind) in
  ** grad mode, or a view of one: in-place writes are refused in grad mode
  ** (PyTorch's CreationMeta::MULTI_OUTPUT_NODE) */
  bool multi_view;
  em_storage *storage;   /* one reference, owned */
  void *autograd;        /* autograd metadata, an em_autograd_head first; NULL if none */
  /* Views of floating tensors made in grad mode: the tensor they view (one
  ** reference; never itself a view), and the storage version when their
  ** history was last set (autograd.c). In the header rather than in the
  ** autograd record so that a view costs no second allocation. */
  em_tensor *view_base;
  uint64_t view_version;
  int64_t offset;        /* storage offset, in elements */
  int64_t sizes[EM_MAX_DIMS];
  int64_t strides[EM_MAX_DIMS];  /* in elements; 0 on broadcast dims */
};

/* A descriptor on the stack of ndim sizes and strides from offset over
** t's storage, in t's dtype: no reference taken, no autograd state, no
** view flags. For handing a layout to the iterator or to em_copy_ within
** one call; never handed out, retained or released. */
static inline void em_stack_header(em_tensor *v, const em_tensor *t, int ndim,
                                   const int64_t *sizes, const int64_t *strides,
                                   int64_t offset) {
  memset(v, 0, sizeof *v);
  v->ndim = ndim;
  v->dtype = t->dtype;
  v->storage = t->storage;
  v->offset = offset;
  for (int i = 0; i < ndim; i++) {
    v->sizes[i] = sizes[i];
    v->strides[i] = strides[i];
  }
}

/* -- Per-thread pools of released blocks (pool.c) ----------------------- */

/* EM_POOL_TENSOR: em_tensor headers; EM_POOL_SMALL_STORAGE: inline storages
** whose data is at most EM_SMALL_STORAGE_BYTES (storage.c). */
enum { EM_POOL_TENSOR, EM_POOL_SMALL_STORAGE, EM_NUM_POOLS };
enum { EM_POOL_MAX = 8192, EM_SMALL_STORAGE_BYTES = 64 };
void *em_pool_get(int pool);             /* NULL: none kept, malloc one */
bool em_pool_put(int pool, void *block); /* false: not kept, free it */
void em_pool_trim(void);                 /* frees this thread's blocks */
int em_pool_count(int pool);

/* -- Errors ------------------------------------------------------------- */

/* Formats the thread-local message and returns code. */
em_status em_fail(em_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The last error without a leading "op: " (when it has one): a caller
** that wraps a failure ("load: X" -> "load: 'path': X") names the op once. */
const char *em_last_error_after(const char *op);
/* Appends "[2, 3]" for a shape to buf (size n). Returns buf. */
char *em_fmt_shape(char *buf, size_t n, int ndim, const int64_t *sizes);
enum { EM_SHAPE_BUF = 16 * 24 + 4 };

/* -- dtypes ------------------------------------------------------------- */

typedef uint16_t em_half;      /* IEEE binary16 bits */
typedef uint16_t em_bfloat16;  /* bfloat16 bits */
/* The largest finite value of a floating dtype (DBL_MAX for the others). */
double em_dtype_float_max(em_dtype dt);
/* one 16-byte element as raw bits: the loops that move complex128
** elements without looking at them (copies, fills, masks, indexing) */
typedef struct em_bytes16 {
  uint64_t w[2];
} em_bytes16;

/* The one list of dtypes: X(NAME_SUFFIX, ENUM, C_TYPE, KIND). Adding a dtype
** touches this list (and the tables in dtype.c). */
#define EM_FOR_EACH_DTYPE(X)                        \
  X(b8, EM_BOOL, bool, EM_KIND_BOOL)                \
  X(u8, EM_UINT8, uint8_t, EM_KIND_INT)             \
  X(i8, EM_INT8, int8_t, EM_KIND_INT)               \
  X(i16, EM_INT16, int16_t, EM_KIND_INT)            \
  X(i32, EM_INT32, int32_t, EM_KIND_INT)            \
  X(i64, EM_INT64, int64_t, EM_KIND_INT)            \
  X(f16, EM_FLOAT16, em_half, EM_KIND_FLOAT)        \
  X(bf16, EM_BFLOAT16, em_bfloat16, EM_KIND_FLOAT)  \
  X(f32, EM_FLOAT32, float, EM_KIND_FLOAT)          \
  X(f64, EM_FLOAT64, double, EM_KIND_FLOAT)

float em_half_to_float(em_half h);
em_half em_float_to_half(float f);       /* round to nearest even */
float em_bf16_to_float(em_bfloat16 h);
em_bfloat16 em_float_to_bf16(float f);   /* round to nearest even */

/* Every dtype read as a "compute" value: bool/ints as int64, floats as
** double; and written back from one, with the documented conversions:
** float -> int truncates toward zero, NaN -> 0, out of range saturates;
** int -> int wraps modulo 2^bits; anything -> bool is "!= 0" (NaN is true). */
static inline int64_t em_sat_i64(double v, double lo, double hi) {
  /* hi may be 2^63 (the double nearest INT64_MAX): converting it is UB */
  if (v != v) return 0;
  if (v <= lo) return lo <= -9223372036854775808.0 ? INT64_MIN : (int64_t)lo;
  if (v >= hi) return hi >= 9223372036854775808.0 ? INT64_MAX : (int64_t)hi;
  return (int64_t)v;
}

#define EM_LOAD_AS_F64_b8(p) ((double)*(const bool *)(p))
#define EM_LOAD_AS_F64_u8(p) ((double)*(const uint8_t *)(p))
#define EM_LOAD_AS_F64_i8(p) ((double)*(const int8_t *)(p))
#define EM_LOAD_AS_F64_i16(p) ((double)*(const int16_t *)(p))
#define EM_LOAD_AS_F64_i32(p) ((double)*(const int32_t *)(p))
#define EM_LOAD_AS_F64_i64(p) ((double)*(const int64_t *)(p))
#define EM_LOAD_AS_F64_f16(p) ((double)em_half_to_float(*(const em_half *)(p)))
#define EM_LOAD_AS_F64_bf16(p) \
  ((double)em_bf16_to_float(*(const em_bfloat16 *)(p)))
#define EM_LOAD_AS_F64_f32(p) ((double)*(const float *)(p))
#define EM_LOAD_AS_F64_f64(p) (*(const double *)(p))

/* EM_LOAD_x(p) reads one element as its compute type: int64_t for bool and
** the integers, float for the half types and float32, double for float64
** (what the cast kernels and the element reads convert from). */
#define EM_LOAD_b8(p) ((int64_t)(*(const bool *)(p)))
#define EM_LOAD_u8(p) ((int64_t)(*(const uint8_t *)(p)))
#define EM_LOAD_i8(p) ((int64_t)(*(const int8_t *)(p)))
#define EM_LOAD_i16(p) ((int64_t)(*(const int16_t *)(p)))
#define EM_LOAD_i32(p) ((int64_t)(*(const int32_t *)(p)))
#define EM_LOAD_i64(p) (*(const int64_t *)(p))
#define EM_LOAD_f16(p) (em_half_to_float(*(const em_half *)(p)))
#define EM_LOAD_bf16(p) (em_bf16_to_float(*(const em_bfloat16 *)(p)))
#define EM_LOAD_f32(p) (*(const float *)(p))
#define EM_LOAD_f64(p) (*(const double *)(p))

/* EM_STORE_x(p, v) writes v (a double, float or int64) as dtype x with the
** rules above: _Generic picks saturation for floating values and wrapping
** for integers, and int64 -> float rounds once. The one definition for the
** copy kernel (copy.c) and the range fills (creation.c). */
#define EM_TO_INT(v, T, lo, hi) \
  _Generic((v), double: (T)em_sat_i64((double)(v), lo, hi), \
           float: (T)em_sat_i64((double)(v), lo, hi), default: (T)(v))
#define EM_STORE_b8(p, v) (*(bool *)(p) = ((v) != 0))
#define EM_STORE_u8(p, v) (*(uint8_t *)(p) = EM_TO_INT(v, uint8_t, 0.0, 255.0))
#define EM_STORE_i8(p, v) (*(int8_t *)(p) = EM_TO_INT(v, int8_t, -128.0, 127.0))
#define EM_STORE_i16(p, v) \
  (*(int16_t *)(p) = EM_TO_INT(v, int16_t, -32768.0, 32767.0))
#define EM_STORE_i32(p, v) \
  (*(int32_t *)(p) = EM_TO_INT(v, int32_t, -2147483648.0, 2147483647.0))
#define EM_STORE_i64(p, v) \
  (*(int64_t *)(p) = EM_TO_INT(v, int64_t, -9223372036854775808.0, 9223372036854775808.0))
#define EM_STORE_f16(p, v) (*(em_half *)(p) = em_float_to_half((float)(v)))
#define EM_STORE_bf16(p, v) (*(em_bfloat16 *)(p) = em_float_to_bf16((float)(v)))
#define EM_STORE_f32(p, v) (*(float *)(p) = (float)(v))
#define EM_STORE_f64(p, v) (*(double *)(p) = (double)(v))

/* Size/overflow helpers. */
bool em_mul_overflow_i64(int64_t a, int64_t b, int64_t *out);
/* Checks sizes (>= 0) and their product; names op in the message. */
em_status em_numel_checked(const char *op, int ndim, const int64_t *sizes,
                           int64_t *numel);
void em_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides);
/* offset + k * stride for a view's new offset; when that overflows (only
** an empty view, whose strides are unchecked, can get there: it addresses
** nothing) the offset is returned unchanged. */
static inline int64_t em_offset_step(int64_t offset, int64_t k, int64_t stride) {
  int64_t s, r;
  if (__builtin_mul_overflow(k, stride, &s) || __builtin_add_overflow(offset, s, &r))
    return offset;
  return r;
}

/* One element's bytes (host memory) as a double / an int64, with the cast
** rules (em_scalar_to_bytes, ember.h, is the other way). */
double em_bytes_to_f64(em_dtype dt, const void *p);
int64_t em_bytes_to_i64(em_dtype dt, const void *p);

/* -- Internal constructors ---------------------------------------------- */

/* t takes storage s (one reference, the old one dropped) and the geometry,
** in place: no checks; every Lua value for t sees it (em_set_, em_write_out). */
void em_tensor_rebind(em_tensor *t, em_storage *s, int64_t offset, int ndim,
                      const int64_t *sizes, const int64_t *strides);
/* Allocates the tensor struct only (no checks against the storage). */
em_status em_tensor_alloc(em_storage *s, int64_t offset, int ndim,
                          const int64_t *sizes, const int64_t *strides,
                          em_dtype dt, em_tensor **out);
/* Growing a storage (ops/view.c's resize_ and set_): whether s is the
** engine's own (not wrapped foreign memory); a storage whose bytes can move
** to another storage struct; s taking fresh's bytes and fresh s's old ones
** (release fresh afterwards). */
int em_storage_resizable(const em_storage *s);
/* A kernel's scratch memory from the block cache (warm, 64-byte aligned;
** not live bytes, no collector hook); NULL when none can be had. Free with
** the same size. */
void *em_scratch_alloc(size_t nbytes);
void em_scratch_free(void *p, size_t nbytes);
/* In deterministic mode, fills t as em_empty fills fresh memory (NaN, or
** the dtype's largest value); else nothing (ops/creation.c). */
void em_fill_uninitialized(em_tensor *t);
em_status em_storage_new_movable(size_t nbytes, em_device dev, em_storage **out);
void em_storage_adopt(em_storage *s, em_storage *fresh);
/* The bytes from the start of a storage that a geometry reaches ((the
** last element's position + 1) x its size; 0 without elements); errors for
** a bad element count, a negative offset or stride, or past 2^63 bytes. */
em_status em_extent_bytes(const char *op, int64_t offset, int ndim, const int64_t *sizes,
                          const int64_t *strides, em_dtype dt, int64_t *nbytes);
/* Checks that every element the metadata can address lies inside s (sizes
** and their product too); names op in the message. */
em_status em_check_bounds(const char *op, const em_storage *s, int64_t offset,
                          int ndim, const int64_t *sizes, const int64_t *strides,
                          em_dtype dt);
/* The head of a tensor's autograd metadata (t->autograd): the layer above
** that made it (autograd/autograd.c) puts its destructor first, and
** em_tensor_release calls it; so the core never calls up into autograd. */
typedef struct em_autograd_head {
  void (*release)(em_tensor *t);
} em_autograd_head;
/* Counted CPU allocation used by storages (hooks, soft limit, retry). */
void *em_cpu_alloc_bytes(size_t nbytes);
void em_cpu_free_bytes(void *p, size_t nbytes);

/* Runs this thread's pressure hook as after a failed allocation of nbytes
** (a device allocator out of memory asks the host to collect; storage.c). */
void em_memory_collect(size_t nbytes);

#endif
