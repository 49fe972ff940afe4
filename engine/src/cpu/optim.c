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


/* -- Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop ----------------------
** (the .other entry, p->kind). Each loop is PyTorch 1.13's
** _single_tensor_<name>, one tensor op per expression, as above. */
#define OPT_CASES1(f) OPT_CASE(f, 0)
#define OPT_CASES2(f) OPT_CASE(f, 0) OPT_CASE(f, 1)
#define OPT_CASES4(f) OPT_CASES2(f) OPT_CASE(f, 2) OPT_CASE(f, 3)
#define OPT_ABS_f16 fabsf
#define OPT_ABS_bf16 fabsf
#define OPT_ABS_f32 fabsf
#define OPT_ABS_f64 fabs
/* ATen's sign of a float: (0 < a) - (a < 0), so NaN gives 0 */
#define OPT_SIGN(acc, a) ((acc)((0 < (a)) - ((a) < 0)))
/* the step's gradient: maximize negates it, weight_decay adds wd * p */
#define OPT_GRAD(S, acc)                                                            \
  acc p = OPT_LD_##S(pp), g = OPT_LD_##S(pg) * sgn;                                \
  if (has_wd) g = g + wd * p;
#define OPT_COMMON(S, acc)                                                          \
  const acc sgn = o->maximize ? (acc)-1 : (acc)1, wd = (acc)o->weight_decay;        \
  const acc eps = (acc)o->eps;                                                      \
  (void)eps;

