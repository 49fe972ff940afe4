/*
** core/special_impl.h -- the bodies of cpu/special.h's functions, written
** once for two compilers: cpu/special.c includes them as static inline C
** (and exports em_sp_*), cuda/kernels.cu as device functions, so a special
** function on cuda runs the CPU's algorithm step for step (in double, as
** here; the device's libm may differ from glibc's in the last bits). It
** lives in core/ because both device folders include it (a device folder
** sees only core and itself); it is plain scalar C with no state.
**
** The algorithms are the ones PyTorch 1.13 uses (aten/src/ATen/native/
** Math.h, which takes them from the Cephes Math Library, 3-clause BSD,
** Copyright (c) 2018 Steven Moshier): digamma and trigamma by the
** recurrence to x >= 10 (6 for trigamma) then the asymptotic series,
** reflection for x < 0 (0.5); the Hurwitz zeta by Euler-Maclaurin
** summation (Cephes zeta.c: nine direct terms, then the Bernoulli-number
** tail); polygamma(n >= 2) as (-1)^(n+1) n! zeta(n + 1, x). Written here
** from those descriptions:
** - lgamma is libm's lgamma_r (the reentrant one: lgamma writes the global
**   signgam, a race under OpenMP); on the device, CUDA's lgamma.
** - erfinv: for |y| <= 0.5 a first guess from ndtri refined by two Newton
**   steps on erf (PyTorch refines a rational guess the same way); above,
**   erfinv(y) = -ndtri((1 - |y|) / 2) / sqrt(2), where 1 - |y| is exact.
** - ndtri: Acklam's rational approximation, then one Halley step on erfc
**   (full double precision); log_ndtr: log1p(-ndtr(-x)) above -1,
**   log(ndtr(x)) down to -20, then the asymptotic series of Mills' ratio.
** - i0e/i1e: the power series (positive terms) for |x| <= 30, the
**   asymptotic expansion of I_nu(x) e^-x sqrt(2 pi x) above; i0/i1 scale
**   back by e^|x|: inf past ~713 and at +-inf (PyTorch 1.13 gives NaN at
**   +-inf, from inf * 0 in its scaling; the limit is what SciPy gives).
** PyTorch's edge values: digamma(+-0) = -+inf, digamma(negative integer) =
** NaN; zeta(1, q) = inf, zeta(x < 1, q) = NaN, zeta(x, q <= 0 integer) =
** inf; polygamma(n, x) at non-positive integers follows zeta.
*/
#ifndef EMBER_CORE_SPECIAL_IMPL_H
#define EMBER_CORE_SPECIAL_IMPL_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SP_FN static __device__ inline
#define SP_TABLE const /* a local table: device code has no static ones here */
#else
#define SP_FN static inline
#define SP_TABLE static const
#endif

#define SP_PI 3.14159265358979323846
#define SP_SQRT2 1.41421356237309504880
#define SP_SQRT2PI 2.50662827463100050242
#define SP_LOG_SQRT2PI 0.91893853320467274178
#define SP_LN2 0.69314718055994530942

SP_FN double sp_lgamma(double x) {
#ifdef __CUDACC__
  return lgamma(x); /* the device's is reentrant */
#else
  int sign;
  return lgamma_r(x, &sign);
#endif
}

SP_FN double sp_digamma(double x) {
  if (x == 0) return copysign(INFINITY, -x);
  if (x != x) return x;
  if (x < 0) {
    if (x == trunc(x)) return NAN;
    double q, r = modf(x, &q);
    return sp_digamma(1 - x) - SP_PI / tan(SP_PI * r);
  }
  if (x == INFINITY) return x;
  double res = 0;
  while (x < 10) {
    res -= 1 / x;
    x += 1;
  }
  if (x == 10) return res + 2.25175258906672110764;  /* psi(10) */
  double y = 0;
  if (x < 1.0e17) {
    /* sum of B_2k / (2k x^2k), k = 1..7 */
    double z = 1.0 / (x * x);
    y = z * (1.0 / 12 + z * (-1.0 / 120 + z * (1.0 / 252 + z * (-1.0 / 240 +
        z * (1.0 / 132 + z * (-691.0 / 32760 + z * (1.0 / 12)))))));
  }
  return res + log(x) - 0.5 / x - y;
}

