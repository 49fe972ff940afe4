/*
** ops/loss.c -- the losses: nll_loss and cross_entropy (class ids or
** probabilities, weights, ignore_index, label smoothing) and the pointwise
** losses (mse, l1, binary cross entropy of probabilities and of logits),
** each forward with its backward: the public ops over the nn family of the
** kernel table (core/kern_nn.h).
**
** What holds:
** - float32/float64 inputs; every tensor on the input's device; inputs of
**   any layout are read through dense copies; results are new contiguous
**   tensors on the input's device.
** - Class ids are 1-based and checked before anything is written; a bad
**   id names the op, the id and the valid range.
** - Reductions: NONE keeps the per-element loss, SUM adds, MEAN divides by
**   the element count (by the total weight of the counted targets for
**   nll_loss/cross_entropy with class ids, as PyTorch).
** - Autograd: the forwards record one node each; nll_loss's backward
**   records too (second derivatives); the other backward ops are fused and
**   refuse to run where a graph would be needed (autograd/formulas.c then
**   uses engine ops).
*/
#include "ops/nn_ops.h"
#include "ops/autocast.h"
#include "core/iter.h"

/* -- class losses: nll_loss and cross_entropy -------------------------------- */

/* The lanes and classes of input, and whether target holds probabilities;
** the checks of target and weight against them. */
static em_status cls_geometry(const char *op, const em_tensor *input, const em_tensor *target,
                              const em_tensor *weight, int allow_prob, em_class_loss_params *g) {
  em_status st = nn_check_float(op, "input", input);
  if (st == EM_OK) st = nn_check_device(op, input, target);
  if (st != EM_OK) return st;
  if (input->ndim < 1)
    return em_fail(EM_E_VALUE, "%s: expected an input of 1 or more dims, got 0-d", op);
  g->N = input->ndim == 1 ? 1 : input->sizes[0];
  g->C = input->ndim == 1 ? input->sizes[0] : input->sizes[1];
  g->S = input->ndim <= 2 ? 1 : nn_prod(input->ndim - 2, input->sizes + 2);
  g->prob = em_dtype_kindof(target->dtype) == EM_KIND_FLOAT;
  if (g->prob && !allow_prob)
    return em_fail(EM_E_TYPE, "%s: expected target of class ids (int64 or int32), got %s", op,
                   em_dtype_name(target->dtype));
  if (g->prob) {
    if (target->ndim != input->ndim ||
        memcmp(target->sizes, input->sizes, sizeof(int64_t) * (size_t)input->ndim) != 0)
      return em_fail(EM_E_VALUE, "%s: a target of probabilities must have the input's shape", op);
  } else {
    if (target->dtype != EM_INT64 && target->dtype != EM_INT32)
      return em_fail(EM_E_TYPE, "%s: expected target of class ids (int64 or int32), got %s", op,
                     em_dtype_name(target->dtype));
    int ok = target->ndim == (input->ndim == 1 ? 0 : input->ndim - 1);
    for (int i = 0; ok && i < target->ndim; i++)
      ok = target->sizes[i] == input->sizes[i == 0 ? 0 : i + 1];
    if (!ok) { /* the expected shape: the input's without its class dim */
      char a[EM_SHAPE_BUF], b[EM_SHAPE_BUF], c[EM_SHAPE_BUF];
      int64_t want[EM_MAX_DIMS];
      int nw = 0;
      for (int i = 0; i < input->ndim; i++)
        if (i != (input->ndim == 1 ? 0 : 1)) want[nw++] = input->sizes[i];
      return em_fail(EM_E_VALUE, "%s: expected target of shape %s for input of shape %s, got %s", op,
                     em_fmt_shape(a, sizeof a, nw, want),
                     em_fmt_shape(b, sizeof b, input->ndim, input->sizes),
                     em_fmt_shape(c, sizeof c, target->ndim, target->sizes));
    }
  }
  if (weight) {
    if ((st = nn_check_same(op, "weight", input, weight)) != EM_OK) return st;
    if (weight->ndim != 1 || weight->sizes[0] != g->C)
      return em_fail(EM_E_VALUE, "%s: expected weight of shape [%lld] (one per class)", op,
                     (long long)g->C);
  }
  return EM_OK;
}

/* The class ids as dense int64, checked to be in 1..C or ignore_index. */
static em_status cls_ids(const char *op, const em_nn_kernels *k, const em_tensor *target,
                         int64_t C, int64_t ignore, em_tensor **out) {
  em_status st = nn_dense(target, EM_INT64, out);
  if (st != EM_OK) return st;
  int64_t bad;
  if (k->bad_id(*out, C, 1, ignore, &bad)) {
    em_tensor_release(*out);
    *out = NULL;
    return em_fail(EM_E_INDEX, "%s: target %lld is out of bounds for %lld classes (class ids "
                   "are 1..%lld)", op, (long long)bad, (long long)C, (long long)C);
  }
  return EM_OK;
}

