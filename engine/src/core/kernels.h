/*
** kernels.h -- the kernel table: what a device implements (docs/architecture.md).
**
** The layers: core (this folder) -> kernels (one folder per device: cpu/,
** meta/, later cuda/) -> public ops (ops/) -> autograd -> bindings -> Lua.
** A public op validates its arguments, promotes types, allocates its result
** on the inputs' device, pauses/records autograd, and calls that device's
** kernels through em_kernels_for(device). A kernel sees only the core and
** its table: never autograd, never a public op.
**
** The table is one struct of family tables, each a struct of function
** pointers declared in core/kern_<family>.h. A device fills every entry of
** every family it registers (tests/c/test_kernels.c checks that no entry is
** NULL); the meta device fills each with an entry that computes no values.
** The one list of devices is em_kernels_for (core/device.c).
*/
#ifndef EMBER_KERNELS_H
#define EMBER_KERNELS_H

#include "core/core.h"

struct em_copy_kernels;   /* core/kern_copy.h: cast copies, fills, transfers */
struct em_ew_kernels;     /* core/kern_ew.h: the elementwise ops */
struct em_index_kernels;  /* core/kern_index.h: selecting and indexing */
struct em_linalg_kernels; /* core/kern_linalg.h: batched matrix products */
struct em_random_kernels; /* core/kern_random.h: the samplers */
struct em_creation_kernels; /* core/kern_creation.h: zeros and the ranges */
struct em_nn_kernels;     /* core/kern_nn.h: convolution, pooling, norms, losses */
struct em_optim_kernels;  /* core/kern_optim.h: the fused optimizer updates */
struct em_reduce_kernels; /* core/kern_reduce.h: reductions, lane ops, comparisons */
struct em_sort_kernels;   /* core/kern_sort.h: sort, topk, kthvalue/median, unique */

typedef struct em_kernels {
  const char *name;       /* "cpu", "meta", "cuda" */
  em_device_type type;
  /* Device memory: nbytes > 0; *data may stay NULL only for a device
  ** without data (meta). Failure: em_fail, nothing allocated. */
  em_status (*alloc)(em_device dev, size_t nbytes, void **data);
  void (*free)(em_device dev, void *data, size_t nbytes);

  const struct em_copy_kernels *copy;
  const struct em_ew_kernels *ew;
  const struct em_index_kernels *index;
  const struct em_linalg_kernels *linalg;
  const struct em_random_kernels *random;
  const struct em_creation_kernels *creation;
  const struct em_nn_kernels *nn;
  const struct em_optim_kernels *optim;
  const struct em_reduce_kernels *reduce;
  const struct em_sort_kernels *sort;
} em_kernels;

/* The kernels of a device; NULL when this build or machine has none
** (cuda without CUDA). */
const em_kernels *em_kernels_for(em_device dev);
/* As em_kernels_for, failing with the shared message naming op and device. */
em_status em_kernels_check(const char *op, em_device dev, const em_kernels **out);
/* EM_OK when b is a, else the shared mixed-device error naming op, a and b
** (an op never moves values between devices). */
em_status em_same_device_check(const char *op, em_device a, em_device b);

extern const em_kernels em_cpu_kernels;   /* cpu/cpu.c */
extern const em_kernels em_meta_kernels;  /* meta/meta.c */

#endif
