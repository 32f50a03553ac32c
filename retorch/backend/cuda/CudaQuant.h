// Launcher of the CUDA backend's GGUF block dequantizer (CudaQuant.cu).
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaRuntime.h"

namespace retorch::cuda_backend {

/// out[r, j] (float32, rows x cols, contiguous) = value j of row r of the quantized matrix at
/// blocks (rows of rb bytes; Q4_0x16 in its groups of 16 rows), for the qtypes of
/// backend/cpu/QuantBlocks.h: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K and Q4_0x16.
void launch_dequantize(int64_t qtype, const uint8_t* blocks, int64_t rb, int64_t rows,
                       int64_t cols, float* out, StreamHandle s);

}  // namespace retorch::cuda_backend
