// The tracer: records every op called while a function runs (one boxed fallback on the Tracer
// dispatch key) into a Graph, like torch.jit.trace.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "retorch/jit/IR.h"
#include "retorch/jit/Module.h"

namespace retorch::nn {
class Module;
}

namespace retorch::jit {

// Note [Tracing]
// While a trace runs, the Tracer key is in the thread's included key set, so every op call
// reaches the Tracer fallback first. It maps the op's arguments to graph values (tensors by
// TensorImpl identity: the traced inputs, the module's parameters and buffers as
// `prim::GetAttr[name="fc1.weight"](%self)` with the flat dotted name, results of earlier ops;
// any other tensor becomes a constant; non-tensor arguments become prim::Constant, tensor lists
// prim::ListConstruct), runs the op below the Tracer key with the Tracer key excluded (so the ops
// a composite calls are not recorded: `linear` stays aten::linear), and binds each tensor result
// to the node's output (an in-place op rebinds its tensor to the new value). Ops are recorded
// whether or not autograd records them; autograd runs below the tracer, so its internals never
// appear. Non-tensor values computed in C++/Python (item(), sizes) are frozen as constants; the
// first item()/tolist() of a traced tensor warns once per trace. Source locations come from the
// TraceOptions callback (Python: the innermost frame outside the retorch package) or else from
// the innermost SourceLocationGuard of the thread (C++: only where the caller sets one).

/// What a traced function looks like from C++: tensors in, tensors out.
using TracedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct TraceOptions {
  /// Debug names of the graph inputs ("x", "y"); missing or empty names print as numbers.
  std::vector<std::string> input_names;
  /// Module attributes: when `self_type` is set the graph takes `%self : <self_type>` first and
  /// reads these tensors with prim::GetAttr.
  std::vector<std::pair<std::string, Tensor>> attributes;
  std::string self_type;
  /// The source location of the op being recorded ("model.py:3:0"); unset: the thread's
  /// SourceLocationGuard.
  std::function<std::string()> source_location;
  /// Receives the TracerWarning text; unset: printed to stderr.
  std::function<void(const std::string&)> warn;
};

/// Runs fn(inputs) while recording its ops; returns the graph (its outputs are fn's results).
std::shared_ptr<Graph> trace_graph(const TracedFunction& fn, const std::vector<Tensor>& inputs,
                                   const TraceOptions& options = {});

/// Traces a function of tensors.
ScriptFunction trace(const TracedFunction& fn, const std::vector<Tensor>& example_inputs);
/// Traces module.forward(example_inputs[0]) (the virtual single-tensor forward).
ScriptModule trace(nn::Module& module, const std::vector<Tensor>& example_inputs);
/// Traces a module whose forward has another signature: `forward` calls it.
ScriptModule trace(nn::Module& module, const TracedFunction& forward,
                   const std::vector<Tensor>& example_inputs);

/// True while this thread is tracing.
bool is_tracing();

/// The text of the warning given when a traced tensor becomes a C++/Python value.
extern const char* const kTracerWarningText;

/// Sets the source location recorded for nodes traced in this scope on this thread:
/// `jit::SourceLocationGuard loc(__FILE__, __LINE__);`.
class SourceLocationGuard {
 public:
  SourceLocationGuard(const char* file, int line);
  ~SourceLocationGuard();
  SourceLocationGuard(const SourceLocationGuard&) = delete;
  SourceLocationGuard& operator=(const SourceLocationGuard&) = delete;

 private:
  std::string prev_;
};

}  // namespace retorch::jit
