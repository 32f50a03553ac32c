// The emitter table of pointwise ops: for each lowerable op (by "name.overload"), how its C++
// expression is built from its operands' expressions and its constant arguments.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "retorch/dispatch/IValue.h"

namespace retorch::compiler {

/// One argument of a node being lowered: a tensor (an expression of C++ type `ctype`) or a
/// constant (a non-tensor argument, or a 0-d tensor constant folded to its number).
struct Operand {
  bool is_tensor = false;
  std::string expr;    // tensors: "l0", "t3"
  std::string ctype;   // tensors: "float", "double", "bool", "int64_t"
  ScalarType dtype = kFloat;
  IValue constant;     // constants
};

/// Builds the expression of a node computed in C++ type `ct`, or nullopt when these constant
/// arguments are not supported (the node then runs eagerly).
using EmitFn =
    std::function<std::optional<std::string>(const std::vector<Operand>& args, const std::string& ct)>;

struct PointwiseRule {
  EmitFn emit;
  bool floating = false;    // computes in float/double only (exp, tanh, div, ...)
  bool comparison = false;  // output bool, computed in the promoted type of the inputs
};

/// The rule for an op key ("add.Tensor", "tanh"), or nullptr.
const PointwiseRule* find_pointwise_rule(std::string_view op_key);

/// The local derivatives of a node: one expression per argument of type `ct` (empty where the
/// argument takes no gradient), given the arguments and the name of the node's result `y`; or
/// nullopt when these constant arguments are not supported.
using GradFn = std::function<std::optional<std::vector<std::string>>(
    const std::vector<Operand>& args, const std::string& y, const std::string& ct)>;

/// The derivative rule for an op key (PointwiseGrads.cpp), or nullptr: a kernel with a floating
/// op that has none is not differentiated by the compiler (its nodes run eagerly under grad).
const GradFn* find_pointwise_grad(std::string_view op_key);

/// "name.overload" as a string_view that lives for the process: the tables' keys for the
/// Tensor and Scalar overloads, which share one rule each.
std::string_view overload_key(const char* name, const char* overload);

/// A number-valued constant argument (None and tensors are not numbers).
std::optional<double> number(const Operand& x);

/// `x` as an expression of type `ct` (a cast when the operand's type differs; constants as
/// literals).
std::string as_ctype(const Operand& x, const std::string& ct);

/// A C++ literal of type `ct` for a number ("float(0.5)", "INFINITY").
std::string literal(double v, const std::string& ct);

}  // namespace retorch::compiler
