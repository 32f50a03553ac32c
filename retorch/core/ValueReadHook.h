// A hook told when a tensor's value leaves the tensor world (item(), Python's tolist()): the JIT
// tracer installs one to warn that the trace freezes that value.
#pragma once

namespace retorch {

class Tensor;

namespace detail {
using ValueReadHook = void (*)(const Tensor& t);
/// Installs the process-wide hook (nullptr: none).
void set_value_read_hook(ValueReadHook hook);
/// Reports t to the installed hook, if any (Tensor::item() calls this).
void notify_value_read(const Tensor& t);
}  // namespace detail

}  // namespace retorch
