// Composite pointwise ops: Scalar overloads (xlogy, where, clamp_min/max), isclose/allclose and
// the in-place forms that forward to an in-place primitive.
#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

Tensor xlogy_scalar_self(const Scalar& self, const Tensor& other) {
  return retorch::xlogy(scalar_to_tensor(self, other.device()), other);
}

Tensor xlogy_scalar_other(const Tensor& self, const Scalar& other) {
  return retorch::xlogy(self, scalar_to_tensor(other, self.device()));
}

Tensor polygamma_inplace(const Tensor& self, int64_t n) {
  RT_CHECK(is_floating_type(self.dtype()), "polygamma_: result type Float can't be cast to the "
           "desired output type ", dtype_name(self.dtype()));
  // polygamma saves its input for backward; read a tracked copy so the write below does not
  // invalidate it.
  Tensor r = retorch::polygamma(n, self.requires_grad() ? self.clone() : self);
  self.copy_(r);
  return self;
}

// A NaN bound makes clamp_min/clamp_max all NaN, which clamp gives only with both bounds set
// (see clamp_out): the NaN goes in as both.
namespace {
std::optional<Scalar> other_bound(const Scalar& b) {
  if (b.is_floating_point() && std::isnan(b.to<double>())) return b;
  return std::nullopt;
}
}  // namespace

Tensor clamp_min(const Tensor& self, const Scalar& min) {
  return retorch::clamp(self, std::optional<Scalar>(min), other_bound(min));
}
Tensor clamp_min_inplace(const Tensor& self, const Scalar& min) {
  return retorch::clamp_(self, std::optional<Scalar>(min), other_bound(min));
}
Tensor clamp_min_tensor(const Tensor& self, const Tensor& min) {
  return retorch::clamp(self, std::optional<Tensor>(min), std::nullopt);
}
Tensor clamp_min_tensor_inplace(const Tensor& self, const Tensor& min) {
  return retorch::clamp_(self, std::optional<Tensor>(min), std::nullopt);
}
Tensor clamp_max(const Tensor& self, const Scalar& max) {
  return retorch::clamp(self, other_bound(max), std::optional<Scalar>(max));
}
Tensor clamp_max_inplace(const Tensor& self, const Scalar& max) {
  return retorch::clamp_(self, other_bound(max), std::optional<Scalar>(max));
}
Tensor clamp_max_tensor(const Tensor& self, const Tensor& max) {
  return retorch::clamp(self, std::nullopt, std::optional<Tensor>(max));
}
Tensor clamp_max_tensor_inplace(const Tensor& self, const Tensor& max) {
  return retorch::clamp_(self, std::nullopt, std::optional<Tensor>(max));
}

Tensor where_scalar(const Tensor& condition, const Scalar& self, const Scalar& other) {
  // Two Python numbers: float -> the default dtype, int -> int64, two bools -> bool.
  ScalarType t = kLong;
  if (self.is_floating_point() || other.is_floating_point()) t = default_dtype();
  else if (self.is_boolean() && other.is_boolean()) t = kBool;
  return retorch::where(condition, scalar_to_tensor(self).to(t), scalar_to_tensor(other).to(t));
}

Tensor isclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  RT_CHECK(self.dtype() == other.dtype(), "isclose: ", self.dtype(), " did not match ",
           other.dtype());
  RT_CHECK(rtol >= 0, "isclose: rtol must be greater than or equal to zero, but got ", rtol);
  RT_CHECK(atol >= 0, "isclose: atol must be greater than or equal to zero, but got ", atol);
  Tensor close = self == other;
  if (equal_nan && self.is_floating_point()) close = close | (self.isnan() & other.isnan());
  if (rtol == 0 && atol == 0) return close;
  // The same operations as PyTorch, so both round identically: non-floating inputs compare
  // in the default float dtype (a uint8 difference would wrap around).
  const Tensor a = self.is_floating_point() ? self : self.to(default_dtype());
  const Tensor b = other.is_floating_point() ? other : other.to(default_dtype());
  const Tensor allowed = (b * rtol).abs() + atol;
  const Tensor actual = (a - b).abs();
  return close | (actual.isfinite() & (actual <= allowed));
}

bool allclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  return retorch::isclose(self, other, rtol, atol, equal_nan).all().item().to_bool();
}

}  // namespace retorch::composite
