// C++ code generation from the loop IR: static shapes and strides become constants, the loop
// nest is ordered for contiguous outputs and collapsed where every operand allows.
#include "retorch/compiler/CppCodegen.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <sstream>

#include "retorch/compiler/CodegenParts.h"
#include "retorch/core/Error.h"

namespace retorch::compiler {

namespace detail {

std::string storage_ctype(ScalarType t, Target target) {
  switch (t) {
    case kFloat: return "float";
    case kDouble: return "double";
    case kBFloat16: return "uint16_t";
    case kHalf: return is_cuda(target) ? "rt_half" : "_Float16";
    case kBool: return "bool";
    case kLong: return "int64_t";
    default: return "void";
  }
}

LoopNest loop_nest(const Kernel& k) {
  std::vector<std::vector<int64_t>> all;
  for (const KernelArg& a : k.inputs) all.push_back(a.loop_strides);
  for (const KernelArg& a : k.outputs) all.push_back(a.loop_strides);
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

void emit_origins(std::ostringstream& os, const Kernel& k) {
  os << "// " << k.name << ": from\n";
  for (const std::string& o : k.origins) os << "//   " << o << "\n";
}

void emit_signature(std::ostringstream& os, const Kernel& k, Target target) {
  size_t ni = k.inputs.size();
  if (is_cuda(target)) {
    if (target == Target::kCuda)
      os << "extern \"C\" __global__ void __launch_bounds__(" << cuda_launch(k).block << ") "
         << k.name << "(";
    else
      os << "static void " << k.name << "_thread(";
    for (size_t i = 0; i < ni + k.outputs.size(); ++i) {
      const bool in = i < ni;
      std::string ct = storage_ctype(in ? k.inputs[i].dtype : k.outputs[i - ni].dtype, target);
      os << (i ? ",\n    " : "") << (in ? "const " : "") << ct << "* __restrict__ "
         << (in ? "in" : "out") << (in ? i : i - ni);
    }
    os << ") {\n";
    return;
  }
  os << "extern \"C\" void " << k.name << "(void* const* args) {\n";
  for (size_t i = 0; i < ni; ++i) {
    std::string ct = storage_ctype(k.inputs[i].dtype, target);
    os << "  const " << ct << "* __restrict in" << i << " = static_cast<const " << ct << "*>(args["
       << i << "]);\n";
  }
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    std::string ct = storage_ctype(k.outputs[i].dtype, target);
    os << "  " << ct << "* __restrict out" << i << " = static_cast<" << ct << "*>(args["
       << ni + i << "]);\n";
  }
}

std::string store_expr(const Kernel& k, size_t i, Target target) {
  std::string v = "t" + std::to_string(k.stores[i]);
  ScalarType dt = k.outputs[i].dtype;
  if (dt == kBFloat16) return "rt_to_bf16(" + v + ")";
  if (dt == kHalf) return (is_cuda(target) ? "rt_to_half(" : "_Float16(") + v + ")";
  return v;
}

std::string scaled(const std::string& i, int64_t stride) {
  if (stride == 0) return "0";
  if (stride == 1) return i;
  return i + " * " + std::to_string(stride);
}

}  // namespace detail

namespace {

using namespace detail;

void emit_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt) {
  if (!k.reductions.empty()) return emit_row_kernel(os, k, opt);
  emit_origins(os, k);
  emit_signature(os, k, Target::kCpu);
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
    os << in2 << "out" << i << "[" << at(ni + i) << "] = " << store_expr(k, i, Target::kCpu)
       << ";\n";
  os << indent << "}\n";
  if (indent != "  ") os << "  }\n";
  os << "}\n\n";
}


}  // namespace

