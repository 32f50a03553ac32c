// AutogradMeta: the autograd slot of a TensorImpl (grad, grad_fn, requires_grad, hooks, view base).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch {

namespace autograd {
struct Node;
}

struct TensorHook {
  unsigned handle;
  std::function<Tensor(const Tensor&)> fn;
};

struct AutogradMeta {
  Tensor grad_;
  std::shared_ptr<autograd::Node> grad_fn_;          // null for leaves
  std::weak_ptr<autograd::Node> grad_accumulator_;   // leaves only; the graph owns it
  std::vector<TensorHook> hooks_;                    // leaf hooks (non-leaf hooks live on grad_fn_)
  Tensor base_;                                      // set for views created by differentiable view ops
  uint32_t output_nr_ = 0;
  bool requires_grad_ = false;                       // leaves only; non-leaves derive it from grad_fn_
  bool retains_grad_ = false;
  bool is_view_ = false;
};

}  // namespace retorch
