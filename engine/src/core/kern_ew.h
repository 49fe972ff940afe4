/*
** kern_ew.h -- the elementwise family of the kernel table (core/kernels.h).
** The ops (ops/elementwise.c) type, shape and allocate; a device runs one
** kernel of the lists below for one compute dtype over a built iterator.
**
** The lists are the contract: X(name, kind mask, output class). A device
** implements every kernel for every dtype whose kind is in the mask (B
** bool, I integer, F floating); the output class is SAME (operand 0 has
** the compute dtype) or BOOL (operand 0 is bool). Operands: 0 the output,
** then the inputs in order, all in the compute dtype.
*/
#ifndef EMBER_KERN_EW_H
#define EMBER_KERN_EW_H

#include "core/iter.h"

/* -- Kernel parameters --------------------------------------------------------- */

typedef struct em_kctx {
  int64_t ai;      /* alpha as an integer (add/sub) */
  double af;       /* alpha as a float */
  double p0, p1, p2; /* softplus beta/threshold; nan_to_num nan/posinf/neginf */
  int64_t i0;      /* round: decimals; gelu: tanh approximation */
  int flags;       /* clamp: 1 has min, 2 has max */
} em_kctx;


/* The binary kernels (sub is add with a negated alpha). */
#define EM_EW_BINARY_KERNELS(X, ...)  \
  X(add, BIF, SAME, __VA_ARGS__) X(mul, BIF, SAME, __VA_ARGS__)               \
  X(div, F, SAME, __VA_ARGS__) X(divtrunc, IF, SAME, __VA_ARGS__)             \
  X(divfloor, IF, SAME, __VA_ARGS__) X(remainder, IF, SAME, __VA_ARGS__)      \
  X(fmod, IF, SAME, __VA_ARGS__) X(pow, IF, SAME, __VA_ARGS__)                \
  X(atan2, F, SAME, __VA_ARGS__) X(maximum, BIF, SAME, __VA_ARGS__)           \
  X(minimum, BIF, SAME, __VA_ARGS__) X(eq, BIF, BOOL, __VA_ARGS__)            \
  X(ne, BIF, BOOL, __VA_ARGS__) X(lt, BIF, BOOL, __VA_ARGS__)                 \
  X(le, BIF, BOOL, __VA_ARGS__) X(gt, BIF, BOOL, __VA_ARGS__)                 \
  X(ge, BIF, BOOL, __VA_ARGS__) X(land, B, BOOL, __VA_ARGS__)                 \
  X(lor, B, BOOL, __VA_ARGS__) X(lxor, B, BOOL, __VA_ARGS__)                  \
  X(band, BI, SAME, __VA_ARGS__) X(bor, BI, SAME, __VA_ARGS__)                \
  X(bxor, BI, SAME, __VA_ARGS__) X(lshift, I, SAME, __VA_ARGS__)              \
  X(rshift, I, SAME, __VA_ARGS__)                                             \
  EM_EW_BINARY_SPECIAL(X, __VA_ARGS__)

/* The special functions' binary kernels (issue 19; cpu/special.h). */
#define EM_EW_BINARY_SPECIAL(X, ...)  \
  X(xlogy, F, SAME, __VA_ARGS__) X(xlog1py, F, SAME, __VA_ARGS__)             \
  X(logaddexp, F, SAME, __VA_ARGS__) X(logaddexp2, F, SAME, __VA_ARGS__)      \
  X(hypot, F, SAME, __VA_ARGS__) X(copysign, F, SAME, __VA_ARGS__)            \
  X(nextafter, F, SAME, __VA_ARGS__) X(gcd, I, SAME, __VA_ARGS__)             \
  X(lcm, I, SAME, __VA_ARGS__) X(heaviside, BIF, SAME, __VA_ARGS__)           \
  X(zeta, F, SAME, __VA_ARGS__) X(gammainc, F, SAME, __VA_ARGS__)             \
  X(gammaincc, F, SAME, __VA_ARGS__) \
  X(cheb_t, F, SAME, __VA_ARGS__) \
  X(cheb_u, F, SAME, __VA_ARGS__) \
  X(cheb_v, F, SAME, __VA_ARGS__) \
  X(cheb_w, F, SAME, __VA_ARGS__) \
  X(scheb_t, F, SAME, __VA_ARGS__) \
  X(scheb_u, F, SAME, __VA_ARGS__) \
  X(scheb_v, F, SAME, __VA_ARGS__) \
  X(scheb_w, F, SAME, __VA_ARGS__) \
  X(hermite_h, F, SAME, __VA_ARGS__) \
  X(hermite_he, F, SAME, __VA_ARGS__) \
  X(laguerre_l, F, SAME, __VA_ARGS__) \
  X(legendre_p, F, SAME, __VA_ARGS__)

