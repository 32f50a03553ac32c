// The CUDA backend's GGUF block quantizer and dequantizer, the cpu's formulas bit for bit, and
// the few-row GEMV over quantized rows.
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

#include "retorch/backend/cpu/QuantBlocks.h"
#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaNormedGemv.cuh"
#include "retorch/backend/cuda/CudaQuant.h"

namespace retorch::cuda_backend {

// Note [CUDA dequantization]
// Each thread decodes one value from its block (Note [Block formats] in QuantBlocks.h): the
// scale's bytes are assembled one at a time (blocks are not aligned: a Q8_0 block is 34 bytes),
// the K-quants' packed scales and 6-bit values come from the functions the cpu's dequantizer
// uses (q4_k_scale_min, q6_k_value), and the products and differences are the cpu's float32
// expressions in its order with __fmul_rn / __fsub_rn, which the compiler may not fuse into a
// multiply-add (the cpu files are built with -ffp-contract=off), so the values equal the cpu's
// bit for bit. Q4_0x16's groups are read in place: value j of row 16 g + l is in group g, block
// j / 32, at the group's scale l and byte 32 + 64 v + 4 l + i of its quarter (Note [Q4_0 in
// groups of 16 rows]).
// The quantizers take a thread per block (per value for F32, F16, BF16) and repeat the cpu's
// quantize_row (gguf-py's rules): Q8_0's amax skips NaN as std::max does, its q = round(x * id)
// (halves away from zero); Q4_0 keeps the first value of largest magnitude with its sign and
// rounds x * id + 8.5 in double; fp16 rounds to nearest even, a NaN becoming the quiet NaN the
// cpu's conversion makes; BF16 is gguf-py's (NaN made quiet, else round to nearest even).

namespace {

using namespace cpu::quant;

__device__ inline uint32_t bytes_at(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
__device__ inline float fp16_at(const uint8_t* p) {
  return __half2float(__ushort_as_half(uint16_t(bytes_at(p, 2))));
}

__device__ inline float q4_0_value(float d, uint8_t byte, bool high) {
  return __fmul_rn(d, float((high ? byte >> 4 : byte & 0x0f) - 8));
}

// Value j of the row at x (not Q4_0x16).
__device__ __forceinline__ float value_at(int64_t qtype, const uint8_t* x, int64_t j) {
  switch (qtype) {
    case kF32: return __uint_as_float(bytes_at(x + 4 * j, 4));
    case kF16: return fp16_at(x + 2 * j);
    case kBF16: return __uint_as_float(bytes_at(x + 2 * j, 2) << 16);
    case kQ8_0: {
      const uint8_t* b = x + 34 * (j / kQK);
      return __fmul_rn(float(int8_t(b[2 + j % kQK])), fp16_at(b));
    }
    case kQ4_0: {
      const uint8_t* b = x + 18 * (j / kQK);
      const int k = int(j % kQK);
      return q4_0_value(fp16_at(b), b[2 + k % 16], k >= 16);
    }
    case kQ4_K: {
      const uint8_t* b = x + 144 * (j / kQKK);
      const int w = int(j % kQKK), c = w / 64, high = (w % 64) / 32;
      int sc, m;
      q4_k_scale_min(b + 4, 2 * c + high, sc, m);
      const uint8_t q = b[16 + 32 * c + w % 32];
      const float dsc = __fmul_rn(fp16_at(b), float(sc)), dm = __fmul_rn(fp16_at(b + 2), float(m));
      return __fsub_rn(__fmul_rn(dsc, float(high ? q >> 4 : q & 0x0f)), dm);
    }
    case kQ6_K: {
      const uint8_t* b = x + 210 * (j / kQKK);
      const int w = int(j % kQKK);
      const float dg = __fmul_rn(fp16_at(b + 208), float(int8_t(b[192 + w / 16])));
      return __fmul_rn(dg, float(q6_k_value(b, b + 128, w) - 32));
    }
  }
  return 0.0f;
}

__global__ void dequantize_kernel(int64_t qtype, const uint8_t* blocks, int64_t rb, int64_t rows,
                                  int64_t cols, float* out) {
  const int64_t n = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, j = i % cols;
    if (qtype == kQ4_0x16) {
      const int64_t l = r % kQ4_0x16Rows;
      const uint8_t* g = blocks + (r - l) * rb + 18 * kQ4_0x16Rows * (j / kQK);
      const int k = int(j % kQK), q = k % 16;
      out[i] = q4_0_value(fp16_at(g + 2 * l), g[32 + 64 * (q / 4) + 4 * l + q % 4], k >= 16);
    } else {
      out[i] = value_at(qtype, blocks + r * rb, j);
    }
  }
}

// The cpu's float -> fp16 bits: round to nearest even; NaN keeps its sign, quiet, no payload.
__device__ inline uint16_t fp16_bits(float f) {
  if (f != f) return uint16_t(((__float_as_uint(f) >> 16) & 0x8000u) | 0x7e00u);
  return __half_as_ushort(__float2half_rn(f));
}

__device__ inline void put_fp16(uint8_t* p, float f) {
  const uint16_t h = fp16_bits(f);
  p[0] = uint8_t(h & 0xff);
  p[1] = uint8_t(h >> 8);
}

// gguf-py's float32 -> bfloat16 (QuantBlocks.cpp's to_bf16).
__device__ inline uint16_t bf16_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t(((u & 0xffff0000u) | (64u << 16)) >> 16);
  return uint16_t((uint64_t(u) + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

// Unit i (a block of 32 values for Q8_0 / Q4_0, a value otherwise) of the row-major input.
__global__ void quantize_kernel(int64_t qtype, const float* x, int64_t rows, int64_t cols,
                                uint8_t* blocks, int64_t rb) {
  const int64_t per_row = qtype == kQ8_0 || qtype == kQ4_0 ? cols / kQK : cols;
  const int64_t n = rows * per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / per_row, u = i % per_row;
    uint8_t* row = blocks + r * rb;
    const float* v = x + r * cols;
    if (qtype == kQ8_0) {
      const float* b = v + kQK * u;
      uint8_t* y = row + 34 * u;
      float amax = 0.0f;
      for (int j = 0; j < kQK; ++j) amax = amax < fabsf(b[j]) ? fabsf(b[j]) : amax;
      const float d = __fdiv_rn(amax, 127.0f);
      const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
      put_fp16(y, d);
      for (int j = 0; j < kQK; ++j) {
        const float q = roundf(__fmul_rn(b[j], id));
        y[2 + j] = uint8_t(isfinite(q) ? int8_t(int32_t(q)) : int8_t(0));
      }
    } else if (qtype == kQ4_0) {
      const float* b = v + kQK * u;
      uint8_t* y = row + 18 * u;
      float amax = 0.0f, max = 0.0f;
      for (int j = 0; j < kQK; ++j)
        if (amax < fabsf(b[j])) {
          amax = fabsf(b[j]);
          max = b[j];
        }
      const float d = __fdiv_rn(max, -8.0f);
      const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
      put_fp16(y, d);
      auto level = [&](float a) {
        const float t = float(__dadd_rn(__dmul_rn(double(a), double(id)), 8.5));
        if (!(t >= 0.0f && t < 256.0f)) return 0;
        return min(15, int(t));
      };
      for (int j = 0; j < kQK / 2; ++j) y[2 + j] = uint8_t(level(b[j]) | (level(b[j + 16]) << 4));
    } else if (qtype == kF32) {
      const uint32_t bits = __float_as_uint(v[u]);
      for (int k = 0; k < 4; ++k) row[4 * u + k] = uint8_t(bits >> (8 * k));
    } else {
      const uint16_t h = qtype == kF16 ? fp16_bits(v[u]) : bf16_bits(v[u]);
      row[2 * u] = uint8_t(h & 0xff);
      row[2 * u + 1] = uint8_t(h >> 8);
    }
  }
}

// Note [Quantized decode projections]
// quantized_linear of block-quantized rows dequantizes the whole weight into float32 and runs a
// GEMM: 4 bytes a weight written and read back on every call, against the 0.56 to 1.06 bytes a
// Q4_K to Q8_0 weight takes. For up to kQuantGemvMaxRows activation rows (a decode step's) a
// warp takes a weight row instead: lane l decodes values l, l + 32, ... of it with value_at, the
// dequantizer's bit-exact formulas (the 32 lanes of one step read one block's 32 consecutive
// bytes, or a K-quant's 32), and multiplies them by the float32 activations of every row, which
// are not rounded: the same products as the dequantized path, summed in another order. The
// weight is read once, as the 16-bit GEMV reads its rows, and launched the same way (Note
// [Dependent launches]). One row's RMSNorm fuses in as it does for 16-bit rows (Note [Normed
// decode projections]): QuantRows stages the normalized row as float32 (the activations the
// GEMV reads) and takes a weight row as the GEMV's warp does, in the same lane order, so the
// fused sums are the parts' but for the norm's scale.

constexpr int kQuantGemvWarps = 4;  // weight rows per block

template <int64_t QT, int M>
__global__ void __launch_bounds__(32 * kQuantGemvWarps)
    quantized_gemv_kernel(const uint8_t* __restrict__ w, int64_t rb, const float* __restrict__ x,
                          const float* __restrict__ bias, float* __restrict__ y, int64_t n,
                          int64_t k) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kQuantGemvWarps + (threadIdx.x >> 5);
  if (row < n) prefetch_bytes(w + row * rb, rb, lane, 32);
  wait_for_previous_kernel();
  let_next_kernel_start();
  if (row >= n) return;
  const uint8_t* wr = w + row * rb;
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.f;
#pragma unroll 4
  for (int64_t j = lane; j < k; j += 32) {
    const float v = value_at(QT, wr, j);
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = fmaf(v, __ldg(x + m * k + j), acc[m]);
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
    float v = acc[m];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) y[m * n + row] = v + (bias != nullptr ? bias[row] : 0.f);
  }
}

// GGUF block rows for normed_gemv_kernel (CudaNormedGemv.cuh): rows of rb bytes, the staged row
// float32, lane l taking values l, l + 32, ... as quantized_gemv_kernel does.
template <int64_t QT>
struct QuantRows {
  using Staged = float;
  const uint8_t* w;
  int64_t rb;
  int64_t k;
  __device__ static float stage(float v) { return v; }
  __device__ void prefetch(int64_t row, int lane) const {
    prefetch_bytes(w + row * rb, rb, lane, 32);
  }
  template <bool kPairs>
  __device__ void dot(int64_t r1, int64_t r2, const uint4* staged, int lane, float* a_out,
                      float* b_out) const {
    const float* xs = reinterpret_cast<const float*>(staged);
    const uint8_t* wa = w + r1 * rb;
    const uint8_t* wb = w + r2 * rb;
    float a = 0.f, b = 0.f;
#pragma unroll 4
    for (int64_t j = lane; j < k; j += 32) {
      const float xv = xs[j];
      a = fmaf(value_at(QT, wa, j), xv, a);
      if (kPairs) b = fmaf(value_at(QT, wb, j), xv, b);
    }
    *a_out = a;
    *b_out = b;
  }
};

template <int64_t QT>
void launch_quantized_rows(const uint8_t* w, int64_t rb, const float* x, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, StreamHandle s) {
  const dim3 grid(unsigned((n + kQuantGemvWarps - 1) / kQuantGemvWarps));
  auto run = [&](auto kernel) {
    launch_dependent(kernel, grid, dim3(32 * kQuantGemvWarps), 0, s, w, rb, x, bias, y, n, k);
  };
  switch (m) {
    case 1: return run(quantized_gemv_kernel<QT, 1>);
    case 2: return run(quantized_gemv_kernel<QT, 2>);
    case 3: return run(quantized_gemv_kernel<QT, 3>);
    case 4: return run(quantized_gemv_kernel<QT, 4>);
    case 5: return run(quantized_gemv_kernel<QT, 5>);
    case 6: return run(quantized_gemv_kernel<QT, 6>);
    case 7: return run(quantized_gemv_kernel<QT, 7>);
    case 8: return run(quantized_gemv_kernel<QT, 8>);
  }
  RT_ERROR("cuda quantized gemv: ", m, " rows (at most ", kQuantGemvMaxRows, ")");
}

}  // namespace

