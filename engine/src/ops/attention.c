/*
** ops/attention.c -- scaled_dot_product_attention and its fused backward:
** the public ops over the nn family's sdpa entries (core/kern_nn.h).
**
** What holds:
** - q (..., L, E), k (..., S, E), v (..., S, Ev) of one float dtype and
**   one device with the same batch dims (the Lua layer broadcasts them);
**   the result is (..., L, Ev), new and contiguous.
** - attn_mask: bool (true keeps) or of q's dtype (added to the scores),
**   broadcastable to (..., L, S); it is read where it lies (its own shape,
**   made dense once, never expanded); it is not differentiated.
**   is_causal keeps key j <= query i (top-left, PyTorch's tril) and may not
**   be combined with a mask. scale NaN: 1 / sqrt(E).
** - dropout_p in [0, 1]: p > 0 reserves ceil(B * L * S / 4) Philox blocks
**   of the generator; the backward is handed the same draw and regenerates
**   the mask.
** - Autograd: one node (ScaledDotProductFlashAttentionBackward0) over q, k,
**   v saving them, the output, the log-sum-exp and the mask; its backward
**   is the fused kernel, and is not itself differentiable.
*/
#include "ops/nn_ops.h"
#include "ops/autocast.h"

#include <math.h>

static int same_dims(int n, const int64_t *a, const int64_t *b) {
  return n == 0 || memcmp(a, b, sizeof(int64_t) * (size_t)n) == 0;
}

/* Checks q, k, v (and grad_out, out) and fills the geometry of p. */
static em_status sdpa_geo(const char *op, const em_tensor *q, const em_tensor *k,
                          const em_tensor *v, em_sdpa_params *p) {
  em_status st = nn_check_float(op, "query", q);
  if (st == EM_OK) st = nn_check_same(op, "key", q, k);
  if (st == EM_OK) st = nn_check_same(op, "value", q, v);
  if (st != EM_OK) return st;
  if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
    return em_fail(EM_E_VALUE, "%s: expected query, key and value of at least 2 dims, got %d, "
                   "%d and %d", op, q->ndim, k->ndim, v->ndim);
  char a[EM_SHAPE_BUF], b[EM_SHAPE_BUF], c[EM_SHAPE_BUF];
  int nb = q->ndim - 2;
  if (k->ndim != q->ndim || v->ndim != q->ndim || !same_dims(nb, q->sizes, k->sizes) ||
      !same_dims(nb, q->sizes, v->sizes) || k->sizes[nb] != v->sizes[nb] ||
      k->sizes[nb + 1] != q->sizes[nb + 1])
    return em_fail(EM_E_VALUE, "%s: expected query (..., L, E), key (..., S, E) and value "
                   "(..., S, Ev) with the same batch dims, got %s, %s and %s", op,
                   em_fmt_shape(a, sizeof a, q->ndim, q->sizes),
                   em_fmt_shape(b, sizeof b, k->ndim, k->sizes),
                   em_fmt_shape(c, sizeof c, v->ndim, v->sizes));
  memset(p, 0, sizeof *p);
  p->B = nn_prod(nb, q->sizes);
  p->L = q->sizes[nb];
  p->E = q->sizes[nb + 1];
  p->S = k->sizes[nb];
  p->Ev = v->sizes[nb + 1];
  p->nb = nb;
  for (int d = 0; d < nb; d++) p->bsize[d] = q->sizes[d];
  return EM_OK;
}

/* The mask as a dense additive tensor of dt (a new reference) and its
** strides in p. */
static em_status sdpa_mask(const char *op, const em_tensor *q, const em_tensor *mask,
                           em_sdpa_params *p, em_tensor **out) {
  *out = NULL;
  if (!mask) return EM_OK;
  em_status st = nn_check_device(op, q, mask);
  if (st != EM_OK) return st;
  if (mask->dtype != EM_BOOL && mask->dtype != q->dtype)
    return em_fail(EM_E_TYPE, "%s: expected attn_mask of dtype bool or %s (the query's), got %s",
                   op, em_dtype_name(q->dtype), em_dtype_name(mask->dtype));
  int nd = q->ndim;
  int64_t want[EM_MAX_DIMS];
  for (int d = 0; d < nd - 1; d++) want[d] = q->sizes[d];
  want[nd - 1] = p->S;
  int ok = mask->ndim <= nd;
  for (int d = 0; ok && d < mask->ndim; d++) {
    int64_t m = mask->sizes[mask->ndim - 1 - d], w = want[nd - 1 - d];
    if (m != 1 && m != w) ok = 0;
  }
  if (!ok) {
    char a[EM_SHAPE_BUF], b[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: attn_mask of shape %s cannot be broadcast to %s", op,
                   em_fmt_shape(a, sizeof a, mask->ndim, mask->sizes),
                   em_fmt_shape(b, sizeof b, nd, want));
  }
  em_tensor *m = NULL;
  if (mask->dtype == EM_BOOL) {
    em_scalar ninf = {EM_SCALAR_FLOAT, 0, -INFINITY}, zero = {EM_SCALAR_FLOAT, 0, 0.0};
    st = em_full(mask->ndim, mask->sizes, ninf, q->dtype, q->storage->device, &m);
    if (st == EM_OK && (st = em_masked_fill_(m, mask, zero)) != EM_OK) {
      em_tensor_release(m);
      m = NULL;
    }
  } else {
    st = nn_dense(mask, q->dtype, &m);
  }
  if (st != EM_OK) return st;
  /* element strides of the dense mask, aligned right against (batch, L, S) */
  int64_t stride[EM_MAX_DIMS], s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    int md = d - (nd - m->ndim);
    if (md < 0 || m->sizes[md] == 1) {
      stride[d] = 0;
    } else {
      stride[d] = s;
    }
    if (md >= 0) s *= m->sizes[md];
  }
  for (int d = 0; d < nd - 2; d++) p->bstride[d] = stride[d];
  p->msi = stride[nd - 2];
  p->msj = stride[nd - 1];
  *out = m;
  return EM_OK;
}

