// The AVX-512 kernels of the 2x2, stride-2 max pool on one float NCHW plane, forward and
// backward (PoolAvx512.cpp, Note [2x2 max pool]); callers check cpu_isa() >= CpuIsa::kAvx512.
#pragma once
#include <cstdint>

namespace retorch::cpu {

/// y[oy*ow + ox] = the max of the 2x2 window at (2oy, 2ox) of the W-wide plane x, ind its flat
/// index (first maximum in scan order; a NaN wins, the last one). Needs 2*oh <= H, 2*ow <= W.
/// Returns false (and writes nothing) where the build has no AVX-512 code.
bool max_pool_2x2_avx512(const float* x, int64_t W, int64_t oh, int64_t ow, float* y,
                         int64_t* ind);

/// gi (H x W) = the scatter of go (oh x ow) to the indices ind, when every index lies in its own
/// 2x2 window (2*oh <= H, 2*ow <= W). Returns false, having written part of gi, when one does not
/// (or without AVX-512 code): the caller then scatters the plane itself.
bool max_pool_2x2_backward_avx512(const float* go, const int64_t* ind, int64_t H, int64_t W,
                                  int64_t oh, int64_t ow, float* gi);

}  // namespace retorch::cpu
