/*
** conv.c -- 2-d (and 1-d) convolution by im2col + GEMM, with its three
** backward kernels.
**
** Guarantees:
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
** - im2col parallelises over rows of col, col2im over input channels, so
**   every element is written by one thread: results do not depend on the
**   thread count beyond OpenBLAS's own summation order.
*/
#include "nn_impl.h"

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

/* -- per-dtype im2col / col2im / gemm -------------------------------------- */

#define NN_CONV_KERNELS(S, E, T)                                                       \
  /* col[k, j*L + l] = x[n0 + j, c0 + c, iy, ix] (0 outside the image) */             \
  static void im2col_##S(const T *x, T *col, const convgeo *g, int64_t n0, int64_t nb,  \
                         int64_t c0) {                                                  \
    int64_t NL = nb * g->L;                                                             \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (g->K * NL > 32768)")                 \
    for (int64_t k = 0; k < g->K; k++) {                                                \
      int64_t c = k / (g->kH * g->kW), i = (k / g->kW) % g->kH, jj = k % g->kW;        \
      T *row = col + k * NL;                                                            \
      for (int64_t j = 0; j < nb; j++) {                                                \
        const T *plane = x + ((n0 + j) * g->C + c0 + c) * g->H * g->W;                 \
        for (int64_t oy = 0; oy < g->oH; oy++) {                                        \
          int64_t iy = oy * g->s[0] - g->p[0] + i * g->d[0];                            \
          T *dst = row + j * g->L + oy * g->oW;                                         \
          if (iy < 0 || iy >= g->H) {                                                   \
            for (int64_t ox = 0; ox < g->oW; ox++) dst[ox] = 0;                         \
            continue;                                                                   \
          }                                                                             \
          const T *src = plane + iy * g->W;                                             \
          for (int64_t ox = 0; ox < g->oW; ox++) {                                      \
            int64_t ix = ox * g->s[1] - g->p[1] + jj * g->d[1];                         \
            dst[ox] = (ix >= 0 && ix < g->W) ? src[ix] : (T)0;                          \
          }                                                                             \
        }                                                                               \
      }                                                                                 \
    }                                                                                   \
  }                                                                                     \
  /* gx[n0 + j, c0 + c, iy, ix] += col[k, j*L + l]; one thread per channel */          \
  static void col2im_##S(T *gx, const T *col, const convgeo *g, int64_t n0, int64_t nb, \
                         int64_t c0) {                                                  \
    int64_t NL = nb * g->L, khw = g->kH * g->kW;                                        \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (g->K * NL > 32768)")                 \
    for (int64_t c = 0; c < g->Cg; c++) {                                               \
      for (int64_t r = 0; r < khw; r++) {                                               \
        int64_t i = r / g->kW, jj = r % g->kW;                                          \
        const T *row = col + (c * khw + r) * NL;                                        \
        for (int64_t j = 0; j < nb; j++) {                                              \
          T *plane = gx + ((n0 + j) * g->C + c0 + c) * g->H * g->W;                    \
          for (int64_t oy = 0; oy < g->oH; oy++) {                                      \
            int64_t iy = oy * g->s[0] - g->p[0] + i * g->d[0];                          \
            if (iy < 0 || iy >= g->H) continue;                                         \
            const T *src = row + j * g->L + oy * g->oW;                                 \
            T *dst = plane + iy * g->W;                                                 \
            for (int64_t ox = 0; ox < g->oW; ox++) {                                    \
              int64_t ix = ox * g->s[1] - g->p[1] + jj * g->d[1];                       \
              if (ix >= 0 && ix < g->W) dst[ix] += src[ox];                             \
            }                                                                           \
          }                                                                             \
        }                                                                               \
      }                                                                                 \
    }                                                                                   \
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

/* grad_out [N, O, L] rows n0..n0+nb-1 rearranged to [O, nb*L] */
static void gather_go(em_dtype dt, const void *go, void *buf, const convgeo *g, int64_t n0,
                      int64_t nb) {
  size_t es = em_dtype_size(dt);
  for (int64_t o = 0; o < g->O; o++)
    for (int64_t j = 0; j < nb; j++)
      memcpy((char *)buf + ((size_t)(o * nb + j) * g->L) * es,
             (const char *)go + ((size_t)((n0 + j) * g->O + o) * g->L) * es, (size_t)g->L * es);
}

static em_status check4(const char *op, const char *what, const em_tensor *t) {
  if (t->ndim != 4)
    return em_fail(EM_E_VALUE, "%s: expected %s to be 4-d, got %d-d", op, what, t->ndim);
  return EM_OK;
}

/* -- forward ----------------------------------------------------------------- */

