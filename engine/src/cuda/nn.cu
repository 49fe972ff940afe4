// cuda/nn.cu -- the CUDA backend's nn kernels of layer two (core/kern_nn.h):
// max/avg pooling forward and backward, the id check, layer norm forward and
// backward; as cpu/nn.c computes them (sums in double). Backward passes whose
// windows overlap add with atomics (the order of float additions then
// depends on timing, as on PyTorch's CUDA). COMPILED ONLY: no GPU has run
// these yet (docs/cuda.md).
#include "cuda/cu_iface.h"
#include "cuda/cu_common.cuh"

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

namespace {


template <typename T>
__global__ void maxpool_kernel(const T *x, T *y, int64_t *ix, emcu_pool g) {
  GRID_LOOP(g.planes * g.oH * g.oW) {
    int64_t ox = lin % g.oW, oy = (lin / g.oW) % g.oH, pl = lin / (g.oW * g.oH);
    const T *xp = x + pl * g.H * g.W;
    T best = (T)-INFINITY;
    int64_t at = -1;
    for (int64_t i = 0; i < g.k[0]; i++) {
      int64_t iy = oy * g.s[0] - g.p[0] + i * g.d[0];
      if (iy < 0 || iy >= g.H) continue;
      for (int64_t j = 0; j < g.k[1]; j++) {
        int64_t xx = ox * g.s[1] - g.p[1] + j * g.d[1];
        if (xx < 0 || xx >= g.W) continue;
        T v = xp[iy * g.W + xx];
        if (at < 0 || v > best || (v != v && best == best)) {  // NaN wins, the first of equals
          best = v;
          at = iy * g.W + xx;
        }
      }
    }
    y[lin] = best;
    if (ix) ix[lin] = at + 1;
  }
}

template <typename T>
__global__ void maxpool_bwd_kernel(const T *go, const int64_t *ix, T *gx, int64_t planes, int64_t HW,
                                   int64_t oHW) {
  GRID_LOOP(planes * oHW) {
    int64_t pl = lin / oHW, at = ix[lin];
    if (at >= 1 && at <= HW) atomicAdd(&gx[pl * HW + at - 1], go[lin]);
  }
}

template <typename T>
__global__ void avgpool_kernel(const T *a, T *b, emcu_pool g, int bwd) {
  GRID_LOOP(g.planes * g.oH * g.oW) {
    int64_t ox = lin % g.oW, oy = (lin / g.oW) % g.oH, pl = lin / (g.oW * g.oH);
    int64_t h0 = oy * g.s[0] - g.p[0], w0 = ox * g.s[1] - g.p[1];
    int64_t h1 = h0 + g.k[0], w1 = w0 + g.k[1];
    if (h1 > g.H + g.p[0]) h1 = g.H + g.p[0];
    if (w1 > g.W + g.p[1]) w1 = g.W + g.p[1];
    int64_t pool = (h1 - h0) * (w1 - w0);
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > g.H) h1 = g.H;
    if (w1 > g.W) w1 = g.W;
    if (h0 >= h1 || w0 >= w1) {
      if (!bwd) b[lin] = 0;
      continue;
    }
    double div = g.divisor_override != 0 ? (double)g.divisor_override
                                         : (double)(g.count_include_pad ? pool : (h1 - h0) * (w1 - w0));
    if (!bwd) {
      double sum = 0;
      for (int64_t iy = h0; iy < h1; iy++)
        for (int64_t xx = w0; xx < w1; xx++) sum += (double)a[(pl * g.H + iy) * g.W + xx];
      b[lin] = (T)(sum / div);
    } else {
      T gv = (T)((double)a[lin] / div);
      for (int64_t iy = h0; iy < h1; iy++)
        for (int64_t xx = w0; xx < w1; xx++) atomicAdd(&b[(pl * g.H + iy) * g.W + xx], gv);
    }
  }
}

__global__ void bad_id_kernel(const int64_t *ids, int64_t n, int64_t num, int has_ignore, int64_t ignore,
                              unsigned long long *first) {
  GRID_LOOP(n) {
    int64_t v = ids[lin];
    if ((v < 1 || v > num) && !(has_ignore && v == ignore)) atomicMin(first, (unsigned long long)lin);
  }
}
__global__ void bad_id_value_kernel(const int64_t *ids, int64_t n, const unsigned long long *first,
                                    int64_t *value) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && *first < (unsigned long long)n) *value = ids[*first];
}

