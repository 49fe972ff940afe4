/*
** l_nn.c -- the nn ops (engine/src/ops/conv.c, nn.c, norm.c, loss.c) for the Lua side
** (issue 9). These are internal entry points, C._nn_<name>, with plain
** positional arguments; lua/ember/nn/functional.lua gives them PyTorch's
** names and options, and checks what a user can get wrong there. The
** engine entries record their own autograd nodes (nothing to do here). Every
** function here makes its result boxes first and then calls the engine, so
** nothing is held in C across a Lua error.
*/
#include <math.h>
#include <string.h>

#include "l_ember.h"

static const em_tensor *opt_tensor(lua_State *L, int idx, const char *op) {
  if (lua_isnoneornil(L, idx)) return NULL;
  return l_checktensor(L, idx, op);
}

/* two integers at idx, idx + 1 */
static void pair(lua_State *L, int idx, const char *op, const char *what, int64_t out[2]) {
  out[0] = l_checkint(L, idx, op, what);
  out[1] = l_checkint(L, idx + 1, op, what);
}

/* four sizes from a table (or T.Size) at idx */
static void sizes4(lua_State *L, int idx, const char *op, int64_t out[4]) {
  int next;
  int64_t s[EM_MAX_DIMS];
  int n = l_checksizes(L, idx, op, s, &next);
  if (n != 4) l_errorf(L, "%s: expected 4 sizes, got %d", op, n);
  memcpy(out, s, sizeof(int64_t) * 4);
}

static em_reduction reduction(lua_State *L, int idx, const char *op) {
  const char *r = luaL_optstring(L, idx, "mean");
  if (strcmp(r, "mean") == 0) return EM_REDUCTION_MEAN;
  if (strcmp(r, "sum") == 0) return EM_REDUCTION_SUM;
  if (strcmp(r, "none") == 0) return EM_REDUCTION_NONE;
  l_errorf(L, "%s: %s is not a valid value for reduction (expected \"mean\", \"sum\" or \"none\")",
           op, r);
  return EM_REDUCTION_MEAN;
}

static int box1(lua_State *L, em_status st, em_tensor **b) {
  (void)b;
  if (st != EM_OK) return l_error(L);
  return 1;
}

/* -- convolution ----------------------------------------------------------- */

static int l_conv2d(lua_State *L) {
  const char *op = "conv2d";
  em_tensor *x = l_checktensor(L, 1, op), *w = l_checktensor(L, 2, op);
  const em_tensor *b = opt_tensor(L, 3, op);
  int64_t s[2], p[2], d[2];
  pair(L, 4, op, "stride", s);
  pair(L, 6, op, "padding", p);
  pair(L, 8, op, "dilation", d);
  int64_t g = l_checkint(L, 10, op, "groups");
  em_tensor **o = l_newbox(L);
  return box1(L, em_conv2d(x, w, b, s, p, d, g, o), o);
}

static int l_conv1d(lua_State *L) {
  const char *op = "conv1d";
  em_tensor *x = l_checktensor(L, 1, op), *w = l_checktensor(L, 2, op);
  const em_tensor *b = opt_tensor(L, 3, op);
  int64_t s = l_checkint(L, 4, op, "stride"), p = l_checkint(L, 5, op, "padding");
  int64_t d = l_checkint(L, 6, op, "dilation"), g = l_checkint(L, 7, op, "groups");
  em_tensor **o = l_newbox(L);
  return box1(L, em_conv1d(x, w, b, s, p, d, g, o), o);
}

static int l_conv2d_backward(lua_State *L, int which) {
  const char *op = which == 0 ? "conv2d_backward_input" : "conv2d_backward_weight";
  em_tensor *go = l_checktensor(L, 1, op), *t = l_checktensor(L, 2, op);
  int64_t sz[4], s[2], p[2], d[2];
  sizes4(L, 3, op, sz);
  pair(L, 4, op, "stride", s);
  pair(L, 6, op, "padding", p);
  pair(L, 8, op, "dilation", d);
  int64_t g = l_checkint(L, 10, op, "groups");
  em_tensor **o = l_newbox(L);
  em_status st = which == 0 ? em_conv2d_backward_input(go, t, sz, s, p, d, g, o)
                            : em_conv2d_backward_weight(go, t, sz, s, p, d, g, o);
  return box1(L, st, o);
}
static int l_conv2d_backward_input(lua_State *L) { return l_conv2d_backward(L, 0); }
static int l_conv2d_backward_weight(lua_State *L) { return l_conv2d_backward(L, 1); }

