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

}  // namespace retorch::cuda_backend
