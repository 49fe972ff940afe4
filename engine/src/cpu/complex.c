/*
** cpu/complex.c -- the complex family of the CPU's kernels (core/kern_cplx.h):
** the elementwise loops of complex64/complex128 on C99's complex arithmetic
** (Annex G: division and the functions handle infinities as C specifies),
** and the FFT on pocketfft (engine/third_party/pocketfft, BSD-3-Clause, the
** C version NumPy 1.17-1.26 ships), batched over lanes with OpenMP.
*/
#include "core/kern_cplx.h"
#include "core/errmsg.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "pocketfft/pocketfft.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* -- Elementwise ------------------------------------------------------------ */

typedef struct {
  em_cx_op op;
  double alpha;
} cx_ctx;

/* One loop per complex dtype: C the complex type, V its value type. The
** operation is chosen once per call of the loop, outside the element loop.
** Elements are moved with memcpy (a view's element need not be aligned to
** the complex type's alignment). */
#define CX_UNARY(EXPR, OT)                                                  \
  for (int64_t i = 0; i < n; i++, o += st[0], a += st[1]) {                \
    C x;                                                                   \
    memcpy(&x, a, sizeof x);                                               \
    OT r = (OT)(EXPR);                                                     \
    memcpy(o, &r, sizeof r);                                               \
  }                                                                        \
  break;
#define CX_BINARY(EXPR, OT)                                                 \
  for (int64_t i = 0; i < n; i++, o += st[0], a += st[1], b += st[2]) {    \
    C x, y;                                                                \
    memcpy(&x, a, sizeof x);                                               \
    memcpy(&y, b, sizeof y);                                               \
    OT r = (OT)(EXPR);                                                     \
    memcpy(o, &r, sizeof r);                                               \
  }                                                                        \
  break;

#define DEF_CX_LOOP(NAME, CT, VT, CABS, CARG, CSQRT, CEXP, CLOG, CPOW, CSIN, CCOS, CTANH, CONJ) \
  static void NAME(char **data, const int64_t *st, int64_t n, void *vctx) {  \
    typedef CT C;                                                            \
    typedef VT V;                                                            \
    const cx_ctx *c = vctx;                                                  \
    char *o = data[0];                                                       \
    const char *a = data[1], *b = data[2];                                   \
    const V al = (V)c->alpha;                                                \
    switch (c->op) {                                                         \
      case EM_CX_ADD: CX_BINARY(x + al * y, C)                               \
      case EM_CX_SUB: CX_BINARY(x - al * y, C)                               \
      case EM_CX_MUL: CX_BINARY(x * y, C)                                    \
      case EM_CX_DIV: CX_BINARY(x / y, C)                                    \
      case EM_CX_POW: CX_BINARY(y == 0 ? (C)1 : CPOW(x, y), C)               \
      case EM_CX_EQ: CX_BINARY(x == y, bool)                                 \
      case EM_CX_NE: CX_BINARY(x != y, bool)                                 \
      case EM_CX_NEG: CX_UNARY(-x, C)                                        \
      case EM_CX_ABS: CX_UNARY(CABS(x), V)                                   \
      case EM_CX_ANGLE: CX_UNARY(CARG(x), V)                                 \
      case EM_CX_CONJ: CX_UNARY(CONJ(x), C)                                  \
      case EM_CX_SQRT: CX_UNARY(CSQRT(x), C)                                 \
      case EM_CX_RECIPROCAL: CX_UNARY((C)1 / x, C)                           \
      case EM_CX_EXP: CX_UNARY(CEXP(x), C)                                   \
      case EM_CX_LOG: CX_UNARY(CLOG(x), C)                                   \
      case EM_CX_SIN: CX_UNARY(CSIN(x), C)                                   \
      case EM_CX_COS: CX_UNARY(CCOS(x), C)                                   \
      case EM_CX_TANH: CX_UNARY(CTANH(x), C)                                 \
      case EM_CX_SQUARE: CX_UNARY(x * x, C)                                  \
      default: break;                                                        \
    }                                                                        \
  }
