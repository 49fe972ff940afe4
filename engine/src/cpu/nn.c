/*
** nn.c -- the nn kernels other than convolution: pooling, embedding, layer
** and batch norm, dropout, and the losses, each forward with its backward.
**
** Guarantees:
** - float32/float64 (the kernels are generated per dtype from
**   EM_FOR_EACH_NN_DTYPE); statistics and sums accumulate in double.
** - Inputs of any layout are read through dense copies; results are new
**   contiguous tensors. Structured kernels work on (plane, window) or
**   (row, lane) units of the dense layout; each output element is written by
**   one thread, and every sum that crosses units is taken serially in a
**   fixed order, so results do not depend on the thread count.
** - Class and embedding ids are 1-based and checked before anything is
**   written; a bad id names the op, the id and the valid range.
** - Reductions: NONE keeps the per-element loss, SUM adds, MEAN divides by
**   the element count (by the total weight of the counted targets for
**   nll_loss/cross_entropy with class ids, as PyTorch).
** - Autograd: the public entries (the last section) run the kernels with
**   grad mode paused and record one node (kind NN, PyTorch's name, the
**   tensors docs/nn.md lists saved) in grad mode when an input requires
**   grad; the backward kernels of pooling, embedding and nll_loss record
**   too (second derivatives); the fused ones (norms, cross_entropy,
**   pointwise losses) refuse to run where a graph would be needed. The
**   formulas are in autograd/formulas.c.
*/
#include "nn_impl.h"
#include "core/iter.h"
#include "autograd/autograd.h"

#include <float.h>
#include <stdio.h>

/* The backward kernels below that are fused and not themselves recorded:
** called in grad mode on tensors that require grad (a backward being
** recorded), they refuse rather than give a result without history. The
** engine's own formulas use them only outside grad mode. */
static em_status nn_not_twice(const char *op, const em_tensor *a, const em_tensor *b,
                              const em_tensor *c) {
  if (!em_grad_enabled()) return EM_OK;
  if (!((a && a->requires_grad) || (b && b->requires_grad) || (c && c->requires_grad)))
    return EM_OK;
  return em_fail(EM_E_RUNTIME, "%s: this fused backward kernel is not differentiable; "
                 "differentiate the forward op's graph instead (its backward is recorded "
                 "with create_graph)", op);
}

static int64_t prod(int n, const int64_t *s) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

static em_status check_reduction(const char *op, em_reduction r) {
  if (r != EM_REDUCTION_NONE && r != EM_REDUCTION_MEAN && r != EM_REDUCTION_SUM)
    return em_fail(EM_E_VALUE, "%s: invalid reduction %d", op, (int)r);
  return EM_OK;
}

/* -- pooling ----------------------------------------------------------------- */

/* PyTorch's pooling_output_shape */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, int ceil_mode) {
  int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= in + pad) o--;
  return o;
}

typedef struct poolgeo {
  int64_t planes, H, W, oH, oW;
  int64_t k[2], s[2], p[2], d[2];
} poolgeo;

static em_status pool_geometry(const char *op, int ndim, const int64_t *in,
                               const int64_t kernel[2], const int64_t stride[2],
                               const int64_t padding[2], const int64_t dilation[2],
                               int ceil_mode, poolgeo *g) {
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
    if (g->p[i] < 0 || g->p[i] > g->k[i] / 2)
      return em_fail(EM_E_VALUE, "%s: pad should be at most half of kernel size, but got pad=%lld "
                     "and kernel_size=%lld", op, (long long)g->p[i], (long long)g->k[i]);
  }
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