static em_status sdpa_opts(const char *op, int has_mask, double dropout_p, int is_causal,
                           double scale, em_sdpa_params *p) {
  if (!(dropout_p >= 0 && dropout_p <= 1))
    return em_fail(EM_E_VALUE, "%s: dropout_p has to be between 0 and 1, but got %g", op,
                   dropout_p);
  if (is_causal && has_mask)
    return em_fail(EM_E_VALUE, "%s: an explicit attn_mask should not be set when is_causal "
                   "is true", op);
  p->dropout_p = dropout_p;
  p->causal = is_causal != 0;
  p->scale = isnan(scale) ? 1.0 / sqrt((double)(p->E > 0 ? p->E : 1)) : scale;
  return EM_OK;
}

static em_status sdpa_run(const em_tensor *query, const em_tensor *key, const em_tensor *value,
                          const em_tensor *attn_mask, double dropout_p, int is_causal,
                          double scale, em_tensor **out, em_tensor **lse_out,
                          em_tensor **mask_out, em_sdpa_params *p) {
  const char *op = "scaled_dot_product_attention";
  const em_nn_kernels *kk;
  em_status st = nn_kernels(op, query, &kk);
  if (st == EM_OK) st = sdpa_geo(op, query, key, value, p);
  if (st == EM_OK) st = sdpa_opts(op, attn_mask != NULL, dropout_p, is_causal, scale, p);
  if (st != EM_OK) return st;
  em_dtype dt = query->dtype;
  em_tensor *q = NULL, *k = NULL, *v = NULL, *m = NULL, *y = NULL, *lse = NULL;
  int nd = query->ndim;
  int64_t osz[EM_MAX_DIMS];
  memcpy(osz, query->sizes, sizeof(int64_t) * (size_t)nd);
  osz[nd - 1] = p->Ev;
  if ((st = sdpa_mask(op, query, attn_mask, p, &m)) != EM_OK) goto done;
  if ((st = nn_dense(query, dt, &q)) != EM_OK) goto done;
  if ((st = nn_dense(key, dt, &k)) != EM_OK) goto done;
  if ((st = nn_dense(value, dt, &v)) != EM_OK) goto done;
  if ((st = nn_new(query, nd, osz, dt, 0, &y)) != EM_OK) goto done;
  if ((st = nn_new(query, nd - 1, query->sizes, dt, 0, &lse)) != EM_OK) goto done;
  if (dropout_p > 0) {
    uint64_t n = (uint64_t)p->B * (uint64_t)p->L * (uint64_t)p->S;
    em_random_reserve(query->storage->device, (n + 3) / 4, &p->draw);
  }
  st = em_sdpa_use_math(kk) ? em_sdpa_math(q, k, v, m, y, lse, p)
                             : kk->sdpa(op, q, k, v, m, y, lse, p);
  if (st != EM_OK) goto done;
  *out = y;
  y = NULL;
  if (lse_out) { *lse_out = lse; lse = NULL; }
  if (mask_out) { *mask_out = m; m = NULL; }
done:;
  em_tensor *rel[6] = {q, k, v, m, y, lse};
  nn_release(6, rel);
  return st;
}

