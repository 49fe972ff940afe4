/*
** cpu/optim.c -- the optimizer family of the CPU's kernels
** (core/kern_optim.h): one fused pass over a parameter, its gradient and
** its state for SGD, Adam/AdamW and RMSprop (ops/optim.c checks and
** drives them).
**
** What holds:
** - Each update is PyTorch 1.13's single-tensor (for-loop) update, op for
**   op: every tensor op of torch/optim/{sgd,adam,rmsprop}.py is one
**   expression here, evaluated in the same order and rounded to the
**   parameter's dtype where PyTorch stores a tensor (float32 math for
**   float32, float64 for float64; float16/bfloat16 are computed in float and
**   rounded once, on the store). Scalars (lr, betas, bias corrections) are
**   computed in double as Python does and converted to the compute type
**   where PyTorch converts them. tests/lua/optim_spec.lua compares against
**   torch.optim in float64 and float32.
** - Every element is updated independently, so large parameters are cut
**   over the engine's threads (em_iter_run_parallel) with results that do
**   not depend on the thread count.
*/
#include <math.h>
#include <stdlib.h>

#include "core/kern_optim.h"

/* -- Per-dtype load/store ---------------------------------------------------- */

#define OPT_WHEN_EM_KIND_BOOL(...)
#define OPT_WHEN_EM_KIND_INT(...)
#define OPT_WHEN_EM_KIND_FLOAT(...) __VA_ARGS__

/* the compute type of each floating dtype */
#define OPT_ACC_f16 float
#define OPT_ACC_bf16 float
#define OPT_ACC_f32 float
#define OPT_ACC_f64 double
#define OPT_LD_f16(p) em_half_to_float(*(const em_half *)(p))
#define OPT_LD_bf16(p) em_bf16_to_float(*(const em_bfloat16 *)(p))
#define OPT_LD_f32(p) (*(const float *)(p))
#define OPT_LD_f64(p) (*(const double *)(p))
#define OPT_SQRT_f16 sqrtf
#define OPT_SQRT_bf16 sqrtf
#define OPT_SQRT_f32 sqrtf
#define OPT_SQRT_f64 sqrt
#define OPT_ST_f16(p, v) (*(em_half *)(p) = em_float_to_half(v))
#define OPT_ST_bf16(p, v) (*(em_bfloat16 *)(p) = em_float_to_bf16(v))
#define OPT_ST_f32(p, v) (*(float *)(p) = (v))
#define OPT_ST_f64(p, v) (*(double *)(p) = (v))

/* Each optimizer has one element loop per dtype, opt_<name>_loop_<dtype>,
** taking its options' switches as four int flags. The 1-d kernel calls it
** with constant flags on contiguous float32/float64 operands, so every
** combination is compiled into its own branch-free loop the vectoriser
** takes (measured: the SGD step of the digits MLP 46 -> 10 us); strided
** and 16-bit operands take the same loop with the flags read at run time.
** maximize multiplies the gradient by -1 (exact, as -g). */
#define OPT_INLINE static inline __attribute__((always_inline))
#define OPT_CASE(f, k) \
  case k: f(data, st, n, o, 1, (k)&1, (k) >> 1 & 1, (k) >> 2 & 1, (k) >> 3 & 1); break;
#define OPT_CASES8(f) \
  OPT_CASE(f, 0) OPT_CASE(f, 1) OPT_CASE(f, 2) OPT_CASE(f, 3) \
  OPT_CASE(f, 4) OPT_CASE(f, 5) OPT_CASE(f, 6) OPT_CASE(f, 7)
#define OPT_CASES16(f) OPT_CASES8(f) \
  OPT_CASE(f, 8) OPT_CASE(f, 9) OPT_CASE(f, 10) OPT_CASE(f, 11) \
  OPT_CASE(f, 12) OPT_CASE(f, 13) OPT_CASE(f, 14) OPT_CASE(f, 15)
