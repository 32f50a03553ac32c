// Direct float32 convolution with stride 1 (an implicit GEMM over a padded image, AVX2/AVX-512)
// and its AVX-512 weight gradient.
#pragma once
#include <cstdint>

namespace retorch::cpu {

// A stride-1 2-d convolution of one group: C input channels of H x W, O output channels of
// oh x ow, a kh x kw kernel with dilation (dh, dw), and the input placed at (top, left) inside
// the padded image the kernel slides over (the padding before the first row and column).
struct DirectConvShape {
  int64_t C, H, W, O, kh, kw, dh, dw, top, left, oh, ow;
};

// How the weight is laid out: as a convolution's [O, C, kh, kw] (per group), or as a
// transposed convolution's [C, O, kh, kw], read flipped so that the transposed convolution
// becomes a plain one.
enum class DirectWeight { kConv, kTransposedFlipped };

// True when this build and CPU have the AVX2/FMA micro-kernel and it beats im2col + GEMM for
// this shape.
bool direct_conv_applies(const DirectConvShape& g);

// y[n, gi*O + o] = bias + sum_{c,i,j} W(gi, o, c, i, j) * x[n, gi*C + c, oy + i*dh - top,
// ox + j*dw - left] for N samples and `groups` groups; x is [N, groups*C, H, W] and y
// [N, groups*O, oh, ow], both contiguous. Requires direct_conv_applies(g).
void direct_conv2d(const float* x, const float* w, const float* bias, float* y, int64_t N,
                   int64_t groups, const DirectConvShape& g, DirectWeight layout);

// True when this CPU (cpu_isa() at AVX-512) runs the direct weight gradient for this shape.
bool direct_weight_grad_applies(const DirectConvShape& g);

// gw[gi*O + o, c, i, j] = sum_{n,oy,ox} go[n, gi*O + o, oy, ox] * x[n, gi*C + c, oy + i*dh - top,
// ox + j*dw - left] (zero outside x): the weight gradient of direct_conv2d's convolution, gw as
// [groups*O, C, kh, kw]. Requires direct_weight_grad_applies(g); see Note [Direct weight gradient].
void direct_conv2d_weight_grad(const float* go, const float* x, float* gw, int64_t N,
                               int64_t groups, const DirectConvShape& g);

}  // namespace retorch::cpu
