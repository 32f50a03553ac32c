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

// The function's opening line and its typed input/output pointers.
void emit_signature(std::ostringstream& os, const Kernel& k) {
  os << "extern \"C\" void " << k.name << "(void* const* args) {\n";
  size_t ni = k.inputs.size();
  for (size_t i = 0; i < ni; ++i) {
    std::string ct = storage_ctype(k.inputs[i].dtype);
    os << "  const " << ct << "* __restrict in" << i << " = static_cast<const " << ct << "*>(args["
       << i << "]);\n";
  }
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    std::string ct = storage_ctype(k.outputs[i].dtype);
    os << "  " << ct << "* __restrict out" << i << " = static_cast<" << ct << "*>(args["
       << ni + i << "]);\n";
  }
}

std::string store_expr(const Kernel& k, size_t i) {
  std::string v = "t" + std::to_string(k.stores[i]);
  ScalarType dt = k.outputs[i].dtype;
  if (dt == kBFloat16) return "rt_to_bf16(" + v + ")";
  if (dt == kHalf) return "_Float16(" + v + ")";
  return v;
}

// "i * 4" / "i" / "0" for an index times a constant stride.
std::string scaled(const std::string& i, int64_t stride) {
  if (stride == 0) return "0";
  if (stride == 1) return i;
  return i + " * " + std::to_string(stride);
}

void emit_reduction_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt);

void emit_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt) {
  if (k.reduction) return emit_reduction_kernel(os, k, opt);
  os << "// " << k.name << ": from\n";
  for (const std::string& o : k.origins) os << "//   " << o << "\n";
  emit_signature(os, k);
  size_t ni = k.inputs.size(), no = k.outputs.size();
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
  for (size_t i = 0; i < no; ++i)
    os << in2 << "out" << i << "[" << at(ni + i) << "] = " << store_expr(k, i) << ";\n";
  os << indent << "}\n";
  if (indent != "  ") os << "  }\n";
  os << "}\n\n";
}


