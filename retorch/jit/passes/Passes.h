// The JIT's graph passes: each a free function that rewrites a Graph in place. The pass manager
// (PassManager.h) names them and runs them as pipelines.
#pragma once
#include "retorch/jit/IR.h"

namespace retorch::jit {

/// Removes pure nodes whose outputs are unused (recursing into blocks) and unused outputs of
/// prim::If; nodes with side effects (prints, exceptions, in-place/out= ops, random ops) stay.
void eliminate_dead_code(Graph& g);

/// Merges identical pure nodes (same kind, op, inputs and attributes; constants by value). A node
/// in a nested block may reuse one of an enclosing block, never the reverse. Values an in-place
/// op may touch are left alone (see Note [Mutation fences] in PassUtils.h).
void eliminate_common_subexpression(Graph& g);

/// Runs pure ops whose inputs are all constants once and replaces them by constants of the
/// results; inlines the taken branch of a prim::If with a constant condition.
void constant_propagation(Graph& g);

/// Keeps one prim::Constant per distinct value, hoisted to the top of the graph.
void constant_pooling(Graph& g);

/// Local algebraic rewrites that are provably no-ops: x + 0, x - 0, x * 1, x / 1 (when the
/// result's type is known to equal x's), t(t(x)), transpose(transpose(x, a, b), a, b), `to` the
/// same dtype and device, contiguous() of a contiguous value, expand() to the same shape.
void peephole(Graph& g);

/// Rewrites composite ops into primitives: addmm -> mm, mul, add; linear -> t, matmul, add;
/// layer_norm -> mean, var, sub, add, sqrt, div, mul; softmax -> amax, sub, exp, sum, div.
/// Not part of the default pipeline.
void decompose(Graph& g);

/// Fills in the complete tensor types of node outputs, starting from complete types on the graph
/// inputs, by running each pure op once on zero-filled stand-ins of its input types.
void propagate_shapes(Graph& g);

/// Groups maximal runs of adjacent pointwise nodes (optionally ending in a sum/mean/amax) into
/// prim::FusionGroup nodes whose single block is the fused subgraph.
void create_fusion_groups(Graph& g);

/// The inverse of create_fusion_groups: replaces every prim::FusionGroup by its block's nodes.
void inline_fusion_groups(Graph& g);

/// Replaces every prim::CallFunction (whose single block is the callee's body, taking the call's
/// inputs) by the callee's nodes.
void inline_calls(Graph& g);

/// True for ops create_fusion_groups may fuse ("aten::" names of pointwise ops).
bool is_fusible_pointwise(std::string_view op_name);

}  // namespace retorch::jit