/* the k-th operand's element i: walked by index when contiguous */
#define OPT_AT(k, CT) (contig ? data[k] + i * (int64_t)sizeof(CT) : data[k] + i * st[k])
#define OPT_DISPATCH(S, CT, nops, f, cases, flags)                                 \
  const em_optim_params *o = ctx;                                                  \
  int contig = sizeof(CT) >= 4;                                                    \
  for (int k_ = 0; k_ < (nops); k_++) contig &= st[k_] == (int64_t)sizeof(CT);    \
  int v_ = (flags);                                                                \
  if (!contig) {                                                                   \
    f(data, st, n, o, 0, v_ & 1, v_ >> 1 & 1, v_ >> 2 & 1, v_ >> 3 & 1);           \
    return;                                                                        \
  }                                                                                \
  switch (v_) { cases(f) }

/* -- SGD ---------------------------------------------------------------------
** operands: 0 param, 1 grad, 2 momentum buffer (the param when momentum == 0)
** flags: has_wd, has_momentum, first (the buffer is new), nesterov
**   d = maximize ? -g : g
**   d = d + wd * p                               (d_p.add(param, alpha=wd))
**   buf = first ? d : buf * momentum + (1 - dampening) * d
**   d = nesterov ? d + momentum * buf : buf
**   p = p + (-lr) * d                            (param.add_(d_p, alpha=-lr)) */
#define DEF_SGD(S, E, CT, K) OPT_WHEN_##K(                                          \
  OPT_INLINE void opt_sgd_loop_##S(char **data, const int64_t *st, int64_t n,       \
                                   const em_optim_params *o, const int contig,      \
                                   const int has_wd, const int has_mom,             \
                                   const int first, const int nesterov) {           \
    typedef OPT_ACC_##S acc;                                                        \
    const acc sgn = o->maximize ? (acc)-1 : (acc)1, wd = (acc)o->weight_decay;      \
    const acc mom = (acc)o->momentum, damp1 = (acc)(1.0 - o->dampening);            \
    const acc neglr = (acc)(-o->lr);                                                \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *pb = OPT_AT(2, CT);                                \
      const char *pg = OPT_AT(1, CT);                                               \
      acc p = OPT_LD_##S(pp), d = OPT_LD_##S(pg) * sgn;                             \
      if (has_wd) d = d + wd * p;                                                   \
      if (has_mom) {                                                                \
        acc b;                                                                      \
        if (first) {                                                                \
          b = d;                                                                    \
        } else {                                                                    \
          b = OPT_LD_##S(pb) * mom;                                                 \
          b = b + damp1 * d;                                                        \
        }                                                                           \
        OPT_ST_##S(pb, b);                                                          \
        b = OPT_LD_##S(pb); /* the stored buffer, rounded as PyTorch's */           \
        d = nesterov ? d + mom * b : b;                                             \
      }                                                                             \
      OPT_ST_##S(pp, p + neglr * d);                                                \
    }                                                                               \
  }                                                                                 \
  static void em_sgd_##S(char **data, const int64_t *st, int64_t n, void *ctx) {    \
    OPT_DISPATCH(S, CT, 3, opt_sgd_loop_##S, OPT_CASES16,                           \
                 (o->weight_decay != 0) | o->has_momentum << 1 |                    \
                     (o->has_momentum && o->first) << 2 |                           \
                     (o->has_momentum && o->nesterov) << 3)                         \
  })
EM_FOR_EACH_DTYPE(DEF_SGD)

