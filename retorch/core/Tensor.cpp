// Tensor handle methods that are not ops: geometry accessors, item, factories over storage.
#include "retorch/core/Tensor.h"

#include <atomic>
#include <iostream>

#include "retorch/core/AutogradMeta.h"
#include "retorch/core/Dtypes.h"
#include "retorch/core/Shape.h"
#include "retorch/core/ValueReadHook.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch {

int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, const char* op, bool scalar_ok) {
  if (ndim <= 0) {
    RT_CHECK_INDEX(scalar_ok, op ? op : "", ": dimension specified as ", dim,
                   " but tensor has no dimensions");
    ndim = 1;
  }
  RT_CHECK_INDEX(dim >= -ndim && dim < ndim, op ? op : "",
                 op ? ": " : "", "Dimension out of range (expected to be in range of [", -ndim,
                 ", ", ndim - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + ndim : dim;
}

int64_t Tensor::size(int64_t d) const {
  return sizes()[size_t(maybe_wrap_dim(d, dim(), "size", false))];
}
int64_t Tensor::stride(int64_t d) const {
  return strides()[size_t(maybe_wrap_dim(d, dim(), "stride", false))];
}

template <typename T>
T* Tensor::data_ptr() const {
  RT_CHECK(defined(), "data_ptr: undefined tensor");
  RT_CHECK_TYPE(CppTypeToScalarType<T>::value == dtype(), "expected scalar type ",
                CppTypeToScalarType<T>::value, " but found ", dtype());
  return static_cast<T*>(impl_->data());
}
#define RT_INSTANTIATE_DATA_PTR(T, name) template T* Tensor::data_ptr<T>() const;
RT_FORALL_TYPES(RT_INSTANTIATE_DATA_PTR)
#undef RT_INSTANTIATE_DATA_PTR

namespace {
std::atomic<detail::ValueReadHook> g_value_read_hook{nullptr};
}  // namespace

void detail::set_value_read_hook(ValueReadHook hook) {
  g_value_read_hook.store(hook, std::memory_order_release);
}

void detail::notify_value_read(const Tensor& t) {
  if (ValueReadHook h = g_value_read_hook.load(std::memory_order_acquire)) h(t);
}

Scalar Tensor::item() const {
  RT_CHECK(defined(), "item(): undefined tensor");
  detail::notify_value_read(*this);
  RT_CHECK(numel() == 1, "a Tensor with ", numel(),
           " elements cannot be converted to Scalar (shape ", sizes(), ")");
  Tensor t = is_cpu() ? *this : to(Device(kCPU));
  Scalar s;
  RT_DISPATCH_ALL(t.dtype(), "item", [&] {
    using opm = opmath_t<scalar_t>;
    scalar_t v = *static_cast<const scalar_t*>(t.impl()->data());
    if constexpr (std::is_same_v<scalar_t, bool>) s = Scalar(bool(v));
    else s = Scalar(static_cast<opm>(v));
  });
  return s;
}

// ---------------------------------------------------------------- memory formats

bool Tensor::is_contiguous(MemoryFormat memory_format) const {
  if (memory_format == MemoryFormat::ChannelsLast)
    return dim() == 4 && is_channels_last_contiguous_strides(sizes(), strides());
  return is_contiguous();
}

MemoryFormat Tensor::suggest_memory_format() const {
  return is_channels_last_like_strides(sizes(), strides()) ? MemoryFormat::ChannelsLast
                                                           : MemoryFormat::Contiguous;
}

DimVector memory_format_strides(const Tensor& self, MemoryFormat memory_format) {
  if (memory_format == MemoryFormat::Preserve) {
    if (is_non_overlapping_and_dense_strides(self.sizes(), self.strides()))
      return DimVector(self.strides());
    memory_format = self.suggest_memory_format();
  }
  if (memory_format == MemoryFormat::ChannelsLast) return channels_last_strides(self.sizes());
  return contiguous_strides(self.sizes());
}

Tensor empty(IntArrayRef size, TensorOptions options, MemoryFormat memory_format) {
  RT_CHECK(memory_format != MemoryFormat::Preserve, "preserve memory format is unsupported by "
           "the empty operator");
  if (memory_format == MemoryFormat::Contiguous) return retorch::empty(size, options);
  return retorch::empty_strided(size, channels_last_strides(size), options);
}

Tensor empty_like(const Tensor& self, TensorOptions options, MemoryFormat memory_format) {
  TensorOptions o = options.dtype(options.dtype_.value_or(self.dtype()))
                        .device(options.device_.value_or(self.device()));
  return retorch::empty_strided(self.sizes(), memory_format_strides(self, memory_format), o);
}

// Copies go through copy_, so autograd records them (CopyBackwards: the gradient passes as is).
Tensor Tensor::contiguous(MemoryFormat memory_format) const {
  RT_CHECK(memory_format != MemoryFormat::ChannelsLast || dim() == 4,
           "required rank 4 tensor to use channels_last format");
  if (is_contiguous(memory_format)) return *this;
  RT_CHECK(memory_format != MemoryFormat::Preserve, "preserve memory format is unsupported by "
           "the contiguous operator");
  if (memory_format == MemoryFormat::Contiguous) return contiguous();
  return clone(memory_format);
}

Tensor Tensor::clone(MemoryFormat memory_format) const {
  RT_CHECK(memory_format != MemoryFormat::ChannelsLast || dim() == 4,
           "required rank 4 tensor to use channels_last format");
  if (memory_format == MemoryFormat::Contiguous) return clone();
  Tensor out = retorch::empty_like(*this, TensorOptions(), memory_format);
  return out.copy_(*this);
}

Tensor make_empty(IntArrayRef sizes, ScalarType dtype, Device device) {
  int64_t n = compute_numel(sizes);
  auto storage = make_intrusive<StorageImpl>(size_t(n) * element_size(dtype), allocator_for(device));
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype);
  impl->set_sizes_contiguous(sizes);
  return Tensor(std::move(impl));
}

