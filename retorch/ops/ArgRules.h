// Argument rules every backend's kernels share (dim lists, per-dim parameters, pooling windows,
// normalization statistics), with PyTorch's error messages.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch {

/// Which of ndim dims a reduction's dim list names (none or empty: all of them). Errors on an
/// out-of-range or repeated dim.
std::vector<bool> reduced_dim_flags(OptionalIntArrayRef dims, int64_t ndim, const char* op);

/// A per-spatial-dim parameter given as one value or d values (stride, padding, ...), as d
/// values; `fill` when it is empty.
std::vector<int64_t> expand_param(IntArrayRef p, size_t d, int64_t fill);

/// The input's shape with its last `normalized_dims` dims set to 1: layer_norm's mean and rstd.
std::vector<int64_t> norm_stat_shape(IntArrayRef input, size_t normalized_dims);

/// PyTorch's pooling_output_shape: floor or ceil division, and a ceil-mode window must start
/// inside the input or its left padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode);

/// A 2-d pooling window and the output it gives.
struct Pool2dWindow {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

/// The window of a 2-d pool over an H×W input from its arguments (each one value or two; an
/// empty stride means the kernel size), checked as PyTorch checks them.
Pool2dWindow check_pool2d(int64_t H, int64_t W, IntArrayRef kernel_size, IntArrayRef stride,
                          IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                          const char* op);

/// gelu's (and gelu_backward's) approximate argument: "none" or "tanh".
void check_gelu_approximate(std::string_view approximate, const char* op);

/// leaky_relu_backward after an in-place forward (self_is_result): only a slope >= 0 leaves the
/// input's sign readable from the result.
void check_leaky_relu_backward(double negative_slope, bool self_is_result);
/// elu_backward from the result (in-place elu_) needs alpha >= 0, as PyTorch's check says.
void check_elu_backward(double alpha, bool is_result);

}  // namespace retorch
