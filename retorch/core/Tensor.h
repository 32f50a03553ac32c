// Tensor: the user-facing handle on a TensorImpl, with every generated op as a method.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "retorch/core/Generator.h"
#include "retorch/core/MemoryFormat.h"
#include "retorch/core/Scalar.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/core/TensorOptions.h"

namespace retorch {

namespace autograd {
struct Node;
}
class Tensor;
using TensorList = ArrayRef<Tensor>;

// Note [OptionalIntArrayRef]
// std::optional<IntArrayRef> builds its ArrayRef inside optional's converting constructor, so a
// call like x.sum({1}) or sum(x, 1) (an int, not an int64_t) made an int64_t temporary that died
// when that constructor returned, leaving the ArrayRef dangling. These constructors receive the
// value at the call site, where a temporary lives to the end of the full-expression (like
// c10::OptionalArrayRef); the rest is optional's interface.
class OptionalIntArrayRef {
 public:
  constexpr OptionalIntArrayRef() = default;
  constexpr OptionalIntArrayRef(std::nullopt_t) {}
  constexpr OptionalIntArrayRef(IntArrayRef a) : value_(a) {}
  constexpr OptionalIntArrayRef(const int64_t& one) : value_(IntArrayRef(one)) {}
  OptionalIntArrayRef(const std::vector<int64_t>& v) : value_(IntArrayRef(v)) {}
  constexpr OptionalIntArrayRef(const std::initializer_list<int64_t>& l) : value_(IntArrayRef(l)) {}
  constexpr OptionalIntArrayRef(const std::optional<IntArrayRef>& o) : value_(o) {}

  constexpr bool has_value() const { return value_.has_value(); }
  constexpr explicit operator bool() const { return value_.has_value(); }
  constexpr const IntArrayRef& operator*() const { return *value_; }
  constexpr const IntArrayRef* operator->() const { return &*value_; }
  const IntArrayRef& value() const { return value_.value(); }
  IntArrayRef value_or(IntArrayRef fallback) const { return value_ ? *value_ : fallback; }

 private:
  std::optional<IntArrayRef> value_;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return bool(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  uint32_t use_count() const { return impl_.use_count(); }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  /// Size of one dim; negative dims count from the end.
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return impl_->numel(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  ScalarType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_floating_point() const { return is_floating_type(dtype()); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  /// Dense in memory_format's order (ChannelsLast: NHWC, false unless 4-d; Preserve: plain).
  bool is_contiguous(MemoryFormat memory_format) const;
  /// ChannelsLast when 4-d with NHWC-ordered strides (PyTorch's rule, ties go to NCHW).
  MemoryFormat suggest_memory_format() const;
  int64_t storage_offset() const { return impl_->storage_offset(); }
  int64_t element_size() const { return int64_t(impl_->itemsize()); }
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  DispatchKeySet key_set() const { return impl_->key_set(); }

  void* data_ptr() const { return impl_->data(); }
  /// Typed pointer to element 0; errors when T does not match the dtype.
  template <typename T>
  T* data_ptr() const;
  /// The value of a one-element tensor.
  Scalar item() const;
  template <typename T>
  T item() const { return item().to<T>(); }

  // Autograd
  bool requires_grad() const;
  /// Marks a leaf as needing a gradient (errors on non-leaves and non-float dtypes).
  Tensor& set_requires_grad(bool r);
  Tensor& requires_grad_(bool r = true) { return set_requires_grad(r); }
  const Tensor& grad() const;
  Tensor& mutable_grad();
  void set_grad(const Tensor& g);
  /// Makes this tensor use new_data's storage, geometry and dtype while keeping its identity
  /// and autograd state (torch's `param.data = new_data`).
  void set_data(const Tensor& new_data) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  bool is_leaf() const;
  uint32_t output_nr() const;
  uint32_t _version() const { return impl_->version(); }
  /// Runs backward from this tensor (a scalar unless gradient is given).
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, TensorList inputs = {}) const;
  /// Registers fn to run on this tensor's gradient; returns a handle for remove_hook.
  unsigned register_hook(std::function<Tensor(const Tensor&)> fn) const;
  void remove_hook(unsigned handle) const;
  void retain_grad() const;
  bool retains_grad() const;

  std::string toString() const;
  void print() const;

  Tensor operator[](int64_t index) const;
  Tensor& operator+=(const Tensor& o);
  Tensor& operator+=(const Scalar& o);
  Tensor& operator-=(const Tensor& o);
  Tensor& operator-=(const Scalar& o);
  Tensor& operator*=(const Tensor& o);
  Tensor& operator*=(const Scalar& o);
  Tensor& operator/=(const Tensor& o);
  Tensor& operator/=(const Scalar& o);
  Tensor operator-() const;

  /// self laid out densely in memory_format, or self when it already is (differentiable).
  Tensor contiguous(MemoryFormat memory_format) const;
  /// A copy laid out in memory_format; Preserve keeps dense strides, else the suggested format.
  Tensor clone(MemoryFormat memory_format) const;

  // Generated: one method per op declared with `variants: method` in ops.yaml.
#include "retorch/generated/TensorMethods.h.inc"

 private:
  intrusive_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

/// A 0-dim tensor holding s, marked as a wrapped number for type promotion.
Tensor scalar_to_tensor(const Scalar& s, Device device = Device(kCPU));
/// Strides of a new tensor shaped like self in memory_format (Preserve: PyTorch's empty_like
/// rule, self's strides when dense, else the suggested format's).
DimVector memory_format_strides(const Tensor& self, MemoryFormat memory_format);
/// An uninitialized tensor laid out in memory_format (Preserve is not allowed here).
Tensor empty(IntArrayRef size, TensorOptions options, MemoryFormat memory_format);
/// An uninitialized tensor like self (dtype/device from options when set) in memory_format.
Tensor empty_like(const Tensor& self, TensorOptions options, MemoryFormat memory_format);
/// A new tensor over fresh storage (uninitialized).
Tensor make_empty(IntArrayRef sizes, ScalarType dtype, Device device = Device(kCPU));
/// make_empty laid out in memory_format (Contiguous or ChannelsLast): a kernel's result in the
/// layout it computes in.
Tensor make_empty(IntArrayRef sizes, ScalarType dtype, Device device, MemoryFormat memory_format);
/// A new tensor with the given strides over fresh storage (uninitialized).
Tensor make_empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                          Device device = Device(kCPU));
/// Wraps caller-owned memory; deleter (may be null) runs when the last view dies.
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                 std::function<void(void*)> deleter = nullptr, Device device = Device(kCPU));
Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype);
/// A tensor sharing self's storage with new geometry (no autograd; used by view kernels).
Tensor alias_with_geometry(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                           int64_t offset);

/// Wraps a negative dim and checks it is in range; `op` names the caller in the error.
int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, const char* op = nullptr, bool scalar_ok = true);

}  // namespace retorch
