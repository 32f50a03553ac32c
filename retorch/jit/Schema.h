// Operator schemas for the JIT: parses ops.yaml's schema strings into argument and return
// types, and resolves "aten::add" plus argument types to one overload.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "retorch/dispatch/Dispatcher.h"
#include "retorch/jit/Type.h"

namespace retorch::jit {

struct SchemaArg {
  std::string name;
  TypePtr type;
  std::optional<std::string> default_value;  // the default's text, as in the schema
  bool kwarg_only = false;
  bool mutated = false;  // Tensor(a!)
};

struct FunctionSchema {
  std::string name;      // "add"
  std::string overload;  // "Tensor", "" for none
  std::vector<SchemaArg> args;
  std::vector<SchemaArg> returns;
};

/// Parses "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
FunctionSchema parse_schema(std::string_view schema);
/// The parsed schema of a registered operator (parsed once, then cached).
const FunctionSchema& schema_of(const OperatorHandle& op);

/// The value a schema default stands for ("1" -> 1, "None", "[0, 1]", "True", "1e-05"),
/// typed by the argument.
IValue default_value(const SchemaArg& arg);

/// The overload of `qualified_name` ("aten::add" or "add", or "aten::add.Tensor" to pick it
/// outright) whose positional arguments accept `input_types`; throws naming the op and the types
/// when none does.
const OperatorHandle& resolve_overload(std::string_view qualified_name,
                                       const std::vector<TypePtr>& input_types);

}  // namespace retorch::jit
