/*
** ops/norm.c -- layer norm and batch norm with their fused backward: the
** public ops over the nn family of the kernel table (core/kern_nn.h).
**
** What holds:
** - float32/float64, input, weight, bias and the statistics of one dtype
**   and one device; inputs of any layout are read through dense copies;
**   results are new contiguous tensors on the input's device.
** - Statistics accumulate in double (the kernels'); the saved statistics
**   have the input's dtype: layer norm's with size 1 on the normalized
**   dims, batch norm's [C].
** - Batch norm in training moves running_mean/running_var in place (their
**   versions bumped, as an in-place op bumps them); they must be
**   contiguous.
** - Autograd: em_layer_norm / em_batch_norm record one node each; the
**   backward ops are fused and refuse to run where a graph would be needed
**   (the recorded backward uses engine ops there: autograd/formulas.c).
*/
#include "ops/nn_ops.h"
#include "ops/autocast.h"

/* -- layer norm -------------------------------------------------------------- */

static em_status ln_shape(const char *op, const em_tensor *input, int nd, const em_tensor *w,
                          const em_tensor *b, int64_t *M, int64_t *D) {
  if (nd < 1 || nd > input->ndim)
    return em_fail(EM_E_VALUE, "%s: normalized_shape has %d dims but the input has %d", op, nd,
                   input->ndim);
  const int64_t *ns = input->sizes + input->ndim - nd;
  const em_tensor *wb[2] = {w, b};
  for (int k = 0; k < 2; k++) {
    if (!wb[k]) continue;
    em_status st = nn_check_same(op, k ? "bias" : "weight", input, wb[k]);
    if (st != EM_OK) return st;
    if (wb[k]->ndim != nd || memcmp(wb[k]->sizes, ns, sizeof(int64_t) * (size_t)nd) != 0) {
      char a[EM_SHAPE_BUF], c[EM_SHAPE_BUF];
      return em_fail(EM_E_VALUE, "%s: expected %s of shape %s, got %s", op, k ? "bias" : "weight",
                     em_fmt_shape(a, sizeof a, nd, ns),
                     em_fmt_shape(c, sizeof c, wb[k]->ndim, wb[k]->sizes));
    }
  }
  *D = nn_prod(nd, ns);
  *M = nn_prod(input->ndim - nd, input->sizes);
  return EM_OK;
}

