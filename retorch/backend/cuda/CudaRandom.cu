// The CUDA backend's random kernels: uniform_ and normal_ drawing the cpu kernels' Philox numbers
// (one counter per element from the same generator), so a seed gives the same tensor on both.
#include <cstdint>
#include <type_traits>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaRandom.h"
#include "retorch/core/Generator.h"

namespace retorch::cuda_backend {

// Note [CUDA random numbers]
// Element i of a draw of n numbers takes philox4x32(key, base + i), (key, base) reserved from
// the generator on the host exactly as the cpu kernels reserve them (backend/cpu/RandomOps.cpp),
// and turns the words into a number with the cpu kernels' formulas in double: uniform from 53
// random bits, normal by Box-Muller's cosine branch. The numbers are therefore independent of
// the launch configuration and equal to the cpu's up to the last bit of CUDA's double log, sqrt
// and cos (within 2 ulp of libm's) before the rounding to the tensor's dtype.

namespace {

__device__ inline double u01(uint32_t a, uint32_t b) {
  const uint64_t bits = (uint64_t(a) << 21) ^ uint64_t(b >> 11);  // 53 random bits
  return double(bits & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// Element i of the draw: uniform in [a, b), or normal with mean a and standard deviation b.
template <typename T>
__global__ void random_kernel(T* out, int64_t n, uint64_t key, uint64_t base, Distribution d,
                              double a, double b) {
  using A = acc_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const auto w = philox4x32(key, base + uint64_t(i));
    if (d == Distribution::kUniform) {
      A v = A(a + u01(w[0], w[1]) * (b - a));
      if (v >= A(b) && b > a) v = nextafter(A(b), A(a));
      store(out + i, v);
    } else {
      const double u1 = u01(w[0], w[1]), u2 = u01(w[2], w[3]);
      const double r = sqrt(-2.0 * log(1.0 - u1));
      store(out + i, A(a + b * r * cos(2.0 * 3.14159265358979323846 * u2)));
    }
  }
}

// An integer in [0, range) from 64 random bits (the cpu's scaled_bits: the high half of their
// product with range).
__device__ inline uint64_t scaled_bits(uint32_t hi, uint32_t lo, uint64_t range) {
  if (range <= (uint64_t(1) << 32))
    return (uint64_t(hi) * range + ((uint64_t(lo) * range) >> 32)) >> 32;
  return __umul64hi((uint64_t(hi) << 32) | lo, range);
}

template <typename E>
__global__ void random_int_kernel(E* out, int64_t n, uint64_t key, uint64_t base, uint64_t range,
                                  int64_t from) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const auto w = philox4x32(key, base + uint64_t(i));
    const int64_t v = int64_t(scaled_bits(w[0], w[1], range)) + from;
    if constexpr (std::is_integral_v<E>) out[i] = E(v);
    else store(out + i, acc_t<E>(v));
  }
}

template <typename T>
__global__ void bernoulli_kernel(T* out, const T* p, int64_t n, uint64_t key, uint64_t base,
                                 int* bad) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double q = double(load(p + i));
    if (!(q >= 0 && q <= 1)) *bad = 1;
    const auto w = philox4x32(key, base + uint64_t(i));
    store(out + i, acc_t<T>(u01(w[0], w[1]) < q ? 1 : 0));
  }
}

}  // namespace

void launch_random_int(NumericType t, void* out, int64_t n, uint64_t key, uint64_t base,
                       uint64_t range, int64_t from, StreamHandle s) {
  if (n == 0) return;
  auto go = [&](auto type) {
    using E = typename decltype(type)::type;
    random_int_kernel<E><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(static_cast<E*>(out), n,
                                                                        key, base, range, from);
  };
  with_numeric_type(t, go);
  check_launch("random_");
}

void launch_bernoulli(FloatType t, void* out, const void* p, int64_t n, uint64_t key,
                      uint64_t base, int* bad, StreamHandle s) {
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    bernoulli_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<T*>(out), static_cast<const T*>(p), n, key, base, bad);
  });
  check_launch("bernoulli");
}

void launch_random(Distribution d, FloatType t, void* out, int64_t n, uint64_t key,
                   uint64_t base, double a, double b, StreamHandle s) {
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    random_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(static_cast<T*>(out), n, key,
                                                                    base, d, a, b);
  });
  check_launch(d == Distribution::kUniform ? "uniform_" : "normal_");
}

}  // namespace retorch::cuda_backend
