// The table of named graph passes; starts with the built-in "lint".
#include "retorch/jit/PassRegistry.h"

#include <map>
#include <mutex>

#include "retorch/jit/passes/PassManager.h"

namespace retorch::jit {

namespace {

// Starts with "lint" and the pass manager's passes under their short names (dce, cse, ...).
struct Registry {
  std::mutex mutex;
  std::map<std::string, GraphPass, std::less<>> passes{
      {"lint", [](Graph& g) { g.lint(); }},
  };
  Registry() {
    for (const auto& [name, pass] : all_passes()) passes[name] = pass;
  }
};

// Built on first use, so passes registered from other files' static initializers find it.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_pass(std::string name, GraphPass p) {
  RT_CHECK(!name.empty() && p != nullptr, "jit: register_pass needs a name and a function");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.passes[std::move(name)] = p;
}

GraphPass find_pass(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.passes.find(name);
  return it == r.passes.end() ? nullptr : it->second;
}

std::vector<std::string> pass_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, p] : r.passes) names.push_back(name);
  return names;
}

}  // namespace retorch::jit
