// The pieces the C++ and CUDA emitters share (CppCodegen.cpp, CudaCodegen.cpp): operand types,
// stores, loop nests, kernel signatures, and the row kernel, which both targets emit.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "retorch/compiler/CppCodegen.h"

namespace retorch::compiler::detail {

inline bool is_cuda(Target t) { return t != Target::kCpu; }

/// The C type a kernel stores a dtype in ("void" for dtypes kernels do not take).
std::string storage_ctype(ScalarType t, Target target);
/// The stored value of output i: its temp, rounded to a 16-bit type where the output is one.
std::string store_expr(const Kernel& k, size_t i, Target target);
/// "i * 4" / "i" / "0" for an index times a constant stride.
std::string scaled(const std::string& i, int64_t stride);

/// The loop nest of a kernel: iteration sizes (outermost first) and each operand's stride per
/// loop (inputs then outputs), after aligning broadcasts, ordering and collapsing.
struct LoopNest {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
};
LoopNest loop_nest(const Kernel& k);

/// The kernel's name and the graph nodes it came from, as a comment.
void emit_origins(std::ostringstream& os, const Kernel& k);

/// The function's opening line and its typed input/output pointers `in<i>`/`out<i>`: from
/// `void* const* args` on the CPU, as parameters of a `__global__` function on CUDA (named
/// `<name>_thread` and called by the launcher when emulated).
void emit_signature(std::ostringstream& os, const Kernel& k, Target target);

/// A kernel with reductions (Note [Row kernels]): on the CPU one OpenMP loop over rows, on CUDA
/// one thread per row.
void emit_row_kernel(std::ostringstream& os, const Kernel& k, const CodegenOptions& opt);

}  // namespace retorch::compiler::detail
