/*
** ops/nn.c -- pooling, embedding and dropout: the public ops over the nn
** family of the kernel table (core/kern_nn.h). The norms are in
** ops/norm.c, the losses in ops/loss.c, convolution in ops/conv.c.
**
** What holds:
** - float32/float64 inputs (a mix is an error); inputs of any layout are
**   read through dense copies; results are new contiguous tensors on the
**   input's device.
** - Embedding ids are 1-based and checked before anything is written; a
**   bad id names the op, the id and the valid range.
** - Autograd: the public entries run with grad mode paused and record one
**   node (kind NN, PyTorch's name, the tensors docs/nn.md lists saved) in
**   grad mode when an input requires grad; the backward ops of pooling and
**   embedding record too (second derivatives). The formulas are in
**   autograd/formulas.c.
*/
#include "ops/nn_ops.h"
#include "ops/autocast.h"

/* -- pooling ----------------------------------------------------------------- */

/* PyTorch's pooling_output_shape */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, int ceil_mode) {
  int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= in + pad) o--;
  return o;
}

static em_status pool_geometry(const char *op, int ndim, const int64_t *in,
                               const int64_t kernel[2], const int64_t stride[2],
                               const int64_t padding[2], const int64_t dilation[2],
                               int ceil_mode, em_pool2d_geo *g) {
  if (ndim != 4)
    return em_fail(EM_E_VALUE, "%s: expected a 4-d input [N, C, H, W], got %d-d", op, ndim);
  for (int i = 0; i < 2; i++) {
    g->k[i] = kernel[i];
    g->s[i] = stride[i];
    g->p[i] = padding[i];
    g->d[i] = dilation ? dilation[i] : 1;
    if (g->k[i] < 1)
      return em_fail(EM_E_VALUE, "%s: kernel_size must be positive, got %lld", op, (long long)g->k[i]);
    if (g->s[i] < 1)
      return em_fail(EM_E_VALUE, "%s: stride must be positive, got %lld", op, (long long)g->s[i]);
    if (g->d[i] < 1)
      return em_fail(EM_E_VALUE, "%s: dilation must be positive, got %lld", op, (long long)g->d[i]);
    if (g->p[i] < 0)
      return em_fail(EM_E_VALUE, "%s: pad must be non-negative, but got pad=%lld", op, (long long)g->p[i]);
    if (g->p[i] > g->k[i] / 2)
      return em_fail(EM_E_VALUE, "%s: pad should be at most half of kernel size, but got pad=%lld "
                     "and kernel_size=%lld", op, (long long)g->p[i], (long long)g->k[i]);
  }
  g->count_include_pad = 0;
  g->divisor_override = 0;
  g->planes = in[0] * in[1];
  g->H = in[2];
  g->W = in[3];
  g->oH = pool_out(g->H, g->k[0], g->p[0], g->s[0], g->d[0], ceil_mode);
  g->oW = pool_out(g->W, g->k[1], g->p[1], g->s[1], g->d[1], ceil_mode);
  if (g->oH < 1 || g->oW < 1)
    return em_fail(EM_E_VALUE, "%s: given input size %lldx%lld, the output size %lldx%lld is too small",
                   op, (long long)g->H, (long long)g->W, (long long)g->oH, (long long)g->oW);
  return EM_OK;
}

static em_status max_pool2d_run(const em_tensor *input, const int64_t kernel[2],
                                const int64_t stride[2], const int64_t padding[2],
                                const int64_t dilation[2], int ceil_mode, em_tensor **out,
                                em_tensor **indices) {
  const char *op = "max_pool2d";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  em_pool2d_geo g;
  if ((st = pool_geometry(op, input->ndim, input->sizes, kernel, stride, padding, dilation,
                          ceil_mode, &g)) != EM_OK)
    return st;
  em_tensor *x = NULL, *y = NULL, *ix = NULL;
  int64_t osz[4] = {input->sizes[0], input->sizes[1], g.oH, g.oW};
  if ((st = nn_dense(input, input->dtype, &x)) != EM_OK) goto done;
  if ((st = nn_new(input, 4, osz, input->dtype, 0, &y)) != EM_OK) goto done;
  if (indices && (st = nn_new(input, 4, osz, EM_INT64, 0, &ix)) != EM_OK) goto done;
  k->max_pool2d(x, y, ix, &g);
  *out = y;
  y = NULL;
  if (indices) {
    *indices = ix;
    ix = NULL;
  }
done:;
  em_tensor *rel[3] = {x, y, ix};
  nn_release(3, rel);
  return st;
}