static int l_conv2d_backward_bias(lua_State *L) {
  em_tensor *go = l_checktensor(L, 1, "conv2d_backward_bias");
  em_tensor **o = l_newbox(L);
  return box1(L, em_conv2d_backward_bias(go, o), o);
}

/* -- pooling --------------------------------------------------------------- */

static int l_max_pool2d(lua_State *L) {
  const char *op = "max_pool2d";
  em_tensor *x = l_checktensor(L, 1, op);
  int64_t k[2], s[2], p[2], d[2];
  pair(L, 2, op, "kernel_size", k);
  pair(L, 4, op, "stride", s);
  pair(L, 6, op, "padding", p);
  pair(L, 8, op, "dilation", d);
  int ceil = lua_toboolean(L, 10);
  em_tensor **o = l_newbox(L), **i = l_newbox(L);
  if (em_max_pool2d(x, k, s, p, d, ceil, o, i) != EM_OK) return l_error(L);
  return 2;
}

static int l_max_pool2d_backward(lua_State *L) {
  const char *op = "max_pool2d_backward";
  em_tensor *go = l_checktensor(L, 1, op), *ix = l_checktensor(L, 2, op);
  int64_t sz[4];
  sizes4(L, 3, op, sz);
  em_tensor **o = l_newbox(L);
  return box1(L, em_max_pool2d_backward(go, ix, sz, o), o);
}

static int l_avg_pool2d(lua_State *L) {
  const char *op = "avg_pool2d";
  em_tensor *x = l_checktensor(L, 1, op);
  int64_t k[2], s[2], p[2];
  pair(L, 2, op, "kernel_size", k);
  pair(L, 4, op, "stride", s);
  pair(L, 6, op, "padding", p);
  int ceil = lua_toboolean(L, 8), cip = lua_toboolean(L, 9);
  int64_t div = lua_isnoneornil(L, 10) ? 0 : l_checkint(L, 10, op, "divisor_override");
  if (!lua_isnoneornil(L, 10) && div == 0)
    return l_errorf(L, "%s: divisor must be not zero, got 0", op);
  em_tensor **o = l_newbox(L);
  return box1(L, em_avg_pool2d(x, k, s, p, ceil, cip, div, o), o);
}

static int l_avg_pool2d_backward(lua_State *L) {
  const char *op = "avg_pool2d_backward";
  em_tensor *go = l_checktensor(L, 1, op);
  int64_t sz[4], k[2], s[2], p[2];
  sizes4(L, 2, op, sz);
  pair(L, 3, op, "kernel_size", k);
  pair(L, 5, op, "stride", s);
  pair(L, 7, op, "padding", p);
  int ceil = lua_toboolean(L, 9), cip = lua_toboolean(L, 10);
  int64_t div = lua_isnoneornil(L, 11) ? 0 : l_checkint(L, 11, op, "divisor_override");
  em_tensor **o = l_newbox(L);
  return box1(L, em_avg_pool2d_backward(go, sz, k, s, p, ceil, cip, div, o), o);
}

/* -- embedding, norms, dropout ---------------------------------------------- */

static int l_embedding(lua_State *L) {
  em_tensor *w = l_checktensor(L, 1, "embedding"), *ids = l_checktensor(L, 2, "embedding");
  em_tensor **o = l_newbox(L);
  int64_t pad = lua_isnoneornil(L, 3) ? 0 : l_checkint(L, 3, "embedding", "padding_idx");
  return box1(L, em_embedding(w, ids, pad, o), o);
}

static int l_embedding_backward(lua_State *L) {
  const char *op = "embedding_backward";
  em_tensor *go = l_checktensor(L, 1, op), *ids = l_checktensor(L, 2, op);
  int64_t num = l_checkint(L, 3, op, "num_weights");
  int64_t pad = lua_isnoneornil(L, 4) ? 0 : l_checkint(L, 4, op, "padding_idx");
  em_tensor **o = l_newbox(L);
  return box1(L, em_embedding_backward(go, ids, num, pad, o), o);
}

