/*
** ops/optim.c -- the fused optimizer steps (ember.h, "Optimizers";
** docs/training.md): the checks, the state a first step makes, and the
** version bumps around the optimizer family of the kernel table
** (core/kern_optim.h), which does the update itself.
**
** What holds:
** - Parameter, gradient and state tensors must have one shape, one
**   floating dtype and one device; any strides (the iterator walks them). A
**   state slot that is NULL on entry is created (contiguous, the
**   parameter's shape, on its device) and initialised as PyTorch
**   initialises it (zeros; SGD's momentum buffer: a copy of the first
**   step's direction).
** - The parameter and state tensors are written in place and their storage
**   versions bumped, as an in-place op bumps them; nothing is recorded by
**   autograd (an optimizer step runs under no_grad). Written tensors may not
**   overlap themselves (expanded) or each other, and the gradient may share
**   memory with the parameter only in the same layout (each element is read
**   before it is written); all checked.
*/
#include <math.h>
#include <stdlib.h>

#include "core/kern_optim.h"
#include "core/kernels.h"

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
  em_status st = em_same_device_check(op, em_tensor_device(p), em_tensor_device(t));
  if (st != EM_OK) return st;
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
    if (want[i] && !slots[i])
      st = em_zeros(p->ndim, p->sizes, p->dtype, em_tensor_device(p), &slots[i]);
  return st;
}

/* The updates of the optimizer family (core/kern_optim.h's families). */
typedef enum step_kind {
  STEP_SGD = EM_OPTF_SGD, STEP_ADAM = EM_OPTF_ADAM, STEP_RMSPROP = EM_OPTF_RMSPROP,
  STEP_OTHER = EM_OPTF_OTHER
} step_kind;

/* -- Gathering (em_optim_gather_begin/end; docs/optim.md) -------------------
** While a thread gathers, an update whose operands are all contiguous is
** queued with its iterator and scalars instead of run, its tensors held,
** and the queue goes to the device's multi entry (cuda: one launch) when
** it is full, when the next update is of another family, dtype or device,
** or shares memory with a queued one (so the queued updates never overlap),
** and at the end. Versions are bumped when an update is queued. */
enum { GATHER_CAP = 64, GATHER_HELD = 2 + 3 };
typedef struct gather_buf {
  int n, family;
  em_dtype dt;
  em_device dev;
  em_iter its[GATHER_CAP];
  em_optim_params ps[GATHER_CAP];
  em_tensor *held[GATHER_CAP][GATHER_HELD]; /* p, g, the slots; NULL where none */
} gather_buf;
static _Thread_local gather_buf *gather;  /* made on the first begin, kept */
static _Thread_local int gathering;
static _Atomic int64_t multi_calls;

int64_t em_optim_multi_calls(void) { return multi_calls; }

static em_status gather_flush(void) {
  gather_buf *b = gather;
  if (!b || b->n == 0) return EM_OK;
  const em_kernels *kt;
  em_status st = em_kernels_check("optimizer step", b->dev, &kt);
  if (st == EM_OK) {
    kt->optim->multi(b->family, b->dt, b->n, b->its, b->ps);
    multi_calls++;
  }
  for (int i = 0; i < b->n; i++)
    for (int k = 0; k < GATHER_HELD; k++) em_tensor_release(b->held[i][k]);
  b->n = 0;
  return st;
}

void em_optim_gather_begin(void) {
  if (!gather) gather = calloc(1, sizeof *gather); /* without it, updates run at once */
  gathering = gather != NULL;
}

em_status em_optim_gather_end(void) {
  gathering = 0;
  return gather_flush();
}

/* 1 when every operand of it walks its elements contiguously */
static int contiguous_1d(const em_iter *it, em_dtype dt) {
  if (it->ndim != 1 || it->numel == 0) return 0;
  for (int k = 0; k < it->nops; k++)
    if (it->strides[0][k] != (int64_t)em_dtype_size(dt)) return 0;
  return 1;
}

/* 1 when one of the n tensors in ts may share memory with a queued one */
static int overlaps_queued(const gather_buf *b, em_tensor *const *ts, int n) {
  for (int i = 0; i < b->n; i++)
    for (int k = 0; k < GATHER_HELD; k++)
      for (int j = 0; j < n; j++)
        if (b->held[i][k] && ts[j] && em_may_overlap(b->held[i][k], ts[j])) return 1;
  return 0;
}

