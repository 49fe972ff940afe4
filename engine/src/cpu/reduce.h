/*
** cpu/reduce.h -- the CPU entries of the reduce family (core/kern_reduce.h)
** defined outside cpu/reduce.c, whose table at its end lists them: the
** lane ops (cpu/lanes.c) and the comparisons (cpu/compare.c). Each is the
** entry of the same name in em_reduce_kernels, documented there.
*/
#ifndef EMBER_CPU_REDUCE_H
#define EMBER_CPU_REDUCE_H

#include "core/kern_reduce.h"

em_status em_cpu_max_dim(const char *op, em_tensor *values, em_tensor *indices,
                         const em_tensor *t, int axis, int is_min);
em_status em_cpu_cumextreme(const char *op, em_tensor *values, em_tensor *indices,
                            const em_tensor *t, int axis, int is_min);
em_status em_cpu_softmax(const char *op, em_tensor *out, const em_tensor *t, int axis,
                         int log);
em_status em_cpu_cumulative(const char *op, em_tensor *out, const em_tensor *t, int axis,
                            int prod);

em_status em_cpu_equal(const em_iter *it, em_dtype a, em_dtype b, int *equal);
void em_cpu_isclose(const em_iter *it, em_dtype dt, const em_close_params *p);
em_status em_cpu_all_true(const char *op, const em_tensor *t, int *result);

#endif