#define NN_POOL_KERNELS(S, E, T)                                                          \
  /* The geometry is copied into locals: y and ix may alias *g as far as  \
  ** the compiler knows (ix is int64_t *), and reloading it per element    \
  ** made this loop a tenth of a CNN training step. Comparing in T is the   \
  ** comparison in double (the conversion is exact and monotonic). */      \
  static void maxpool_##S(const T *x, T *y, int64_t *ix, const poolgeo *g) {             \
    const int64_t planes = g->planes, H = g->H, W = g->W, oH = g->oH, oW = g->oW;         \
    const int64_t kh = g->k[0], kw = g->k[1], sh = g->s[0], sw = g->s[1];                 \
    const int64_t ph = g->p[0], pw = g->p[1], dh = g->d[0], dw = g->d[1];                 \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (planes * oH * oW > 32768)")    \
    for (int64_t pl = 0; pl < planes; pl++) {                                              \
      const T *xp = x + pl * H * W;                                                        \
      for (int64_t oy = 0; oy < oH; oy++)                                                  \
        for (int64_t ox = 0; ox < oW; ox++) {                                              \
          T best = (T)-INFINITY;                                                           \
          int64_t at = -1;                                                                 \
          for (int64_t i = 0; i < kh; i++) {                                               \
            const int64_t iy = oy * sh - ph + i * dh;                                      \
            if (iy < 0 || iy >= H) continue;                                               \
            const T *row = xp + iy * W;                                                    \
            for (int64_t j = 0; j < kw; j++) {                                             \
              const int64_t xx = ox * sw - pw + j * dw;                                    \
              if (xx < 0 || xx >= W) continue;                                             \
              const T v = row[xx];                                                         \
              /* branch-free: on random data a branch here mispredicts half \
              ** the time; NaN wins over numbers, the first of equals wins */ \
              const int take = (at < 0) | (v > best) | ((v != v) & (best == best));        \
              best = take ? v : best;                                                      \
              at = take ? iy * W + xx : at;                                                \
            }                                                                              \
          }                                                                                \
          const int64_t o = (pl * oH + oy) * oW + ox;                                      \
          y[o] = best;                                                                     \
          if (ix) ix[o] = at + 1;                                                          \
        }                                                                                  \
    }                                                                                      \
  }                                                                                        \
  static void maxpool_bwd_##S(const T *go, const int64_t *ix, T *gx, int64_t planes,       \
                              int64_t HW, int64_t oHW) {                                   \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (planes * oHW > 32768)")                 \
    for (int64_t pl = 0; pl < planes; pl++)                                                \
      for (int64_t o = 0; o < oHW; o++) {                                                  \
        int64_t at = ix[pl * oHW + o];                                                     \
        if (at >= 1 && at <= HW) gx[pl * HW + at - 1] += go[pl * oHW + o];                 \
      }                                                                                    \
  }                                                                                        \
  /* avg pool, forward (bwd = 0) or backward (bwd = 1: x is grad_out, y grad_in) */      \
  static void avgpool_##S(const T *a, T *b, const poolgeo *g, int cip, int64_t divov,     \
                          int bwd) {                                                       \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (g->planes * g->oH * g->oW > 32768)")    \
    for (int64_t pl = 0; pl < g->planes; pl++)                                             \
      for (int64_t oy = 0; oy < g->oH; oy++)                                               \
        for (int64_t ox = 0; ox < g->oW; ox++) {                                           \
          int64_t h0 = oy * g->s[0] - g->p[0], w0 = ox * g->s[1] - g->p[1];                \
          int64_t h1 = h0 + g->k[0], w1 = w0 + g->k[1];                                    \
          if (h1 > g->H + g->p[0]) h1 = g->H + g->p[0];                                    \
          if (w1 > g->W + g->p[1]) w1 = g->W + g->p[1];                                    \
          int64_t pool = (h1 - h0) * (w1 - w0);                                            \
          if (h0 < 0) h0 = 0;                                                              \
          if (w0 < 0) w0 = 0;                                                              \
          if (h1 > g->H) h1 = g->H;                                                        \
          if (w1 > g->W) w1 = g->W;                                                        \
          int64_t o = (pl * g->oH + oy) * g->oW + ox;                                      \
          if (h0 >= h1 || w0 >= w1) {                                                      \
            if (!bwd) b[o] = 0;                                                            \
            continue;                                                                      \
          }                                                                                \
          double div = divov > 0 ? (double)divov                                           \
                                 : (double)(cip ? pool : (h1 - h0) * (w1 - w0));           \
          if (!bwd) {                                                                      \
            double sum = 0;                                                                \
            for (int64_t iy = h0; iy < h1; iy++)                                           \
              for (int64_t xx = w0; xx < w1; xx++)                                         \
                sum += (double)a[(pl * g->H + iy) * g->W + xx];                            \
            b[o] = (T)(sum / div);                                                         \
          } else {                                                                         \
            T gv = (T)((double)a[o] / div);                                                \
            for (int64_t iy = h0; iy < h1; iy++)                                           \
              for (int64_t xx = w0; xx < w1; xx++) b[(pl * g->H + iy) * g->W + xx] += gv;  \
          }                                                                                \
        }                                                                                  \
  }

EM_FOR_EACH_NN_DTYPE(NN_POOL_KERNELS)
#undef NN_POOL_KERNELS

static em_status max_pool2d_run(const em_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                        const int64_t padding[2], const int64_t dilation[2], int ceil_mode,
                        em_tensor **out, em_tensor **indices) {
  const char *op = "max_pool2d";
  em_status st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  poolgeo g;
  if ((st = pool_geometry(op, input->ndim, input->sizes, kernel, stride, padding, dilation,
                          ceil_mode, &g)) != EM_OK)
    return st;
  em_tensor *x = NULL, *y = NULL, *ix = NULL;
  int64_t osz[4] = {input->sizes[0], input->sizes[1], g.oH, g.oW};
  if ((st = nn_dense(input, input->dtype, &x)) != EM_OK) goto done;
  if ((st = nn_new(4, osz, input->dtype, 0, &y)) != EM_OK) goto done;
  if (indices && (st = em_empty(4, osz, EM_INT64, em_cpu(), &ix)) != EM_OK) goto done;
  int64_t *ixd = ix ? em_tensor_data(ix) : NULL;
  if (input->dtype == EM_FLOAT32) maxpool_f32(em_tensor_data(x), em_tensor_data(y), ixd, &g);
  else maxpool_f64(em_tensor_data(x), em_tensor_data(y), ixd, &g);
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
  em_status st = nn_check_float(op, "grad_output", grad_out);
  if (st != EM_OK) return st;
  if (indices->dtype != EM_INT64 || indices->ndim != 4 || grad_out->ndim != 4)
    return em_fail(EM_E_VALUE, "%s: expected 4-d grad_output and 4-d int64 indices", op);
  for (int i = 0; i < 4; i++)
    if (indices->sizes[i] != grad_out->sizes[i] || (i < 2 && input_sizes[i] != grad_out->sizes[i]))
      return em_fail(EM_E_VALUE, "%s: grad_output, indices and input sizes do not match", op);
  em_tensor *go = NULL, *ix = NULL, *gx = NULL;
  if ((st = nn_dense(grad_out, grad_out->dtype, &go)) != EM_OK) goto done;
  if ((st = em_contiguous(indices, &ix)) != EM_OK) goto done;
  if ((st = nn_new(4, input_sizes, grad_out->dtype, 1, &gx)) != EM_OK) goto done;
  int64_t planes = input_sizes[0] * input_sizes[1], HW = input_sizes[2] * input_sizes[3],
          oHW = grad_out->sizes[2] * grad_out->sizes[3];
  if (grad_out->dtype == EM_FLOAT32)
    maxpool_bwd_f32(em_tensor_data(go), em_tensor_data(ix), em_tensor_data(gx), planes, HW, oHW);
  else
    maxpool_bwd_f64(em_tensor_data(go), em_tensor_data(ix), em_tensor_data(gx), planes, HW, oHW);
  *grad_input = gx;
  gx = NULL;
done:;
  em_tensor *rel[3] = {go, ix, gx};
  nn_release(3, rel);
  return st;
}

static em_status avg_pool2d_run(const em_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                        const int64_t padding[2], int ceil_mode, int count_include_pad,
                        int64_t divisor_override, em_tensor **out) {
  const char *op = "avg_pool2d";
  em_status st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  poolgeo g;
  if ((st = pool_geometry(op, input->ndim, input->sizes, kernel, stride, padding, NULL,
                          ceil_mode, &g)) != EM_OK)
    return st;
  if (divisor_override < 0)
    return em_fail(EM_E_VALUE, "%s: divisor must be not zero", op);
  em_tensor *x = NULL, *y = NULL;
  int64_t osz[4] = {input->sizes[0], input->sizes[1], g.oH, g.oW};
  if ((st = nn_dense(input, input->dtype, &x)) != EM_OK) goto done;
  if ((st = nn_new(4, osz, input->dtype, 0, &y)) != EM_OK) goto done;
  if (input->dtype == EM_FLOAT32)
    avgpool_f32(em_tensor_data(x), em_tensor_data(y), &g, count_include_pad, divisor_override, 0);
  else
    avgpool_f64(em_tensor_data(x), em_tensor_data(y), &g, count_include_pad, divisor_override, 0);
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
  em_status st = nn_check_float(op, "grad_output", grad_out);
  if (st != EM_OK) return st;
  poolgeo g;
  if ((st = pool_geometry(op, 4, input_sizes, kernel, stride, padding, NULL, ceil_mode, &g)) !=
      EM_OK)
    return st;
  if (grad_out->ndim != 4 || grad_out->sizes[0] != input_sizes[0] ||
      grad_out->sizes[1] != input_sizes[1] || grad_out->sizes[2] != g.oH ||
      grad_out->sizes[3] != g.oW)
    return em_fail(EM_E_VALUE, "%s: grad_output does not have the pooled shape", op);
  em_tensor *go = NULL, *gx = NULL;
  if ((st = nn_dense(grad_out, grad_out->dtype, &go)) != EM_OK) goto done;
  if ((st = nn_new(4, input_sizes, grad_out->dtype, 1, &gx)) != EM_OK) goto done;
  /* windows of one plane may overlap: the kernel adds plane by plane, one
  ** thread per plane */
  if (grad_out->dtype == EM_FLOAT32)
    avgpool_f32(em_tensor_data(go), em_tensor_data(gx), &g, count_include_pad, divisor_override, 1);
  else
    avgpool_f64(em_tensor_data(go), em_tensor_data(gx), &g, count_include_pad, divisor_override, 1);
  *grad_input = gx;
  gx = NULL;
done:;
  em_tensor *rel[2] = {go, gx};
  nn_release(2, rel);
  return st;
}

/* -- embedding --------------------------------------------------------------- */

/* ids as a flat int64 tensor, each checked to be in 1..num */
static em_status flat_ids(const char *op, const em_tensor *ids, int64_t num, em_tensor **out) {
  if (ids->dtype != EM_INT64 && ids->dtype != EM_INT32)
    return em_fail(EM_E_TYPE, "%s: expected ids of dtype int64 or int32, got %s", op,
                   em_dtype_name(ids->dtype));
  em_tensor *f;
  em_status st = nn_dense(ids, EM_INT64, &f);
  if (st != EM_OK) return st;
  int64_t n = em_tensor_numel(f);
  const int64_t *d = em_tensor_data(f);
  for (int64_t i = 0; i < n; i++)
    if (d[i] < 1 || d[i] > num) {
      em_tensor_release(f);
      return em_fail(EM_E_INDEX, "%s: id %lld is out of range for %lld rows (ids are 1..%lld)", op,
                     (long long)d[i], (long long)num, (long long)num);
    }
  int64_t sz[1] = {n};
  st = em_view(f, 1, sz, out);
  em_tensor_release(f);
  return st;
}

static em_status embedding_run(const em_tensor *weight, const em_tensor *ids, em_tensor **out) {
  const char *op = "embedding";
  if (weight->ndim != 2)
    return em_fail(EM_E_VALUE, "%s: expected a 2-d weight [num, dim], got %d-d", op, weight->ndim);
  if (ids->ndim + 1 > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: too many dims in ids", op);
  em_tensor *f = NULL, *rows = NULL;
  em_status st = flat_ids(op, ids, weight->sizes[0], &f);
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
                                int64_t num_weights, int64_t padding_idx, em_tensor **grad_weight) {
  const char *op = "embedding_backward";
  em_status st = nn_check_float(op, "grad_output", grad_out);
  if (st != EM_OK) return st;
  if (grad_out->ndim != ids->ndim + 1)
    return em_fail(EM_E_VALUE, "%s: grad_output must have one more dim than ids", op);
  for (int i = 0; i < ids->ndim; i++)
    if (grad_out->sizes[i] != ids->sizes[i])
      return em_fail(EM_E_VALUE, "%s: grad_output's leading sizes must be the ids' shape", op);
  int64_t dim = grad_out->sizes[ids->ndim];
  em_tensor *f = NULL, *g2 = NULL, *gw = NULL;
  int64_t wsz[2] = {num_weights, dim}, gsz[2] = {em_tensor_numel(ids), dim};
  if ((st = flat_ids(op, ids, num_weights, &f)) != EM_OK) goto done;
  if ((st = em_reshape(grad_out, 2, gsz, &g2)) != EM_OK) goto done;
  if ((st = nn_new(2, wsz, grad_out->dtype, 1, &gw)) != EM_OK) goto done;
  em_scalar one = {EM_SCALAR_INT, 1, 1.0};
  if ((st = em_index_add_(gw, 1, f, g2, one)) != EM_OK) goto done;
  if (padding_idx >= 1 && padding_idx <= num_weights) {
    size_t es = em_dtype_size(gw->dtype);
    memset((char *)em_tensor_data(gw) + (size_t)((padding_idx - 1) * dim) * es, 0,
           (size_t)dim * es);
  }
  *grad_weight = gw;
  gw = NULL;
done:;
  em_tensor *rel[3] = {f, g2, gw};
  nn_release(3, rel);
  return st;
}

/* -- layer norm -------------------------------------------------------------- */

#define NN_LN_KERNELS(S, E, T)                                                             \
  static void ln_fwd_##S(const T *x, const T *w, const T *b, T *y, T *mu, T *rs, int64_t M, \
                         int64_t D, double eps) {                                           \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (M * D > 32768)")                         \
    for (int64_t r = 0; r < M; r++) {                                                       \
      const T *xr = x + r * D;                                                              \
      double m = 0, v = 0;                                                                  \
      for (int64_t j = 0; j < D; j++) m += (double)xr[j];                                   \
      m /= (double)D;                                                                       \
      for (int64_t j = 0; j < D; j++) v += ((double)xr[j] - m) * ((double)xr[j] - m);       \
      v /= (double)D;                                                                       \
      double is = 1.0 / sqrt(v + eps);                                                      \
      for (int64_t j = 0; j < D; j++) {                                                     \
        double h = ((double)xr[j] - m) * is;                                                \
        if (w) h *= (double)w[j];                                                           \
        if (b) h += (double)b[j];                                                           \
        y[r * D + j] = (T)h;                                                                \
      }                                                                                     \
      mu[r] = (T)m;                                                                         \
      rs[r] = (T)is;                                                                        \
    }                                                                                       \
  }                                                                                         \
  static void ln_bwd_##S(const T *go, const T *x, const T *mu, const T *rs, const T *w,     \
                         T *gx, T *gw, T *gb, int64_t M, int64_t D) {                       \
    if (gx) {                                                                               \
      _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (M * D > 32768)")                       \
      for (int64_t r = 0; r < M; r++) {                                                     \
        const T *g = go + r * D, *xr = x + r * D;                                           \
        double m = (double)mu[r], is = (double)rs[r], s1 = 0, s2 = 0;                       \
        for (int64_t j = 0; j < D; j++) {                                                   \
          double gh = (double)g[j] * (w ? (double)w[j] : 1.0);                              \
          s1 += gh;                                                                         \
          s2 += gh * ((double)xr[j] - m) * is;                                              \
        }                                                                                   \
        s1 /= (double)D;                                                                    \
        s2 /= (double)D;                                                                    \
        for (int64_t j = 0; j < D; j++) {                                                   \
          double gh = (double)g[j] * (w ? (double)w[j] : 1.0);                              \
          double xh = ((double)xr[j] - m) * is;                                             \
          gx[r * D + j] = (T)(is * (gh - s1 - xh * s2));                                    \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
    if (gw || gb) {                                                                         \
      _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (M * D > 32768)")                       \
      for (int64_t j = 0; j < D; j++) {                                                     \
        double sw = 0, sb = 0;                                                              \
        for (int64_t r = 0; r < M; r++) {                                                   \
          double g = (double)go[r * D + j];                                                 \
          sw += g * ((double)x[r * D + j] - (double)mu[r]) * (double)rs[r];                 \
          sb += g;                                                                          \
        }                                                                                   \
        if (gw) gw[j] = (T)sw;                                                              \
        if (gb) gb[j] = (T)sb;                                                              \
      }                                                                                     \
    }                                                                                       \
  }

EM_FOR_EACH_NN_DTYPE(NN_LN_KERNELS)
#undef NN_LN_KERNELS

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
  *D = prod(nd, ns);
  *M = prod(input->ndim - nd, input->sizes);
  return EM_OK;
}

static em_status layer_norm_run(const em_tensor *input, int normalized_ndim, const em_tensor *weight,
                        const em_tensor *bias, double eps, em_tensor **out, em_tensor **mean,
                        em_tensor **rstd) {
  const char *op = "layer_norm";
  em_status st = nn_check_float(op, "input", input);
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
  if ((st = nn_new(input->ndim, input->sizes, dt, 0, &y)) != EM_OK) goto done;
  if ((st = nn_new(input->ndim, ssz, dt, 0, &mu)) != EM_OK) goto done;
  if ((st = nn_new(input->ndim, ssz, dt, 0, &rs)) != EM_OK) goto done;
#define D_(t) ((t) ? em_tensor_data(t) : NULL)
  if (dt == EM_FLOAT32)
    ln_fwd_f32(D_(x), D_(w), D_(b), D_(y), D_(mu), D_(rs), M, D, eps);
  else
    ln_fwd_f64(D_(x), D_(w), D_(b), D_(y), D_(mu), D_(rs), M, D, eps);
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
  em_status st = nn_check_float(op, "input", input);
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
  if (grad_input && (st = nn_new(input->ndim, input->sizes, dt, 0, &gx)) != EM_OK) goto done;
  if (grad_weight && (st = nn_new(normalized_ndim, ns, dt, 0, &gw)) != EM_OK) goto done;
  if (grad_bias && (st = nn_new(normalized_ndim, ns, dt, 0, &gb)) != EM_OK) goto done;
  if (dt == EM_FLOAT32)
    ln_bwd_f32(D_(go), D_(x), D_(mu), D_(rs), D_(w), D_(gx), D_(gw), D_(gb), M, D);
  else
    ln_bwd_f64(D_(go), D_(x), D_(mu), D_(rs), D_(w), D_(gx), D_(gw), D_(gb), M, D);
  if (grad_input) { *grad_input = gx; gx = NULL; }
  if (grad_weight) { *grad_weight = gw; gw = NULL; }
  if (grad_bias) { *grad_bias = gb; gb = NULL; }
done:;
  em_tensor *rel[8] = {go, x, mu, rs, w, gx, gw, gb};
  nn_release(8, rel);
  return st;
}

/* -- batch norm -------------------------------------------------------------- */

/* x is [N, C, S] dense: element (n, c, s) at (n * C + c) * S + s */
#define NN_BN_KERNELS(S_, E, T)                                                             \
  static void bn_stats_##S_(const T *x, int64_t N, int64_t C, int64_t S, double *mean,     \
                            double *var) {                                                  \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (N * C * S > 32768)")                     \
    for (int64_t c = 0; c < C; c++) {                                                       \
      double m = 0, v = 0;                                                                  \
      for (int64_t n = 0; n < N; n++)                                                       \
        for (int64_t s = 0; s < S; s++) m += (double)x[(n * C + c) * S + s];                \
      m /= (double)(N * S);                                                                 \
      for (int64_t n = 0; n < N; n++)                                                       \
        for (int64_t s = 0; s < S; s++) {                                                   \
          double d = (double)x[(n * C + c) * S + s] - m;                                    \
          v += d * d;                                                                       \
        }                                                                                   \
      mean[c] = m;                                                                          \
      var[c] = v / (double)(N * S);                                                         \
    }                                                                                       \
  }                                                                                         \
  static void bn_apply_##S_(const T *x, T *y, const T *w, const T *b, const double *mean,  \
                            const double *is, int64_t N, int64_t C, int64_t S) {            \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (N * C * S > 32768)")                     \
    for (int64_t nc = 0; nc < N * C; nc++) {                                                \
      int64_t c = nc % C;                                                                   \
      double a = is[c] * (w ? (double)w[c] : 1.0);                                          \
      double sh = (b ? (double)b[c] : 0.0) - mean[c] * a;                                   \
      for (int64_t s = 0; s < S; s++) y[nc * S + s] = (T)((double)x[nc * S + s] * a + sh);  \
    }                                                                                       \
  }                                                                                         \
  static void bn_bwd_##S_(const T *go, const T *x, const T *w, const T *mu, const T *ist,  \
                          int training, T *gx, T *gw, T *gb, int64_t N, int64_t C,          \
                          int64_t S) {                                                      \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (N * C * S > 32768)")                     \
    for (int64_t c = 0; c < C; c++) {                                                       \
      double m = (double)mu[c], is = (double)ist[c], sg = 0, sgx = 0;                       \
      for (int64_t n = 0; n < N; n++)                                                       \
        for (int64_t s = 0; s < S; s++) {                                                   \
          int64_t k = (n * C + c) * S + s;                                                  \
          sg += (double)go[k];                                                              \
          sgx += (double)go[k] * ((double)x[k] - m) * is;                                   \
        }                                                                                   \
      if (gw) gw[c] = (T)sgx;                                                               \
      if (gb) gb[c] = (T)sg;                                                                \
      if (!gx) continue;                                                                    \
      double wc = w ? (double)w[c] : 1.0, cnt = (double)(N * S);                            \
      for (int64_t n = 0; n < N; n++)                                                       \
        for (int64_t s = 0; s < S; s++) {                                                   \
          int64_t k = (n * C + c) * S + s;                                                  \
          double g = (double)go[k];                                                         \
          if (training) g -= sg / cnt + ((double)x[k] - m) * is * sgx / cnt;                \
          gx[k] = (T)(g * wc * is);                                                         \
        }                                                                                   \
    }                                                                                       \
  }                                                                                         \
  static double bn_get_##S_(const void *p, int64_t i) { return (double)((const T *)p)[i]; }  \
  static void bn_set_##S_(void *p, int64_t i, double v) { ((T *)p)[i] = (T)v; }

EM_FOR_EACH_NN_DTYPE(NN_BN_KERNELS)
#undef NN_BN_KERNELS

static em_status bn_param(const char *op, const char *what, const em_tensor *input,
                          const em_tensor *t, int64_t C, int need_dense) {
  if (!t) return EM_OK;
  em_status st = nn_check_same(op, what, input, t);
  if (st != EM_OK) return st;
  if (t->ndim != 1 || t->sizes[0] != C)
    return em_fail(EM_E_VALUE, "%s: expected %s of shape [%lld], got %d-d", op, what,
                   (long long)C, t->ndim);
  if (need_dense && !em_tensor_is_contiguous(t))
    return em_fail(EM_E_VALUE, "%s: %s must be contiguous (it is updated in place)", op, what);
  return EM_OK;
}

static em_status batch_norm_run(const em_tensor *input, const em_tensor *weight, const em_tensor *bias,
                        em_tensor *running_mean, em_tensor *running_var, int training,
                        double momentum, double eps, em_tensor **out, em_tensor **save_mean,
                        em_tensor **save_invstd) {
  const char *op = "batch_norm";
  em_status st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  if (input->ndim < 2)
    return em_fail(EM_E_VALUE, "%s: expected an input of at least 2 dims [N, C, ...], got %d-d",
                   op, input->ndim);
  int64_t N = input->sizes[0], C = input->sizes[1], S = prod(input->ndim - 2, input->sizes + 2);
  if ((st = bn_param(op, "weight", input, weight, C, 0)) != EM_OK) return st;
  if ((st = bn_param(op, "bias", input, bias, C, 0)) != EM_OK) return st;
  if ((st = bn_param(op, "running_mean", input, running_mean, C, 1)) != EM_OK) return st;
  if ((st = bn_param(op, "running_var", input, running_var, C, 1)) != EM_OK) return st;
  if (!training && (!running_mean || !running_var))
    return em_fail(EM_E_VALUE, "%s: evaluation needs running_mean and running_var", op);
  if (training && N * S <= 1) {
    char a[EM_SHAPE_BUF];
    return em_fail(EM_E_VALUE, "%s: Expected more than 1 value per channel when training, got "
                   "input size %s", op, em_fmt_shape(a, sizeof a, input->ndim, input->sizes));
  }
  em_dtype dt = input->dtype;
  double (*get)(const void *, int64_t) = dt == EM_FLOAT32 ? bn_get_f32 : bn_get_f64;
  void (*set)(void *, int64_t, double) = dt == EM_FLOAT32 ? bn_set_f32 : bn_set_f64;
  em_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL, *sm = NULL, *si = NULL;
  double *mean = calloc((size_t)(2 * C + 1), sizeof(double));
  if (!mean) return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  double *var = mean + C;
  int64_t csz[1] = {C};
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if (weight && (st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if (bias && (st = nn_dense(bias, dt, &b)) != EM_OK) goto done;
  if ((st = nn_new(input->ndim, input->sizes, dt, 0, &y)) != EM_OK) goto done;
  if ((st = nn_new(1, csz, dt, 0, &sm)) != EM_OK) goto done;
  if ((st = nn_new(1, csz, dt, 0, &si)) != EM_OK) goto done;
  if (training) {
    if (dt == EM_FLOAT32) bn_stats_f32(em_tensor_data(x), N, C, S, mean, var);
    else bn_stats_f64(em_tensor_data(x), N, C, S, mean, var);
    double unb = (double)(N * S) / (double)(N * S - 1);
    for (int64_t c = 0; c < C; c++) {
      if (running_mean)
        set(em_tensor_data(running_mean), c,
            (1 - momentum) * get(em_tensor_data(running_mean), c) + momentum * mean[c]);
      if (running_var)
        set(em_tensor_data(running_var), c,
            (1 - momentum) * get(em_tensor_data(running_var), c) + momentum * var[c] * unb);
      var[c] = 1.0 / sqrt(var[c] + eps);
    }
    if (running_mean) em_storage_bump_version(running_mean->storage);
    if (running_var) em_storage_bump_version(running_var->storage);
  } else {
    for (int64_t c = 0; c < C; c++) {
      mean[c] = get(em_tensor_data(running_mean), c);
      var[c] = 1.0 / sqrt(get(em_tensor_data(running_var), c) + eps);
    }
  }
  for (int64_t c = 0; c < C; c++) {
    set(em_tensor_data(sm), c, mean[c]);
    set(em_tensor_data(si), c, var[c]);
  }
  if (dt == EM_FLOAT32)
    bn_apply_f32(D_(x), D_(y), D_(w), D_(b), mean, var, N, C, S);
  else
    bn_apply_f64(D_(x), D_(y), D_(w), D_(b), mean, var, N, C, S);
  *out = y;
  y = NULL;
  if (save_mean) { *save_mean = sm; sm = NULL; }
  if (save_invstd) { *save_invstd = si; si = NULL; }
done:
  free(mean);
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
  em_status st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  if (input->ndim < 2)
    return em_fail(EM_E_VALUE, "%s: expected an input of at least 2 dims, got %d-d", op, input->ndim);
  int64_t N = input->sizes[0], C = input->sizes[1], S = prod(input->ndim - 2, input->sizes + 2);
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
  if (grad_input && (st = nn_new(input->ndim, input->sizes, dt, 0, &gx)) != EM_OK) goto done;
  if (grad_weight && (st = nn_new(1, csz, dt, 0, &gw)) != EM_OK) goto done;
  if (grad_bias && (st = nn_new(1, csz, dt, 0, &gb)) != EM_OK) goto done;
  if (dt == EM_FLOAT32)
    bn_bwd_f32(D_(go), D_(x), D_(w), D_(mu), D_(is), training, D_(gx), D_(gw), D_(gb), N, C, S);
  else
    bn_bwd_f64(D_(go), D_(x), D_(w), D_(mu), D_(is), training, D_(gx), D_(gw), D_(gb), N, C, S);
  if (grad_input) { *grad_input = gx; gx = NULL; }
  if (grad_weight) { *grad_weight = gw; gw = NULL; }
  if (grad_bias) { *grad_bias = gb; gb = NULL; }
done:;
  em_tensor *rel[8] = {go, x, w, mu, is, gx, gw, gb};
  nn_release(8, rel);
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
  if ((st = nn_new(input->ndim, input->sizes, input->dtype, 0, &m)) != EM_OK) goto done;
  if (p >= 1) {
    em_scalar z = {EM_SCALAR_FLOAT, 0, 0.0};
    st = em_fill_(m, z);
  } else {
    if ((st = em_bernoulli_(m, 1.0 - p)) != EM_OK) goto done;
    int64_t n = em_tensor_numel(m);
    double k = 1.0 / (1.0 - p);
    /* the mask holds 0 and 1: scaling by a multiply gives 0 and k exactly,
    ** without a branch per element on random bits (a select here was a
    ** third of dropout's time in mispredictions) */
    if (input->dtype == EM_FLOAT32) {
      float *d = em_tensor_data(m);
      const float kf = (float)k;
      for (int64_t i = 0; i < n; i++) d[i] *= kf;
    } else {
      double *d = em_tensor_data(m);
      for (int64_t i = 0; i < n; i++) d[i] *= k;
    }
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

/* -- class losses: nll_loss and cross_entropy -------------------------------- */

typedef struct clsgeo {
  int64_t N, C, S;
  int prob;            /* target holds probabilities (input's shape) */
} clsgeo;

static em_status cls_geometry(const char *op, const em_tensor *input, const em_tensor *target,
                              const em_tensor *weight, int allow_prob, clsgeo *g) {
  em_status st = nn_check_float(op, "input", input);
  if (st != EM_OK) return st;
  if (input->ndim < 1)
    return em_fail(EM_E_VALUE, "%s: expected an input of 1 or more dims, got 0-d", op);
  g->N = input->ndim == 1 ? 1 : input->sizes[0];
  g->C = input->ndim == 1 ? input->sizes[0] : input->sizes[1];
  g->S = input->ndim <= 2 ? 1 : prod(input->ndim - 2, input->sizes + 2);
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
    if (!ok) {
      char a[EM_SHAPE_BUF], b[EM_SHAPE_BUF];
      return em_fail(EM_E_VALUE, "%s: expected target of shape %s for input of shape %s", op,
                     em_fmt_shape(a, sizeof a, target->ndim, target->sizes),
                     em_fmt_shape(b, sizeof b, input->ndim, input->sizes));
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
static em_status cls_ids(const char *op, const em_tensor *target, int64_t C, int64_t ignore,
                         em_tensor **out) {
  em_status st = nn_dense(target, EM_INT64, out);
  if (st != EM_OK) return st;
  int64_t n = em_tensor_numel(*out);
  const int64_t *d = em_tensor_data(*out);
  for (int64_t i = 0; i < n; i++)
    if (d[i] != ignore && (d[i] < 1 || d[i] > C)) {
      em_tensor_release(*out);
      *out = NULL;
      return em_fail(EM_E_INDEX, "%s: target %lld is out of bounds for %lld classes (class ids "
                     "are 1..%lld)", op, (long long)d[i], (long long)C, (long long)C);
    }
  return EM_OK;
}

/* One lane (n, s): element c at x[base + c * S]. Computes the lane's loss
** parts (nll: -w[t] logp[t]; smooth: -sum_c w[c] logp[c] or, for
** probabilities, -sum_c w[c] t'[c] logp[c]) and, when gx is given, the
** gradient for the lane with the scales a (of nll) and b (of smooth). */
#define NN_CLS_KERNELS(S_, E, T)                                                              \
  static void cls_lane_##S_(const T *x, const T *tp, int64_t t, const T *w, int64_t base,     \
                            int64_t C, int64_t S, int logsm, double ls, double *nll,          \
                            double *smooth, double a, double b, T *gx) {                      \
    double mx = -INFINITY, lse = 0;                                                           \
    if (logsm) {                                                                              \
      for (int64_t c = 0; c < C; c++) {                                                       \
        double v = (double)x[base + c * S];                                                   \
        if (v > mx) mx = v;                                                                   \
      }                                                                                       \
      if (!isfinite(mx)) mx = 0;                                                              \
      for (int64_t c = 0; c < C; c++) lse += exp((double)x[base + c * S] - mx);              \
      lse = log(lse) + mx;                                                                    \
    }                                                                                         \
    double nl = 0, sm = 0, sumd = 0;                                                          \
    for (int64_t c = 0; c < C; c++) {                                                         \
      double lp = (double)x[base + c * S] - lse;                                              \
      double wc = w ? (double)w[c] : 1.0;                                                     \
      double tc = tp ? (double)tp[base + c * S] * (1 - ls) + ls / (double)C                   \
                     : (c == t ? 1.0 : 0.0);                                                  \
      if (tp) sm -= wc * tc * lp;                                                             \
      else {                                                                                  \
        if (c == t) nl = -wc * lp;                                                            \
        sm -= wc * lp;                                                                        \
      }                                                                                       \
      if (gx) {                                                                               \
        double d = tp ? -b * wc * tc : -(c == t ? a * wc : 0.0) - b * wc;                     \
        sumd += d;                                                                            \
        gx[base + c * S] = (T)d;                                                              \
      }                                                                                       \
    }                                                                                         \
    *nll = nl;                                                                                \
    *smooth = sm;                                                                             \
    if (gx && logsm == 1)                                                                     \
      for (int64_t c = 0; c < C; c++) {                                                       \
        double p = exp((double)x[base + c * S] - lse);                                        \
        gx[base + c * S] = (T)((double)gx[base + c * S] - p * sumd);                          \
      }                                                                                       \
  }

EM_FOR_EACH_NN_DTYPE(NN_CLS_KERNELS)
#undef NN_CLS_KERNELS

/* The shared driver. logsm: cross_entropy (log_softmax first); else nll.
** Forward when go == NULL (writes *out, and *total_weight when asked),
** backward otherwise (writes *out = grad_input). */
static em_status class_loss(const char *op, const em_tensor *input, const em_tensor *target,
                            const em_tensor *weight, em_reduction red, int64_t ignore,
                            double ls, int logsm, const em_tensor *go, em_tensor **out,
                            em_tensor **total_weight) {
  em_status st = check_reduction(op, red);
  if (st != EM_OK) return st;
  clsgeo g;
  if ((st = cls_geometry(op, input, target, weight, logsm, &g)) != EM_OK) return st;
  if (!(ls >= 0 && ls <= 1))
    return em_fail(EM_E_VALUE, "%s: label_smoothing must be between 0.0 and 1.0, got %g", op, ls);
  em_dtype dt = input->dtype;
  int64_t NS = g.N * g.S;
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
  em_tensor *x = NULL, *ids = NULL, *tp = NULL, *w = NULL, *res = NULL, *tw = NULL, *god = NULL;
  double *nll = NULL;
  if ((st = nn_dense(input, dt, &x)) != EM_OK) goto done;
  if (g.prob) {
    if ((st = nn_dense(target, dt, &tp)) != EM_OK) goto done;
  } else if ((st = cls_ids(op, target, g.C, ignore, &ids)) != EM_OK) {
    goto done;
  }
  if (weight && (st = nn_dense(weight, dt, &w)) != EM_OK) goto done;
  if (go && (st = nn_dense(go, dt, &god)) != EM_OK) goto done;
  nll = malloc(sizeof(double) * (size_t)(2 * NS + 1));
  if (!nll) { st = em_fail(EM_E_NOMEM, "%s: out of memory", op); goto done; }
  double *smooth = nll + NS;
  const int64_t *idd = ids ? em_tensor_data(ids) : NULL;
  /* denominators of MEAN: total weight of counted targets (nll part; also
  ** the smooth part: PyTorch divides both by it) and, for probabilities,
  ** the lane count */
  double twsum = 0;
  for (int64_t i = 0; i < NS; i++) {
    if (g.prob) continue;
    if (idd[i] == ignore) continue;
    twsum += w ? (dt == EM_FLOAT32 ? (double)((const float *)em_tensor_data(w))[idd[i] - 1]
                                   : ((const double *)em_tensor_data(w))[idd[i] - 1])
               : 1.0;
  }
  double nll_den = red == EM_REDUCTION_MEAN ? twsum : 1.0;
  double sm_den = red == EM_REDUCTION_MEAN ? (g.prob ? (double)NS : twsum) : 1.0;
  double ls_nll = g.prob ? 0.0 : (logsm ? 1 - ls : 1.0);
  double ls_sm = g.prob ? 1.0 : (logsm ? ls / (double)g.C : 0.0);
  if (go) {
    if ((st = nn_new(input->ndim, input->sizes, dt, 1, &res)) != EM_OK) goto done;
  }
  double g0 = 0;
  if (go && red != EM_REDUCTION_NONE)
    g0 = dt == EM_FLOAT32 ? (double)*(const float *)em_tensor_data(god)
                          : *(const double *)em_tensor_data(god);
#pragma omp parallel for schedule(static) num_threads(em_get_num_threads()) if (NS * g.C > 32768)
  for (int64_t i = 0; i < NS; i++) {
    int64_t n = i / g.S, s = i % g.S, base = n * g.C * g.S + s;
    int64_t t = g.prob ? -1 : idd[i] - 1;
    if (!g.prob && idd[i] == ignore) {
      nll[i] = smooth[i] = 0;
      continue;
    }
    double gi = 0;
    if (go)
      gi = red == EM_REDUCTION_NONE ? (dt == EM_FLOAT32 ? (double)((const float *)em_tensor_data(god))[i]
                                                        : ((const double *)em_tensor_data(god))[i])
                                    : g0;
    double a = gi * ls_nll / nll_den, b = gi * ls_sm / sm_den;
    if (dt == EM_FLOAT32)
      cls_lane_f32(em_tensor_data(x), tp ? em_tensor_data(tp) : NULL, t, D_(w), base, g.C, g.S,
                   logsm, ls, &nll[i], &smooth[i], a, b, go ? (float *)em_tensor_data(res) : NULL);
    else
      cls_lane_f64(em_tensor_data(x), tp ? em_tensor_data(tp) : NULL, t, D_(w), base, g.C, g.S,
                   logsm, ls, &nll[i], &smooth[i], a, b, go ? (double *)em_tensor_data(res) : NULL);
  }
  if (!go) {
    void (*set)(void *, int64_t, double) = dt == EM_FLOAT32 ? bn_set_f32 : bn_set_f64;
    if (red == EM_REDUCTION_NONE) {
      if ((st = nn_new(lnd, lsz, dt, 0, &res)) != EM_OK) goto done;
      for (int64_t i = 0; i < NS; i++) set(em_tensor_data(res), i, ls_nll * nll[i] + ls_sm * smooth[i]);
    } else {
      double sn = 0, ss = 0;
      for (int64_t i = 0; i < NS; i++) {
        sn += nll[i];
        ss += smooth[i];
      }
      double v = (ls_nll != 0 ? ls_nll * sn / nll_den : 0) + (ls_sm != 0 ? ls_sm * ss / sm_den : 0);
      if (red == EM_REDUCTION_MEAN && !g.prob && twsum == 0) v = NAN;
      if ((st = nn_new(0, NULL, dt, 0, &res)) != EM_OK) goto done;
      set(em_tensor_data(res), 0, v);
    }
    if (total_weight) {
      if ((st = nn_new(0, NULL, dt, 0, &tw)) != EM_OK) goto done;
      set(em_tensor_data(tw), 0, g.prob ? (double)NS : twsum);
    }
  }
  *out = res;
  res = NULL;
  if (total_weight && tw) { *total_weight = tw; tw = NULL; }
done:
  free(nll);
  em_tensor *rel[7] = {x, ids, tp, w, res, tw, god};
  nn_release(7, rel);
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

typedef enum pw_kind { PW_MSE, PW_L1, PW_BCE, PW_BCEL } pw_kind;

/* loss (bwd 0) or d loss / d x (bwd 1) of one element */
static inline double pw_eval(pw_kind k, int bwd, double x, double t, double w, double pw) {
  switch (k) {
    case PW_MSE:
      return bwd ? 2 * (x - t) : (x - t) * (x - t);
    case PW_L1:
      return bwd ? (x > t ? 1.0 : x < t ? -1.0 : 0.0) : fabs(x - t);
    case PW_BCE: {
      if (bwd) {
        double den = (1 - x) * x;
        if (den < 1e-12) den = 1e-12;
        return w * (x - t) / den;
      }
      double lx = log(x), l1x = log1p(-x);
      if (lx < -100) lx = -100;
      if (l1x < -100) l1x = -100;
      return -w * (t * lx + (1 - t) * l1x);
    }
    case PW_BCEL: {
      double lw = (pw - 1) * t + 1;
      if (bwd) {
        double s = 1.0 / (1.0 + exp(-x));
        return w * ((1 - t) - lw * (1 - s));
      }
      double sp = log1p(exp(-fabs(x))) + (x < 0 ? -x : 0.0); /* softplus(-x) */
      return w * ((1 - t) * x + lw * sp);
    }
  }
  return 0;
}

#define NN_PW_KERNELS(S_, E, T)                                                              \
  static void pw_run_##S_(pw_kind k, int bwd, int64_t n, const T *x, const T *t, const T *w,  \
                          const T *pw, const T *go, int64_t gstep, double scale, T *y) {     \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (n > 32768)")                              \
    for (int64_t i = 0; i < n; i++) {                                                        \
      double v = pw_eval(k, bwd, (double)x[i], (double)t[i], w ? (double)w[i] : 1.0,         \
                         pw ? (double)pw[i] : 1.0);                                          \
      if (bwd) {                                                                             \
        if (k != PW_BCE && k != PW_BCEL && w) v *= (double)w[i];                             \
        v *= (double)go[i * gstep] * scale;                                                  \
      }                                                                                      \
      y[i] = (T)v;                                                                           \
    }                                                                                        \
  }

EM_FOR_EACH_NN_DTYPE(NN_PW_KERNELS)
#undef NN_PW_KERNELS

/* Forward (go NULL) or backward of a pointwise loss. */
static em_status pointwise_loss(const char *op, pw_kind k, const em_tensor *input,
                                const em_tensor *target, const em_tensor *weight,
                                const em_tensor *pos_weight, em_reduction red,
                                const em_tensor *go, em_tensor **out) {
  em_status st = check_reduction(op, red);
  if (st != EM_OK) return st;
  if ((st = nn_check_float(op, "input", input)) != EM_OK) return st;
  if (target->storage->device.type != EM_CPU)
    return em_fail(EM_E_RUNTIME, "%s: only CPU tensors are supported", op);
  const em_tensor *all[4] = {input, target, weight, pos_weight};
  const em_tensor *bt[4];
  int nb = 0;
  for (int i = 0; i < 4; i++)
    if (all[i]) bt[nb++] = all[i];
  int ndim;
  int64_t shape[EM_MAX_DIMS];
  if ((st = em_broadcast_shapes(op, nb, bt, &ndim, shape)) != EM_OK) return st;
  int64_t n = prod(ndim, shape);
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
  if (k == PW_BCE && !go) {
    const void *xd = em_tensor_data(d[0]);
    for (int64_t i = 0; i < n; i++) {
      double v = dt == EM_FLOAT32 ? (double)((const float *)xd)[i] : ((const double *)xd)[i];
      if (!(v >= 0 && v <= 1)) {
        st = em_fail(EM_E_VALUE, "%s: all elements of input should be between 0 and 1 (found %g)", op, v);
        goto done;
      }
    }
  }
  if (go && (st = nn_dense(go, dt, &d[4])) != EM_OK) goto done;
  if ((st = nn_new(ndim, shape, dt, 0, &res)) != EM_OK) goto done;
  double scale = go && red == EM_REDUCTION_MEAN && n > 0 ? 1.0 / (double)n : 1.0;
  int64_t gstep = red == EM_REDUCTION_NONE ? 1 : 0;
  if (dt == EM_FLOAT32)
    pw_run_f32(k, go != NULL, n, D_(d[0]), D_(d[1]), D_(d[2]), D_(d[3]), D_(d[4]), gstep, scale,
               D_(res));
  else
    pw_run_f64(k, go != NULL, n, D_(d[0]), D_(d[1]), D_(d[2]), D_(d[3]), D_(d[4]), gstep, scale,
               D_(res));
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
  return pointwise_loss("mse_loss", PW_MSE, input, target, NULL, NULL, reduction, NULL, out);
}
em_status em_mse_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                               const em_tensor *target, em_reduction reduction,
                               em_tensor **grad_input) {
  em_status gst = nn_not_twice("mse_loss_backward", grad_out, input, target);
  if (gst != EM_OK) return gst;
  return pointwise_loss("mse_loss_backward", PW_MSE, input, target, NULL, NULL, reduction,
                        grad_out, grad_input);
}
static em_status l1_loss_run(const em_tensor *input, const em_tensor *target, em_reduction reduction,
                     em_tensor **out) {
  return pointwise_loss("l1_loss", PW_L1, input, target, NULL, NULL, reduction, NULL, out);
}
em_status em_l1_loss_backward(const em_tensor *grad_out, const em_tensor *input,
                              const em_tensor *target, em_reduction reduction,
                              em_tensor **grad_input) {
  em_status gst = nn_not_twice("l1_loss_backward", grad_out, input, target);
  if (gst != EM_OK) return gst;
  return pointwise_loss("l1_loss_backward", PW_L1, input, target, NULL, NULL, reduction,
                        grad_out, grad_input);
}
static em_status binary_cross_entropy_run(const em_tensor *input, const em_tensor *target,
                                  const em_tensor *weight, em_reduction reduction,
                                  em_tensor **out) {
  return pointwise_loss("binary_cross_entropy", PW_BCE, input, target, weight, NULL, reduction,
                        NULL, out);
}
em_status em_binary_cross_entropy_backward(const em_tensor *grad_out, const em_tensor *input,
                                           const em_tensor *target, const em_tensor *weight,
                                           em_reduction reduction, em_tensor **grad_input) {
  em_status gst = nn_not_twice("binary_cross_entropy_backward", grad_out, input, weight);
  if (gst != EM_OK) return gst;
  return pointwise_loss("binary_cross_entropy_backward", PW_BCE, input, target, weight, NULL,
                        reduction, grad_out, grad_input);
}
static em_status binary_cross_entropy_with_logits_run(const em_tensor *input, const em_tensor *target,
                                              const em_tensor *weight,
                                              const em_tensor *pos_weight,
                                              em_reduction reduction, em_tensor **out) {
  return pointwise_loss("binary_cross_entropy_with_logits", PW_BCEL, input, target, weight,
                        pos_weight, reduction, NULL, out);
}
em_status em_binary_cross_entropy_with_logits_backward(
    const em_tensor *grad_out, const em_tensor *input, const em_tensor *target,
    const em_tensor *weight, const em_tensor *pos_weight, em_reduction reduction,
    em_tensor **grad_input) {
  em_status gst = nn_not_twice("binary_cross_entropy_with_logits_backward", grad_out, input, weight);
  if (gst != EM_OK) return gst;
  return pointwise_loss("binary_cross_entropy_with_logits_backward", PW_BCEL, input, target,
                        weight, pos_weight, reduction, grad_out, grad_input);
}

/* -- the engine entries: kernels above, then the autograd node --------------- */

/* An nn node: op, name, over in[0..nin) for *out; on failure *out is
** released. Recorded when grad mode was on (on) and an input requires
** grad. */
static em_status nn_record(int on, em_status st, int nin, const em_tensor *const *in,
                           em_tensor **out, em_ag_params *p, em_ag_nn_op op,
                           const char *name) {
  if (st != EM_OK || !on || !em_ag_any(nin, in)) return st;
  p->op = op;
  p->name = name;
  st = em_ag_record(EM_AG_NN, nin, in, 1, out, p);
  if (st != EM_OK) {
    em_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/* An output the caller may not want: handed out or released (nothing is
** written on failure, when t is NULL). */
static void nn_hand(em_tensor *t, em_tensor **to) {
  if (to && t) *to = t;
  else if (t) em_tensor_release(t);
}

em_status em_max_pool2d(const em_tensor *input, const int64_t kernel[2], const int64_t stride[2],
                        const int64_t padding[2], const int64_t dilation[2], int ceil_mode,
                        em_tensor **out, em_tensor **indices) {
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
  int on = em_ag_pause();
  em_tensor *sm = NULL, *si = NULL;
  em_status st = batch_norm_run(input, weight, bias, running_mean, running_var, training,
                                momentum, eps, out, &sm, &si);
  em_ag_resume(on);
  const em_tensor *in[3] = {input, weight, bias};
  return norm_record(on, st, in, out, sm, si, training, eps, EM_AG_NN_BATCHNORM,
                     "NativeBatchNormBackward0", save_mean, save_invstd);
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
