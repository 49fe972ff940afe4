/*
** device.c -- device values, names, and the one list of devices and their
** kernel tables (core/kernels.h). Adding a device is a folder of kernels
** and one line here.
*/
#include "core/kernels.h"
#include "core/kern_linalg.h"
#include "core/errmsg.h"

#include <stdio.h>

em_device em_cpu(void) {
  em_device d = {EM_CPU, 0};
  return d;
}
em_device em_meta(void) {
  em_device d = {EM_META, 0};
  return d;
}
int em_device_equal(em_device a, em_device b) {
  return a.type == b.type && a.index == b.index;
}
int em_device_has_data(em_device d) { return d.type != EM_META; }

const char *em_device_str(em_device d, char *buf, size_t n) {
  switch (d.type) {
    case EM_CPU: snprintf(buf, n, "cpu"); break;
    case EM_META: snprintf(buf, n, "meta"); break;
    case EM_CUDA: snprintf(buf, n, "cuda:%d", d.index); break;
    default: snprintf(buf, n, "device%d:%d", (int)d.type, d.index); break;
  }
  return buf;
}

em_status em_kernels_check(const char *op, em_device dev, const em_kernels **out) {
  *out = em_kernels_for(dev);
  if (*out && !(*out)->check) return EM_OK;
  if (*out) {
    em_status st = (*out)->check(op, dev);
    if (st != EM_OK) *out = NULL;
    return st;
  }
  char d[32];
  return em_fail(EM_E_RUNTIME, EM_MSG_DEVICE_UNAVAILABLE, op, em_device_str(dev, d, sizeof d));
}

em_status em_tensor_check_values(const char *op, const em_tensor *t) {
  if (em_device_has_data(t->storage->device)) return EM_OK;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, op);
}

em_status em_same_device_check(const char *op, em_device a, em_device b) {
  if (em_device_equal(a, b)) return EM_OK;
  char d1[32], d2[32];
  return em_fail(EM_E_RUNTIME, EM_MSG_DEVICE_MISMATCH, op, em_device_str(a, d1, sizeof d1),
                 em_device_str(b, d2, sizeof d2));
}

/* the linalg family's lapack_runs of a device whose lapack runs every
** routine (core/kern_linalg.h) */
bool em_lapack_runs_all(em_lapack_op op) {
  (void)op;
  return true;
}
