// TensorImpl: storage + sizes/strides/offset + dtype + dispatch keys + the autograd slot.
#pragma once
#include <cstdint>
#include <memory>

#include "retorch/core/ArrayRef.h"
#include "retorch/core/ScalarType.h"
#include "retorch/core/Storage.h"
#include "retorch/dispatch/DispatchKeySet.h"

namespace retorch {

struct AutogradMeta;
struct AutogradMetaDeleter {
  void operator()(AutogradMeta* m) const;
};

class TensorImpl : public intrusive_target {
 public:
  TensorImpl(Storage storage, ScalarType dtype);
  /// A tensor that reports `device` while its storage lives elsewhere: how the device fallback
  /// hands results back on the device the program asked for (Note [Device routing]).
  TensorImpl(Storage storage, ScalarType dtype, Device device);
  /// other's storage and geometry, reporting `device` (the device fallback's zero-copy move of an
  /// argument: Note [Device routing]); no autograd slot. The geometry is copied, not re-derived.
  TensorImpl(const TensorImpl& other, Device device);
  TensorImpl(const TensorImpl&) = delete;
  ~TensorImpl();

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return int64_t(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  size_t itemsize() const { return element_size(dtype_); }
  /// The device the program sees (the storage's, unless the device fallback set it).
  Device device() const { return device_; }
  const Storage& storage() const { return storage_; }
  bool is_contiguous() const { return is_contiguous_; }
  DispatchKeySet key_set() const { return key_set_; }
  void add_key(DispatchKey k) { key_set_ = key_set_.add(k); }
  /// Reports `device` from now on, its storage where it is: the device fallback hands back a
  /// result no one else holds this way (Note [Device routing]).
  void relabel_device(Device device) {
    key_set_ = (key_set_ - device_key_set(device_.type)) | device_key_set(device.type);
    device_ = device;
  }
  void remove_key(DispatchKey k) { key_set_ = key_set_.remove(k); }

  /// Sets a view's geometry; checks that it stays inside the storage.
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset);
  /// Sets sizes with contiguous strides (keeps the offset).
  void set_sizes_contiguous(IntArrayRef sizes);
  /// Grows the storage when the new contiguous size does not fit (resize_ semantics).
  void resize_contiguous(IntArrayRef sizes);

  /// Pointer to element 0; errors if the storage no longer covers the view, or on meta tensors
  /// (which have no data).
  void* data() const {
    // Meta tensors have no data, and a device's own memory (cuda with the CUDA backend) is not
    // the host's to read: both are errors, never a read of what is not there.
    if (__builtin_expect(required_bytes_ > int64_t(storage_->nbytes()) ||
                             storage_->device().type != kCPU,
                         0))
      raise_no_data();
    return static_cast<char*>(storage_->data()) + storage_offset_ * int64_t(itemsize());
  }

  /// Takes other's storage, geometry, dtype and device, keeping this tensor's identity and
  /// autograd slot (Tensor::set_data, used by Module::to).
  void set_data_from(const TensorImpl& other);

  uint32_t version() const { return storage_->version(); }
  void bump_version() { storage_->bump_version(); }

  // Scalars passed where a Tensor is expected become "wrapped numbers": they take part in
  // type promotion like Python numbers (see result_type in TypePromotion.cpp).
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool w) { is_wrapped_number_ = w; }

  /// For a tensor made by a view op (ops/Views.cpp): the tensor it views, the root of any chain
  /// of views, so that an in-place write into the view reaches the base's autograd history even
  /// when neither had one (Note [In-place on views]); null for other tensors.
  TensorImpl* view_base() const { return view_base_.get(); }
  void set_view_base(intrusive_ptr<TensorImpl> base) { view_base_ = std::move(base); }

  /// The Python object wrapping this tensor, if Python made one and it is alive (a borrowed
  /// pointer, set and cleared by the Python bindings: Note [One Python object per tensor]).
  void* pyobj() const { return pyobj_; }
  void set_pyobj(void* o) { pyobj_ = o; }

  AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  /// Creates the autograd slot on first use.
  AutogradMeta& ensure_autograd_meta();
  void reset_autograd_meta() { autograd_meta_.reset(); }

 private:
  [[noreturn]] void raise_no_data() const;
  void refresh();

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  int64_t required_bytes_ = 0;  // bytes of storage the view touches (from offset 0)
  std::unique_ptr<AutogradMeta, AutogradMetaDeleter> autograd_meta_;
  intrusive_ptr<TensorImpl> view_base_;
  void* pyobj_ = nullptr;
  DispatchKeySet key_set_;
  ScalarType dtype_;
  Device device_;
  bool is_contiguous_ = true;
  bool is_wrapped_number_ = false;
};

// See Note [Version counter]. Kept small: one TensorImpl per op output.
static_assert(sizeof(TensorImpl) <= 192, "TensorImpl grew; keep hot fields compact");

/// Contiguous (row-major) strides for sizes.
DimVector contiguous_strides(IntArrayRef sizes);
/// Number of elements of a shape; errors on negative sizes.
int64_t compute_numel(IntArrayRef sizes);

}  // namespace retorch
