// ScriptFunction / ScriptModule: lazily compiled interpreters over a shared graph.
#include "retorch/jit/Module.h"

#include <mutex>

namespace retorch::jit {

ScriptFunction::ScriptFunction(std::shared_ptr<Graph> graph, std::string name)
    : state_(std::make_shared<State>()) {
  RT_CHECK(graph != nullptr, "jit: ScriptFunction needs a graph");
  state_->graph = std::move(graph);
  state_->name = std::move(name);
}

Graph& ScriptFunction::graph() {
  invalidate();  // the caller may edit it
  return *state_->graph;
}

void ScriptFunction::invalidate() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->interpreter.reset();
}

std::shared_ptr<const Interpreter> ScriptFunction::interpreter() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->interpreter)
    state_->interpreter = std::make_shared<const Interpreter>(*state_->graph, state_->attributes);
  return state_->interpreter;
}

std::vector<IValue> ScriptFunction::run(const std::vector<IValue>& inputs) const {
  return interpreter()->run(inputs);
}

ScriptModule::ScriptModule(std::shared_ptr<Graph> graph,
                           std::vector<std::pair<std::string, Tensor>> parameters,
                           std::vector<std::pair<std::string, Tensor>> buffers)
    : ScriptFunction(std::move(graph)),
      params_(std::move(parameters)),
      buffers_(std::move(buffers)) {
  for (const auto& [n, t] : params_) state_->attributes.emplace_back(n, IValue(t));
  for (const auto& [n, t] : buffers_) state_->attributes.emplace_back(n, IValue(t));
}

std::vector<IValue> ScriptModule::forward(const std::vector<IValue>& inputs) const {
  std::vector<IValue> all;
  all.reserve(inputs.size() + 1);
  all.emplace_back();  // %self: GetAttr reads the attribute table, not this value
  all.insert(all.end(), inputs.begin(), inputs.end());
  return run(all);
}

std::vector<Tensor> ScriptModule::parameters() const {
  std::vector<Tensor> r;
  for (const auto& p : params_) r.push_back(p.second);
  return r;
}

}  // namespace retorch::jit
