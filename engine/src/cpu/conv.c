/*
** conv.c -- 2-d (and 1-d) convolution by im2col + GEMM, with its three
** backward kernels, each an engine op that joins the autograd graph.
**
** Guarantees:
** - Autograd: em_conv2d / em_conv1d record one ConvolutionBackward0 node
**   (saving input and weight) when grad mode is on and an input requires
**   grad; the backward kernels record ConvolutionBackwardBackward0 nodes
**   the same way (they run in grad mode only when a backward is itself
**   recorded, create_graph), so convolution is differentiable to any
**   order. The formulas are in autograd/formulas.c.
** - float32/float64 only; input, weight and bias share one dtype. Inputs of
**   any layout are read through a dense copy; results are new contiguous
**   tensors.
** - The forward unrolls a chunk of the batch into a column matrix
**   col [C/groups * kH * kW, n * oH * oW] (column n * L + l is output
**   position l of sample n) and runs one OpenBLAS GEMM per group and chunk:
**   out_g = W_g [O/g, K] @ col. Chunks keep col under 2^24 elements.
** - backward_input: col = W_g^T @ grad_out_g, scattered back (col2im) by
**   addition; backward_weight: grad_W_g = sum over chunks of
**   grad_out_g @ col^T; backward_bias sums grad_out over N, oH, oW.
** - The three passes share one driver (conv_run: buffers, batch chunks,
**   per-group GEMMs) and one column walk (cols_row: im2col reads the
**   image into a row of col, col2im adds the row back). im2col
**   parallelises over rows of col, col2im over input channels, so every
**   element is written by one thread: results do not depend on the thread
**   count beyond OpenBLAS's own summation order.
*/
#include "nn_impl.h"
#include "autograd/autograd.h"

#include <cblas.h>
#include <limits.h>

enum { COL_LIMIT = 1 << 24 };

typedef struct convgeo {
  int64_t N, C, H, W;      /* input */
  int64_t O, Cg, kH, kW;   /* weight: O x Cg x kH x kW */
  int64_t oH, oW, groups, Og, K, L;
  int64_t s[2], p[2], d[2];
} convgeo;

static em_status conv_geometry(const char *op, const int64_t *in, const int64_t *w,
                               const int64_t stride[2], const int64_t padding[2],
                               const int64_t dilation[2], int64_t groups, convgeo *g) {
  for (int i = 0; i < 2; i++) {
    if (stride[i] < 1)
      return em_fail(EM_E_VALUE, "%s: stride should be positive, got %lld", op, (long long)stride[i]);
    if (padding[i] < 0)
      return em_fail(EM_E_VALUE, "%s: negative padding is not supported, got %lld", op,
                     (long long)padding[i]);
    if (dilation[i] < 1)
      return em_fail(EM_E_VALUE, "%s: dilation should be positive, got %lld", op,
                     (long long)dilation[i]);
    g->s[i] = stride[i];
    g->p[i] = padding[i];
    g->d[i] = dilation[i];
  }
  if (groups < 1) return em_fail(EM_E_VALUE, "%s: groups must be positive, got %lld", op, (long long)groups);
  g->N = in[0]; g->C = in[1]; g->H = in[2]; g->W = in[3];
  g->O = w[0]; g->Cg = w[1]; g->kH = w[2]; g->kW = w[3];
  g->groups = groups;
  if (g->O % groups != 0)
    return em_fail(EM_E_VALUE, "%s: out_channels (%lld) must be divisible by groups (%lld)", op,
                   (long long)g->O, (long long)groups);
  if (g->Cg * groups != g->C) {
    char ws[EM_SHAPE_BUF], is[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE,
                   "%s: Given groups=%lld, weight of size %s, expected input%s to have %lld "
                   "channels, but got %lld channels instead", op, (long long)groups,
                   em_fmt_shape(ws, sizeof ws, 4, w), em_fmt_shape(is, sizeof is, 4, in),
                   (long long)(g->Cg * groups), (long long)g->C);
  }
  int64_t eh = g->d[0] * (g->kH - 1) + 1, ew = g->d[1] * (g->kW - 1) + 1;
  int64_t ph = g->H + 2 * g->p[0], pw = g->W + 2 * g->p[1];
  if (g->kH < 1 || g->kW < 1 || ph < eh || pw < ew) {
    return em_fail(EM_E_VALUE,
                   "%s: kernel size (%lld x %lld) (dilated) can't be greater than the padded "
                   "input size (%lld x %lld)", op, (long long)eh, (long long)ew,
                   (long long)ph, (long long)pw);
  }
  g->oH = (ph - eh) / g->s[0] + 1;
  g->oW = (pw - ew) / g->s[1] + 1;
  g->Og = g->O / groups;
  g->K = g->Cg * g->kH * g->kW;
  g->L = g->oH * g->oW;
  if (g->K > INT_MAX || g->L > INT_MAX || g->Og > INT_MAX)
    return em_fail(EM_E_VALUE, "%s: sizes too large for one GEMM", op);
  return EM_OK;
}

