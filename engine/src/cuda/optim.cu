// cuda/optim.cu -- the CUDA backend's optimizer steps (core/kern_optim.h):
// SGD, Adam/AdamW and RMSprop as one fused elementwise pass over a
// parameter, its gradient and its state, expression for expression as
// cpu/optim.c (PyTorch 1.13's single-tensor updates; float16/bfloat16
// computed in float, rounded on every store). Products and sums are
// rounded separately (__fmul_rn/__fadd_rn, no contraction into FMAs), so a
// step gives the CPU's values. COMPILED ONLY: no GPU has run these yet.
#include "cuda/cu_iface.h"
#include "cuda/cu_common.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<__half> { typedef float type; };
template <> struct Acc<__nv_bfloat16> { typedef float type; };

template <typename T> __device__ inline typename Acc<T>::type ld(const char *p) { return *(const T *)p; }
template <> __device__ inline float ld<__half>(const char *p) { return __half2float(*(const __half *)p); }
template <> __device__ inline float ld<__nv_bfloat16>(const char *p) {
  return __bfloat162float(*(const __nv_bfloat16 *)p);
}
template <typename T> __device__ inline void st(char *p, typename Acc<T>::type v) { *(T *)p = v; }
template <> __device__ inline void st<__half>(char *p, float v) { *(__half *)p = __float2half_rn(v); }
template <> __device__ inline void st<__nv_bfloat16>(char *p, float v) {
  *(__nv_bfloat16 *)p = __float2bfloat16_rn(v);
}
// a store and the value PyTorch reads back from the tensor
template <typename T> __device__ inline typename Acc<T>::type put(char *p, typename Acc<T>::type v) {
  st<T>(p, v);
  return ld<T>(p);
}

__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float dv(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline double dv(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline float sq(float a) { return __fsqrt_rn(a); }
__device__ inline double sq(double a) { return __dsqrt_rn(a); }

template <typename T>
__global__ void optim_kernel(emcu_geom g, emcu_optim o) {
  typedef typename Acc<T>::type A;
  const A sgn = o.maximize ? A(-1) : A(1), wd = (A)o.weight_decay;
  for (int64_t lin = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lin < g.numel;
       lin += (int64_t)gridDim.x * blockDim.x) {
    char *q[EMCU_MAX_OPS];
    int64_t rest = lin;
    for (int k = 0; k < g.nops; k++) q[k] = g.data[k];
    for (int d = 0; d < g.ndim; d++) {
      int64_t i = rest % g.shape[d];
      rest /= g.shape[d];
      for (int k = 0; k < g.nops; k++) q[k] += i * g.strides[d][k];
    }
    A p = ld<T>(q[0]), gr = mul(ld<T>(q[1]), sgn);
    if (o.kind == 0) {  // SGD
      A d = gr;
      if (o.weight_decay != 0) d = add(d, mul(wd, p));
      if (o.has_momentum) {
        const A mom = (A)o.momentum;
        A b = o.first ? d : add(mul(ld<T>(q[2]), mom), mul((A)(1.0 - o.dampening), d));
        b = put<T>(q[2], b);
        d = o.nesterov ? add(d, mul(mom, b)) : b;
      }
      st<T>(q[0], add(p, mul((A)(-o.lr), d)));
    } else if (o.kind == 1) {  // Adam / AdamW
      if (o.weight_decay != 0) {
        if (o.decoupled) p = put<T>(q[0], mul(p, (A)(1.0 - o.lr * o.weight_decay)));
        else gr = add(gr, mul(wd, p));
      }
      A m = put<T>(q[2], add(mul(ld<T>(q[2]), (A)o.beta1), mul((A)(1.0 - o.beta1), gr)));
      A v = put<T>(q[3], add(mul(ld<T>(q[3]), (A)o.beta2), mul(mul((A)(1.0 - o.beta2), gr), gr)));
      if (o.amsgrad) {
        A x = ld<T>(q[4]);
        x = (x != x || v != v) ? add(x, v) : (x > v ? x : v);
        v = put<T>(q[4], x);
      }
      A denom = add(dv(sq(v), (A)o.bc2_sqrt), (A)o.eps);
      st<T>(q[0], add(p, dv(mul((A)(-o.step_size), m), denom)));
    } else {  // RMSprop
      if (o.weight_decay != 0) gr = add(gr, mul(wd, p));
      const A al = (A)o.alpha, oal = (A)(1.0 - o.alpha);
      A s = put<T>(q[2], add(mul(ld<T>(q[2]), al), mul(mul(oal, gr), gr)));
      A avg;
      if (o.centered) {
        A ga = put<T>(q[4], add(mul(ld<T>(q[4]), al), mul(oal, gr)));
        avg = sq(add(s, mul(mul(A(-1), ga), ga)));
      } else {
        avg = sq(s);
      }
      avg = add(avg, (A)o.eps);
      if (o.has_momentum) {
        A b = put<T>(q[3], add(mul(ld<T>(q[3]), (A)o.momentum), dv(mul(A(1), gr), avg)));
        st<T>(q[0], add(p, mul((A)(-o.lr), b)));
      } else {
        st<T>(q[0], add(p, dv(mul((A)(-o.lr), gr), avg)));
      }
    }
  }
}


}  // namespace

extern "C" int emcu_optim_step(const emcu_geom *g, int dt, const emcu_optim *o, void *stream) {
  if (g->numel == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned b = blocks_for(g->numel);
  switch (dt) {
    case F16: optim_kernel<__half><<<b, 256, 0, s>>>(*g, *o); break;
    case BF16: optim_kernel<__nv_bfloat16><<<b, 256, 0, s>>>(*g, *o); break;
    case F32: optim_kernel<float><<<b, 256, 0, s>>>(*g, *o); break;
    default: optim_kernel<double><<<b, 256, 0, s>>>(*g, *o); break;
  }
  return (int)cudaGetLastError();
}
