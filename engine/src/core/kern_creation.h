/*
** kern_creation.h -- the creation family of the kernel table
** (core/kernels.h): what fills a fresh tensor with something other than one
** value (that is copy's fill): all zero bytes, and the ranges. The ops are
** in ops/creation.c (zeros, arange, linspace, logspace; eye is zeros and a
** fill of its diagonal view).
*/
#ifndef EMBER_KERN_CREATION_H
#define EMBER_KERN_CREATION_H

#include "core/iter.h"

/* The parameters of a range, computed by the op (docs/creation.md). Element
** i (0-based) of
** - arange: integer dtypes: istart + istep * i in int64, wrapping modulo
**   2^64; floating dtypes: fstart + fstep * (double)i;
** - linspace: lstart + lstep * i for i < halfway, else
**   lend - lstep * (steps - 1 - i), in double; with log (logspace), lbase
**   to the power of that.
** Each is stored with the cast rules of core/core.h (EM_STORE_x), rounded to
** the dtype once. */
typedef struct em_range {
  double fstart, fstep;
  int64_t istart, istep;
  double lstart, lend, lstep, lbase;
  int64_t steps, halfway;
  int log;
} em_range;

typedef struct em_creation_kernels {
  /* Every byte of t's storage = 0 (every dtype reads 0, false or +0.0):
  ** t is fresh and contiguous, and its storage holds exactly its elements. */
  void (*zero)(em_tensor *t);
  /* Operand 0 of it (dtype dt, not bool) = the arange values of r. The
  ** operand is one contiguous tensor, so element i lies i elements past
  ** it->data[0]; it->numel may be 0. */
  void (*arange)(const em_iter *it, em_dtype dt, const em_range *r);
  /* Operand 0 of it (dtype dt) = the linspace (logspace when r->log)
  ** values of r; the operand as for arange. */
  void (*linspace)(const em_iter *it, em_dtype dt, const em_range *r);
} em_creation_kernels;

extern const em_creation_kernels em_cpu_creation_kernels, em_meta_creation_kernels;

#endif
