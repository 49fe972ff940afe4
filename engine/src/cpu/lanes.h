/*
** cpu/lanes.h -- CPU-private helpers of the reduction and sort kernels
** (cpu/reduce.c, cpu/lanes.c, cpu/sort.c, cpu/compare.c): the lane runner
** (one whole dim per kernel call), the block runner, and per-dtype element
** loads and stores. Defined in cpu/lanes.c.
*/
#ifndef EMBER_CPU_LANES_H
#define EMBER_CPU_LANES_H

#include "core/iter.h"

/* Header of a lane kernel's context: lane length and each operand's step
** along the lane, in bytes. */
typedef struct em_lane {
  int64_t len;
  int64_t stride[EM_ITER_MAX_OPS];
} em_lane;

/* Kernels whose ctx needs scratch memory per thread: the runner copies the
** ctx (ctx_size bytes, at most EM_LANE_CTX_MAX) for each thread, calls init
** on the copy before its lanes and fini after. init fails with EM_E_NOMEM
** after em_fail. */
enum { EM_LANE_CTX_MAX = 512 };
typedef struct em_lane_scratch {
  size_t ctx_size;
  em_status (*init)(void *ctx);
  void (*fini)(void *ctx);
} em_lane_scratch;

/* Runs loop once per lane of `axis` (0-based) over operands ts (the last
** one defines the shape; the others agree with it on every other dim, and
** may have any size along axis). lane->len is set to len. With parallel,
** lanes may run on several threads when built with OpenMP (the kernel only
** reads its ctx, or gets a private copy through scratch); each lane is
** computed the same way on any thread. */
em_status em_run_lanes(const char *op, int nops, const em_tensor *const *ts, int axis,
                       int64_t len, em_loop1d loop, em_lane *lane, bool parallel,
                       const em_lane_scratch *scratch);

/* The length of t's lanes along axis (a 0-d tensor is one lane of 1). */
static inline int64_t em_lane_len(const em_tensor *t, int axis) {
  return t->ndim > 0 ? t->sizes[axis] : 1;
}

/* Runs the iteration in chunks whose boundaries are multiples of `block`
** (so that no two threads share a block), on several threads when built
** with OpenMP and the work (numel * work_per_element) is large enough. */
void em_run_blocks(const em_iter *it, int64_t block, int64_t work_per_element,
                   em_loop1d loop, void *ctx);

/* -- Element loads and stores ----------------------------------------------
** ld_d_x / ld_i_x read an element of dtype x as double / int64; st_d_x /
** st_i_x write a double / int64 with the engine's conversion rules
** (saturating float -> int). Inline, for the loops of these files. */

static inline int64_t em_d2i_(double v, double lo, double hi) { return em_sat_i64(v, lo, hi); }

#define LDI_b8(p) ((int64_t)(*(const bool *)(p)))
#define LDI_u8(p) ((int64_t)(*(const uint8_t *)(p)))
#define LDI_i8(p) ((int64_t)(*(const int8_t *)(p)))
#define LDI_i16(p) ((int64_t)(*(const int16_t *)(p)))
#define LDI_i32(p) ((int64_t)(*(const int32_t *)(p)))
#define LDI_i64(p) (*(const int64_t *)(p))
#define LDI_f16(p) ((int64_t)EM_LOAD_AS_F64_f16(p))
#define LDI_bf16(p) ((int64_t)EM_LOAD_AS_F64_bf16(p))
#define LDI_f32(p) ((int64_t)*(const float *)(p))
#define LDI_f64(p) ((int64_t)*(const double *)(p))

#define STD_b8(p, v) (*(bool *)(p) = ((v) != 0))
#define STD_u8(p, v) (*(uint8_t *)(p) = (uint8_t)em_d2i_(v, 0, UINT8_MAX))
#define STD_i8(p, v) (*(int8_t *)(p) = (int8_t)em_d2i_(v, INT8_MIN, INT8_MAX))
#define STD_i16(p, v) (*(int16_t *)(p) = (int16_t)em_d2i_(v, INT16_MIN, INT16_MAX))
#define STD_i32(p, v) (*(int32_t *)(p) = (int32_t)em_d2i_(v, INT32_MIN, INT32_MAX))
#define STD_i64(p, v) (*(int64_t *)(p) = em_d2i_(v, (double)INT64_MIN, (double)INT64_MAX))
#define STD_f16(p, v) (*(em_half *)(p) = em_float_to_half((float)(v)))
#define STD_bf16(p, v) (*(em_bfloat16 *)(p) = em_float_to_bf16((float)(v)))
#define STD_f32(p, v) (*(float *)(p) = (float)(v))
#define STD_f64(p, v) (*(double *)(p) = (v))

#define STI_b8(p, v) (*(bool *)(p) = ((v) != 0))
#define STI_u8(p, v) (*(uint8_t *)(p) = (uint8_t)(v))
#define STI_i8(p, v) (*(int8_t *)(p) = (int8_t)(v))
#define STI_i16(p, v) (*(int16_t *)(p) = (int16_t)(v))
#define STI_i32(p, v) (*(int32_t *)(p) = (int32_t)(v))
#define STI_i64(p, v) (*(int64_t *)(p) = (v))
#define STI_f16(p, v) STD_f16(p, (double)(v))
#define STI_bf16(p, v) STD_bf16(p, (double)(v))
#define STI_f32(p, v) STD_f32(p, (double)(v))
#define STI_f64(p, v) STD_f64(p, (double)(v))

#define EM_DEF_LANE_IO(S, E, CT, K)                                            \
  static inline double ld_d_##S(const char *p) { return EM_LOAD_AS_F64_##S(p); } \
  static inline int64_t ld_i_##S(const char *p) { return LDI_##S(p); }       \
  static inline void st_d_##S(char *p, double v) { STD_##S(p, v); }          \
  static inline void st_i_##S(char *p, int64_t v) { STI_##S(p, v); }
EM_FOR_EACH_DTYPE(EM_DEF_LANE_IO)
#undef EM_DEF_LANE_IO

/* Integer accumulation wraps modulo 2^64 (on uint64_t: no signed overflow). */
static inline int64_t em_wrap_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t em_wrap_mul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* The loads and stores above as functions, for kernels that pick one per
** call rather than one per dtype (sort, compare). */
typedef double (*em_load_d_fn)(const char *);
typedef int64_t (*em_load_i_fn)(const char *);
typedef void (*em_store_d_fn)(char *, double);
em_load_d_fn em_load_d(em_dtype dt);
em_load_i_fn em_load_i(em_dtype dt);
em_store_d_fn em_store_d(em_dtype dt);

#endif
