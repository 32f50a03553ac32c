// Direct kernels: an op's backend kernel in its `f(args..., Tensor& out)` form, callable on
// captured arguments without dispatch or boxing (the launch manager's replay, Note [Direct
// replay] in retorch/runtime/LaunchManager.cpp).
#pragma once
#include "retorch/dispatch/Dispatcher.h"

namespace retorch {

/// Runs the kernel on args (the op's arguments, in schema order) and writes its one result into
/// out, which may be defined (written in place) or not (allocated by the kernel).
using DirectKernel = void (*)(const IValue* args, Tensor& out);

/// Registers op's direct kernel for backend key k (generated registration only).
void register_direct_kernel(const OperatorHandle& op, DispatchKey k, DirectKernel f);
/// The op's direct kernel for backend key k, or nullptr.
DirectKernel direct_kernel(const OperatorHandle& op, DispatchKey k);

}  // namespace retorch
