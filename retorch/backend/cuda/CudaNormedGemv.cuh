// The kernel of Note [Normed decode projections] (CudaGemv.cu) over any kind of weight rows:
// a Rows type says how the normalized row is staged and how a warp takes its dot products with
// one weight row or two (16-bit rows in CudaGemv.cu, GGUF block rows in CudaQuant.cu).
#pragma once
#include <algorithm>
#include <cstdint>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaGeometry.h"
#include "retorch/backend/cuda/CudaLlm.h"

namespace retorch::cuda_backend {
namespace {

constexpr int kNormWarps = 8;  // units of work (a row or a pair of rows) a block takes at a time

// The weight rows a unit of normed_gemv_kernel's work reads: one row (kPlain), gate row u and up
// row u + units (kSwiGlu), or the two dims of a q/k/v head that rotate together (kRotary: the
// pair of Note [Rotary embedding layouts]; pass-through dims and value heads in consecutive
// pairs); *rotated says whether the pair rotates, *head and *i locate it.
template <NormedOut kOut>
__device__ inline void unit_rows(int64_t unit, int64_t units, const RotaryWrite& rw, int64_t* r1,
                                 int64_t* r2, int64_t* head, int64_t* i, bool* rotated) {
  if (kOut == NormedOut::kPlain) {
    *r1 = *r2 = unit;
  } else if (kOut == NormedOut::kSwiGlu) {
    *r1 = unit;
    *r2 = unit + units;
  } else {
    *head = unit / (rw.d / 2);
    *i = unit - *head * (rw.d / 2);
    *rotated = *head < rw.hq + rw.hkv && *i < rw.half;
    const int64_t base = *head * rw.d;
    *r1 = base + (*rotated && !rw.interleaved ? *i : 2 * *i);
    *r2 = base + (*rotated && !rw.interleaved ? *i + rw.half : 2 * *i + 1);
  }
}

// Dims k1, k2 of a head (values a, b) rotated by position's cos/sin pair i as rotary_and_cache's
// kernel rotates them (its rotated()), into q (query heads) or the slot's cache rows.
template <typename C>
__device__ inline void write_rotated(const RotaryWrite& rw, float* q, int64_t head, int64_t k1,
                                     int64_t k2, int64_t i, bool rotated, int64_t position,
                                     int64_t slot, float a, float b) {
  float o1 = a, o2 = b;
  if (rotated) {
    const float* cs = rw.cos_sin + position * 2 * rw.half;
    const float cv = cs[i], sv = cs[rw.half + i];
    o1 = a * cv - b * sv;
    o2 = b * cv + a * sv;
  }
  if (head < rw.hq) {
    q[head * rw.d + k1] = o1;
    q[head * rw.d + k2] = o2;
    return;
  }
  const bool key = head < rw.hq + rw.hkv;
  C* row = static_cast<C*>(key ? rw.kc : rw.vc) +
           (slot * rw.hkv + head - rw.hq - (key ? 0 : rw.hkv)) * rw.d;
  store(row + k1, o1);
  store(row + k2, o2);
}

// Rows provides: Staged, the type the normalized row is held in shared memory as;
// stage(v), a normalized value as Staged; prefetch(row, lane), a warp asking L2 for one weight
// row; dot<kPairs>(r1, r2, staged, lane, &a, &b), a lane's share of row r1's dot product with
// the staged row (and row r2's, with kPairs), which a shuffle over the warp completes.
template <typename Rows, NormedOut kOut, typename C>
__global__ void __launch_bounds__(32 * kNormWarps)
    normed_gemv_kernel(Rows w, const float* __restrict__ x, const float* __restrict__ residual,
                       const float* __restrict__ norm_w, float eps, float* __restrict__ sum_out,
                       const float* __restrict__ bias, float* __restrict__ y, int64_t units,
                       int64_t k, RotaryWrite rw) {
  extern __shared__ uint4 staged[];  // the normalized row, k values of Rows::Staged
  __shared__ float partial[kNormWarps];
  constexpr bool kPairs = kOut != NormedOut::kPlain;
  using Staged = typename Rows::Staged;
  Staged* xs = reinterpret_cast<Staged*>(staged);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int64_t r1 = 0, r2 = 0, head = 0, i = 0;
  bool rotated = false;
  for (int64_t unit = int64_t(blockIdx.x) * kNormWarps + warp; unit < units;
       unit += int64_t(gridDim.x) * kNormWarps) {
    unit_rows<kOut>(unit, units, rw, &r1, &r2, &head, &i, &rotated);
    w.prefetch(r1, lane);
    if (kPairs) w.prefetch(r2, lane);
  }
  wait_for_previous_kernel();
  let_next_kernel_start();
  float ss = 0.f;
  for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
    const float h = residual != nullptr ? x[j] + residual[j] : x[j];
    ss = fmaf(h, h, ss);
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (lane == 0) partial[warp] = ss;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int j = 0; j < kNormWarps; ++j) total += partial[j];
  const float inv = 1.f / sqrtf(total / float(k) + eps);
  const bool writes_sum = blockIdx.x == 0 && sum_out != nullptr;
  for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
    const float h = residual != nullptr ? x[j] + residual[j] : x[j];
    if (writes_sum) sum_out[j] = h;
    xs[j] = Rows::stage((h * inv) * norm_w[j]);
  }
  int64_t position = 0, slot = 0;
  if (kOut == NormedOut::kRotary) {
    position = rw.pos[0];
    slot = rw.slots[0];
    RT_DEVICE_CHECK(position >= 0 && position < rw.positions, "rotary_and_cache: a position");
    RT_DEVICE_CHECK(slot >= 0 && slot < rw.cache_rows, "rotary_and_cache: a slot");
  }
  __syncthreads();
  for (int64_t unit = int64_t(blockIdx.x) * kNormWarps + warp; unit < units;
       unit += int64_t(gridDim.x) * kNormWarps) {
    unit_rows<kOut>(unit, units, rw, &r1, &r2, &head, &i, &rotated);
    float a = 0.f, b = 0.f;
    w.template dot<kPairs>(r1, r2, staged, lane, &a, &b);
    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
    if (kPairs)
      for (int o = 16; o > 0; o >>= 1) b += __shfl_xor_sync(0xffffffffu, b, o);
    if (lane == 0) {
      if (bias != nullptr) {
        a += bias[r1];
        if (kPairs) b += bias[r2];
      }
      if (kOut == NormedOut::kPlain) y[unit] = a;
      else if (kOut == NormedOut::kSwiGlu) y[unit] = a / (1.f + expf(-a)) * b;
      else write_rotated<C>(rw, y, head, r1 - head * rw.d, r2 - head * rw.d, i, rotated,
                            position, slot, a, b);
    }
  }
}