/* An update's tensors as the queue holds them: p, g, the slots, NULLs */
static void update_tensors(em_tensor *p, const em_tensor *g, int nslots, em_tensor **slots,
                           em_tensor **ts) {
  ts[0] = p;
  ts[1] = (em_tensor *)g;
  for (int i = 2; i < GATHER_HELD; i++) ts[i] = i - 2 < nslots ? slots[i - 2] : NULL;
}

/* Queues the update of tensors ts (held; ts[0] the parameter); flushes
** first where it must. */
static em_status gather_push(step_kind kind, em_tensor **ts, const em_iter *it,
                             const em_optim_params *k) {
  gather_buf *b = gather;
  const em_tensor *p = ts[0];
  if (b->n > 0 && (b->n == GATHER_CAP || b->family != (int)kind || b->dt != p->dtype ||
                   !em_device_equal(b->dev, em_tensor_device(p)) ||
                   overlaps_queued(b, ts, GATHER_HELD))) {
    em_status st = gather_flush();
    if (st != EM_OK) return st;
  }
  b->family = (int)kind;
  b->dt = p->dtype;
  b->dev = em_tensor_device(p);
  b->its[b->n] = *it;
  b->ps[b->n] = *k;
  for (int i = 0; i < GATHER_HELD; i++) {
    if (ts[i]) em_tensor_retain(ts[i]);
    b->held[b->n][i] = ts[i];
  }
  b->n++;
  return EM_OK;
}

