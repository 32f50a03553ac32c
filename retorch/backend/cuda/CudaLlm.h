// Launchers of the CUDA backend's LLM kernels (CudaLlm.cu): paged attention, rotary embedding
// (alone or with the cache write), row gathers (embedding); the few-row projections, normed or
// not (CudaGemv.cu).
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaRuntime.h"

namespace retorch::cuda_backend {

constexpr int kMaxAttentionHeadDim = 256;

/// The geometry of a paged_attention call (Note [Paged attention] in backend/cpu/LlmOps.cpp).
struct AttentionShape {
  int hq = 0, hkv = 0, d = 0;
  int64_t block_size = 0, max_blocks = 0, num_blocks = 0, seqs = 0;
  int64_t window = -1;  // sliding window; <= 0: unbounded
  float scale = 1.f;
};

/// paged_attention of float32 queries [tokens, hq, d] over a float32 or bfloat16 cache into
/// float32 out (Note [CUDA paged attention]).
void launch_paged_attention(const float* q, const void* key_cache, const void* value_cache,
                            bool bfloat16_cache, const int64_t* tables, const int64_t* seqs,
                            const int64_t* positions, float* out, int64_t tokens,
                            const AttentionShape& g, StreamHandle s);
/// rotary_embedding of float32 rows [rows = tokens * heads, d] with the cos/sin cache's rows of
/// 2 * half values (Note [Rotary embedding layouts] in backend/cpu/LlmOps.cpp).
void launch_rotary(const float* in, const int64_t* positions, const float* cos_sin, float* out,
                   int64_t rows, int64_t heads, int64_t d, int64_t half, int64_t num_positions,
                   bool interleaved, StreamHandle s);
/// A rotary_and_cache call's geometry (Note [Rotary and cache write] in backend/cpu/LlmOps.cpp).
struct RotaryCacheShape {
  int64_t tokens = 0, hq = 0, hkv = 0, d = 0, half = 0;
  int64_t positions = 0;   // rows of the cos/sin cache
  int64_t cache_rows = 0;  // blocks x block_size
  bool interleaved = false;
};
/// rotary_and_cache of float32 rows qkv [tokens, (hq + 2 hkv) d] into float32 q [tokens, hq, d]
/// and a float32 or bfloat16 cache (Note [CUDA rotary and cache write]).
void launch_rotary_and_cache(const float* qkv, const int64_t* positions, const int64_t* slots,
                             const float* cos_sin, float* q, void* key_cache, void* value_cache,
                             bool bfloat16_cache, const RotaryCacheShape& g, StreamHandle s);
/// out[i] = table[index[i]] for n rows of `row` elements of element_size bytes.
void launch_gather_rows(int64_t element_size, const void* table, const int64_t* index, void* out,
                        int64_t n, int64_t row, int64_t table_rows, StreamHandle s);

/// y[m, n] = sum_k round(x[m, k]) * w[n, k] (+ bias[n]) for 16-bit weight rows w [n, k]
/// (bfloat16, else float16), float32 x [m, k] (contiguous) rounded to w's type, float32 y
/// (Note [Few-row projections] in CudaGemv.cu); gemv_fits says whether a call qualifies.
constexpr int64_t kGemvMaxRows = 32;
bool gemv_fits(const void* w, const float* x, int64_t m, int64_t n, int64_t k);
void launch_gemv_16bit(bool bfloat16, const void* w, const float* x, const float* bias,
                       float* y, int64_t m, int64_t n, int64_t k, StreamHandle s);

/// What the normed GEMV writes: the projection (rms_norm_linear), silu(gate) * up of its two
/// halves (silu_and_mul=True), or q/k/v rotated into q and the KV cache
/// (rms_norm_linear_rotary_and_cache).
enum class NormedOut { kPlain, kSwiGlu, kRotary };
/// kRotary's destination: one token's position and slot, the cos/sin table, the caches
/// [blocks, block_size, hkv, d] (float32 or bfloat16); hq query heads, the rows' q/k/v layout.
struct RotaryWrite {
  const int64_t* pos = nullptr;
  const int64_t* slots = nullptr;
  const float* cos_sin = nullptr;
  void* kc = nullptr;
  void* vc = nullptr;
  bool bfloat16_cache = false, interleaved = false;
  int64_t hq = 0, hkv = 0, d = 0, half = 0, positions = 0, cache_rows = 0;
};
/// One row's norm and projection (Note [Normed decode projections] in CudaGemv.cu): h = x (+
/// residual) [k] (written to sum_out when not null), the GEMV of round(h * rsqrt(mean(h^2) + eps)
/// * norm_weight) by n 16-bit rows w, + bias, then as `out` says into float32 y: the n values;
/// silu(gate) * up of the two halves (n / 2 values); or rotated q/k/v (y: q [hq, d]; keys and
/// values into rw's cache rows). normed_gemv_fits says whether a call qualifies.
constexpr int64_t kNormedGemvMaxK = 16384;  // the staged row's shared memory: 32 KB
bool normed_gemv_fits(const void* w, int64_t n, int64_t k);
void launch_normed_gemv_16bit(bool bfloat16, const void* w, const float* x, const float* residual,
                              const float* norm_weight, float eps, float* sum_out,
                              const float* bias, float* y, int64_t n, int64_t k, NormedOut out,
                              const RotaryWrite& rw, StreamHandle s);

}  // namespace retorch::cuda_backend
