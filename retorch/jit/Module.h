// ScriptFunction and ScriptModule: a graph plus (for modules) the parameters and buffers it reads,
// run by the interpreter (compiled on first use), like torch::jit::Function / script::Module.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "retorch/jit/IR.h"
#include "retorch/jit/Interpreter.h"

namespace retorch::jit {

/// A traced function: a graph with one input per argument. Copies share the graph.
class ScriptFunction {
 public:
  explicit ScriptFunction(std::shared_ptr<Graph> graph, std::string name = "forward");
  virtual ~ScriptFunction() = default;

  const std::string& name() const { return state_->name; }
  /// The graph; editing it (a pass) makes the next call recompile.
  Graph& graph();
  const Graph& graph() const { return *state_->graph; }
  const std::shared_ptr<Graph>& graph_ptr() const { return state_->graph; }
  /// The graph's text (PyTorch's printed form).
  std::string code() const { return state_->graph->str(); }

  /// Runs the graph through the interpreter (safe from several threads at once).
  std::vector<IValue> run(const std::vector<IValue>& inputs) const;
  std::vector<IValue> operator()(const std::vector<IValue>& inputs) const { return run(inputs); }
  /// Drops the compiled code (the next call recompiles the graph).
  void invalidate();

 protected:
  struct State {
    std::shared_ptr<Graph> graph;
    std::string name;
    AttributeTable attributes;  // GetAttr's table (modules)
    std::mutex mu;
    std::shared_ptr<const Interpreter> interpreter;
  };
  /// The compiled graph (compiled on first use).
  std::shared_ptr<const Interpreter> interpreter() const;
  std::shared_ptr<State> state_;
};

/// A traced module: the graph's first input is `%self`; its prim::GetAttr nodes read the
/// parameters and buffers by dotted name. The tensors are the module's own (same TensorImpl), so
/// training through the ScriptModule trains the original module.
class ScriptModule : public ScriptFunction {
 public:
  ScriptModule(std::shared_ptr<Graph> graph, std::vector<std::pair<std::string, Tensor>> parameters,
               std::vector<std::pair<std::string, Tensor>> buffers);

  /// Runs forward on the inputs after `self` (a placeholder is passed for it).
  std::vector<IValue> forward(const std::vector<IValue>& inputs) const;
  std::vector<IValue> operator()(const std::vector<IValue>& inputs) const {
    return forward(inputs);
  }

  const std::vector<std::pair<std::string, Tensor>>& named_parameters() const { return params_; }
  const std::vector<std::pair<std::string, Tensor>>& named_buffers() const { return buffers_; }
  std::vector<Tensor> parameters() const;

 private:
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
};

}  // namespace retorch::jit