SP_FN double sp_trigamma(double x) {
  double sign = 1, res = 0;
  if (x != x) return x;
  if (x < 0.5) {
    sign = -1;
    double s = sin(SP_PI * x);
    res -= SP_PI * SP_PI / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; i++) {
    res += 1 / (x * x);
    x += 1;
  }
  double ixx = 1 / (x * x);
  res += (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x;
  return sign * res;
}

SP_FN double sp_zeta(double x, double q) {
  /* (2k)! / B_2k, k = 1..12 */
  SP_TABLE double A[12] = {
      12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
      7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
      -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
  const double MACHEP = 1.11022302462515654042e-16;
  if (x != x || q != q) return x + q;
  if (x == 1) return INFINITY;
  if (x < 1) return NAN;
  if (q <= 0) {
    if (q == floor(q)) return INFINITY;
    if (x != floor(x)) return NAN;
  }
  double s = pow(q, -x), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i++;
    a += 1;
    b = pow(a, -x);
    s += b;
    if (-MACHEP * s < b && b < MACHEP * s) return s;
  }
  double w = a, k = 0, t;
  s += b * w / (x - 1);
  s -= 0.5 * b;
  a = 1;
  for (i = 0; i < 12; i++) {
    a *= x + k;
    b /= w;
    t = a * b / A[i];
    s += t;
    if (fabs(t / s) < MACHEP) return s;
    k += 1;
    a *= x + k;
    b /= w;
    k += 1;
  }
  return s;
}

SP_FN double sp_polygamma(int64_t n, double x) {
  if (n == 0) return sp_digamma(x);
  if (n == 1) return sp_trigamma(x);
  double nn = (double)n;
  return ((n % 2) ? 1.0 : -1.0) * exp(sp_lgamma(nn + 1.0)) * sp_zeta(nn + 1.0, x);
}

SP_FN double sp_ndtr(double x) { return 0.5 * erfc(-x / SP_SQRT2); }

SP_FN double sp_ndtri(double p) {
  SP_TABLE double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                              -2.759285104469687e+02, 1.383577518672690e+02,
                              -3.066479806614716e+01, 2.506628277459239e+00};
  SP_TABLE double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02,
                              -1.556989798598866e+02, 6.680131188771972e+01,
                              -1.328068155288572e+01};
  SP_TABLE double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                              -2.400758277161838e+00, -2.549732539343734e+00,
                              4.374664141464968e+00, 2.938163982698783e+00};
  SP_TABLE double d[4] = {7.784695709041462e-03, 3.224671290700398e-01,
                              2.445134137142996e+00, 3.754408661907416e+00};
  if (p != p || p < 0 || p > 1) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  double x, q, r;
  if (p < 0.02425) {
    q = sqrt(-2 * log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - 0.02425) {
    q = p - 0.5;
    r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    q = sqrt(-2 * log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  /* Halley steps on Phi(x) - p; the upper tail works on 1 - p = Phi(-x) */
  for (int it = 0; it < 2; it++) {
    double e = p > 0.5 ? -(0.5 * erfc(x / SP_SQRT2) - (1 - p)) : 0.5 * erfc(-x / SP_SQRT2) - p;
    double u = e * SP_SQRT2PI * exp(x * x / 2);
    x = x - u / (1 + x * u / 2);
  }
  return x;
}

SP_FN double sp_erfinv(double y) {
  if (y != y || y < -1 || y > 1) return NAN;
  if (y == 1 || y == -1) return copysign(INFINITY, y);
  double ay = fabs(y);
  if (ay > 0.5) return copysign(-sp_ndtri((1 - ay) / 2) / SP_SQRT2, y);
  double x = sp_ndtri((1 + y) / 2) / SP_SQRT2;
  for (int it = 0; it < 2; it++)
    x -= (erf(x) - y) / (2 / sqrt(SP_PI) * exp(-x * x));
  return x;
}

SP_FN double sp_log_ndtr(double x) {
  if (x != x) return x;
  if (x > -1) return log1p(-0.5 * erfc(x / SP_SQRT2));
  if (x > -20) return log(0.5 * erfc(-x / SP_SQRT2));
  if (x == -INFINITY) return -INFINITY;
  /* log(phi(x) / -x) + log(1 - 1/x^2 + 3/x^4 - 15/x^6 ...) */
  double z = 1 / (x * x), t = 1, s = 1;
  for (int k = 1; k < 40; k++) {
    t *= -(2 * k - 1) * z;
    s += t;
    if (fabs(t) < 1e-17) break;
  }
  return -0.5 * x * x - SP_LOG_SQRT2PI - log(-x) + log(s);
}

/* I_0(a) e^-a and I_1(a) e^-a for a >= 0 */
SP_FN double sp_bessel_e(int order, double a) {
  if (a <= 30) {
    double q = a * a / 4, t = order ? a / 2 : 1, s = t;
    for (int k = 1; k < 500; k++) {
      t *= q / ((double)k * (double)(k + order));
      s += t;
      if (t <= s * 1e-17) break;
    }
    return s * exp(-a);
  }
  double mu = 4.0 * order * order, t = 1, s = 1;
  for (int k = 1; k < 60; k++) {
    double m = (double)(2 * k - 1);
    t *= -(mu - m * m) / (8.0 * k * a);
    s += t;
    if (fabs(t) < 1e-17 * fabs(s)) break;
  }
  return s / sqrt(2 * SP_PI * a);
}

SP_FN double sp_i0e(double x) {
  if (x != x) return x;
  if (isinf(x)) return 0;
  return sp_bessel_e(0, fabs(x));
}
SP_FN double sp_i0(double x) {
  if (x != x) return x;
  double a = fabs(x);
  if (a > 720) return INFINITY;
  return sp_bessel_e(0, a) * exp(a);
}
SP_FN double sp_i1e(double x) {
  if (x != x) return x;
  if (isinf(x)) return copysign(0.0, x);
  return copysign(sp_bessel_e(1, fabs(x)), x);
}
SP_FN double sp_i1(double x) {
  if (x != x) return x;
  double a = fabs(x);
  if (a > 720) return copysign(INFINITY, x);
  return copysign(sp_bessel_e(1, a) * exp(a), x);
}

SP_FN double sp_sinc(double x) {
  if (x == 0) return 1;  /* sinc(+-inf) is NaN, as PyTorch's sin(inf) / inf */
  double px = SP_PI * x;
  return sin(px) / px;
}

SP_FN double sp_entr(double x) {
  if (x != x) return x;
  if (x > 0) return -x * log(x);
  if (x == 0) return 0;
  return -INFINITY;
}

SP_FN double sp_logit(double x, int has_eps, double eps) {
  if (has_eps) x = x < eps ? eps : x > 1 - eps ? 1 - eps : x;
  return log(x / (1 - x));
}

SP_FN double sp_logaddexp(double a, double b) {
  if (a != a || b != b) return a + b;
  double m = a > b ? a : b;
  if (isinf(m) && a == b) return a;
  return m + log1p(exp(-fabs(a - b)));
}

/* The regularized incomplete gamma functions P(a, x) (gammainc) and
** Q(a, x) = 1 - P (gammaincc), Cephes igam/igamc: the power series of P
** where x < a + 1 (or x <= 1), else Legendre's continued fraction of Q
** (rescaled when its terms grow past 2^52), each until a term is below
** double's epsilon (capped at 2000 steps). PyTorch's edge values: NaN for
** a < 0 or x < 0 (or NaN); a = 0: P = 1, Q = 0 for x > 0, NaN at x = 0;
** x = 0: P = 0; x = inf: P = 1. (PyTorch 1.13 switches to Temme's
** asymptotic series for very large a; there the two differ in the last
** digits.) */
SP_FN double sp_igam_series(double a, double x) {
  const double MACHEP = 1.11022302462515654042e-16;
  double ax = a * log(x) - x - sp_lgamma(a);
  if (ax < -709.78271289338397) return 0;
  ax = exp(ax);
  double r = a, c = 1, ans = 1;
  for (int i = 0; i < 2000; i++) {
    r += 1;
    c *= x / r;
    ans += c;
    if (c <= ans * MACHEP) break;
  }
  return ans * ax / a;
}
SP_FN double sp_igamc_fraction(double a, double x) {
  const double MACHEP = 1.11022302462515654042e-16, BIG = 4503599627370496.0,
               BIGINV = 2.22044604925031308085e-16;
  double ax = a * log(x) - x - sp_lgamma(a);
  if (ax < -709.78271289338397) return 0;
  ax = exp(ax);
  double y = 1 - a, z = x + y + 1, c = 0;
  double pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x;
  double ans = pkm1 / qkm1;
  for (int i = 0; i < 2000; i++) {
    c += 1;
    y += 1;
    z += 2;
    double yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc, t = 1;
    if (qk != 0) {
      double r = pk / qk;
      t = fabs((ans - r) / r);
      ans = r;
    }
    pkm2 = pkm1;
    pkm1 = pk;
    qkm2 = qkm1;
    qkm1 = qk;
    if (fabs(pk) > BIG) {
      pkm2 *= BIGINV;
      pkm1 *= BIGINV;
      qkm2 *= BIGINV;
      qkm1 *= BIGINV;
    }
    if (t <= MACHEP) break;
  }
  return ans * ax;
}
/* upper: Q, else P */
SP_FN double sp_igamma(double a, double x, int upper) {
  if (a != a || x != x || a < 0 || x < 0) return NAN;
  if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : NAN;
  if (x == 0) return upper ? 1.0 : 0.0;
  if (isinf(a)) return isinf(x) ? NAN : (upper ? 1.0 : 0.0);
  if (isinf(x)) return upper ? 0.0 : 1.0;
  if (x <= 1 || x < a + 1) {
    double p = sp_igam_series(a, x);
    return upper ? 1 - p : p;
  }
  double q = sp_igamc_fraction(a, x);
  return upper ? q : 1 - q;
}

/* erfcx(x) = exp(x^2) erfc(x): directly up to 26 (exp(x^2) finite, erfc
** relative-accurate); above, the asymptotic series of erfc's continued
** fraction, 1 / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(2x^2)^2 - 15/(2x^2)^3 ...);
** below -26.6, inf (2 exp(x^2) overflows). */
SP_FN double sp_erfcx(double x) {
  if (x != x) return x;
  if (x < 26) {
    if (x < -26.7) return INFINITY;
    return exp(x * x) * erfc(x);
  }
  if (isinf(x)) return 0;
  double t = 1 / (2 * x * x), term = 1, sum = 1;
  for (int k = 1; k < 12; k++) {
    term *= -(2 * k - 1) * t;
    sum += term;
  }
  return sum / (x * 1.77245385090551602730);
}

SP_FN double sp_logaddexp2(double a, double b) {
  if (a != a || b != b) return a + b;
  double m = a > b ? a : b;
  if (isinf(m) && a == b) return a;
  return m + log1p(exp2(-fabs(a - b))) / SP_LN2;
}

#endif
