/*
** cpu/copy.c -- the copy family of the CPU's kernels (core/kern_copy.h):
** the strided cast copy (10 x 10 loops and the complex casts, the cast rules of core/core.h),
** same-dtype moves with blocked transposes, fills, and element reads and
** writes of host memory.
*/
#include "core/kern_copy.h"
#include "cpu/omp_if.h"
#include "core/errmsg.h"

#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* -- Cast loops: em_cast_<dst>_<src>, 10 x 10 of them ---------------------- */

#define DEF_CAST(D, S)                                                       \
  static void em_cast_##D##_##S(char **data, const int64_t *st, int64_t n,   \
                                void *ctx) {                                 \
    char *d = data[0];                                                       \
    const char *s = data[1];                                                 \
    const int64_t sd = st[0], ss = st[1];                                    \
    (void)ctx;                                                               \
    for (int64_t i = 0; i < n; i++, d += sd, s += ss)                        \
      EM_STORE_##D(d, EM_LOAD_##S(s));                                          \
  }

#define DEF_CASTS_FROM(S, E, CT, K) \
  DEF_CAST(b8, S) DEF_CAST(u8, S) DEF_CAST(i8, S) DEF_CAST(i16, S)        \
  DEF_CAST(i32, S) DEF_CAST(i64, S) DEF_CAST(f16, S) DEF_CAST(bf16, S)      \
  DEF_CAST(f32, S) DEF_CAST(f64, S)
EM_FOR_EACH_DTYPE(DEF_CASTS_FROM)

#define ROW(D, E, CT, K)                                                    \
  [E] = {em_cast_##D##_b8, em_cast_##D##_u8, em_cast_##D##_i8,             \
         em_cast_##D##_i16, em_cast_##D##_i32, em_cast_##D##_i64,            \
         em_cast_##D##_f16, em_cast_##D##_bf16, em_cast_##D##_f32,           \
         em_cast_##D##_f64},
static const em_loop1d cast_loops[EM_NUM_DTYPES][EM_NUM_DTYPES] = {
    EM_FOR_EACH_DTYPE(ROW)};

/* -- Complex casts: em_ccast_<dst>_<src> ------------------------------------
** A real value becomes (value, 0) and a complex value written to a real
** dtype keeps its real part (PyTorch's copy_ drops the imaginary part);
** complex64 <-> complex128 converts both parts. V is the value type
** (float for complex64, double for complex128). */
#define DEF_TO_C(S, E, CT, K)                                                 \
  static void em_ccast_c64_##S(char **data, const int64_t *st, int64_t n, void *ctx) { \
    char *d = data[0];                                                        \
    const char *s = data[1];                                                  \
    (void)ctx;                                                                \
    for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) {                 \
      float c[2] = {(float)EM_LOAD_AS_F64_##S(s), 0.0f};                      \
      memcpy(d, c, sizeof c);                                                 \
    }                                                                         \
  }                                                                           \
  static void em_ccast_c128_##S(char **data, const int64_t *st, int64_t n, void *ctx) { \
    char *d = data[0];                                                        \
    const char *s = data[1];                                                  \
    (void)ctx;                                                                \
    for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) {                 \
      double c[2] = {EM_LOAD_AS_F64_##S(s), 0.0};                             \
      memcpy(d, c, sizeof c);                                                 \
    }                                                                         \
  }                                                                           \
  static void em_ccast_##S##_c64(char **data, const int64_t *st, int64_t n, void *ctx) { \
    char *d = data[0];                                                        \
    const char *s = data[1];                                                  \
    (void)ctx;                                                                \
    for (int64_t i = 0; i < n; i++, d += st[0], s += st[1])                   \
      EM_STORE_##S(d, *(const float *)s);                                     \
  }                                                                           \
  static void em_ccast_##S##_c128(char **data, const int64_t *st, int64_t n, void *ctx) { \
    char *d = data[0];                                                        \
    const char *s = data[1];                                                  \
    (void)ctx;                                                                \
    for (int64_t i = 0; i < n; i++, d += st[0], s += st[1])                   \
      EM_STORE_##S(d, *(const double *)s);                                    \
  }
EM_FOR_EACH_DTYPE(DEF_TO_C)

