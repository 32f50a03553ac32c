// The CUDA GEMV of few-row projections over 16-bit weight rows (the LLM's decode steps): warps
// reading the weights once as 16-byte vectors, FMAs or tensor cores, the activations rounded to
// the weight's type in registers, float32 accumulation, the bias added (Note [Few-row
// projections]); one row's RMSNorm before it and SiLU-and-mul after it fused in (Note [Normed
// decode projections]).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaLlm.h"
#include "retorch/backend/cuda/CudaNormedGemv.cuh"

namespace retorch::cuda_backend {

// Note [Few-row projections]
// A decode step multiplies a few activation rows by each weight matrix, so it reads every weight
// once and does two flops per weight per row: up to a few dozen rows its speed is the memory
// bandwidth. cuBLAS's GEMM of one float32-output row took ~18 µs for a 2048 x 2560 bf16
// projection on the H200 (10.5 MB, 2.5 µs at the copy bandwidth), plus a launch to round the
// activations, and 72 µs for 8 rows of [11264, 2048] against torch's 14. Here, for one row (and
// up to kFmaMaxRows where the tensor cores' shapes do not fit), each warp owns one weight row:
// its lanes read the row as 16-byte vectors (8 weights), round the matching activations of every
// row m < M (float32, read through the cache: all warps share them) to the weight's type as
// cuBLAS's input would be, and accumulate in float32; a shuffle reduction ends the row. M is a
// template parameter, so the accumulators stay in registers. Past one row those float32 FMAs per
// weight grow with M (54 µs for 8 rows), so for 2 to kGemvMaxRows rows, where K is a multiple of
// 32 and N of 16, the tensor cores do the arithmetic instead: a warp owns 16 weight rows (a
// tile; two tiles past 8 rows where N is a multiple of 32, so that a block's activation reads
// serve twice the weights) and a slice of K, and one mma.m16n8k16 (bf16 or f16 in, f32
// accumulate) takes 16 rows x 16 k of weights and a group of 8 activation rows, zero-padded. Its
// lanes load 16-byte vectors (8 consecutive k of a row) and feed them to two mmas per group:
// the sum over k does not care which k sits in which of the instruction's k slots, so the
// weights and the activations just use the same assignment (lane t's slots 2t, 2t+1, 2t+8, 2t+9
// of mma j hold k = 8t + 4j + 0..3) and no shuffle is needed. The 8 warps of a block split K and
// add their tiles through shared memory.

namespace {

constexpr int kGemvWarps = 4;  // weight rows per block
constexpr int kFmaMaxRows = 8;  // activation rows the FMA kernel takes (its accumulators)

__device__ inline void widen(uint32_t two, __nv_bfloat16, float* out) {
  out[0] = __uint_as_float(two << 16);
  out[1] = __uint_as_float(two & 0xffff0000u);
}
__device__ inline void widen(uint32_t two, __half, float* out) {
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&two));
  out[0] = f.x;
  out[1] = f.y;
}
// Eight 16-bit values (a 16-byte vector) as floats.
template <typename W>
__device__ inline void widen8(uint4 raw, float* out) {
  widen(raw.x, W(), out);
  widen(raw.y, W(), out + 2);
  widen(raw.z, W(), out + 4);
  widen(raw.w, W(), out + 6);
}
__device__ inline float rounded(float v, __nv_bfloat16) {
  return __bfloat162float(__float2bfloat16_rn(v));
}
__device__ inline float rounded(float v, __half) { return __half2float(__float2half_rn(v)); }

// The weight rows [first, first + rows) of k 16-bit values each, asked of L2 by `threads` threads
// (the thread's index: t), before the kernel waits for the one before it (Note [Dependent
// launches]).
__device__ inline void prefetch_rows(const void* w, int64_t first, int64_t rows, int64_t k,
                                     int t, int threads) {
  prefetch_bytes(static_cast<const char*>(w) + first * k * 2, rows * k * 2, t, threads);
}

template <typename W, int M>
__global__ void __launch_bounds__(32 * kGemvWarps)
    gemv_kernel(const W* __restrict__ w, const float* __restrict__ x,
                const float* __restrict__ bias, float* __restrict__ y, int64_t n, int64_t k) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kGemvWarps + (threadIdx.x >> 5);
  if (row < n) prefetch_rows(w, row, 1, k, lane, 32);
  wait_for_previous_kernel();
  let_next_kernel_start();
  if (row >= n) return;
  const uint4* wr = reinterpret_cast<const uint4*>(w + row * k);
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.f;
  const int64_t chunks = k / 8;
