// C++ code generation from the loop IR: static shapes and strides become constants, the loop
// nest is ordered for contiguous outputs and collapsed where every operand allows.
#include "retorch/compiler/CppCodegen.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace retorch::compiler {

namespace {

std::string storage_ctype(ScalarType t) {
  switch (t) {
    case kFloat: return "float";
    case kDouble: return "double";
    case kBFloat16: return "uint16_t";
    case kHalf: return "_Float16";
    case kBool: return "bool";
    case kLong: return "int64_t";
    default: return "void";
  }
}

// The loop nest of a kernel: iteration sizes (outermost first) and each operand's stride per
// loop (inputs then outputs), after aligning broadcasts, ordering and collapsing.
struct LoopNest {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
};

// An operand's strides over the iteration space `sizes`: right-aligned, 0 where it broadcasts.
std::vector<int64_t> aligned_strides(const KernelArg& a, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size(), 0);
  size_t off = sizes.size() - a.sizes.size();
  for (size_t i = 0; i < a.sizes.size(); ++i)
    st[off + i] = a.sizes[i] == 1 ? 0 : a.strides[i];
  return st;
}

LoopNest loop_nest(const Kernel& k) {
  std::vector<std::vector<int64_t>> all;
  for (const KernelArg& a : k.inputs) all.push_back(aligned_strides(a, k.sizes));
  for (const KernelArg& a : k.outputs) all.push_back(aligned_strides(a, k.sizes));
  // Dims of size 1 take no loop; the rest are ordered by the first output's strides, largest
  // outermost, so its innermost loop is contiguous.
  std::vector<size_t> dims;
  for (size_t d = 0; d < k.sizes.size(); ++d)
    if (k.sizes[d] != 1) dims.push_back(d);
  if (!k.outputs.empty()) {
    const std::vector<int64_t>& os = all[k.inputs.size()];
    std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return os[a] > os[b]; });
  }
  LoopNest ln;
  ln.strides.resize(all.size());
  for (size_t d : dims) {
    bool merge = !ln.sizes.empty();
    for (size_t o = 0; merge && o < all.size(); ++o)
      merge = ln.strides[o].back() == all[o][d] * k.sizes[d];
    if (merge) {
      ln.sizes.back() *= k.sizes[d];
      for (size_t o = 0; o < all.size(); ++o) ln.strides[o].back() = all[o][d];
    } else {
      ln.sizes.push_back(k.sizes[d]);
      for (size_t o = 0; o < all.size(); ++o) ln.strides[o].push_back(all[o][d]);
    }
  }
  if (ln.sizes.empty()) {  // a single element
    ln.sizes.push_back(1);
    for (auto& s : ln.strides) s.push_back(0);
  }
  return ln;
}

// "i * 4" / "i" / "0" for an index times a constant stride.
std::string scaled(const std::string& i, int64_t stride) {
  if (stride == 0) return "0";
  if (stride == 1) return i;
  return i + " * " + std::to_string(stride);
}

