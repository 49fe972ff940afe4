/*
** fuzz_index.c -- libFuzzer target for the index-expression machinery
** (index.c): the input picks a small float64 tensor (contiguous, transposed
** or expanded), then a list of em_index_item (integers, ranges with any
** step, full dims, newaxis, ellipsis, int64/int32 position tensors and bool
** masks, with positions near the bounds and extreme values), and applies it
** with em_index_get, em_index_put_ (a 0-d value and a value of the result's
** shape) and em_index_fill_scalar_.
**
** Invariants checked (a violation traps, so libFuzzer keeps the input):
** every call returns EM_OK or a status with a message; a view result
** addresses only elements inside its storage and reads back the same
** values by hand-computed strides; a failed write leaves the tensor
** unchanged; the storage refcount returns to its start; no bytes stay live
** (em_memory_live_bytes) once everything is released.
*/
#include "fuzz_common.h"

static em_tensor *make_index_tensor(fz_reader *r, const em_tensor *base) {
  uint8_t kind = fz_u8(r) % 3;
  em_tensor *it = NULL;
  if (kind == 2) { /* a bool mask over the leading dims of base (or not) */
    int nd = fz_u8(r) % 3;
    if (nd > em_tensor_ndim(base)) nd = em_tensor_ndim(base);
    int64_t sz[EM_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
      sz[d] = em_tensor_sizes(base)[d];
      if (fz_u8(r) == 0xaa) sz[d] += 1; /* a mask of the wrong shape */
    }
    if (em_zeros(nd, sz, EM_BOOL, em_cpu(), &it) != EM_OK) return NULL;
    int64_t n = em_tensor_numel(it);
    for (int64_t i = 0; i < n; i++) {
      em_scalar s = {EM_SCALAR_BOOL, fz_u8(r) & 1, 0};
      em_set_flat(it, i, s);
    }
    return it;
  }
  int64_t len = fz_u8(r) % 5;
  int nd = len == 4 ? 0 : 1; /* sometimes a 0-d index */
  int64_t sz[1] = {len};
  if (em_zeros(nd, sz, kind ? EM_INT32 : EM_INT64, em_cpu(), &it) != EM_OK) return NULL;
  int64_t n = em_tensor_numel(it);
  for (int64_t i = 0; i < n; i++) {
    em_scalar s = {EM_SCALAR_INT, fz_small(r), 0};
    em_set_flat(it, i, s);
  }
  return it;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_reader r = {data, size};
  size_t live0 = em_memory_live_bytes();

  /* The base: float64 holding 1..n, 0..4 dims of size 0..4. */
  int nd = fz_u8(&r) % 5;
  int64_t sizes[4];
  for (int d = 0; d < nd; d++) sizes[d] = fz_u8(&r) % 5;
  em_tensor *store;
  if (em_zeros(nd, sizes, EM_FLOAT64, em_cpu(), &store) != EM_OK) return 0;
  for (int64_t i = 0; i < em_tensor_numel(store); i++) {
    em_scalar s = {EM_SCALAR_FLOAT, 0, (double)(i + 1)};
    em_set_flat(store, i, s);
  }
  em_storage *st = em_tensor_storage(store);
  em_tensor *base = NULL;
  uint8_t layout = fz_u8(&r) % 3;
  if (layout == 1 && nd >= 2) {
    FUZZ_ASSERT(em_transpose(store, 1, nd, &base) == EM_OK);
  } else if (layout == 2 && nd >= 1 && sizes[0] == 1) {
    int64_t ex[4];
    memcpy(ex, sizes, sizeof ex);
    ex[0] = 3;
    FUZZ_ASSERT(em_expand(store, nd, ex, &base) == EM_OK);
  } else {
    em_tensor_retain(store);
    base = store;
  }

  /* The expression: up to 6 items. */
  em_index_item items[6];
  em_tensor *owned[6] = {0};
  int n = fz_u8(&r) % 7;
  for (int i = 0; i < n; i++) {
    em_index_item *it = &items[i];
    memset(it, 0, sizeof *it);
    it->kind = (em_index_kind)(fz_u8(&r) % 6);
    switch (it->kind) {
      case EM_INDEX_INT: it->first = fz_small(&r); break;
      case EM_INDEX_RANGE:
        it->first = fz_small(&r);
        it->last = fz_small(&r);
        it->step = fz_small(&r);
        break;
      case EM_INDEX_TENSOR:
        owned[i] = make_index_tensor(&r, base);
        if (!owned[i]) it->kind = EM_INDEX_FULL;
        it->tensor = owned[i];
        break;
      default: break;
    }
  }

  em_tensor *got = NULL;
  em_status s = em_index_get(base, n, items, &got);
  if (s != EM_OK) {
    FUZZ_ASSERT(fz_error_ok());
  } else {
    FUZZ_ASSERT(fz_in_bounds(got));
    FUZZ_ASSERT(fz_reads_agree(got, 64));
  }

  /* Writes: a failed one must leave the store unchanged. Expanded bases
  ** refuse writes (internal overlap). */
  em_tensor *before;
  FUZZ_ASSERT(em_clone(store, &before) == EM_OK);
  int same = 0;
  em_scalar fillv = {EM_SCALAR_FLOAT, 0, -7.5};
  if (em_index_fill_scalar_(base, n, items, fillv) != EM_OK) {
    FUZZ_ASSERT(fz_error_ok());
    FUZZ_ASSERT(em_equal(store, before, &same) == EM_OK && same);
  }
  em_tensor *val = NULL;
  if (got && fz_u8(&r) & 1) {
    em_clone(got, &val); /* the value of the result's own shape */
  } else {
    em_scalar v = {EM_SCALAR_INT, 0, 0};
    v.i = fz_small(&r);
    em_full(0, NULL, v, EM_INT32, em_cpu(), &val); /* a 0-d value, cast */
  }
  if (val) {
    em_tensor *snap;
    FUZZ_ASSERT(em_clone(store, &snap) == EM_OK);
    if (em_index_put_(base, n, items, val) != EM_OK) {
      FUZZ_ASSERT(fz_error_ok());
      FUZZ_ASSERT(em_equal(store, snap, &same) == EM_OK && same);
    }
    em_tensor_release(snap);
    em_tensor_release(val);
  }
  em_tensor_release(before);

  if (got) em_tensor_release(got);
  for (int i = 0; i < 6; i++)
    if (owned[i]) em_tensor_release(owned[i]);
  em_tensor_release(base);
  /* store and any surviving view share st: only store's reference is left */
  FUZZ_ASSERT(em_storage_refcount(st) == 1);
  em_tensor_release(store);
  FUZZ_ASSERT(em_memory_live_bytes() == live0);
  return 0;
}
