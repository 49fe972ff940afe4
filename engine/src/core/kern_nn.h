/*
** kern_nn.h -- the nn family of the kernel table (core/kernels.h):
** convolution, pooling, the id checks, layer and batch norm, the losses
** and the recurrent layers' time loops. The ops (ops/conv.c, ops/nn.c,
** ops/norm.c, ops/loss.c, ops/rnn.c) check the
** arguments, compute the geometry, make every operand a dense row-major
** tensor on one device (float32 or float64, one dtype per call unless an
** entry says otherwise) and allocate every output (batch_norm's running
** statistics are the caller's, moved in place); an entry reads those
** operands and writes the outputs it is given, nothing else.
**
** What every entry may rely on: shapes are the ones the geometry names
** (checked by the op); the outputs the op allocated are new tensors that
** no operand shares memory with, and those documented as "zeroed" hold
** zeros on entry (the op made them with em_zeros). Optional operands and
** outputs are NULL when absent.
*/
#ifndef EMBER_KERN_NN_H
#define EMBER_KERN_NN_H

#include "core/core.h"
#include "core/kern_random.h"

/* -- Parameters ------------------------------------------------------------ */

/* The three passes of a convolution by one driver. */
typedef enum em_conv_pass {
  EM_CONV_FORWARD,          /* a input, b weight (+ bias) -> out [N, O, oH, oW] */
  EM_CONV_BACKWARD_INPUT,   /* a grad_out, b weight -> out grad_input (zeroed) */
  EM_CONV_BACKWARD_WEIGHT   /* a grad_out, b input -> out grad_weight (zeroed) */
} em_conv_pass;

/* conv2d's geometry (ops/conv.c): input [N, C, H, W], weight
** [O, Cg, kH, kW] with Cg = C / groups, output [N, O, oH, oW]; Og = O /
** groups, K = Cg * kH * kW, L = oH * oW (K, L and Og fit an int: one GEMM
** dimension each); stride, padding, dilation as {height, width}. */
typedef struct em_conv2d_geo {
  int64_t N, C, H, W;
  int64_t O, Cg, kH, kW;
  int64_t oH, oW, groups, Og, K, L;
  int64_t s[2], p[2], d[2];
} em_conv2d_geo;

/* Pooling geometry (ops/nn.c, PyTorch's pooling_output_shape): planes =
** N * C input planes of H x W, output planes of oH x oW; kernel, stride,
** padding, dilation as {height, width} (dilation 1 for avg). avg pooling
** only: count_include_pad counts padded cells in the divisor, and
** divisor_override > 0 replaces the divisor. */
typedef struct em_pool2d_geo {
  int64_t planes, H, W, oH, oW;
  int64_t k[2], s[2], p[2], d[2];
  int count_include_pad;
  int64_t divisor_override;
} em_pool2d_geo;

/* Batch norm over x [N, C, S] (S the product of the dims after C). */
typedef struct em_batch_norm_params {
  int64_t N, C, S;
  int training;            /* batch statistics (else the running ones) */
  double momentum, eps;
} em_batch_norm_params;

/* nll_loss and cross_entropy over input [N, C, S] (lanes (n, s), classes
** along C). */
typedef struct em_class_loss_params {
  int64_t N, C, S;
  int prob;                /* the target holds probabilities, not class ids */
  int logsm;               /* 0 nll_loss (the input holds log-probabilities);
                           ** 1 cross_entropy (log_softmax first); 2 as 1,
                           ** but the backward stops at d loss / d log_softmax */
  em_reduction reduction;
  int64_t ignore_index;    /* a class id that counts for nothing */
  double label_smoothing;  /* in [0, 1] (cross_entropy) */
} em_class_loss_params;

/* The pointwise losses. */
typedef enum em_pointwise_loss {
  EM_LOSS_MSE, EM_LOSS_L1, EM_LOSS_BCE, EM_LOSS_BCE_LOGITS
} em_pointwise_loss;

/* scaled_dot_product_attention over B = prod(batch dims) problems (ops/
** attention.c): q [B, L, E], k [B, S, E], v [B, S, Ev], out [B, L, Ev],
** lse [B, L] (the log-sum-exp of each row of scores). mask (NULL or of the
** dtype, additive, -inf where a position is masked) is read at
** mask_off(b) + i * msi + j * msj (0-based i < L, j < S), where mask_off
** unravels b row-major over bsize[0..nb) with the strides bstride (0 on a
** broadcast dim). causal keeps j <= i. Dropout (p > 0): element (b, i, j)
** of the probabilities is kept when the uniform of lane idx % 4 of the
** Philox block draw.offset + idx / 4 (idx = (b * L + i) * S + j; the
** uniform is the high 24 bits of the lane over 2^24) is >= p, and kept
** ones are scaled by 1 / (1 - p) (0 when p >= 1). */
typedef struct em_sdpa_params {
  int64_t B, L, S, E, Ev;
  double scale, dropout_p;
  int causal;
  em_draw draw;
  int nb;
  int64_t bsize[EM_MAX_DIMS], bstride[EM_MAX_DIMS];
  int64_t msi, msj;
} em_sdpa_params;
/* One layer and direction of a recurrent net (ops/rnn.c): x [L, N, I],
** states h [N, P] (P = proj_size, else H) and c [N, H] (LSTM), G gates
** of H each per step (1 RNN, 4 LSTM i f g o, 3 GRU r z n; w_ih [G H, I],
** w_hh [G H, P], biases [G H], w_hr [P, H]). lengths (host, N counts in
** 0..L, NULL: all L): a sequence n runs over t < lengths[n] only (its
** later outputs are 0 and its state stops there; reverse starts it at its
** own last step). */
typedef struct em_rnn_geo {
  em_rnn_mode mode;
  int64_t L, N, I, H, P, G;
  int reverse;
  const int64_t *lengths;
} em_rnn_geo;