void emit_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt) {
  os << "// " << k.name << ": from\n";
  for (const std::string& o : k.origins) os << "//   " << o << "\n";
  os << "extern \"C\" void " << k.name << "(void* const* args) {\n";
  size_t ni = k.inputs.size(), no = k.outputs.size();
  for (size_t i = 0; i < ni; ++i) {
    std::string ct = storage_ctype(k.inputs[i].dtype);
    os << "  const " << ct << "* __restrict in" << i << " = static_cast<const " << ct << "*>(args["
       << i << "]);\n";
  }
  for (size_t i = 0; i < no; ++i) {
    std::string ct = storage_ctype(k.outputs[i].dtype);
    os << "  " << ct << "* __restrict out" << i << " = static_cast<" << ct << "*>(args["
       << ni + i << "]);\n";
  }
  LoopNest ln = loop_nest(k);
  const int64_t numel = std::accumulate(ln.sizes.begin(), ln.sizes.end(), int64_t(1),
                                        std::multiplies<int64_t>());
  const size_t rank = ln.sizes.size();
  const int64_t inner = ln.sizes.back();
  std::string par = "#pragma omp parallel for schedule(static)";
  if (opt.threads > 0) par += " num_threads(" + std::to_string(opt.threads) + ")";
  const bool parallel = numel >= opt.parallel_threshold;
  // base[o]: each operand's offset at the start of the inner loop.
  std::vector<std::string> base(ln.strides.size(), "0");
  std::string indent = "  ";
  std::string lo = "0", hi = std::to_string(inner);
  if (rank == 1) {
    // One flat loop, cut into chunks for the threads.
    const int64_t chunk = 4096;
    if (parallel && numel > chunk) {
      os << "  " << par << "\n";
      os << "  for (int64_t c = 0; c < " << numel << "; c += " << chunk << ") {\n";
      os << "    const int64_t e = c + " << chunk << " < " << numel << " ? c + " << chunk << " : "
         << numel << ";\n";
      lo = "c";
      hi = "e";
      indent = "    ";
    }
  } else {
    int64_t outer = numel / inner;
    if (parallel) os << "  " << par << "\n";
    os << "  for (int64_t o = 0; o < " << outer << "; ++o) {\n";
    indent = "    ";
    // Split o into the outer loop indices, innermost first.
    os << indent << "int64_t r = o;\n";
    std::vector<std::string> idx(rank - 1);
    for (size_t d = rank - 1; d-- > 0;) {
      idx[d] = "o" + std::to_string(d);
      if (d == 0) {
        os << indent << "const int64_t " << idx[d] << " = r;\n";
      } else {
        os << indent << "const int64_t " << idx[d] << " = r % " << ln.sizes[d] << ";\n";
        os << indent << "r /= " << ln.sizes[d] << ";\n";
      }
    }
    for (size_t a = 0; a < ln.strides.size(); ++a) {
      std::string b;
      for (size_t d = 0; d + 1 < rank; ++d) {
        if (ln.strides[a][d] == 0) continue;
        b += (b.empty() ? "" : " + ") + scaled(idx[d], ln.strides[a][d]);
      }
      base[a] = "b" + std::to_string(a);
      os << indent << "const int64_t " << base[a] << " = " << (b.empty() ? "0" : b) << ";\n";
    }
  }
  os << indent << "#pragma omp simd\n";
  os << indent << "for (int64_t i = " << lo << "; i < " << hi << "; ++i) {\n";
  std::string in2 = indent + "  ";
  auto at = [&](size_t a) {
    std::string off = scaled("i", ln.strides[a].back());
    if (base[a] == "0") return off;
    return off == "0" ? base[a] : base[a] + " + " + off;
  };
  for (size_t i = 0; i < ni; ++i)
    os << in2 << "const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "["
       << at(i) << "]);\n";
  for (size_t s = 0; s < k.body.size(); ++s)
    os << in2 << "const " << k.body[s].ctype << " t" << s << " = " << k.body[s].expr << ";\n";
  for (size_t i = 0; i < no; ++i) {
    std::string v = "t" + std::to_string(k.stores[i]);
    ScalarType dt = k.outputs[i].dtype;
    if (dt == kBFloat16) v = "rt_to_bf16(" + v + ")";
    else if (dt == kHalf) v = "_Float16(" + v + ")";
    os << in2 << "out" << i << "[" << at(ni + i) << "] = " << v << ";\n";
  }
  os << indent << "}\n";
  if (indent != "  ") os << "  }\n";
  os << "}\n\n";
}

}  // namespace

std::string generate_cpp(const std::vector<Kernel>& kernels, const CodegenOptions& options) {
  std::ostringstream os;
  os << "// Generated by retorch's compiler (retorch/compiler/CppCodegen.cpp).\n"
     << cpp_prelude() << "\n";
  for (const Kernel& k : kernels) emit_kernel(os, k, options);
  return os.str();
}

}  // namespace retorch::compiler
