// Compiled backward: the backward kernel of a pointwise kernel (reverse-mode over its loop IR)
// and the autograd node that runs it (Note [Compiled backward]).
#pragma once
#include <memory>
#include <vector>

#include "retorch/compiler/LoopIR.h"
#include "retorch/core/Tensor.h"

namespace retorch::compiler {

/// The backward kernel of k (named k.name + "_backward"), or nullptr when k has reductions, a
/// floating statement without partials, or nothing to differentiate.
std::shared_ptr<Kernel> make_backward(const Kernel& k);

using KernelFn = void (*)(void* const*);

/// How a generated kernel runs on its arguments (input pointers, then output pointers): a host
/// function, or a CUDA kernel (Note [Generated CUDA kernels]) launched over `work` items in
/// blocks of `block` threads on the current device.
struct KernelCall {
  KernelFn host = nullptr;
  void* cuda = nullptr;
  int64_t work = 0;
  int block = 0;
  explicit operator bool() const { return host != nullptr || cuda != nullptr; }
  void operator()(std::vector<void*>& args) const;
};

/// Makes a kernel's outputs (computed from `inputs` by its forward) differentiable: their
/// grad_fn runs `backward` (the kernel's backward) through `backward_fn` on the saved inputs and
/// the incoming gradients, on the inputs' device; it keeps `library` (the code's owner) alive
/// as long as it lives.
void attach_backward(std::shared_ptr<const Kernel> backward, KernelCall backward_fn,
                     std::shared_ptr<const void> library, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs);

}  // namespace retorch::compiler
