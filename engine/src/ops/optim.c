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

/* The three updates of the optimizer family. */
typedef enum step_kind { STEP_SGD, STEP_ADAM, STEP_RMSPROP } step_kind;

/* Runs the device's update over (p, g, slots...) and bumps the written
** storages' versions. */
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
  switch (kind) {
    case STEP_SGD: ko->sgd(&it, p->dtype, k); break;
    case STEP_ADAM: ko->adam(&it, p->dtype, k); break;
    case STEP_RMSPROP: ko->rmsprop(&it, p->dtype, k); break;
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