static em_status max_pool2d_backward_run(const em_tensor *grad_out, const em_tensor *indices,
                                         const int64_t input_sizes[4], em_tensor **grad_input) {
  const char *op = "max_pool2d_backward";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, grad_out, &k);
  if (st == EM_OK) st = nn_check_float(op, "grad_output", grad_out);
  if (st == EM_OK) st = nn_check_device(op, grad_out, indices);
  if (st != EM_OK) return st;
  if (indices->dtype != EM_INT64 || indices->ndim != 4 || grad_out->ndim != 4)
    return em_fail(EM_E_VALUE, "%s: expected 4-d grad_output and 4-d int64 indices", op);
  for (int i = 0; i < 4; i++)
    if (indices->sizes[i] != grad_out->sizes[i] || (i < 2 && input_sizes[i] != grad_out->sizes[i]))
      return em_fail(EM_E_VALUE, "%s: grad_output, indices and input sizes do not match", op);
  em_tensor *go = NULL, *ix = NULL, *gx = NULL;
  if ((st = nn_dense(grad_out, grad_out->dtype, &go)) != EM_OK) goto done;
  if ((st = em_contiguous(indices, &ix)) != EM_OK) goto done;
  if ((st = nn_new(grad_out, 4, input_sizes, grad_out->dtype, 1, &gx)) != EM_OK) goto done;
  k->max_pool2d_backward(go, ix, gx);
  *grad_input = gx;
  gx = NULL;
done:;
  em_tensor *rel[3] = {go, ix, gx};
  nn_release(3, rel);
  return st;
}

static em_status avg_pool2d_run(const em_tensor *input, const int64_t kernel[2],
                                const int64_t stride[2], const int64_t padding[2],
                                int ceil_mode, int count_include_pad,
                                int64_t divisor_override, em_tensor **out) {
  const char *op = "avg_pool2d";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, input, &k);
  if (st == EM_OK) st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  em_pool2d_geo g;
  if ((st = pool_geometry(op, input->ndim, input->sizes, kernel, stride, padding, NULL,
                          ceil_mode, &g)) != EM_OK)
    return st;
  g.count_include_pad = count_include_pad;
  g.divisor_override = divisor_override;
  em_tensor *x = NULL, *y = NULL;
  int64_t osz[4] = {input->sizes[0], input->sizes[1], g.oH, g.oW};
  if ((st = nn_dense(input, input->dtype, &x)) != EM_OK) goto done;
  if ((st = nn_new(input, 4, osz, input->dtype, 0, &y)) != EM_OK) goto done;
  k->avg_pool2d(x, y, &g);
  *out = y;
  y = NULL;
done:;
  em_tensor *rel[2] = {x, y};
  nn_release(2, rel);
  return st;
}

static em_status avg_pool2d_backward_run(const em_tensor *grad_out, const int64_t input_sizes[4],
                                         const int64_t kernel[2], const int64_t stride[2],
                                         const int64_t padding[2], int ceil_mode,
                                         int count_include_pad, int64_t divisor_override,
                                         em_tensor **grad_input) {
  const char *op = "avg_pool2d_backward";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, grad_out, &k);
  if (st == EM_OK) st = nn_check_float(op, "grad_output", grad_out);
  if (st != EM_OK) return st;
  em_pool2d_geo g;
  if ((st = pool_geometry(op, 4, input_sizes, kernel, stride, padding, NULL, ceil_mode, &g)) !=
      EM_OK)
    return st;
  if (grad_out->ndim != 4 || grad_out->sizes[0] != input_sizes[0] ||
      grad_out->sizes[1] != input_sizes[1] || grad_out->sizes[2] != g.oH ||
      grad_out->sizes[3] != g.oW)
    return em_fail(EM_E_VALUE, "%s: grad_output does not have the pooled shape", op);
  g.count_include_pad = count_include_pad;
  g.divisor_override = divisor_override;
  em_tensor *go = NULL, *gx = NULL;
  if ((st = nn_dense(grad_out, grad_out->dtype, &go)) != EM_OK) goto done;
  if ((st = nn_new(grad_out, 4, input_sizes, grad_out->dtype, 1, &gx)) != EM_OK) goto done;
  k->avg_pool2d_backward(go, gx, &g);
  *grad_input = gx;
  gx = NULL;
