// cuda/optim.cu -- the CUDA backend's optimizer steps (core/kern_optim.h):
// SGD, Adam/AdamW, RMSprop and the .other entry's Adagrad, Adadelta,
// Adamax, NAdam, RAdam, ASGD and Rprop as one fused elementwise pass over a
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

// ATen's sign of a float: (0 < a) - (a < 0), so NaN gives 0
template <typename A> __device__ inline A sgn_of(A a) { return (A)((A(0) < a) - (a < A(0))); }

// Adagrad ... Rprop (kind 3), cpu/optim.c's loops expression for
// expression: q the operands (0 param, 1 grad, 2 and 3 the state), p the
// param and gr the gradient already negated under maximize.
template <typename T>
__device__ inline void other_step(char *const *q, const emcu_optim &o, typename Acc<T>::type p,
                                  typename Acc<T>::type gr) {
  typedef typename Acc<T>::type A;
  const A wd = (A)o.weight_decay, eps = (A)o.eps;
  if (o.other != EMCU_OPT_RPROP && o.weight_decay != 0) gr = add(gr, mul(wd, p));
  switch (o.other) {
    case EMCU_OPT_ADAGRAD: {
      A sum = put<T>(q[2], add(ld<T>(q[2]), mul(gr, gr)));
      A sd = add(sq(sum), eps);
      st<T>(q[0], add(p, dv(mul((A)(-o.step_size), gr), sd)));
      break;
    }
    case EMCU_OPT_ADADELTA: {
      const A rho = (A)o.rho, orho = (A)(1.0 - o.rho);
      A s2 = put<T>(q[2], add(mul(ld<T>(q[2]), rho), mul(mul(orho, gr), gr)));
      A sd = sq(add(s2, eps));
      A a = ld<T>(q[3]);
      A d = mul(dv(sq(add(a, eps)), sd), gr);
      st<T>(q[3], add(mul(a, rho), mul(mul(orho, d), d)));
      st<T>(q[0], add(p, mul((A)(-o.lr), d)));
      break;
    }
    case EMCU_OPT_ADAMAX: {
      A m = put<T>(q[2], add(mul(ld<T>(q[2]), (A)o.beta1), mul((A)(1.0 - o.beta1), gr)));
      A a = put<T>(q[3], mul(ld<T>(q[3]), (A)o.beta2));
      A b = add(fabs(gr), eps);
      A u = put<T>(q[3], (a != a || b != b) ? add(a, b) : (a > b ? a : b));
      st<T>(q[0], add(p, dv(mul((A)(-o.step_size), m), u)));
      break;
    }
    case EMCU_OPT_NADAM:
    case EMCU_OPT_RADAM: {
      A m = put<T>(q[2], add(mul(ld<T>(q[2]), (A)o.beta1), mul((A)(1.0 - o.beta1), gr)));
      A v = put<T>(q[3], add(mul(ld<T>(q[3]), (A)o.beta2), mul(mul((A)(1.0 - o.beta2), gr), gr)));
      if (o.other == EMCU_OPT_NADAM) {
        A den = add(sq(dv(v, (A)o.bc2)), eps);
        p = put<T>(q[0], add(p, dv(mul((A)o.c1, gr), den)));
        st<T>(q[0], add(p, dv(mul((A)o.c2, m), den)));
      } else {
        A u = mul(dv(m, (A)o.bc1), (A)o.lr);
        if (o.rectify) {
          A ad = mul(dv(A(1), add(sq(v), eps)), (A)o.bc2);
          u = mul(mul(u, ad), (A)o.c1);
        }
        st<T>(q[0], add(p, mul(A(-1), u)));
      }
      break;
    }
    case EMCU_OPT_ASGD: {
      p = put<T>(q[0], mul(p, (A)o.c1));
      p = put<T>(q[0], add(p, mul((A)(-o.c2), gr)));
      if (o.mu != 1) {
        A a = ld<T>(q[2]);
        st<T>(q[2], add(a, mul(add(p, mul(A(-1), a)), (A)o.mu)));
      } else {
        st<T>(q[2], p);
      }
      break;
    }
    default: {  // Rprop
      const A em = (A)o.etaminus, ep = (A)o.etaplus;
      A sg = sgn_of(mul(gr, ld<T>(q[2])));
      A s = sg > A(0) ? ep : (sg < A(0) ? em : A(1));
      A ss = mul(ld<T>(q[3]), s);
      if (ss == ss) ss = ss < (A)o.step_min ? (A)o.step_min : (ss > (A)o.step_max ? (A)o.step_max : ss);
      ss = put<T>(q[3], ss);
      if (s == em) gr = A(0);
      st<T>(q[0], add(p, mul(mul(A(-1), sgn_of(gr)), ss)));
      st<T>(q[2], gr);
      break;
    }
  }
}

// one element's update: q the operands' element pointers (0 param, 1 grad,
// 2.. the state), o the step's scalars
template <typename T>
__device__ inline void update_at(char *const *q, const emcu_optim &o) {
  typedef typename Acc<T>::type A;
  const A sgn = o.maximize ? A(-1) : A(1), wd = (A)o.weight_decay;
  A p = ld<T>(q[0]), gr = mul(ld<T>(q[1]), sgn);
  if (o.kind == 3) {
    other_step<T>(q, o, p, gr);
  } else if (o.kind == 0) {  // SGD
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

template <typename T>
__global__ void optim_kernel(emcu_geom g, emcu_optim o) {
  for (int64_t lin = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lin < g.numel;
       lin += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[EMCU_MAX_OPS];
    offsets<int64_t>(g, lin, off);
    char *q[EMCU_MAX_OPS];
    for (int k = 0; k < g.nops; k++) q[k] = g.data[k] + off[k];
    update_at<T>(q, o);
  }
}

// many contiguous parameters in one launch: block b updates elements
// [start[b], start[b] + EMCU_MT_CHUNK) of item[b] (PyTorch's
// multi_tensor_apply idea: a table of (tensor, chunk) per block)
template <typename T>
__global__ void multi_kernel(const emcu_mt_item *items, const int *item, const int64_t *start) {
  const emcu_mt_item &it = items[item[blockIdx.x]];
  const int64_t s = start[blockIdx.x];
  const int64_t e = s + EMCU_MT_CHUNK < it.numel ? s + EMCU_MT_CHUNK : it.numel;
  const int64_t es = (int64_t)sizeof(T);
  for (int64_t j = s + threadIdx.x; j < e; j += blockDim.x) {
    char *q[EMCU_MAX_OPS];
    for (int k = 0; k < EMCU_MAX_OPS; k++) q[k] = it.q[k] + j * es;
    update_at<T>(q, it.o);
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

extern "C" int emcu_optim_multi(int dt, const emcu_mt_item *items, const int *item,
                                const int64_t *start, int64_t blocks, void *stream) {
  if (blocks == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned b = (unsigned)blocks;
  switch (dt) {
    case F16: multi_kernel<__half><<<b, 256, 0, s>>>(items, item, start); break;
    case BF16: multi_kernel<__nv_bfloat16><<<b, 256, 0, s>>>(items, item, start); break;
    case F32: multi_kernel<float><<<b, 256, 0, s>>>(items, item, start); break;
    default: multi_kernel<double><<<b, 256, 0, s>>>(items, item, start); break;
  }
  return (int)cudaGetLastError();
}
