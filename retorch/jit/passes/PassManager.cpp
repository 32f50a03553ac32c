// The pass manager: names for the passes, pipelines, and the RETORCH_JIT_LOG graph dumps.
#include "retorch/jit/passes/PassManager.h"

#include <cstdlib>
#include <iostream>

namespace retorch::jit {

namespace {

// Short name, function name, pass.
struct PassEntry {
  std::string short_name;
  std::string function_name;
  GraphPass pass;
};

const std::vector<PassEntry>& entries() {
  static const std::vector<PassEntry> kEntries = {
      {"inline", "inline_calls", &inline_calls},
      {"dce", "eliminate_dead_code", &eliminate_dead_code},
      {"cse", "eliminate_common_subexpression", &eliminate_common_subexpression},
      {"constprop", "constant_propagation", &constant_propagation},
      {"pool", "constant_pooling", &constant_pooling},
      {"peephole", "peephole", &peephole},
      {"decompose", "decompose", &decompose},
      {"shapes", "propagate_shapes", &propagate_shapes},
      {"fuse", "create_fusion_groups", &create_fusion_groups},
      {"unfuse", "inline_fusion_groups", &inline_fusion_groups},
  };
  return kEntries;
}

// The manager's pass called `name`, else one registered elsewhere (PassRegistry: lint, ...).
PassEntry entry(const std::string& name) {
  for (const PassEntry& e : entries())
    if (name == e.short_name || name == e.function_name) return e;
  if (GraphPass p = find_pass(name)) return {name, name, p};
  std::string known;
  for (const PassEntry& e : entries()) known += (known.empty() ? "" : ", ") + e.short_name;
  for (const std::string& n : pass_names())
    if (known.find(n) == std::string::npos) known += ", " + n;
  RT_ERROR("jit: unknown pass '", name, "' (known passes: ", known, ")");
}

// How RETORCH_JIT_LOG asks for one pass to be logged.
enum class LogLevel { kOff, kAlways, kIfChanged };

LogLevel log_level(const char* spec, const PassEntry& e) {
  if (spec == nullptr) return LogLevel::kOff;
  std::string s(spec);
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    LogLevel level = LogLevel::kAlways;
    if (item.rfind(">>", 0) == 0) {
      level = LogLevel::kIfChanged;
      item.erase(0, 2);
    }
    if (item == e.short_name || item == e.function_name) return level;
    start = comma + 1;
  }
  return LogLevel::kOff;
}

void run_one(Graph& g, const PassEntry& e) {
  const char* spec = std::getenv("RETORCH_JIT_LOG");
  LogLevel level = log_level(spec, e);
  std::string before;
  if (level != LogLevel::kOff) before = g.str();
  if (level == LogLevel::kAlways) std::cerr << "[jit] before " << e.short_name << ":\n" << before;
  e.pass(g);
  if (level != LogLevel::kOff) {
    std::string after = g.str();
    if (level == LogLevel::kIfChanged && after != before)
      std::cerr << "[jit] before " << e.short_name << ":\n" << before;
    if (level == LogLevel::kAlways || after != before)
      std::cerr << "[jit] after " << e.short_name << ":\n" << after;
  }
#ifdef NDEBUG
  bool lint = spec != nullptr;
#else
  bool lint = true;
#endif
  if (lint) g.lint();
}

}  // namespace

const std::vector<std::pair<std::string, GraphPass>>& all_passes() {
  static const std::vector<std::pair<std::string, GraphPass>> kPasses = [] {
    std::vector<std::pair<std::string, GraphPass>> r;
    for (const PassEntry& e : entries()) r.emplace_back(e.short_name, e.pass);
    return r;
  }();
  return kPasses;
}

GraphPass graph_pass(const std::string& name) {
  return entry(name).pass;
}

void run_pipeline(Graph& g, const std::vector<std::string>& names) {
  std::vector<PassEntry> passes;
  for (const std::string& n : names) passes.push_back(entry(n));  // reject typos up front
  for (const PassEntry& e : passes) run_one(g, e);
}

void run_default_pipeline(Graph& g) {
  run_pipeline(g, {"inline", "dce", "constprop", "pool", "cse", "peephole", "dce"});
}

}  // namespace retorch::jit