/* The operands, dense and of one dtype (h0, c0, the biases and w_hr may be
** NULL: zero states, no bias, no projection), and the gradients of the
** backward (zeroed outputs of the operands' shapes; NULL: not wanted). */
typedef struct em_rnn_args {
  const em_tensor *x, *h0, *c0, *w_ih, *w_hh, *b_ih, *b_hh, *w_hr;
} em_rnn_args;
typedef struct em_rnn_grads {
  em_tensor *x, *h0, *c0, *w_ih, *w_hh, *b_ih, *b_hh, *w_hr;
} em_rnn_grads;

/* The workspace the forward fills for the backward (elements, one dtype):
** the state before each step and after the last (L + 1) x N x P, the cell
** states (L + 1) x N x H (LSTM), the activated gates L x N x G H, and
** W_hn h + b_hn  L x N x H (GRU). */
static inline int64_t em_rnn_ws_size(const em_rnn_geo *g) {
  int64_t s = (g->L + 1) * g->N * g->P + g->L * g->N * g->G * g->H;
  if (g->mode == EM_RNN_LSTM) s += (g->L + 1) * g->N * g->H;
  if (g->mode == EM_RNN_GRU) s += g->L * g->N * g->H;
  return s;
}

/* -- The entries ------------------------------------------------------------- */

