// Small helpers shared by generated code and kernels: key sets from devices, output resizing.
#pragma once
#include <optional>

#include "retorch/core/Tensor.h"
#include "retorch/dispatch/DispatchKeySet.h"

namespace retorch::detail {

inline DispatchKeySet backend_keys() {
  return DispatchKeySet({DispatchKey::CPU, DispatchKey::CUDA});
}
/// An explicit device argument picks the backend.
inline DispatchKeySet apply_device(DispatchKeySet ks, const std::optional<Device>& d) {
  if (!d) return ks;
  return (ks - backend_keys()) | DispatchKeySet(d->is_cuda() ? DispatchKey::CUDA : DispatchKey::CPU);
}
/// Calls with no tensor and no device run on the CPU.
inline DispatchKeySet ensure_backend(DispatchKeySet ks) {
  return (ks & backend_keys()).empty() ? ks | DispatchKeySet(DispatchKey::CPU) : ks;
}
/// Resizes an out= tensor to shape (PyTorch resizes when the shape differs).
void resize_output(const Tensor& out, IntArrayRef shape, const char* op);

}  // namespace retorch::detail
