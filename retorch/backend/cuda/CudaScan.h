// Launchers of the CUDA backend's scans along rows (CudaScan.cu): cumsum, cumprod, logcumsumexp,
// cummax and cummin.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

/// The scans: running sums, products, log-sum-exps, and maxima or minima with their indices.
enum class ScanOp : int { kSum, kProd, kLogSumExp, kMax, kMin };

/// Inclusive scans of each contiguous row of in (rows x cols, floating type t) into out, of
/// the same shape and type; kMax and kMin also write each running extreme's column into
/// `indices` (int64, rows x cols; nullptr for the other ops). Sums accumulate in the type's
/// accumulation type (float for 16-bit types), products and log-sum-exps in double, as the cpu's.
void launch_scan_rows(ScanOp op, FloatType t, const void* in, void* out, int64_t* indices,
                      int64_t rows, int64_t cols, StreamHandle s);
/// The same for int32 or int64 rows (kSum and kProd, which wrap as the cpu's).
void launch_scan_rows_int(ScanOp op, bool int64, const void* in, void* out, int64_t rows,
                          int64_t cols, StreamHandle s);

}  // namespace retorch::cuda_backend
