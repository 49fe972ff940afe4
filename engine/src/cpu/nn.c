/*
** cpu/nn.c -- the nn family of the CPU's kernels (core/kern_nn.h) other
** than convolution (cpu/conv.c): pooling, the id checks, layer and batch
** norm, the class losses and the pointwise losses, each forward with its
** backward, and the CPU's nn table.
**
** What holds:
** - float32/float64 (the loops are generated per dtype from
**   EM_FOR_EACH_NN_DTYPE); statistics and sums accumulate in double.
** - Operands are dense row-major (ops/ made them so). Structured loops work
**   on (plane, window) or (row, lane) units; each output element is written
**   by one thread, and every sum that crosses units is taken serially in a
**   fixed order, so results do not depend on the thread count.
** - Reductions: NONE keeps the per-element loss, SUM adds, MEAN divides by
**   the element count (by the total weight of the counted targets for
**   nll_loss/cross_entropy with class ids, as PyTorch).
*/
#include "cpu/nn_impl.h"
#include "cpu/omp_if.h"

#define D_(t) ((t) ? em_tensor_data(t) : NULL)

/* -- pooling ----------------------------------------------------------------- */

#define NN_POOL_KERNELS(S, E, T)                                                          \
  /* 2x2 windows, stride 2, no padding, every window inside the image (the \
  ** pool of most CNNs): the four values in the generic loop's order (row  \
  ** by row), the same choice rule (a NaN wins over numbers and over an   \
  ** earlier NaN, as PyTorch's val > max || isnan(val); the first of equal \
  ** numbers wins), without the bounds tests and the window loops. */     \
  static void maxpool2x2_##S(const T *x, T *y, int64_t *ix, int64_t planes, int64_t H,   \
                             int64_t W, int64_t oH, int64_t oW) {                          \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (planes * oH * oW > 32768)")    \
    for (int64_t pl = 0; pl < planes; pl++) {                                              \
      const T *xp = x + pl * H * W;                                                        \
      T *yp = y + pl * oH * oW;                                                            \
      int64_t *ip = ix ? ix + pl * oH * oW : NULL, scratch[oW];                            \
      for (int64_t oy = 0; oy < oH; oy++) {                                                \
        const T *r0 = xp + 2 * oy * W, *r1 = r0 + W;                                       \
        const int64_t base = 2 * oy * W + 1;                                               \
        T *yr = yp + oy * oW;                                                              \
        int64_t *ir = ip ? ip + oy * oW : scratch;                                         \
        /* take = !(v <= best) & (best is a number or v is NaN): v > best, or \
        ** v NaN; selected through bit masks, with no branch (random data    \
        ** mispredicts half the time) */                                     \
        for (int64_t ox = 0; ox < oW; ox++) {                                              \
          typedef __typeof__(__builtin_choose_expr(sizeof(T) == 4, (uint32_t)0, (uint64_t)0)) U; \
          U bb, vb, m;                                                                     \
          T best = r0[2 * ox], v;                                                          \
          int64_t at = 2 * ox, take, cand[3] = {2 * ox + 1, W + 2 * ox, W + 2 * ox + 1};   \
          const T *src[3] = {r0 + 2 * ox + 1, r1 + 2 * ox, r1 + 2 * ox + 1};               \
          for (int q = 0; q < 3; q++) {                                                    \
            v = *src[q];                                                                   \
            take = ((int64_t)(best == best) | (int64_t)(v != v)) & (1 - (int64_t)(v <= best)); \
            m = (U)0 - (U)take;                                                            \
            memcpy(&bb, &best, sizeof bb);                                                 \
            memcpy(&vb, &v, sizeof vb);                                                    \
            bb = (bb & ~m) | (vb & m);                                                     \
            memcpy(&best, &bb, sizeof bb);                                                 \
            at ^= (at ^ cand[q]) & -take;                                                  \
          }                                                                                \
          yr[ox] = best;                                                                   \
          ir[ox] = base + at;                                                              \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  }                                                                                        \
  /* The geometry is copied into locals: y and ix may alias *g as far as  \
  ** the compiler knows (ix is int64_t *), and reloading it per element    \
  ** made this loop a tenth of a CNN training step. Comparing in T is the   \
  ** comparison in double (the conversion is exact and monotonic). */      \
  static void maxpool_##S(const T *x, T *y, int64_t *ix, const em_pool2d_geo *g) {        \
    const int64_t planes = g->planes, H = g->H, W = g->W, oH = g->oH, oW = g->oW;         \
    const int64_t kh = g->k[0], kw = g->k[1], sh = g->s[0], sw = g->s[1];                 \
    const int64_t ph = g->p[0], pw = g->p[1], dh = g->d[0], dw = g->d[1];                 \
    if (kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 &&       \
        dw == 1 && 2 * oH <= H && 2 * oW <= W) {                                           \
      maxpool2x2_##S(x, y, ix, planes, H, W, oH, oW);                                      \
      return;                                                                              \
    }                                                                                      \
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
              ** the time; a NaN wins over numbers and earlier NaNs (PyTorch's \
              ** rule), the first of equal numbers wins */                  \
              const int take = (at < 0) | (v > best) | (v != v);                           \
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
  static void avgpool_##S(const T *a, T *b, const em_pool2d_geo *g, int cip,             \
                          int64_t divov, int bwd) {                                      \
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
          double div = divov != 0 ? (double)divov                                          \
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

static void cpu_max_pool2d(const em_tensor *x, em_tensor *y, em_tensor *indices,
                           const em_pool2d_geo *g) {
  int64_t *ixd = D_(indices);
  if (x->dtype == EM_FLOAT32) maxpool_f32(em_tensor_data(x), em_tensor_data(y), ixd, g);
  else maxpool_f64(em_tensor_data(x), em_tensor_data(y), ixd, g);
}

static void cpu_max_pool2d_backward(const em_tensor *grad_out, const em_tensor *indices,
                                    em_tensor *grad_input) {
  const int64_t *in = grad_input->sizes;
  int64_t planes = in[0] * in[1], HW = in[2] * in[3],
          oHW = grad_out->sizes[2] * grad_out->sizes[3];
  if (grad_out->dtype == EM_FLOAT32)
    maxpool_bwd_f32(em_tensor_data(grad_out), em_tensor_data(indices),
                    em_tensor_data(grad_input), planes, HW, oHW);
  else
    maxpool_bwd_f64(em_tensor_data(grad_out), em_tensor_data(indices),
                    em_tensor_data(grad_input), planes, HW, oHW);
}

static void cpu_avg_pool2d(const em_tensor *x, em_tensor *y, const em_pool2d_geo *g) {
  if (x->dtype == EM_FLOAT32)
    avgpool_f32(em_tensor_data(x), em_tensor_data(y), g, g->count_include_pad,
                g->divisor_override, 0);
  else
    avgpool_f64(em_tensor_data(x), em_tensor_data(y), g, g->count_include_pad,
                g->divisor_override, 0);
}

/* windows of one plane may overlap: the loop adds plane by plane, one
** thread per plane */
static void cpu_avg_pool2d_backward(const em_tensor *grad_out, em_tensor *grad_input,
                                    const em_pool2d_geo *g) {
  if (grad_out->dtype == EM_FLOAT32)
    avgpool_f32(em_tensor_data(grad_out), em_tensor_data(grad_input), g,
                g->count_include_pad, g->divisor_override, 1);
  else
    avgpool_f64(em_tensor_data(grad_out), em_tensor_data(grad_input), g,
                g->count_include_pad, g->divisor_override, 1);
}

/* -- ids ----------------------------------------------------------------------- */

static int cpu_bad_id(const em_tensor *ids, int64_t num, int has_ignore, int64_t ignore,
                      int64_t *bad) {
  int64_t n = em_tensor_numel(ids);
  const int64_t *d = em_tensor_data(ids);
  for (int64_t i = 0; i < n; i++)
    if ((d[i] < 1 || d[i] > num) && !(has_ignore && d[i] == ignore)) {
      *bad = d[i];
      return 1;
    }
  return 0;
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

static void cpu_layer_norm(const em_tensor *x, const em_tensor *w, const em_tensor *b,
                           em_tensor *y, em_tensor *mean, em_tensor *rstd, int64_t M,
                           int64_t D, double eps) {
  if (x->dtype == EM_FLOAT32)
    ln_fwd_f32(D_(x), D_(w), D_(b), D_(y), D_(mean), D_(rstd), M, D, eps);
  else
    ln_fwd_f64(D_(x), D_(w), D_(b), D_(y), D_(mean), D_(rstd), M, D, eps);
}

static void cpu_layer_norm_backward(const em_tensor *grad_out, const em_tensor *x,
                                    const em_tensor *mean, const em_tensor *rstd,
                                    const em_tensor *w, em_tensor *gx, em_tensor *gw,
                                    em_tensor *gb, int64_t M, int64_t D) {
  if (x->dtype == EM_FLOAT32)
    ln_bwd_f32(D_(grad_out), D_(x), D_(mean), D_(rstd), D_(w), D_(gx), D_(gw), D_(gb), M, D);
  else
    ln_bwd_f64(D_(grad_out), D_(x), D_(mean), D_(rstd), D_(w), D_(gx), D_(gw), D_(gb), M, D);
}

/* -- batch norm -------------------------------------------------------------- */


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

static em_status cpu_batch_norm(const char *op, const em_tensor *x, const em_tensor *w,
                                const em_tensor *b, em_tensor *running_mean,
                                em_tensor *running_var, em_tensor *y, em_tensor *save_mean,
                                em_tensor *save_invstd, const em_batch_norm_params *p) {
  const int64_t N = p->N, C = p->C, S = p->S;
  const double momentum = p->momentum, eps = p->eps;
  em_dtype dt = x->dtype;
  double (*get)(const void *, int64_t) = dt == EM_FLOAT32 ? bn_get_f32 : bn_get_f64;
  void (*set)(void *, int64_t, double) = dt == EM_FLOAT32 ? bn_set_f32 : bn_set_f64;
  double *mean = calloc((size_t)(2 * C + 1), sizeof(double));
  if (!mean) return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  double *var = mean + C;
  if (p->training) {
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
  } else {
    for (int64_t c = 0; c < C; c++) {
      mean[c] = get(em_tensor_data(running_mean), c);
      var[c] = 1.0 / sqrt(get(em_tensor_data(running_var), c) + eps);
    }
  }
  for (int64_t c = 0; c < C; c++) {
    set(em_tensor_data(save_mean), c, mean[c]);
    set(em_tensor_data(save_invstd), c, var[c]);
  }
  if (dt == EM_FLOAT32)
    bn_apply_f32(D_(x), D_(y), D_(w), D_(b), mean, var, N, C, S);
  else
    bn_apply_f64(D_(x), D_(y), D_(w), D_(b), mean, var, N, C, S);
  free(mean);
  return EM_OK;
}

static void cpu_batch_norm_backward(const em_tensor *grad_out, const em_tensor *x,
                                    const em_tensor *w, const em_tensor *mean,
                                    const em_tensor *invstd, em_tensor *gx, em_tensor *gw,
                                    em_tensor *gb, const em_batch_norm_params *p) {
  if (x->dtype == EM_FLOAT32)
    bn_bwd_f32(D_(grad_out), D_(x), D_(w), D_(mean), D_(invstd), p->training, D_(gx), D_(gw),
               D_(gb), p->N, p->C, p->S);
  else
    bn_bwd_f64(D_(grad_out), D_(x), D_(w), D_(mean), D_(invstd), p->training, D_(gx), D_(gw),
               D_(gb), p->N, p->C, p->S);
}

/* -- class losses: nll_loss and cross_entropy -------------------------------- */


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
      /* a +inf logit: x - max is NaN at it (PyTorch), so the whole lane's */                \
      /* log_softmax, loss and gradient are NaN */                                            \
      if (!isfinite(mx)) mx = mx > 0 ? NAN : 0;                                               \
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
        double d = tp ? -b * wc * tc : (c == t ? -a * wc : 0.0) - b * wc;                     \
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
** Forward when go == NULL (writes out, and total_weight when given),
** backward otherwise (writes out = grad_input). */
static em_status cpu_class_loss(const char *op, const em_tensor *x,
                                const em_tensor *target, const em_tensor *w,
                                const em_tensor *god, em_tensor *res, em_tensor *tw,
                                const em_class_loss_params *p) {
  const int64_t C = p->C, S = p->S, NS = p->N * p->S, ignore = p->ignore_index;
  const int prob = p->prob, logsm = p->logsm;
  const double ls = p->label_smoothing;
  const em_reduction red = p->reduction;
  em_dtype dt = x->dtype;
  double *nll = malloc(sizeof(double) * (size_t)(2 * NS + 1));
  if (!nll) return em_fail(EM_E_NOMEM, "%s: out of memory", op);
  double *smooth = nll + NS;
  const em_tensor *tp = prob ? target : NULL;
  const int64_t *idd = prob ? NULL : em_tensor_data(target);
  /* denominators of MEAN: total weight of counted targets (nll part; also
  ** the smooth part: PyTorch divides both by it) and, for probabilities,
  ** the lane count */
  double twsum = 0;
  for (int64_t i = 0; i < NS; i++) {
    if (prob) continue;
    if (idd[i] == ignore) continue;
    twsum += w ? (dt == EM_FLOAT32 ? (double)((const float *)em_tensor_data(w))[idd[i] - 1]
                                   : ((const double *)em_tensor_data(w))[idd[i] - 1])
               : 1.0;
  }
  double nll_den = red == EM_REDUCTION_MEAN ? twsum : 1.0;
  double sm_den = red == EM_REDUCTION_MEAN ? (prob ? (double)NS : twsum) : 1.0;
  double ls_nll = prob ? 0.0 : (logsm ? 1 - ls : 1.0);
  double ls_sm = prob ? 1.0 : (logsm ? ls / (double)C : 0.0);
  double g0 = 0;
  if (god && red != EM_REDUCTION_NONE)
    g0 = dt == EM_FLOAT32 ? (double)*(const float *)em_tensor_data(god)
                          : *(const double *)em_tensor_data(god);
  EM_OMP_IF(em_get_num_threads() > 1 && NS * C > 32768, parallel for schedule(static) num_threads(em_get_num_threads()),
  for (int64_t i = 0; i < NS; i++) {
    int64_t n = i / S, s = i % S, base = n * C * S + s;
    int64_t t = prob ? -1 : idd[i] - 1;
    if (!prob && idd[i] == ignore) {
      /* no loss; through log_softmax its gradient is 0 - p * 0: NaN in a
      ** lane of NaN or +inf logits, as PyTorch's (the lane with no target,
      ** no weight and zero scales) */
      if (god && logsm == 1) {
        if (dt == EM_FLOAT32)
          cls_lane_f32(em_tensor_data(x), NULL, -1, NULL, base, C, S, logsm, ls, &nll[i],
                       &smooth[i], 0.0, 0.0, (float *)em_tensor_data(res));
        else
          cls_lane_f64(em_tensor_data(x), NULL, -1, NULL, base, C, S, logsm, ls, &nll[i],
                       &smooth[i], 0.0, 0.0, (double *)em_tensor_data(res));
      }
      nll[i] = smooth[i] = 0;
      continue;
    }
    double gi = 0;
    if (god)
      gi = red == EM_REDUCTION_NONE ? (dt == EM_FLOAT32 ? (double)((const float *)em_tensor_data(god))[i]
                                                        : ((const double *)em_tensor_data(god))[i])
                                    : g0;
    double a = gi * ls_nll / nll_den, b = gi * ls_sm / sm_den;
    if (dt == EM_FLOAT32)
      cls_lane_f32(em_tensor_data(x), D_(tp), t, D_(w), base, C, S, logsm, ls, &nll[i],
                   &smooth[i], a, b, god ? (float *)em_tensor_data(res) : NULL);
    else
      cls_lane_f64(em_tensor_data(x), D_(tp), t, D_(w), base, C, S, logsm, ls, &nll[i],
                   &smooth[i], a, b, god ? (double *)em_tensor_data(res) : NULL);
  });
  if (!god) {
    void (*set)(void *, int64_t, double) = dt == EM_FLOAT32 ? bn_set_f32 : bn_set_f64;
    if (red == EM_REDUCTION_NONE) {
      /* a part with weight 0 is left out, not multiplied: a -inf logit of
      ** another class makes the smooth part infinite (0 * inf is NaN) */
      for (int64_t i = 0; i < NS; i++)
        set(em_tensor_data(res), i,
            (ls_nll != 0 ? ls_nll * nll[i] : 0) + (ls_sm != 0 ? ls_sm * smooth[i] : 0));
    } else {
      double sn = 0, ss = 0;
      for (int64_t i = 0; i < NS; i++) {
        sn += nll[i];
        ss += smooth[i];
      }
      double v = (ls_nll != 0 ? ls_nll * sn / nll_den : 0) + (ls_sm != 0 ? ls_sm * ss / sm_den : 0);
      if (red == EM_REDUCTION_MEAN && !prob && twsum == 0) v = NAN;
      set(em_tensor_data(res), 0, v);
    }
    if (tw) set(em_tensor_data(tw), 0, prob ? (double)NS : twsum);
  }
  free(nll);
  return EM_OK;
}

/* -- pointwise losses -------------------------------------------------------- */


/* loss (bwd 0) or d loss / d x (bwd 1) of one element */
static inline double pw_eval(em_pointwise_loss k, int bwd, double x, double t, double w, double pw) {
  switch (k) {
    case EM_LOSS_MSE:
      return bwd ? 2 * (x - t) : (x - t) * (x - t);
    case EM_LOSS_L1:
      return bwd ? (x > t ? 1.0 : x < t ? -1.0 : 0.0) : fabs(x - t);
    case EM_LOSS_BCE: {
      if (bwd) {
        double den = (1 - x) * x;
        if (den < (double)1e-12f) den = (double)1e-12f; /* PyTorch's EPSILON is a float */
        return w * (x - t) / den;
      }
      double lx = log(x), l1x = log1p(-x);
      if (lx < -100) lx = -100;
      if (l1x < -100) l1x = -100;
      return -w * (t * lx + (1 - t) * l1x);
    }
    case EM_LOSS_BCE_LOGITS: {
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
  static void pw_run_##S_(em_pointwise_loss k, int bwd, int64_t n, const T *x, const T *t,   \
                          const T *w, const T *pw, const T *go, int64_t gstep,               \
                          double scale, T *y) {                                              \
    _Pragma("omp parallel for schedule(static) num_threads(em_get_num_threads()) if (n > 32768)")                              \
    for (int64_t i = 0; i < n; i++) {                                                        \
      double v = pw_eval(k, bwd, (double)x[i], (double)t[i], w ? (double)w[i] : 1.0,         \
                         pw ? (double)pw[i] : 1.0);                                          \
      if (bwd) {                                                                             \
        if (k != EM_LOSS_BCE && k != EM_LOSS_BCE_LOGITS && w) v *= (double)w[i];             \
        v *= (double)go[i * gstep] * scale;                                                  \
      }                                                                                      \
      y[i] = (T)v;                                                                           \
    }                                                                                        \
  }

EM_FOR_EACH_NN_DTYPE(NN_PW_KERNELS)
#undef NN_PW_KERNELS

static int cpu_outside_unit(const em_tensor *x, double *v) {
  int64_t n = em_tensor_numel(x);
  const void *xd = em_tensor_data(x);
  for (int64_t i = 0; i < n; i++) {
    double e = x->dtype == EM_FLOAT32 ? (double)((const float *)xd)[i] : ((const double *)xd)[i];
    if (!(e >= 0 && e <= 1)) {
      *v = e;
      return 1;
    }
  }
  return 0;
}

static void cpu_pointwise_loss(em_pointwise_loss k, em_reduction red, const em_tensor *x,
                               const em_tensor *t, const em_tensor *w, const em_tensor *pw,
                               const em_tensor *go, em_tensor *y) {
  int64_t n = em_tensor_numel(y);
  double scale = go && red == EM_REDUCTION_MEAN && n > 0 ? 1.0 / (double)n : 1.0;
  int64_t gstep = red == EM_REDUCTION_NONE ? 1 : 0;
  if (x->dtype == EM_FLOAT32)
    pw_run_f32(k, go != NULL, n, D_(x), D_(t), D_(w), D_(pw), D_(go), gstep, scale, D_(y));
  else
    pw_run_f64(k, go != NULL, n, D_(x), D_(t), D_(w), D_(pw), D_(go), gstep, scale, D_(y));
}

/* -- The table ----------------------------------------------------------------- */

const em_nn_kernels em_cpu_nn_kernels = {
    .conv2d = em_cpu_conv2d,
    .max_pool2d = cpu_max_pool2d,
    .max_pool2d_backward = cpu_max_pool2d_backward,
    .avg_pool2d = cpu_avg_pool2d,
    .avg_pool2d_backward = cpu_avg_pool2d_backward,
    .bad_id = cpu_bad_id,
    .layer_norm = cpu_layer_norm,
    .layer_norm_backward = cpu_layer_norm_backward,
    .batch_norm = cpu_batch_norm,
    .batch_norm_backward = cpu_batch_norm_backward,
    .class_loss = cpu_class_loss,
    .outside_unit = cpu_outside_unit,
    .pointwise_loss = cpu_pointwise_loss,
    .sdpa = em_cpu_sdpa,
    .sdpa_backward = em_cpu_sdpa_backward,
    .rnn_forward = em_cpu_rnn_forward,
    .rnn_backward = em_cpu_rnn_backward,
};
