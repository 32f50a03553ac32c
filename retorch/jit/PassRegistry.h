// Graph passes by name, so tools (`retorch ir --passes dce,cse`) can run a pipeline named in text.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "retorch/jit/IR.h"

namespace retorch::jit {

using GraphPass = void (*)(Graph&);

/// Registers (or replaces) the pass called `name`.
void register_pass(std::string name, GraphPass p);
/// The pass called `name`, nullptr when none is registered.
GraphPass find_pass(std::string_view name);
/// The registered pass names, sorted ("lint" and the pass manager's dce, cse, ... are always
/// there).
std::vector<std::string> pass_names();

}  // namespace retorch::jit
