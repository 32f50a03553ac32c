// The linear-algebra ops' own small kernels (the factorizations themselves are cuSOLVER's, see
// Note [CUDA linear algebra] in CudaLinalg.cpp): triangles, permutations, determinants.
#include <cstdint>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaLinalg.h"

namespace retorch::cuda_backend {

namespace {

template <typename T>
__global__ void triangle_kernel(T* a, int64_t total, int64_t rows, int64_t cols, bool lower,
                                bool unit_diagonal) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    if (unit_diagonal && i == j)
      a[e] = T(1);
    else if (lower ? j > i : j < i)
      a[e] = T(0);
  }
}

// A thread per matrix: the pivots' swaps in order, as the cpu's lu_unpack.
template <typename T>
__global__ void permutation_kernel(const int32_t* pivots, int64_t batch, int64_t m,
                                   int64_t count, int64_t* perm, T* p) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < batch;
       b += int64_t(gridDim.x) * blockDim.x) {
    int64_t* q = perm + b * m;
    for (int64_t i = 0; i < m; ++i) q[i] = i;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t j = int64_t(pivots[b * count + i]) - 1;
      if (j < 0 || j >= m) continue;
      const int64_t t = q[i];
      q[i] = q[j];
      q[j] = t;
    }
    for (int64_t i = 0; i < m; ++i) p[b * m * m + q[i] * m + i] = T(1);
  }
}

// A thread per matrix, the cpu's loop: a row swap or a negative pivot flips the sign, a zero
// pivot makes it 0 (and log|det| -inf).
template <typename T>
__global__ void lu_det_kernel(const T* lu, const int32_t* pivots, int64_t batch, int64_t n,
                              T* sign, T* logabs, T* det) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < batch;
       b += int64_t(gridDim.x) * blockDim.x) {
    double s = 1, l = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = double(lu[b * n * n + i * n + i]);
      if (pivots[b * n + i] != i + 1) s = -s;
      if (d < 0) s = -s;
      if (d == 0) s = 0;
      l += log(fabs(d));
    }
    if (sign) sign[b] = T(s);
    if (logabs) logabs[b] = T(l);
    if (det) det[b] = T(s) * exp(T(l));  // the cpu's sign * logabs.exp(), in T
  }
}

// Calls f(Tag<float>) or f(Tag<double>).
template <typename F>
void with_lapack_type(FloatType t, const char* what, F&& f) {
  if (t == FloatType::kFloat) return f(Tag<float>{});
  if (t == FloatType::kDouble) return f(Tag<double>{});
  RT_ERROR("cuda ", what, ": float32 and float64 only");
}

}  // namespace

void launch_triangle(FloatType t, void* a, int64_t batch, int64_t rows, int64_t cols, bool lower,
                     bool unit_diagonal, StreamHandle s) {
  const int64_t total = batch * rows * cols;
  if (total == 0) return;
  with_lapack_type(t, "triangle", [&](auto type) {
    using T = typename decltype(type)::type;
    triangle_kernel<T><<<blocks_for(total), kThreads, 0, as_stream(s)>>>(
        static_cast<T*>(a), total, rows, cols, lower, unit_diagonal);
  });
  check_launch("triangle");
}

void launch_permutation(FloatType t, const int32_t* pivots, int64_t batch, int64_t m,
                        int64_t count, int64_t* perm, void* p, StreamHandle s) {
  if (batch * m == 0) return;
  with_lapack_type(t, "lu_unpack", [&](auto type) {
    using T = typename decltype(type)::type;
    const cudaError_t st =
        cudaMemsetAsync(p, 0, size_t(batch * m * m) * sizeof(T), as_stream(s));
    RT_CHECK(st == cudaSuccess, "cuda lu_unpack: cudaMemsetAsync: ", cudaGetErrorString(st));
    permutation_kernel<T><<<blocks_for(batch), kThreads, 0, as_stream(s)>>>(
        pivots, batch, m, count, perm, static_cast<T*>(p));
  });
  check_launch("lu_unpack permutation");
}

void launch_lu_det(FloatType t, const void* lu, const int32_t* pivots, int64_t batch, int64_t n,
                   void* sign, void* logabs, void* det, StreamHandle s) {
  if (batch == 0) return;
  with_lapack_type(t, "det", [&](auto type) {
    using T = typename decltype(type)::type;
    lu_det_kernel<T><<<blocks_for(batch), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(lu), pivots, batch, n, static_cast<T*>(sign),
        static_cast<T*>(logabs), static_cast<T*>(det));
  });
  check_launch("lu det");
}

}  // namespace retorch::cuda_backend