static em_status layer_norm_run(const em_tensor *input, int normalized_ndim,
                                const em_tensor *weight, const em_tensor *bias, double eps,
                                em_tensor **out, em_tensor **mean, em_tensor **rstd) {
  const char *op = "layer_norm";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  int64_t M, D;
  if ((st = ln_shape(op, input, normalized_ndim, weight, bias, &M, &D)) != EM_OK) return st;
  em_dtype dt = input->dtype;
  em_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL, *mu = NULL, *rs = NULL;
  int64_t ssz[EM_MAX_DIMS];
  for (int i = 0; i < input->ndim; i++) ssz[i] = i < input->ndim - normalized_ndim ? input->sizes[i] : 1;
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if (weight && (st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if (bias && (st = nn_dense(bias, dt, &b)) != EM_OK) goto done;
  if ((st = nn_new(input, input->ndim, input->sizes, dt, 0, &y)) != EM_OK) goto done;
  if ((st = nn_new(input, input->ndim, ssz, dt, 0, &mu)) != EM_OK) goto done;
  if ((st = nn_new(input, input->ndim, ssz, dt, 0, &rs)) != EM_OK) goto done;
  k->layer_norm(x, w, b, y, mu, rs, M, D, eps);
  *out = y;
  y = NULL;
  if (mean) { *mean = mu; mu = NULL; }
  if (rstd) { *rstd = rs; rs = NULL; }
done:;
  em_tensor *rel[6] = {x, w, b, y, mu, rs};
  nn_release(6, rel);
  return st;
}

em_status em_layer_norm_backward(const em_tensor *grad_out, const em_tensor *input,
                                 int normalized_ndim, const em_tensor *mean,
                                 const em_tensor *rstd, const em_tensor *weight,
                                 em_tensor **grad_input, em_tensor **grad_weight,
                                 em_tensor **grad_bias) {
  em_status gst = nn_not_twice("layer_norm_backward", grad_out, input, weight);
  if (gst != EM_OK) return gst;
  const char *op = "layer_norm_backward";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  if ((st = nn_check_same(op, "grad_output", input, grad_out)) != EM_OK) return st;
  if ((st = nn_check_same(op, "mean", input, mean)) != EM_OK) return st;
  if ((st = nn_check_same(op, "rstd", input, rstd)) != EM_OK) return st;
  int64_t M, D;
  if ((st = ln_shape(op, input, normalized_ndim, weight, NULL, &M, &D)) != EM_OK) return st;
  if (grad_out->ndim != input->ndim ||
      memcmp(grad_out->sizes, input->sizes, sizeof(int64_t) * (size_t)input->ndim) != 0)
    return em_fail(EM_E_VALUE, "%s: grad_output must have the input's shape", op);
  if (em_tensor_numel(mean) != M || em_tensor_numel(rstd) != M)
    return em_fail(EM_E_VALUE, "%s: mean and rstd must hold one value per row (%lld)", op,
                   (long long)M);
  em_dtype dt = input->dtype;
  em_tensor *go = NULL, *x = NULL, *mu = NULL, *rs = NULL, *w = NULL, *gx = NULL, *gw = NULL,
            *gb = NULL;
  const int64_t *ns = input->sizes + input->ndim - normalized_ndim;
  if ((st = nn_dense(grad_out, dt, &go)) != EM_OK) goto done;
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if ((st = nn_dense(mean, dt, &mu)) != EM_OK) goto done;
  if ((st = nn_dense(rstd, dt, &rs)) != EM_OK) goto done;
  if (weight && (st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if (grad_input && (st = nn_new(input, input->ndim, input->sizes, dt, 0, &gx)) != EM_OK)
    goto done;
  if (grad_weight && (st = nn_new(input, normalized_ndim, ns, dt, 0, &gw)) != EM_OK) goto done;
  if (grad_bias && (st = nn_new(input, normalized_ndim, ns, dt, 0, &gb)) != EM_OK) goto done;
  k->layer_norm_backward(go, x, mu, rs, w, gx, gw, gb, M, D);
  if (grad_input) { *grad_input = gx; gx = NULL; }
  if (grad_weight) { *grad_weight = gw; gw = NULL; }
  if (grad_bias) { *grad_bias = gb; gb = NULL; }
done:;
  em_tensor *rel[8] = {go, x, mu, rs, w, gx, gw, gb};
  nn_release(8, rel);
  return st;
}

/* -- batch norm -------------------------------------------------------------- */

static em_status bn_param(const char *op, const char *what, const em_tensor *input,
                          const em_tensor *t, int64_t C, int need_dense) {
  if (!t) return EM_OK;
  em_status st = nn_check_same(op, what, input, t);
  if (st != EM_OK) return st;
  if (t->ndim != 1 || t->sizes[0] != C) {
    char a[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: expected %s of shape [%lld] (the input's channels), got %s", op,
                   what, (long long)C, em_fmt_shape(a, sizeof a, t->ndim, t->sizes));
  }
  if (need_dense && !em_tensor_is_contiguous(t))
    return em_fail(EM_E_VALUE, "%s: %s must be contiguous (it is updated in place)", op, what);
  return EM_OK;
}

static em_status batch_norm_run(const em_tensor *input, const em_tensor *weight,
                                const em_tensor *bias, em_tensor *running_mean,
                                em_tensor *running_var, int training, double momentum,
                                double eps, em_tensor **out, em_tensor **save_mean,
                                em_tensor **save_invstd) {
  const char *op = "batch_norm";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  if (input->ndim < 2)
    return em_fail(EM_E_VALUE, "%s: expected an input of at least 2 dims [N, C, ...], got %d-d",
                   op, input->ndim);
  em_batch_norm_params bp = {input->sizes[0], input->sizes[1],
                             nn_prod(input->ndim - 2, input->sizes + 2), training, momentum,
                             eps};
  int64_t C = bp.C;
  if ((st = bn_param(op, "weight", input, weight, C, 0)) != EM_OK) return st;
  if ((st = bn_param(op, "bias", input, bias, C, 0)) != EM_OK) return st;
  if ((st = bn_param(op, "running_mean", input, running_mean, C, 1)) != EM_OK) return st;
  if ((st = bn_param(op, "running_var", input, running_var, C, 1)) != EM_OK) return st;
  if (!training && (!running_mean || !running_var))
    return em_fail(EM_E_VALUE, "%s: evaluation needs running_mean and running_var", op);
  if (training && bp.N * bp.S <= 1) {
    char a[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: Expected more than 1 value per channel when training, got "
                   "input size %s", op, em_fmt_shape(a, sizeof a, input->ndim, input->sizes));
  }
  em_dtype dt = input->dtype;
  em_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL, *sm = NULL, *si = NULL;
  int64_t csz[1] = {C};
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if (weight && (st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if (bias && (st = nn_dense(bias, dt, &b)) != EM_OK) goto done;
  if ((st = nn_new(input, input->ndim, input->sizes, dt, 0, &y)) != EM_OK) goto done;
  if ((st = nn_new(input, 1, csz, dt, 0, &sm)) != EM_OK) goto done;
  if ((st = nn_new(input, 1, csz, dt, 0, &si)) != EM_OK) goto done;
  if ((st = k->batch_norm(op, x, w, b, running_mean, running_var, y, sm, si, &bp)) != EM_OK)
    goto done;
  if (training && running_mean) em_storage_bump_version(running_mean->storage);
  if (training && running_var) em_storage_bump_version(running_var->storage);
  *out = y;
  y = NULL;
  if (save_mean) { *save_mean = sm; sm = NULL; }
  if (save_invstd) { *save_invstd = si; si = NULL; }
done:;
  em_tensor *rel[6] = {x, w, b, y, sm, si};
  nn_release(6, rel);
  return st;
}

em_status em_batch_norm_backward(const em_tensor *grad_out, const em_tensor *input,
                                 const em_tensor *weight, const em_tensor *save_mean,
                                 const em_tensor *save_invstd, int training,
                                 em_tensor **grad_input, em_tensor **grad_weight,
                                 em_tensor **grad_bias) {
  em_status gst = nn_not_twice("batch_norm_backward", grad_out, input, weight);
  if (gst != EM_OK) return gst;
  const char *op = "batch_norm_backward";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  if (input->ndim < 2)
    return em_fail(EM_E_VALUE, "%s: expected an input of at least 2 dims, got %d-d", op, input->ndim);
  em_batch_norm_params bp = {input->sizes[0], input->sizes[1],
                             nn_prod(input->ndim - 2, input->sizes + 2), training, 0.0, 0.0};
  int64_t C = bp.C;
  if ((st = nn_check_same(op, "grad_output", input, grad_out)) != EM_OK) return st;
  if (grad_out->ndim != input->ndim ||
      memcmp(grad_out->sizes, input->sizes, sizeof(int64_t) * (size_t)input->ndim) != 0)
    return em_fail(EM_E_VALUE, "%s: grad_output must have the input's shape", op);
  if ((st = bn_param(op, "weight", input, weight, C, 0)) != EM_OK) return st;
  if ((st = bn_param(op, "save_mean", input, save_mean, C, 0)) != EM_OK) return st;
  if ((st = bn_param(op, "save_invstd", input, save_invstd, C, 0)) != EM_OK) return st;
  em_dtype dt = input->dtype;
  em_tensor *go = NULL, *x = NULL, *w = NULL, *mu = NULL, *is = NULL, *gx = NULL, *gw = NULL,
            *gb = NULL;
  int64_t csz[1] = {C};
  if ((st = nn_dense(grad_out, dt, &go)) != EM_OK) goto done;
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if (weight && (st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if ((st = nn_dense(save_mean, dt, &mu)) != EM_OK) goto done;
  if ((st = nn_dense(save_invstd, dt, &is)) != EM_OK) goto done;
  if (grad_input && (st = nn_new(input, input->ndim, input->sizes, dt, 0, &gx)) != EM_OK)
    goto done;
  if (grad_weight && (st = nn_new(input, 1, csz, dt, 0, &gw)) != EM_OK) goto done;
  if (grad_bias && (st = nn_new(input, 1, csz, dt, 0, &gb)) != EM_OK) goto done;
  k->batch_norm_backward(go, x, w, mu, is, gx, gw, gb, &bp);
  if (grad_input) { *grad_input = gx; gx = NULL; }
  if (grad_weight) { *grad_weight = gw; gw = NULL; }
  if (grad_bias) { *grad_bias = gb; gb = NULL; }
done:;
  em_tensor *rel[8] = {go, x, w, mu, is, gx, gw, gb};
  nn_release(8, rel);
  return st;
}

/* -- the public entries: the runs above, then the autograd node --------------- */

/* Layer and batch norm: inputs input, weight, bias; saved: input, weight
** and the statistics (more); i[0]: normalized_ndim (layer) or training
** (batch); d[0]: eps. The statistics go to the caller when asked for. */
static em_status norm_record(int on, em_status st, const em_tensor *const *in, em_tensor **out,
                             em_tensor *s1, em_tensor *s2, int64_t i0, double eps,
                             em_ag_nn_op op, const char *name, em_tensor **o1,
                             em_tensor **o2) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.save_in = 3;
  p.more[0] = s1;
  p.more[1] = s2;
  p.i[0] = i0;
  p.d[0] = eps;
  st = nn_record(on, st, 3, in, out, &p, op, name);
  if (st != EM_OK) {
    em_tensor_release(s1);
    em_tensor_release(s2);
    return st;
  }
  nn_hand(s1, o1);
  nn_hand(s2, o2);
  return st;
}

em_status em_layer_norm(const em_tensor *input, int normalized_ndim, const em_tensor *weight,
                        const em_tensor *bias, double eps, em_tensor **out, em_tensor **mean,
                        em_tensor **rstd) {
  const em_tensor *ac[3] = {input, weight, bias};
  EM_AUTOCAST(EM_AC_NORM, 3, ac, em_layer_norm(ac[0], normalized_ndim, ac[1], ac[2], eps, out, mean, rstd));
  EM_HALF_VIA_F32(3, ac, em_layer_norm(ac[0], normalized_ndim, ac[1], ac[2], eps, out, mean, rstd), out);
  int on = em_ag_pause();
  em_tensor *mu = NULL, *rs = NULL;
  em_status st = layer_norm_run(input, normalized_ndim, weight, bias, eps, out, &mu, &rs);
  em_ag_resume(on);
  const em_tensor *in[3] = {input, weight, bias};
  return norm_record(on, st, in, out, mu, rs, normalized_ndim, eps, EM_AG_NN_LAYERNORM,
                     "NativeLayerNormBackward0", mean, rstd);
}

em_status em_batch_norm(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                        em_tensor *running_mean, em_tensor *running_var, int training,
                        double momentum, double eps, em_tensor **out, em_tensor **save_mean,
                        em_tensor **save_invstd) {
  if (input->dtype == EM_FLOAT16 || input->dtype == EM_BFLOAT16) {
    /* no half kernel: in float32, rounded back to the input's dtype; half
    ** running statistics are updated through float32 copies */
    em_tensor *stats[2] = {running_mean, running_var}, *rs[2] = {NULL, NULL};
    em_tensor *o = NULL, *sm = NULL, *si = NULL; /* handed out only on success */
    em_status st = EM_OK;
    for (int i = 0; i < 2 && st == EM_OK; i++)
      if (stats[i] && (stats[i]->dtype == EM_FLOAT16 || stats[i]->dtype == EM_BFLOAT16))
        st = em_to(stats[i], EM_FLOAT32, stats[i]->storage->device, 1, &rs[i]);
    if (st == EM_OK) {
      const em_tensor *hc[3] = {input, weight, bias};
      em_ac_scope hs;
      em_dtype hd = input->dtype;
      if (em_half_begin(&hs, 3, hc, &hd) < 0) {
        st = hs.status;
      } else {
        st = em_batch_norm(hc[0], hc[1], hc[2], rs[0] ? rs[0] : running_mean,
                           rs[1] ? rs[1] : running_var, training, momentum, eps, &o, &sm, &si);
        st = em_half_end(&hs, st, hd, &o);
      }
    }
    int on = em_ag_pause();
    for (int i = 0; i < 2; i++) {
      if (rs[i] && st == EM_OK && training) st = em_copy_(stats[i], rs[i]);
      if (rs[i]) em_tensor_release(rs[i]);
    }
    em_ag_resume(on);
    if (st != EM_OK) {
      em_tensor *made[3] = {o, sm, si};
      for (int i = 0; i < 3; i++)
        if (made[i]) em_tensor_release(made[i]);
      return st;
    }
    *out = o;
    nn_hand(sm, save_mean);
    nn_hand(si, save_invstd);
    return st;
  }
  int on = em_ag_pause();
  em_tensor *sm = NULL, *si = NULL;
  em_status st = batch_norm_run(input, weight, bias, running_mean, running_var, training,
                                momentum, eps, out, &sm, &si);
  em_ag_resume(on);
  const em_tensor *in[3] = {input, weight, bias};
  return norm_record(on, st, in, out, sm, si, training, eps, EM_AG_NN_BATCHNORM,
                     "NativeBatchNormBackward0", save_mean, save_invstd);
}