#define EM_EW_UNARY_KERNELS(X, ...)  \
  X(neg, IF, SAME, __VA_ARGS__) X(abs, IF, SAME, __VA_ARGS__)                     \
  X(sign, BIF, SAME, __VA_ARGS__) X(sqrt, F, SAME, __VA_ARGS__)                   \
  X(rsqrt, F, SAME, __VA_ARGS__) X(square, IF, SAME, __VA_ARGS__)                 \
  X(reciprocal, F, SAME, __VA_ARGS__) X(exp, F, SAME, __VA_ARGS__)                \
  X(exp2, F, SAME, __VA_ARGS__) X(expm1, F, SAME, __VA_ARGS__)                    \
  X(log, F, SAME, __VA_ARGS__) X(log2, F, SAME, __VA_ARGS__)                      \
  X(log10, F, SAME, __VA_ARGS__) X(log1p, F, SAME, __VA_ARGS__)                   \
  X(sin, F, SAME, __VA_ARGS__) X(cos, F, SAME, __VA_ARGS__)                       \
  X(tan, F, SAME, __VA_ARGS__) X(asin, F, SAME, __VA_ARGS__)                      \
  X(acos, F, SAME, __VA_ARGS__) X(atan, F, SAME, __VA_ARGS__)                     \
  X(sinh, F, SAME, __VA_ARGS__) X(cosh, F, SAME, __VA_ARGS__)                     \
  X(tanh, F, SAME, __VA_ARGS__) X(sigmoid, F, SAME, __VA_ARGS__)                  \
  X(relu, IF, SAME, __VA_ARGS__) X(gelu, F, SAME, __VA_ARGS__)                    \
  X(silu, F, SAME, __VA_ARGS__) X(softplus, F, SAME, __VA_ARGS__)                 \
  X(erf, F, SAME, __VA_ARGS__) X(floor, IF, SAME, __VA_ARGS__)                    \
  X(ceil, IF, SAME, __VA_ARGS__) X(round, IF, SAME, __VA_ARGS__)                  \
  X(trunc, IF, SAME, __VA_ARGS__) X(frac, F, SAME, __VA_ARGS__)                   \
  X(nan_to_num, BIF, SAME, __VA_ARGS__) X(isnan, BIF, BOOL, __VA_ARGS__)          \
  X(isinf, BIF, BOOL, __VA_ARGS__) X(isfinite, BIF, BOOL, __VA_ARGS__)            \
  X(lnot, B, BOOL, __VA_ARGS__) X(bnot, BI, SAME, __VA_ARGS__)                   \
  EM_EW_UNARY_SPECIAL(X, __VA_ARGS__)

/* The special functions' unary kernels (issue 19): polygamma reads its
** order from i0, logit its eps from p0 (flags 1: eps given). */
#define EM_EW_UNARY_SPECIAL(X, ...)  \
  X(erfc, F, SAME, __VA_ARGS__) X(erfinv, F, SAME, __VA_ARGS__)                   \
  X(lgamma, F, SAME, __VA_ARGS__) X(digamma, F, SAME, __VA_ARGS__)                \
  X(polygamma, F, SAME, __VA_ARGS__) X(i0, F, SAME, __VA_ARGS__)                  \
  X(i0e, F, SAME, __VA_ARGS__) X(i1, F, SAME, __VA_ARGS__)                        \
  X(i1e, F, SAME, __VA_ARGS__) X(ndtr, F, SAME, __VA_ARGS__)                      \
  X(ndtri, F, SAME, __VA_ARGS__) X(log_ndtr, F, SAME, __VA_ARGS__)                \
  X(sinc, F, SAME, __VA_ARGS__) X(entr, F, SAME, __VA_ARGS__)                     \
  X(logit, F, SAME, __VA_ARGS__) X(asinh, F, SAME, __VA_ARGS__)                   \
  X(acosh, F, SAME, __VA_ARGS__) X(atanh, F, SAME, __VA_ARGS__)                   \
  X(erfcx, F, SAME, __VA_ARGS__) X(bessel_j0, F, SAME, __VA_ARGS__)               \
  X(bessel_j1, F, SAME, __VA_ARGS__) X(bessel_y0, F, SAME, __VA_ARGS__)           \
  X(bessel_y1, F, SAME, __VA_ARGS__) \
  X(bessel_k0, F, SAME, __VA_ARGS__) \
  X(bessel_k1, F, SAME, __VA_ARGS__) \
  X(bessel_k0e, F, SAME, __VA_ARGS__) \
  X(bessel_k1e, F, SAME, __VA_ARGS__) \
  X(airy_ai, F, SAME, __VA_ARGS__) \
  X(spherical_j0, F, SAME, __VA_ARGS__)

#define EM_EW_TERNARY_KERNELS(X, ...)  \
  X(lerp, F, SAME, __VA_ARGS__) X(clamp, IF, SAME, __VA_ARGS__)

#define EM_EW_ENUM(OP, M, OUTC, ...) EM_K_##OP,
typedef enum em_ew_kernel {
  EM_EW_BINARY_KERNELS(EM_EW_ENUM, _) EM_EW_UNARY_KERNELS(EM_EW_ENUM, _)
  EM_EW_TERNARY_KERNELS(EM_EW_ENUM, _) EM_EW_NKERNELS
} em_ew_kernel;
#undef EM_EW_ENUM

/* Kind masks as bits: B 1, I 2, F 4 (em_ew_kernel_supports). */
enum { EM_EW_B = 1, EM_EW_BI = 3, EM_EW_I = 2, EM_EW_IF = 6, EM_EW_F = 4, EM_EW_BIF = 7 };

typedef struct em_ew_kernels {
  /* Runs kernel k for compute dtype dt over it (operand 0 the output;
  ** it->numel may be 0). The (k, dt) pair is one the lists allow. */
  void (*run)(em_ew_kernel k, em_dtype dt, const em_iter *it, const em_kctx *ctx);
  /* 1 when some element of operand 0 of it (an integer dtype) is zero:
  ** the integer-division check, made before anything is written. */
  int (*any_zero)(const em_iter *it, em_dtype dt);
} em_ew_kernels;

extern const em_ew_kernels em_cpu_ew_kernels, em_meta_ew_kernels;

#endif
