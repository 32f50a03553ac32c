// Launchers of the CUDA backend's batch-norm and max-pool kernels (CudaNorm.cu), NCHW tensors.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

/// Batch norm over contiguous [n, c, s] (s: the spatial elements of one channel of one sample).
struct BatchNormShape {
  int64_t n = 0, c = 0, s = 0;
  double momentum = 0.1, eps = 1e-5;
};

/// y = batch_norm(x): training computes the batch statistics into save_mean/save_invstd (type
/// t) and mean_buf/invstd_buf (t's accumulation type, c values each) and updates the running
/// statistics (nullptr: none); evaluation reads them. weight and bias may be nullptr.
void launch_batch_norm(FloatType t, const void* x, const void* weight, const void* bias,
                       void* running_mean, void* running_var, bool training, void* save_mean,
                       void* save_invstd, void* mean_buf, void* invstd_buf, void* y,
                       const BatchNormShape& g, StreamHandle s);
/// sum_dy[c] = Σ dy, sum_dy_xmu[c] = Σ dy (x - mean[c]).
void launch_batch_norm_backward_reduce(FloatType t, const void* dy, const void* x,
                                       const void* mean, void* sum_dy, void* sum_dy_xmu,
                                       const BatchNormShape& g, StreamHandle s);
/// The input gradient from the two sums (weight may be nullptr).
void launch_batch_norm_backward_elemt(FloatType t, const void* dy, const void* x,
                                      const void* mean, const void* invstd, const void* weight,
                                      const void* sum_dy, const void* sum_dy_xmu, void* gi,
                                      const BatchNormShape& g, StreamHandle s);

/// A 2-D max pool of `planes` contiguous h x w planes into oh x ow outputs.
struct PoolShape {
  int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

/// y and the flat h * w index of each window's maximum.
void launch_max_pool2d(FloatType t, const void* x, void* y, int64_t* indices, const PoolShape& g,
                       StreamHandle s);
/// grad_in (zeroed by the caller) += grad_out scattered to the indices.
void launch_max_pool2d_backward(FloatType t, const void* grad_out, const int64_t* indices,
                                void* grad_in, const PoolShape& g, StreamHandle s);
/// avg_pool2d over g's windows (no dilation): divisor_override when nonzero, else the window's
/// size with the padding (count_pad) or without.
void launch_avg_pool2d(FloatType t, const void* x, void* y, const PoolShape& g, bool count_pad,
                       int64_t divisor_override, StreamHandle s);
/// Its gradient, a thread per input element.
void launch_avg_pool2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                const PoolShape& g, bool count_pad, int64_t divisor_override,
                                StreamHandle s);
/// adaptive_avg_pool2d of g.planes planes of g.h x g.w into g.oh x g.ow (PyTorch's windows).
void launch_adaptive_avg_pool2d(FloatType t, const void* x, void* y, const PoolShape& g,
                                StreamHandle s);
/// Its gradient: every input element's share of the outputs whose windows hold it.
void launch_adaptive_avg_pool2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                         const PoolShape& g, StreamHandle s);

}  // namespace retorch::cuda_backend