Tensor make_empty(IntArrayRef sizes, ScalarType dtype, Device device, MemoryFormat memory_format) {
  if (memory_format != MemoryFormat::ChannelsLast) return make_empty(sizes, dtype, device);
  return make_empty_strided(sizes, channels_last_strides(sizes), dtype, device);
}

Tensor make_empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  compute_numel(sizes);
  int64_t extent = storage_extent(sizes, strides, 0);
  auto storage = make_intrusive<StorageImpl>(size_t(extent) * element_size(dtype), allocator_for(device));
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype);
  impl->set_sizes_and_strides(sizes, strides, 0);
  return Tensor(std::move(impl));
}

namespace {
struct BlobCtx {
  std::function<void(void*)> deleter;
};
void blob_deleter(void* ctx, void* ptr, size_t) {
  auto* c = static_cast<BlobCtx*>(ctx);
  if (c->deleter) c->deleter(ptr);
  delete c;
}
}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                 std::function<void(void*)> deleter, Device device) {
  compute_numel(sizes);
  int64_t extent = storage_extent(sizes, strides, 0);
  size_t nbytes = size_t(extent) * element_size(dtype);
  DataPtr dp(data, nbytes, new BlobCtx{std::move(deleter)}, &blob_deleter, device);
  auto storage = make_intrusive<StorageImpl>(std::move(dp), nbytes);
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype);
  impl->set_sizes_and_strides(sizes, strides, 0);
  return Tensor(std::move(impl));
}

Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype) {
  return from_blob(data, sizes, contiguous_strides(sizes), dtype);
}

Tensor alias_with_geometry(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                           int64_t offset) {
  auto impl = make_intrusive<TensorImpl>(self.impl()->storage(), self.dtype(), self.device());
  impl->set_sizes_and_strides(sizes, strides, offset);
  return Tensor(std::move(impl));
}

Tensor scalar_to_tensor(const Scalar& s, Device device) {
  Tensor t = make_empty({}, s.type(), Device(kCPU));
  if (s.is_floating_point()) *static_cast<double*>(t.data_ptr()) = s.to_double();
  else if (s.is_boolean()) *static_cast<bool*>(t.data_ptr()) = s.to_bool();
  else *static_cast<int64_t*>(t.data_ptr()) = s.to_long();
  if (!device.is_cpu()) t = t.to(device);
  t.impl()->set_wrapped_number(true);
  return t;
}

Tensor Tensor::operator[](int64_t index) const { return select(0, index); }
Tensor& Tensor::operator+=(const Tensor& o) { return add_(o); }
Tensor& Tensor::operator+=(const Scalar& o) { return add_(o); }
Tensor& Tensor::operator-=(const Tensor& o) { return sub_(o); }
Tensor& Tensor::operator-=(const Scalar& o) { return sub_(o); }
Tensor& Tensor::operator*=(const Tensor& o) { return mul_(o); }
Tensor& Tensor::operator*=(const Scalar& o) { return mul_(o); }
Tensor& Tensor::operator/=(const Tensor& o) { return div_(o); }
Tensor& Tensor::operator/=(const Scalar& o) { return div_(o); }
Tensor Tensor::operator-() const { return neg(); }

void Tensor::print() const { std::cout << toString() << std::endl; }

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.toString(); }

}  // namespace retorch