/* The shared driver. logsm: cross_entropy (log_softmax first; 2: its
** gradient stops at log_softmax); else nll. Forward when go == NULL
** (writes *out, and *total_weight when asked), backward otherwise (writes
** *out = grad_input). */
static em_status class_loss(const char *op, const em_tensor *input, const em_tensor *target,
                            const em_tensor *weight, em_reduction red, int64_t ignore,
                            double ls, int logsm, const em_tensor *go, em_tensor **out,
                            em_tensor **total_weight) {
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_reduction(op, red);
  if (st != EM_OK) return st;
  em_class_loss_params g;
  if ((st = cls_geometry(op, input, target, weight, logsm, &g)) != EM_OK) return st;
  if (!(ls >= 0 && ls <= 1))
    return em_fail(EM_E_VALUE, "%s: label_smoothing must be between 0.0 and 1.0, got %g", op, ls);
  g.logsm = logsm;
  g.reduction = red;
  g.ignore_index = ignore;
  g.label_smoothing = ls;
  em_dtype dt = input->dtype;
  /* the shape of the per-lane loss: the target's (probabilities: input's
  ** without the class dim) */
  int lnd = 0;
  int64_t lsz[EM_MAX_DIMS];
  for (int i = 0; i < input->ndim; i++)
    if (i != (input->ndim == 1 ? 0 : 1)) lsz[lnd++] = input->sizes[i];
  if (go) {
    if ((st = nn_check_same(op, "grad_output", input, go)) != EM_OK) return st;
    int ok = red == EM_REDUCTION_NONE
                 ? (go->ndim == lnd && memcmp(go->sizes, lsz, sizeof(int64_t) * (size_t)lnd) == 0)
                 : em_tensor_numel(go) == 1;
    if (!ok) return em_fail(EM_E_VALUE, "%s: grad_output has the wrong shape", op);
  }
  em_tensor *x = NULL, *t = NULL, *w = NULL, *res = NULL, *tw = NULL, *god = NULL;
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if (g.prob) {
    if ((st = nn_dense(target, dt, &t)) != EM_OK) goto done;
  } else if ((st = cls_ids(op, k, target, g.C, ignore, &t)) != EM_OK) {
    goto done;
  }
  if (weight && (st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if (go && (st = nn_dense(go, dt, &god)) != EM_OK) goto done;
  if (go) st = nn_new(input, input->ndim, input->sizes, dt, 1, &res);
  else if (red == EM_REDUCTION_NONE) st = nn_new(input, lnd, lsz, dt, 0, &res);
  else st = nn_new(input, 0, NULL, dt, 0, &res);
  if (st != EM_OK) goto done;
  if (!go && total_weight && (st = nn_new(input, 0, NULL, dt, 0, &tw)) != EM_OK) goto done;
  if ((st = k->class_loss(op, x, t, w, god, res, tw, &g)) != EM_OK) goto done;
  *out = res;
  res = NULL;
  if (tw) { *total_weight = tw; tw = NULL; }
done:;
  em_tensor *rel[6] = {x, t, w, res, tw, god};
  nn_release(6, rel);
  return st;
}

static em_status nll_loss_run(const em_tensor *input, const em_tensor *target, const em_tensor *weight,
                      em_reduction reduction, int64_t ignore_index, em_tensor **out,
                      em_tensor **total_weight) {
  return class_loss("nll_loss", input, target, weight, reduction, ignore_index, 0.0, 0, NULL,
                    out, total_weight);
}

static em_status nll_loss_backward_run(const em_tensor *grad_out, const em_tensor *input,
                               const em_tensor *target, const em_tensor *weight,
                               em_reduction reduction, int64_t ignore_index,
                               const em_tensor *total_weight, em_tensor **grad_input) {
  (void)total_weight; /* recomputed from target and weight: same value */
  return class_loss("nll_loss_backward", input, target, weight, reduction, ignore_index, 0.0, 0,
                    grad_out, grad_input, NULL);
}

static em_status cross_entropy_run(const em_tensor *input, const em_tensor *target,
                           const em_tensor *weight, em_reduction reduction,
                           int64_t ignore_index, double label_smoothing, em_tensor **out) {
  return class_loss("cross_entropy", input, target, weight, reduction, ignore_index,
                    label_smoothing, 1, NULL, out, NULL);
}

em_status em_cross_entropy_backward(const em_tensor *grad_out, const em_tensor *input,
                                    const em_tensor *target, const em_tensor *weight,
                                    em_reduction reduction, int64_t ignore_index,
                                    double label_smoothing, em_tensor **grad_input) {
  em_status gst = nn_not_twice("cross_entropy_backward", grad_out, input, weight);
  if (gst != EM_OK) return gst;
  return class_loss("cross_entropy_backward", input, target, weight, reduction, ignore_index,
                    label_smoothing, 1, grad_out, grad_input, NULL);
}

/* -- pointwise losses -------------------------------------------------------- */

/* Forward (go NULL) or backward of a pointwise loss. */
static em_status pointwise_loss(const char *op, em_pointwise_loss kind, const em_tensor *input,
                                const em_tensor *target, const em_tensor *weight,
                                const em_tensor *pos_weight, em_reduction red,
                                const em_tensor *go, em_tensor **out) {
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_reduction(op, red);
  if (st == EM_OK) st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  const em_tensor *all[4] = {input, target, weight, pos_weight};
  const em_tensor *bt[4];
  int nb = 0;
  for (int i = 0; i < 4; i++)
    if (all[i]) {
      if ((st = nn_check_device(op, input, all[i])) != EM_OK) return st;
      bt[nb++] = all[i];
    }
  int ndim;
  int64_t shape[EM_MAX_DIMS];
  if ((st = em_broadcast_shapes(op, nb, bt, &ndim, shape)) != EM_OK) return st;
  em_dtype dt = input->dtype;
  if (go) {
    if ((st = nn_check_same(op, "grad_output", input, go)) != EM_OK) return st;
    int ok = red == EM_REDUCTION_NONE
                 ? (go->ndim == ndim && memcmp(go->sizes, shape, sizeof(int64_t) * (size_t)ndim) == 0)
                 : em_tensor_numel(go) == 1;
    if (!ok) return em_fail(EM_E_VALUE, "%s: grad_output has the wrong shape", op);
  }
  em_tensor *d[5] = {NULL, NULL, NULL, NULL, NULL}, *res = NULL, *tot = NULL;
  for (int i = 0; i < 4; i++) {
    if (!all[i]) continue;
    em_tensor *e = NULL;
    if ((st = em_expand(all[i], ndim, shape, &e)) != EM_OK) goto done;
    st = nn_dense(e, dt, &d[i]);
    em_tensor_release(e);
    if (st != EM_OK) goto done;
  }
  double bad;
  if (kind == EM_LOSS_BCE && !go && k->outside_unit(d[0], &bad)) {
    st = em_fail(EM_E_VALUE, "%s: all elements of input should be between 0 and 1 (found %g)",
                 op, bad);
    goto done;
  }
  if (go && (st = nn_dense(go, dt, &d[4])) != EM_OK) goto done;
  if ((st = nn_new(input, ndim, shape, dt, 0, &res)) != EM_OK) goto done;
  k->pointwise_loss(kind, red, d[0], d[1], d[2], d[3], d[4], res);
  if (go || red == EM_REDUCTION_NONE) {
    *out = res;
    res = NULL;
  } else {
    if ((st = em_reduce(red == EM_REDUCTION_SUM ? EM_REDUCE_SUM : EM_REDUCE_MEAN, res, 0, NULL, 0,
                        -1, &tot)) != EM_OK)
      goto done;
    *out = tot;
    tot = NULL;
  }
done:
  nn_release(5, d);
  if (res) em_tensor_release(res);
  if (tot) em_tensor_release(tot);
  return st;
}

static em_status mse_loss_run(const em_tensor *input, const em_tensor *target, em_reduction reduction,
                      em_tensor **out) {
  return pointwise_loss("mse_loss", EM_LOSS_MSE, input, target, NULL, NULL, reduction, NULL, out);
}
em_status em_mse_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                               const em_tensor *target, em_reduction reduction,
                               em_tensor **grad_input) {
  em_status gst = nn_not_twice("mse_loss_backward", grad_out, input, target);
  if (gst != EM_OK) return gst;
  return pointwise_loss("mse_loss_backward", EM_LOSS_MSE, input, target, NULL, NULL, reduction,
                        grad_out, grad_input);
}
static em_status l1_loss_run(const em_tensor *input, const em_tensor *target, em_reduction reduction,
                     em_tensor **out) {
  return pointwise_loss("l1_loss", EM_LOSS_L1, input, target, NULL, NULL, reduction, NULL, out);
}
em_status em_l1_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                              const em_tensor *target, em_reduction reduction,
                              em_tensor **grad_input) {
  em_status gst = nn_not_twice("l1_loss_backward", grad_out, input, target);
  if (gst != EM_OK) return gst;
  return pointwise_loss("l1_loss_backward", EM_LOSS_L1, input, target, NULL, NULL, reduction,
                        grad_out, grad_input);
}
static em_status binary_cross_entropy_run(const em_tensor *input, const em_tensor *target,
                                  const em_tensor *weight, em_reduction reduction,
                                  em_tensor **out) {
  return pointwise_loss("binary_cross_entropy", EM_LOSS_BCE, input, target, weight, NULL, reduction,
                        NULL, out);
}
em_status em_binary_cross_entropy_backward(const em_tensor *grad_out, const em_tensor *input,
                                           const em_tensor *target, const em_tensor *weight,
                                           em_reduction reduction, em_tensor **grad_input) {
  em_status gst = nn_not_twice("binary_cross_entropy_backward", grad_out, input, weight);
  if (gst != EM_OK) return gst;
  return pointwise_loss("binary_cross_entropy_backward", EM_LOSS_BCE, input, target, weight, NULL,
                        reduction, grad_out, grad_input);
}
static em_status binary_cross_entropy_with_logits_run(const em_tensor *input, const em_tensor *target,
                                              const em_tensor *weight,
                                              const em_tensor *pos_weight,
                                              em_reduction reduction, em_tensor **out) {
  return pointwise_loss("binary_cross_entropy_with_logits", EM_LOSS_BCE_LOGITS, input, target, weight,
                        pos_weight, reduction, NULL, out);
}
em_status em_binary_cross_entropy_with_logits_backward(
    const em_tensor *grad_out, const em_tensor *input, const em_tensor *target,
    const em_tensor *weight, const em_tensor *pos_weight, em_reduction reduction,
    em_tensor **grad_input) {
  em_status gst = nn_not_twice("binary_cross_entropy_with_logits_backward", grad_out, input, weight);
  if (gst != EM_OK) return gst;
  return pointwise_loss("binary_cross_entropy_with_logits_backward", EM_LOSS_BCE_LOGITS, input, target,
                        weight, pos_weight, reduction, grad_out, grad_input);
}

