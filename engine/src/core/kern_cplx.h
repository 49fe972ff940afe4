/*
** kern_cplx.h -- the complex family of the kernel table (core/kernels.h):
** the elementwise loops of complex64/complex128 and the FFT. The ops are in
** ops/complex.c and ops/fft.c; they type, broadcast and allocate, so each
** entry sees one complex dtype.
*/
#ifndef EMBER_KERN_CPLX_H
#define EMBER_KERN_CPLX_H

#include "core/iter.h"

/* The complex elementwise operations. */
typedef enum em_cx_op {
  EM_CX_ADD, EM_CX_SUB, EM_CX_MUL, EM_CX_DIV, EM_CX_POW, EM_CX_EQ, EM_CX_NE,
  EM_CX_NEG, EM_CX_ABS, EM_CX_ANGLE, EM_CX_CONJ, EM_CX_SQRT, EM_CX_RECIPROCAL,
  EM_CX_EXP, EM_CX_LOG, EM_CX_SIN, EM_CX_COS, EM_CX_TANH, EM_CX_SQUARE,
  EM_CX_ASIN, EM_CX_ACOS, EM_CX_ATAN, EM_CX_ASINH, EM_CX_ACOSH, EM_CX_ATANH,
  EM_CX_COUNT
} em_cx_op;

typedef struct em_cplx_kernels {
  /* Operand 0 of it = op(operand 1[, operand 2]); operands 1 and 2 have
  ** dtype dt (complex64 or complex128); operand 0 has dtype dt, or its value
  ** dtype (float32/float64) for ABS and ANGLE, or bool for EQ and NE.
  ** alpha multiplies operand 2 of ADD and SUB. */
  void (*ew)(em_cx_op op, em_dtype dt, const em_iter *it, double alpha);
  /* In place on the contiguous values at data, read as (outer, n, inner)
  ** elements of dtype dt (complex): the discrete Fourier transform along the
  ** middle dim (forward: exponent sign -1; else +1), every value times fct.
  ** Fails (em_fail) only when memory runs out. */
  em_status (*fft)(em_dtype dt, void *data, int64_t outer, int64_t n, int64_t inner,
                   int forward, double fct);
  /* The forward transform of real values: in, contiguous (outer, n, inner)
  ** of dtype dt (float32/float64), to out, contiguous (outer, n / 2 + 1,
  ** inner) of the matching complex dtype: the non-negative frequencies,
  ** every value times fct. Fails only when memory runs out. */
  em_status (*rfft)(em_dtype dt, const void *in, void *out, int64_t outer, int64_t n,
                    int64_t inner, double fct);
} em_cplx_kernels;

extern const em_cplx_kernels em_cpu_cplx_kernels, em_meta_cplx_kernels, em_cuda_cplx_kernels;

#endif
