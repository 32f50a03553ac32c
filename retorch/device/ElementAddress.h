// The address of a tensor's element 0 wherever its memory lives, for code that hands memory to a
// device (kernels, NCCL) rather than reading it on the host.
#pragma once
#include <cstdint>

#include "retorch/core/Tensor.h"

namespace retorch {

/// Element 0 of t in its storage: a device address for tensors in device memory (what torch's
/// data_ptr() returns for them). Never dereference it on the host unless the storage is the
/// host's: TensorImpl::data() is the checked host view.
inline void* element_address(const Tensor& t) {
  return static_cast<char*>(t.impl()->storage()->data()) +
         t.storage_offset() * int64_t(t.element_size());
}

}  // namespace retorch
