// Visiting the tensors of a boxed call's stack slots, for boxed kernels that rewrite them (the
// device fallback's moves between devices, autocast's casts).
#pragma once
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "retorch/dispatch/IValue.h"

namespace retorch {

/// Calls f(Tensor&) on every tensor a stack slot holds (a Tensor, or the defined ones of a
/// list); lists are written back, so f may replace the tensors it is given.
template <typename F>
void for_each_tensor(IValue& v, const F& f) {
  if (v.is_tensor()) {
    f(v.to_tensor());
  } else if (v.is_tensor_list()) {
    std::vector<Tensor> l = v.to_tensor_list();
    for (auto& t : l) f(t);
    v = IValue(std::move(l));
  } else if (std::holds_alternative<std::vector<std::optional<Tensor>>>(v.payload())) {
    std::vector<std::optional<Tensor>> l = v.to_optional_tensor_list();
    for (auto& t : l)
      if (t) f(*t);
    v = IValue(std::move(l));
  }
}

}  // namespace retorch
