// Launchers of the CUDA backend's random kernels (CudaRandom.cu) over contiguous device memory.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

/// n uniform numbers in [from, to) from Philox counters base.. of key (Note [CUDA random
/// numbers]).
void launch_uniform(FloatType t, void* out, int64_t n, uint64_t key, uint64_t base, double from,
                    double to, StreamHandle s);
/// n normal numbers of the given mean and standard deviation, likewise.
void launch_normal(FloatType t, void* out, int64_t n, uint64_t key, uint64_t base, double mean,
                   double std, StreamHandle s);

}  // namespace retorch::cuda_backend