namespace detail {

// Note [Row kernels]
// A row kernel (one with reductions) runs one outer loop over the kept dims (threads split it)
// and, per row, one `omp simd` pass over the row per reduction, in order: a pass recomputes the
// element statements its reduction needs (the closure of its value) and reads the row values
// computed before it (earlier reductions, row loads). Row statements are emitted once per row,
// just before the first pass or store that needs them; then the row outputs are stored, and a
// last pass stores the full-size outputs. Recomputing (x - max) in a later pass costs less than
// writing and re-reading it: a row stays in cache between passes. A math call the last pass and
// a reduction pass need (softmax's exp; in layer_norm + gelu's backward, gelu's derivative, which
// two reduction passes and the last one need) is worth keeping: the first reduction pass that
// computes it stores it in an output row, and the later passes read it back from there. The
// reduced dims collapse into one index when every element operand allows, else the index is
// split by division. max keeps NaN like eager's amax: the simd max reduction cannot, so a
// separate NaN flag is or-reduced alongside.
//
// Note [Reduction streams]
// One vector accumulator makes a pass as slow as the add's latency: 4 cycles per 16 floats, a
// quarter of what the loads allow (a layer_norm row spent 40% of its time in its two sums).
// A pass without math calls therefore splits the row into kStreams contiguous shares summed
// into their own accumulators in one loop, the few elements left over into the first, and
// joins them pairwise at the end. Passes with a math call (softmax's exp) have work enough
// per element to hide the latency and keep one accumulator.
//
// Note [Next-row prefetch]
// A 4 KB row (softmax over 1024 floats) is a page, and the hardware prefetchers stop at page
// boundaries: every row began with a run of cache misses, the passes waiting on memory. A row
// kernel therefore prefetches the next row of each row-major input (the memory right after the
// current row: the next iteration of this thread's contiguous share of rows) before its first
// pass, a line per 64 bytes; rows of 256 bytes to 16 KB (longer rows amortize the prefetchers'
// start). Zen 4, softmax(x * 0.125 + mask) over 4096x1024, the generated source timed alone
// (best of 30): 1.27-1.30 -> 0.99-1.00 ms. When a row computes a math call per element (GELU's
// erf, softmax's exp) its passes are bound by arithmetic, and prefetches issued all at once
// before them leave the memory idle while they run: such a row runs its last pass in chunks of
// kPrefetchChunk elements, each prefetching its share of the next row first. Generated sources
// timed alone (best of 200, 2 threads, five alternating runs): layer_norm + gelu + residual
// row 1.25-1.30 -> 1.09-1.15 ms, softmax 0.98-1.01 -> 0.91-0.93 ms. A light row keeps the
// prefetches up front: rms_norm spread this way went 0.52-0.59 -> 0.66-0.71 ms.
constexpr int kStreams = 4;
constexpr int64_t kPrefetchMinRow = 256, kPrefetchMaxRow = 16384, kPrefetchChunk = 256;
constexpr int64_t kStreamMinRow = 256;
static_assert(kStreams == 4, "the joins below pair four accumulators");

void emit_row_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt) {
  emit_origins(os, k);
  emit_signature(os, k, opt.target);
  const bool cuda = is_cuda(opt.target);
  // OpenMP's pragmas (none in CUDA C++: a thread's row is a plain loop).
  auto pragma = [&](const std::string& p) {
    if (!cuda) os << "    #pragma omp " << p << "\n";
  };
  const size_t rank = k.sizes.size(), nred = k.reduce_dims, nout = rank - nred;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < nout; ++d) outer *= k.sizes[d];
  for (size_t d = nout; d < rank; ++d) inner *= k.sizes[d];
  const size_t ni = k.inputs.size();
  std::vector<const KernelArg*> operands;  // inputs, then outputs
  for (const KernelArg& a : k.inputs) operands.push_back(&a);
  for (const KernelArg& a : k.outputs) operands.push_back(&a);
  std::string par = "#pragma omp parallel for schedule(static)";
  if (opt.threads > 0) par += " num_threads(" + std::to_string(opt.threads) + ")";
  // Note [Column gradients in the kernel]: outputs summed over the rows (column_sum: a
  // broadcast weight's gradient) accumulate in per-thread double rows, added after the loop in
  // thread order (the same bits for the same thread count); written whole and summed by the
  // node they took a layer_norm row's forward + backward from 2x eager's speed to 0.8x.
  std::vector<size_t> columns;  // output indices
  for (size_t o = 0; o < k.outputs.size() && !cuda; ++o)
    if (k.outputs[o].column_sum) columns.push_back(o);
  const bool parallel = outer > 1 && outer * inner >= opt.parallel_threshold;
  if (cuda) {
    os << "  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < " << outer
       << "; o += int64_t(blockDim.x) * gridDim.x) {\n";
  } else if (!columns.empty()) {
    const std::string nc = std::to_string(columns.size()), in = std::to_string(inner);
    os << "  double* col_part = nullptr;\n  int col_threads = 1;\n";
    os << "  #pragma omp parallel" << (parallel ? "" : " if(0)")
       << (opt.threads > 0 ? " num_threads(" + std::to_string(opt.threads) + ")" : "") << "\n";
    os << "  {\n  #pragma omp single\n  {\n    col_threads = omp_get_num_threads();\n"
       << "    col_part = static_cast<double*>(calloc(size_t(col_threads) * " << nc << " * " << in
       << ", sizeof(double)));\n  }\n";
    for (size_t c = 0; c < columns.size(); ++c)
      os << "  double* __restrict col" << columns[c]
         << " = col_part + (size_t(omp_get_thread_num()) * " << nc << " + " << c << ") * " << in
         << ";\n";
    os << "  #pragma omp for schedule(static)\n";
    os << "  for (int64_t o = 0; o < " << outer << "; ++o) {\n";
  } else {
    if (parallel) os << "  " << par << "\n";
    os << "  for (int64_t o = 0; o < " << outer << "; ++o) {\n";
  }
  os << "    int64_t q = o;\n";
  for (size_t d = nout; d-- > 0;) {
    if (d == 0) os << "    const int64_t o0 = q;\n";
    else os << "    const int64_t o" << d << " = q % " << k.sizes[d] << ";\n    q /= " << k.sizes[d] << ";\n";
  }
  for (size_t a = 0; a < operands.size(); ++a) {
    std::string b;
    for (size_t d = 0; d < nout; ++d)
      if (operands[a]->loop_strides[d] != 0)
        b += (b.empty() ? "" : " + ") + scaled("o" + std::to_string(d), operands[a]->loop_strides[d]);
    os << "    const int64_t b" << a << " = " << (b.empty() ? "0" : b) << ";\n";
  }
  // Offsets of the element operands within a row: one stride when the row dims collapse.
  std::vector<std::string> at(operands.size());
  bool split = false;
  for (size_t a = 0; a < operands.size(); ++a) {
    if (operands[a]->row) continue;
    const std::vector<int64_t>& st = operands[a]->loop_strides;
    bool collapse = true;
    int64_t last = -1;
    for (size_t d = nout; d < rank; ++d) {
      if (k.sizes[d] == 1) continue;
      if (last >= 0 && st[size_t(last)] != st[d] * k.sizes[d]) collapse = false;
      last = int64_t(d);
    }
    std::string e;
    if (collapse) {
      e = scaled("i", last < 0 ? 0 : st[size_t(last)]);
    } else {
      split = true;
      for (size_t d = nout; d < rank; ++d)
        if (st[d] != 0) e += (e.empty() ? "" : " + ") + scaled("j" + std::to_string(d), st[d]);
    }
    at[a] = "b" + std::to_string(a) + (e.empty() || e == "0" ? "" : " + " + e);
  }
  // Note [Next-row prefetch]: a row-major input's next row, while this one is worked on:
  // prefetch(from, to) prefetches the lines of elements [from, to) of each such input's next row.
  std::vector<size_t> ahead;
  for (size_t a = 0; a < ni && !cuda && nout > 0; ++a) {
    const KernelArg& in = k.inputs[a];
    const int64_t bytes = inner * int64_t(element_size(in.dtype));
    if (!in.row && at[a] == "b" + std::to_string(a) + " + i" && in.loop_strides[nout - 1] == inner &&
        bytes >= kPrefetchMinRow && bytes <= kPrefetchMaxRow)
      ahead.push_back(a);
  }
  auto prefetch = [&](const std::string& from, const std::string& to) {
    for (size_t a : ahead)
      os << "    for (int64_t p = " << from << "; p < " << to << "; p += "
         << 64 / element_size(k.inputs[a].dtype) << ") __builtin_prefetch(&in" << a << "[b" << a
         << " + " << inner << " + p]);\n";
  };
  // need[s]: statement s is in the closure of the roots (not looking through `leaf`).
  auto closure = [&](const std::vector<size_t>& roots, std::optional<size_t> leaf = {}) {
    std::vector<bool> need(k.body.size(), false);
    for (size_t r : roots) need[r] = true;
    for (size_t s = k.body.size(); s-- > 0;)
      if (need[s] && s != leaf)
        for (size_t t : k.body[s].temps) need[t] = true;
    return need;
  };
  std::vector<size_t> row_stores, element_stores;
  for (size_t o = 0; o < k.outputs.size(); ++o)
    (k.outputs[o].row ? row_stores : element_stores).push_back(k.stores[o]);
  // Spread over the last pass when the row has a math call per element; otherwise (a row's
  // sums alone, a light last pass) the prefetches go out before the first pass.
  bool spread = false;
  for (size_t s = 0; s < k.body.size(); ++s)
    if (!k.body[s].row && k.body[s].expr.find("rt_") != std::string::npos) spread = true;
  spread = spread && !element_stores.empty() && inner > kPrefetchChunk;
  if (!spread) prefetch("0", std::to_string(inner));
  // The newest element value computed by a math call that the last pass and a reduction pass
  // need (softmax's exp, gelu's derivative in a backward) is kept in an output row of its type
  // by the first reduction pass that computes it and read back by the later passes.
  std::optional<size_t> kept, kept_in;
  size_t kept_pass = 0;
  if (!element_stores.empty()) {
    std::vector<bool> last = closure(element_stores);
    for (size_t s = k.body.size(); s-- > 0 && !kept;) {
      if (!last[s] || k.body[s].row || k.body[s].expr.find("rt_") == std::string::npos) continue;
      for (size_t j = 0; j < k.reductions.size() && !kept; ++j)
        if (closure({k.reductions[j].value})[s]) {
          kept = s;
          kept_pass = j;
        }
    }
    for (size_t o = 0; kept && o < k.outputs.size() && !kept_in; ++o)
      if (!k.outputs[o].row && !k.outputs[o].column_sum &&
          storage_ctype(k.outputs[o].dtype, opt.target) == k.body[*kept].ctype)
        kept_in = ni + o;
    if (!kept_in) kept.reset();
  }
  std::vector<bool> emitted(k.body.size(), false);
  auto emit_rows = [&](const std::vector<bool>& need) {
    for (size_t s = 0; s < k.body.size(); ++s)
      if (need[s] && k.body[s].row && !emitted[s]) {
        os << "    const " << k.body[s].ctype << " t" << s << " = " << k.body[s].expr << ";\n";
        emitted[s] = true;
      }
  };
  // The body of a pass: the element loads and statements `need` has.
  auto emit_elements = [&](const std::vector<bool>& need, bool read_kept = false) {
    if (split) {
      os << "      int64_t s = i;\n";
      for (size_t d = rank; d-- > nout;)
        os << "      const int64_t j" << d << " = s % " << k.sizes[d] << ";\n      s /= "
           << k.sizes[d] << ";\n";
    }
    std::vector<bool> load(ni, false);
    for (size_t s = 0; s < k.body.size(); ++s)
      if (need[s] && !k.body[s].row && !(read_kept && s == kept))
        for (size_t l : k.body[s].loads) load[l] = true;
    for (size_t i = 0; i < ni; ++i)
      if (load[i])
        os << "      const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "["
           << at[i] << "]);\n";
    for (size_t s = 0; s < k.body.size(); ++s) {
      if (!need[s] || k.body[s].row) continue;
      os << "      const " << k.body[s].ctype << " t" << s << " = ";
      if (read_kept && s == kept) os << "out" << *kept_in - ni << "[" << at[*kept_in] << "];\n";
      else os << k.body[s].expr << ";\n";
    }
  };
  for (size_t i = 0; i < ni; ++i)
    if (k.inputs[i].row)
      os << "    const " << k.input_ctypes[i] << " l" << i << " = rt_load(in" << i << "[b" << i
         << "]);\n";
  for (size_t j = 0; j < k.reductions.size(); ++j) {
    const Reduction& r = k.reductions[j];
    const bool read_kept = kept && j > kept_pass && closure({r.value})[*kept];
    const std::vector<bool> need =
        read_kept ? closure({r.value}, kept) : closure({r.value});
    emit_rows(need);
    const std::string acc = "acc" + std::to_string(j), nan = "nan" + std::to_string(j);
    const bool max = r.kind == "max", flag = max && r.keep_nan;
    // Note [Reduction streams]: a light pass sums in kStreams independent accumulators.
    bool light = inner >= kStreamMinRow && !cuda;
    for (size_t s = 0; s < k.body.size() && light; ++s)
      if (need[s] && !k.body[s].row && !(read_kept && s == kept) &&
          k.body[s].expr.find("rt_") != std::string::npos)
        light = false;
    const int streams = light ? kStreams : 1;
    const int64_t share = inner / streams;
    auto name = [&](int t) { return streams == 1 ? acc : acc + "_" + std::to_string(t); };
    // The NaN flag is an integer as wide as the value, so both vectorize in the same lanes.
    const std::string flag_t = r.ctype == "double" ? "int64_t" : "int32_t";
    std::string accs;
    for (int t = 0; t < streams; ++t) {
      os << "    " << r.ctype << " " << name(t) << " = " << (max ? "-INFINITY" : r.ctype + "(0)")
         << ";\n";
      accs += (t ? ", " : "") + name(t);
    }
    if (flag) os << "    " << flag_t << " " << nan << " = 0;\n";
    // One element of the pass, at index i, into accumulator a.
    auto element = [&](const std::string& a) {
      emit_elements(need, read_kept);
      std::string v = "t" + std::to_string(r.value);
      if (kept && j == kept_pass)
        os << "      out" << *kept_in - ni << "[" << at[*kept_in] << "] = t" << *kept << ";\n";
      if (max) os << "      " << a << " = " << v << " > " << a << " ? " << v << " : " << a << ";\n";
      if (flag) os << "      " << nan << " |= " << v << " != " << v << ";\n";
      if (!max) os << "      " << a << " += " << v << ";\n";
    };
    pragma(std::string("simd reduction(") + (max ? "max:" : "+:") + accs + ")" +
           (flag ? " reduction(|:" + nan + ")" : ""));
    if (streams == 1) {
      os << "    for (int64_t i = 0; i < " << inner << "; ++i) {\n";
      element(acc);
      os << "    }\n";
    } else {
      os << "    for (int64_t ii = 0; ii < " << share << "; ++ii) {\n";
      for (int t = 0; t < streams; ++t) {
        os << "     {\n      const int64_t i = ii + " << t * share << ";\n";
        element(name(t));
        os << "     }\n";
      }
      os << "    }\n";
      if (inner % streams) {
        os << "    for (int64_t i = " << share * streams << "; i < " << inner << "; ++i) {\n";
        element(name(0));
        os << "    }\n";
      }
      auto join = [&](const std::string& a, const std::string& b) {
        return max ? a + " > " + b + " ? " + a + " : " + b : a + " + " + b;
      };
      const std::string lo = acc + "_01", hi = acc + "_23", ct = "    const " + r.ctype + " ";
      os << ct << lo << " = " << join(name(0), name(1)) << ";\n"
         << ct << hi << " = " << join(name(2), name(3)) << ";\n"
         << ct << acc << " = " << join(lo, hi) << ";\n";
    }
    os << "    const " << r.ctype << " r" << j << " = "
       << (flag ? nan + " ? " + r.ctype + "(NAN) : " + acc : acc) << ";\n";
  }
  emit_rows(closure(row_stores));
  for (size_t o = 0; o < k.outputs.size(); ++o)
    if (k.outputs[o].row)
      os << "    out" << o << "[b" << ni + o << "] = " << store_expr(k, o, opt.target) << ";\n";
  if (!element_stores.empty()) {
    const std::vector<bool> need = closure(element_stores, kept);
    emit_rows(need);
    // The last pass in chunks, each prefetching its share of the next row first.
    std::string from = "0", to = std::to_string(inner);
    if (spread && !ahead.empty()) {
      const std::string c = std::to_string(kPrefetchChunk);
      os << "    for (int64_t c = 0; c < " << inner << "; c += " << c << ") {\n";
      to = inner % kPrefetchChunk ? "(c + " + c + " < " + std::to_string(inner) + " ? c + " + c +
                                        " : " + std::to_string(inner) + ")"
                                  : "c + " + c;
      from = "c";
      prefetch(from, to);
    }
    pragma("simd");
    os << "    for (int64_t i = " << from << "; i < " << to << "; ++i) {\n";
    emit_elements(need, true);
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      if (k.outputs[o].row) continue;
      if (!cuda && k.outputs[o].column_sum)
        os << "      col" << o << "[i] += double(t" << k.stores[o] << ");\n";
      else
        os << "      out" << o << "[" << at[ni + o] << "] = " << store_expr(k, o, opt.target)
           << ";\n";
    }
    os << "    }\n";
    if (from == "c") os << "    }\n";
  }
  os << "  }\n";
  if (!columns.empty()) {
    os << "  }\n";  // the parallel region
    for (size_t c = 0; c < columns.size(); ++c) {
      const size_t o = columns[c];
      const std::string v = "t" + std::to_string(k.stores[o]);
      os << "  for (int64_t i = 0; i < " << inner << "; ++i) {\n    double sum = 0;\n"
         << "    for (int t = 0; t < col_threads; ++t) sum += col_part[(size_t(t) * "
         << columns.size() << " + " << c << ") * " << inner << " + i];\n"
         << "    const " << k.body[k.stores[o]].ctype << " " << v << " = sum;\n"
         << "    out" << o << "[i] = " << store_expr(k, o, opt.target) << ";\n  }\n";
    }
    os << "  free(col_part);\n";
  }
  os << "}\n\n";
}
}  // namespace detail

std::string generate_cpp(const std::vector<Kernel>& kernels, const CodegenOptions& options) {
  RT_CHECK(options.target == Target::kCpu, "generate_cpp: the target is CUDA; use generate_cuda");
  std::ostringstream os;
  os << "// Generated by retorch's compiler (retorch/compiler/CppCodegen.cpp).\n"
     << cpp_prelude() << "\n";
  for (const Kernel& k : kernels) {
    emit_kernel(os, k, options);
    if (k.backward) emit_kernel(os, *k.backward, options);
  }
  return os.str();
}

}  // namespace retorch::compiler