em_status em_scaled_dot_product_attention_backward(
    const em_tensor *grad_out, const em_tensor *query, const em_tensor *key,
    const em_tensor *value, const em_tensor *out, const em_tensor *lse,
    const em_tensor *attn_mask, double dropout_p, int is_causal, double scale, uint64_t seed,
    uint64_t offset, em_tensor **grad_query, em_tensor **grad_key, em_tensor **grad_value) {
  const char *op = "scaled_dot_product_attention_backward";
  em_status st = nn_not_twice(op, grad_out, query, key);
  if (st == EM_OK) st = nn_not_twice(op, value, NULL, NULL);
  if (st != EM_OK) return st;
  const em_nn_kernels *kk;
  em_sdpa_params p;
  if ((st = nn_kernels(op, query, &kk)) == EM_OK) st = sdpa_geo(op, query, key, value, &p);
  if (st == EM_OK) st = sdpa_opts(op, attn_mask != NULL, dropout_p, is_causal, scale, &p);
  if (st == EM_OK) st = nn_check_same(op, "grad_output", query, grad_out);
  if (st == EM_OK) st = nn_check_same(op, "output", query, out);
  if (st == EM_OK) st = nn_check_same(op, "logsumexp", query, lse);
  if (st != EM_OK) return st;
  int nd = query->ndim;
  int64_t osz[EM_MAX_DIMS];
  memcpy(osz, query->sizes, sizeof(int64_t) * (size_t)nd);
  osz[nd - 1] = p.Ev;
  if (grad_out->ndim != nd || !same_dims(nd, grad_out->sizes, osz) || out->ndim != nd ||
      !same_dims(nd, out->sizes, osz) || lse->ndim != nd - 1 ||
      !same_dims(nd - 1, lse->sizes, query->sizes))
    return em_fail(EM_E_VALUE, "%s: grad_output and output must have the shape (..., L, Ev) "
                   "and logsumexp (..., L)", op);
  p.draw.key[0] = (uint32_t)seed;
  p.draw.key[1] = (uint32_t)(seed >> 32);
  p.draw.offset = offset;
  em_dtype dt = query->dtype;
  em_tensor *go = NULL, *q = NULL, *k = NULL, *v = NULL, *o = NULL, *ls = NULL, *m = NULL,
            *gq = NULL, *gk = NULL, *gv = NULL;
  if ((st = sdpa_mask(op, query, attn_mask, &p, &m)) != EM_OK) goto done;
  if ((st = nn_dense(grad_out, dt, &go)) != EM_OK) goto done;
  if ((st = nn_dense(query, dt, &q)) != EM_OK) goto done;
  if ((st = nn_dense(key, dt, &k)) != EM_OK) goto done;
  if ((st = nn_dense(value, dt, &v)) != EM_OK) goto done;
  if ((st = nn_dense(out, dt, &o)) != EM_OK) goto done;
  if ((st = nn_dense(lse, dt, &ls)) != EM_OK) goto done;
  if ((st = nn_new(query, nd, query->sizes, dt, 1, &gq)) != EM_OK) goto done;
  if ((st = nn_new(query, nd, key->sizes, dt, 1, &gk)) != EM_OK) goto done;
  if ((st = nn_new(query, nd, value->sizes, dt, 1, &gv)) != EM_OK) goto done;
  st = em_sdpa_use_math(kk) ? em_sdpa_math_backward(go, q, k, v, m, o, ls, gq, gk, gv, &p)
                             : kk->sdpa_backward(op, go, q, k, v, m, o, ls, gq, gk, gv, &p);
  if (st != EM_OK) goto done;
  nn_hand(gq, grad_query);
  nn_hand(gk, grad_key);
  nn_hand(gv, grad_value);
  gq = gk = gv = NULL;
done:;
  em_tensor *rel[10] = {go, q, k, v, o, ls, m, gq, gk, gv};
  nn_release(10, rel);
  return st;
}

em_status em_scaled_dot_product_attention(const em_tensor *query, const em_tensor *key,
                                          const em_tensor *value, const em_tensor *attn_mask,
                                          double dropout_p, int is_causal, double scale,
                                          em_tensor **out, em_tensor **logsumexp) {
  /* half inputs (autocast's bfloat16 projections): in float32, rounded back */
  const em_tensor *hc[4] = {query, key, value, attn_mask};
  EM_HALF_VIA_F32(4, hc, em_scaled_dot_product_attention(hc[0], hc[1], hc[2], hc[3], dropout_p,
                                                         is_causal, scale, out, logsumexp), out);
  int on = em_ag_pause();
  em_tensor *lse = NULL, *m = NULL;
  em_sdpa_params p;
  em_status st = sdpa_run(query, key, value, attn_mask, dropout_p, is_causal, scale, out, &lse,
                          &m, &p);
  em_ag_resume(on);
  if (st == EM_OK) {
    const em_tensor *in[3] = {query, key, value};
    em_ag_params ap;
    memset(&ap, 0, sizeof ap);
    ap.save_in = 7;
    ap.save_out = 1;
    ap.extra = m;
    ap.more[0] = lse;
    ap.i[0] = p.causal;
    ap.i[1] = (int64_t)((uint64_t)p.draw.key[0] | ((uint64_t)p.draw.key[1] << 32));
    ap.i[2] = (int64_t)p.draw.offset;
    ap.i[3] = m != NULL;
    ap.d[0] = p.dropout_p;
    ap.d[1] = p.scale;
    st = nn_record(on, st, 3, in, out, &ap, EM_AG_NN_SDPA,
                   "ScaledDotProductFlashAttentionBackward0");
  }
  if (st == EM_OK && logsumexp) {
    *logsumexp = lse;
    lse = NULL;
  }
  if (lse) em_tensor_release(lse);
  if (m) em_tensor_release(m);
  return st;
}
