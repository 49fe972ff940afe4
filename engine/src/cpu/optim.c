/*
** cpu/optim.c -- fused optimizer updates: one pass over a parameter, its
** gradient and its state for SGD, Adam/AdamW and RMSprop (ember.h,
** "Optimizers"; docs/training.md).
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
** - Parameter, gradient and state tensors must have one shape and one
**   floating dtype; any strides (the iterator walks them). A state slot that
**   is NULL on entry is created (contiguous, the parameter's shape) and
**   initialised as PyTorch initialises it (zeros; SGD's momentum buffer: a
**   copy of the first step's direction).
** - The parameter and state tensors are written in place and their storage
**   versions bumped, as an in-place op bumps them; nothing is recorded by
**   autograd (an optimizer step runs under no_grad). Written tensors may not
**   overlap themselves (expanded) or each other, and the gradient may share
**   memory with the parameter only in the same layout (each element is read
**   before it is written); all checked.
** - Every element is updated independently, so large parameters are cut
**   over the engine's threads (em_iter_run_parallel) with results that do
**   not depend on the thread count.
*/
#include <math.h>
#include <stdlib.h>

#include "core/iter.h"

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

/* The scalars of one update, in double; each kernel converts them to its
** compute type once. */
typedef struct optk {
  double lr, momentum, dampening, weight_decay;  /* SGD; lr, weight_decay shared */
  double beta1, beta2, eps, step_size, bc2_sqrt; /* Adam */
  double alpha;                                  /* RMSprop (momentum shared) */
  int nesterov, maximize, first, amsgrad, decoupled, centered, has_momentum;
} optk;

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
  const optk *o = ctx;                                                             \
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
                                   const optk *o, const int contig, const int has_wd, \
                                   const int has_mom, const int first,              \
                                   const int nesterov) {                            \
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
                                    const optk *o, const int contig, const int has_wd, \
                                    const int decoupled, const int amsgrad,         \
                                    const int unused) {                             \
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
                                       const optk *o, const int contig,             \
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

/* -- Checks and the driver ----------------------------------------------------- */

static int same_shape(const em_tensor *a, const em_tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->sizes[d] != b->sizes[d]) return 0;
  return 1;
}

/* Checks operand k (named what) against the parameter p. */
static em_status check_operand(const char *op, const char *what, const em_tensor *p,
                               const em_tensor *t, int written) {
  char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
  if (!same_shape(p, t))
    return em_fail(EM_E_VALUE, "%s: %s of shape %s does not match the parameter's shape %s", op,
                   what, em_fmt_shape(b1, sizeof b1, t->ndim, t->sizes),
                   em_fmt_shape(b2, sizeof b2, p->ndim, p->sizes));
  if (t->dtype != p->dtype)
    return em_fail(EM_E_TYPE, "%s: %s has dtype %s but the parameter has dtype %s", op, what,
                   em_dtype_name(t->dtype), em_dtype_name(p->dtype));
  if (!em_device_equal(em_tensor_device(t), em_cpu()))
    return em_fail(EM_E_VALUE, "%s: %s is not on the CPU", op, what);
  if (written && em_has_internal_overlap(t))
    return em_fail(EM_E_VALUE, "%s: %s has elements that share memory (an expanded tensor?); "
                   "clone() it first", op, what);
  return EM_OK;
}