// Note [Reduction kernels]
// One outer loop over the kept dims (threads split it), one inner `omp simd` reduction over the
// reduced dims (collapsed into one index when every prologue input allows, else split by
// division), then the epilogue once per kept element. max keeps NaN like eager's amax: the
// simd max reduction cannot, so a separate NaN flag is or-reduced alongside.
void emit_reduction_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt) {
  os << "// " << k.name << ": from\n";
  for (const std::string& o : k.origins) os << "//   " << o << "\n";
  emit_signature(os, k);
  const size_t rank = k.sizes.size(), nred = k.reduce_dims, nout = rank - nred;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < nout; ++d) outer *= k.sizes[d];
  for (size_t d = nout; d < rank; ++d) inner *= k.sizes[d];
  const Reduction& r = *k.reduction;
  const size_t ni = k.inputs.size();
  // Strides over the kept dims (epilogue operands: aligned to the output shape, whose first
  // nout dims are the kept ones with or without keepdim's trailing 1s).
  auto outer_strides = [&](const KernelArg& a, const std::vector<int64_t>& space) {
    std::vector<int64_t> st = aligned_strides(a, space);
    st.resize(nout);
    return st;
  };
  std::vector<std::vector<int64_t>> ost;  // per input (prologue: over sizes) and output
  for (size_t i = 0; i < ni; ++i)
    ost.push_back(outer_strides(k.inputs[i], k.input_outer[i] ? k.out_sizes : k.sizes));
  for (const KernelArg& a : k.outputs) ost.push_back(outer_strides(a, k.out_sizes));
  std::string par = "#pragma omp parallel for schedule(static)";
  if (opt.threads > 0) par += " num_threads(" + std::to_string(opt.threads) + ")";
  if (outer > 1 && outer * inner >= opt.parallel_threshold) os << "  " << par << "\n";
  os << "  for (int64_t o = 0; o < " << outer << "; ++o) {\n";
  os << "    int64_t q = o;\n";
  for (size_t d = nout; d-- > 0;) {
    if (d == 0) os << "    const int64_t o0 = q;\n";
    else os << "    const int64_t o" << d << " = q % " << k.sizes[d] << ";\n    q /= " << k.sizes[d] << ";\n";
  }
  for (size_t a = 0; a < ost.size(); ++a) {
    std::string b;
    for (size_t d = 0; d < nout; ++d)
      if (ost[a][d] != 0) b += (b.empty() ? "" : " + ") + scaled("o" + std::to_string(d), ost[a][d]);
    os << "    const int64_t b" << a << " = " << (b.empty() ? "0" : b) << ";\n";
  }
  // Inner offsets of the prologue inputs: one stride when the reduced dims collapse.
  std::vector<std::string> inner_off(ni);
  bool split = false;
  std::vector<std::vector<int64_t>> ist(ni);
  for (size_t i = 0; i < ni; ++i) {
    if (k.input_outer[i]) continue;
    std::vector<int64_t> st = aligned_strides(k.inputs[i], k.sizes);
    ist[i].assign(st.begin() + std::ptrdiff_t(nout), st.end());
    bool collapse = true;
    int64_t last = -1;
    for (size_t d = nout; d < rank; ++d) {
      if (k.sizes[d] == 1) continue;
      if (last >= 0 && ist[i][size_t(last) - nout] != st[d] * k.sizes[d]) collapse = false;
      last = int64_t(d);
    }
    if (collapse) {
      inner_off[i] = scaled("i", last < 0 ? 0 : st[size_t(last)]);
    } else {
      split = true;
      std::string e;
      for (size_t d = nout; d < rank; ++d)
        if (st[d] != 0) e += (e.empty() ? "" : " + ") + scaled("j" + std::to_string(d), st[d]);
      inner_off[i] = e.empty() ? "0" : e;
    }
  }
  const std::string& ct = r.ctype;
  os << "    " << ct << " acc = " << (r.kind == "max" ? "-INFINITY" : ct + "(0)") << ";\n";
  if (r.kind == "max") os << "    bool nan = false;\n";
  os << "    #pragma omp simd reduction(" << (r.kind == "max" ? "max:acc) reduction(|:nan" : "+:acc")
     << ")\n";
  os << "    for (int64_t i = 0; i < " << inner << "; ++i) {\n";
  if (split) {
    os << "      int64_t s = i;\n";
    for (size_t d = rank; d-- > nout;) {
      os << "      const int64_t j" << d << " = s % " << k.sizes[d] << ";\n";
      os << "      s /= " << k.sizes[d] << ";\n";
    }
  }
  for (size_t i = 0; i < ni; ++i) {
    if (k.input_outer[i]) continue;
    std::string off = inner_off[i] == "0" ? "b" + std::to_string(i)
                                          : "b" + std::to_string(i) + " + " + inner_off[i];
    os << "      const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "[" << off
       << "]);\n";
  }
  for (size_t s = 0; s < k.prologue_size; ++s)
    os << "      const " << k.body[s].ctype << " t" << s << " = " << k.body[s].expr << ";\n";
  std::string v = "t" + std::to_string(r.value);
  if (r.kind == "max")
    os << "      acc = " << v << " > acc ? " << v << " : acc;\n      nan |= " << v << " != " << v
       << ";\n";
  else
    os << "      acc += " << v << ";\n";
  os << "    }\n";
  os << "    const " << ct << " r0 = " << (r.kind == "max" ? "nan ? " + ct + "(NAN) : acc" : "acc")
     << ";\n";
  for (size_t i = 0; i < ni; ++i)
    if (k.input_outer[i])
      os << "    const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "[b" << i
         << "]);\n";
  for (size_t s = k.prologue_size; s < k.body.size(); ++s)
    os << "    const " << k.body[s].ctype << " t" << s << " = " << k.body[s].expr << ";\n";
  for (size_t i = 0; i < k.outputs.size(); ++i)
    os << "    out" << i << "[b" << ni + i << "] = " << store_expr(k, i) << ";\n";
  os << "  }\n}\n\n";
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
