// TensorIterator: broadcasting, type promotion, output allocation and strided loops for
// elementwise kernels, with a contiguous fast path the compiler vectorizes.
#pragma once
#include <array>
#include <cstdint>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Tensor.h"

namespace retorch {

/// PyTorch's result_type: dimensioned tensors > 0-dim tensors > wrapped Python numbers.
ScalarType result_type(TensorList tensors);
bool can_cast(ScalarType from, ScalarType to);
/// Strides of a new elementwise output over `inputs` (See Note [Output layout]).
DimVector output_strides(TensorList inputs, IntArrayRef shape);

class TensorIterator {
 public:
  static constexpr int kMaxOperands = 4;

  struct Config {
    const char* name = "op";
    bool promote_inputs = true;            // cast inputs to the common dtype
    bool int_to_float = false;             // integer common dtype becomes the default float
    std::optional<ScalarType> out_dtype;   // fixed output dtype (e.g. bool for comparisons)
    std::optional<ScalarType> common;      // fixed computation dtype
    bool allow_resize_out = true;
    bool check_mem_overlap = true;         // reject outputs with self-overlapping elements
  };

  /// out may be undefined (allocated here), an input (in-place) or a user tensor (out=).
  TensorIterator(Tensor& out, std::initializer_list<Tensor> inputs, const Config& cfg);

  ScalarType common_dtype() const { return common_; }
  ScalarType out_dtype() const { return operands_[0].dtype(); }
  int ntensors() const { return n_; }
  int64_t numel() const { return numel_; }
  int ndim() const { return int(shape_.size()); }
  const Tensor& operand(int i) const { return operands_[i]; }

  /// Runs loop(data, strides, n) over every innermost run, in parallel for large tensors.
  /// data[i] points at operand i; strides are in bytes; operand 0 is the output.
  /// Whether the operands are meta tensors: shapes, dtypes and outputs are set up as usual and
  /// loops run nothing, so a kernel built on the iterator is its own meta kernel.
  bool is_meta() const { return meta_; }

  template <typename Loop>
  void for_each(const Loop& loop, int64_t grain = 32768) {
    if (numel_ == 0 || meta_) return;
    int nd = int(shape_.size());
    if (nd <= 1) {
      int64_t n = nd == 0 ? 1 : shape_[0];
      parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
        char* ptrs[kMaxOperands];
        int64_t st[kMaxOperands];
        for (int i = 0; i < n_; ++i) {
          st[i] = nd == 0 ? 0 : strides_[i][0];
          ptrs[i] = base_[i] + b * st[i];
        }
        loop(ptrs, st, e - b);
      });
    } else {
      int64_t inner = shape_[size_t(nd - 1)];
      int64_t rows = numel_ / inner;
      int64_t row_grain = std::max<int64_t>(1, grain / std::max<int64_t>(inner, 1));
      parallel_for(0, rows, row_grain, [&](int64_t b, int64_t e) {
        int64_t idx[16] = {0};
        int64_t rem = b;
        for (int d = nd - 2; d >= 0; --d) {
          idx[d] = rem % shape_[size_t(d)];
          rem /= shape_[size_t(d)];
        }
        int64_t st[kMaxOperands];
        for (int i = 0; i < n_; ++i) st[i] = strides_[i][size_t(nd - 1)];
        char* ptrs[kMaxOperands];
        for (int64_t r = b; r < e; ++r) {
          for (int i = 0; i < n_; ++i) {
            char* p = base_[i];
            for (int d = 0; d < nd - 1; ++d) p += idx[d] * strides_[i][size_t(d)];
            ptrs[i] = p;
          }
          loop(ptrs, st, inner);
          for (int d = nd - 2; d >= 0; --d) {
            if (++idx[d] < shape_[size_t(d)]) break;
            idx[d] = 0;
          }
        }
      });
    }
  }

  /// Copies the temporary result into the user's output when one was needed.
  void finish();

 private:
  void coalesce();

  Tensor* user_out_;
  Tensor operands_[kMaxOperands];
  int n_ = 0;
  DimVector shape_;
  std::array<DimVector, kMaxOperands> strides_;
  char* base_[kMaxOperands] = {};
  int64_t numel_ = 0;
  ScalarType common_ = kFloat;
  bool needs_copy_back_ = false;
  bool meta_ = false;
};

}  // namespace retorch