bool quantized_gemv_fits(int64_t qtype, int64_t m, int64_t n) {
  return (qtype == kQ8_0 || qtype == kQ4_0 || qtype == kQ4_K || qtype == kQ6_K) && m >= 1 &&
         m <= kQuantGemvMaxRows && n > 0 &&
         (n + kQuantGemvWarps - 1) / kQuantGemvWarps <= INT32_MAX;
}

void launch_quantized_gemv(int64_t qtype, const uint8_t* w, int64_t rb, const float* x,
                           const float* bias, float* y, int64_t m, int64_t n, int64_t k,
                           StreamHandle s) {
  switch (qtype) {
    case kQ8_0: launch_quantized_rows<kQ8_0>(w, rb, x, bias, y, m, n, k, s); break;
    case kQ4_0: launch_quantized_rows<kQ4_0>(w, rb, x, bias, y, m, n, k, s); break;
    case kQ4_K: launch_quantized_rows<kQ4_K>(w, rb, x, bias, y, m, n, k, s); break;
    case kQ6_K: launch_quantized_rows<kQ6_K>(w, rb, x, bias, y, m, n, k, s); break;
    default: RT_ERROR("cuda quantized gemv: qtype ", qtype);
  }
  check_launch("quantized gemv");
}

bool normed_quantized_gemv_fits(int64_t qtype, int64_t n, int64_t k) {
  return (qtype == kQ8_0 || qtype == kQ4_0 || qtype == kQ4_K || qtype == kQ6_K) && n > 0 &&
         k > 0 && k <= kNormedQuantGemvMaxK;
}

