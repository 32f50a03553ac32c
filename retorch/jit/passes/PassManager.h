// The pass manager: the graph passes by name, pipelines of them, and RETORCH_JIT_LOG logging.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "retorch/jit/PassRegistry.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

/// Every pass by its short name: inline, dce, cse, constprop, pool, peephole, decompose,
/// shapes, fuse, unfuse (in that order).
const std::vector<std::pair<std::string, GraphPass>>& all_passes();

/// The pass named `name` (a short name, or the function's name such as "eliminate_dead_code");
/// throws listing the known names when there is none.
GraphPass graph_pass(const std::string& name);

/// Runs the named passes in order (the ones above, or any in PassRegistry such as "lint"). RETORCH_JIT_LOG (read on every call) lists passes whose
/// graphs are printed to stderr before and after they run: "dce,cse" prints always, ">>dce"
/// only when the pass changed the graph. Each pass is followed by Graph::lint() in debug builds
/// or when RETORCH_JIT_LOG is set.
void run_pipeline(Graph& g, const std::vector<std::string>& names);

/// inline, dce, constprop, pool, cse, peephole, dce.
void run_default_pipeline(Graph& g);

}  // namespace retorch::jit