// a fixed-order tree over the block's 256 doubles
__device__ inline double block_sum(double *sh, double v) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

// a block per row
template <typename T>
__global__ void ln_fwd_kernel(const T *x, const T *w, const T *b, T *y, T *mu, T *rs, int64_t M, int64_t D,
                              double eps) {
  __shared__ double sh[256];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T *xr = x + r * D;
    double s = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += (double)xr[j];
    double m = block_sum(sh, s) / (double)D;
    double v = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) v += ((double)xr[j] - m) * ((double)xr[j] - m);
    v = block_sum(sh, v) / (double)D;
    double is = 1.0 / sqrt(v + eps);
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      double h = ((double)xr[j] - m) * is;
      if (w) h *= (double)w[j];
      if (b) h += (double)b[j];
      y[r * D + j] = (T)h;
    }
    if (threadIdx.x == 0) {
      mu[r] = (T)m;
      rs[r] = (T)is;
    }
  }
}

template <typename T>
__global__ void ln_bwd_x_kernel(const T *go, const T *x, const T *mu, const T *rs, const T *w, T *gx, int64_t M,
                                int64_t D) {
  __shared__ double sh[256];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T *g = go + r * D, *xr = x + r * D;
    double m = (double)mu[r], is = (double)rs[r], s1 = 0, s2 = 0;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      double gh = (double)g[j] * (w ? (double)w[j] : 1.0);
      s1 += gh;
      s2 += gh * ((double)xr[j] - m) * is;
    }
    s1 = block_sum(sh, s1) / (double)D;
    s2 = block_sum(sh, s2) / (double)D;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      double gh = (double)g[j] * (w ? (double)w[j] : 1.0);
      double xh = ((double)xr[j] - m) * is;
      gx[r * D + j] = (T)(is * (gh - s1 - xh * s2));
    }
  }
}

// a thread per column: the weight and bias gradients, rows in order
template <typename T>
__global__ void ln_bwd_w_kernel(const T *go, const T *x, const T *mu, const T *rs, T *gw, T *gb, int64_t M,
                                int64_t D) {
  GRID_LOOP(D) {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < M; r++) {
      double g = (double)go[r * D + lin];
      sw += g * ((double)x[r * D + lin] - (double)mu[r]) * (double)rs[r];
      sb += g;
    }
    if (gw) gw[lin] = (T)sw;
    if (gb) gb[lin] = (T)sb;
  }
}

template <typename T>
__global__ void im2col_kernel(T *img, T *col, emcu_conv g, int64_t n0, int64_t nb, int64_t c0, int to_col) {
  const int64_t NL = nb * g.L;
  GRID_LOOP(g.K * NL) {
    int64_t k = lin / NL, rem = lin - k * NL, j = rem / g.L, l = rem - j * g.L;
    int64_t oy = l / g.oW, ox = l - oy * g.oW;
    int64_t c = k / (g.kH * g.kW), i = (k / g.kW) % g.kH, jj = k % g.kW;
    int64_t iy = oy * g.s[0] - g.p[0] + i * g.d[0], ix = ox * g.s[1] - g.p[1] + jj * g.d[1];
    bool in = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
    T *px = img + (((n0 + j) * g.C + c0 + c) * g.H + (in ? iy : 0)) * g.W + (in ? ix : 0);
    if (to_col) col[lin] = in ? *px : T(0);
    else if (in) atomicAdd(px, col[lin]);
  }
}

template <typename T>
__global__ void reorder_kernel(T *nol, T *buf, const T *bias, emcu_conv g, int64_t n0, int64_t nb, int to_buf) {
  GRID_LOOP(g.O * nb * g.L) {
    int64_t l = lin % g.L, j = (lin / g.L) % nb, o = lin / (g.L * nb);
    T *a = nol + ((n0 + j) * g.O + o) * g.L + l;
    if (to_buf) buf[lin] = *a;
    else *a = buf[lin] + (bias ? bias[o] : T(0));
  }
}

