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
// otherwise; the loop counter is always 64-bit, so no grid size wraps it. Where every operand
// allows (vectorizable()), a thread moves four elements at a time as float4 loads and stores
// (16 bytes per access, the width GPUs coalesce best), computing each lane in its own scope;
// when a pointer is not 16-byte aligned at run time (a view at an odd offset) the kernel
// takes the one-element loop instead. A row kernel gives
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

// Splits `var` (a flat element index) into the loop indices i<d>, innermost first.
std::vector<std::string> emit_index_split(std::ostringstream& os, const LoopNest& ln,
                                          const std::string& I, const std::string& var) {
  const size_t rank = ln.sizes.size();
  std::vector<std::string> idx(rank);
  os << "    " << I << " r = " << I << "(" << var << ");\n";
  for (size_t d = rank; d-- > 0;) {
    idx[d] = "i" + std::to_string(d);
    if (d == 0) {
      os << "    const " << I << " " << idx[d] << " = r;\n";
    } else {
      os << "    const " << I << " " << idx[d] << " = r % " << ln.sizes[d] << ";\n";
      os << "    r /= " << ln.sizes[d] << ";\n";
    }
  }
  return idx;
}

// Whether four consecutive elements can move as one float4 per operand (Note [CUDA kernels]):
// the innermost loop a multiple of 4 long, outputs and non-broadcast inputs float32 with stride 1
// there and outer strides that keep every fourth element 16-byte aligned; inputs broadcast along
// the innermost loop (stride 0) are read once per four. Pointer alignment is checked at run time.
bool vectorizable(const Kernel& k, const LoopNest& ln) {
  const size_t ni = k.inputs.size();
  if (ln.sizes.back() % 4 != 0) return false;
  for (size_t a = 0; a < ln.strides.size(); ++a) {
    const std::vector<int64_t>& st = ln.strides[a];
    const ScalarType dt = a < ni ? k.inputs[a].dtype : k.outputs[a - ni].dtype;
    if (st.back() == 0 && a < ni) continue;
    if (st.back() != 1 || dt != kFloat) return false;
    for (size_t d = 0; d + 1 < st.size(); ++d)
      if (st[d] % 4 != 0) return false;
  }
  return true;
}

void emit_pointwise(std::ostringstream& os, const Kernel& k, Target target) {
  emit_origins(os, k);
  emit_signature(os, k, target);
  const LoopNest ln = loop_nest(k);
  const size_t rank = ln.sizes.size(), ni = k.inputs.size(), no = k.outputs.size();
  const int64_t numel = std::accumulate(ln.sizes.begin(), ln.sizes.end(), int64_t(1),
                                        std::multiplies<int64_t>());
  bool narrow = numel < kInt32Limit;
  for (const std::vector<int64_t>& st : ln.strides) {
    int64_t last = 0;
    for (size_t d = 0; d < rank; ++d) last += (ln.sizes[d] - 1) * st[d];
    narrow = narrow && last < kInt32Limit;
  }
  const std::string I = narrow ? "int32_t" : "int64_t";
  std::vector<std::string> idx;
  auto at = [&](size_t a) {
    std::string off;
    for (size_t d = 0; d < rank; ++d)
      if (ln.strides[a][d] != 0) off += (off.empty() ? "" : " + ") + scaled(idx[d], ln.strides[a][d]);
    return off.empty() ? std::string("0") : off;
  };
  auto body = [&](const std::string& indent) {
    for (size_t s = 0; s < k.body.size(); ++s)
      os << indent << "const " << k.body[s].ctype << " t" << s << " = " << k.body[s].expr << ";\n";
  };
  auto vec = [&](size_t a) { return ln.strides[a].back() == 1; };
  if (vectorizable(k, ln)) {
    std::string aligned;
    for (size_t a = 0; a < ni + no; ++a)
      if (vec(a))
        aligned += (aligned.empty() ? "" : " | ") + std::string("reinterpret_cast<unsigned long long>(") +
                   (a < ni ? "in" + std::to_string(a) : "out" + std::to_string(a - ni)) + ")";
    os << "  if (((" << aligned << ") & 15) == 0) {\n"
       << "  for (int64_t e4 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e4 < " << numel / 4
       << "; e4 += int64_t(blockDim.x) * gridDim.x) {\n";
    idx = emit_index_split(os, ln, I, "e4 * 4");
    for (size_t i = 0; i < ni; ++i) {
      if (vec(i))
        os << "    const float4 v" << i << " = *reinterpret_cast<const float4*>(in" << i << " + "
           << at(i) << ");\n";
      else
        os << "    const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "["
           << at(i) << "]);\n";
    }
    for (size_t o = 0; o < no; ++o) os << "    float4 w" << o << ";\n";
    for (const char* lane : {"x", "y", "z", "w"}) {
      os << "    {\n";
      for (size_t i = 0; i < ni; ++i)
        if (vec(i)) os << "      const float l" << i << " = v" << i << "." << lane << ";\n";
      body("      ");
      for (size_t o = 0; o < no; ++o)
        os << "      w" << o << "." << lane << " = " << store_expr(k, o, target) << ";\n";
      os << "    }\n";
    }
    for (size_t o = 0; o < no; ++o)
      os << "    *reinterpret_cast<float4*>(out" << o << " + " << at(ni + o) << ") = w" << o
         << ";\n";
    os << "  }\n  return;\n  }\n";
  }
  os << "  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < " << numel
     << "; e += int64_t(blockDim.x) * gridDim.x) {\n";
  idx = emit_index_split(os, ln, I, "e");
  for (size_t i = 0; i < ni; ++i)
    os << "    const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "[" << at(i)
       << "]);\n";
  body("    ");
  for (size_t o = 0; o < no; ++o)
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