done:;
  em_tensor *rel[2] = {go, gx};
  nn_release(2, rel);
  return st;
}

/* -- embedding --------------------------------------------------------------- */

/* ids as a flat int64 tensor, each checked to be in 1..num */
static em_status flat_ids(const char *op, const em_nn_kernels *k, const em_tensor *ids,
                          int64_t num, em_tensor **out) {
  if (ids->dtype != EM_INT64 && ids->dtype != EM_INT32)
    return em_fail(EM_E_TYPE, "%s: expected ids of dtype int64 or int32, got %s", op,
                   em_dtype_name(ids->dtype));
  em_tensor *f;
  em_status st = nn_dense(ids, EM_INT64, &f);
  if (st != EM_OK) return st;
  int64_t bad;
  if (k->bad_id(f, num, 0, 0, &bad)) {
    em_tensor_release(f);
    return em_fail(EM_E_INDEX, "%s: id %lld is out of range for %lld rows (ids are 1..%lld)", op,
                   (long long)bad, (long long)num, (long long)num);
  }
  int64_t sz[1] = {em_tensor_numel(f)};
  st = em_view(f, 1, sz, out);
  em_tensor_release(f);
  return st;
}

static em_status embedding_run(const em_tensor *weight, const em_tensor *ids, em_tensor **out) {
  const char *op = "embedding";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, weight, &k);
  if (st == EM_OK) st = nn_check_device(op, weight, ids);
  if (st != EM_OK) return st;
  if (weight->ndim != 2)
    return em_fail(EM_E_VALUE, "%s: expected a 2-d weight [num, dim], got %d-d", op, weight->ndim);
  if (ids->ndim + 1 > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: too many dims in ids", op);
  em_tensor *f = NULL, *rows = NULL;
  st = flat_ids(op, k, ids, weight->sizes[0], &f);
  if (st == EM_OK) st = em_index_select(weight, 1, f, &rows);
  if (st == EM_OK) {
    int64_t sz[EM_MAX_DIMS];
    for (int i = 0; i < ids->ndim; i++) sz[i] = ids->sizes[i];
    sz[ids->ndim] = weight->sizes[1];
    st = em_view(rows, ids->ndim + 1, sz, out);
  }
  em_tensor *rel[2] = {f, rows};
  nn_release(2, rel);
  return st;
}

static em_status embedding_backward_run(const em_tensor *grad_out, const em_tensor *ids,
                                        int64_t num_weights, int64_t padding_idx,
                                        em_tensor **grad_weight) {
  const char *op = "embedding_backward";
  const em_nn_kernels *k;
  em_status st = nn_kernels(op, grad_out, &k);
  if (st == EM_OK) st = nn_check_float(op, "grad_output", grad_out);
  if (st == EM_OK) st = nn_check_device(op, grad_out, ids);
  if (st != EM_OK) return st;
  if (grad_out->ndim != ids->ndim + 1)
    return em_fail(EM_E_VALUE, "%s: grad_output must have one more dim than ids", op);
  for (int i = 0; i < ids->ndim; i++)
    if (grad_out->sizes[i] != ids->sizes[i])
      return em_fail(EM_E_VALUE, "%s: grad_output's leading sizes must be the ids' shape", op);
  int64_t dim = grad_out->sizes[ids->ndim];
  em_tensor *f = NULL, *g2 = NULL, *gw = NULL, *pad = NULL;
  int64_t wsz[2] = {num_weights, dim}, gsz[2] = {em_tensor_numel(ids), dim};
  if ((st = flat_ids(op, k, ids, num_weights, &f)) != EM_OK) goto done;
  if ((st = em_reshape(grad_out, 2, gsz, &g2)) != EM_OK) goto done;
  if ((st = nn_new(grad_out, 2, wsz, grad_out->dtype, 1, &gw)) != EM_OK) goto done;
  em_scalar one = {EM_SCALAR_INT, 1, 1.0};
  if ((st = em_index_add_(gw, 1, f, g2, one)) != EM_OK) goto done;
  if (padding_idx >= 1 && padding_idx <= num_weights) {  /* its row gets no gradient */
    em_scalar zero = {EM_SCALAR_INT, 0, 0.0};
    if ((st = em_select(gw, 1, padding_idx, &pad)) != EM_OK) goto done;
    if ((st = em_fill_(pad, zero)) != EM_OK) goto done;
  }
  *grad_weight = gw;
  gw = NULL;
done:;
  em_tensor *rel[4] = {f, g2, gw, pad};
  nn_release(4, rel);
  return st;
}

