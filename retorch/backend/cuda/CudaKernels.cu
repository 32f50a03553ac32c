// The CUDA backend's first kernels: fill, add with alpha, and a strided gather (a strided
// tensor made contiguous), float32, grid-stride loops with 64-bit indices.
#include <cuda_runtime.h>

#include <cstdint>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaRuntime.h"
#include "retorch/core/Error.h"

namespace retorch::cuda_backend {

namespace {

constexpr int kMaxDims = 8;

struct GatherGeometry {
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
  int dims;
};

__global__ void fill_kernel(float* out, float value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = value;
}

__global__ void add_kernel(const float* a, const float* b, float alpha, float* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = a[i] + alpha * b[i];
}

__global__ void gather_kernel(const float* src, GatherGeometry g, float* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, offset = 0;
    for (int d = g.dims - 1; d >= 0; --d) {
      const int64_t idx = rest % g.sizes[d];
      rest /= g.sizes[d];
      offset += idx * g.strides[d];
    }
    out[i] = src[offset];
  }
}

}  // namespace

void fill(float* out, float value, int64_t n, StreamHandle s) {
  if (n <= 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, as_stream(s)>>>(out, value, n);
  check_launch("fill");
}

void add(const float* a, const float* b, float alpha, float* out, int64_t n, StreamHandle s) {
  if (n <= 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, as_stream(s)>>>(a, b, alpha, out, n);
  check_launch("add");
}

void gather_strided(const float* src, const int64_t* sizes, const int64_t* strides, int dims,
                    float* out, StreamHandle s) {
  RT_CHECK_VALUE(dims >= 0 && dims <= kMaxDims, "cuda gather_strided: ", dims,
                 " dims; at most ", kMaxDims, " are supported");
  GatherGeometry g{};
  g.dims = dims;
  int64_t n = 1;
  for (int d = 0; d < dims; ++d) {
    RT_CHECK_VALUE(sizes[d] >= 0, "cuda gather_strided: negative size ", sizes[d]);
    g.sizes[d] = sizes[d];
    g.strides[d] = strides[d];
    n *= sizes[d];
  }
  if (n == 0) return;
  gather_kernel<<<blocks_for(n), kThreads, 0, as_stream(s)>>>(src, g, out, n);
  check_launch("gather_strided");
}

}  // namespace retorch::cuda_backend