/* Adagrad: operands 0 param, 1 grad, 2 sum
**   sum = sum + g * g                          (addcmul_(value=1))
**   std = sqrt(sum) + eps                      (sqrt, add_)
**   p = p + (-clr) * g / std                   (addcdiv_; clr = step_size) */
#define DEF_ADAGRAD(S, E, CT, K) OPT_WHEN_##K(                                      \
  OPT_INLINE void opt_adagrad_loop_##S(char **data, const int64_t *st, int64_t n,   \
                                       const em_optim_params *o, const int contig,  \
                                       const int has_wd, const int u1, const int u2, \
                                       const int u3) {                              \
    typedef OPT_ACC_##S acc;                                                        \
    OPT_COMMON(S, acc)                                                              \
    const acc negclr = (acc)(-o->step_size);                                        \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *ps = OPT_AT(2, CT);                                \
      const char *pg = OPT_AT(1, CT);                                               \
      OPT_GRAD(S, acc)                                                              \
      acc sum = OPT_LD_##S(ps) + g * g;                                             \
      OPT_ST_##S(ps, sum);                                                          \
      sum = OPT_LD_##S(ps);                                                         \
      acc std = OPT_SQRT_##S(sum);                                                  \
      std = std + eps;                                                              \
      OPT_ST_##S(pp, p + negclr * g / std);                                         \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(DEF_ADAGRAD)

/* Adadelta: operands 0 param, 1 grad, 2 square_avg, 3 acc_delta
**   sq = sq * rho;  sq = sq + (1 - rho) * g * g
**   std = sqrt(sq + eps)                          (add, sqrt_)
**   delta = sqrt(acc + eps) / std * g             (add, sqrt_, div_, mul_)
**   acc = acc * rho;  acc = acc + (1 - rho) * delta * delta
**   p = p + (-lr) * delta */
#define DEF_ADADELTA(S, E, CT, K) OPT_WHEN_##K(                                     \
  OPT_INLINE void opt_adadelta_loop_##S(char **data, const int64_t *st, int64_t n,  \
                                        const em_optim_params *o, const int contig, \
                                        const int has_wd, const int u1, const int u2, \
                                        const int u3) {                             \
    typedef OPT_ACC_##S acc;                                                        \
    OPT_COMMON(S, acc)                                                              \
    const acc rho = (acc)o->rho, orho = (acc)(1.0 - o->rho), neglr = (acc)(-o->lr); \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *psq = OPT_AT(2, CT), *pa = OPT_AT(3, CT);          \
      const char *pg = OPT_AT(1, CT);                                               \
      OPT_GRAD(S, acc)                                                              \
      acc sq = OPT_LD_##S(psq) * rho;                                               \
      sq = sq + orho * g * g;                                                       \
      OPT_ST_##S(psq, sq);                                                          \
      sq = OPT_LD_##S(psq);                                                         \
      acc std = OPT_SQRT_##S(sq + eps);                                             \
      acc a = OPT_LD_##S(pa);                                                       \
      acc d = OPT_SQRT_##S(a + eps);                                                \
      d = d / std;                                                                  \
      d = d * g;                                                                    \
      a = a * rho;                                                                  \
      a = a + orho * d * d;                                                         \
      OPT_ST_##S(pa, a);                                                            \
      OPT_ST_##S(pp, p + neglr * d);                                                \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(DEF_ADADELTA)

/* Adamax: operands 0 param, 1 grad, 2 exp_avg, 3 exp_inf
**   m = m * beta1;  m = m + (1 - beta1) * g
**   inf = amax(inf * beta2, |g| + eps)           (NaN wins, as torch.amax)
**   p = p + (-clr) * m / inf                     (clr = lr / bias_correction) */
#define DEF_ADAMAX(S, E, CT, K) OPT_WHEN_##K(                                       \
  OPT_INLINE void opt_adamax_loop_##S(char **data, const int64_t *st, int64_t n,    \
                                      const em_optim_params *o, const int contig,   \
                                      const int has_wd, const int u1, const int u2, \
                                      const int u3) {                               \
    typedef OPT_ACC_##S acc;                                                        \
    OPT_COMMON(S, acc)                                                              \
    const acc b1 = (acc)o->beta1, ob1 = (acc)(1.0 - o->beta1), b2 = (acc)o->beta2;  \
    const acc negclr = (acc)(-o->step_size);                                        \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *pm = OPT_AT(2, CT), *pu = OPT_AT(3, CT);           \
      const char *pg = OPT_AT(1, CT);                                               \
      OPT_GRAD(S, acc)                                                              \
      acc m = OPT_LD_##S(pm) * b1;                                                  \
      m = m + ob1 * g;                                                              \
      OPT_ST_##S(pm, m);                                                            \
      m = OPT_LD_##S(pm);                                                           \
      OPT_ST_##S(pu, OPT_LD_##S(pu) * b2);                                          \
      acc a = OPT_LD_##S(pu), b = OPT_ABS_##S(g) + eps;                             \
      acc u = (a != a || b != b) ? a + b : (a > b ? a : b);                         \
      OPT_ST_##S(pu, u);                                                            \
      u = OPT_LD_##S(pu);                                                           \
      OPT_ST_##S(pp, p + negclr * m / u);                                           \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(DEF_ADAMAX)

/* NAdam and RAdam share the moments: operands 0 param, 1 grad, 2 exp_avg,
** 3 exp_avg_sq
**   m = m * beta1;  m = m + (1 - beta1) * g
**   v = v * beta2;  v = v + (1 - beta2) * g * g
** NAdam:
**   denom = sqrt(v / bc2) + eps                   (div, sqrt, add_)
**   p = p + c1 * g / denom;  p = p + c2 * m / denom   (two addcdiv_)
** RAdam (rectify: rho_t > 5; c1 = rect):
**   bm = m / bc1
**   adaptive = reciprocal(sqrt(v) + eps) * bc2_sqrt  (Python's float / tensor)
**   p = p - bm * lr * adaptive * rect             (add_(alpha=-1))
** else p = p - bm * lr */
#define OPT_MOMENTS(S)                                                              \
  acc m = OPT_LD_##S(pm) * b1;                                                      \
  m = m + ob1 * g;                                                                  \
  OPT_ST_##S(pm, m);                                                                \
  m = OPT_LD_##S(pm);                                                               \
  acc v = OPT_LD_##S(pv) * b2;                                                      \
  v = v + ob2 * g * g;                                                              \
  OPT_ST_##S(pv, v);                                                                \
  v = OPT_LD_##S(pv);
#define OPT_MOMENT_CONSTS(acc)                                                      \
  const acc b1 = (acc)o->beta1, ob1 = (acc)(1.0 - o->beta1);                        \
  const acc b2 = (acc)o->beta2, ob2 = (acc)(1.0 - o->beta2);
#define DEF_NADAM(S, E, CT, K) OPT_WHEN_##K(                                        \
  OPT_INLINE void opt_nadam_loop_##S(char **data, const int64_t *st, int64_t n,     \
                                     const em_optim_params *o, const int contig,    \
                                     const int has_wd, const int u1, const int u2,  \
                                     const int u3) {                                \
    typedef OPT_ACC_##S acc;                                                        \
    OPT_COMMON(S, acc)                                                              \
    OPT_MOMENT_CONSTS(acc)                                                          \
    const acc bc2 = (acc)o->bc2, c1 = (acc)o->c1, c2 = (acc)o->c2;                  \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *pm = OPT_AT(2, CT), *pv = OPT_AT(3, CT);           \
      const char *pg = OPT_AT(1, CT);                                               \
      OPT_GRAD(S, acc)                                                              \
      OPT_MOMENTS(S)                                                                \
      acc den = v / bc2;                                                            \
      den = OPT_SQRT_##S(den);                                                      \
      den = den + eps;                                                              \
      OPT_ST_##S(pp, p + c1 * g / den);                                             \
      p = OPT_LD_##S(pp);                                                           \
      OPT_ST_##S(pp, p + c2 * m / den);                                             \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(DEF_NADAM)
#define DEF_RADAM(S, E, CT, K) OPT_WHEN_##K(                                        \
  OPT_INLINE void opt_radam_loop_##S(char **data, const int64_t *st, int64_t n,     \
                                     const em_optim_params *o, const int contig,    \
                                     const int has_wd, const int rectify,           \
                                     const int u2, const int u3) {                  \
    typedef OPT_ACC_##S acc;                                                        \
    OPT_COMMON(S, acc)                                                              \
    OPT_MOMENT_CONSTS(acc)                                                          \
    const acc bc1 = (acc)o->bc1, bc2s = (acc)o->bc2, lr = (acc)o->lr;               \
    const acc rect = (acc)o->c1;                                                    \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *pm = OPT_AT(2, CT), *pv = OPT_AT(3, CT);           \
      const char *pg = OPT_AT(1, CT);                                               \
      OPT_GRAD(S, acc)                                                              \
      OPT_MOMENTS(S)                                                                \
      acc bm = m / bc1;                                                             \
      acc u = bm * lr;                                                              \
      if (rectify) {                                                                \
        acc ad = OPT_SQRT_##S(v);                                                   \
        ad = ad + eps;                                                              \
        ad = (acc)1 / ad;                                                           \
        ad = ad * bc2s;                                                             \
        u = u * ad;                                                                 \
        u = u * rect;                                                               \
      }                                                                             \
      OPT_ST_##S(pp, p - u);                                                        \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(DEF_RADAM)

/* ASGD: operands 0 param, 1 grad, 2 ax; c1 = 1 - lambd * eta, c2 = eta
**   p = p * c1;  p = p + (-eta) * g
**   ax = mu != 1 ? ax + (p - ax) * mu : p         (sub, mul, add_ / copy_) */
#define DEF_ASGD(S, E, CT, K) OPT_WHEN_##K(                                         \
  OPT_INLINE void opt_asgd_loop_##S(char **data, const int64_t *st, int64_t n,      \
                                    const em_optim_params *o, const int contig,     \
                                    const int has_wd, const int average,            \
                                    const int u2, const int u3) {                   \
    typedef OPT_ACC_##S acc;                                                        \
    OPT_COMMON(S, acc)                                                              \
    const acc decay = (acc)o->c1, negeta = (acc)(-o->c2), mu = (acc)o->mu;          \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *pa = OPT_AT(2, CT);                                \
      const char *pg = OPT_AT(1, CT);                                               \
      OPT_GRAD(S, acc)                                                              \
      OPT_ST_##S(pp, p * decay);                                                    \
      p = OPT_LD_##S(pp);                                                           \
      OPT_ST_##S(pp, p + negeta * g);                                               \
      p = OPT_LD_##S(pp);                                                           \
      if (average) {                                                                \
        acc a = OPT_LD_##S(pa);                                                     \
        acc d = p - a;                                                              \
        d = d * mu;                                                                 \
        OPT_ST_##S(pa, a + d);                                                      \
      } else {                                                                      \
        OPT_ST_##S(pa, p);                                                          \
      }                                                                             \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(DEF_ASGD)

/* Rprop: operands 0 param, 1 grad, 2 prev, 3 step_size
**   s = sign(g * prev) mapped: > 0 etaplus, < 0 etaminus, 0 one
**   step_size = clamp(step_size * s, min, max)       (NaN stays)
**   g = s == etaminus ? 0 : g
**   p = p + (-1) * sign(g) * step_size;  prev = g     (addcmul_, copy_) */
#define DEF_RPROP(S, E, CT, K) OPT_WHEN_##K(                                        \
  OPT_INLINE void opt_rprop_loop_##S(char **data, const int64_t *st, int64_t n,     \
                                     const em_optim_params *o, const int contig,    \
                                     const int u0, const int u1, const int u2,      \
                                     const int u3) {                                \
    typedef OPT_ACC_##S acc;                                                        \
    const acc sgn = o->maximize ? (acc)-1 : (acc)1;                                 \
    const acc em = (acc)o->etaminus, ep = (acc)o->etaplus;                          \
    const acc lo = (acc)o->step_min, hi = (acc)o->step_max;                         \
    for (int64_t i = 0; i < n; i++) {                                               \
      char *pp = OPT_AT(0, CT), *pr = OPT_AT(2, CT), *ps = OPT_AT(3, CT);           \
      const char *pg = OPT_AT(1, CT);                                               \
      acc p = OPT_LD_##S(pp), g = OPT_LD_##S(pg) * sgn;                             \
      acc prod = g * OPT_LD_##S(pr);                                                \
      acc sg = OPT_SIGN(acc, prod);                                                 \
      acc s = sg > 0 ? ep : (sg < 0 ? em : (acc)1);                                 \
      acc ss = OPT_LD_##S(ps) * s;                                                  \
      if (ss == ss) ss = ss < lo ? lo : (ss > hi ? hi : ss);                        \
      OPT_ST_##S(ps, ss);                                                           \
      ss = OPT_LD_##S(ps);                                                          \
      if (s == em) g = 0;                                                           \
      OPT_ST_##S(pp, p + (acc)-1 * OPT_SIGN(acc, g) * ss);                          \
      OPT_ST_##S(pr, g);                                                            \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(DEF_RPROP)

/* the 1-d kernels: contiguous float32/float64 operands take a loop
** compiled for their flags (weight decay; RAdam's rectify, ASGD's average) */
#define OPT_OTHER_ROW(S, E, CT, K) OPT_WHEN_##K(                                    \
  static void em_other_##S(char **data, const int64_t *st, int64_t n, void *ctx) {  \
    const em_optim_params *o_ = ctx;                                                \
    int wd_ = o_->weight_decay != 0;                                                \
    switch (o_->kind) {                                                             \
      case EM_OPTIM_ADAGRAD: { OPT_DISPATCH(S, CT, 3, opt_adagrad_loop_##S, OPT_CASES2, wd_) break; } \
      case EM_OPTIM_ADADELTA: { OPT_DISPATCH(S, CT, 4, opt_adadelta_loop_##S, OPT_CASES2, wd_) break; } \
      case EM_OPTIM_ADAMAX: { OPT_DISPATCH(S, CT, 4, opt_adamax_loop_##S, OPT_CASES2, wd_) break; } \
      case EM_OPTIM_NADAM: { OPT_DISPATCH(S, CT, 4, opt_nadam_loop_##S, OPT_CASES2, wd_) break; } \
      case EM_OPTIM_RADAM: { OPT_DISPATCH(S, CT, 4, opt_radam_loop_##S, OPT_CASES4, wd_ | o_->rectify << 1) break; } \
      case EM_OPTIM_ASGD: { OPT_DISPATCH(S, CT, 3, opt_asgd_loop_##S, OPT_CASES4, wd_ | (o_->mu != 1) << 1) break; } \
      case EM_OPTIM_RPROP: { OPT_DISPATCH(S, CT, 4, opt_rprop_loop_##S, OPT_CASES1, 0) break; } \
    }                                                                               \
  })
EM_FOR_EACH_DTYPE(OPT_OTHER_ROW)

#define OPT_ROW_SGD(S, E, CT, K) OPT_WHEN_##K([E] = em_sgd_##S, )
#define OPT_ROW_ADAM(S, E, CT, K) OPT_WHEN_##K([E] = em_adam_##S, )
#define OPT_ROW_RMSPROP(S, E, CT, K) OPT_WHEN_##K([E] = em_rmsprop_##S, )
static const em_loop1d sgd_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(OPT_ROW_SGD)};
static const em_loop1d adam_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(OPT_ROW_ADAM)};
static const em_loop1d rmsprop_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(OPT_ROW_RMSPROP)};
#define OPT_ROW_OTHER(S, E, CT, K) OPT_WHEN_##K([E] = em_other_##S, )
static const em_loop1d other_loops[EM_NUM_DTYPES] = {EM_FOR_EACH_DTYPE(OPT_ROW_OTHER)};

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

static void cpu_other(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  if (it->numel > 0) em_iter_run_parallel(it, other_loops[dt], (void *)p);
}

/* one update after the other: each is already a parallel pass */
static void cpu_multi(int family, em_dtype dt, int n, const em_iter *its,
                      const em_optim_params *ps) {
  for (int i = 0; i < n; i++) switch ((em_optim_family)family) {
      case EM_OPTF_SGD: cpu_sgd(&its[i], dt, &ps[i]); break;
      case EM_OPTF_ADAM: cpu_adam(&its[i], dt, &ps[i]); break;
      case EM_OPTF_RMSPROP: cpu_rmsprop(&its[i], dt, &ps[i]); break;
      default: cpu_other(&its[i], dt, &ps[i]); break;
    }
}

const em_optim_kernels em_cpu_optim_kernels = {
    .sgd = cpu_sgd,
    .adam = cpu_adam,
    .rmsprop = cpu_rmsprop,
    .other = cpu_other,
    .multi = cpu_multi,
};