/* -- dropout ----------------------------------------------------------------- */

static em_status dropout_run(const em_tensor *input, double p, em_tensor **out, em_tensor **mask) {
  const char *op = "dropout";
  em_status st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  if (!(p >= 0 && p <= 1))
    return em_fail(EM_E_VALUE, "%s: dropout probability has to be between 0 and 1, but got %g",
                   op, p);
  em_tensor *m = NULL, *y = NULL;
  if ((st = nn_new(input, input->ndim, input->sizes, input->dtype, 0, &m)) != EM_OK) goto done;
  if (p >= 1) {
    em_scalar z = {EM_SCALAR_FLOAT, 0, 0.0};
    st = em_fill_(m, z);
  } else if ((st = em_bernoulli_(m, 1.0 - p)) == EM_OK) {
    /* the mask holds 0 and 1: scaling it in place by a multiply gives 0
    ** and 1 / (1 - p) exactly, without a branch per element on random bits
    ** (a select here was a third of dropout's time in mispredictions) */
    em_operand mk[2] = {{m, {EM_SCALAR_INT, 0, 0.0}},
                        {NULL, {EM_SCALAR_FLOAT, 0, 1.0 / (1.0 - p)}}};
    st = em_elementwise(EM_OP_MUL, 2, mk, NULL, m, NULL);
  }
  if (st != EM_OK) goto done;
  if ((st = em_binary(EM_OP_MUL, input, m, &y)) != EM_OK) goto done;
  *out = y;
  y = NULL;
  if (mask) { *mask = m; m = NULL; }
done:;
  em_tensor *rel[2] = {m, y};
  nn_release(2, rel);
  return st;
}

/* -- the public entries: the runs above, then the autograd node --------------- */

em_status em_max_pool2d(const em_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                        const int64_t padding[2], const int64_t dilation[2], int ceil_mode,
                        em_tensor **out, em_tensor **indices) {
  /* bfloat16 (float16 on CUDA): computed in float32, the values rounded
  ** back (a max is exact), as conv2d */
  em_status hst = nn_no_cpu_f16("max_pool2d", input);
  if (hst != EM_OK) return hst;
  const em_tensor *ac[1] = {input};
  EM_HALF_VIA_F32(1, ac, em_max_pool2d(ac[0], kernel, stride, padding, dilation, ceil_mode, out, indices), out);
  int on = em_ag_pause();
  em_tensor *ix = NULL;  /* the node needs the indices even when the caller does not */
  int want = indices || (on && input->requires_grad);
  em_status st = max_pool2d_run(input, kernel, stride, padding, dilation, ceil_mode, out,
                                want ? &ix : NULL);
  em_ag_resume(on);
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.extra = ix;
  const em_tensor *in[1] = {input};
  st = nn_record(on, st, 1, in, out, &p, EM_AG_NN_MAXPOOL, "MaxPool2DWithIndicesBackward0");
  if (st != EM_OK) { em_tensor_release(ix); ix = NULL; }
  nn_hand(ix, indices);
  return st;
}

em_status em_max_pool2d_backward(const em_tensor *grad_out, const em_tensor *indices,
                                 const int64_t input_sizes[4], em_tensor **grad_input) {
  int on = em_ag_pause();
  em_status st = max_pool2d_backward_run(grad_out, indices, input_sizes, grad_input);
  em_ag_resume(on);
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.extra = indices;
  const em_tensor *in[1] = {grad_out};
  return nn_record(on, st, 1, in, grad_input, &p, EM_AG_NN_MAXPOOL_BWD,
                   "MaxPool2DWithIndicesBackwardBackward0");
}

