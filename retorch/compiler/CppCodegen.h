// C++ code generation: one readable source per compiled graph, one `extern "C"` function per
// kernel of the loop IR, with OpenMP threads over outer loops and `omp simd` inner loops.
#pragma once
#include <string>
#include <vector>

#include "retorch/compiler/LoopIR.h"

namespace retorch::compiler {

struct CodegenOptions {
  /// Threads of a kernel's parallel loop (0: OpenMP's default, the library's thread count).
  int threads = 0;
  /// Kernels over fewer elements run on one thread.
  int64_t parallel_threshold = 32768;
};

/// The source of all kernels (each `extern "C" void name(void* const* args)`, args: the input
/// pointers then the output pointers, at their first element).
std::string generate_cpp(const std::vector<Kernel>& kernels, const CodegenOptions& options = {});

/// The prelude every generated source starts with (loads, stores, rt_* math).
const char* cpp_prelude();

}  // namespace retorch::compiler