typedef struct em_nn_kernels {
  /* One pass of conv2d (em_conv_pass says what a, b and out are); bias
  ** [O] or NULL, forward only. Fails only for want of scratch memory, with
  ** a message naming op. */
  em_status (*conv2d)(const char *op, em_conv_pass pass, const em_tensor *a,
                      const em_tensor *b, const em_tensor *bias, em_tensor *out,
                      const em_conv2d_geo *g);

  /* x [N, C, H, W] -> y [N, C, oH, oW], the maximum of each window (NaN
  ** wins, the first of equals wins); indices (int64, y's shape, may be
  ** NULL) get its 1-based row-major position in the H x W plane. */
  void (*max_pool2d)(const em_tensor *x, em_tensor *y, em_tensor *indices,
                     const em_pool2d_geo *g);
  /* grad_input [N, C, H, W] (zeroed) += grad_out [N, C, oH, oW] at indices
  ** (int64, grad_out's shape); an index outside 1..H*W adds nothing. */
  void (*max_pool2d_backward)(const em_tensor *grad_out, const em_tensor *indices,
                              em_tensor *grad_input);
  /* x [N, C, H, W] -> y [N, C, oH, oW], the mean of each window. */
  void (*avg_pool2d)(const em_tensor *x, em_tensor *y, const em_pool2d_geo *g);
  /* grad_input [N, C, H, W] (zeroed) += each grad_out element over its
  ** window, divided as the forward divides. */
  void (*avg_pool2d_backward)(const em_tensor *grad_out, em_tensor *grad_input,
                              const em_pool2d_geo *g);

  /* 1 when some element of ids (int64) is outside 1..num and is not the
  ** ignored id (has_ignore), with the first such (row-major) in *bad; else
  ** 0. The op raises the error before anything reads the ids. */
  int (*bad_id)(const em_tensor *ids, int64_t num, int has_ignore, int64_t ignore,
                int64_t *bad);

  /* Rows of x [M, D] normalised: y (x's shape) = (x - mean) * rstd * w + b
  ** (w, b [D] or NULL); mean and rstd get M values each. */
  void (*layer_norm)(const em_tensor *x, const em_tensor *w, const em_tensor *b,
                     em_tensor *y, em_tensor *mean, em_tensor *rstd, int64_t M,
                     int64_t D, double eps);
  /* The gradients of layer_norm for grad_out (x's shape) from the saved
  ** mean and rstd (M values); any of gx (x's shape), gw, gb ([D]) NULL. */
  void (*layer_norm_backward)(const em_tensor *grad_out, const em_tensor *x,
                              const em_tensor *mean, const em_tensor *rstd,
                              const em_tensor *w, em_tensor *gx, em_tensor *gw,
                              em_tensor *gb, int64_t M, int64_t D);
  /* y (x's shape) = x normalised per channel with the batch statistics
  ** (training) or running_mean/running_var (given then), times w plus b
  ** ([C] or NULL). Training moves running_mean/running_var (when given;
  ** [C], written in place) by momentum toward the batch mean and unbiased
  ** variance. save_mean/save_invstd ([C]) get the statistics used. Fails
  ** only for want of scratch memory, with a message naming op. */
  em_status (*batch_norm)(const char *op, const em_tensor *x, const em_tensor *w,
                          const em_tensor *b, em_tensor *running_mean,
                          em_tensor *running_var, em_tensor *y, em_tensor *save_mean,
                          em_tensor *save_invstd, const em_batch_norm_params *p);
  /* The gradients of batch_norm from save_mean/save_invstd ([C]); any of
  ** gx (x's shape), gw, gb ([C]) NULL. */
  void (*batch_norm_backward)(const em_tensor *grad_out, const em_tensor *x,
                              const em_tensor *w, const em_tensor *mean,
                              const em_tensor *invstd, em_tensor *gx, em_tensor *gw,
                              em_tensor *gb, const em_batch_norm_params *p);

  /* nll_loss / cross_entropy of x [N, C, S]; target: class ids (int64,
  ** N * S of them, checked to be in 1..C or ignore_index) or, with prob,
  ** probabilities of x's shape and dtype; w [C] or NULL. Forward
  ** (grad_out NULL): out gets the per-lane loss (N * S elements) for
  ** reduction none, else the one reduced value; total_weight (1 element,
  ** may be NULL) the mean's denominator. Backward: grad_out holds one value
  ** per lane (none) or one value, and out (x's shape, zeroed) gets the
  ** gradient. Fails only for want of scratch memory, with a message naming
  ** op. */
  em_status (*class_loss)(const char *op, const em_tensor *x, const em_tensor *target,
                          const em_tensor *w, const em_tensor *grad_out, em_tensor *out,
                          em_tensor *total_weight, const em_class_loss_params *p);
  /* 1 when some element of x is not in [0, 1] (NaN included), with the
  ** first such in *v: binary_cross_entropy's check of its input. */
  int (*outside_unit)(const em_tensor *x, double *v);
  /* A pointwise loss over n elements of x, t and (may be NULL) w, pw (pos
  ** weight), all of out's shape. Forward (grad_out NULL): out = the loss
  ** per element. Backward: out = d loss / d x times grad_out (out's shape
  ** for reduction none, else one value), divided by n for the mean. */
  void (*pointwise_loss)(em_pointwise_loss kind, em_reduction reduction,
                         const em_tensor *x, const em_tensor *t, const em_tensor *w,
                         const em_tensor *pw, const em_tensor *grad_out, em_tensor *out);
  /* scaled_dot_product_attention, tiled with the online softmax (the
  ** score matrix is never held whole): q, k, v, mask as em_sdpa_params
  ** says (dense, one float dtype) -> out, lse. Fails only for want of
  ** scratch memory, with a message naming op. This entry and the next
  ** may be NULL: the op then composes both from the device's other ops
  ** (ops/attention_math.c). */
  em_status (*sdpa)(const char *op, const em_tensor *q, const em_tensor *k,
                    const em_tensor *v, const em_tensor *mask, em_tensor *out, em_tensor *lse,
                    const em_sdpa_params *p);
  /* Its gradients for grad_out (out's shape) from the forward's out and
  ** lse (scores recomputed tile by tile, the same dropout regenerated):
  ** gq, gk, gv (q's, k's, v's shapes; zeroed). Fails only for want of
  ** scratch memory. */
  em_status (*sdpa_backward)(const char *op, const em_tensor *grad_out, const em_tensor *q,
                             const em_tensor *k, const em_tensor *v, const em_tensor *mask,
                             const em_tensor *out, const em_tensor *lse, em_tensor *gq,
                             em_tensor *gk, em_tensor *gv, const em_sdpa_params *p);

  /* A recurrent layer's time loop (em_rnn_geo): out [L, N, P] (zeroed),
  ** hn [N, P], cn [N, H] (LSTM; else NULL) and the workspace ws
  ** (em_rnn_ws_size elements, zeroed). One GEMM for the input projection
  ** of the whole sequence, then per step one GEMM of the state and the
  ** fused gates. Fails only for want of scratch memory, naming op. This
  ** entry and the next may be NULL: the op then runs the loop as ops,
  ** recorded by autograd step by step (ops/rnn_math.c). */
  em_status (*rnn_forward)(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                           em_tensor *out, em_tensor *hn, em_tensor *cn, em_tensor *ws);
  /* Backward through time from the forward's ws and the gradients of out,
  ** hn, cn (each may be NULL: zero) into the wanted gradients gr. Fails
  ** only for want of scratch memory, naming op. */
  em_status (*rnn_backward)(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                            const em_tensor *ws, const em_tensor *g_out, const em_tensor *g_hn,
                            const em_tensor *g_cn, const em_rnn_grads *gr);
} em_nn_kernels;

extern const em_nn_kernels em_cpu_nn_kernels, em_meta_nn_kernels;

#endif