/* list: kernel, stride, padding (pairs); i: ceil_mode, count_include_pad,
** divisor_override */
static void pool_params(em_ag_params *p, const int64_t k[2], const int64_t s[2],
                        const int64_t pd[2], int ceil_mode, int cip, int64_t div) {
  memset(p, 0, sizeof *p);
  p->nlist = 6;
  int64_t l[6] = {k[0], k[1], s[0], s[1], pd[0], pd[1]};
  memcpy(p->list, l, sizeof l);
  p->i[0] = ceil_mode;
  p->i[1] = cip;
  p->i[2] = div;
}

em_status em_avg_pool2d(const em_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                        const int64_t padding[2], int ceil_mode, int count_include_pad,
                        int64_t divisor_override, em_tensor **out) {
  /* bfloat16 (float16 on CUDA): the window sums and divisions in float32,
  ** rounded once, as torch's kernels accumulate */
  em_status hst = nn_no_cpu_f16("avg_pool2d", input);
  if (hst != EM_OK) return hst;
  const em_tensor *ac[1] = {input};
  EM_HALF_VIA_F32(1, ac, em_avg_pool2d(ac[0], kernel, stride, padding, ceil_mode, count_include_pad,
                                       divisor_override, out), out);
  int on = em_ag_pause();
  em_status st = avg_pool2d_run(input, kernel, stride, padding, ceil_mode, count_include_pad,
                                divisor_override, out);
  em_ag_resume(on);
  em_ag_params p;
  pool_params(&p, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
  const em_tensor *in[1] = {input};
  return nn_record(on, st, 1, in, out, &p, EM_AG_NN_AVGPOOL, "AvgPool2DBackward0");
}

em_status em_avg_pool2d_backward(const em_tensor *grad_out, const int64_t input_sizes[4],
                                 const int64_t kernel[2], const int64_t stride[2],
                                 const int64_t padding[2], int ceil_mode,
                                 int count_include_pad, int64_t divisor_override,
                                 em_tensor **grad_input) {
  int on = em_ag_pause();
  em_status st = avg_pool2d_backward_run(grad_out, input_sizes, kernel, stride, padding,
                                         ceil_mode, count_include_pad, divisor_override,
                                         grad_input);
  em_ag_resume(on);
  em_ag_params p;
  pool_params(&p, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
  const em_tensor *in[1] = {grad_out};
  return nn_record(on, st, 1, in, grad_input, &p, EM_AG_NN_AVGPOOL_BWD,
                   "AvgPool2DBackwardBackward0");
}

em_status em_embedding(const em_tensor *weight, const em_tensor *ids, int64_t padding_idx,
                       em_tensor **out) {
  int on = em_ag_pause();
  em_status st = embedding_run(weight, ids, out);
  em_ag_resume(on);
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.extra = ids;
  p.i[0] = padding_idx;
  const em_tensor *in[1] = {weight};
  return nn_record(on, st, 1, in, out, &p, EM_AG_NN_EMBEDDING, "EmbeddingBackward0");
}

em_status em_embedding_backward(const em_tensor *grad_out, const em_tensor *ids,
                                int64_t num_weights, int64_t padding_idx,
                                em_tensor **grad_weight) {
  int on = em_ag_pause();
  em_status st = embedding_backward_run(grad_out, ids, num_weights, padding_idx, grad_weight);
  em_ag_resume(on);
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.extra = ids;
  p.i[0] = padding_idx;
  const em_tensor *in[1] = {grad_out};
  return nn_record(on, st, 1, in, grad_weight, &p, EM_AG_NN_EMBEDDING_BWD,
                   "EmbeddingBackwardBackward0");
}

em_status em_dropout(const em_tensor *input, double p, em_tensor **out, em_tensor **mask) {
  int on = em_ag_pause();
  em_tensor *m = NULL;
  em_status st = dropout_run(input, p, out, &m);
  em_ag_resume(on);
  em_ag_params pr;
  memset(&pr, 0, sizeof pr);
  pr.extra = m;
  const em_tensor *in[1] = {input};
  st = nn_record(on, st, 1, in, out, &pr, EM_AG_NN_DROPOUT, "NativeDropoutBackward0");
  if (st != EM_OK) { em_tensor_release(m); m = NULL; }
  nn_hand(m, mask);
  return st;
}