/* -- the public entries: the runs above, then the autograd node --------------- */

/* i: reduction, ignore_index; extra: target; more: weight, total_weight */
static void cls_params(em_ag_params *p, const em_tensor *target, const em_tensor *weight,
                       em_reduction red, int64_t ignore, double ls) {
  memset(p, 0, sizeof *p);
  p->extra = target;
  p->more[0] = weight;
  p->i[0] = red;
  p->i[1] = ignore;
  p->d[0] = ls;
}

em_status em_nll_loss(const em_tensor *input, const em_tensor *target, const em_tensor *weight,
                      em_reduction reduction, int64_t ignore_index, em_tensor **out,
                      em_tensor **total_weight) {
  const em_tensor *ac[3] = {input, target, weight};
  EM_AUTOCAST(EM_AC_LOSS, 3, ac, em_nll_loss(ac[0], ac[1], ac[2], reduction, ignore_index, out, total_weight));
  EM_HALF_VIA_F32(3, ac, em_nll_loss(ac[0], ac[1], ac[2], reduction, ignore_index, out, total_weight), out);
  int on = em_ag_pause();
  em_tensor *tw = NULL;
  em_status st = nll_loss_run(input, target, weight, reduction, ignore_index, out, &tw);
  em_ag_resume(on);
  em_ag_params p;
  cls_params(&p, target, weight, reduction, ignore_index, 0.0);
  p.more[1] = tw;
  p.save_in = 1;
  const em_tensor *in[1] = {input};
  st = nn_record(on, st, 1, in, out, &p, EM_AG_NN_NLL, "NllLossBackward0");
  if (st != EM_OK) { em_tensor_release(tw); tw = NULL; }
  nn_hand(tw, total_weight);
  return st;
}