#pragma unroll 4
  for (int64_t c = lane; c < chunks; c += 32) {
    float wf[8];
    widen8<W>(__ldcs(wr + c), wf);  // read once: streamed past the cache
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const float4* xp = reinterpret_cast<const float4*>(x + m * k + c * 8);
      const float4 a = __ldg(xp), b = __ldg(xp + 1);
      const float xs[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[m] = fmaf(rounded(xs[i], W()), wf[i], acc[m]);
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
    float v = acc[m];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) y[m * n + row] = v + (bias != nullptr ? bias[row] : 0.f);
  }
}

// Note [Normed decode projections]
// At batch 1 a decode layer ran its RMSNorm (with the residual add) as one kernel, the q/k/v or
// gate/up projection after it as a second, and SiLU-and-mul as a third: each a launch and a tail
// for kilobytes of work. rms_norm_linear of one row does them in one kernel: every block sums
// the row's squares itself (2 K floats read through L2, as many times as there are blocks: a
// fixed grid of a few blocks per SM, each looping over weight rows, keeps that to a few hundred
// reads), stages the normalized row in shared memory already rounded to the weight's type (what
// the GEMV's registers held), and its warps then take weight rows as gemv_kernel does, with the
// same lane order and shuffle, so the sums are the unfused kernels' but for the norm's scale
// (its own sum of squares, in another order). Block 0 also writes the residual sum. With
// silu_and_mul a warp takes gate row j and up row j + n together and writes
// silu(gate + bias) * (up + bias), the formula of silu_and_mul's kernel. For the q/k/v projection
// (rms_norm_linear_rotary_and_cache) a warp takes the two dims of a head that rotate together
// (Note [Rotary embedding layouts]) and writes them rotated as rotary_and_cache's kernel does:
// query heads into q, key heads (rotated) and value heads (as they are) into the token's cache
// rows; so a decode layer's attention half is this kernel, attention and the output projection.
// The kernel (CudaNormedGemv.cuh) takes any kind of weight rows: HalfRows below for 16-bit rows,
// QuantRows (CudaQuant.cu) for GGUF block rows, whose row is staged as float32.

__device__ inline __nv_bfloat16 narrow(float v, __nv_bfloat16) { return __float2bfloat16_rn(v); }
__device__ inline __half narrow(float v, __half) { return __float2half_rn(v); }

// 16-bit weight rows for normed_gemv_kernel: the normalized row staged rounded to W (what the
// one-row GEMV's registers held), a lane's dot product over 16-byte vectors in the GEMV's lane
// order, two rows' in one loop.
template <typename W>
struct HalfRows {
  using Staged = W;
  const W* w;
  int64_t k;
  __device__ static W stage(float v) { return narrow(v, W()); }
  __device__ void prefetch(int64_t row, int lane) const { prefetch_rows(w, row, 1, k, lane, 32); }
  template <bool kPairs>
  __device__ void dot(int64_t r1, int64_t r2, const uint4* staged, int lane, float* a_out,
                      float* b_out) const {
    const uint4* wa = reinterpret_cast<const uint4*>(w + r1 * k);
    const uint4* wb = reinterpret_cast<const uint4*>(w + r2 * k);
    const int64_t chunks = k / 8;
    float a = 0.f, b = 0.f;
#pragma unroll 4
    for (int64_t c = lane; c < chunks; c += 32) {
      float xf[8], wf[8];
      widen8<W>(staged[c], xf);
      widen8<W>(__ldcs(wa + c), wf);
#pragma unroll
      for (int e = 0; e < 8; ++e) a = fmaf(xf[e], wf[e], a);
      if (kPairs) {
        widen8<W>(__ldcs(wb + c), wf);
#pragma unroll
        for (int e = 0; e < 8; ++e) b = fmaf(xf[e], wf[e], b);
      }
    }
    *a_out = a;
    *b_out = b;
  }
};

// Two weights (k, k + 1) as the mma's operand register: the loaded word as it is; two float32
// activations rounded to W and packed (the lower k in the low half).
__device__ inline uint32_t packed(float a, float b, __nv_bfloat16) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ inline uint32_t packed(float a, float b, __half) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// d += A (16 x 16, row) * B (16 x 8, col), float32 accumulation.
__device__ inline void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                           __nv_bfloat16) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ inline void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], __half) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

constexpr int kMmaWarps = 8;  // warps splitting K for one block's weight rows

