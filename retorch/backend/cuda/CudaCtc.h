// Launchers of the CUDA backend's CTC loss kernels (CudaCtc.cu).
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

/// One CTC problem: log_probs [T, N, C] of type t (contiguous); per sample b the labels at
/// labels + offset[b] (int64, on the device), and lengths[b] (input) and lengths[N + b]
/// (target), all int64 on the device; S = 2 * max target length + 1.
struct CtcShape {
  int64_t T = 0, N = 0, C = 0, S = 1, blank = 0;
};

/// alpha (double [N, T, S], filled with -inf by the caller) and nll (double [N]): the forward
/// recursion of each sample, as the cpu's ctc_loss_forward.
void launch_ctc_alpha(FloatType t, const void* log_probs, const int64_t* labels,
                      const int64_t* offsets, const int64_t* lengths, const CtcShape& g,
                      double* alpha, double* nll, StreamHandle s);
/// grad_in (double [T, N, C], zeroed by the caller) = d(nll[b] * grad[b]) / d log_probs from
/// alpha and nll (double) with the backward recursion in beta (double [N, T, S], filled with
/// -inf by the caller), as the cpu's ctc_loss_backward; samples of no input, or of an infinite
/// nll with zero_infinity, keep zeros.
void launch_ctc_grad(FloatType t, const void* log_probs, const int64_t* labels,
                     const int64_t* offsets, const int64_t* lengths, const CtcShape& g,
                     const double* alpha, const double* nll, const double* grad,
                     bool zero_infinity, double* beta, double* grad_in, StreamHandle s);

}  // namespace retorch::cuda_backend