static void em_ccast_c64_c128(char **data, const int64_t *st, int64_t n, void *ctx) {
  char *d = data[0];
  const char *s = data[1];
  (void)ctx;
  for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) {
    const double *v = (const double *)s;
    ((float *)d)[0] = (float)v[0];
    ((float *)d)[1] = (float)v[1];
  }
}
static void em_ccast_c128_c64(char **data, const int64_t *st, int64_t n, void *ctx) {
  char *d = data[0];
  const char *s = data[1];
  (void)ctx;
  for (int64_t i = 0; i < n; i++, d += st[0], s += st[1]) {
    const float *v = (const float *)s;
    ((double *)d)[0] = v[0];
    ((double *)d)[1] = v[1];
  }
}

#define CROW_TO(S, E, CT, K) [E] = {em_ccast_c64_##S, em_ccast_c128_##S},
#define CROW_FROM(S, E, CT, K) [E] = {em_ccast_##S##_c64, em_ccast_##S##_c128},
/* [real src][0: to complex64, 1: to complex128], [real dst][0: from c64, 1: from c128] */
static const em_loop1d to_complex[EM_NUM_DTYPES][2] = {EM_FOR_EACH_DTYPE(CROW_TO)};
static const em_loop1d from_complex[EM_NUM_DTYPES][2] = {EM_FOR_EACH_DTYPE(CROW_FROM)};

static int is_complex(em_dtype dt) { return dt == EM_COMPLEX64 || dt == EM_COMPLEX128; }

static em_loop1d cast_loop(em_dtype dst, em_dtype src) {
  if (is_complex(dst) && is_complex(src))
    return dst == EM_COMPLEX64 ? em_ccast_c64_c128 : em_ccast_c128_c64;
  if (is_complex(dst)) return to_complex[src][dst == EM_COMPLEX128];
  if (is_complex(src)) return from_complex[dst][src == EM_COMPLEX128];
  return cast_loops[dst][src];
}

/* Same-dtype copies move bytes; the element size picks the loop. */
#define DEF_MOVE(NAME, T)                                                    \
  static void NAME(char **data, const int64_t *st, int64_t n, void *ctx) {   \
    char *d = data[0];                                                       \
    const char *s = data[1];                                                 \
    const int64_t sd = st[0], ss = st[1];                                    \
    (void)ctx;                                                               \
    if (sd == sizeof(T) && ss == sizeof(T)) {                                \
      memmove(d, s, (size_t)n * sizeof(T));                                  \
      return;                                                                \
    }                                                                        \
    for (int64_t i = 0; i < n; i++, d += sd, s += ss)                        \
      *(T *)d = *(const T *)s;                                               \
  }
DEF_MOVE(move1, uint8_t)
DEF_MOVE(move2, uint16_t)
DEF_MOVE(move4, uint32_t)
DEF_MOVE(move8, uint64_t)
DEF_MOVE(move16, em_bytes16)

static em_loop1d copy_loop(em_dtype dst, em_dtype src) {
  if (dst != src) return cast_loop(dst, src);
  switch (em_dtype_size(dst)) {
    case 1: return move1;
    case 2: return move2;
    case 4: return move4;
    case 8: return move8;
    default: return move16;
  }
}

/* -- Blocked transposes ----------------------------------------------------
** The iterator orders dims by the destination's strides, so a copy out of a
** transposed source reads the source with a large stride in the inner loop:
** one cache line per element. When the source is unit-stride along another
** iteration dim j, em_copy_ walks dims 0 and j in square tiles instead, so
** both sides touch whole cache lines (same-dtype copies only). */

/* 16x16 tiles measured best on 2048..4096-square float32 transposes (docs/views.md) */
enum { TILE = 16, TILE_MIN = 16 };

typedef void (*tile_fn)(char *d, const char *s, int64_t n0, int64_t jb, int64_t je,
                        int64_t d0, int64_t dj, int64_t s0, int64_t sj);

/* columns jb..je of the (n0 x nj) block, in TILE x TILE tiles */
#define DEF_TILE(NAME, T)                                                    \
  static void NAME(char *d, const char *s, int64_t n0, int64_t jb0,          \
                   int64_t je0, int64_t d0, int64_t dj, int64_t s0,          \
                   int64_t sj) {                                             \
    for (int64_t jb = jb0; jb < je0; jb += TILE) {                           \
      int64_t je = jb + TILE < je0 ? jb + TILE : je0;                        \
      for (int64_t ib = 0; ib < n0; ib += TILE) {                            \
        int64_t ie = ib + TILE < n0 ? ib + TILE : n0;                        \
        for (int64_t j = jb; j < je; j++)                                    \
          for (int64_t i = ib; i < ie; i++)                                  \
            *(T *)(d + i * d0 + j * dj) = *(const T *)(s + i * s0 + j * sj); \
      }                                                                      \
    }                                                                        \
  }