static int l_layer_norm(lua_State *L) {
  const char *op = "layer_norm";
  em_tensor *x = l_checktensor(L, 1, op);
  int nd = (int)l_checkint(L, 2, op, "normalized_ndim");
  const em_tensor *w = opt_tensor(L, 3, op), *b = opt_tensor(L, 4, op);
  double eps = luaL_optnumber(L, 5, 1e-5);
  em_tensor **o = l_newbox(L), **m = l_newbox(L), **r = l_newbox(L);
  if (em_layer_norm(x, nd, w, b, eps, o, m, r) != EM_OK) return l_error(L);
  return 3;
}

static int l_layer_norm_backward(lua_State *L) {
  const char *op = "layer_norm_backward";
  em_tensor *go = l_checktensor(L, 1, op), *x = l_checktensor(L, 2, op);
  int nd = (int)l_checkint(L, 3, op, "normalized_ndim");
  em_tensor *m = l_checktensor(L, 4, op), *r = l_checktensor(L, 5, op);
  const em_tensor *w = opt_tensor(L, 6, op);
  em_tensor **gi = l_newbox(L), **gw = l_newbox(L), **gb = l_newbox(L);
  if (em_layer_norm_backward(go, x, nd, m, r, w, gi, w ? gw : NULL, gb) != EM_OK)
    return l_error(L);
  if (!w) {
    lua_pushnil(L);
    lua_replace(L, -3);
  }
  return 3;
}

static int l_batch_norm(lua_State *L) {
  const char *op = "batch_norm";
  em_tensor *x = l_checktensor(L, 1, op);
  const em_tensor *w = opt_tensor(L, 2, op), *b = opt_tensor(L, 3, op);
  em_tensor *rm = (em_tensor *)opt_tensor(L, 4, op), *rv = (em_tensor *)opt_tensor(L, 5, op);
  int training = lua_toboolean(L, 6);
  double momentum = luaL_optnumber(L, 7, 0.1), eps = luaL_optnumber(L, 8, 1e-5);
  em_tensor **o = l_newbox(L), **m = l_newbox(L), **is = l_newbox(L);
  if (em_batch_norm(x, w, b, rm, rv, training, momentum, eps, o, m, is) != EM_OK)
    return l_error(L);
  return 3;
}

static int l_batch_norm_backward(lua_State *L) {
  const char *op = "batch_norm_backward";
  em_tensor *go = l_checktensor(L, 1, op), *x = l_checktensor(L, 2, op);
  const em_tensor *w = opt_tensor(L, 3, op);
  em_tensor *m = l_checktensor(L, 4, op), *is = l_checktensor(L, 5, op);
  int training = lua_toboolean(L, 6);
  em_tensor **gi = l_newbox(L), **gw = l_newbox(L), **gb = l_newbox(L);
  if (em_batch_norm_backward(go, x, w, m, is, training, gi, w ? gw : NULL, gb) != EM_OK)
    return l_error(L);
  if (!w) {
    lua_pushnil(L);
    lua_replace(L, -3);
  }
  return 3;
}

static int l_dropout(lua_State *L) {
  em_tensor *x = l_checktensor(L, 1, "dropout");
  double p = luaL_checknumber(L, 2);
  em_tensor **o = l_newbox(L), **m = l_newbox(L);
  if (em_dropout(x, p, o, m) != EM_OK) return l_error(L);
  return 2;
}

/* -- losses ------------------------------------------------------------------ */

static int l_nll_loss(lua_State *L) {
  const char *op = "nll_loss";
  em_tensor *x = l_checktensor(L, 1, op), *t = l_checktensor(L, 2, op);
  const em_tensor *w = opt_tensor(L, 3, op);
  em_reduction r = reduction(L, 4, op);
  int64_t ig = lua_isnoneornil(L, 5) ? -100 : l_checkint(L, 5, op, "ignore_index");
  em_tensor **o = l_newbox(L), **tw = l_newbox(L);
  if (em_nll_loss(x, t, w, r, ig, o, tw) != EM_OK) return l_error(L);
  return 2;
}

static int l_nll_loss_backward(lua_State *L) {
  const char *op = "nll_loss_backward";
  em_tensor *go = l_checktensor(L, 1, op), *x = l_checktensor(L, 2, op),
            *t = l_checktensor(L, 3, op);
  const em_tensor *w = opt_tensor(L, 4, op);
  em_reduction r = reduction(L, 5, op);
  int64_t ig = lua_isnoneornil(L, 6) ? -100 : l_checkint(L, 6, op, "ignore_index");
  const em_tensor *tw = opt_tensor(L, 7, op);
  em_tensor **o = l_newbox(L);
  return box1(L, em_nll_loss_backward(go, x, t, w, r, ig, tw, o), o);
}

