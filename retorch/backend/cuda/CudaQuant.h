// Launchers of the CUDA backend's GGUF block quantizer and dequantizer (CudaQuant.cu).
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaRuntime.h"

namespace retorch::cuda_backend {

/// out[r, j] (float32, rows x cols, contiguous) = value j of row r of the quantized matrix at
/// blocks (rows of rb bytes; Q4_0x16 in its groups of 16 rows), for the qtypes of
/// backend/cpu/QuantBlocks.h: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K and Q4_0x16.
void launch_dequantize(int64_t qtype, const uint8_t* blocks, int64_t rb, int64_t rows,
                       int64_t cols, float* out, StreamHandle s);

/// The rows x cols float32 values at x (contiguous) into quantized rows of rb bytes at blocks,
/// as the cpu's quantize_row: Q8_0, Q4_0, F32, F16 or BF16 (the quantizers quantize_blocks has).
void launch_quantize(int64_t qtype, const float* x, int64_t rows, int64_t cols, uint8_t* blocks,
                     int64_t rb, StreamHandle s);

}  // namespace retorch::cuda_backend
