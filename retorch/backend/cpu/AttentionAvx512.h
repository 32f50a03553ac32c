// The AVX-512 inner loops of paged attention's per-token path (AttentionAvx512.cpp, Note [Decode
// attention]); callers check cpu_isa() >= CpuIsa::kAvx512.
#pragma once
#include <cstdint>

namespace retorch::cpu {

/// out[j] = scale * (q . K_j) for the n key rows K_j = k + j * stride (elements) of length D,
/// float32 or (bf16) bfloat16. Returns false (and writes nothing) where the build has no
/// AVX-512 code.
bool attention_scores_avx512(const float* q, const void* k, bool bf16, int64_t n, int64_t stride,
                             int64_t D, float scale, float* out);

/// acc[0:D] += sum_j w[j] * V_j over the n value rows V_j = v + j * stride, float32 or bfloat16.
/// Returns false (and writes nothing) where the build has no AVX-512 code.
bool attention_accumulate_avx512(const float* w, const void* v, bool bf16, int64_t n,
                                 int64_t stride, int64_t D, float* acc);

}  // namespace retorch::cpu