static int l_cross_entropy(lua_State *L) {
  const char *op = "cross_entropy";
  em_tensor *x = l_checktensor(L, 1, op), *t = l_checktensor(L, 2, op);
  const em_tensor *w = opt_tensor(L, 3, op);
  em_reduction r = reduction(L, 4, op);
  int64_t ig = lua_isnoneornil(L, 5) ? -100 : l_checkint(L, 5, op, "ignore_index");
  double ls = luaL_optnumber(L, 6, 0.0);
  em_tensor **o = l_newbox(L);
  return box1(L, em_cross_entropy(x, t, w, r, ig, ls, o), o);
}

static int l_cross_entropy_backward(lua_State *L) {
  const char *op = "cross_entropy_backward";
  em_tensor *go = l_checktensor(L, 1, op), *x = l_checktensor(L, 2, op),
            *t = l_checktensor(L, 3, op);
  const em_tensor *w = opt_tensor(L, 4, op);
  em_reduction r = reduction(L, 5, op);
  int64_t ig = lua_isnoneornil(L, 6) ? -100 : l_checkint(L, 6, op, "ignore_index");
  double ls = luaL_optnumber(L, 7, 0.0);
  em_tensor **o = l_newbox(L);
  return box1(L, em_cross_entropy_backward(go, x, t, w, r, ig, ls, o), o);
}

typedef em_status (*loss2_fn)(const em_tensor *, const em_tensor *, em_reduction, em_tensor **);
typedef em_status (*loss2b_fn)(const em_tensor *, const em_tensor *, const em_tensor *,
                               em_reduction, em_tensor **);

static int loss2(lua_State *L, const char *op, loss2_fn f) {
  em_tensor *x = l_checktensor(L, 1, op), *t = l_checktensor(L, 2, op);
  em_reduction r = reduction(L, 3, op);
  em_tensor **o = l_newbox(L);
  return box1(L, f(x, t, r, o), o);
}
static int loss2b(lua_State *L, const char *op, loss2b_fn f) {
  em_tensor *go = l_checktensor(L, 1, op), *x = l_checktensor(L, 2, op),
            *t = l_checktensor(L, 3, op);
  em_reduction r = reduction(L, 4, op);
  em_tensor **o = l_newbox(L);
  return box1(L, f(go, x, t, r, o), o);
}
static int l_mse_loss(lua_State *L) { return loss2(L, "mse_loss", em_mse_loss); }
static int l_l1_loss(lua_State *L) { return loss2(L, "l1_loss", em_l1_loss); }
static int l_mse_loss_backward(lua_State *L) {
  return loss2b(L, "mse_loss_backward", em_mse_loss_backward);
}
static int l_l1_loss_backward(lua_State *L) {
  return loss2b(L, "l1_loss_backward", em_l1_loss_backward);
}

static int l_bce(lua_State *L) {
  const char *op = "binary_cross_entropy";
  em_tensor *x = l_checktensor(L, 1, op), *t = l_checktensor(L, 2, op);
  const em_tensor *w = opt_tensor(L, 3, op);
  em_reduction r = reduction(L, 4, op);
  em_tensor **o = l_newbox(L);
  return box1(L, em_binary_cross_entropy(x, t, w, r, o), o);
}
static int l_bce_backward(lua_State *L) {
  const char *op = "binary_cross_entropy_backward";
  em_tensor *go = l_checktensor(L, 1, op), *x = l_checktensor(L, 2, op),
            *t = l_checktensor(L, 3, op);
  const em_tensor *w = opt_tensor(L, 4, op);
  em_reduction r = reduction(L, 5, op);
  em_tensor **o = l_newbox(L);
  return box1(L, em_binary_cross_entropy_backward(go, x, t, w, r, o), o);
}
static int l_bcel(lua_State *L) {
  const char *op = "binary_cross_entropy_with_logits";
  em_tensor *x = l_checktensor(L, 1, op), *t = l_checktensor(L, 2, op);
  const em_tensor *w = opt_tensor(L, 3, op), *pw = opt_tensor(L, 4, op);
  em_reduction r = reduction(L, 5, op);
  em_tensor **o = l_newbox(L);
  return box1(L, em_binary_cross_entropy_with_logits(x, t, w, pw, r, o), o);
}
static int l_bcel_backward(lua_State *L) {
  const char *op = "binary_cross_entropy_with_logits_backward";
  em_tensor *go = l_checktensor(L, 1, op), *x = l_checktensor(L, 2, op),
            *t = l_checktensor(L, 3, op);
  const em_tensor *w = opt_tensor(L, 4, op), *pw = opt_tensor(L, 5, op);
  em_reduction r = reduction(L, 6, op);
  em_tensor **o = l_newbox(L);
  return box1(L, em_binary_cross_entropy_with_logits_backward(go, x, t, w, pw, r, o), o);
}

