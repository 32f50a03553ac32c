// Launchers of the CUDA backend's GGUF block quantizer and dequantizer, and of the few-row GEMV
// over quantized rows (CudaQuant.cu).
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaLlm.h"
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

/// y[m, n] = sum_j x[m, j] * w[n, j] (+ bias[n]) for the quantized rows w (rb bytes each) of
/// Q8_0, Q4_0, Q4_K or Q6_K and float32 x [m, k] (contiguous, not rounded), up to
/// kQuantGemvMaxRows rows, the weight read once (Note [Quantized decode projections] in
/// CudaQuant.cu); quantized_gemv_fits says whether a call qualifies.
constexpr int64_t kQuantGemvMaxRows = 8;
bool quantized_gemv_fits(int64_t qtype, int64_t m, int64_t n);
void launch_quantized_gemv(int64_t qtype, const uint8_t* w, int64_t rb, const float* x,
                           const float* bias, float* y, int64_t m, int64_t n, int64_t k,
                           StreamHandle s);

/// rms_norm_linear's one row over quantized rows of those qtypes, with the kernel of Note
/// [Normed decode projections] (the arguments of launch_normed_gemv_16bit in CudaLlm.h; w as in
/// launch_quantized_gemv); the staged row is float32, so k is at most kNormedQuantGemvMaxK.
constexpr int64_t kNormedQuantGemvMaxK = 8192;  // the staged row's shared memory: 32 KB
bool normed_quantized_gemv_fits(int64_t qtype, int64_t n, int64_t k);
void launch_normed_quantized_gemv(int64_t qtype, const uint8_t* w, int64_t rb, const float* x,
                                  const float* residual, const float* norm_weight, float eps,
                                  float* sum_out, const float* bias, float* y, int64_t n,
                                  int64_t k, NormedOut out, const RotaryWrite& rw,
                                  StreamHandle s);

}  // namespace retorch::cuda_backend
