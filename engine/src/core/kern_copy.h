/*
** kern_copy.h -- the copy family of the kernel table (core/kernels.h):
** what every device implements to hold values at all. The ops that use it
** are in ops/copy.c (copy_, fill_, clone, contiguous, to, element reads).
*/
#ifndef EMBER_KERN_COPY_H
#define EMBER_KERN_COPY_H

#include "core/iter.h"

typedef struct em_copy_kernels {
  /* Operand 0 of it (dtype dst) = operand 1 (dtype src, broadcast to it),
  ** converted with the cast rules of docs/dtypes.md. Both on this device;
  ** they do not partly overlap (ops/copy.c snapshots the source first). */
  void (*copy)(const em_iter *it, em_dtype dst, em_dtype src);
  /* Every element of operand 0 = the element bytes at value (dtype dt). */
  void (*fill)(const em_iter *it, em_dtype dt, const void *value);
  /* dst = src where exactly one of them is on this device and the other
  ** on the CPU: same dtype and sizes (ops/copy.c casts on one side
  ** first). Fails with em_fail when the values cannot move (out of meta). */
  em_status (*transfer)(em_tensor *dst, const em_tensor *src);
  /* The element at byte address p of this device, read into out (at most
  ** 8 bytes: elsize of them): item(), em_get_f64, printing. */
  em_status (*read)(const char *op, const void *p, size_t elsize, void *out);
  /* The element at byte address p of this device = the elsize bytes at in. */
  em_status (*write)(const char *op, void *p, size_t elsize, const void *in);
} em_copy_kernels;

extern const em_copy_kernels em_cpu_copy_kernels, em_meta_copy_kernels;

#endif
