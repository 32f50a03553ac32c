// StorageImpl: refcounted bytes on a device, shared by a tensor and all its views.
#pragma once
#include <cstddef>
#include <cstdint>

#include "retorch/core/Allocator.h"
#include "retorch/core/IntrusivePtr.h"

namespace retorch {

// Note [Version counter]
// Every in-place write to a tensor bumps the version of its storage. Views share storage, so
// they share the counter, as PyTorch's views share a VariableVersion. Autograd records the
// version when it saves a tensor for backward and refuses to use the tensor if the version
// has moved (see SavedVariable::unpack).
class StorageImpl : public intrusive_target {
 public:
  StorageImpl(size_t nbytes, Allocator* allocator)
      : data_(allocator->allocate(nbytes)), nbytes_(nbytes), allocator_(allocator) {}
  StorageImpl(DataPtr data, size_t nbytes, Allocator* allocator = nullptr)
      : data_(std::move(data)), nbytes_(nbytes), allocator_(allocator) {}

  void* data() const { return data_.get(); }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return data_.device(); }
  bool resizable() const { return allocator_ != nullptr; }
  /// Reallocates to nbytes, keeping the common prefix of the old contents.
  void resize(size_t nbytes);

  uint32_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  DataPtr data_;
  size_t nbytes_;
  Allocator* allocator_;
  uint32_t version_ = 0;
};

using Storage = intrusive_ptr<StorageImpl>;

}  // namespace retorch
