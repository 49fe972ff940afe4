/*
** cpu/special.c -- cpu/special.h's functions, exported: their bodies are
** core/special_impl.h (shared with the cuda kernels), where the algorithms
** and PyTorch's edge values are described.
*/
#define _DEFAULT_SOURCE 1 /* lgamma_r */
#include "cpu/special.h"
#include "core/special_impl.h"

double em_sp_lgamma(double x) { return sp_lgamma(x); }
double em_sp_digamma(double x) { return sp_digamma(x); }
double em_sp_trigamma(double x) { return sp_trigamma(x); }
double em_sp_zeta(double x, double q) { return sp_zeta(x, q); }
double em_sp_polygamma(int64_t n, double x) { return sp_polygamma(n, x); }
double em_sp_ndtr(double x) { return sp_ndtr(x); }
double em_sp_ndtri(double p) { return sp_ndtri(p); }
double em_sp_erfinv(double y) { return sp_erfinv(y); }
double em_sp_log_ndtr(double x) { return sp_log_ndtr(x); }
double em_sp_i0e(double x) { return sp_i0e(x); }
double em_sp_i0(double x) { return sp_i0(x); }
double em_sp_i1e(double x) { return sp_i1e(x); }
double em_sp_i1(double x) { return sp_i1(x); }
double em_sp_sinc(double x) { return sp_sinc(x); }
double em_sp_entr(double x) { return sp_entr(x); }
double em_sp_logit(double x, int has_eps, double eps) { return sp_logit(x, has_eps, eps); }
double em_sp_logaddexp(double a, double b) { return sp_logaddexp(a, b); }
double em_sp_logaddexp2(double a, double b) { return sp_logaddexp2(a, b); }
double em_sp_igamma(double a, double x, int upper) { return sp_igamma(a, x, upper); }
double em_sp_erfcx(double x) { return sp_erfcx(x); }
double em_sp_bessel_k(int which, int scaled, double x) { return sp_bessel_k(which, scaled, x); }
double em_sp_airy_ai(double x) { return sp_airy_ai(x); }
double em_sp_spherical_j0(double x) { return sp_spherical_j0(x); }
double em_sp_poly(int which, double x, double n) { return sp_poly(which, x, n); }
