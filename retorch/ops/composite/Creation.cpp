// Composite creation and conversion ops, built from empty/fill_/copy_/random primitives.
#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

namespace {
TensorOptions opts(std::optional<ScalarType> dtype, std::optional<Device> device) {
  return TensorOptions().dtype(dtype).device(device);
}
TensorOptions like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return TensorOptions().dtype(dtype.value_or(self.dtype())).device(device.value_or(self.device()));
}
ScalarType infer_fill_dtype(const Scalar& v) {
  if (v.is_boolean()) return kBool;
  if (v.is_integral(false)) return kLong;
  return default_dtype();
}
}  // namespace

Tensor zeros(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::empty(size, opts(dtype, device)).zero_();
}
Tensor ones(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::empty(size, opts(dtype, device)).fill_(1);
}
Tensor full(IntArrayRef size, const Scalar& fill_value, std::optional<ScalarType> dtype,
            std::optional<Device> device) {
  return retorch::empty(size, opts(dtype.value_or(infer_fill_dtype(fill_value)), device))
      .fill_(fill_value);
}
Tensor arange(const Scalar& end, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::arange(Scalar(int64_t(0)), end, Scalar(int64_t(1)), opts(dtype, device));
}
Tensor empty_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::empty(self.sizes(), like(self, dtype, device));
}
Tensor zeros_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::zeros(self.sizes(), like(self, dtype, device));
}
Tensor ones_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::ones(self.sizes(), like(self, dtype, device));
}
Tensor full_like(const Tensor& self, const Scalar& fill_value, std::optional<ScalarType> dtype,
                 std::optional<Device> device) {
  return retorch::full(self.sizes(), fill_value, like(self, dtype, device));
}
Tensor rand_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::rand(self.sizes(), std::nullopt, like(self, dtype, device));
}
Tensor randn_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::randn(self.sizes(), std::nullopt, like(self, dtype, device));
}
Tensor rand(IntArrayRef size, std::optional<Generator> generator, std::optional<ScalarType> dtype,
            std::optional<Device> device) {
  return retorch::empty(size, opts(dtype, device)).uniform_(0, 1, generator);
}
Tensor randn(IntArrayRef size, std::optional<Generator> generator, std::optional<ScalarType> dtype,
             std::optional<Device> device) {
  return retorch::empty(size, opts(dtype, device)).normal_(0, 1, generator);
}
Tensor randint(int64_t high, IntArrayRef size, std::optional<Generator> generator,
               std::optional<ScalarType> dtype, std::optional<Device> device) {
  return randint_low(0, high, size, generator, dtype, device);
}
Tensor randint_low(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> generator,
                   std::optional<ScalarType> dtype, std::optional<Device> device) {
  return retorch::empty(size, opts(dtype.value_or(kLong), device)).random_(low, high, generator);
}
Tensor bernoulli_p(const Tensor& self, double p, std::optional<Generator> generator) {
  RT_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  Tensor u = retorch::rand(self.sizes(), generator, TensorOptions(self.dtype()).device(self.device()));
  return u.lt(p).to(self.dtype());
}
Tensor zero_(const Tensor& self) { return self.fill_(0); }

Tensor contiguous(const Tensor& self) { return self.is_contiguous() ? self : self.clone(); }

Tensor to_dtype(const Tensor& self, ScalarType dtype, bool non_blocking, bool copy) {
  if (self.dtype() == dtype && !copy) return self;
  return retorch::_to_copy(self, dtype, std::nullopt);
}
Tensor to_device(const Tensor& self, std::optional<Device> device, std::optional<ScalarType> dtype,
                 bool non_blocking, bool copy) {
  Device d = device.value_or(self.device()).canonical();
  ScalarType t = dtype.value_or(self.dtype());
  if (d == self.device() && t == self.dtype() && !copy) return self;
  return retorch::_to_copy(self, t, d, non_blocking);
}
Tensor to_other(const Tensor& self, const Tensor& other, bool non_blocking, bool copy) {
  return to_device(self, other.device(), other.dtype(), non_blocking, copy);
}
Tensor type_as(const Tensor& self, const Tensor& other) { return self.to(other.dtype()); }

Tensor round_decimals(const Tensor& self, int64_t decimals) {
  RT_CHECK(is_floating_type(self.dtype()), "\"round_cpu\" not implemented for '",
           dtype_name(self.dtype()), "'");
  if (decimals == 0) return self.round();
  // Half scales and rounds in float (rounding x * 10^d to 16 bits first can move it across a
  // .5 boundary; PyTorch has no Half kernel). PyTorch's BFloat16 kernel does round x * 10^d to
  // bfloat16 before rounding to an integer, so bfloat16 takes the generic path below.
  if (self.dtype() == kHalf) return round_decimals(self.to(kFloat), decimals).to(self.dtype());
  // PyTorch's kernel: negative decimals divide then multiply by 10^-d (0.01 is inexact).
  double scale = std::pow(10.0, double(decimals < 0 ? -decimals : decimals));
  if (decimals < 0) return (self / scale).round() * scale;
  return (self * scale).round() / scale;
}
Tensor pow_scalar_self(const Scalar& self, const Tensor& exponent) {
  return retorch::pow(scalar_to_tensor(self, exponent.device()), exponent);
}
Tensor where_scalar_other(const Tensor& condition, const Tensor& self, const Scalar& other) {
  return retorch::where(condition, self, scalar_to_tensor(other, self.device()));
}
Tensor where_scalar_self(const Tensor& condition, const Scalar& self, const Tensor& other) {
  return retorch::where(condition, scalar_to_tensor(self, other.device()), other);
}

}  // namespace retorch::composite
