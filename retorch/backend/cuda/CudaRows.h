// Launchers of the CUDA backend's row kernels (CudaRows.cu): a block per contiguous row for
// reductions (var, norm, argmax and argmin too), softmax, layer_norm, fused RMSNorm, and SiLU-and-mul.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

enum class RowReduce : int { kSum, kMean, kMax, kMin, kProd };

/// out[r] = op over in[r, 0..cols) for contiguous rows; all of type t.
void launch_reduce_rows(RowReduce op, FloatType t, const void* in, void* out, int64_t rows,
                        int64_t cols, StreamHandle s);
/// out[r] = the p-norm (norm; param p, which may be 0 or ±inf) or the variance with correction
/// param (var.correction) of in[r, 0..cols), type t.
void launch_var_or_norm_rows(bool norm, FloatType t, const void* in, void* out, int64_t rows,
                             int64_t cols, double param, StreamHandle s);
/// out[r] = any (or all) of the bools in[r, 0..cols).
void launch_bool_rows(bool any, const bool* in, bool* out, int64_t rows, int64_t cols,
                      StreamHandle s);
/// out[r] = the first index of the maximum (take_max) or minimum of in[r, 0..cols), NaN
/// counting as both; cols > 0.
void launch_arg_rows(bool take_max, FloatType t, const void* in, int64_t* out, int64_t rows,
                     int64_t cols, StreamHandle s);
/// Softmax (or log_softmax) of each contiguous row of in into out.
void launch_softmax_rows(bool log, FloatType t, const void* in, void* out, int64_t rows,
                         int64_t cols, StreamHandle s);
/// layer_norm of each row with optional weight and bias (nullptr for none) of cols elements;
/// mean and rstd get one value a row.
void launch_layer_norm_rows(FloatType t, const void* in, const void* weight, const void* bias,
                            void* out, void* mean, void* rstd, int64_t rows, int64_t cols,
                            double eps, StreamHandle s);
/// layer_norm's input gradient (weight: nullptr for none) for rows of cols elements; mean and
/// rstd one value a row, all of type t.
void launch_layer_norm_backward_input(FloatType t, const void* grad, const void* in,
                                      const void* mean, const void* rstd, const void* weight,
                                      void* dx, int64_t rows, int64_t cols, StreamHandle s);
/// The row chunks launch_layer_norm_backward_weight sums separately: `part` holds chunks x cols
/// values of t's accumulation type (float, or double for float64).
int64_t layer_norm_weight_chunks(int64_t rows);
/// layer_norm's weight gradient dw[col] = Σ_r grad · (in - mean) · rstd, deterministically.
void launch_layer_norm_backward_weight(FloatType t, const void* grad, const void* in,
                                       const void* mean, const void* rstd, void* part, void* dw,
                                       int64_t rows, int64_t cols, StreamHandle s);
/// fused_rms_norm: h = in (+ residual, written to sum_out when given), out = h · rsqrt(mean(h²)
/// + eps) · weight.
void launch_rms_norm_rows(FloatType t, const void* in, const void* residual, const void* weight,
                          void* out, void* sum_out, int64_t rows, int64_t cols, double eps,
                          StreamHandle s);
/// out[r, j] = silu(in[r, j]) · in[r, d + j] for rows of 2·d elements.
void launch_silu_and_mul(FloatType t, const void* in, void* out, int64_t rows, int64_t d,
                         StreamHandle s);

/// Cross entropy of rows against int64 targets (weight: nullptr or cols values; ignore_index
/// rows get loss and weight 0): lse per row in type t, the row losses and weights in t's
/// accumulation type (float, or double for float64).
void launch_cross_entropy_rows(FloatType t, const void* in, const int64_t* target,
                               const void* weight, void* lse, void* row_loss, void* row_weight,
                               int64_t rows, int64_t cols, int64_t ignore_index, double smoothing,
                               StreamHandle s);
/// Its gradient: grad is one value a row (reduction 0) or one value (1: mean, divided by the
/// kept rows' summed weights, which the launch writes to *denom, one value of the accumulation
/// type; 2: sum).
void launch_cross_entropy_grad_rows(FloatType t, const void* in, const int64_t* target,
                                    const void* weight, const void* lse, const void* grad,
                                    void* denom, void* out, int64_t rows, int64_t cols,
                                    int64_t ignore_index, int reduction, double smoothing,
                                    StreamHandle s);

}  // namespace retorch::cuda_backend
