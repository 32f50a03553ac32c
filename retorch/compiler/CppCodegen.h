// Code generation: one readable source per compiled graph, one function per kernel of the loop
// IR: C++ with OpenMP threads over outer loops and `omp simd` inner loops, or CUDA C++ with one
// GPU thread per element (per row for row kernels), also buildable for the host to test it.
#pragma once
#include <string>
#include <vector>

#include "retorch/compiler/LoopIR.h"

namespace retorch::compiler {

/// What the generated source is for. kCuda: CUDA C++ for NVRTC (`extern "C" __global__`
/// kernels, typed pointer parameters: inputs then outputs). kCudaEmulated: the same kernels built
/// for the host with a shim that runs each GPU thread as a loop iteration, behind kCpu's calling
/// convention, so the CUDA emitter's indexing and math run, and are tested, without a GPU
/// (Note [CUDA kernels]).
enum class Target { kCpu, kCuda, kCudaEmulated };

struct CodegenOptions {
  Target target = Target::kCpu;
  /// Threads of a kernel's parallel loop (0: OpenMP's default, the library's thread count).
  int threads = 0;
  /// Kernels over fewer elements run on one thread.
  int64_t parallel_threshold = 32768;
};

/// The source of all kernels (each `extern "C" void name(void* const* args)`, args: the input
/// pointers then the output pointers, at their first element).
std::string generate_cpp(const std::vector<Kernel>& kernels, const CodegenOptions& options = {});

/// The CUDA source of all kernels (Target kCuda) or its host build (kCudaEmulated: each kernel
/// `extern "C" void name(void* const* args)` like generate_cpp's).
std::string generate_cuda(const std::vector<Kernel>& kernels, const CodegenOptions& options = {});

/// The prelude every generated source starts with (loads, stores, rt_* math).
const char* cpp_prelude();
/// The part of both preludes written over the target's rt_exp, rt_tanh and rt_erf.
const char* prelude_common();
/// The CUDA prelude: the same rt_* names as device functions, or, emulated, for the host.
const char* cuda_prelude(bool emulated);

/// How a CUDA kernel is launched: `work` items (elements, or rows of a row kernel), one per
/// thread, `block` threads a block; the kernels loop over the grid, so any grid size is correct.
struct CudaLaunch {
  int64_t work = 0;
  int block = 256;
};
CudaLaunch cuda_launch(const Kernel& k);

}  // namespace retorch::compiler