em_status em_nll_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                               const em_tensor *target, const em_tensor *weight,
                               em_reduction reduction, int64_t ignore_index,
                               const em_tensor *total_weight, em_tensor **grad_input) {
  int on = em_ag_pause();
  em_status st = nll_loss_backward_run(grad_out, input, target, weight, reduction,
                                       ignore_index, total_weight, grad_input);
  em_ag_resume(on);
  em_ag_params p;
  cls_params(&p, target, weight, reduction, ignore_index, 0.0);
  const em_tensor *in[1] = {grad_out};
  return nn_record(on, st, 1, in, grad_input, &p, EM_AG_NN_NLL_BWD,
                   "NllLossBackwardBackward0");
}

em_status em_cross_entropy(const em_tensor *input, const em_tensor *target,
                           const em_tensor *weight, em_reduction reduction,
                           int64_t ignore_index, double label_smoothing, em_tensor **out) {
  const em_tensor *ac[3] = {input, target, weight};
  EM_AUTOCAST(EM_AC_LOSS, 3, ac, em_cross_entropy(ac[0], ac[1], ac[2], reduction, ignore_index, label_smoothing, out));
  EM_HALF_VIA_F32(3, ac, em_cross_entropy(ac[0], ac[1], ac[2], reduction, ignore_index, label_smoothing, out), out);
  int on = em_ag_pause();
  em_status st = cross_entropy_run(input, target, weight, reduction, ignore_index,
                                   label_smoothing, out);
  em_ag_resume(on);
  em_ag_params p;
  cls_params(&p, target, weight, reduction, ignore_index, label_smoothing);
  p.save_in = 1;
  /* a target of probabilities is differentiable too */
  const em_tensor *in[2] = {input, target};
  int nin = em_dtype_kindof(target->dtype) == EM_KIND_FLOAT ? 2 : 1;
  return nn_record(on, st, nin, in, out, &p, EM_AG_NN_CE, "NllLossBackward0");
}