// batch norm: a block per channel for the statistics and the gradients
template <typename T>
__global__ void bn_stats_kernel(const T *x, T *rm, T *rv, T *sm, T *si, double *stats, int64_t N, int64_t C,
                                int64_t S, int training, double momentum, double eps) {
  __shared__ double sh[256];
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double m, inv;
    if (training) {
      const int64_t cnt = N * S;
      double a = 0;
      for (int64_t q = threadIdx.x; q < cnt; q += blockDim.x) a += (double)x[((q / S) * C + c) * S + q % S];
      m = block_sum(sh, a) / (double)cnt;
      double v = 0;
      for (int64_t q = threadIdx.x; q < cnt; q += blockDim.x) {
        double d = (double)x[((q / S) * C + c) * S + q % S] - m;
        v += d * d;
      }
      v = block_sum(sh, v) / (double)cnt;
      if (threadIdx.x == 0) {
        double unb = (double)cnt / (double)(cnt - 1);
        if (rm) rm[c] = (T)((1 - momentum) * (double)rm[c] + momentum * m);
        if (rv) rv[c] = (T)((1 - momentum) * (double)rv[c] + momentum * v * unb);
      }
      inv = 1.0 / sqrt(v + eps);
    } else {
      m = (double)rm[c];
      inv = 1.0 / sqrt((double)rv[c] + eps);
    }
    if (threadIdx.x == 0) {
      stats[c] = m;
      stats[C + c] = inv;
      sm[c] = (T)m;
      si[c] = (T)inv;
    }
  }
}
template <typename T>
__global__ void bn_apply_kernel(const T *x, T *y, const T *w, const T *b, const double *stats, int64_t N,
                                int64_t C, int64_t S) {
  GRID_LOOP(N * C * S) {
    int64_t c = (lin / S) % C;
    double a = stats[C + c] * (w ? (double)w[c] : 1.0);
    double sh = (b ? (double)b[c] : 0.0) - stats[c] * a;
    y[lin] = (T)((double)x[lin] * a + sh);
  }
}
template <typename T>
__global__ void bn_bwd_kernel(const T *go, const T *x, const T *w, const T *mu, const T *ist, int training,
                              T *gx, T *gw, T *gb, int64_t N, int64_t C, int64_t S) {
  __shared__ double sh[256];
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const int64_t cnt = N * S;
    double m = (double)mu[c], is = (double)ist[c], sg = 0, sgx = 0;
    for (int64_t q = threadIdx.x; q < cnt; q += blockDim.x) {
      int64_t k = ((q / S) * C + c) * S + q % S;
      sg += (double)go[k];
      sgx += (double)go[k] * ((double)x[k] - m) * is;
    }
    sg = block_sum(sh, sg);
    sgx = block_sum(sh, sgx);
    if (threadIdx.x == 0) {
      if (gw) gw[c] = (T)sgx;
      if (gb) gb[c] = (T)sg;
    }
    if (!gx) continue;
    double wc = w ? (double)w[c] : 1.0, n = (double)cnt;
    for (int64_t q = threadIdx.x; q < cnt; q += blockDim.x) {
      int64_t k = ((q / S) * C + c) * S + q % S;
      double g = (double)go[k];
      if (training) g -= sg / n + ((double)x[k] - m) * is * sgx / n;
      gx[k] = (T)(g * wc * is);
    }
  }
}

// -- losses: cpu/nn.c's class and pointwise losses, op for op ---------------

// the total weight of the counted targets, one block in a fixed order
template <typename T>
__global__ void cls_tw_kernel(const int64_t *ids, const T *w, int64_t NS, int64_t ignore, double *tw) {
  __shared__ double sh[256];
  double a = 0;
  for (int64_t i = threadIdx.x; i < NS; i += blockDim.x)
    if (ids[i] != ignore) a += w ? (double)w[ids[i] - 1] : 1.0;
  a = block_sum(sh, a);
  if (threadIdx.x == 0) *tw = a;
}