void launch_normed_quantized_gemv(int64_t qtype, const uint8_t* w, int64_t rb, const float* x,
                                  const float* residual, const float* norm_weight, float eps,
                                  float* sum_out, const float* bias, float* y, int64_t n,
                                  int64_t k, NormedOut out, const RotaryWrite& rw,
                                  StreamHandle s) {
  auto run = [&](auto rows) {
    launch_normed_rows(rows, x, residual, norm_weight, eps, sum_out, bias, y, n, k, out, rw, s);
  };
  switch (qtype) {
    case kQ8_0: run(QuantRows<kQ8_0>{w, rb, k}); break;
    case kQ4_0: run(QuantRows<kQ4_0>{w, rb, k}); break;
    case kQ4_K: run(QuantRows<kQ4_K>{w, rb, k}); break;
    case kQ6_K: run(QuantRows<kQ6_K>{w, rb, k}); break;
    default: RT_ERROR("cuda rms_norm_linear: qtype ", qtype);
  }
  check_launch("rms_norm_linear");
}

void launch_quantize(int64_t qtype, const float* x, int64_t rows, int64_t cols, uint8_t* blocks,
                     int64_t rb, StreamHandle s) {
  if (rows == 0 || cols == 0) return;
  const int64_t units = rows * (qtype == kQ8_0 || qtype == kQ4_0 ? cols / kQK : cols);
  quantize_kernel<<<blocks_for(units), kThreads, 0, as_stream(s)>>>(qtype, x, rows, cols, blocks,
                                                                    rb);
  check_launch("quantize");
}

void launch_dequantize(int64_t qtype, const uint8_t* blocks, int64_t rb, int64_t rows,
                       int64_t cols, float* out, StreamHandle s) {
  if (rows == 0 || cols == 0) return;
  dequantize_kernel<<<blocks_for(rows * cols), kThreads, 0, as_stream(s)>>>(qtype, blocks, rb,
                                                                            rows, cols, out);
  check_launch("dequantize");
}

}  // namespace retorch::cuda_backend