/* (q, k, v, attn_mask | nil, dropout_p, is_causal, scale | nil) -> out */
static int l_sdpa(lua_State *L) {
  const char *op = "scaled_dot_product_attention";
  em_tensor *q = l_checktensor(L, 1, op), *k = l_checktensor(L, 2, op),
            *v = l_checktensor(L, 3, op);
  const em_tensor *m = opt_tensor(L, 4, op);
  double p = luaL_optnumber(L, 5, 0.0);
  int causal = lua_toboolean(L, 6);
  double scale = lua_isnoneornil(L, 7) ? NAN : luaL_checknumber(L, 7);
  em_tensor **o = l_newbox(L);
  return box1(L, em_scaled_dot_product_attention(q, k, v, m, p, causal, scale, o, NULL), o);
}

/* (on) -> nil: scaled_dot_product_attention, the recurrent layers and
** unique along a dim composed from ops (the paths a device without their
** kernels takes) on every device; for the tests that hold them against
** the CPU kernels (attention_math_spec, rnn_math_spec, unique_math_spec) */
void em_nn_force_math(int on);
static int l_nn_force_math(lua_State *L) {
  em_nn_force_math(lua_toboolean(L, 1));
  return 0;
}

/* () -> how many T.linalg decompositions ran host-staged (the path of a
** device without LAPACK kernels; on the CPU under _nn_force_math) */
int64_t em_linalg_staged_calls(void);
static int l_linalg_staged(lua_State *L) {
  lua_pushnumber(L, (lua_Number)em_linalg_staged_calls());
  return 1;
}

void l_open_nn(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"_nn_conv2d", l_conv2d},
      {"_nn_conv1d", l_conv1d},
      {"_nn_conv2d_backward_input", l_conv2d_backward_input},
      {"_nn_conv2d_backward_weight", l_conv2d_backward_weight},
      {"_nn_conv2d_backward_bias", l_conv2d_backward_bias},
      {"_nn_max_pool2d", l_max_pool2d},
      {"_nn_max_pool2d_backward", l_max_pool2d_backward},
      {"_nn_avg_pool2d", l_avg_pool2d},
      {"_nn_avg_pool2d_backward", l_avg_pool2d_backward},
      {"_nn_embedding", l_embedding},
      {"_nn_embedding_backward", l_embedding_backward},
      {"_nn_layer_norm", l_layer_norm},
      {"_nn_layer_norm_backward", l_layer_norm_backward},
      {"_nn_batch_norm", l_batch_norm},
      {"_nn_batch_norm_backward", l_batch_norm_backward},
      {"_nn_dropout", l_dropout},
      {"_nn_nll_loss", l_nll_loss},
      {"_nn_nll_loss_backward", l_nll_loss_backward},
      {"_nn_cross_entropy", l_cross_entropy},
      {"_nn_cross_entropy_backward", l_cross_entropy_backward},
      {"_nn_mse_loss", l_mse_loss},
      {"_nn_mse_loss_backward", l_mse_loss_backward},
      {"_nn_l1_loss", l_l1_loss},
      {"_nn_l1_loss_backward", l_l1_loss_backward},
      {"_nn_binary_cross_entropy", l_bce},
      {"_nn_binary_cross_entropy_backward", l_bce_backward},
      {"_nn_binary_cross_entropy_with_logits", l_bcel},
      {"_nn_binary_cross_entropy_with_logits_backward", l_bcel_backward},
      {"_nn_scaled_dot_product_attention", l_sdpa},
      {"_nn_force_math", l_nn_force_math},
      {"_linalg_staged", l_linalg_staged},
      {NULL, NULL}};
  l_add_functions(L, fns);
}