/* samples per chunk so that col stays under COL_LIMIT (at least 1) */
static int64_t chunk_of(const convgeo *g) {
  int64_t per = g->K * g->L;
  int64_t nb = per > 0 ? COL_LIMIT / per : g->N;
  if (nb < 1) nb = 1;
  if (nb > g->N) nb = g->N;
  while (nb > 1 && nb * g->L > INT_MAX) nb--;
  return nb;
}

/* -- per-dtype column walk / gemm ------------------------------------------ */

/* ceil(a / b) for b > 0 and any a */
static inline int64_t cdiv(int64_t a, int64_t b) { return a > 0 ? (a + b - 1) / b : -(-a / b); }

/* Row k = (c, i, jj) of col [K, nb*L] against channel c0 + c of samples
** n0..n0+nb-1: element (k, j*L + oy*oW + ox) is x[n0 + j, c0 + c, iy, ix]
** with iy = oy*s - p + i*d (likewise ix), 0 outside the image. to_col:
** col = image (im2col); else image += col (col2im). The columns ox whose
** ix falls inside the image are [lo, hi), found once per row, so the inner
** loops carry no bounds test. Always inlined: each caller passes a constant
** to_col. */
#define NN_CONV_KERNELS(S, E, T)                                                       \
  static inline __attribute__((always_inline)) void cols_row_##S(                       \
      T *img, T *col, const convgeo *g, int64_t n0, int64_t nb, int64_t c0, int64_t k,  \
      int to_col) {                                                                     \
    int64_t NL = nb * g->L, c = k / (g->kH * g->kW), i = (k / g->kW) % g->kH;           \
    int64_t off = (k % g->kW) * g->d[1] - g->p[1], sx = g->s[1];                        \
    int64_t lo = cdiv(-off, sx), hi = cdiv(g->W - off, sx);                             \
    if (lo < 0) lo = 0;                                                                 \
    if (hi > g->oW) hi = g->oW;                                                         \
    if (hi < lo) hi = lo;                                                               \
    T *row = col + k * NL;                                                              \
    for (int64_t j = 0; j < nb; j++) {                                                  \
      T *plane = img + ((n0 + j) * g->C + c0 + c) * g->H * g->W;                        \
      for (int64_t oy = 0; oy < g->oH; oy++) {                                          \
        int64_t iy = oy * g->s[0] - g->p[0] + i * g->d[0];                              \
        T *r = row + j * g->L + oy * g->oW;                                             \
        if (iy < 0 || iy >= g->H) {                                                     \
          if (to_col) memset(r, 0, sizeof(T) * (size_t)g->oW);                          \
          continue;                                                                     \
        }                                                                               \
        T *line = plane + iy * g->W;                                                    \
        if (to_col) {                                                                   \
          for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0;                                \
          for (int64_t ox = lo; ox < hi; ox++) r[ox] = line[ox * sx + off];             \
          for (int64_t ox = hi; ox < g->oW; ox++) r[ox] = 0;                            \
        } else {                                                                        \
          for (int64_t ox = lo; ox < hi; ox++) line[ox * sx + off] += r[ox];            \
        }                                                                               \
      }                                                                                 \
    }                                                                                   \
  }                                                                                     \
  static void im2col_##S(const T *x, T *col, const convgeo *g, int64_t n0, int64_t nb,  \
                         int64_t c0) {                                                  \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (g->K * nb * g->L > 32768)") \
    for (int64_t k = 0; k < g->K; k++) cols_row_##S((T *)x, col, g, n0, nb, c0, k, 1);  \
  }                                                                                     \
  /* rows of one channel write one plane: one thread per channel */                    \
  static void col2im_##S(T *gx, const T *col, const convgeo *g, int64_t n0, int64_t nb, \
                         int64_t c0) {                                                  \
    int64_t khw = g->kH * g->kW;                                                        \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (g->K * nb * g->L > 32768)") \
    for (int64_t c = 0; c < g->Cg; c++)                                                 \
      for (int64_t r = 0; r < khw; r++)                                                 \
        cols_row_##S(gx, (T *)col, g, n0, nb, c0, c * khw + r, 0);                      \
  }

