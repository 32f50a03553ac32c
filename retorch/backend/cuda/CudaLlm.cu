// The CUDA backend's kernels for the LLM path: rotary embedding (alone or with the KV cache
// write), attention over the paged KV cache, and row gathers (embedding).
#include <cstdint>
#include <type_traits>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaLlm.h"

namespace retorch::cuda_backend {

// Note [CUDA paged attention]
// One block of kTile = 256 threads per (query token, head), the head's KV head being
// h / (Hq / Hkv). The token's keys j = lo .. p (lo from the sliding window, p its own position:
// causal) go by in tiles of 256, one key per thread: thread j finds its key in block
// block_tables[seq][j / BS] at row j % BS and scores it against the scaled query in shared
// memory (16-byte loads of the key row when the head dim allows). The block's max and sum of
// the tile update the running softmax (max m, sum l, every thread holding the same copy), then
// each warp adds its eighth of the tile's weighted value rows into its lanes' dims (pairs of
// dims per lane with aligned rows; eight rows' loads in flight), rescaled by e^{m_old - m}; the
// eight warps' sums meet in shared memory at the end: out = Σ_w acc_w / l. A decode step of up
// to 256 keys is one round of independent loads, where a warp walking its keys one by one
// waited on two dependent loads per key. Head dims up to 256. Indices that leave the cache or the tables stop the kernel
// (RT_DEVICE_CHECK, like PyTorch's device-side asserts) rather than syncing the host to check
// them before each launch; the host validates shapes and dtypes.

namespace {

constexpr int kTile = 256;  // keys per round: one per thread while scoring
constexpr int kWarps = kTile / 32;
constexpr int kMaxPerLane = kMaxAttentionHeadDim / 32;

// Two consecutive elements as floats (8-byte aligned for float, 4 for bfloat16).
__device__ inline float2 load2(const float* p) { return *reinterpret_cast<const float2*>(p); }
__device__ inline float2 load2(const __nv_bfloat16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}

// The dot product of the shared query qs with key row k of d elements; kVec: d % 8 == 0 and k
// 16-byte aligned, so the row comes in 16-byte loads.
template <bool kVec>
__device__ inline float dot_row(const float* qs, const float* k, int d) {
  float s = 0.f;
  if (kVec) {
    for (int i = 0; i < d; i += 4) {
      const float4 a = *reinterpret_cast<const float4*>(k + i);
      const float4 b = *reinterpret_cast<const float4*>(qs + i);
      s += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
  } else {
    for (int i = 0; i < d; ++i) s += qs[i] * k[i];
  }
  return s;
}
template <bool kVec>
__device__ inline float dot_row(const float* qs, const __nv_bfloat16* k, int d) {
  float s = 0.f;
  if (kVec) {
    for (int i = 0; i < d; i += 8) {
      const uint4 u = *reinterpret_cast<const uint4*>(k + i);
      const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int e = 0; e < 4; ++e)  // a bfloat16 is the top half of its float
        s += qs[i + 2 * e] * __uint_as_float(w[e] << 16) +
             qs[i + 2 * e + 1] * __uint_as_float(w[e] & 0xffff0000u);
    }
  } else {
    for (int i = 0; i < d; ++i) s += qs[i] * __bfloat162float(k[i]);
  }
  return s;
}

template <typename C, bool kVec>
__global__ void __launch_bounds__(kTile)
    paged_attention_kernel(const float* q, const C* kc, const C* vc, const int64_t* tables,
                           const int64_t* seqs, const int64_t* poss, float* out,
                           AttentionShape g) {
  let_next_kernel_start();  // the output projection's GEMV may fetch its weights meanwhile
  const int64_t t = blockIdx.x / g.hq;
  const int h = int(blockIdx.x % g.hq), hkv = h / (g.hq / g.hkv);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t s = seqs[t], p = poss[t];
  RT_DEVICE_CHECK(s >= 0 && s < g.seqs, "paged_attention: query_seq");
  RT_DEVICE_CHECK(p >= 0 && p / g.block_size < g.max_blocks, "paged_attention: query_pos");
  const int64_t lo = g.window > 0 ? (p - g.window + 1 > 0 ? p - g.window + 1 : 0) : 0;
  __shared__ __align__(16) float qs[kMaxAttentionHeadDim];
  __shared__ float ws[kTile], red_max[kWarps], red_sum[kWarps];
  __shared__ int64_t rows[kTile];
  __shared__ float part[kWarps][kMaxAttentionHeadDim];
  const float* qr = q + (t * g.hq + h) * g.d;
  for (int i = tid; i < g.d; i += kTile) qs[i] = qr[i] * g.scale;
  // Lane dims: pairs (2 lane + 64 i, + 1) with aligned rows, else single dims lane + 32 i.
  constexpr int kPer = kVec ? 2 : 1;
  float acc[kMaxPerLane];
  for (int i = 0; i < kMaxPerLane; ++i) acc[i] = 0.f;
  float m = -INFINITY, l = 0.f;
  for (int64_t j0 = lo; j0 <= p; j0 += kTile) {
    __syncthreads();  // qs is written; the last round's ws and rows are read
    const int64_t j = j0 + tid;
    float score = -INFINITY;
    if (j <= p) {
      const int64_t blk = tables[s * g.max_blocks + j / g.block_size];
      RT_DEVICE_CHECK(blk >= 0 && blk < g.num_blocks, "paged_attention: a block_tables entry");
      const int64_t row = ((blk * g.block_size + j % g.block_size) * g.hkv + hkv) * g.d;
      rows[tid] = row;
      score = dot_row<kVec>(qs, kc + row, g.d);
    }
    float x = score;
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    if (lane == 0) red_max[warp] = x;
    __syncthreads();
    float m2 = m;
    for (int w = 0; w < kWarps; ++w) m2 = fmaxf(m2, red_max[w]);  // finite: key j0 is valid
    const float carry = expf(m - m2), e = j <= p ? expf(score - m2) : 0.f;
    ws[tid] = e;
    x = e;
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    if (lane == 0) red_sum[warp] = x;
    __syncthreads();
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) sum += red_sum[w];
    l = l * carry + sum;
    m = m2;
    for (int i = 0; i < kMaxPerLane; ++i) acc[i] *= carry;
    const int keys = int(p - j0 + 1 < kTile ? p - j0 + 1 : kTile);
#pragma unroll 8
    for (int k = warp; k < keys; k += kWarps) {
      const float wk = ws[k];
      const C* v = vc + rows[k];
      if (kVec) {
        for (int i = 0; i < kMaxPerLane / 2; ++i) {
          const int d = 2 * lane + 64 * i;
          if (d < g.d) {
            const float2 f = load2(v + d);
            acc[2 * i] += wk * f.x;
            acc[2 * i + 1] += wk * f.y;
          }
        }
      } else {
        for (int i = 0; i < kMaxPerLane; ++i) {
          const int d = lane + 32 * i;
          if (d < g.d) acc[i] += wk * load(v + d);
        }
      }
    }
  }
  for (int i = 0; i < kMaxPerLane / kPer; ++i) {
    const int d = kPer * lane + 32 * kPer * i;
    for (int e = 0; e < kPer; ++e)
      if (d + e < g.d) part[warp][d + e] = acc[kPer * i + e];
  }
  __syncthreads();
  for (int d = tid; d < g.d; d += kTile) {
    float v = 0.f;
    for (int w = 0; w < kWarps; ++w) v += part[w][d];
    out[(t * g.hq + h) * g.d + d] = v / l;
  }
}

// Dim k of head row x rotated by the cos/sin cache row cs (cos in [0, half), sin after): the
// pair (k, partner) turns by angle `pair` of the row; dims past 2 * half pass through.
__device__ inline float rotated(const float* x, int64_t k, const float* cs, int64_t half,
                                bool interleaved) {
  const float v = x[k];
  if (k >= 2 * half) return v;
  const int64_t pair = interleaved ? k / 2 : (k < half ? k : k - half);
  const bool first = interleaved ? k % 2 == 0 : k < half;
  const float c = cs[pair], s = cs[half + pair];
  const float other = interleaved ? x[first ? k + 1 : k - 1] : x[first ? k + half : k - half];
  return first ? v * c - other * s : v * c + other * s;
}

__global__ void rotary_kernel(const float* in, const int64_t* pos, const float* cos_sin,
                              float* out, int64_t rows, int64_t heads, int64_t d, int64_t half,
                              int64_t positions, bool interleaved) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * d;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, k = i - r * d;
    const int64_t p = pos[r / heads];
    RT_DEVICE_CHECK(p >= 0 && p < positions, "rotary_embedding: a position");
    out[i] = rotated(in + r * d, k, cos_sin + p * 2 * half, half, interleaved);
  }
}

