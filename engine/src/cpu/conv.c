/*
** cpu/conv.c -- conv2d on the CPU (core/kern_nn.h, em_nn_kernels.conv2d):
** im2col + GEMM for the forward and the input and weight gradients.
**
** What holds:
** - The forward unrolls a chunk of the batch into a column matrix
**   col [C/groups * kH * kW, n * oH * oW] (column n * L + l is output
**   position l of sample n) and runs one OpenBLAS GEMM per group and chunk:
**   out_g = W_g [O/g, K] @ col. Chunks keep col under 2^24 elements.
** - backward_input: col = W_g^T @ grad_out_g, scattered back (col2im) by
**   addition; backward_weight: grad_W_g = sum over chunks of
**   grad_out_g @ col^T.
** - The three passes share one driver (em_cpu_conv2d: buffers, batch
**   chunks, per-group GEMMs) and one column walk (cols_row: im2col reads the
**   image into a row of col, col2im adds the row back). im2col
**   parallelises over rows of col, col2im over input channels, so every
**   element is written by one thread: results do not depend on the thread
**   count beyond OpenBLAS's own summation order.
** - The GEMM is OpenBLAS's cblas, called here: it is this device's kernel.
*/
#include "cpu/nn_impl.h"

#include <cblas.h>
#include <limits.h>

enum { COL_LIMIT = 1 << 24 };

/* samples per chunk so that col stays under COL_LIMIT (at least 1) */
static int64_t chunk_of(const em_conv2d_geo *g) {
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
      T *img, T *col, const em_conv2d_geo *g, int64_t n0, int64_t nb, int64_t c0,       \
      int64_t k, int to_col) {                                                          \
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
  static void im2col_##S(const T *x, T *col, const em_conv2d_geo *g, int64_t n0,      \
                         int64_t nb, int64_t c0) {                                      \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (g->K * nb * g->L > 32768)") \
    for (int64_t k = 0; k < g->K; k++) cols_row_##S((T *)x, col, g, n0, nb, c0, k, 1);  \
  }                                                                                     \
  /* rows of one channel write one plane: one thread per channel */                    \
  static void col2im_##S(T *gx, const T *col, const em_conv2d_geo *g, int64_t n0,     \
                         int64_t nb, int64_t c0) {                                      \
    int64_t khw = g->kH * g->kW;                                                        \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (g->K * nb * g->L > 32768)") \
    for (int64_t c = 0; c < g->Cg; c++)                                                 \
      for (int64_t r = 0; r < khw; r++)                                                 \
        cols_row_##S(gx, (T *)col, g, n0, nb, c0, c * khw + r, 0);                      \
  }

EM_FOR_EACH_NN_DTYPE(NN_CONV_KERNELS)
#undef NN_CONV_KERNELS

/* C[M x N] = op(A) op(B) + beta C, row-major, in the tensor dtype (nn_impl.h) */
void em_cpu_nn_gemm(em_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *Cm, int64_t ldc) {
  enum CBLAS_TRANSPOSE a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
  if (dt == EM_FLOAT32)
    cblas_sgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0f, A, (int)lda, B, (int)ldb,
                (float)beta, Cm, (int)ldc);
  else
    cblas_dgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0, A, (int)lda, B, (int)ldb,
                beta, Cm, (int)ldc);
}

static void im2col(em_dtype dt, const void *x, void *col, const em_conv2d_geo *g,
                   int64_t n0, int64_t nb, int64_t c0) {
  if (dt == EM_FLOAT32) im2col_f32(x, col, g, n0, nb, c0);
  else im2col_f64(x, col, g, n0, nb, c0);
}

static void col2im(em_dtype dt, void *gx, const void *col, const em_conv2d_geo *g,
                   int64_t n0, int64_t nb, int64_t c0) {
  if (dt == EM_FLOAT32) col2im_f32(gx, col, g, n0, nb, c0);
  else col2im_f64(gx, col, g, n0, nb, c0);
}

/* [N, O, L] rows n0..n0+nb-1 <-> [O, nb*L]: to_buf gathers a chunk of
** grad_out into buf; else buf (plus bias[o]) is written into out. */
static void reorder(em_dtype dt, void *nol, void *buf, const void *bias,
                    const em_conv2d_geo *g, int64_t n0, int64_t nb, int to_buf) {
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

/* -- the one driver of the three passes ---------------------------------- */

/* Per chunk of the batch and per group: FWD col = im2col(x), out_g =
** W_g @ col; BWD_INPUT col = W_g^T @ go_g, col2im(col); BWD_WEIGHT col =
** im2col(x), gW_g += go_g @ col^T. */
em_status em_cpu_conv2d(const char *op, em_conv_pass pass, const em_tensor *a,
                        const em_tensor *b, const em_tensor *bias, em_tensor *out,
                        const em_conv2d_geo *g) {
  em_dtype dt = a->dtype;
  size_t es = em_dtype_size(dt);
  void *col = NULL, *buf = NULL;
  em_status st = EM_OK;
  int64_t nb = chunk_of(g);
  size_t ncol = (size_t)(g->K * nb * g->L) * es + 1, nbuf = (size_t)(g->O * nb * g->L) * es + 1;
  if (g->N > 0 && g->L > 0 && (g->K > 0 || pass == EM_CONV_FORWARD)) {
    /* from the block cache: a fresh 2 MB malloc per call was page faults
    ** and kernel zeroing, ~10% of a small CNN's training step */
    col = em_scratch_alloc(ncol);
    buf = em_scratch_alloc(nbuf);
    if (!col || !buf) {
      st = em_fail(EM_E_NOMEM, "%s: out of memory for the column buffer", op);
      goto done;
    }
    const char *A = em_tensor_data(a), *B = em_tensor_data(b);
    char *R = em_tensor_data(out);
    for (int64_t n0 = 0; n0 < g->N; n0 += nb) {
      int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb, NL = cnt * g->L;
      if (pass != EM_CONV_FORWARD) reorder(dt, (void *)A, buf, NULL, g, n0, cnt, 1);
      for (int64_t gr = 0; gr < g->groups; gr++) {
        char *bufg = (char *)buf + (size_t)(gr * g->Og * NL) * es;
        size_t wg = (size_t)(gr * g->Og * g->K) * es;  /* group gr's rows of W */
        if (pass == EM_CONV_FORWARD && g->K == 0) {
          memset(bufg, 0, (size_t)(g->Og * NL) * es);
        } else if (pass == EM_CONV_FORWARD) {
          im2col(dt, A, col, g, n0, cnt, gr * g->Cg);
          em_cpu_nn_gemm(dt, 0, 0, g->Og, NL, g->K, B + wg, g->K, col, NL, 0.0, bufg, NL);
        } else if (pass == EM_CONV_BACKWARD_INPUT) {
          em_cpu_nn_gemm(dt, 1, 0, g->K, NL, g->Og, B + wg, g->K, bufg, NL, 0.0, col, NL);
          col2im(dt, R, col, g, n0, cnt, gr * g->Cg);
        } else {
          im2col(dt, B, col, g, n0, cnt, gr * g->Cg);
          em_cpu_nn_gemm(dt, 0, 1, g->Og, g->K, NL, bufg, NL, col, NL, 1.0, R + wg, g->K);
        }
      }
      if (pass == EM_CONV_FORWARD)
        reorder(dt, R, buf, bias ? em_tensor_data(bias) : NULL, g, n0, cnt, 0);
    }
  }
done:
  em_scratch_free(col, ncol);
  em_scratch_free(buf, nbuf);
  return st;
}