EM_FOR_EACH_NN_DTYPE(NN_CONV_KERNELS)
#undef NN_CONV_KERNELS

/* C[M x N] = alpha op(A) op(B) + beta C, row-major, in the tensor dtype */
static void gemm(em_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *Cm, int64_t ldc) {
  enum CBLAS_TRANSPOSE a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
  if (dt == EM_FLOAT32)
    cblas_sgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0f, A, (int)lda, B, (int)ldb,
                (float)beta, Cm, (int)ldc);
  else
    cblas_dgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0, A, (int)lda, B, (int)ldb,
                beta, Cm, (int)ldc);
}

static void im2col(em_dtype dt, const void *x, void *col, const convgeo *g, int64_t n0,
                   int64_t nb, int64_t c0) {
  if (dt == EM_FLOAT32) im2col_f32(x, col, g, n0, nb, c0);
  else im2col_f64(x, col, g, n0, nb, c0);
}

static void col2im(em_dtype dt, void *gx, const void *col, const convgeo *g, int64_t n0,
                   int64_t nb, int64_t c0) {
  if (dt == EM_FLOAT32) col2im_f32(gx, col, g, n0, nb, c0);
  else col2im_f64(gx, col, g, n0, nb, c0);
}

/* [N, O, L] rows n0..n0+nb-1 <-> [O, nb*L]: to_buf gathers a chunk of
** grad_out into buf; else buf (plus bias[o]) is written into out. */
static void reorder(em_dtype dt, void *nol, void *buf, const void *bias, const convgeo *g,
                    int64_t n0, int64_t nb, int to_buf) {
  size_t es = em_dtype_size(dt);
  for (int64_t o = 0; o < g->O; o++)
    for (int64_t j = 0; j < nb; j++) {
      char *a = (char *)nol + ((size_t)((n0 + j) * g->O + o) * g->L) * es;
      char *b = (char *)buf + ((size_t)(o * nb + j) * g->L) * es;
      if (to_buf) {
        memcpy(b, a, (size_t)g->L * es);
      } else if (dt == EM_FLOAT32) {
        float bv = bias ? ((const float *)bias)[o] : 0.0f;
        for (int64_t l = 0; l < g->L; l++) ((float *)a)[l] = ((const float *)b)[l] + bv;
      } else {
        double bv = bias ? ((const double *)bias)[o] : 0.0;
        for (int64_t l = 0; l < g->L; l++) ((double *)a)[l] = ((const double *)b)[l] + bv;
      }
    }
}

static em_status check4(const char *op, const char *what, const em_tensor *t) {
  if (t->ndim != 4)
    return em_fail(EM_E_VALUE, "%s: expected %s to be 4-d, got %d-d", op, what, t->ndim);
  return EM_OK;
}

static em_status check_go(const char *op, const em_tensor *go, const convgeo *g) {
  if (go->ndim != 4 || go->sizes[0] != g->N || go->sizes[1] != g->O || go->sizes[2] != g->oH ||
      go->sizes[3] != g->oW) {
    char a[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: expected grad_output of shape [%lld, %lld, %lld, %lld], got %s",
                   op, (long long)g->N, (long long)g->O, (long long)g->oH, (long long)g->oW,
                   em_fmt_shape(a, sizeof a, go->ndim, go->sizes));
  }
  return EM_OK;
}