// kRowTiles tiles of 16 weight rows per block times kGroups groups of 8 activation rows (m <=
// 8 kGroups): each weight vector a lane loads feeds one mma per group, and the activations a
// block reads serve all its tiles.
template <typename W, int kGroups, int kRowTiles>
__global__ void __launch_bounds__(32 * kMmaWarps)
    gemv_mma_kernel(const W* __restrict__ w, const float* __restrict__ x,
                    const float* __restrict__ bias, float* __restrict__ y, int m, int64_t n,
                    int64_t k) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;  // the mma's group and thread in group
  const int64_t n0 = int64_t(blockIdx.x) * 16 * kRowTiles;
  prefetch_rows(w, n0, 16 * kRowTiles, k, threadIdx.x, blockDim.x);
  wait_for_previous_kernel();
  let_next_kernel_start();
  float d[kRowTiles][kGroups][4];
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
    for (int q = 0; q < kGroups; ++q)
#pragma unroll
      for (int i = 0; i < 4; ++i) d[r][q][i] = 0.f;
  const int64_t chunks = k / 32;  // 32 k per chunk: 8 per lane of a group of 4
#pragma unroll 2
  for (int64_t c = warp; c < chunks; c += kMmaWarps) {
    uint32_t a[kRowTiles][2][4];
#pragma unroll
    for (int r = 0; r < kRowTiles; ++r) {
      const int64_t lo_row = n0 + 16 * r + g;
      const uint4 lo = __ldcs(reinterpret_cast<const uint4*>(w + lo_row * k) + c * 4 + t);
      const uint4 hi = __ldcs(reinterpret_cast<const uint4*>(w + (lo_row + 8) * k) + c * 4 + t);
      a[r][0][0] = lo.x, a[r][0][1] = hi.x, a[r][0][2] = lo.y, a[r][0][3] = hi.y;
      a[r][1][0] = lo.z, a[r][1][1] = hi.z, a[r][1][2] = lo.w, a[r][1][3] = hi.w;
    }
#pragma unroll
    for (int q = 0; q < kGroups; ++q) {
      const int xrow = 8 * q + g;
      float xs[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
      if (xrow < m) {
        const float4* xp = reinterpret_cast<const float4*>(x + int64_t(xrow) * k + c * 32 + t * 8);
        const float4 p = __ldg(xp), u = __ldg(xp + 1);
        xs[0] = p.x, xs[1] = p.y, xs[2] = p.z, xs[3] = p.w;
        xs[4] = u.x, xs[5] = u.y, xs[6] = u.z, xs[7] = u.w;
      }
      const uint32_t b0[2] = {packed(xs[0], xs[1], W()), packed(xs[2], xs[3], W())};
      const uint32_t b1[2] = {packed(xs[4], xs[5], W()), packed(xs[6], xs[7], W())};
#pragma unroll
      for (int r = 0; r < kRowTiles; ++r) {
        mma(d[r][q], a[r][0], b0, W());
        mma(d[r][q], a[r][1], b1, W());
      }
    }
  }
  constexpr int kPerLane = 4 * kGroups * kRowTiles;
  __shared__ float tiles[kMmaWarps][32][kPerLane];
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
    for (int q = 0; q < kGroups; ++q)
#pragma unroll
      for (int i = 0; i < 4; ++i) tiles[warp][lane][(r * kGroups + q) * 4 + i] = d[r][q][i];
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
    for (int q = 0; q < kGroups; ++q)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float v = d[r][q][i];
        for (int u = 1; u < kMmaWarps; ++u) v += tiles[u][lane][(r * kGroups + q) * 4 + i];
        // v: weight row n0 + 16 r + g (+ 8 for i >= 2), activation row 8 q + 2 t (+ 1 if i odd)
        const int64_t row = n0 + 16 * r + g + (i >= 2 ? 8 : 0);
        const int col = 8 * q + 2 * t + (i & 1);
        if (col < m) y[int64_t(col) * n + row] = v + (bias != nullptr ? bias[row] : 0.f);
      }
}

template <typename W, int M>
void launch_rows(const void* w, const float* x, const float* bias, float* y, int64_t n,
                 int64_t k, StreamHandle s) {
  const int64_t blocks = (n + kGemvWarps - 1) / kGemvWarps;
  launch_dependent(gemv_kernel<W, M>, dim3(unsigned(blocks)), dim3(32 * kGemvWarps), 0, s,
                   static_cast<const W*>(w), x, bias, y, n, k);
}

