// The CUDA backend's GGUF block dequantizer: a thread per value, the cpu's formulas bit for bit.
#include <cuda_fp16.h>

#include <cstdint>

#include "retorch/backend/cpu/QuantBlocks.h"
#include "retorch/backend/cuda/CudaDevice.cuh"
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
__device__ float value_at(int64_t qtype, const uint8_t* x, int64_t j) {
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

}  // namespace

void launch_dequantize(int64_t qtype, const uint8_t* blocks, int64_t rb, int64_t rows,
                       int64_t cols, float* out, StreamHandle s) {
  if (rows == 0 || cols == 0) return;
  dequantize_kernel<<<blocks_for(rows * cols), kThreads, 0, as_stream(s)>>>(qtype, blocks, rb,
                                                                            rows, cols, out);
  check_launch("dequantize");
}

}  // namespace retorch::cuda_backend
