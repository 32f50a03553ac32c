// Convolutions on oneDNN: native bfloat16 ones and strided float32 ones (Note [oneDNN convolution]).
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

/// y = conv(x, w) + bias (or the transposed convolution) for contiguous x [N,C,H,W] and w
/// (PyTorch's layouts) and an optional bias, all bfloat16 or all float32, into the contiguous y
/// of the convolution's output size and the same dtype; float32 accumulation, one rounding.
/// Returns false, touching nothing, when oneDNN is not available for it (bfloat16: natively).
bool onednn_conv(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                 const ConvGeometry& g);

/// gw = the weight gradient of a (not transposed) convolution of x [N,C,H,W] giving go
/// [N,O,oh,ow], both contiguous bfloat16 or both float32, into the contiguous float32 gw
/// [O, C/groups, kh, kw]. Returns false, touching nothing, when oneDNN is not available for it.
bool onednn_conv_weight_grad(const Tensor& go, const Tensor& x, Tensor& gw,
                             const ConvGeometry& g);

}  // namespace retorch::cpu
