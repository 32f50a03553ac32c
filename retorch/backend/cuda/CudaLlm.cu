// The CUDA backend's kernels for the LLM path: rotary embedding, attention over the paged KV
// cache (a block per query token and head, flash-decoding style), and row gathers (embedding).
#include <cstdint>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaLlm.h"

namespace retorch::cuda_backend {

// Note [CUDA paged attention]
// One block of four warps per (query token, head), the head's KV head being h / (Hq / Hkv).
// Each warp walks the token's keys j = lo + warp, lo + warp + 4, ... (lo from the sliding window,
// up to the token's own position: causal), finds key j in block block_tables[seq][j / BS] at row
// j % BS, and takes the dot product with its 32 lanes (lane d holds dims d, d + 32, ...) and a
// shuffle reduction; every lane then updates the warp's online softmax (running max m, sum l)
// and its own dims of the weighted sum of values. The four warps' (m, l, sums) meet in shared
// memory at the end: out = Σ_w e^{m_w - M} acc_w / Σ_w e^{m_w - M} l_w. Head dims up to 256
// (eight per lane). Indices that leave the cache or the tables stop the kernel (RT_DEVICE_CHECK,
// like PyTorch's device-side asserts) rather than syncing the host to check them before each
// launch; the host validates shapes and dtypes.

namespace {

constexpr int kWarps = 4;
constexpr int kMaxPerLane = kMaxAttentionHeadDim / 32;

template <typename C>
__global__ void paged_attention_kernel(const float* q, const C* kc, const C* vc,
                                       const int64_t* tables, const int64_t* seqs,
                                       const int64_t* poss, float* out, AttentionShape g) {
  const int64_t t = blockIdx.x / g.hq;
  const int h = int(blockIdx.x % g.hq), hkv = h / (g.hq / g.hkv);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t s = seqs[t], p = poss[t];
  RT_DEVICE_CHECK(s >= 0 && s < g.seqs, "paged_attention: query_seq");
  RT_DEVICE_CHECK(p >= 0 && p / g.block_size < g.max_blocks, "paged_attention: query_pos");
  const int64_t lo = g.window > 0 ? (p - g.window + 1 > 0 ? p - g.window + 1 : 0) : 0;
  const float* qr = q + (t * g.hq + h) * g.d;
  float qv[kMaxPerLane], acc[kMaxPerLane];
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int d = lane + 32 * i;
    qv[i] = d < g.d ? qr[d] * g.scale : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int64_t j = lo + warp; j <= p; j += kWarps) {
    const int64_t blk = tables[s * g.max_blocks + j / g.block_size];
    RT_DEVICE_CHECK(blk >= 0 && blk < g.num_blocks, "paged_attention: a block_tables entry");
    const int64_t row = ((blk * g.block_size + j % g.block_size) * g.hkv + hkv) * g.d;
    float dot = 0.f;
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < g.d) dot += qv[i] * load(kc + row + d);
    }
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    const float m2 = fmaxf(m, dot), carry = expf(m - m2), w = expf(dot - m2);
    l = l * carry + w;
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < g.d) acc[i] = acc[i] * carry + w * load(vc + row + d);
    }
    m = m2;
  }
  __shared__ float sm[kWarps], sl[kWarps], sacc[kWarps][kMaxAttentionHeadDim];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < g.d) sacc[warp][d] = acc[i];
  }
  __syncthreads();
  float big = -INFINITY;
  for (int w = 0; w < kWarps; ++w) big = fmaxf(big, sm[w]);
  float total = 0.f;
  for (int w = 0; w < kWarps; ++w) total += sm[w] == -INFINITY ? 0.f : sl[w] * expf(sm[w] - big);
  for (int d = threadIdx.x; d < g.d; d += blockDim.x) {
    float v = 0.f;
    for (int w = 0; w < kWarps; ++w)
      if (sm[w] != -INFINITY) v += sacc[w][d] * expf(sm[w] - big);
    out[(t * g.hq + h) * g.d + d] = v / total;
  }
}

