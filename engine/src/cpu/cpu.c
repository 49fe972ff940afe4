/*
** cpu/cpu.c -- the CPU's kernel table (core/kernels.h): one entry per
** family, each defined in the family's file of this folder.
*/
#include "core/kernels.h"
#include "core/kern_copy.h"
#include "core/kern_ew.h"
#include "core/kern_index.h"
#include "core/kern_linalg.h"
#include "core/kern_random.h"
#include "core/kern_creation.h"
#include "core/kern_nn.h"
#include "core/kern_optim.h"
#include "core/kern_reduce.h"
#include "core/kern_sort.h"
#include "core/kern_cplx.h"

static em_status cpu_alloc(em_device dev, size_t nbytes, void **data) {
  (void)dev;
  *data = em_cpu_alloc_bytes(nbytes);
  if (!*data)
    return em_fail(EM_E_NOMEM, "out of memory: tried to allocate %zu bytes", nbytes);
  return EM_OK;
}
static void cpu_free(em_device dev, void *data, size_t nbytes) {
  (void)dev;
  em_cpu_free_bytes(data, nbytes);
}

const em_kernels em_cpu_kernels = {
    .name = "cpu",
    .type = EM_CPU,
    .alloc = cpu_alloc,
    .free = cpu_free,

    .copy = &em_cpu_copy_kernels,

    .ew = &em_cpu_ew_kernels,

    .index = &em_cpu_index_kernels,
    .linalg = &em_cpu_linalg_kernels,
    .random = &em_cpu_random_kernels,
    .creation = &em_cpu_creation_kernels,
    .nn = &em_cpu_nn_kernels,
    .optim = &em_cpu_optim_kernels,
    .reduce = &em_cpu_reduce_kernels,
    .sort = &em_cpu_sort_kernels,
    .cplx = &em_cpu_cplx_kernels,
};
