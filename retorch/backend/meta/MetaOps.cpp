// The meta backend: tensors with shapes and dtypes but no data. Its allocator, the fallback for
// ops without a meta kernel, and the kernels that differ from the CPU ones (copies).
#include "retorch/core/Allocator.h"
#include "retorch/core/Error.h"
#include "retorch/core/Shape.h"
#include "retorch/dispatch/Dispatcher.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch {

// Note [Meta through CPU kernels]
// Most meta kernels are the CPU kernels themselves (`Meta: cpu` in ops.yaml). A CPU kernel
// checks its arguments and sets up its outputs (shape, dtype, strides, memory format) before it
// touches data, so on meta operands it can stop there: TensorIterator runs no loop when its
// operands are meta (TensorIterator::is_meta), and the other kernels return right after
// allocating their results (`if (result.device().is_meta()) return result;`). Meta shapes are
// then the real shapes by construction, and reading data by mistake is a clear error
// (TensorImpl::data refuses meta tensors) rather than a crash. Ops without a meta kernel raise
// (the Meta fallback below), and the compatibility matrix lists them as missing.

namespace {

// Allocations of meta tensors: a size and no memory.
class MetaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    return DataPtr(nullptr, nbytes, nullptr, nullptr, Device(kMeta));
  }
  AllocatorStats stats() const override { return {}; }
};

void meta_fallback(const OperatorHandle& op, DispatchKeySet, Stack*) {
  RT_ERROR_KIND(ErrorKind::kNotImplemented, "Could not run '", op.qualified_name(),
                "' on the meta device: its output shape depends on the input's values, which "
                "meta tensors do not have (docs/devices.md lists the ops without a meta kernel)");
}

}  // namespace

namespace detail {
// Called by Dispatcher::singleton() once the generated tables exist.
void register_meta_backend(Dispatcher& d) {
  static MetaAllocator allocator;
  set_allocator(kMeta, &allocator);
  d.register_fallback(DispatchKey::Meta, &meta_fallback);
}
}  // namespace detail

namespace meta {

// Copying into a meta tensor checks shapes only; copying out of one has nothing to copy.
Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  (void)non_blocking;
  RT_CHECK_KIND(self.device().is_meta() || !src.device().is_meta(), ErrorKind::kNotImplemented,
                "Cannot copy out of meta tensor; no data!");
  RT_CHECK(is_expandable_to(src.sizes(), self.sizes()), "copy_: the size of src ", src.sizes(),
           " must be broadcastable to the size of self ", self.sizes());
  return self;
}

Tensor to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device,
               bool non_blocking) {
  (void)non_blocking;
  const Device d = device.value_or(self.device());
  RT_CHECK_KIND(d.is_meta(), ErrorKind::kNotImplemented, "Cannot copy out of meta tensor; no data!",
                " (to ", d, ")");
  return make_empty(self.sizes(), dtype.value_or(self.dtype()), Device(kMeta));
}

}  // namespace meta

}  // namespace retorch