__global__ void rotary_kernel(const float* in, const int64_t* pos, const float* cos_sin,
                              float* out, int64_t rows, int64_t heads, int64_t d, int64_t half,
                              int64_t positions, bool interleaved) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * d;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, k = i - r * d;
    const int64_t p = pos[r / heads];
    RT_DEVICE_CHECK(p >= 0 && p < positions, "rotary_embedding: a position");
    const float* x = in + r * d;
    float v = x[k];
    if (k < 2 * half) {
      // The pair (k, partner) rotates by angle i of the cache row: cos in [0, half), sin after.
      const int64_t pair = interleaved ? k / 2 : (k < half ? k : k - half);
      const bool first = interleaved ? k % 2 == 0 : k < half;
      const float c = cos_sin[p * 2 * half + pair], s = cos_sin[p * 2 * half + half + pair];
      const float other = interleaved ? x[first ? k + 1 : k - 1] : x[first ? k + half : k - half];
      v = first ? v * c - other * s : v * c + other * s;
    }
    out[i] = v;
  }
}

// out[i] = table[index[i]] for rows of `row` elements (bytes moved as E).
template <typename E>
__global__ void gather_rows_kernel(const E* table, const int64_t* index, E* out, int64_t n,
                                   int64_t row, int64_t table_rows) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * row;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / row, e = i - r * row, src = index[r];
    RT_DEVICE_CHECK(src >= 0 && src < table_rows, "embedding: an index");
    out[i] = table[src * row + e];
  }
}

}  // namespace

void launch_paged_attention(const float* q, const void* key_cache, const void* value_cache,
                            bool bfloat16_cache, const int64_t* tables, const int64_t* seqs,
                            const int64_t* positions, float* out, int64_t tokens,
                            const AttentionShape& g, StreamHandle s) {
  const int64_t blocks = tokens * g.hq;
  if (blocks == 0) return;
  RT_CHECK_VALUE(blocks <= INT32_MAX && g.d <= kMaxAttentionHeadDim,
                 "cuda paged_attention: ", tokens, " tokens x ", g.hq, " heads of ", g.d,
                 " dims (at most 2^31 - 1 blocks and ", kMaxAttentionHeadDim, " dims)");
  auto go = [&](auto tag) {
    using C = decltype(tag);
    paged_attention_kernel<C><<<unsigned(blocks), 32 * kWarps, 0, as_stream(s)>>>(
        q, static_cast<const C*>(key_cache), static_cast<const C*>(value_cache), tables, seqs,
        positions, out, g);
  };
  if (bfloat16_cache) go(__nv_bfloat16{});
  else go(float{});
  check_launch("paged_attention");
}

void launch_rotary(const float* in, const int64_t* positions, const float* cos_sin, float* out,
                   int64_t rows, int64_t heads, int64_t d, int64_t half, int64_t num_positions,
                   bool interleaved, StreamHandle s) {
  if (rows * d == 0) return;
  rotary_kernel<<<blocks_for(rows * d), kThreads, 0, as_stream(s)>>>(
      in, positions, cos_sin, out, rows, heads, d, half, num_positions, interleaved);
  check_launch("rotary_embedding");
}

void launch_gather_rows(int64_t element_size, const void* table, const int64_t* index, void* out,
                        int64_t n, int64_t row, int64_t table_rows, StreamHandle s) {
  if (n * row == 0) return;
  with_element_size(element_size, "embedding", [&](auto tag) {
    using E = typename decltype(tag)::type;
    gather_rows_kernel<E><<<blocks_for(n * row), kThreads, 0, as_stream(s)>>>(
        static_cast<const E*>(table), index, static_cast<E*>(out), n, row, table_rows);
  });
  check_launch("gather_rows");
}

}  // namespace retorch::cuda_backend