/* -- the one driver of the three passes ---------------------------------- */

typedef enum conv_pass { CONV_FWD, CONV_BWD_INPUT, CONV_BWD_WEIGHT } conv_pass;

/* FWD: a = input, b = weight -> out [N, O, oH, oW] (+ bias).
** BWD_INPUT: a = grad_out, b = weight -> grad_input (input_sizes).
** BWD_WEIGHT: a = grad_out, b = input -> grad_weight (weight_sizes).
** Per chunk of the batch and per group: FWD col = im2col(x), out_g =
** W_g @ col; BWD_INPUT col = W_g^T @ go_g, col2im(col); BWD_WEIGHT col =
** im2col(x), gW_g += go_g @ col^T. Runs with grad mode paused. */
static em_status conv_run(conv_pass pass, const char *op, const em_tensor *a,
                          const em_tensor *b, const em_tensor *bias, const convgeo *g,
                          const int64_t *out_sizes, em_tensor **out) {
  em_dtype dt = a->dtype;
  size_t es = em_dtype_size(dt);
  em_tensor *ad = NULL, *bd = NULL, *biasd = NULL, *res = NULL;
  void *col = NULL, *buf = NULL;
  em_status st;
  if ((st = nn_dense(a, dt, &ad)) != EM_OK) goto done;
  if ((st = nn_dense(b, dt, &bd)) != EM_OK) goto done;
  if (bias && (st = nn_dense(bias, dt, &biasd)) != EM_OK) goto done;
  if ((st = nn_new(4, out_sizes, dt, pass != CONV_FWD, &res)) != EM_OK) goto done;
  int64_t nb = chunk_of(g);
  if (g->N > 0 && g->L > 0 && (g->K > 0 || pass == CONV_FWD)) {
    col = malloc((size_t)(g->K * nb * g->L) * es + 1);
    buf = malloc((size_t)(g->O * nb * g->L) * es + 1);
    if (!col || !buf) {
      st = em_fail(EM_E_NOMEM, "%s: out of memory for the column buffer", op);
      goto done;
    }
    const char *A = em_tensor_data(ad), *B = em_tensor_data(bd);
    char *R = em_tensor_data(res);
    for (int64_t n0 = 0; n0 < g->N; n0 += nb) {
      int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb, NL = cnt * g->L;
      if (pass != CONV_FWD) reorder(dt, (void *)A, buf, NULL, g, n0, cnt, 1);
      for (int64_t gr = 0; gr < g->groups; gr++) {
        char *bufg = (char *)buf + (size_t)(gr * g->Og * NL) * es;
        size_t wg = (size_t)(gr * g->Og * g->K) * es;  /* group gr's rows of W */
        if (pass == CONV_FWD && g->K == 0) {
          memset(bufg, 0, (size_t)(g->Og * NL) * es);
        } else if (pass == CONV_FWD) {
          im2col(dt, A, col, g, n0, cnt, gr * g->Cg);
          gemm(dt, 0, 0, g->Og, NL, g->K, B + wg, g->K, col, NL, 0.0, bufg, NL);
        } else if (pass == CONV_BWD_INPUT) {
          gemm(dt, 1, 0, g->K, NL, g->Og, B + wg, g->K, bufg, NL, 0.0, col, NL);
          col2im(dt, R, col, g, n0, cnt, gr * g->Cg);
        } else {
          im2col(dt, B, col, g, n0, cnt, gr * g->Cg);
          gemm(dt, 0, 1, g->Og, g->K, NL, bufg, NL, col, NL, 1.0, R + wg, g->K);
        }
      }
      if (pass == CONV_FWD)
        reorder(dt, R, buf, biasd ? em_tensor_data(biasd) : NULL, g, n0, cnt, 0);
    }
  }
  *out = res;
  res = NULL;
done:
  free(col);
  free(buf);
  em_tensor *rel[4] = {ad, bd, biasd, res};
  nn_release(4, rel);
  return st;
}