// Launches normed_gemv_kernel over the n weight rows of w (k values each; out: one output per
// row, per pair of rows for kSwiGlu and kRotary) on a fixed grid of up to 4 blocks an SM (fewer
// where the kernel's registers leave room for fewer: one wave), each block looping over units
// of work.
template <typename Rows>
void launch_normed_rows(const Rows& w, const float* x, const float* residual,
                        const float* norm_w, float eps, float* sum_out, const float* bias,
                        float* y, int64_t n, int64_t k, NormedOut out, const RotaryWrite& rw,
                        StreamHandle s) {
  static const int sms = [] {
    int count = 0;
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, current_device());
    return count > 0 ? count : 1;
  }();
  const int64_t units = out == NormedOut::kPlain ? n : n / 2;
  auto run = [&](auto kernel) {
    static const int per_sm = [&] {  // with the largest staged row, 32 KB
      int resident = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, 32 * kNormWarps, 32768);
      return std::clamp(resident, 1, 4);
    }();
    const int64_t blocks =
        std::min<int64_t>((units + kNormWarps - 1) / kNormWarps, int64_t(sms) * per_sm);
    launch_dependent(kernel, dim3(unsigned(blocks)), dim3(32 * kNormWarps),
                     size_t(k) * sizeof(typename Rows::Staged), s, w, x, residual, norm_w, eps,
                     sum_out, bias, y, units, k, rw);
  };
  if (out == NormedOut::kPlain) run(normed_gemv_kernel<Rows, NormedOut::kPlain, float>);
  else if (out == NormedOut::kSwiGlu) run(normed_gemv_kernel<Rows, NormedOut::kSwiGlu, float>);
  else if (rw.bfloat16_cache) run(normed_gemv_kernel<Rows, NormedOut::kRotary, __nv_bfloat16>);
  else run(normed_gemv_kernel<Rows, NormedOut::kRotary, float>);
}

}  // namespace
}  // namespace retorch::cuda_backend
