// Launchers of the CUDA backend's random kernels (CudaRandom.cu) over contiguous device memory.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

enum class Distribution { kUniform, kNormal };

/// n numbers from Philox counters base.. of key (Note [CUDA random numbers]): uniform in
/// [a, b), or normal with mean a and standard deviation b.
void launch_random(Distribution d, FloatType t, void* out, int64_t n, uint64_t key,
                   uint64_t base, double a, double b, StreamHandle s);

/// random_(from, to): n integers in [from, from + range) from Philox counters base.. of key, as
/// the cpu's (Note [Scaled random bits] in backend/cpu/RandomOps.cpp), stored in type t.
void launch_random_int(NumericType t, void* out, int64_t n, uint64_t key, uint64_t base,
                       uint64_t range, int64_t from, StreamHandle s);
/// bernoulli(p): out[i] = 1 where element i's uniform number is below p[i] (n contiguous
/// elements of type t); *bad (device memory, zeroed by the caller) becomes 1 where some p[i] is
/// outside [0, 1] or NaN.
void launch_bernoulli(FloatType t, void* out, const void* p, int64_t n, uint64_t key,
                      uint64_t base, int* bad, StreamHandle s);

}  // namespace retorch::cuda_backend