/* -- Adam / AdamW ------------------------------------------------------------
** operands: 0 param, 1 grad, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq
** (the param without amsgrad); flags: has_wd, decoupled, amsgrad
**   g = maximize ? -g : g
**   AdamW: p = p * (1 - lr * wd)                  (param.mul_(1 - lr * wd))
**   Adam:  g = g + wd * p                         (grad.add(param, alpha=wd))
**   m = m * beta1;  m = m + (1 - beta1) * g       (mul_, add_(alpha=))
**   v = v * beta2;  v = v + (1 - beta2) * g * g   (mul_, addcmul_(value=))
**   amsgrad: vmax = max(vmax, v); v' = vmax       (torch.maximum: NaN wins)
**   denom = sqrt(v') / bc2_sqrt + eps             (sqrt, div, add_)
**   p = p + (-step_size) * m / denom              (addcdiv_(value=)) */
#define DEF_ADAM(S, E, CT, K) OPT_WHEN_##K(                                         \
  OPT_INLINE void opt_adam_loop_##S(char **data, const int64_t *st, int64_t n,      \
                                    const em_optim_params *o, const int contig,     \
                                    const int has_wd, const int decoupled,          \
                                    const int amsgrad, const int unused) {          \
    typedef OPT_ACC_##S acc;                                                        \
    const acc sgn = o->maximize ? (acc)-1 : (acc)1, wd = (acc)o->weight_decay;      \
    const acc decay = (acc)(1.0 - o->lr * o->weight_decay);                         \
    const acc b1 = (acc)o->beta1, b2 = (acc)o->beta2;                               \
    const acc ob1 = (acc)(1.0 - o->beta1), ob2 = (acc)(1.0 - o->beta2);             \
    const acc bc2s = (acc)o->bc2_sqrt, eps = (acc)o->eps;                           \
    const acc negss = (acc)(-o->step_size);                                         \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *pm = OPT_AT(2, CT), *pv = OPT_AT(3, CT);           \
      char *px = OPT_AT(4, CT);                                                     \
      const char *pg = OPT_AT(1, CT);                                               \
      acc p = OPT_LD_##S(pp), g = OPT_LD_##S(pg) * sgn;                             \
      if (has_wd) {                                                                 \
        if (decoupled) {                                                            \
          OPT_ST_##S(pp, p * decay);                                                \
          p = OPT_LD_##S(pp);                                                       \
        } else {                                                                    \
          g = g + wd * p;                                                           \
        }                                                                           \
      }                                                                             \
      acc m = OPT_LD_##S(pm) * b1;                                                  \
      m = m + ob1 * g;                                                              \
      OPT_ST_##S(pm, m);                                                            \
      m = OPT_LD_##S(pm);                                                           \
      acc v = OPT_LD_##S(pv) * b2;                                                  \
      v = v + ob2 * g * g;                                                          \
      OPT_ST_##S(pv, v);                                                            \
      v = OPT_LD_##S(pv);                                                           \
      if (amsgrad) {                                                                \
        acc x = OPT_LD_##S(px);                                                     \
        x = (x != x || v != v) ? x + v : (x > v ? x : v);                           \
        OPT_ST_##S(px, x);                                                          \
        v = OPT_LD_##S(px);                                                         \
      }                                                                             \
      acc denom = OPT_SQRT_##S(v);                                                     \
      denom = denom / bc2s;                                                         \
      denom = denom + eps;                                                          \
      OPT_ST_##S(pp, p + negss * m / denom);                                        \
    }                                                                               \
  }                                                                                 \
  static void em_adam_##S(char **data, const int64_t *st, int64_t n, void *ctx) {   \
    OPT_DISPATCH(S, CT, o->amsgrad ? 5 : 4, opt_adam_loop_##S, OPT_CASES8,          \
                 (o->weight_decay != 0) | (o->weight_decay != 0 && o->decoupled) << 1 | \
                     o->amsgrad << 2)                                               \
  })
EM_FOR_EACH_DTYPE(DEF_ADAM)

