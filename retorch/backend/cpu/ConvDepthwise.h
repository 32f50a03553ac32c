// Direct depthwise 2-d convolution on the CPU: forward, transposed (the input gradient) and
// weight gradient, with no im2col.
#pragma once
#include <cstdint>

namespace retorch::cpu {

/// A depthwise 2-d convolution: C image channels of H x W, each correlated with m filters of
/// kh x kw into C*m output channels of oh x ow (output channel c*m + k reads image channel c).
struct DepthwiseShape {
  int64_t C, m, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

/// True when the direct depthwise kernels take a convolution with this channel multiplier
/// (larger multipliers are ordinary GEMM-shaped convolutions).
bool depthwise_applies(int64_t multiplier);

/// y[n, c*m + k] = bias + x[n, c] correlated with w[c*m + k]. x: [N, C, H, W],
/// w: [C*m, 1, kh, kw], bias: [C*m] or null, y: [N, C*m, oh, ow]; all contiguous.
void depthwise_conv2d(const float* x, const float* w, const float* bias, float* y, int64_t N,
                      const DepthwiseShape& s);
void depthwise_conv2d(const double* x, const double* w, const double* bias, double* y, int64_t N,
                      const DepthwiseShape& s);

/// The transposed depthwise convolution (the forward's adjoint, i.e. its input gradient):
/// gx[n, c] = bias[c] + sum over k of gy[n, c*m + k] spread back through w[c*m + k].
/// gy: [N, C*m, oh, ow], w: [C*m, 1, kh, kw], bias: [C] or null, gx: [N, C, H, W].
void depthwise_conv2d_transposed(const float* gy, const float* w, const float* bias, float* gx,
                                 int64_t N, const DepthwiseShape& s);
void depthwise_conv2d_transposed(const double* gy, const double* w, const double* bias, double* gx,
                                 int64_t N, const DepthwiseShape& s);

/// gw[c*m + k, 0, i, j] = sum over n, oy, ox of gy[n, c*m + k, oy, ox] *
/// x[n, c, oy*sh - ph + i*dh, ox*sw - pw + j*dw]. gy: [N, C*m, oh, ow], x: [N, C, H, W].
void depthwise_conv2d_weight_grad(const float* gy, const float* x, float* gw, int64_t N,
                                  const DepthwiseShape& s);
void depthwise_conv2d_weight_grad(const double* gy, const double* x, double* gw, int64_t N,
                                  const DepthwiseShape& s);

}  // namespace retorch::cpu
