// RT_HOST_DEVICE: a function both CUDA kernels and host code compile (empty without nvcc).
#pragma once

#if defined(__CUDACC__)
#define RT_HOST_DEVICE __host__ __device__
#else
#define RT_HOST_DEVICE
#endif
