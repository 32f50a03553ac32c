// Row convolution: AVX-512 stride-1 convolution kernels whose vectors run along output rows (for
// layers with few output channels), forward and weight gradient.
#pragma once
#include <cstdint>

#include "retorch/backend/cpu/ConvDirect.h"

namespace retorch::cpu {

// True when this CPU runs the row kernel for the convolution g and it beats the direct kernel
// (Note [Row convolution]).
bool row_conv_applies(const DirectConvShape& g);

// direct_conv2d's contract (ConvDirect.h) through the row kernel. Requires row_conv_applies(g).
void row_conv2d(const float* x, const float* w, const float* bias, float* y, int64_t N,
                int64_t groups, const DirectConvShape& g, DirectWeight layout);

// True when this CPU runs the row weight gradient for g and it beats the direct one.
bool row_weight_grad_applies(const DirectConvShape& g);

// direct_conv2d_weight_grad's contract (ConvDirect.h) through the row kernel. Requires
// row_weight_grad_applies(g).
void row_conv2d_weight_grad(const float* go, const float* x, float* gw, int64_t N,
                            int64_t groups, const DirectConvShape& g);

}  // namespace retorch::cpu
