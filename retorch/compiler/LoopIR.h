// The compiler's loop IR: what lowering (Lowering.cpp) makes of a graph and code generation
// (CppCodegen.cpp) turns into C++: kernels over a static iteration space whose bodies are
// SSA statements over loads of strided inputs, plus the rewritten graph that calls them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "retorch/jit/IR.h"

namespace retorch::compiler {

/// One tensor a kernel reads or writes: its dtype and exact geometry (guarded at run time), and
/// how the kernel walks it: `loop_strides`, its element stride per dim of the iteration space
/// (0 where it broadcasts). A `row` operand of a row kernel is read or written once per row: its
/// loop strides cover the kept (leading) dims only.
struct KernelArg {
  ScalarType dtype = kFloat;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::vector<int64_t> loop_strides;
  bool row = false;
  /// A backward row kernel's gradient of an input broadcast over the rows (a layer_norm weight's):
  /// on CPU the kernel sums it over the rows itself, in per-thread double rows added in thread
  /// order, and writes one row of the row dims' size (Note [Column gradients in the kernel]);
  /// CUDA stores it over the whole space for the node to sum.
  bool column_sum = false;
};

/// One SSA statement of a kernel body: `<ctype> t<id> = <expr>;` where expr reads loads
/// (`l<k>`: input k at the current index), earlier temps, and reduction results (`r<j>`).
/// `loads` and `temps` list what it reads; a `row` statement is computed once per row.
struct Stmt {
  std::string ctype;  // "float", "double", "bool", "int64_t"
  std::string expr;
  bool row = false;
  std::vector<size_t> loads, temps;
  /// The local derivative with respect to each floating operand it reads ("l0"/"t3", expr).
  std::vector<std::pair<std::string, std::string>> partials;
};

/// A reduction of a row kernel: `r<j> = kind over the reduced dims of t<value>`, read by later
/// (row) statements as `r<j>`.
struct Reduction {
  std::string kind;  // "sum" or "max"
  size_t value = 0;  // the body statement reduced (not a row statement)
  std::string ctype;
  bool keep_nan = true;  // max: a NaN in the row makes the result NaN (false: NaN is skipped)
  size_t result = 0;     // the row statement `r<j>`
  bool differentiable = true;  // false: the backward treats the result as a constant
};

/// A fused loop: every output element of `sizes` computed by `body`, each output stored from
/// the temp `stores[k]`. Inputs are read with their own strides (broadcast dims have stride 0),
/// so views and broadcasting are index arithmetic, never copies. A row kernel (one with
/// reductions) treats the last `reduce_dims` dims of `sizes` as a row: per row, one pass over it
/// per reduction (in order; a pass computes what its reduction needs), then the row statements
/// and row outputs, then a last pass storing the full-size outputs (Note [Row kernels]).
struct Kernel {
  std::string name;                  // cpp_fused_add_mul_tanh_0
  std::vector<std::string> origins;  // the graph nodes it came from, as printed
  std::vector<int64_t> sizes;        // the iteration space (the outputs' shape)
  std::vector<KernelArg> inputs;
  std::vector<KernelArg> outputs;
  std::vector<std::string> input_ctypes;  // compute type of each load ("float" for bfloat16)
  std::vector<Stmt> body;
  std::vector<size_t> stores;  // body index stored to each output
  std::vector<Reduction> reductions;
  size_t reduce_dims = 0;
  /// The nodes as a standalone graph (inputs -> outputs), run by the interpreter when an input
  /// does not match the guarded geometry, or requires grad and there is no `backward`
  /// (Note [Kernel fallback]).
  std::shared_ptr<jit::Graph> fallback;
  /// Whether every floating statement has its partials (a pointwise kernel can have a backward).
  bool differentiable = true;
  /// The backward kernel (Note [Compiled backward]): its inputs are this kernel's inputs, then
  /// the gradients of the outputs listed in `grad_of_outputs`; its outputs are the gradients,
  /// over the whole iteration space, of the inputs listed in `grad_for_inputs`.
  std::shared_ptr<Kernel> backward;
  std::vector<size_t> grad_of_outputs, grad_for_inputs;
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
