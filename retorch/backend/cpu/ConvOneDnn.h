// bfloat16 convolutions through oneDNN's where the CPU runs them natively (Note [bfloat16 convolution]).
#pragma once
#include <cstdint>

#include "retorch/core/Tensor.h"

namespace retorch::cpu {

/// The 2-D geometry of a convolution (a 1-D one has height 1): strides, symmetric paddings,
/// dilations, the transposed convolution's output padding, and groups.
struct ConvGeometry {
  int64_t sh, sw, ph, pw, dh, dw, oph, opw, groups;
  bool transposed;
};

/// y = conv(x, w) + bias (or the transposed convolution) for contiguous bfloat16 x [N,C,H,W] and
/// w (PyTorch's layouts), an optional bfloat16 bias, into the contiguous bfloat16 y of the
/// convolution's output size; float32 accumulation, one rounding. Returns false, touching
/// nothing, when oneDNN's bfloat16 convolution is not available for it.
bool onednn_bf16_conv(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      const ConvGeometry& g);

/// gw = the weight gradient of a (not transposed) convolution of x [N,C,H,W] giving go
/// [N,O,oh,ow], both contiguous bfloat16, into the contiguous float32 gw [O, C/groups, kh, kw].
/// Returns false, touching nothing, when oneDNN's bfloat16 convolution is not available.
bool onednn_bf16_conv_weight_grad(const Tensor& go, const Tensor& x, Tensor& gw,
                                  const ConvGeometry& g);

}  // namespace retorch::cpu