// Note [CUDA rotary and cache write]
// One thread per element of qkv's rows (Note [Rotary and cache write] in backend/cpu/LlmOps.cpp):
// query heads rotate into q, key heads rotate into their cache row, value heads are copied to
// theirs; the cache stores round to nearest even as index_put_ of a converted tensor does.
template <typename C>
__global__ void rotary_and_cache_kernel(const float* qkv, const int64_t* pos,
                                        const int64_t* slots, const float* cos_sin, float* q,
                                        C* kc, C* vc, RotaryCacheShape g) {
  const int64_t width = (g.hq + 2 * g.hkv) * g.d;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < g.tokens * width;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / width, e = i - t * width, h = e / g.d, k = e - h * g.d;
    const float* x = qkv + t * width + h * g.d;
    if (h >= g.hq + g.hkv) {  // a value head
      const int64_t slot = slots[t];
      RT_DEVICE_CHECK(slot >= 0 && slot < g.cache_rows, "rotary_and_cache: a slot");
      store(vc + (slot * g.hkv + h - g.hq - g.hkv) * g.d + k, x[k]);
      continue;
    }
    const int64_t p = pos[t];
    RT_DEVICE_CHECK(p >= 0 && p < g.positions, "rotary_and_cache: a position");
    const float v = rotated(x, k, cos_sin + p * 2 * g.half, g.half, g.interleaved);
    if (h < g.hq) {
      q[(t * g.hq + h) * g.d + k] = v;
    } else {
      const int64_t slot = slots[t];
      RT_DEVICE_CHECK(slot >= 0 && slot < g.cache_rows, "rotary_and_cache: a slot");
      store(kc + (slot * g.hkv + h - g.hq) * g.d + k, v);
    }
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
  // 16-byte key loads and paired value loads need rows (multiples of d) on 16-byte boundaries.
  const bool vec = g.d % 8 == 0 && reinterpret_cast<uintptr_t>(key_cache) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(value_cache) % 16 == 0;
  auto go = [&](auto tag, auto vec_tag) {
    using C = decltype(tag);
    paged_attention_kernel<C, decltype(vec_tag)::value>
        <<<unsigned(blocks), kTile, 0, as_stream(s)>>>(
            q, static_cast<const C*>(key_cache), static_cast<const C*>(value_cache), tables,
            seqs, positions, out, g);
  };
  using Vec = std::true_type;
  using Scalar = std::false_type;
  if (bfloat16_cache) vec ? go(__nv_bfloat16{}, Vec{}) : go(__nv_bfloat16{}, Scalar{});
  else vec ? go(float{}, Vec{}) : go(float{}, Scalar{});
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

void launch_rotary_and_cache(const float* qkv, const int64_t* positions, const int64_t* slots,
                             const float* cos_sin, float* q, void* key_cache, void* value_cache,
                             bool bfloat16_cache, const RotaryCacheShape& g, StreamHandle s) {
  const int64_t n = g.tokens * (g.hq + 2 * g.hkv) * g.d;
  if (n == 0) return;
  auto go = [&](auto tag) {
    using C = decltype(tag);
    rotary_and_cache_kernel<C><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        qkv, positions, slots, cos_sin, q, static_cast<C*>(key_cache),
        static_cast<C*>(value_cache), g);
  };
  if (bfloat16_cache) go(__nv_bfloat16{});
  else go(float{});
  check_launch("rotary_and_cache");
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
