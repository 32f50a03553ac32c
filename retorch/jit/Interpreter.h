// The JIT interpreter: compiles a Graph once into a flat instruction list over value registers
// and runs it through the dispatcher (so autograd, devices and profiling work as in eager mode).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "retorch/jit/IR.h"

namespace retorch::jit {

/// A module's attributes by name ("fc1.weight"), read by prim::GetAttr[name="fc1.weight"].
using AttributeTable = std::vector<std::pair<std::string, IValue>>;

/// Runs one node of a kind the interpreter does not know: pops the node's inputs from the end
/// of the stack and pushes its outputs (like a boxed kernel).
using NodeFn = std::function<void(Stack& stack)>;
/// Gives the NodeFn of such a node (the compiler's kernel calls), or an empty function when the
/// kind is not its own.
using CustomNodes = std::function<NodeFn(const Node& node)>;

// Note [Interpreter]
// Every value gets a register; prim::Constant outputs do not (their uses read the constant
// table). An op node becomes one call: its operands are pushed on a stack, the operator runs
// boxed (`call_boxed`), the results move into the output registers. A value's last use moves it
// out of its register (so memory is freed as soon as possible); a value whose last use is nested
// in a prim::If/prim::Loop is dropped right after that node. prim::If and prim::Loop become
// jumps. prim::Loop follows PyTorch: `prim::Loop(%max_trip_count, %initial_cond, %carried...)`
// with the body `(%i, %carried...) -> (%cond, %carried...)`. Tuples are represented as tensor
// lists: prim::TupleConstruct takes tensors only. Each run has its own frame, so one compiled
// graph may run on several threads at once.
class Interpreter {
 public:
  /// Compiles `graph` (the graph may change or die afterwards); throws naming the node for
  /// unsupported kinds, unresolved ops and unknown attributes.
  explicit Interpreter(const Graph& graph, AttributeTable attributes = {},
                       const CustomNodes& custom = {});
  ~Interpreter();
  Interpreter(Interpreter&&) noexcept;
  Interpreter& operator=(Interpreter&&) noexcept;

  /// Runs the graph on one value per graph input; returns one value per graph output.
  std::vector<IValue> run(const std::vector<IValue>& inputs) const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  /// The number of instructions (for tests and benchmarks).
  size_t num_instructions() const;
  /// The instruction list, one per line (for debugging).
  std::string dump() const;

  /// The compiled form (opaque; defined in Interpreter.cpp).
  struct Code;

 private:
  std::unique_ptr<Code> code_;
};

}  // namespace retorch::jit