template <typename W>
void launch_typed(const void* w, const float* x, const float* bias, float* y, int64_t m,
                  int64_t n, int64_t k, StreamHandle s) {
  if (m > 1 && k % 32 == 0 && n % 16 == 0) {  // the tensor cores' path (one row: FMAs suffice)
    auto mma_rows = [&](auto groups, auto tiles) {
      constexpr int kGroups = decltype(groups)::value, kTiles = decltype(tiles)::value;
      launch_dependent(gemv_mma_kernel<W, kGroups, kTiles>, dim3(unsigned(n / (16 * kTiles))),
                       dim3(32 * kMmaWarps), 0, s, static_cast<const W*>(w), x, bias, y, int(m),
                       n, k);
    };
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    // Past 8 rows a block takes 32 weight rows where N allows, halving the activation reads.
    const bool two = n % 32 == 0;
    switch ((m + 7) / 8) {
      case 1: return mma_rows(One{}, One{});
      case 2: return two ? mma_rows(Two{}, Two{}) : mma_rows(Two{}, One{});
      case 3: {
        using Three = std::integral_constant<int, 3>;
        return two ? mma_rows(Three{}, Two{}) : mma_rows(Three{}, One{});
      }
      case 4: {
        using Four = std::integral_constant<int, 4>;
        return two ? mma_rows(Four{}, Two{}) : mma_rows(Four{}, One{});
      }
    }
    RT_ERROR("cuda gemv: ", m, " rows (at most ", kGemvMaxRows, ")");
  }
  switch (m) {
    case 1: return launch_rows<W, 1>(w, x, bias, y, n, k, s);
    case 2: return launch_rows<W, 2>(w, x, bias, y, n, k, s);
    case 3: return launch_rows<W, 3>(w, x, bias, y, n, k, s);
    case 4: return launch_rows<W, 4>(w, x, bias, y, n, k, s);
    case 5: return launch_rows<W, 5>(w, x, bias, y, n, k, s);
    case 6: return launch_rows<W, 6>(w, x, bias, y, n, k, s);
    case 7: return launch_rows<W, 7>(w, x, bias, y, n, k, s);
    case 8: return launch_rows<W, 8>(w, x, bias, y, n, k, s);
  }
  RT_ERROR("cuda gemv: ", m, " rows (at most ", kFmaMaxRows, " without tensor cores)");
}

}  // namespace

bool gemv_fits(const void* w, const float* x, int64_t m, int64_t n, int64_t k) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  // Up to 8 rows: either kernel; 9 to kGemvMaxRows: the tensor cores' only.
  const bool rows_fit = m >= 1 && (m <= kFmaMaxRows || (m <= kGemvMaxRows && k % 32 == 0 &&
                                                        n % 16 == 0));
  return rows_fit && k % 8 == 0 && k > 0 && n > 0 && aligned(w) && aligned(x) &&
         (n + kGemvWarps - 1) / kGemvWarps <= INT32_MAX;
}

void launch_gemv_16bit(bool bfloat16, const void* w, const float* x, const float* bias,
                       float* y, int64_t m, int64_t n, int64_t k, StreamHandle s) {
  if (bfloat16) launch_typed<__nv_bfloat16>(w, x, bias, y, m, n, k, s);
  else launch_typed<__half>(w, x, bias, y, m, n, k, s);
  check_launch("gemv");
}

bool normed_gemv_fits(const void* w, int64_t n, int64_t k) {
  return k > 0 && k % 8 == 0 && k <= kNormedGemvMaxK && n > 0 &&
         reinterpret_cast<uintptr_t>(w) % 16 == 0;
}

void launch_normed_gemv_16bit(bool bfloat16, const void* w, const float* x, const float* residual,
                              const float* norm_weight, float eps, float* sum_out,
                              const float* bias, float* y, int64_t n, int64_t k, NormedOut out,
                              const RotaryWrite& rw, StreamHandle s) {
  if (bfloat16)
    launch_normed_rows(HalfRows<__nv_bfloat16>{static_cast<const __nv_bfloat16*>(w), k}, x,
                       residual, norm_weight, eps, sum_out, bias, y, n, k, out, rw, s);
  else
    launch_normed_rows(HalfRows<__half>{static_cast<const __half*>(w), k}, x, residual,
                       norm_weight, eps, sum_out, bias, y, n, k, out, rw, s);
  check_launch("rms_norm_linear");
}

}  // namespace retorch::cuda_backend
