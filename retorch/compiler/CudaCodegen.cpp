// CUDA code generation from the loop IR: one `__global__` kernel per loop-IR kernel, a thread per
// element (per row for row kernels) in a grid-stride loop, and for the emulated target a host
// launcher that runs every thread of the grid.
#include <algorithm>
#include <numeric>
#include <sstream>

#include "retorch/compiler/CodegenParts.h"
#include "retorch/core/Error.h"

namespace retorch::compiler {

// Note [CUDA kernels]
// The CUDA emitter reuses the loop IR, the emitter table (the same rt_* names, Note [CUDA
// prelude]) and the loop nest of the C++ emitter; what changes is who runs an index. A
// pointwise kernel gives each thread a flat element index in a grid-stride loop and splits it
// over the collapsed loop nest with constant divisors, so every operand is read with its own
// strides (broadcasts and transposes stay index arithmetic). The split and the offsets are
// 32-bit when every offset of every operand fits (the fast integer path of the GPU), 64-bit
// otherwise; the loop counter is always 64-bit, so no grid size wraps it. A row kernel gives
// each thread one row and runs the C++ emitter's passes over it (Note [Row kernels]) as plain
// loops: the simplest correct schedule, and the one a host can emulate exactly; a warp or block
// per row (shuffle reductions) is the step for long rows once a GPU can measure it.
//
// Without a GPU the same source is built for the host (Target kCudaEmulated): the prelude's
// emulated half turns the CUDA keywords into nothing and the launcher below loops over blocks
// and threads, setting blockIdx/threadIdx before each call. The grid is capped at
// kEmulatedGrid blocks, so large kernels run their grid-stride loops more than once per thread,
// as a GPU launch with a capped grid does. Tests run the compiler's cases through this target
// against torch, and compile the device form with NVRTC where it is installed (Nvrtc.h).

namespace {

using namespace detail;

constexpr int64_t kEmulatedGrid = 64;
constexpr int64_t kInt32Limit = int64_t(1) << 31;

void emit_pointwise(std::ostringstream& os, const Kernel& k, Target target) {
  emit_origins(os, k);
  emit_signature(os, k, target);
  const LoopNest ln = loop_nest(k);
  const size_t rank = ln.sizes.size(), ni = k.inputs.size();
  const int64_t numel = std::accumulate(ln.sizes.begin(), ln.sizes.end(), int64_t(1),
                                        std::multiplies<int64_t>());
  bool narrow = numel < kInt32Limit;
  for (const std::vector<int64_t>& st : ln.strides) {
    int64_t last = 0;
    for (size_t d = 0; d < rank; ++d) last += (ln.sizes[d] - 1) * st[d];
    narrow = narrow && last < kInt32Limit;
  }
  const std::string I = narrow ? "int32_t" : "int64_t";
  os << "  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < " << numel
     << "; e += int64_t(blockDim.x) * gridDim.x) {\n";
  // Split e into the loop indices, innermost first.
  std::vector<std::string> idx(rank);
  os << "    " << I << " r = " << I << "(e);\n";
  for (size_t d = rank; d-- > 0;) {
    idx[d] = "i" + std::to_string(d);
    if (d == 0) {
      os << "    const " << I << " " << idx[d] << " = r;\n";
    } else {
      os << "    const " << I << " " << idx[d] << " = r % " << ln.sizes[d] << ";\n";
      os << "    r /= " << ln.sizes[d] << ";\n";
    }
  }
  auto at = [&](size_t a) {
    std::string off;
    for (size_t d = 0; d < rank; ++d)
      if (ln.strides[a][d] != 0) off += (off.empty() ? "" : " + ") + scaled(idx[d], ln.strides[a][d]);
    return off.empty() ? std::string("0") : off;
  };
  for (size_t i = 0; i < ni; ++i)
    os << "    const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "[" << at(i)
       << "]);\n";
  for (size_t s = 0; s < k.body.size(); ++s)
    os << "    const " << k.body[s].ctype << " t" << s << " = " << k.body[s].expr << ";\n";
  for (size_t o = 0; o < k.outputs.size(); ++o)
    os << "    out" << o << "[" << at(ni + o) << "] = " << store_expr(k, o, target) << ";\n";
  os << "  }\n}\n\n";
}

// The host launcher of an emulated kernel: generate_cpp's calling convention, every thread of a
// capped grid in turn (blocks split among OpenMP threads; each has its own blockIdx/threadIdx).
void emit_emulated_launcher(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt) {
  const CudaLaunch l = cuda_launch(k);
  const int64_t grid = std::clamp<int64_t>((l.work + l.block - 1) / l.block, 1, kEmulatedGrid);
  const size_t ni = k.inputs.size();
  os << "extern \"C\" void " << k.name << "(void* const* args) {\n";
  if (l.work >= opt.parallel_threshold) {
    os << "  #pragma omp parallel for schedule(static)";
    if (opt.threads > 0) os << " num_threads(" << opt.threads << ")";
    os << "\n";
  }
  os << "  for (int64_t g = 0; g < " << grid << "; ++g) {\n"
     << "    blockIdx.x = unsigned(g);\n    blockDim.x = " << l.block << ";\n    gridDim.x = "
     << grid << ";\n"
     << "    for (unsigned t = 0; t < " << l.block << "; ++t) {\n      threadIdx.x = t;\n"
     << "      " << k.name << "_thread(";
  for (size_t i = 0; i < ni + k.outputs.size(); ++i) {
    const bool in = i < ni;
    const std::string ct =
        storage_ctype(in ? k.inputs[i].dtype : k.outputs[i - ni].dtype, opt.target);
    os << (i ? ", " : "") << "static_cast<" << (in ? "const " : "") << ct << "*>(args[" << i
       << "])";
  }
  os << ");\n    }\n  }\n}\n\n";
}

void emit_cuda_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt) {
  if (k.reductions.empty()) {
    emit_pointwise(os, k, opt.target);
  } else {
    emit_row_kernel(os, k, opt);  // with its origins
  }
  if (opt.target == Target::kCudaEmulated) emit_emulated_launcher(os, k, opt);
}

}  // namespace

CudaLaunch cuda_launch(const Kernel& k) {
  CudaLaunch l;
  const size_t kept = k.sizes.size() - k.reduce_dims;
  l.work = 1;
  for (size_t d = 0; d < kept; ++d) l.work *= k.sizes[d];
  // Rows are long work items: smaller blocks spread few rows over more multiprocessors.
  l.block = k.reductions.empty() ? 256 : 128;
  return l;
}

std::string generate_cuda(const std::vector<Kernel>& kernels, const CodegenOptions& options) {
  RT_CHECK(is_cuda(options.target), "generate_cuda: the target is the CPU; use generate_cpp");
  const bool emulated = options.target == Target::kCudaEmulated;
  std::ostringstream os;
  os << "// Generated by retorch's compiler (retorch/compiler/CudaCodegen.cpp)"
     << (emulated ? ", built for the host to emulate the GPU" : "") << ".\n"
     << cuda_prelude(emulated) << "\n";
  for (const Kernel& k : kernels) {
    emit_cuda_kernel(os, k, options);
    if (k.backward) emit_cuda_kernel(os, *k.backward, options);
  }
  return os.str();
}

}  // namespace retorch::compiler