/* The state tensors: slots[i] is checked, or created (zeros) when NULL and
** want[i]. */
static em_status prepare(const char *op, em_tensor *p, const em_tensor *g, int nslots,
                         em_tensor **slots, const int *want, const char *const *names) {
  if (em_dtype_kindof(p->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: parameters must be floating point, got %s", op,
                   em_dtype_name(p->dtype));
  em_status st = check_operand(op, "the parameter", p, p, 1);
  if (st == EM_OK) st = check_operand(op, "the gradient", p, g, 0);
  for (int i = 0; i < nslots && st == EM_OK; i++) {
    if (!want[i]) continue;
    if (slots[i]) {
      st = check_operand(op, names[i], p, slots[i], 1);
      if (st == EM_OK && (em_may_overlap(slots[i], p) || em_may_overlap(slots[i], g)))
        st = em_fail(EM_E_VALUE, "%s: %s shares memory with the parameter or the gradient",
                     op, names[i]);
    }
  }
  if (st == EM_OK && em_may_overlap(p, g) && !em_same_layout(p, g))
    st = em_fail(EM_E_VALUE, "%s: the gradient partly overlaps the parameter", op);
  for (int i = 0; i < nslots && st == EM_OK; i++)
    if (want[i] && !slots[i]) st = em_zeros(p->ndim, p->sizes, p->dtype, em_cpu(), &slots[i]);
  return st;
}

/* Runs loop over (p, g, slots...) and bumps the written storages' versions. */
static em_status run(const char *op, em_tensor *p, const em_tensor *g, int nslots,
                     em_tensor **slots, em_loop1d loop, optk *k) {
  const em_tensor *ops[EM_ITER_MAX_OPS];
  ops[0] = p;
  ops[1] = g;
  /* absent slots walk the parameter (never read nor written) so the
  ** operand numbers stay fixed */
  for (int i = 0; i < nslots; i++) ops[2 + i] = slots[i] ? slots[i] : p;
  em_iter it;
  em_status st = em_iter_build(&it, op, 2 + nslots, ops, p->ndim, p->sizes, false);
  if (st != EM_OK) return st;
  if (it.numel > 0) em_iter_run_parallel(&it, loop, k);
  em_storage_bump_version(p->storage);
  for (int i = 0; i < nslots; i++)
    if (slots[i]) em_storage_bump_version(slots[i]->storage);
  return EM_OK;
}

/* Made state is released when the step fails, so the caller sees no change
** in its slots. */
static void drop_made(int nslots, em_tensor **slots, em_tensor *const *given) {
  for (int i = 0; i < nslots; i++)
    if (slots[i] && slots[i] != given[i]) {
      em_tensor_release(slots[i]);
      slots[i] = (em_tensor *)given[i];
    }
}

/* The common part of a step: the state slots made where missing
** (prepare), refused when two of them share memory, then the loop. On
** failure made slots are released and slots[] is given[] again, so the
** caller sees no change. */
static em_status step_slots(const char *op, em_tensor *p, const em_tensor *g, int nslots,
                            em_tensor **slots, em_tensor *const *given, const int *want,
                            const char *const *names, em_loop1d loop, optk *k) {
  em_status st = prepare(op, p, g, nslots, slots, want, names);
  for (int i = 0; i < nslots && st == EM_OK; i++)
    for (int j = i + 1; j < nslots && st == EM_OK; j++)
      if (slots[i] && slots[j] && em_may_overlap(slots[i], slots[j]))
        st = em_fail(EM_E_VALUE, "%s: the state tensors share memory", op);
  if (st == EM_OK) st = run(op, p, g, nslots, slots, loop, k);
  if (st != EM_OK) drop_made(nslots, slots, given);
  return st;
}

static em_status check_finite(const char *op, const char *what, double v) {
  if (!(v == v) || isinf(v)) return em_fail(EM_E_VALUE, "%s: %s must be finite, got %g", op, what, v);
  return EM_OK;
}

em_status em_sgd_step(em_tensor *p, const em_tensor *g, em_tensor **momentum_buffer,
                      const em_sgd_opts *o) {
  const char *op = "SGD";
  em_status st = check_finite(op, "lr", o->lr);
  if (st == EM_OK) st = check_finite(op, "momentum", o->momentum);
  if (st == EM_OK) st = check_finite(op, "dampening", o->dampening);
  if (st == EM_OK) st = check_finite(op, "weight_decay", o->weight_decay);
  if (st != EM_OK) return st;
  optk k;
  memset(&k, 0, sizeof k);
  k.lr = o->lr;
  k.momentum = o->momentum;
  k.dampening = o->dampening;
  k.weight_decay = o->weight_decay;
  k.nesterov = o->nesterov;
  k.maximize = o->maximize;
  k.has_momentum = o->momentum != 0;
  em_tensor *given[1] = {momentum_buffer ? *momentum_buffer : NULL};
  em_tensor *slots[1] = {given[0]};
  int want[1] = {k.has_momentum};
  static const char *const names[1] = {"the momentum buffer"};
  if (k.has_momentum && !momentum_buffer)
    return em_fail(EM_E_VALUE, "SGD: momentum needs a momentum buffer slot");
  k.first = k.has_momentum && !given[0];
  /* a fresh buffer is written before it is read (first step: buf = d), so
  ** it need not be zeroed; em_zeros keeps prepare() simple and the cost is
  ** one pass on the first step only */
  st = step_slots(op, p, g, 1, slots, given, want, names, sgd_loops[p->dtype], &k);
  if (st != EM_OK) return st;
  if (k.has_momentum) *momentum_buffer = slots[0];
  return EM_OK;
}

em_status em_adam_step(em_tensor *p, const em_tensor *g, em_tensor **exp_avg,
                       em_tensor **exp_avg_sq, em_tensor **max_exp_avg_sq, int64_t step,
                       const em_adam_opts *o) {
  const char *op = o->decoupled ? "AdamW" : "Adam";
  em_status st = check_finite(op, "lr", o->lr);
  if (st == EM_OK) st = check_finite(op, "weight_decay", o->weight_decay);
  if (st == EM_OK && !(o->beta1 >= 0 && o->beta1 < 1))
    st = em_fail(EM_E_VALUE, "%s: Invalid beta parameter at index 1: %g", op, o->beta1);
  if (st == EM_OK && !(o->beta2 >= 0 && o->beta2 < 1))
    st = em_fail(EM_E_VALUE, "%s: Invalid beta parameter at index 2: %g", op, o->beta2);
  if (st == EM_OK && !(o->eps >= 0))
    st = em_fail(EM_E_VALUE, "%s: Invalid epsilon value: %g", op, o->eps);
  if (st == EM_OK && step < 1)
    st = em_fail(EM_E_VALUE, "%s: step must be 1 or more (the count after this step), got %lld",
                 op, (long long)step);
  if (st == EM_OK && (!exp_avg || !exp_avg_sq || (o->amsgrad && !max_exp_avg_sq)))
    st = em_fail(EM_E_VALUE, "%s: a state slot is missing", op);
  if (st != EM_OK) return st;
  optk k;
  memset(&k, 0, sizeof k);
  k.lr = o->lr;
  k.weight_decay = o->weight_decay;
  k.beta1 = o->beta1;
  k.beta2 = o->beta2;
  k.eps = o->eps;
  k.amsgrad = o->amsgrad;
  k.maximize = o->maximize;
  k.decoupled = o->decoupled;
  /* Python's floats: bias_correction1 = 1 - beta1 ** step, ... */
  double bc1 = 1.0 - pow(o->beta1, (double)step), bc2 = 1.0 - pow(o->beta2, (double)step);
  k.step_size = o->lr / bc1;
  k.bc2_sqrt = sqrt(bc2);
  em_tensor *given[3] = {*exp_avg, *exp_avg_sq, o->amsgrad ? *max_exp_avg_sq : NULL};
  em_tensor *slots[3] = {given[0], given[1], given[2]};
  int want[3] = {1, 1, o->amsgrad};
  static const char *const names[3] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  st = step_slots(op, p, g, 3, slots, given, want, names, adam_loops[p->dtype], &k);
  if (st != EM_OK) return st;
  *exp_avg = slots[0];
  *exp_avg_sq = slots[1];
  if (o->amsgrad) *max_exp_avg_sq = slots[2];
  return EM_OK;
}

em_status em_rmsprop_step(em_tensor *p, const em_tensor *g, em_tensor **square_avg,
                          em_tensor **momentum_buffer, em_tensor **grad_avg,
                          const em_rmsprop_opts *o) {
  const char *op = "RMSprop";
  em_status st = check_finite(op, "lr", o->lr);
  if (st == EM_OK) st = check_finite(op, "weight_decay", o->weight_decay);
  if (st == EM_OK) st = check_finite(op, "alpha", o->alpha);
  if (st == EM_OK) st = check_finite(op, "momentum", o->momentum);
  if (st == EM_OK && !(o->eps >= 0))
    st = em_fail(EM_E_VALUE, "%s: Invalid epsilon value: %g", op, o->eps);
  int has_mom = o->momentum > 0;
  if (st == EM_OK && (!square_avg || (has_mom && !momentum_buffer) || (o->centered && !grad_avg)))
    st = em_fail(EM_E_VALUE, "%s: a state slot is missing", op);
  if (st != EM_OK) return st;
  optk k;
  memset(&k, 0, sizeof k);
  k.lr = o->lr;
  k.weight_decay = o->weight_decay;
  k.alpha = o->alpha;
  k.eps = o->eps;
  k.momentum = o->momentum;
  k.has_momentum = has_mom;
  k.centered = o->centered;
  k.maximize = o->maximize;
  em_tensor *given[3] = {*square_avg, has_mom ? *momentum_buffer : NULL,
                         o->centered ? *grad_avg : NULL};
  em_tensor *slots[3] = {given[0], given[1], given[2]};
  int want[3] = {1, has_mom, o->centered};
  static const char *const names[3] = {"square_avg", "momentum_buffer", "grad_avg"};
  st = step_slots(op, p, g, 3, slots, given, want, names, rmsprop_loops[p->dtype], &k);
  if (st != EM_OK) return st;
  *square_avg = slots[0];
  if (has_mom) *momentum_buffer = slots[1];
  if (o->centered) *grad_avg = slots[2];
  return EM_OK;
}