em_status em_conv2d(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                    const int64_t stride[2], const int64_t padding[2],
                    const int64_t dilation[2], int64_t groups, em_tensor **out) {
  const char *op = "conv2d";
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
  em_dtype dt = input->dtype;
  size_t es = em_dtype_size(dt);
  em_tensor *x = NULL, *w = NULL, *b = NULL, *res = NULL;
  void *col = NULL, *tmp = NULL;
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if ((st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if (bias && (st = nn_dense(bias, dt, &b)) != EM_OK) goto done;
  int64_t osz[4] = {g.N, g.O, g.oH, g.oW};
  if ((st = nn_new(4, osz, dt, 0, &res)) != EM_OK) goto done;
  int64_t nb = chunk_of(&g);
  if (g.N > 0 && g.L > 0) {
    col = malloc((size_t)(g.K * nb * g.L) * es + 1);
    tmp = malloc((size_t)(g.O * nb * g.L) * es + 1);
    if (!col || !tmp) {
      st = em_fail(EM_E_NOMEM, "%s: out of memory for the column buffer", op);
      goto done;
    }
  }
  const char *xd = em_tensor_data(x), *wd = em_tensor_data(w);
  char *od = em_tensor_data(res);
  for (int64_t n0 = 0; n0 < g.N && g.L > 0; n0 += nb) {
    int64_t cnt = g.N - n0 < nb ? g.N - n0 : nb, NL = cnt * g.L;
    for (int64_t gr = 0; gr < g.groups; gr++) {
      if (g.K == 0) {
        memset((char *)tmp + (size_t)(gr * g.Og * NL) * es, 0, (size_t)(g.Og * NL) * es);
        continue;
      }
      im2col(dt, xd, col, &g, n0, cnt, gr * g.Cg);
      gemm(dt, 0, 0, g.Og, NL, g.K, wd + (size_t)(gr * g.Og * g.K) * es, g.K, col, NL, 0.0,
           (char *)tmp + (size_t)(gr * g.Og * NL) * es, NL);
    }
    /* tmp [O, cnt*L] -> out [n0+j, o, l] (+ bias) */
    for (int64_t j = 0; j < cnt; j++)
      for (int64_t o = 0; o < g.O; o++) {
        size_t src = (size_t)(o * NL + j * g.L), dst = (size_t)(((n0 + j) * g.O + o) * g.L);
        if (dt == EM_FLOAT32) {
          float bv = b ? ((const float *)em_tensor_data(b))[o] : 0.0f;
          const float *s = (const float *)tmp + src;
          float *d = (float *)od + dst;
          for (int64_t l = 0; l < g.L; l++) d[l] = s[l] + bv;
        } else {
          double bv = b ? ((const double *)em_tensor_data(b))[o] : 0.0;
          const double *s = (const double *)tmp + src;
          double *d = (double *)od + dst;
          for (int64_t l = 0; l < g.L; l++) d[l] = s[l] + bv;
        }
      }
  }
  *out = res;
  res = NULL;
done:
  free(col);
  free(tmp);
  em_tensor *rel[4] = {x, w, b, res};
  nn_release(4, rel);
  return st;
}

em_status em_conv1d(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                    int64_t stride, int64_t padding, int64_t dilation, int64_t groups,
                    em_tensor **out) {
  const char *op = "conv1d";
  if (input->ndim != 3)
    return em_fail(EM_E_VALUE, "%s: expected input to be 3-d, got %d-d", op, input->ndim);
  if (weight->ndim != 3)
    return em_fail(EM_E_VALUE, "%s: expected weight to be 3-d, got %d-d", op, weight->ndim);
  em_tensor *x4 = NULL, *w4 = NULL, *o4 = NULL;
  em_status st = em_unsqueeze(input, 4, &x4); /* [N, C, L, 1] */
  if (st == EM_OK) st = em_unsqueeze(weight, 4, &w4);
  int64_t s[2] = {stride, 1}, p[2] = {padding, 0}, d[2] = {dilation, 1};
  if (st == EM_OK) st = em_conv2d(x4, w4, bias, s, p, d, groups, &o4);
  if (st == EM_OK) {
    int64_t sz[3] = {o4->sizes[0], o4->sizes[1], o4->sizes[2]};
    st = em_view(o4, 3, sz, out);
  }
  if (st != EM_OK && strncmp(em_last_error(), "conv2d", 6) == 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", em_last_error() + 6);
    st = em_fail(st, "conv1d%s", msg);
  }
  em_tensor *rel[3] = {x4, w4, o4};
  nn_release(3, rel);
  return st;
}

/* -- backward ---------------------------------------------------------------- */

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

em_status em_conv2d_backward_input(const em_tensor *grad_out, const em_tensor *weight,
                                   const int64_t input_sizes[4], const int64_t stride[2],
                                   const int64_t padding[2], const int64_t dilation[2],
                                   int64_t groups, em_tensor **grad_input) {
  const char *op = "conv2d_backward_input";
  em_status st;
  if ((st = nn_check_float(op, "grad_output", grad_out)) != EM_OK) return st;
  if ((st = nn_check_same(op, "weight", grad_out, weight)) != EM_OK) return st;
  if ((st = check4(op, "weight", weight)) != EM_OK) return st;
  convgeo g;
  if ((st = conv_geometry(op, input_sizes, weight->sizes, stride, padding, dilation, groups,
                          &g)) != EM_OK)
    return st;
  if ((st = check_go(op, grad_out, &g)) != EM_OK) return st;
  em_dtype dt = grad_out->dtype;
  size_t es = em_dtype_size(dt);
  em_tensor *go = NULL, *w = NULL, *gx = NULL;
  void *col = NULL, *buf = NULL;
  if ((st = nn_dense(grad_out, dt, &go)) != EM_OK) goto done;
  if ((st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if ((st = nn_new(4, input_sizes, dt, 1, &gx)) != EM_OK) goto done;
  int64_t nb = chunk_of(&g);
  if (g.N > 0 && g.L > 0 && g.K > 0) {
    col = malloc((size_t)(g.K * nb * g.L) * es + 1);
    buf = malloc((size_t)(g.O * nb * g.L) * es + 1);
    if (!col || !buf) {
      st = em_fail(EM_E_NOMEM, "%s: out of memory for the column buffer", op);
      goto done;
    }
    const char *wd = em_tensor_data(w);
    for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
      int64_t cnt = g.N - n0 < nb ? g.N - n0 : nb, NL = cnt * g.L;
      gather_go(dt, em_tensor_data(go), buf, &g, n0, cnt);
      for (int64_t gr = 0; gr < g.groups; gr++) {
        gemm(dt, 1, 0, g.K, NL, g.Og, wd + (size_t)(gr * g.Og * g.K) * es, g.K,
             (char *)buf + (size_t)(gr * g.Og * NL) * es, NL, 0.0, col, NL);
        col2im(dt, em_tensor_data(gx), col, &g, n0, cnt, gr * g.Cg);
      }
    }
  }
  *grad_input = gx;
  gx = NULL;
done:
  free(col);
  free(buf);
  em_tensor *rel[3] = {go, w, gx};
  nn_release(3, rel);
  return st;
}

em_status em_conv2d_backward_weight(const em_tensor *grad_out, const em_tensor *input,
                                    const int64_t weight_sizes[4], const int64_t stride[2],
                                    const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups, em_tensor **grad_weight) {
  const char *op = "conv2d_backward_weight";
  em_status st;
  if ((st = nn_check_float(op, "grad_output", grad_out)) != EM_OK) return st;
  if ((st = nn_check_same(op, "input", grad_out, input)) != EM_OK) return st;
  if ((st = check4(op, "input", input)) != EM_OK) return st;
  convgeo g;
  if ((st = conv_geometry(op, input->sizes, weight_sizes, stride, padding, dilation, groups,
                          &g)) != EM_OK)
    return st;
  if ((st = check_go(op, grad_out, &g)) != EM_OK) return st;
  em_dtype dt = grad_out->dtype;
  size_t es = em_dtype_size(dt);
  em_tensor *go = NULL, *x = NULL, *gw = NULL;
  void *col = NULL, *buf = NULL;
  if ((st = nn_dense(grad_out, dt, &go)) != EM_OK) goto done;
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if ((st = nn_new(4, weight_sizes, dt, 1, &gw)) != EM_OK) goto done;
  int64_t nb = chunk_of(&g);
  if (g.N > 0 && g.L > 0 && g.K > 0) {
    col = malloc((size_t)(g.K * nb * g.L) * es + 1);
    buf = malloc((size_t)(g.O * nb * g.L) * es + 1);
    if (!col || !buf) {
      st = em_fail(EM_E_NOMEM, "%s: out of memory for the column buffer", op);
      goto done;
    }
    char *gwd = em_tensor_data(gw);
    for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
      int64_t cnt = g.N - n0 < nb ? g.N - n0 : nb, NL = cnt * g.L;
      gather_go(dt, em_tensor_data(go), buf, &g, n0, cnt);
      for (int64_t gr = 0; gr < g.groups; gr++) {
        im2col(dt, em_tensor_data(x), col, &g, n0, cnt, gr * g.Cg);
        gemm(dt, 0, 1, g.Og, g.K, NL, (char *)buf + (size_t)(gr * g.Og * NL) * es, NL, col, NL,
             1.0, gwd + (size_t)(gr * g.Og * g.K) * es, g.K);
      }
    }
  }
  *grad_weight = gw;
  gw = NULL;
done:
  free(col);
  free(buf);
  em_tensor *rel[3] = {go, x, gw};
  nn_release(3, rel);
  return st;
}

em_status em_conv2d_backward_bias(const em_tensor *grad_out, em_tensor **grad_bias) {
  const char *op = "conv2d_backward_bias";
  em_status st;
  if ((st = nn_check_float(op, "grad_output", grad_out)) != EM_OK) return st;
  if ((st = check4(op, "grad_output", grad_out)) != EM_OK) return st;
  int64_t dims[3] = {1, 3, 4};
  return em_reduce(EM_REDUCE_SUM, grad_out, 3, dims, 0, -1, grad_bias);
}
