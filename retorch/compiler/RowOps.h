// Row ops: the reductions over trailing dims and the composite ops built from them (softmax,
// log_softmax, layer_norm, rms_norm, var) that lower into row kernels; with the helpers
// Lowering.cpp and Backward.cpp share.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "retorch/compiler/LoopIR.h"
#include "retorch/compiler/PointwiseRules.h"

namespace retorch::compiler {

/// "name.overload" of a node's op ("add.Tensor", "tanh").
std::string op_key(const jit::Node* n);
/// The type of v when it is a CPU tensor of complete type and a lowerable dtype, else nullptr.
const jit::TensorInfo* complete_tensor(const jit::Value* v);
std::vector<int64_t> sizes_of(const jit::TensorInfo& info);
/// The C++ type values of dtype t are computed in (float for 16-bit floats).
std::string compute_ctype(ScalarType t);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);
/// An operand's loop strides over the iteration space `space`: right-aligned, 0 where it
/// broadcasts.
std::vector<int64_t> aligned_strides(const std::vector<int64_t>& sizes,
                                     const std::vector<int64_t>& strides,
                                     const std::vector<int64_t>& space);

/// Appends statements to a kernel body, recording what each reads.
class BodyBuilder {
 public:
  explicit BodyBuilder(Kernel& k) : k_(k) {}
  /// `<ctype> t<i> = expr`, reading the tensor operands of `reads`; returns t<i>.
  Operand push(const std::string& ctype, std::string expr, bool row,
               const std::vector<Operand>& reads, ScalarType dtype);
  /// The reduction (`kind`: "sum" or "max") of the element operand v, as a row temp of type ct;
  /// keep_nan, differentiable: see Reduction.
  Operand reduce(const std::string& kind, const Operand& v, const std::string& ct,
                 bool keep_nan = true, bool differentiable = true);
  /// Records d(stmt)/d(wrt) = d for the backward (nothing when wrt is a constant or not floating).
  void grad(const Operand& stmt, const Operand& wrt, std::string d);

 private:
  Kernel& k_;
};

/// A row op: input 0 reduced over its last `dims` dims (each row is reduced independently).
struct RowOp {
  std::string kind;  // sum, mean, amax, var, softmax, log_softmax, layer_norm, rms_norm
  size_t dims = 0;
  bool keeps_shape = false;  // the output has input 0's shape (else one value per row)
  int64_t count = 0;         // elements per row
  double eps = 0;            // layer_norm, rms_norm
  int64_t correction = 0;    // var
};

/// The row op n is, when it lowers: constant non-tensor arguments, a floating input of complete
/// type whose trailing dims (at least one kept, more than one element per row) are reduced, and
/// an output of the input's dtype.
std::optional<RowOp> as_row_op(const jit::Node* n);

/// Appends the statements of the row op to b; `args` are the node's operands (args[0] an
/// element operand), ct the compute type. Returns the result operand.
Operand expand_row_op(const RowOp& op, const std::vector<Operand>& args, const std::string& ct,
                      BodyBuilder& b);

}  // namespace retorch::compiler