/* -- autograd ---------------------------------------------------------------- */

/* The node's parameters: list = stride, padding, dilation (pairs), groups;
** i[0]: the op is conv1d (its tensors lack the unit width dim). */
static void conv_params(em_ag_params *p, const char *name, int op, const int64_t s[2],
                        const int64_t pd[2], const int64_t d[2], int64_t groups, int is1d) {
  memset(p, 0, sizeof *p);
  p->name = name;
  p->op = op;
  p->nlist = 7;
  int64_t l[7] = {s[0], s[1], pd[0], pd[1], d[0], d[1], groups};
  memcpy(p->list, l, sizeof l);
  p->i[0] = is1d;
}

/* Records node (op) over in[0..3) for *out when grad mode was on (on) and
** an input requires grad; on failure *out is released. */
static em_status conv_record(int on, em_status st, int nin, const em_tensor *const *in,
                             em_tensor **out, const em_ag_params *p) {
  if (st != EM_OK || !on || !em_ag_any(nin, in)) return st;
  st = em_ag_record(EM_AG_NN, nin, in, 1, out, p);
  if (st != EM_OK) {
    em_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* -- forward ----------------------------------------------------------------- */

static em_status conv2d_checked(const char *op, const em_tensor *input, const em_tensor *weight,
                                const em_tensor *bias, const int64_t stride[2],
                                const int64_t padding[2], const int64_t dilation[2],
                                int64_t groups, em_tensor **out) {
  em_status st;
  if ((st = nn_check_float(op, "input", input)) != EM_OK) return st;
  if ((st = nn_check_same(op, "weight", input, weight)) != EM_OK) return st;
  if (bias && (st = nn_check_same(op, "bias", input, bias)) != EM_OK) return st;
  if ((st = check4(op, "input", input)) != EM_OK) return st;
  if ((st = check4(op, "weight", weight)) != EM_OK) return st;
  convgeo g;
  if ((st = conv_geometry(op, input->sizes, weight->sizes, stride, padding, dilation, groups,
                          &g)) != EM_OK)
    return st;
  if (bias && (bias->ndim != 1 || bias->sizes[0] != g.O))
    return em_fail(EM_E_VALUE, "%s: expected bias of shape [%lld], got %d-d", op,
                   (long long)g.O, bias->ndim);
  int64_t osz[4] = {g.N, g.O, g.oH, g.oW};
  return conv_run(CONV_FWD, op, input, weight, bias, &g, osz, out);
}

em_status em_conv2d(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                    const int64_t stride[2], const int64_t padding[2],
                    const int64_t dilation[2], int64_t groups, em_tensor **out) {
  int on = em_ag_pause();
  em_status st = conv2d_checked("conv2d", input, weight, bias, stride, padding, dilation,
                                groups, out);
  em_ag_resume(on);
  em_ag_params p;
  conv_params(&p, "ConvolutionBackward0", EM_AG_NN_CONV, stride, padding, dilation, groups, 0);
  p.save_in = 3;
  const em_tensor *in[3] = {input, weight, bias};
  return conv_record(on, st, 3, in, out, &p);
}

em_status em_conv1d(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                    int64_t stride, int64_t padding, int64_t dilation, int64_t groups,
                    em_tensor **out) {
  const char *op = "conv1d";
  if (input->ndim != 3)
    return em_fail(EM_E_VALUE, "%s: expected input to be 3-d, got %d-d", op, input->ndim);
  if (weight->ndim != 3)
    return em_fail(EM_E_VALUE, "%s: expected weight to be 3-d, got %d-d", op, weight->ndim);
  int on = em_ag_pause();
  em_tensor *x4 = NULL, *w4 = NULL, *o4 = NULL;
  em_status st = em_unsqueeze(input, 4, &x4); /* [N, C, L, 1] */
  if (st == EM_OK) st = em_unsqueeze(weight, 4, &w4);
  int64_t s[2] = {stride, 1}, p[2] = {padding, 0}, d[2] = {dilation, 1};
  if (st == EM_OK) st = conv2d_checked(op, x4, w4, bias, s, p, d, groups, &o4);
  if (st == EM_OK) {
    int64_t sz[3] = {o4->sizes[0], o4->sizes[1], o4->sizes[2]};
    st = em_view(o4, 3, sz, out);
  }
  em_ag_resume(on);
  em_tensor *rel[3] = {x4, w4, o4};
  nn_release(3, rel);
  em_ag_params pr;
  conv_params(&pr, "ConvolutionBackward0", EM_AG_NN_CONV, s, p, d, groups, 1);
  pr.save_in = 3;
  const em_tensor *in[3] = {input, weight, bias};
  return conv_record(on, st, 3, in, out, &pr);
}

/* -- backward ---------------------------------------------------------------- */

/* The input (BWD_INPUT: t is the weight, sizes the input's) or weight
** (BWD_WEIGHT: t is the input, sizes the weight's) gradient, recorded as a
** ConvolutionBackwardBackward0 node over (grad_out, t). */
static em_status conv_backward(conv_pass pass, const em_tensor *grad_out, const em_tensor *t,
                               const int64_t sizes[4], const int64_t stride[2],
                               const int64_t padding[2], const int64_t dilation[2],
                               int64_t groups, em_tensor **res) {
  int in_pass = pass == CONV_BWD_INPUT;
  const char *op = in_pass ? "conv2d_backward_input" : "conv2d_backward_weight";
  const char *what = in_pass ? "weight" : "input";
  em_status st;
  if ((st = nn_check_float(op, "grad_output", grad_out)) != EM_OK) return st;
  if ((st = nn_check_same(op, what, grad_out, t)) != EM_OK) return st;
  if ((st = check4(op, what, t)) != EM_OK) return st;
  convgeo g;
  if ((st = conv_geometry(op, in_pass ? sizes : t->sizes, in_pass ? t->sizes : sizes, stride,
                          padding, dilation, groups, &g)) != EM_OK)
    return st;
  if ((st = check_go(op, grad_out, &g)) != EM_OK) return st;
  int on = em_ag_pause();
  st = conv_run(pass, op, grad_out, t, NULL, &g, sizes, res);
  em_ag_resume(on);
  em_ag_params p;
  conv_params(&p, "ConvolutionBackwardBackward0",
              in_pass ? EM_AG_NN_CONV_BWD_INPUT : EM_AG_NN_CONV_BWD_WEIGHT, stride, padding,
              dilation, groups, 0);
  p.save_in = 3;
  const em_tensor *in[2] = {grad_out, t};
  return conv_record(on, st, 2, in, res, &p);
}

em_status em_conv2d_backward_input(const em_tensor *grad_out, const em_tensor *weight,
                                   const int64_t input_sizes[4], const int64_t stride[2],
                                   const int64_t padding[2], const int64_t dilation[2],
                                   int64_t groups, em_tensor **grad_input) {
  return conv_backward(CONV_BWD_INPUT, grad_out, weight, input_sizes, stride, padding,
                       dilation, groups, grad_input);
}

em_status em_conv2d_backward_weight(const em_tensor *grad_out, const em_tensor *input,
                                    const int64_t weight_sizes[4], const int64_t stride[2],
                                    const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups, em_tensor **grad_weight) {
  return conv_backward(CONV_BWD_WEIGHT, grad_out, input, weight_sizes, stride, padding,
                       dilation, groups, grad_weight);
}

/* A sum (em_reduce), recorded like any reduction. */
em_status em_conv2d_backward_bias(const em_tensor *grad_out, em_tensor **grad_bias) {
  const char *op = "conv2d_backward_bias";
  em_status st;
  if ((st = nn_check_float(op, "grad_output", grad_out)) != EM_OK) return st;
  if ((st = check4(op, "grad_output", grad_out)) != EM_OK) return st;
  int64_t dims[3] = {1, 3, 4};
  return em_reduce(EM_REDUCE_SUM, grad_out, 3, dims, 0, -1, grad_bias);
}
