/*
** cpu/special.h -- scalar special functions for the elementwise kernels
** (cpu/elementwise.c): the gamma family, the modified Bessel functions of
** order 0 and 1, the normal distribution's functions and erfinv.
**
** Each is computed in double; the float kernels round the double result
** once (so float32 results are correctly rounded or within an ulp, where
** PyTorch's float versions compute in float). Edge values follow PyTorch
** 1.13 (aten/src/ATen/native/Math.h): NaN in, NaN out; poles give +-inf
** as documented in cpu/special.c.
*/
#ifndef EMBER_CPU_SPECIAL_H
#define EMBER_CPU_SPECIAL_H

#include <stdint.h>

double em_sp_lgamma(double x);
double em_sp_digamma(double x);
double em_sp_trigamma(double x);
double em_sp_zeta(double x, double q);   /* Hurwitz zeta(x, q) */
double em_sp_igamma(double a, double x, int upper); /* P(a, x), or Q(a, x) when upper */
double em_sp_erfcx(double x);                       /* exp(x^2) erfc(x) */
double em_sp_bessel_k(int which, int scaled, double x); /* K0/K1 (which), times e^x when scaled */
double em_sp_airy_ai(double x);
double em_sp_spherical_j0(double x);                /* sin(x)/x */
double em_sp_poly(int which, double x, double n);   /* the orthogonal polynomials (special_impl.h) */
double em_sp_polygamma(int64_t n, double x);
double em_sp_erfinv(double y);
double em_sp_ndtr(double x);
double em_sp_ndtri(double p);
double em_sp_log_ndtr(double x);
double em_sp_i0e(double x);
double em_sp_i0(double x);
double em_sp_i1e(double x);
double em_sp_i1(double x);
double em_sp_sinc(double x);
double em_sp_entr(double x);
double em_sp_logit(double x, int has_eps, double eps);
double em_sp_logaddexp(double a, double b);
double em_sp_logaddexp2(double a, double b);

#endif
