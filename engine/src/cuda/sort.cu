// cuda/sort.cu -- the CUDA backend's sort family (core/kern_sort.h): sort,
// topk, kthvalue/median/nanmedian and unique's writes. Each lane's elements
// become 64-bit keys that order as the CPU's comparisons do (integers as
// int64, floats as double with -0 = 0 and every NaN after every number),
// and CUB's segmented radix sort (stable) sorts (key, position) pairs; a
// descending sort inverts the keys, which keeps equal values in their
// order, as the CPU's stable sort. COMPILED ONLY: no GPU has run these yet.
#include "cuda/cu_iface.h"
#include "cuda/cu_common.cuh"

#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

namespace {


const unsigned long long NAN_KEY = ~0ull;

__device__ inline unsigned long long key_of(int dt, const char *p) {
  if (!is_float(dt)) return (unsigned long long)load_i(dt, p) ^ (1ull << 63);
  double x = load_f(dt, p);
  if (x != x) return NAN_KEY;
  if (x == 0) x = 0;  // -0 sorts as 0
  unsigned long long u;
  memcpy(&u, &x, 8);
  return (u >> 63) ? ~u : (u | (1ull << 63));  // NaN's key is above every number's
}


__device__ inline void lane_bases(const emcu_lanes &l, int64_t lane, char **b) {
  for (int k = 0; k < 3; k++) b[k] = l.data[k];
  for (int d = 0; d < l.ndim; d++) {
    int64_t i = lane % l.shape[d];
    lane /= l.shape[d];
    for (int k = 0; k < 3; k++) b[k] += i * l.stride[d][k];
  }
}

__global__ void keys_kernel(emcu_lanes l, int desc, unsigned long long *keys, int *pos) {
  GRID_LOOP(l.nlanes * l.len) {
    int64_t lane = lin / l.len, j = lin - lane * l.len;
    char *b[3];
    lane_bases(l, lane, b);
    unsigned long long k = key_of(l.dt, b[2] + j * l.lstride[2]);
    keys[lin] = desc ? ~k : k;
    pos[lin] = (int)j;
  }
}

__global__ void write_kernel(emcu_lanes l, int64_t k, const int *pos) {
  const int es = elsize(l.dt);
  GRID_LOOP(l.nlanes * k) {
    int64_t lane = lin / k, j = lin - lane * k;
    char *b[3];
    lane_bases(l, lane, b);
    int64_t p = pos[lane * l.len + j];
    copy_n(b[0] + j * l.lstride[0], b[2] + p * l.lstride[2], es);
    *(int64_t *)(b[1] + j * l.lstride[1]) = p + 1;
  }
}

__global__ void pick_kernel(emcu_lanes l, int kind, int64_t k, const unsigned long long *keys,
                            const int *pos) {
  const int es = elsize(l.dt);
  const bool fl = is_float(l.dt);
  GRID_LOOP(l.nlanes) {
    const unsigned long long *kl = keys + lin * l.len;
    int64_t valid = l.len;
    if (fl)
      while (valid > 0 && kl[valid - 1] == NAN_KEY) valid--;
    int64_t at;
    if (kind == 0) at = k;                                          // kth
    else if (kind == 1) at = valid < l.len ? valid : (l.len - 1) / 2;  // median: the first NaN
    else at = valid > 0 ? (valid - 1) / 2 : 0;                      // nanmedian
    char *b[3];
    lane_bases(l, lin, b);
    int64_t p = pos[lin * l.len + at];
    copy_n(b[0], b[2] + p * l.lstride[2], es);
    *(int64_t *)b[1] = p + 1;
  }
}

struct times_len {
  int len;
  __host__ __device__ int operator()(int i) const { return i * len; }
};

size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

// the scan's temporary storage for total items in nlanes segments
size_t cub_bytes(int64_t total, int64_t nlanes, int len) {
  size_t tb = 0;
  thrust::counting_iterator<int> c(0);
  thrust::transform_iterator<times_len, thrust::counting_iterator<int>, int> beg(c, times_len{len});
  cub::DeviceSegmentedRadixSort::SortPairs((void *)NULL, tb, (const unsigned long long *)NULL,
                                           (unsigned long long *)NULL, (const int *)NULL, (int *)NULL,
                                           (int)total, (int)nlanes, beg, beg + 1);
  return tb;
}

__global__ void unique_flags_kernel(const char *sorted, int dt, int64_t n, bool *flags) {
  GRID_LOOP(n) {
    if (lin == 0) { flags[0] = true; continue; }
    const int es = elsize(dt);
    const char *a = sorted + (lin - 1) * es, *b = sorted + lin * es;
    bool same = is_float(dt) ? load_f(dt, a) == load_f(dt, b) : load_i(dt, a) == load_i(dt, b);
    flags[lin] = !same;
  }
}

__global__ void unique_write_kernel(const char *sorted, int es, const int64_t *perm, const bool *flags,
                                    const int64_t *group, int64_t n, char *values, int64_t *inverse,
                                    int64_t *counts) {
  GRID_LOOP(n) {
    int64_t g = group[lin];
    if (flags[lin]) copy_n(values + (g - 1) * es, sorted + lin * es, es);
    if (inverse) inverse[perm[lin] - 1] = g;
    if (counts) atomicAdd((unsigned long long *)&counts[g - 1], 1ull);
  }
}

}  // namespace