em_status em_nn_cross_entropy_logp_grad(const em_tensor *grad_out, const em_tensor *input,
                                        const em_tensor *target, const em_tensor *weight,
                                        em_reduction reduction, int64_t ignore_index,
                                        double label_smoothing, em_tensor **out) {
  int on = em_ag_pause();
  em_status st = class_loss("cross_entropy_backward", input, target, weight, reduction,
                            ignore_index, label_smoothing, 2, grad_out, out, NULL);
  em_ag_resume(on);
  return st;
}

/* Pointwise losses: inputs input, target; saved: both, and weight,
** pos_weight (more); i[0]: the reduction. */
static em_status pw_entry(em_ag_nn_op op, const char *name, const em_tensor *input,
                          const em_tensor *target, const em_tensor *weight,
                          const em_tensor *pos_weight, em_reduction red, em_tensor **out) {
  const em_tensor *ac[4] = {input, target, weight, pos_weight};
  EM_AUTOCAST(EM_AC_LOSS, 4, ac, pw_entry(op, name, ac[0], ac[1], ac[2], ac[3], red, out));
  EM_HALF_VIA_F32(4, ac, pw_entry(op, name, ac[0], ac[1], ac[2], ac[3], red, out), out);
  int on = em_ag_pause();
  em_status st;
  switch (op) {
    case EM_AG_NN_MSE: st = mse_loss_run(input, target, red, out); break;
    case EM_AG_NN_L1: st = l1_loss_run(input, target, red, out); break;
    case EM_AG_NN_BCE: st = binary_cross_entropy_run(input, target, weight, red, out); break;
    default:
      st = binary_cross_entropy_with_logits_run(input, target, weight, pos_weight, red, out);
  }
  em_ag_resume(on);
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.save_in = 3;
  p.more[0] = weight;
  p.more[1] = pos_weight;
  p.i[0] = red;
  const em_tensor *in[2] = {input, target};
  return nn_record(on, st, 2, in, out, &p, op, name);
}

em_status em_mse_loss(const em_tensor *input, const em_tensor *target, em_reduction reduction,
                      em_tensor **out) {
  return pw_entry(EM_AG_NN_MSE, "MseLossBackward0", input, target, NULL, NULL, reduction, out);
}
em_status em_l1_loss(const em_tensor *input, const em_tensor *target, em_reduction reduction,
                     em_tensor **out) {
  return pw_entry(EM_AG_NN_L1, "L1LossBackward0", input, target, NULL, NULL, reduction, out);
}
em_status em_binary_cross_entropy(const em_tensor *input, const em_tensor *target,
                                  const em_tensor *weight, em_reduction reduction,
                                  em_tensor **out) {
  return pw_entry(EM_AG_NN_BCE, "BinaryCrossEntropyBackward0", input, target, weight, NULL,
                  reduction, out);
}
em_status em_binary_cross_entropy_with_logits(const em_tensor *input, const em_tensor *target,
                                              const em_tensor *weight,
                                              const em_tensor *pos_weight,
                                              em_reduction reduction, em_tensor **out) {
  return pw_entry(EM_AG_NN_BCEL, "BinaryCrossEntropyWithLogitsBackward0", input, target,
                  weight, pos_weight, reduction, out);
}