/* -- RMSprop -----------------------------------------------------------------
** operands: 0 param, 1 grad, 2 square_avg, 3 momentum_buffer, 4 grad_avg
** (the param where absent); flags: has_wd, centered, has_momentum
**   g = maximize ? -g : g;  g = g + wd * p
**   sq = sq * alpha;  sq = sq + (1 - alpha) * g * g       (mul_, addcmul_)
**   centered: ga = ga * alpha;  ga = ga + (1 - alpha) * g (mul_, add_)
**             avg = sqrt(sq + (-1) * ga * ga)             (addcmul, sqrt_)
**   else      avg = sqrt(sq)
**   avg = avg + eps
**   momentum: buf = buf * momentum + 1 * g / avg;  p = p + (-lr) * buf
**   else      p = p + (-lr) * g / avg                     (addcdiv_) */
#define DEF_RMSPROP(S, E, CT, K) OPT_WHEN_##K(                                      \
  OPT_INLINE void opt_rmsprop_loop_##S(char **data, const int64_t *st, int64_t n,   \
                                       const em_optim_params *o, const int contig,  \
                                       const int has_wd, const int centered,        \
                                       const int has_mom, const int unused) {       \
    typedef OPT_ACC_##S acc;                                                        \
    const acc sgn = o->maximize ? (acc)-1 : (acc)1, wd = (acc)o->weight_decay;      \
    const acc al = (acc)o->alpha, oal = (acc)(1.0 - o->alpha), eps = (acc)o->eps;   \
    const acc mom = (acc)o->momentum, neglr = (acc)(-o->lr);                        \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *ps = OPT_AT(2, CT), *pb = OPT_AT(3, CT);           \
      char *pa = OPT_AT(4, CT);                                                     \
      const char *pg = OPT_AT(1, CT);                                               \
      acc p = OPT_LD_##S(pp), g = OPT_LD_##S(pg) * sgn;                             \
      if (has_wd) g = g + wd * p;                                                   \
      acc sq = OPT_LD_##S(ps) * al;                                                 \
      sq = sq + oal * g * g;                                                        \
      OPT_ST_##S(ps, sq);                                                           \
      sq = OPT_LD_##S(ps);                                                          \
      acc avg;                                                                      \
      if (centered) {                                                               \
        acc ga = OPT_LD_##S(pa) * al;                                               \
        ga = ga + oal * g;                                                          \
        OPT_ST_##S(pa, ga);                                                         \
        ga = OPT_LD_##S(pa);                                                        \
        avg = sq + (acc)-1 * ga * ga;                                               \
        avg = OPT_SQRT_##S(avg);                                                       \
      } else {                                                                      \
        avg = OPT_SQRT_##S(sq);                                                        \
      }                                                                             \
      avg = avg + eps;                                                              \
      if (has_mom) {                                                                \
        acc b = OPT_LD_##S(pb) * mom;                                               \
        b = b + (acc)1 * g / avg;                                                   \
        OPT_ST_##S(pb, b);                                                          \
        b = OPT_LD_##S(pb);                                                         \
        OPT_ST_##S(pp, p + neglr * b);                                              \
      } else {                                                                      \
        OPT_ST_##S(pp, p + neglr * g / avg);                                        \
      }                                                                             \
    }                                                                               \
  }                                                                                 \
  static void em_rmsprop_##S(char **data, const int64_t *st, int64_t n, void *ctx) { \
    OPT_DISPATCH(S, CT, 5, opt_rmsprop_loop_##S, OPT_CASES8,                        \
                 (o->weight_decay != 0) | o->centered << 1 | o->has_momentum << 2)  \
  })
EM_FOR_EACH_DTYPE(DEF_RMSPROP)

#define OPT_ROW_SGD(S, E, CT, K) OPT_WHEN_##K([E] = em_sgd_##S, )
#define OPT_ROW_ADAM(S, E, CT, K) OPT_WHEN_##K([E] = em_adam_##S, )
#define OPT_ROW_RMSPROP(S, E, CT, K) OPT_WHEN_##K([E] = em_rmsprop_##S, )
static const em_loop1d sgd_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(OPT_ROW_SGD)};
static const em_loop1d adam_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(OPT_ROW_ADAM)};
static const em_loop1d rmsprop_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(OPT_ROW_RMSPROP)};

/* -- The table ----------------------------------------------------------------- */

static void cpu_sgd(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  if (it->numel > 0) em_iter_run_parallel(it, sgd_loops[dt], (void *)p);
}
static void cpu_adam(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  if (it->numel > 0) em_iter_run_parallel(it, adam_loops[dt], (void *)p);
}
static void cpu_rmsprop(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  if (it->numel > 0) em_iter_run_parallel(it, rmsprop_loops[dt], (void *)p);
}

const em_optim_kernels em_cpu_optim_kernels = {
    .sgd = cpu_sgd,
    .adam = cpu_adam,
    .rmsprop = cpu_rmsprop,
};
