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

/// The largest head_dim attention_scores_group_avx512 takes (its transposed block is on the
/// stack).
constexpr int64_t kGroupScoresMaxDim = 256;

/// out[g * ldo + j] = scale * (q[g * D ..] . key row j) for the G query heads g < G (rows of q)
/// sharing the n key rows at k (`stride` elements apart), 16 keys transposed at a time (Note
/// [Grouped decode scores]); false (nothing written) without AVX-512 or for D > 256.
bool attention_scores_group_avx512(const float* q, int64_t G, const void* k, bool bf16, int64_t n,
                                   int64_t stride, int64_t D, float scale, float* out,
                                   int64_t ldo);

}  // namespace retorch::cpu
