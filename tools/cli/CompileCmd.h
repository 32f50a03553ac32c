// `retorch compile --model M`: compiles a seed model's forward with retorch::compile and says
// what it made; `--benchmark` times the compiled forward against eager (compiler::benchmark).
#pragma once
#include <cstdint>
#include <string>

namespace retorch::cli {

struct CompileConfig {
  std::string model = "convnet";
  int64_t batch_size = 100;
  bool benchmark = false;  // time eager and compiled forwards (no grad, eval mode)
  bool source = false;     // print the generated C++
};

/// Runs the command; returns the exit status.
int run_compile(const CompileConfig& c);

}  // namespace retorch::cli
