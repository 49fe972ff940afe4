// cuda/scan.cu -- the CUDA backend's mask and repeat kernels (core/
// kern_index.h): counts and compactions on CUB's device-wide scans (the
// inclusive running count of a mask gives every selected element its place,
// so the order of the threads does not matter), nonzero, masked_select/
// masked_scatter, t[mask]'s offsets, repeat_interleave. COMPILED ONLY: no GPU
// has run these yet (docs/cuda.md).
#include "cuda/cu_iface.h"
#include "cuda/cu_common.cuh"

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

struct to_i64 {
  __host__ __device__ int64_t operator()(bool b) const { return b ? 1 : 0; }
};


struct dims {
  int n;
  int64_t size[EMCU_MAX_DIMS], stride[EMCU_MAX_DIMS];
};

__device__ inline int64_t offset_of(const dims &d, int64_t i) {  // the last dim fastest
  int64_t off = 0;
  for (int k = d.n - 1; k >= 0; k--) {
    int64_t q = i / d.size[k];
    off += (i - q * d.size[k]) * d.stride[k];
    i = q;
  }
  return off;
}


__global__ void runs_kernel(int64_t *runs, const int64_t *prefix, int64_t n, int64_t run, int64_t nruns) {
  GRID_LOOP(nruns + 1) {
    int64_t end = lin * run;  // the elements before run lin
    if (end > n) end = n;
    runs[lin] = end == 0 ? 0 : prefix[end - 1];
  }
}

__global__ void compact_kernel(char *out, const char *src, const bool *mask, const int64_t *prefix,
                               int64_t n, dims outer, const int64_t *countp, int es, int64_t total) {
  const int64_t count = *countp;
  GRID_LOOP(total) {
    int64_t o = lin / n, i = lin - o * n;
    if (!mask[i]) continue;
    int64_t so = outer.n ? offset_of(outer, o) : 0;
    copy_n(out + (o * count + prefix[i] - 1) * es, src + (so + i) * es, es);
  }
}

__global__ void mask_offsets_kernel(int64_t *offsets, const bool *mask, const int64_t *prefix, int64_t n,
                                    dims d) {
  GRID_LOOP(n) {
    if (mask[lin]) offsets[prefix[lin] - 1] = offset_of(d, lin);
  }
}

__global__ void nonzero_kernel(int64_t *out, const bool *mask, const int64_t *prefix, int64_t n, dims d) {
  GRID_LOOP(n) {
    if (!mask[lin] || d.n == 0) continue;
    int64_t *row = out + (prefix[lin] - 1) * d.n, i = lin;
    for (int k = d.n - 1; k >= 0; k--) {
      int64_t q = i / d.size[k];
      row[k] = i - q * d.size[k] + 1;
      i = q;
    }
  }
}

__device__ inline void geom_offsets(const emcu_geom &g, int64_t lin, int64_t *off) {
  for (int k = 0; k < EMCU_MAX_OPS; k++) off[k] = 0;
  for (int d = 0; d < g.ndim; d++) {
    int64_t sz = g.shape[d], i = lin % sz;
    lin /= sz;
    for (int k = 0; k < g.nops; k++) off[k] += i * g.strides[d][k];
  }
}

__global__ void masked_select_kernel(emcu_geom g, int es, char *out) {
  GRID_LOOP(g.numel) {
    int64_t off[EMCU_MAX_OPS];
    geom_offsets(g, lin, off);
    if (*(const bool *)(g.data[1] + off[1]))
      copy_n(out + (*(const int64_t *)(g.data[2] + off[2]) - 1) * es, g.data[0] + off[0], es);
  }
}

__global__ void masked_scatter_kernel(emcu_geom g, int es, const char *src) {
  GRID_LOOP(g.numel) {
    int64_t off[EMCU_MAX_OPS];
    geom_offsets(g, lin, off);
    if (*(const bool *)(g.data[1] + off[1]))
      copy_n(g.data[0] + off[0], src + (*(const int64_t *)(g.data[2] + off[2]) - 1) * es, es);
  }
}

