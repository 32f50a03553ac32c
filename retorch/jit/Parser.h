// Reads graphs back from the text Graph::str() prints (PyTorch's graph text form).
#pragma once
#include <memory>
#include <string_view>
#include <vector>

#include "retorch/jit/IR.h"

namespace retorch::jit {

/// Parses graph text (`graph(%x : Float(2, 3), ...): ... return (%y)`) into a new Graph, so that
/// parse_ir(g.str())->str() == g.str(). `aten::` nodes get their operator by overload
/// resolution; `<Tensor>` constants take the next tensor of `tensor_constants`, in order.
/// Malformed text throws a retorch::Error naming the line and column.
std::unique_ptr<Graph> parse_ir(std::string_view text,
                                const std::vector<Tensor>* tensor_constants = nullptr);

/// Parses one type in Type::str()'s spelling ("Float(2, *, device=cpu)", "int[]?", "(Tensor,
/// int)").
TypePtr parse_type(std::string_view text);

}  // namespace retorch::jit
