// Small helpers shared by generated code and kernels: key sets from devices, output resizing.
#pragma once
#include <optional>

#include "retorch/core/Tensor.h"
#include "retorch/dispatch/DispatchKeySet.h"

namespace retorch::detail {

/// An explicit device argument joins the tensors' keys (as in PyTorch, the highest backend
/// wins: _to_copy from cpu to cuda and from cuda to cpu both dispatch to cuda).
inline DispatchKeySet apply_device(DispatchKeySet ks, const std::optional<Device>& d) {
  return d ? ks | device_key_set(d->type) : ks;
}
/// Calls with no tensor and no device run on the CPU.
inline DispatchKeySet ensure_backend(DispatchKeySet ks) {
  return (ks & kBackendKeys).empty() ? ks | DispatchKeySet(DispatchKey::CPU) : ks;
}
[[noreturn]] void raise_undefined(const char* op, const char* arg);
/// Required tensor arguments must be defined (an undefined one would have no device).
inline void check_defined(const Tensor& t, const char* op, const char* arg) {
  if (__builtin_expect(!t.defined(), 0)) raise_undefined(op, arg);
}
/// Resizes an out= tensor to shape (PyTorch resizes when the shape differs).
void resize_output(const Tensor& out, IntArrayRef shape, const char* op);
/// Throws when t has elements sharing memory (see Note [Internal overlap]).
void assert_no_internal_overlap(const Tensor& t, const char* op);
/// Throws when out and in share memory other than exactly (see Note [Internal overlap]).
void assert_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op);

}  // namespace retorch::detail