__global__ void repeat_one_kernel(int64_t *out, int64_t r, int64_t total) {
  GRID_LOOP(total) out[lin] = lin / r + 1;
}
__global__ void repeat_kernel(int64_t *out, const int64_t *repeats, const int64_t *starts, int64_t n) {
  GRID_LOOP(n) {
    int64_t b = starts[lin], r = repeats[lin];
    for (int64_t t = 0; t < r; t++) out[b + t] = lin + 1;
  }
}

dims make_dims(int n, const int64_t *sizes, const int64_t *strides) {
  dims d;
  d.n = n;
  for (int k = 0; k < n; k++) {
    d.size[k] = sizes[k];
    d.stride[k] = strides ? strides[k] : 0;
  }
  return d;
}

}  // namespace

extern "C" int emcu_mask_prefix(const bool *mask, int64_t *prefix, int64_t n, void *temp,
                                size_t *temp_bytes, void *stream) {
  thrust::transform_iterator<to_i64, const bool *, int64_t> it(mask, to_i64());
  return (int)cub::DeviceScan::InclusiveSum(temp, *temp_bytes, it, prefix, n, (cudaStream_t)stream);
}

extern "C" int emcu_exclusive_sum(const int64_t *in, int64_t *out, int64_t n, void *temp,
                                  size_t *temp_bytes, void *stream) {
  return (int)cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, in, out, n, (cudaStream_t)stream);
}

extern "C" int emcu_runs_from_prefix(int64_t *runs, const int64_t *prefix, int64_t n, int64_t run,
                                     int64_t nruns, void *stream) {
  runs_kernel<<<blocks_for(nruns + 1), 256, 0, (cudaStream_t)stream>>>(runs, prefix, n, run, nruns);
  return (int)cudaGetLastError();
}

extern "C" int emcu_masked_compact(char *out, const char *src, const bool *mask, const int64_t *prefix,
                                   int64_t n, int nouter, const int64_t *sizes, const int64_t *strides,
                                   const int64_t *count, int es, void *stream) {
  dims outer = make_dims(nouter, sizes, strides);
  int64_t nout = 1;
  for (int k = 0; k < nouter; k++) nout *= sizes[k];
  int64_t total = nout * n;
  if (total == 0) return 0;
  compact_kernel<<<blocks_for(total), 256, 0, (cudaStream_t)stream>>>(out, src, mask, prefix, n, outer, count,
                                                                       es, total);
  return (int)cudaGetLastError();
}

extern "C" int emcu_mask_offsets(int64_t *offsets, const bool *mask, const int64_t *prefix, int64_t n,
                                 int k, const int64_t *sizes, const int64_t *strides, void *stream) {
  if (n == 0) return 0;
  mask_offsets_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(offsets, mask, prefix, n,
                                                                        make_dims(k, sizes, strides));
  return (int)cudaGetLastError();
}

extern "C" int emcu_nonzero(int64_t *out, const bool *mask, const int64_t *prefix, int64_t n, int nd,
                            const int64_t *sizes, void *stream) {
  if (n == 0) return 0;
  nonzero_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(out, mask, prefix, n,
                                                                   make_dims(nd, sizes, NULL));
  return (int)cudaGetLastError();
}

extern "C" int emcu_masked_select(const emcu_geom *g, int es, char *out, void *stream) {
  if (g->numel == 0) return 0;
  masked_select_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, es, out);
  return (int)cudaGetLastError();
}

extern "C" int emcu_masked_scatter(const emcu_geom *g, int es, const char *src, void *stream) {
  if (g->numel == 0) return 0;
  masked_scatter_kernel<<<blocks_for(g->numel), 256, 0, (cudaStream_t)stream>>>(*g, es, src);
  return (int)cudaGetLastError();
}

extern "C" int emcu_repeat_positions(int64_t *out, const int64_t *repeats, const int64_t *starts,
                                     int64_t n, int one, int64_t total, void *stream) {
  if (total == 0 || n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (one) {  // one repeat r serves all n: total = n * r
    repeat_one_kernel<<<blocks_for(total), 256, 0, s>>>(out, total / n, total);
  } else {
    repeat_kernel<<<blocks_for(n), 256, 0, s>>>(out, repeats, starts, n);
  }
  return (int)cudaGetLastError();
}