template <typename T>
__global__ void cls_lane_kernel(const T *x, const T *tp, const int64_t *ids, const T *w, const T *go, T *gx,
                                emcu_cls p, double *nll, double *smooth, const double *twp) {
  const int64_t C = p.C, S = p.S, NS = p.N * p.S;
  const double ls = p.ls, twsum = p.prob ? 0 : *twp;
  const double nll_den = p.reduction == 1 ? twsum : 1.0;
  const double sm_den = p.reduction == 1 ? (p.prob ? (double)NS : twsum) : 1.0;
  const double ls_nll = p.prob ? 0.0 : (p.logsm ? 1 - ls : 1.0);
  const double ls_sm = p.prob ? 1.0 : (p.logsm ? ls / (double)C : 0.0);
  GRID_LOOP(NS) {
    int64_t n = lin / S, s = lin % S, base = n * C * S + s;
    int64_t t = p.prob ? -1 : ids[lin] - 1;
    // an ignored lane: no loss; through log_softmax its gradient is
    // 0 - q * 0 (NaN in a lane of NaN or +inf logits, as PyTorch): the lane
    // with no target, no weight and zero scales
    const bool ign = !p.prob && ids[lin] == p.ignore;
    if (ign && !(gx && p.logsm == 1)) {
      nll[lin] = smooth[lin] = 0;
      continue;  // its gradient stays zero (out is zeroed)
    }
    if (ign) t = -1;
    const T *wl = ign ? nullptr : w;
    double gi = 0;
    if (go && !ign) gi = p.reduction == 0 ? (double)go[lin] : (double)go[0];
    double a = gi * ls_nll / nll_den, b = gi * ls_sm / sm_den;
    double mx = -INFINITY, lse = 0;
    if (p.logsm) {
      for (int64_t c = 0; c < C; c++) {
        double v = (double)x[base + c * S];
        if (v > mx) mx = v;
      }
      // a +inf logit makes the whole lane NaN (x - max is NaN there, as PyTorch)
      if (!isfinite(mx)) mx = mx > 0 ? NAN : 0;
      for (int64_t c = 0; c < C; c++) lse += exp((double)x[base + c * S] - mx);
      lse = log(lse) + mx;
    }
    double nl = 0, sm = 0, sumd = 0;
    for (int64_t c = 0; c < C; c++) {
      double lp = (double)x[base + c * S] - lse;
      double wc = wl ? (double)wl[c] : 1.0;
      double tc = tp ? (double)tp[base + c * S] * (1 - ls) + ls / (double)C : (c == t ? 1.0 : 0.0);
      if (tp) {
        sm -= wc * tc * lp;
      } else {
        if (c == t) nl = -wc * lp;
        sm -= wc * lp;
      }
      if (gx) {
        double d = tp ? -b * wc * tc : (c == t ? -a * wc : 0.0) - b * wc;
        sumd += d;
        gx[base + c * S] = (T)d;
      }
    }
    nll[lin] = ign ? 0 : nl;
    smooth[lin] = ign ? 0 : sm;
    if (gx && p.logsm == 1)
      for (int64_t c = 0; c < C; c++) {
        double q = exp((double)x[base + c * S] - lse);
        gx[base + c * S] = (T)((double)gx[base + c * S] - q * sumd);
      }
  }
}

template <typename T>
__global__ void cls_out_kernel(const double *nll, const double *smooth, emcu_cls p, const double *twp, T *out,
                               T *tw) {
  __shared__ double sh[256];
  const int64_t NS = p.N * p.S;
  const double twsum = p.prob ? 0 : *twp;
  const double nll_den = p.reduction == 1 ? twsum : 1.0;
  const double sm_den = p.reduction == 1 ? (p.prob ? (double)NS : twsum) : 1.0;
  const double ls_nll = p.prob ? 0.0 : (p.logsm ? 1 - p.ls : 1.0);
  const double ls_sm = p.prob ? 1.0 : (p.logsm ? p.ls / (double)p.C : 0.0);
  if (p.reduction == 0) {
    for (int64_t i = threadIdx.x; i < NS; i += blockDim.x)  // a part with weight 0 left out (0 * inf)
      out[i] = (T)((ls_nll != 0 ? ls_nll * nll[i] : 0) + (ls_sm != 0 ? ls_sm * smooth[i] : 0));
  } else {
    double sn = 0, ss = 0;
    for (int64_t i = threadIdx.x; i < NS; i += blockDim.x) {
      sn += nll[i];
      ss += smooth[i];
    }
    sn = block_sum(sh, sn);
    ss = block_sum(sh, ss);
    if (threadIdx.x == 0) {
      double v = (ls_nll != 0 ? ls_nll * sn / nll_den : 0) + (ls_sm != 0 ? ls_sm * ss / sm_den : 0);
      if (p.reduction == 1 && !p.prob && twsum == 0) v = NAN;
      out[0] = (T)v;
    }
  }
  if (tw && threadIdx.x == 0) tw[0] = (T)(p.prob ? (double)NS : twsum);
}

