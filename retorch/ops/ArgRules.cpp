// Argument rules every backend's kernels share (see ArgRules.h).
#include "retorch/ops/ArgRules.h"

#include <algorithm>
#include <utility>

#include "retorch/core/Error.h"
#include "retorch/core/Tensor.h"

namespace retorch {

std::vector<bool> reduced_dim_flags(OptionalIntArrayRef dims, int64_t ndim, const char* op) {
  if (!dims || dims->empty()) return std::vector<bool>(size_t(std::max<int64_t>(ndim, 1)), true);
  std::vector<bool> reduced(size_t(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : *dims) {
    const int64_t w = maybe_wrap_dim(d, ndim, op);
    RT_CHECK(!reduced[size_t(w)], op, ": dim ", w, " appears multiple times in the list of dims");
    reduced[size_t(w)] = true;
  }
  return reduced;
}

std::vector<int64_t> expand_param(IntArrayRef p, size_t d, int64_t fill) {
  if (p.size() == d) return p.vec();
  return std::vector<int64_t>(d, p.empty() ? fill : p[0]);
}

std::vector<int64_t> norm_stat_shape(IntArrayRef input, size_t normalized_dims) {
  std::vector<int64_t> s(input.begin(), input.end());
  for (size_t i = s.size() - normalized_dims; i < s.size(); ++i) s[i] = 1;
  return s;
}

int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode) {
  int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

namespace {

// One value or one per spatial dim (aten's int[2]); `fallback` when empty (stride = kernel).
std::pair<int64_t, int64_t> pair_arg(IntArrayRef v, const char* op, const char* name,
                                     IntArrayRef fallback = {}) {
  if (v.empty() && !fallback.empty()) v = fallback;
  RT_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name, " must either be a single int, or a "
           "tuple of two ints, but got ", name, "=", v);
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

}  // namespace

Pool2dWindow check_pool2d(int64_t H, int64_t W, IntArrayRef kernel_size, IntArrayRef stride,
                          IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                          const char* op) {
  auto [kh, kw] = pair_arg(kernel_size, op, "kernel_size");
  auto [sh, sw] = pair_arg(stride, op, "stride", kernel_size);
  auto [ph, pw] = pair_arg(padding, op, "padding");
  auto [dh, dw] = pair_arg(dilation, op, "dilation");
  RT_CHECK(kh > 0 && kw > 0, op, ": kernel size should be greater than zero, but got kH: ", kh,
           " kW: ", kw);
  RT_CHECK(sh > 0 && sw > 0, op, ": stride should be greater than zero, but got dH: ", sh,
           " dW: ", sw);
  RT_CHECK(dh > 0 && dw > 0, op, ": dilation should be greater than zero, but got dilationH: ",
           dh, " dilationW: ", dw);
  RT_CHECK(ph >= 0 && pw >= 0 && ph <= kh / 2 && pw <= kw / 2, op, ": pad should be "
           "non-negative and at most half of kernel size, but got padW = ", pw, ", padH = ", ph,
           ", kW = ", kw, ", kH = ", kh);
  const int64_t oh = pooled_size(H, kh, ph, sh, dh, ceil_mode);
  const int64_t ow = pooled_size(W, kw, pw, sw, dw, ceil_mode);
  RT_CHECK(oh >= 1 && ow >= 1, op, ": given input size (", H, "x", W,
           "), calculated output size (", oh, "x", ow, ") is too small");
  return {kh, kw, sh, sw, ph, pw, dh, dw, oh, ow};
}

void check_gelu_approximate(std::string_view approximate, const char* op) {
  RT_CHECK(approximate == "none" || approximate == "tanh", op,
           ": approximate argument must be either none or tanh (got '", approximate, "')");
}

void check_leaky_relu_backward(double negative_slope, bool self_is_result) {
  RT_CHECK(!self_is_result || negative_slope >= 0.0,
           "In-place leakyReLu backward calculation is triggered with a negative slope which is "
           "not supported. This is caused by calling in-place forward function with a negative "
           "slope, please call out-of-place version instead.");
}

void check_elu_backward(double alpha, bool is_result) {
  RT_CHECK(!is_result || alpha >= 0, "In-place elu backward calculation is triggered with a "
           "negative slope which is not supported. This is caused by calling in-place forward "
           "function with a negative slope, please call out-of-place version instead.");
}

}  // namespace retorch
