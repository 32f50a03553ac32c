// retorch::compile: traces a function or module on its first call, lowers its pointwise work
// into generated C++ kernels (built, cached, loaded), runs the rest eagerly, and recompiles when
// a guard (dtype, shape, strides, device, requires_grad of an input) changes.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "retorch/compiler/CppCodegen.h"
#include "retorch/compiler/LoopIR.h"
#include "retorch/jit/Tracer.h"

namespace retorch::nn {
class Module;
}

namespace retorch::compiler {

/// The knobs of compilation, in one place.
struct CompileOptions {
  LoweringOptions lowering;
  CodegenOptions codegen;
  /// Run the JIT's cleanup passes (dce, cse, constant propagation, peephole) before lowering.
  bool run_passes = true;
  /// Graphs compiled per function before further new input signatures run eagerly.
  size_t max_recompiles = 8;
};

/// What one compiled specialization consists of (for tests, debugging and benchmarks).
struct CompiledGraphInfo {
  std::shared_ptr<jit::Graph> traced;  // after the passes
  LoweredGraph lowered;
  std::string source;
  std::string object;  // the loaded .so
  bool cache_hit = false;
};

/// A traced function or module with its compiled specializations; copies share them.
class CompiledFunction {
 public:
  /// What the first call (and each guard miss) traces: a graph and the module attributes its
  /// prim::GetAttr nodes read.
  using Tracer = std::function<std::pair<std::shared_ptr<jit::Graph>, jit::AttributeTable>(
      const std::vector<Tensor>& inputs)>;

  CompiledFunction(Tracer tracer, jit::TracedFunction eager, CompileOptions options);

  /// Runs the specialization for these inputs, compiling it first when none matches.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;

  /// Specializations compiled so far.
  size_t num_compiled() const;
  /// The specialization the last call used (throws before any call).
  const CompiledGraphInfo& last() const;
  /// Calls that ran eagerly because compiling failed or max_recompiles was reached.
  size_t eager_calls() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// Compiles a function of tensors.
CompiledFunction compile(jit::TracedFunction fn, CompileOptions options = {});
/// Compiles module.forward(inputs[0]); the module's parameters are read at each call (training
/// the module is seen by the compiled function).
CompiledFunction compile(nn::Module& module, CompileOptions options = {});

}  // namespace retorch::compiler

namespace retorch {
using compiler::compile;
}