/* Runs the device's update over (p, g, slots...) (or queues it while the
** thread gathers) and bumps the written storages' versions. */
static em_status run(const char *op, const em_optim_kernels *ko, step_kind kind, em_tensor *p,
                     const em_tensor *g, int nslots, em_tensor **slots,
                     const em_optim_params *k) {
  const em_tensor *ops[EM_ITER_MAX_OPS];
  ops[0] = p;
  ops[1] = g;
  /* absent slots walk the parameter (never read nor written) so the
  ** operand numbers stay fixed */
  for (int i = 0; i < nslots; i++) ops[2 + i] = slots[i] ? slots[i] : p;
  em_iter it;
  em_status st = em_iter_build(&it, op, 2 + nslots, ops, p->ndim, p->sizes, false);
  if (st != EM_OK) return st;
  em_tensor *ts[GATHER_HELD];
  update_tensors(p, g, nslots, slots, ts);
  if (gathering && contiguous_1d(&it, p->dtype)) {
    st = gather_push(kind, ts, &it, k);
    if (st != EM_OK) return st;
  } else {
    /* run at once: after the queued updates it shares memory with */
    if (gathering && overlaps_queued(gather, ts, GATHER_HELD)) {
      st = gather_flush();
      if (st != EM_OK) return st;
    }
    switch (kind) {
    case STEP_SGD: ko->sgd(&it, p->dtype, k); break;
    case STEP_ADAM: ko->adam(&it, p->dtype, k); break;
    case STEP_RMSPROP: ko->rmsprop(&it, p->dtype, k); break;
    case STEP_OTHER: ko->other(&it, p->dtype, k); break;
    }
  }
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
static em_status step_slots(const char *op, step_kind kind, em_tensor *p, const em_tensor *g,
                            int nslots, em_tensor **slots, em_tensor *const *given,
                            const int *want, const char *const *names,
                            const em_optim_params *k) {
  const em_kernels *kt;
  em_status st = em_kernels_check(op, em_tensor_device(p), &kt);
  if (st != EM_OK) return st;
  st = prepare(op, p, g, nslots, slots, want, names);
  for (int i = 0; i < nslots && st == EM_OK; i++)
    for (int j = i + 1; j < nslots && st == EM_OK; j++)
      if (slots[i] && slots[j] && em_may_overlap(slots[i], slots[j]))
        st = em_fail(EM_E_VALUE, "%s: the state tensors share memory", op);
  if (st == EM_OK) st = run(op, kt->optim, kind, p, g, nslots, slots, k);
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
  em_optim_params k;
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
  st = step_slots(op, STEP_SGD, p, g, 1, slots, given, want, names, &k);
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
  em_optim_params k;
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
  st = step_slots(op, STEP_ADAM, p, g, 3, slots, given, want, names, &k);
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
  em_optim_params k;
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
  st = step_slots(op, STEP_RMSPROP, p, g, 3, slots, given, want, names, &k);
  if (st != EM_OK) return st;
  *square_avg = slots[0];
  if (has_mom) *momentum_buffer = slots[1];
  if (o->centered) *grad_avg = slots[2];
  return EM_OK;
}

/* -- Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop ---------------------- */

static const char *const other_names[] = {"Adagrad", "Adadelta", "Adamax", "NAdam",
                                          "RAdam", "ASGD", "Rprop"};
/* the state tensors of each kind (NULL: none) */
static const char *const other_slots[][2] = {
    {"sum", NULL},         {"square_avg", "acc_delta"}, {"exp_avg", "exp_inf"},
    {"exp_avg", "exp_avg_sq"}, {"exp_avg", "exp_avg_sq"}, {"ax", NULL},
    {"prev", "step_size"},
};

/* PyTorch keeps these scalars in float32 0-d tensors (the volatile keeps
** the rounding: GCC 12 at -O2 was seen to drop a (double)(float) pair) */
static double f32(double v) {
  volatile float f = (float)v;
  return (double)f;
}

em_status em_optim_step(em_optim_kind kind, em_tensor *p, const em_tensor *g,
                        em_tensor **state, int64_t step, double *scalars,
                        const em_optim_opts *o) {
  if ((int)kind < 0 || kind > EM_OPTIM_RPROP)
    return em_fail(EM_E_VALUE, "optimizer step: unknown optimizer kind %d", (int)kind);
  const char *op = other_names[kind];
  em_status st = check_finite(op, "lr", o->lr);
  if (st == EM_OK) st = check_finite(op, "weight_decay", o->weight_decay);
  if (st == EM_OK && !(o->lr >= 0))
    st = em_fail(EM_E_VALUE, "%s: Invalid learning rate: %g", op, o->lr);
  if (st == EM_OK && !(o->eps >= 0) && kind != EM_OPTIM_ASGD && kind != EM_OPTIM_RPROP)
    st = em_fail(EM_E_VALUE, "%s: Invalid epsilon value: %g", op, o->eps);
  if (st == EM_OK && (kind == EM_OPTIM_ADAMAX || kind == EM_OPTIM_NADAM || kind == EM_OPTIM_RADAM)) {
    if (!(o->beta1 >= 0 && o->beta1 < 1))
      st = em_fail(EM_E_VALUE, "%s: Invalid beta parameter at index 1: %g", op, o->beta1);
    else if (!(o->beta2 >= 0 && o->beta2 < 1))
      st = em_fail(EM_E_VALUE, "%s: Invalid beta parameter at index 2: %g", op, o->beta2);
  }
  if (st == EM_OK && kind == EM_OPTIM_ADADELTA && !(o->rho >= 0 && o->rho <= 1))
    st = em_fail(EM_E_VALUE, "%s: Invalid rho value: %g", op, o->rho);
  if (st == EM_OK && kind == EM_OPTIM_RPROP &&
      !(0 < o->etaminus && o->etaminus < 1 && 1 < o->etaplus))
    st = em_fail(EM_E_VALUE, "%s: Invalid eta values: %g, %g", op, o->etaminus, o->etaplus);
  if (st == EM_OK && (kind == EM_OPTIM_NADAM || kind == EM_OPTIM_RADAM) && o->maximize)
    st = em_fail(EM_E_VALUE, "%s: maximize is not an option of %s (PyTorch 1.13)", op, op);
  if (st == EM_OK && step < 1)
    st = em_fail(EM_E_VALUE, "%s: step must be 1 or more (the count after this step), got %lld",
                 op, (long long)step);
  if (st == EM_OK && (!state || ((kind == EM_OPTIM_NADAM || kind == EM_OPTIM_ASGD) && !scalars)))
    st = em_fail(EM_E_VALUE, "%s: a state slot is missing", op);
  if (st != EM_OK) return st;

  em_optim_params k;
  memset(&k, 0, sizeof k);
  k.kind = kind;
  k.lr = o->lr;
  k.weight_decay = o->weight_decay;
  k.eps = o->eps;
  k.beta1 = o->beta1;
  k.beta2 = o->beta2;
  k.maximize = o->maximize;
  double sd = (double)step;
  double fill[2] = {0, 0};
  double out_scalars[2] = {0, 0};
  switch (kind) {
    case EM_OPTIM_ADAGRAD:
      k.step_size = o->lr / (1 + (sd - 1) * o->lr_decay); /* clr */
      fill[0] = o->initial_accumulator_value;
      break;
    case EM_OPTIM_ADADELTA: k.rho = o->rho; break;
    case EM_OPTIM_ADAMAX: k.step_size = o->lr / (1 - pow(o->beta1, sd)); break;
    case EM_OPTIM_NADAM: {
      double mu = o->beta1 * (1. - 0.5 * pow(0.96, sd * o->momentum_decay));
      double mu_next = o->beta1 * (1. - 0.5 * pow(0.96, (sd + 1) * o->momentum_decay));
      /* mu_product *= mu; mu_product_next = mu_product * mu * mu_next, in float32 */
      double prod = f32(f32(scalars[0]) * f32(mu));
      double prod_next = f32(f32(prod * f32(mu)) * f32(mu_next));
      k.bc2 = 1 - pow(o->beta2, sd);
      k.c1 = -o->lr * (1. - mu) / (1. - prod);
      k.c2 = -o->lr * mu_next / (1. - prod_next);
      out_scalars[0] = prod;
      break;
    }
    case EM_OPTIM_RADAM: {
      double bc1 = 1 - pow(o->beta1, sd), bc2 = 1 - pow(o->beta2, sd);
      double rho_inf = 2 / (1 - o->beta2) - 1;
      double rho_t = rho_inf - 2 * sd * pow(o->beta2, sd) / bc2;
      k.bc1 = bc1;
      k.bc2 = sqrt(bc2);
      k.rectify = rho_t > 5.;
      if (k.rectify)
        k.c1 = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      break;
    }
    case EM_OPTIM_ASGD: {
      double eta = f32(scalars[0]), mu = f32(scalars[1]);
      k.c1 = 1 - o->lambd * eta;
      k.c2 = eta;
      k.mu = mu;
      out_scalars[0] = f32(o->lr / pow(1 + o->lambd * o->lr * sd, o->alpha));
      out_scalars[1] = f32(1 / fmax(1, sd - o->t0));
      break;
    }
    case EM_OPTIM_RPROP:
      k.etaminus = o->etaminus;
      k.etaplus = o->etaplus;
      k.step_min = o->step_size_min;
      k.step_max = o->step_size_max;
      fill[1] = o->lr;
      break;
  }
  int nslots = other_slots[kind][1] ? 2 : 1;
  em_tensor *given[2] = {state[0], nslots > 1 ? state[1] : NULL};
  em_tensor *slots[2] = {given[0], given[1]};
  int want[2] = {1, nslots > 1};
  const char *names[2] = {other_slots[kind][0], other_slots[kind][1]};
  /* made slots start as PyTorch's (zeros, or full of fill) */
  const em_kernels *kt;
  st = em_kernels_check(op, em_tensor_device(p), &kt);
  if (st == EM_OK) st = prepare(op, p, g, nslots, slots, want, names);
  for (int i = 0; i < nslots && st == EM_OK; i++)
    if (slots[i] != given[i] && fill[i] != 0) {
      em_scalar v;
      memset(&v, 0, sizeof v);
      v.kind = EM_SCALAR_FLOAT;
      v.f = fill[i];
      st = em_fill_(slots[i], v);
    }
  if (st != EM_OK) {
    drop_made(nslots, slots, given);
    return st;
  }
  st = step_slots(op, STEP_OTHER, p, g, nslots, slots, given, want, names, &k);
  if (st != EM_OK) {
    drop_made(nslots, slots, given);
    return st;
  }
  for (int i = 0; i < nslots; i++) state[i] = slots[i];
  if (kind == EM_OPTIM_NADAM) scalars[0] = out_scalars[0];
  if (kind == EM_OPTIM_ASGD) {
    scalars[0] = out_scalars[0];
    scalars[1] = out_scalars[1];
  }
  return EM_OK;
}
