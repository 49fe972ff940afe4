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
** The one list of devices is em_kernels_for (below).
*/
#ifndef EMBER_KERNELS_H
#define EMBER_KERNELS_H

#include "core/core.h"

/* The families: X(name) with its table struct em_<name>_kernels declared in
** core/kern_<name>.h. One list: the table below, the completeness test
** (tests/c/test_kernels.c) and the docs follow it.
**   copy     cast copies, fills, transfers, element reads   kern_copy.h
**   ew       the elementwise ops                            kern_ew.h
**   index    selecting and indexing                         kern_index.h
**   linalg   batched matrix products                        kern_linalg.h
**   random   the samplers, randperm, multinomial            kern_random.h
**   creation zeros and the ranges                           kern_creation.h
**   nn       convolution, pooling, norms, losses            kern_nn.h
**   optim    the fused optimizer updates                    kern_optim.h
**   reduce   reductions, lane ops (softmax, cumsum), comparisons  kern_reduce.h
**   sort     sort, topk, kthvalue/median, unique            kern_sort.h
**   cplx     complex elementwise loops, the FFT                kern_cplx.h */
#define EM_KERNEL_FAMILIES(X) \
  X(copy) X(ew) X(index) X(linalg) X(random) X(creation) X(nn) X(optim) X(reduce) X(sort) \
  X(cplx)

#define EM_KERNEL_FAMILY_DECL(f) struct em_##f##_kernels;
EM_KERNEL_FAMILIES(EM_KERNEL_FAMILY_DECL)
#undef EM_KERNEL_FAMILY_DECL

typedef struct em_kernels {
  const char *name;       /* "cpu", "meta", "cuda" */
  em_device_type type;
  /* Device memory: nbytes > 0; *data may stay NULL only for a device
  ** without data (meta). Failure: em_fail, nothing allocated. */
  em_status (*alloc)(em_device dev, size_t nbytes, void **data);
  void (*free)(em_device dev, void *data, size_t nbytes);
  /* NULL for a device that is always ready (cpu, meta). Else EM_OK when
  ** dev can run op now, or the reason naming op (cuda: no driver, no such
  ** device, the error of an earlier asynchronous launch). em_kernels_check
  ** calls it, so every op on the device passes here once. */
  em_status (*check)(const char *op, em_device dev);

  /* one table per family: const struct em_copy_kernels *copy; ... */
#define EM_KERNEL_FAMILY_FIELD(f) const struct em_##f##_kernels *f;
  EM_KERNEL_FAMILIES(EM_KERNEL_FAMILY_FIELD)
#undef EM_KERNEL_FAMILY_FIELD
} em_kernels;

extern const em_kernels em_cpu_kernels;   /* cpu/cpu.c */
extern const em_kernels em_meta_kernels;  /* meta/meta.c */
#ifdef EMBER_HAVE_CUDA
extern const em_kernels em_cuda_kernels;  /* cuda/table.c: builds with CUDA (EMBER_CUDA) */
#endif

/* The kernels of a device; NULL when this build or machine has none
** (cuda without CUDA). The one list of devices: a new device adds its case.
** Inline: every op from a script passes here once. */
static inline const em_kernels *em_kernels_for(em_device dev) {
  switch (dev.type) {
    case EM_CPU: return &em_cpu_kernels;
    case EM_META: return &em_meta_kernels;
#ifdef EMBER_HAVE_CUDA
    case EM_CUDA: return &em_cuda_kernels;
#endif
    default: return NULL;
  }
}
/* As em_kernels_for, failing with the shared message naming op and device. */
em_status em_kernels_check(const char *op, em_device dev, const em_kernels **out);
/* EM_OK when b is a, else the shared mixed-device error naming op, a and b
** (an op never moves values between devices). */
em_status em_same_device_check(const char *op, em_device a, em_device b);


#endif