__device__ inline double pw_eval(int k, int bwd, double x, double t, double w, double pw) {
  switch (k) {
    case 0: return bwd ? 2 * (x - t) : (x - t) * (x - t);  // mse
    case 1: return bwd ? (x > t ? 1.0 : x < t ? -1.0 : 0.0) : fabs(x - t);  // l1
    case 2: {  // bce
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
    default: {  // bce with logits
      double lw = (pw - 1) * t + 1;
      if (bwd) {
        double s = 1.0 / (1.0 + exp(-x));
        return w * ((1 - t) - lw * (1 - s));
      }
      double sp = log1p(exp(-fabs(x))) + (x < 0 ? -x : 0.0);
      return w * ((1 - t) * x + lw * sp);
    }
  }
}

template <typename T>
__global__ void pw_kernel(int k, int bwd, int64_t n, const T *x, const T *t, const T *w, const T *pw, const T *go,
                          int64_t gstep, double scale, T *y) {
  GRID_LOOP(n) {
    double v = pw_eval(k, bwd, (double)x[lin], (double)t[lin], w ? (double)w[lin] : 1.0, pw ? (double)pw[lin] : 1.0);
    if (bwd) {
      if (k != 2 && k != 3 && w) v *= (double)w[lin];
      v *= (double)go[lin * gstep] * scale;
    }
    y[lin] = (T)v;
  }
}

template <typename T>
__global__ void outside_kernel(const T *x, int64_t n, unsigned long long *first) {
  GRID_LOOP(n) {
    double e = (double)x[lin];
    if (!(e >= 0 && e <= 1)) atomicMin(first, (unsigned long long)lin);
  }
}
template <typename T>
__global__ void outside_value_kernel(const T *x, int64_t n, const unsigned long long *first, double *v) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && *first < (unsigned long long)n) *v = (double)x[*first];
}

