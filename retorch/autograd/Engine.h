// The autograd engine: runs backward over the Node graph in dependency order.
#pragma once
#include <optional>
#include <vector>

#include "retorch/autograd/Node.h"

namespace retorch::autograd {

/// torch.autograd.backward: accumulates gradients of roots into the leaves' .grad
/// (or only into `inputs` when given).
void backward(const variable_list& roots, const variable_list& grad_roots = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const variable_list& inputs = {});

/// torch.autograd.grad: returns d(roots)/d(inputs) without touching .grad.
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {},
                   std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                   bool allow_unused = false);

/// Compares analytical gradients of fn at inputs (float64 recommended) with central
/// differences; throws retorch::Error describing the first mismatch if raise_exception.
bool gradcheck(const std::function<variable_list(const variable_list&)>& fn,
               const variable_list& inputs, double eps = 1e-6, double atol = 1e-5,
               double rtol = 1e-3, bool raise_exception = true);

}  // namespace retorch::autograd
