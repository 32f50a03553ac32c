// Helpers shared by the graph passes: walking nested blocks, reading compile-time constants,
// comparing constants, running one node's operator on known arguments, and the conservative
// alias rule that keeps passes away from values an in-place op may touch.
#pragma once
#include <functional>
#include <optional>
#include <unordered_set>

#include "retorch/jit/IR.h"

namespace retorch::jit::detail {

/// Calls f on every node of b and of its nested blocks, in order (a node before its blocks).
/// f may not destroy nodes.
void for_each_node(const Block* b, const std::function<void(Node*)>& f);

/// The compile-time value of v: a prim::Constant, or a prim::ListConstruct of constant ints,
/// floats or tensors (an empty list typed by the ListConstruct's output); nullopt otherwise.
std::optional<IValue> constant_input(const Value* v);
/// True when n calls the operator `name`.`overload`.
bool is_op(const Node* n, std::string_view name, std::string_view overload);
/// Argument i of op node n as a constant: its input's constant, or the schema default if the
/// node leaves it out; nullopt when not constant.
std::optional<IValue> arg_constant(const Node* n, size_t i);

/// True when a and b are the same constant: same payload kind and equal values, doubles compared
/// bit for bit (so 0. and -0. differ), tensors by dtype, shape, device, requires_grad and bytes.
bool ivalue_equal(const IValue& a, const IValue& b);

/// Runs n's operator on `args` (the node's inputs in order; trailing schema defaults are filled
/// in), recording gradients only if `record_grad`; the results, or nullopt when the op rejects
/// the arguments.
std::optional<Stack> run_node_op(const Node* n, Stack args, bool record_grad = false);

/// True when n calls an operator and its inputs fit the schema (no more than its arguments,
/// and every omitted one has a default); rewrites check this before reading inputs by position.
bool has_valid_arity(const Node* n);

/// True when a value of type t may hold a tensor (and so may alias another value).
bool may_hold_tensor(const TypePtr& t);

/// True for "prim::" kinds known not to mutate anything (Constant, ListConstruct, If, ...).
bool is_pure_prim(const std::string& kind);

// Note [Mutation fences]
// The passes have no alias analysis. Instead every value that might share memory with a value
// some node mutates is fenced off: values that may hold tensors are grouped by data flow (a
// node's tensor inputs and outputs, and its blocks' inputs and outputs, form one group; graph
// inputs form one group as soon as any of them is mutated, since callers may pass aliases).
// A group containing an input of a mutating node (or of a node of unknown kind) is "touched".
// CSE, constant propagation, constant pooling and the arithmetic peepholes leave touched values
// alone. This is coarse (one in-place op can fence most of a graph) but never unsound.

/// The values fenced off by Note [Mutation fences].
std::unordered_set<const Value*> values_touched_by_mutation(const Graph& g);

/// Creates a prim::Constant holding v, linked before `before`; returns its output.
Value* constant_before(Graph& g, Node* before, const IValue& v);

}  // namespace retorch::jit::detail
