// Backward helpers of the special functions and pointwise misc ops, written in retorch ops so
// they differentiate again.
#include <cmath>
#include <limits>

#include "retorch/autograd/FunctionsManual.h"

namespace retorch::autograd::fm {

// Note [Safe division at removable singularities]: where(x == 0, limit, f(x) / x) would still
// back-propagate 0 * (1 / 0) = NaN through the unselected branch, so x is first replaced by 1
// where it is 0 and the limit is selected afterwards.

Tensor i1_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  // See Note [Safe division at removable singularities]
  const Tensor zero = self == 0;
  const Tensor xs = where(zero, Scalar(1), self);
  const Tensor d = self.i0() - result / xs;
  return grad * where(zero, Scalar(0.5), d);
}

// PyTorch's i1e_backward: d/dx i1e(x) = i0e(x) - i1e(x) (sign(x) + 1/x), whose limit at 0 is
// 1/2; |x| up to the dtype's epsilon takes the limit (Note [Safe division at removable
// singularities]).
Tensor i1e_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  const double eps = self.dtype() == kDouble     ? std::numeric_limits<double>::epsilon()
                     : self.dtype() == kHalf     ? 0.0009765625
                     : self.dtype() == kBFloat16 ? 0.0078125
                                                 : double(std::numeric_limits<float>::epsilon());
  const Tensor not_tiny = self.abs() > eps;
  const Tensor xs = where(not_tiny, self, Scalar(eps));
  const Tensor d = special_i0e(xs) - result * (xs.sign() + xs.reciprocal());
  return grad * where(not_tiny, d, Scalar(0.5));
}

Tensor sinc_backward(const Tensor& grad, const Tensor& self) {
  // d/dx sin(t)/t with t = pi x is pi (t cos t - sin t) / t^2, whose numerator cancels to
  // -t^3/3 for small t: there the Taylor series -t/3 + t^3/30 - t^5/840 + t^7/45360 is used.
  // See Note [Safe division at removable singularities]
  const Tensor t = self * M_PI;
  const Tensor small = t.abs() < 0.1;
  const Tensor ts = where(small, Scalar(1), t);
  const Tensor exact = (ts.cos() * ts - ts.sin()) / (ts * ts);
  const Tensor t2 = t * t;
  const Tensor series = t * (t2 * (t2 * (t2 * (1.0 / 45360) - 1.0 / 840) + 1.0 / 30) - 1.0 / 3);
  return grad * where(small, series, exact) * M_PI;
}

Tensor logit_backward(const Tensor& grad, const Tensor& self, std::optional<double> eps) {
  const Tensor d = grad / (self * self.neg().add(1));
  if (!eps) return where((self < 0) | (self > 1), Scalar(NAN), d);
  return where((self < *eps) | (self > 1 - *eps), Scalar(0), d);
}

Tensor xlogy_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other) {
  return xlogy(grad, other).masked_fill((self == 0) & (other <= 0), Scalar(0));
}

Tensor clamp_tensor_backward_self(const Tensor& grad, const Tensor& self,
                                  const std::optional<Tensor>& min,
                                  const std::optional<Tensor>& max) {
  const bool lo = min && min->defined(), hi = max && max->defined();
  if (lo && hi) return where((self >= *min) & (self <= *max), grad, Scalar(0));
  if (lo) return where(self >= *min, grad, Scalar(0));
  return where(self <= *max, grad, Scalar(0));
}

Tensor clamp_tensor_backward_min(const Tensor& grad, const Tensor& self,
                                 const std::optional<Tensor>& min,
                                 const std::optional<Tensor>& max) {
  // With both bounds and min > max the result is max, so min gets nothing.
  if (max && max->defined()) return where((self < *min) & (*min < *max), grad, Scalar(0));
  return where(self < *min, grad, Scalar(0));
}

Tensor clamp_tensor_backward_max(const Tensor& grad, const Tensor& self,
                                 const std::optional<Tensor>& min,
                                 const std::optional<Tensor>& max) {
  if (min && min->defined()) return where((self > *max) | (*max < *min), grad, Scalar(0));
  return where(self > *max, grad, Scalar(0));
}

}  // namespace retorch::autograd::fm