DEF_CX_LOOP(cx_loop_c64, float complex, float, cabsf, cargf, csqrtf, cexpf, clogf, cpowf,
            csinf, ccosf, ctanhf, conjf)
DEF_CX_LOOP(cx_loop_c128, double complex, double, cabs, carg, csqrt, cexp, clog, cpow,
            csin, ccos, ctanh, conj)

static void cpu_cx_ew(em_cx_op op, em_dtype dt, const em_iter *it, double alpha) {
  if (it->numel == 0) return;
  cx_ctx c = {op, alpha};
  em_iter_run_parallel(it, dt == EM_COMPLEX64 ? cx_loop_c64 : cx_loop_c128, &c);
}

/* -- FFT ----------------------------------------------------------------------
** Each lane (one position of the outer and inner dims) is gathered into a
** buffer of n complex128 values, transformed by pocketfft (which computes in
** double; complex64 is converted, as NumPy's pocketfft computes float32) and
** written back. A complex128 lane that is already contiguous (inner == 1) is
** transformed in place. Lanes are split across the engine's threads; the plan
** is shared (pocketfft's plans are read-only while they run). */

static void load_lane(em_dtype dt, const char *base, int64_t n, int64_t inner, double *buf) {
  if (dt == EM_COMPLEX64) {
    const float *p = (const float *)base;
    for (int64_t k = 0; k < n; k++) {
      buf[2 * k] = p[2 * k * inner];
      buf[2 * k + 1] = p[2 * k * inner + 1];
    }
  } else {
    const double *p = (const double *)base;
    for (int64_t k = 0; k < n; k++) {
      buf[2 * k] = p[2 * k * inner];
      buf[2 * k + 1] = p[2 * k * inner + 1];
    }
  }
}

static void store_lane(em_dtype dt, char *base, int64_t n, int64_t inner, const double *buf) {
  if (dt == EM_COMPLEX64) {
    float *p = (float *)base;
    for (int64_t k = 0; k < n; k++) {
      p[2 * k * inner] = (float)buf[2 * k];
      p[2 * k * inner + 1] = (float)buf[2 * k + 1];
    }
  } else {
    double *p = (double *)base;
    for (int64_t k = 0; k < n; k++) {
      p[2 * k * inner] = buf[2 * k];
      p[2 * k * inner + 1] = buf[2 * k + 1];
    }
  }
}

static em_status cpu_fft(em_dtype dt, void *data, int64_t outer, int64_t n, int64_t inner,
                         int forward, double fct) {
  if (outer == 0 || n == 0 || inner == 0) return EM_OK;
  cfft_plan plan = make_cfft_plan((size_t)n);
  if (!plan) return em_fail(EM_E_NOMEM, "fft: out of memory planning a transform of size %lld",
                            (long long)n);
  const size_t esz = em_dtype_size(dt);
  const int64_t lanes = outer * inner;
  const int direct = dt == EM_COMPLEX128 && inner == 1;
  int failed = 0;
  int nt = em_get_num_threads();
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1 && lanes > 1 && lanes * n >= 32768 && !omp_in_parallel())
#endif
  {
    double *buf = direct ? NULL : malloc((size_t)n * 2 * sizeof(double));
    if (!direct && !buf) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
      failed = 1;
    }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t l = 0; l < lanes; l++) {
      if (!direct && !buf) continue;
      int64_t o = l / inner, i = l % inner;
      char *base = (char *)data + ((o * n) * inner + i) * (int64_t)esz;
      double *v = direct ? (double *)base : buf;
      if (!direct) load_lane(dt, base, n, inner, buf);
      int r = forward ? cfft_forward(plan, v, fct) : cfft_backward(plan, v, fct);
      if (r != 0) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
        failed = 1;
      }
      if (!direct) store_lane(dt, base, n, inner, buf);
    }
    free(buf);
  }
  destroy_cfft_plan(plan);
  if (failed)
    return em_fail(EM_E_NOMEM, "fft: out of memory in a transform of size %lld",
                   (long long)n);
  return EM_OK;
}

const em_cplx_kernels em_cpu_cplx_kernels = {
    .ew = cpu_cx_ew,
    .fft = cpu_fft,
};
