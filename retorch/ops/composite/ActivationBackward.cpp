// The activations' and softmax's backward ops written of primitives: the form every backend
// without a fused kernel runs (the CPU has one pass each: backend/cpu/ActivationBackwardOps.cpp,
// NormOps.cpp). Comparisons decide NaN and the bounds as PyTorch's vectorized kernels do.
#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/ArgRules.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return grad_output * output * output.neg().add(1);
}

Tensor tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return grad_output * (output * output).neg().add(1);
}

Tensor silu_backward(const Tensor& grad_output, const Tensor& self) {
  Tensor s = self.sigmoid();
  return grad_output * s * (self * s.neg().add(1)).add(1);
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& self,
                     std::string_view approximate) {
  check_gelu_approximate(approximate, "gelu_backward");
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Tensor x2 = self * self;
    Tensor t = ((self + self * x2 * c) * k).tanh();
    Tensor dinner = (x2 * (3 * c)).add(1) * k;
    Tensor left = t.add(1) * 0.5;
    Tensor right = self * 0.5 * (t * t).neg().add(1) * dinner;
    return grad_output * (left + right);
  }
  Tensor cdf = (self * M_SQRT1_2).erf().add(1) * 0.5;
  Tensor pdf = (self * self * -0.5).exp() * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
  return grad_output * (cdf + self * pdf);
}

Tensor elu_backward(const Tensor& grad_output, const Scalar& alpha, const Scalar& scale,
                    const Scalar& input_scale, bool is_result, const Tensor& self_or_result) {
  const double neg = alpha.to_double() * scale.to_double(), in_s = input_scale.to_double();
  check_elu_backward(alpha.to_double(), is_result);
  Tensor below = is_result ? grad_output * (self_or_result + neg) * in_s
                           : grad_output * (self_or_result.clamp_max(Scalar(0)) * in_s).exp() *
                                 (in_s * neg);
  return where(self_or_result.gt(Scalar(0)), grad_output * scale, below);
}

// sigmoid(-x) from the buffer b = exp(-|x|): b / (1 + b) above 0, 1 - b / (1 + b) below, as
// PyTorch's kernels compute it.
Tensor log_sigmoid_backward(const Tensor& grad_output, const Tensor& self, const Tensor& buffer) {
  const Tensor z = buffer / (buffer + 1);
  return grad_output * where(self.lt(Scalar(0)), z.neg().add(1), z);
}

Tensor hardtanh_backward(const Tensor& grad_output, const Tensor& self, const Scalar& min_val,
                         const Scalar& max_val) {
  return where(self.gt(min_val).logical_and(self.lt(max_val)), grad_output, Scalar(0));
}

Tensor hardswish_backward(const Tensor& grad_output, const Tensor& self) {
  return where(self.lt(Scalar(-3)), Scalar(0),
               where(self.ge(Scalar(3)), grad_output, grad_output * (self / 3 + 0.5)));
}

Tensor hardsigmoid_backward(const Tensor& grad_output, const Tensor& self) {
  return where(self.gt(Scalar(-3)).logical_and(self.lt(Scalar(3))), grad_output / 6, Scalar(0));
}

Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self,
                           const Scalar& negative_slope, bool self_is_result) {
  check_leaky_relu_backward(negative_slope.to_double(), self_is_result);
  return where(self.gt(Scalar(0)), grad_output, grad_output * negative_slope);
}

Tensor softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                             ScalarType /*input_dtype: the result keeps grad_output's dtype, as
                                           in torch's CPU kernel*/) {
  Tensor gy = grad_output * output;
  return gy - output * gy.sum(IntArrayRef(dim), true);
}

Tensor log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                 ScalarType /*input_dtype: the result keeps grad_output's dtype, as
                                           in torch's CPU kernel*/) {
  return grad_output - output.exp() * grad_output.sum(IntArrayRef(dim), true);
}

}  // namespace retorch::composite