DEF_TILE(tile1, uint8_t)
DEF_TILE(tile2, uint16_t)
DEF_TILE(tile4, uint32_t)
DEF_TILE(tile8, uint64_t)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(EMBER_NO_CLONES)
#include <immintrin.h>
#define EM_HAVE_AVX2_TILE 1
/* An 8x8 block of 4-byte elements transposed in registers: row i of the
** source (8 contiguous elements at s + i * ss) becomes column i of the
** destination (row j at d + j * ds). */
__attribute__((target("avx2"))) static inline void tr8x8_4(const float *s, int64_t ss,
                                                            float *d, int64_t ds) {
  __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ss);
  __m256 r2 = _mm256_loadu_ps(s + 2 * ss), r3 = _mm256_loadu_ps(s + 3 * ss);
  __m256 r4 = _mm256_loadu_ps(s + 4 * ss), r5 = _mm256_loadu_ps(s + 5 * ss);
  __m256 r6 = _mm256_loadu_ps(s + 6 * ss), r7 = _mm256_loadu_ps(s + 7 * ss);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* tile4 for a destination unit-stride along dim 0 and a source unit-stride
** along dim j: whole 8x8 blocks in registers, the edges element by element.
** The bits moved are the same as tile4's (a move, no arithmetic). */
/* Its tiles are TILE4 x TILE4: 64 destination rows of 256 bytes per tile
** (and 64 source rows of 256 bytes), walked along the destination's rows.
** 4096-square float32 into a preallocated out, 1 thread, warm pages: 22 ms
** with 16x16 tiles, 8.9 with 64x64 (16 KB row strides; docs/views.md). */
enum { TILE4 = 64 };
__attribute__((target("avx2"))) static void tile4_avx2(char *d, const char *s, int64_t n0,
                                                        int64_t jb0, int64_t je0, int64_t d0,
                                                        int64_t dj, int64_t s0, int64_t sj) {
  const int64_t ds = dj / 4, ss = s0 / 4;
  for (int64_t jb = jb0; jb < je0; jb += TILE4) {
    int64_t je = jb + TILE4 < je0 ? jb + TILE4 : je0;
    for (int64_t ib = 0; ib < n0; ib += TILE4) {
      int64_t ie = ib + TILE4 < n0 ? ib + TILE4 : n0;
      int64_t j = jb;
      for (; j + 8 <= je; j += 8) {
        int64_t i = ib;
        for (; i + 8 <= ie; i += 8)
          tr8x8_4((const float *)(s + i * s0 + j * sj), ss, (float *)(d + i * d0 + j * dj), ds);
        for (int64_t jj = j; jj < j + 8; jj++)
          for (int64_t ii = i; ii < ie; ii++)
            *(uint32_t *)(d + ii * d0 + jj * dj) = *(const uint32_t *)(s + ii * s0 + jj * sj);
      }
      for (; j < je; j++)
        for (int64_t i = ib; i < ie; i++)
          *(uint32_t *)(d + i * d0 + j * dj) = *(const uint32_t *)(s + i * s0 + j * sj);
    }
  }
}
#endif

/* The iteration dim (>= 1) along which operand 1 is unit-stride while dim 0
** is not, with both dims long enough to tile; -1 when tiling does not pay. */
static int tile_dim(const em_iter *it, int64_t isz) {
  if (isz > 8) return -1;  /* complex128 moves element by element */
  if (it->ndim < 2 || it->shape[0] < TILE_MIN) return -1;
  if (it->strides[0][0] != isz || it->strides[0][1] == isz) return -1;
  for (int j = 1; j < it->ndim; j++)
    if (it->strides[j][1] == isz && it->shape[j] >= TILE_MIN) return j;
  return -1;
}

/* the tile function for an element size, and its tile width */
static tile_fn tile_for(int64_t isz, int64_t *width) {
  *width = TILE;
#ifdef EM_HAVE_AVX2_TILE
  static int avx2 = -1;
  if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  if (isz == 4 && avx2) {
    *width = TILE4;
    return tile4_avx2;
  }
#endif
  return isz == 1 ? tile1 : isz == 2 ? tile2 : isz == 4 ? tile4 : tile8;
}