extern "C" size_t emcu_sort_scratch(int64_t nlanes, int64_t len) {
  // keys in and out, positions in and out, then CUB's storage
  int64_t total = nlanes * len;
  if (total <= 0 || total >= ((int64_t)1 << 31)) return 256;
  size_t head = 2 * align256((size_t)total * 8) + 2 * align256((size_t)total * 4);
  return head + cub_bytes(total, nlanes, (int)len) + 256;
}

extern "C" int emcu_sort_lanes(const emcu_lanes *l, int64_t k, int desc, int pick, int pick_kind,
                               void *scratch, size_t scratch_bytes, void *stream) {
  int64_t total = l->nlanes * l->len;
  if (total == 0) return 0;
  if (total >= ((int64_t)1 << 31)) return (int)cudaErrorInvalidValue;  // CUB's int item count
  cudaStream_t s = (cudaStream_t)stream;
  char *p = (char *)scratch;
  unsigned long long *kin = (unsigned long long *)p;
  p += align256((size_t)total * 8);
  unsigned long long *kout = (unsigned long long *)p;
  p += align256((size_t)total * 8);
  int *pin = (int *)p;
  p += align256((size_t)total * 4);
  int *pout = (int *)p;
  p += align256((size_t)total * 4);
  size_t tb = scratch_bytes - (size_t)(p - (char *)scratch);
  keys_kernel<<<blocks_for(total), 256, 0, s>>>(*l, desc, kin, pin);
  thrust::counting_iterator<int> c(0);
  thrust::transform_iterator<times_len, thrust::counting_iterator<int>, int> beg(c, times_len{(int)l->len});
  cudaError_t e = cub::DeviceSegmentedRadixSort::SortPairs((void *)p, tb, kin, kout, pin, pout, (int)total,
                                                           (int)l->nlanes, beg, beg + 1, 0, 64, s);
  if (e != cudaSuccess) return (int)e;
  if (pick) pick_kernel<<<blocks_for(l->nlanes), 256, 0, s>>>(*l, pick_kind, k, kout, pout);
  else if (k > 0) write_kernel<<<blocks_for(l->nlanes * k), 256, 0, s>>>(*l, k, pout);
  return (int)cudaGetLastError();
}

extern "C" int emcu_unique_flags(const char *sorted, int dt, int64_t n, bool *flags, void *stream) {
  if (n == 0) return 0;
  unique_flags_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(sorted, dt, n, flags);
  return (int)cudaGetLastError();
}

extern "C" int emcu_unique_write(const char *sorted, int es, const int64_t *perm, const bool *flags,
                                 const int64_t *group, int64_t n, char *values, int64_t *inverse,
                                 int64_t *counts, void *stream) {
  if (n == 0) return 0;
  unique_write_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(sorted, es, perm, flags, group, n,
                                                                        values, inverse, counts);
  return (int)cudaGetLastError();
}
