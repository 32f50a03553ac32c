// The compiler's loop IR: what lowering (Lowering.cpp) makes of a graph and code generation
// (CppCodegen.cpp) turns into C++: kernels over a static iteration space whose bodies are
// SSA statements over loads of strided inputs, plus the rewritten graph that calls them.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "retorch/jit/IR.h"

namespace retorch::compiler {

/// One tensor a kernel reads or writes: its dtype and exact geometry (guarded at run time).
struct KernelArg {
  ScalarType dtype = kFloat;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

/// One SSA statement of a kernel body: `<ctype> t<id> = <expr>;` where expr reads loads
/// (`l<k>`: input k at the current index) and earlier temps.
struct Stmt {
  std::string ctype;  // "float", "double", "bool", "int64_t"
  std::string expr;
};

/// The reduction of a reduction kernel: `acc = kind(acc, t<value>)` over the reduced dims,
/// read by the epilogue as `r0` (times `scale`: 1/N for a mean).
struct Reduction {
  std::string kind;  // "sum" or "max"
  size_t value = 0;  // body index reduced (a prologue statement)
  std::string ctype;
  double scale = 1;
};

/// A fused loop: every output element of `sizes` computed by `body`, each output stored from
/// the temp `stores[k]`. Inputs are read with their own strides (broadcast dims have stride 0),
/// so views and broadcasting are index arithmetic, never copies. A reduction kernel reduces the
/// last `reduce_dims` dims of `sizes`: body[0, prologue_size) runs per element of `sizes`, the
/// rest (the epilogue, reading r0) once per element of `out_sizes` (the reduction's output
/// shape); inputs with `input_outer[i]` are read by the epilogue.
struct Kernel {
  std::string name;                  // cpp_fused_add_mul_tanh_0
  std::vector<std::string> origins;  // the graph nodes it came from, as printed
  std::vector<int64_t> sizes;        // the iteration space (the outputs' shape)
  std::vector<KernelArg> inputs;
  std::vector<KernelArg> outputs;
  std::vector<std::string> input_ctypes;  // compute type of each load ("float" for bfloat16)
  std::vector<Stmt> body;
  std::vector<size_t> stores;  // body index stored to each output
  std::optional<Reduction> reduction;
  size_t reduce_dims = 0;
  size_t prologue_size = 0;
  std::vector<int64_t> out_sizes;
  std::vector<bool> input_outer;
  /// The nodes as a standalone graph (inputs -> outputs), run by the interpreter when an input
  /// does not match the guarded geometry or requires grad (Note [Kernel fallback]).
  std::shared_ptr<jit::Graph> fallback;
};

/// A lowered graph: `graph` is the traced graph with each kernel's nodes replaced by one
/// `compiler::CppKernel[index=i]` node (inputs: the kernel's inputs; outputs: its outputs);
/// the remaining nodes run as externs (eager kernels through the dispatcher).
struct LoweredGraph {
  std::shared_ptr<jit::Graph> graph;
  std::vector<Kernel> kernels;
};

/// The node kind of a compiled kernel call in a lowered graph.
inline constexpr std::string_view kCppKernel = "compiler::CppKernel";

/// Options of lowering and scheduling (a part of CompileOptions).
struct LoweringOptions {
  size_t max_fusion_size = 64;  // nodes per kernel
  bool horizontal = true;       // fuse independent loops over the same range
};

/// Lowers every run of lowerable pointwise nodes of `g` (complete tensor types required) into
/// kernels; see Note [Lowering].
LoweredGraph lower(const jit::Graph& g, const LoweringOptions& options = {});

/// The loop IR as text (for RETORCH_COMPILE_DEBUG and tests).
std::string dump(const LoweredGraph& lg);

}  // namespace retorch::compiler