template <typename T>
int class_loss_t(const void *x, const void *target, const void *w, const void *go, void *out, void *tw,
                 const emcu_cls *p, double *scratch, cudaStream_t s) {
  const int64_t NS = p->N * p->S;
  double *nll = scratch, *smooth = scratch + NS, *twp = scratch + 2 * NS;
  const int64_t *ids = p->prob ? NULL : (const int64_t *)target;
  const T *tp = p->prob ? (const T *)target : NULL;
  if (!p->prob) cls_tw_kernel<T><<<1, 256, 0, s>>>(ids, (const T *)w, NS, p->ignore, twp);
  if (NS > 0)
    cls_lane_kernel<T><<<blocks_for(NS), 256, 0, s>>>((const T *)x, tp, ids, (const T *)w, (const T *)go,
                                                      go ? (T *)out : NULL, *p, nll, smooth, twp);
  if (!go) cls_out_kernel<T><<<1, 256, 0, s>>>(nll, smooth, *p, twp, (T *)out, (T *)tw);
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int emcu_class_loss(int f64, const void *x, const void *target, const void *w, const void *go,
                               void *out, void *tw, const emcu_cls *p, double *scratch, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  return f64 ? class_loss_t<double>(x, target, w, go, out, tw, p, scratch, s)
             : class_loss_t<float>(x, target, w, go, out, tw, p, scratch, s);
}

extern "C" int emcu_pointwise_loss(int f64, int kind, int reduction, int64_t n, const void *x, const void *t,
                                   const void *w, const void *pw, const void *go, void *out, void *stream) {
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  double scale = go && reduction == 1 ? 1.0 / (double)n : 1.0;
  int64_t gstep = reduction == 0 ? 1 : 0;
  if (f64)
    pw_kernel<double><<<blocks_for(n), 256, 0, s>>>(kind, go != NULL, n, (const double *)x, (const double *)t,
                                                    (const double *)w, (const double *)pw, (const double *)go,
                                                    gstep, scale, (double *)out);
  else
    pw_kernel<float><<<blocks_for(n), 256, 0, s>>>(kind, go != NULL, n, (const float *)x, (const float *)t,
                                                   (const float *)w, (const float *)pw, (const float *)go, gstep,
                                                   scale, (float *)out);
  return (int)cudaGetLastError();
}

extern "C" int emcu_outside_unit(int f64, const void *x, int64_t n, unsigned long long *first, double *value,
                                 void *stream) {
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (f64) {
    outside_kernel<double><<<blocks_for(n), 256, 0, s>>>((const double *)x, n, first);
    outside_value_kernel<double><<<1, 32, 0, s>>>((const double *)x, n, first, value);
  } else {
    outside_kernel<float><<<blocks_for(n), 256, 0, s>>>((const float *)x, n, first);
    outside_value_kernel<float><<<1, 32, 0, s>>>((const float *)x, n, first, value);
  }
  return (int)cudaGetLastError();
}

extern "C" int emcu_batch_norm(int f64, const void *x, const void *w, const void *b, void *rm, void *rv, void *y,
                               void *sm, void *si, double *stats, int64_t N, int64_t C, int64_t S, int training,
                               double momentum, double eps, void *stream) {
  if (C == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned blocks = (unsigned)(C < 65535 ? C : 65535);
  int64_t n = N * C * S;
  if (f64) {
    bn_stats_kernel<double><<<blocks, 256, 0, s>>>((const double *)x, (double *)rm, (double *)rv, (double *)sm,
                                                   (double *)si, stats, N, C, S, training, momentum, eps);
    if (n > 0)
      bn_apply_kernel<double><<<blocks_for(n), 256, 0, s>>>((const double *)x, (double *)y, (const double *)w,
                                                            (const double *)b, stats, N, C, S);
  } else {
    bn_stats_kernel<float><<<blocks, 256, 0, s>>>((const float *)x, (float *)rm, (float *)rv, (float *)sm,
                                                  (float *)si, stats, N, C, S, training, momentum, eps);
    if (n > 0)
      bn_apply_kernel<float><<<blocks_for(n), 256, 0, s>>>((const float *)x, (float *)y, (const float *)w,
                                                           (const float *)b, stats, N, C, S);
  }
  return (int)cudaGetLastError();
}

extern "C" int emcu_batch_norm_backward(int f64, const void *go, const void *x, const void *w, const void *mean,
                                        const void *invstd, void *gx, void *gw, void *gb, int64_t N, int64_t C,
                                        int64_t S, int training, void *stream) {
  if (C == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned blocks = (unsigned)(C < 65535 ? C : 65535);
  if (f64)
    bn_bwd_kernel<double><<<blocks, 256, 0, s>>>((const double *)go, (const double *)x, (const double *)w,
                                                 (const double *)mean, (const double *)invstd, training,
                                                 (double *)gx, (double *)gw, (double *)gb, N, C, S);
  else
    bn_bwd_kernel<float><<<blocks, 256, 0, s>>>((const float *)go, (const float *)x, (const float *)w,
                                                (const float *)mean, (const float *)invstd, training, (float *)gx,
                                                (float *)gw, (float *)gb, N, C, S);
  return (int)cudaGetLastError();
}

extern "C" int emcu_im2col(int f64, void *img, void *col, const emcu_conv *g, int64_t n0, int64_t nb, int64_t c0,
                           int to_col, void *stream) {
  int64_t n = g->K * nb * g->L;
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (f64) im2col_kernel<double><<<blocks_for(n), 256, 0, s>>>((double *)img, (double *)col, *g, n0, nb, c0, to_col);
  else im2col_kernel<float><<<blocks_for(n), 256, 0, s>>>((float *)img, (float *)col, *g, n0, nb, c0, to_col);
  return (int)cudaGetLastError();
}

extern "C" int emcu_conv_reorder(int f64, void *nol, void *buf, const void *bias, const emcu_conv *g, int64_t n0,
                                 int64_t nb, int to_buf, void *stream) {
  int64_t n = g->O * nb * g->L;
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (f64) reorder_kernel<double><<<blocks_for(n), 256, 0, s>>>((double *)nol, (double *)buf, (const double *)bias, *g, n0, nb, to_buf);
  else reorder_kernel<float><<<blocks_for(n), 256, 0, s>>>((float *)nol, (float *)buf, (const float *)bias, *g, n0, nb, to_buf);
  return (int)cudaGetLastError();
}

extern "C" int emcu_max_pool2d(int f64, const void *x, void *y, int64_t *ix, const emcu_pool *g, void *stream) {
  int64_t n = g->planes * g->oH * g->oW;
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (f64) maxpool_kernel<double><<<blocks_for(n), 256, 0, s>>>((const double *)x, (double *)y, ix, *g);
  else maxpool_kernel<float><<<blocks_for(n), 256, 0, s>>>((const float *)x, (float *)y, ix, *g);
  return (int)cudaGetLastError();
}

extern "C" int emcu_max_pool2d_backward(int f64, const void *go, const int64_t *ix, void *gx, int64_t planes,
                                        int64_t HW, int64_t oHW, void *stream) {
  int64_t n = planes * oHW;
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (f64) maxpool_bwd_kernel<double><<<blocks_for(n), 256, 0, s>>>((const double *)go, ix, (double *)gx, planes, HW, oHW);
  else maxpool_bwd_kernel<float><<<blocks_for(n), 256, 0, s>>>((const float *)go, ix, (float *)gx, planes, HW, oHW);
  return (int)cudaGetLastError();
}

extern "C" int emcu_avg_pool2d(int f64, const void *x, void *y, const emcu_pool *g, int bwd, void *stream) {
  int64_t n = g->planes * g->oH * g->oW;
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (f64) avgpool_kernel<double><<<blocks_for(n), 256, 0, s>>>((const double *)x, (double *)y, *g, bwd);
  else avgpool_kernel<float><<<blocks_for(n), 256, 0, s>>>((const float *)x, (float *)y, *g, bwd);
  return (int)cudaGetLastError();
}

extern "C" int emcu_bad_id(const int64_t *ids, int64_t n, int64_t num, int has_ignore, int64_t ignore,
                           unsigned long long *first, int64_t *value, void *stream) {
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  bad_id_kernel<<<blocks_for(n), 256, 0, s>>>(ids, n, num, has_ignore, ignore, first);
  bad_id_value_kernel<<<1, 32, 0, s>>>(ids, n, first, value);
  return (int)cudaGetLastError();
}

extern "C" int emcu_layer_norm(int f64, const void *x, const void *w, const void *b, void *y, void *mean,
                               void *rstd, int64_t M, int64_t D, double eps, void *stream) {
  if (M == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned blocks = (unsigned)(M < 65535 ? M : 65535);
  if (f64)
    ln_fwd_kernel<double><<<blocks, 256, 0, s>>>((const double *)x, (const double *)w, (const double *)b,
                                                 (double *)y, (double *)mean, (double *)rstd, M, D, eps);
  else
    ln_fwd_kernel<float><<<blocks, 256, 0, s>>>((const float *)x, (const float *)w, (const float *)b,
                                                (float *)y, (float *)mean, (float *)rstd, M, D, eps);
  return (int)cudaGetLastError();
}

extern "C" int emcu_layer_norm_backward(int f64, const void *go, const void *x, const void *mean,
                                        const void *rstd, const void *w, void *gx, void *gw, void *gb,
                                        int64_t M, int64_t D, void *stream) {
  if (M == 0 || D == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned blocks = (unsigned)(M < 65535 ? M : 65535);
  if (gx) {
    if (f64)
      ln_bwd_x_kernel<double><<<blocks, 256, 0, s>>>((const double *)go, (const double *)x, (const double *)mean,
                                                     (const double *)rstd, (const double *)w, (double *)gx, M, D);
    else
      ln_bwd_x_kernel<float><<<blocks, 256, 0, s>>>((const float *)go, (const float *)x, (const float *)mean,
                                                    (const float *)rstd, (const float *)w, (float *)gx, M, D);
  }
  if (gw || gb) {
    if (f64)
      ln_bwd_w_kernel<double><<<blocks_for(D), 256, 0, s>>>((const double *)go, (const double *)x,
                                                            (const double *)mean, (const double *)rstd,
                                                            (double *)gw, (double *)gb, M, D);
    else
      ln_bwd_w_kernel<float><<<blocks_for(D), 256, 0, s>>>((const float *)go, (const float *)x,
                                                           (const float *)mean, (const float *)rstd,
                                                           (float *)gw, (float *)gb, M, D);
  }
  return (int)cudaGetLastError();
}
