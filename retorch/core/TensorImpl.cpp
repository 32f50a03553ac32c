// TensorImpl geometry updates, storage bounds checks, and the autograd slot.
#include "retorch/core/TensorImpl.h"

#include <cstring>

#include "retorch/core/AutogradMeta.h"
#include "retorch/core/Error.h"
#include "retorch/core/Shape.h"

namespace retorch {

void AutogradMetaDeleter::operator()(AutogradMeta* m) const { delete m; }

TensorImpl::TensorImpl(Storage storage, ScalarType dtype)
    : storage_(std::move(storage)), dtype_(dtype), device_(storage_->device()) {
  key_set_ = device_key_set(device_.type);
  refresh();
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, Device device)
    : storage_(std::move(storage)), dtype_(dtype), device_(device) {
  key_set_ = device_key_set(device_.type);
  refresh();
}

TensorImpl::TensorImpl(const TensorImpl& other, Device device)
    : storage_(other.storage_),
      sizes_(other.sizes_),
      strides_(other.strides_),
      storage_offset_(other.storage_offset_),
      numel_(other.numel_),
      required_bytes_(other.required_bytes_),
      key_set_(device_key_set(device.type)),
      dtype_(other.dtype_),
      device_(device),
      is_contiguous_(other.is_contiguous_),
      is_wrapped_number_(other.is_wrapped_number_) {}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_data_from(const TensorImpl& other) {
  const bool autograd = key_set_.has(DispatchKey::Autograd);
  storage_ = other.storage_;
  sizes_ = other.sizes_;
  strides_ = other.strides_;
  storage_offset_ = other.storage_offset_;
  dtype_ = other.dtype_;
  device_ = other.device_;
  key_set_ = device_key_set(device_.type);
  if (autograd) key_set_ = key_set_.add(DispatchKey::Autograd);
  refresh();
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector st(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

int64_t compute_numel(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    RT_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
    n *= s;
  }
  return n;
}

void TensorImpl::refresh() {
  numel_ = compute_numel(sizes_);
  is_contiguous_ = is_contiguous_strides(sizes_, strides_);
  required_bytes_ = numel_ == 0 ? 0 : storage_extent(sizes_, strides_, storage_offset_) * int64_t(itemsize());
}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  RT_CHECK(sizes.size() == strides.size(), "as_strided: sizes ", sizes, " and strides ", strides,
           " must have the same length");
  RT_CHECK(offset >= 0, "as_strided: negative storage offset ", offset);
  for (int64_t st : strides) RT_CHECK(st >= 0, "as_strided: negative strides are not supported: ", strides);
  sizes_ = DimVector(sizes);
  strides_ = DimVector(strides);
  storage_offset_ = offset;
  refresh();
  RT_CHECK(required_bytes_ <= int64_t(storage_->nbytes()), "setStorage: sizes ", sizes,
           ", strides ", strides, ", storage offset ", offset, ", and itemsize ", itemsize(),
           " requiring a storage size of ", required_bytes_,
           " are out of bounds for storage of size ", storage_->nbytes());
}

void TensorImpl::set_sizes_contiguous(IntArrayRef sizes) {
  sizes_ = DimVector(sizes);
  strides_ = contiguous_strides(sizes);
  refresh();
}

void TensorImpl::resize_contiguous(IntArrayRef sizes) {
  sizes_ = DimVector(sizes);
  strides_ = contiguous_strides(sizes);
  refresh();
  if (required_bytes_ > int64_t(storage_->nbytes())) {
    RT_CHECK(storage_->resizable(), "Trying to resize storage that is not resizable");
    storage_->resize(size_t(required_bytes_));
  }
}

void TensorImpl::raise_no_data() const {
  RT_CHECK_KIND(!device_.is_meta(), ErrorKind::kNotImplemented,
                "Cannot access the data of a meta tensor (shape ", sizes(), ", ", dtype_,
                "): meta tensors have shapes and dtypes but no data");
  RT_CHECK(storage_->device().is_cpu(), "Cannot access the data of a ", device_,
           " tensor (shape ", sizes(), ", ", dtype_, ") from the host: its memory is on the ",
           "device; copy it to the cpu first (.cpu() or .to('cpu'))");
  RT_ERROR("tensor of shape ", sizes(), " with strides ", strides(), " and storage offset ",
           storage_offset_, " needs ", required_bytes_, " bytes but its storage has only ",
           storage_->nbytes(), " bytes (its storage was resized or freed under this view)");
}

AutogradMeta& TensorImpl::ensure_autograd_meta() {
  if (!autograd_meta_) autograd_meta_.reset(new AutogradMeta());
  return *autograd_meta_;
}

void StorageImpl::resize(size_t nbytes) {
  RT_CHECK(allocator_, "Trying to resize storage that is not resizable");
  DataPtr fresh = allocator_->allocate(nbytes);
  size_t keep = std::min(nbytes, nbytes_);
  if (keep && data_.get() && data_.device().is_cpu()) std::memcpy(fresh.get(), data_.get(), keep);
  data_ = std::move(fresh);
  nbytes_ = nbytes;
}

}  // namespace retorch
