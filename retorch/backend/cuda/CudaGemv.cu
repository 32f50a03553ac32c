// The CUDA GEMV of few-row projections over 16-bit weight rows (the LLM's decode steps): a warp
// per weight row reading 16-byte vectors, the activations rounded to the weight's type in
// registers, float32 accumulation, the bias added (Note [Few-row projections]).
#include <cstdint>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaLlm.h"

namespace retorch::cuda_backend {

// Note [Few-row projections]
// A decode step multiplies a few activation rows by each weight matrix, so it reads every weight
// once and does two flops per weight: its speed is the memory bandwidth. cuBLAS's GEMM of one
// float32-output row took ~18 µs for a 2048 x 2560 bf16 projection on the H200 (10.5 MB, 2.5 µs
// at the copy bandwidth), plus a launch to round the activations. Here each warp owns one weight
// row: its lanes read the row as 16-byte vectors (8 weights), round the matching activations of
// every row m < M (float32, read through the cache: all warps share them) to the weight's type
// as cuBLAS's input would be, and accumulate in float32; a shuffle reduction ends the row. M is
// a template parameter up to kGemvMaxRows, so the accumulators stay in registers.

namespace {

constexpr int kGemvWarps = 4;  // weight rows per block

__device__ inline void widen(uint32_t two, __nv_bfloat16, float* out) {
  out[0] = __uint_as_float(two << 16);
  out[1] = __uint_as_float(two & 0xffff0000u);
}
__device__ inline void widen(uint32_t two, __half, float* out) {
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&two));
  out[0] = f.x;
  out[1] = f.y;
}
__device__ inline float rounded(float v, __nv_bfloat16) {
  return __bfloat162float(__float2bfloat16_rn(v));
}
__device__ inline float rounded(float v, __half) { return __half2float(__float2half_rn(v)); }

template <typename W, int M>
__global__ void __launch_bounds__(32 * kGemvWarps)
    gemv_kernel(const W* __restrict__ w, const float* __restrict__ x,
                const float* __restrict__ bias, float* __restrict__ y, int64_t n, int64_t k) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kGemvWarps + (threadIdx.x >> 5);
  if (row >= n) return;
  const uint4* wr = reinterpret_cast<const uint4*>(w + row * k);
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.f;
  const int64_t chunks = k / 8;
#pragma unroll 4
  for (int64_t c = lane; c < chunks; c += 32) {
    const uint4 raw = __ldcs(wr + c);  // read once: streamed past the cache
    float wf[8];
    widen(raw.x, W(), wf);
    widen(raw.y, W(), wf + 2);
    widen(raw.z, W(), wf + 4);
    widen(raw.w, W(), wf + 6);
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

template <typename W, int M>
void launch_rows(const void* w, const float* x, const float* bias, float* y, int64_t n,
                 int64_t k, StreamHandle s) {
  const int64_t blocks = (n + kGemvWarps - 1) / kGemvWarps;
  gemv_kernel<W, M><<<unsigned(blocks), 32 * kGemvWarps, 0, as_stream(s)>>>(
      static_cast<const W*>(w), x, bias, y, n, k);
}

template <typename W>
void launch_typed(const void* w, const float* x, const float* bias, float* y, int64_t m,
                  int64_t n, int64_t k, StreamHandle s) {
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
  RT_ERROR("cuda gemv: ", m, " rows (at most ", kGemvMaxRows, ")");
}

}  // namespace

bool gemv_fits(const void* w, const float* x, int64_t m, int64_t n, int64_t k) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return m >= 1 && m <= kGemvMaxRows && k % 8 == 0 && k > 0 && n > 0 && aligned(w) &&
         aligned(x) && (n + kGemvWarps - 1) / kGemvWarps <= INT32_MAX;
}

void launch_gemv_16bit(bool bfloat16, const void* w, const float* x, const float* bias,
                       float* y, int64_t m, int64_t n, int64_t k, StreamHandle s) {
  if (bfloat16) launch_typed<__nv_bfloat16>(w, x, bias, y, m, n, k, s);
  else launch_typed<__half>(w, x, bias, y, m, n, k, s);
  check_launch("gemv");
}

}  // namespace retorch::cuda_backend
