// TensorOptions: dtype, device and requires_grad for factory functions (libtorch style).
#pragma once
#include <optional>

#include "retorch/core/Device.h"
#include "retorch/core/ScalarType.h"

namespace retorch {

struct TensorOptions {
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions(DeviceType d) : device_(Device(d)) {}

  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions dtype(std::optional<ScalarType> t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions device(std::optional<Device> d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; return o; }
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace retorch
