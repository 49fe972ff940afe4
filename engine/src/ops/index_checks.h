/*
** ops/index_checks.h -- what the index ops (ops/gather_scatter.c,
** ops/masked.c) share: the device rule, the argument checks (one wording
** each), stack headers for restrided operands, and source snapshots.
*/
#ifndef EMBER_OPS_INDEX_CHECKS_H
#define EMBER_OPS_INDEX_CHECKS_H

#include "core/kern_index.h"
#include "core/kernels.h"
#include "core/errmsg.h"

/* The index kernels of ts[0]'s device, which every other tensor of ts
** (NULLs skipped) must share: results are made there. */
static inline em_status index_kernels(const char *op, int n, const em_tensor *const *ts,
                                      const em_index_kernels **k) {
  em_device dev = ts[0]->storage->device;
  *k = NULL;
  em_status st = EM_OK;
  for (int i = 1; i < n && st == EM_OK; i++)
    if (ts[i]) st = em_same_device_check(op, dev, ts[i]->storage->device);
  if (st != EM_OK) return st;
  const em_kernels *kt;
  st = em_kernels_check(op, dev, &kt);
  if (st == EM_OK) *k = kt->index;
  return st;
}

static inline em_status check_index_dtype(const char *op, const em_tensor *idx) {
  if (idx->dtype != EM_INT64 && idx->dtype != EM_INT32)
    return em_fail(EM_E_TYPE,
                   "%s: expected an int64 or int32 index tensor, got %s", op,
                   em_dtype_name(idx->dtype));
  return EM_OK;
}

static inline em_status check_mask(const char *op, const em_tensor *mask) {
  if (mask->dtype != EM_BOOL)
    return em_fail(EM_E_TYPE, "%s: expected a bool mask, got %s", op,
                   em_dtype_name(mask->dtype));
  return EM_OK;
}

static inline em_status check_same_dtype(const char *op, const em_tensor *t,
                                         const em_tensor *src, const char *what) {
  if (t->dtype != src->dtype)
    return em_fail(EM_E_TYPE, "%s: expected %s to have the dtype of self (%s), got %s",
                   op, what, em_dtype_name(t->dtype), em_dtype_name(src->dtype));
  return EM_OK;
}

/* A stack copy of t's header with other sizes/strides: only ever handed
** to em_iter_build (never retained or released). */
static inline void restride(em_tensor *v, const em_tensor *t, int ndim,
                            const int64_t *sizes, const int64_t *strides) {
  memcpy((void *)v, (const void *)t, sizeof *v);
  v->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    v->sizes[i] = sizes[i];
    v->strides[i] = strides[i];
  }
}

/* If src may share bytes with dst, *snap gets a clone to read instead. */
static inline em_status snapshot(const em_tensor *dst, const em_tensor **src,
                                 em_tensor **snap) {
  *snap = NULL;
  if (!*src || !em_may_overlap(dst, *src)) return EM_OK;
  em_status st = em_clone(*src, snap);
  if (st == EM_OK) *src = *snap;
  return st;
}

#endif
