/*
** fuzz_common.h -- helpers shared by the index and view-op fuzz targets: a
** byte reader that never reads past the input, and invariant checks that
** do not trust the engine's own addressing (they recompute each element's
** storage position from sizes, strides and offset).
*/
#ifndef EMBER_FUZZ_COMMON_H
#define EMBER_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

/* A crash that names the broken invariant (libFuzzer saves the input). */
#define FUZZ_ASSERT(cond)                                                    \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "fuzz invariant failed: %s (%s:%d): last error \"%s\"\n", \
              #cond, __FILE__, __LINE__, em_last_error());                   \
      __builtin_trap();                                                      \
    }                                                                        \
  } while (0)

typedef struct fz_reader {
  const uint8_t *p;
  size_t n;
} fz_reader;

static inline int fz_more(const fz_reader *r) { return r->n > 0; }
static inline uint8_t fz_u8(fz_reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}
/* A small signed value, biased to the interesting range around 0 with an
** occasional extreme one (INT64_MIN/MAX, 2^62) to probe overflow. */
static inline int64_t fz_small(fz_reader *r) {
  uint8_t b = fz_u8(r);
  switch (b) {
    case 0xff: return INT64_MAX;
    case 0xfe: return INT64_MIN;
    case 0xfd: return (int64_t)1 << 62;
    case 0xfc: return -((int64_t)1 << 62);
    default: return (int64_t)(int8_t)b % 9;  /* -8..8 */
  }
}

/* Every element t can address lies inside its storage (the check
** em_tensor_new promises); returns 1 when so. */
static inline int fz_in_bounds(const em_tensor *t) {
  int64_t n = em_tensor_numel(t);
  if (n == 0) return 1;
  const int64_t *sz = em_tensor_sizes(t), *st = em_tensor_strides(t);
  int64_t lo = em_tensor_offset(t), hi = lo;
  for (int d = 0; d < em_tensor_ndim(t); d++) {
    int64_t span = (sz[d] - 1) * st[d];
    if (span < 0) lo += span; else hi += span;
  }
  int64_t cap = (int64_t)(em_storage_nbytes(em_tensor_storage(t)) /
                          em_dtype_size(em_tensor_dtype(t)));
  return lo >= 0 && hi < cap;
}

/* Reads element pos (row-major) of a float64 tensor by hand. */
static inline double fz_read_f64(const em_tensor *t, int64_t pos) {
  const int64_t *sz = em_tensor_sizes(t), *st = em_tensor_strides(t);
  int64_t off = em_tensor_offset(t);
  for (int d = em_tensor_ndim(t) - 1; d >= 0; d--) {
    int64_t i = pos % sz[d];
    pos /= sz[d];
    off += i * st[d];
  }
  return ((const double *)em_storage_data(em_tensor_storage(t)))[off];
}

/* The engine's reading of t (em_get_f64) agrees with the hand-computed one
** at up to `limit` positions spread over t (first, last and a stride). */
static inline int fz_reads_agree(const em_tensor *t, int64_t limit) {
  int64_t n = em_tensor_numel(t);
  if (em_tensor_dtype(t) != EM_FLOAT64 || n == 0) return 1;
  int64_t step = n / limit + 1;
  for (int64_t k = 0; k < limit && k * step < n; k++) {
    int64_t pos = k * step;
    double v;
    if (em_get_f64(t, pos, &v) != EM_OK) return 0;
    double w = fz_read_f64(t, pos);
    if (!(v == w || (v != v && w != w))) return 0;
  }
  double v;
  if (em_get_f64(t, n - 1, &v) != EM_OK) return 0;
  double w = fz_read_f64(t, n - 1);
  return v == w || (v != v && w != w);
}

/* An error leaves a non-empty message that fits the buffer. */
static inline int fz_error_ok(void) {
  const char *m = em_last_error();
  return m[0] != '\0' && strlen(m) < 1024;
}

#endif
