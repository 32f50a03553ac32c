// Primitive (non-aten) operations on numbers and bools that scripted code uses: prim::add on ints,
// comparisons, prim::Bool of a tensor, prim::NumToTensor. The interpreter runs them on its stack.
#pragma once
#include <string_view>

#include "retorch/dispatch/IValue.h"

namespace retorch::jit {

/// Pops the node's inputs from the end of `stack` and pushes its outputs.
using PrimFn = void (*)(Stack& stack);

/// The function for a primitive node kind ("prim::add", "prim::NumToTensor"), or nullptr.
PrimFn find_prim_op(std::string_view kind);

}  // namespace retorch::jit