/* Runs the tiled copy over dims 0 and j for every position of the others.
** The work is cut into pieces of whole tile columns (a range of dim j at
** one position of the other dims), split across the threads: each element
** is moved by one thread, so the result does not depend on the count. */
static void copy_tiled(const em_iter *it, int j, int64_t isz) {
  int64_t tw;
  tile_fn tile = tile_for(isz, &tw);
  const int64_t n0 = it->shape[0], nj = it->shape[j];
  const int64_t outer = it->numel / (n0 * nj);
  /* columns per piece: whole tiles, about EM_PARALLEL_GRAIN elements */
  int64_t cols = (32768 / (n0 > 0 ? n0 : 1) + tw - 1) / tw * tw;
  if (cols < tw) cols = tw;
  const int64_t per = (nj + cols - 1) / cols, pieces = outer * per;
  int nt = em_get_num_threads();
  EM_OMP_IF(nt > 1 && pieces > 1 && it->numel >= 65536 && !omp_in_parallel(), parallel for num_threads(nt) schedule(static),
  for (int64_t w = 0; w < pieces; w++) {
    int64_t o = w / per, jb = (w % per) * cols;
    int64_t je = jb + cols < nj ? jb + cols : nj;
    char *d = it->data[0];
    const char *s = it->data[1];
    for (int k = 1; k < it->ndim; k++) { /* position o over the other dims */
      if (k == j) continue;
      int64_t c = o % it->shape[k];
      o /= it->shape[k];
      d += c * it->strides[k][0];
      s += c * it->strides[k][1];
    }
    tile(d, s, n0, jb, je, it->strides[0][0], it->strides[j][0], it->strides[0][1],
         it->strides[j][1]);
  });
  (void)nt;
}

#define DEF_FILL(NAME, T)                                                    \
  static void NAME(char **data, const int64_t *st, int64_t n, void *ctx) {   \
    char *d = data[0];                                                       \
    const int64_t sd = st[0];                                                \
    const T v = *(const T *)ctx;                                             \
    for (int64_t i = 0; i < n; i++, d += sd) *(T *)d = v;                    \
  }
DEF_FILL(fill1, uint8_t)
DEF_FILL(fill2, uint16_t)
DEF_FILL(fill4, uint32_t)
DEF_FILL(fill8, uint64_t)
DEF_FILL(fill16, em_bytes16)

static em_loop1d fill_loop(em_dtype dt) {
  switch (em_dtype_size(dt)) {
    case 1: return fill1;
    case 2: return fill2;
    case 4: return fill4;
    case 8: return fill8;
    default: return fill16;
  }
}

/* -- The table entries ----------------------------------------------------- */

static void cpu_copy(const em_iter *it, em_dtype dst, em_dtype src) {
  if (it->numel == 0) return;
  int64_t isz = (int64_t)em_dtype_size(dst);
  int j = dst == src ? tile_dim(it, isz) : -1;
  if (j > 0) copy_tiled(it, j, isz);
  else em_iter_run_parallel(it, copy_loop(dst, src), NULL);
}

static void cpu_fill(const em_iter *it, em_dtype dt, const void *value) {
  em_bytes16 bytes = {{0, 0}};
  memcpy(&bytes, value, em_dtype_size(dt));
  if (it->numel > 0) em_iter_run(it, fill_loop(dt), &bytes);
}

/* The CPU is the host: another device's table moves values to and from it. */
static em_status cpu_transfer(em_tensor *dst, const em_tensor *src) {
  char d[32];
  return em_fail(EM_E_RUNTIME, EM_MSG_DEVICE_UNSUPPORTED, "copy_",
                 em_device_str(em_tensor_device(dst), d, sizeof d));
}

static em_status cpu_read(const char *op, const void *p, size_t elsize, void *out) {
  memcpy(out, p, elsize);
  return EM_OK;
}
static em_status cpu_write(const char *op, void *p, size_t elsize, const void *in) {
  memcpy(p, in, elsize);
  return EM_OK;
}

const em_copy_kernels em_cpu_copy_kernels = {
    .copy = cpu_copy,
    .fill = cpu_fill,
    .transfer = cpu_transfer,
    .read = cpu_read,
    .write = cpu_write,
};
