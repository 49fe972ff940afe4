/*
** cpu/omp_if.h -- EM_OMP_IF(cond, directive, body...): body in an OpenMP
** region made by `#pragma omp <directive>` when cond holds, and straight on
** this thread, outside any region, when it does not.
**
** `#pragma omp parallel ... if (cond)` with cond false (or a team of one)
** still enters libgomp: it makes a team and its final barrier wakes waiters
** with a futex system call whether there are any or not (GCC 12's libgomp).
** Measured on the development VM: 1.6-1.9 us per serialized region against
** 13 ns for the bare loop — more than a whole small op costs from Lua. So
** a kernel that decides at run time whether to use threads decides here,
** before libgomp is called.
**
** In the serial branch omp_get_thread_num() is 0 and omp_get_num_threads()
** 1, as in a team of one, so bodies that split work by thread number run
** unchanged. Directives inside the body (a worksharing `omp for`, an
** `omp atomic`) are written EM_OMP_PRAGMA(omp for ...): a #pragma line
** cannot stand in a macro argument. Without OpenMP the body always runs
** serially and EM_OMP_PRAGMA is nothing.
*/
#ifndef EMBER_CPU_OMP_IF_H
#define EMBER_CPU_OMP_IF_H

#ifdef _OPENMP
#include <omp.h>
#define EM_OMP_PRAGMA(x) _Pragma(#x)
#define EM_OMP_IF(cond, directive, ...)                                      \
  do {                                                                       \
    if (cond) {                                                              \
      EM_OMP_PRAGMA(omp directive)                                          \
      __VA_ARGS__                                                            \
    } else {                                                                 \
      __VA_ARGS__                                                            \
    }                                                                        \
  } while (0)
#else
#define EM_OMP_PRAGMA(x)
#define EM_OMP_IF(cond, directive, ...) \
  do {                                  \
    __VA_ARGS__                         \
  } while (0)
#endif

#endif
