// Reduction planning: move reduced dims last, view the input as [outer, inner] rows.
#pragma once
#include <vector>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Dtypes.h"
#include "retorch/core/Tensor.h"

namespace retorch::cpu {

struct ReducePlan {
  Tensor rows;           // contiguous, logically [outer, inner]
  int64_t outer = 1;
  int64_t inner = 1;
  DimVector out_shape;   // with or without kept dims
};

/// dims empty/none reduces everything. Errors on out-of-range or repeated dims.
ReducePlan plan_reduce(const Tensor& self, OptionalIntArrayRef dims, bool keepdim, const char* op);
/// Moves dim to the end and makes the result contiguous: rows of length size(dim).
Tensor move_dim_last(const Tensor& self, int64_t dim);
/// Inverse of move_dim_last for a tensor shaped like its output.
Tensor restore_dim(const Tensor& t, int64_t dim);

/// out[r] = finalize(fold(init, rows[r, :])) with a per-row accumulator of type acc_t.
template <typename scalar_t, typename out_t, typename acc_t, typename Fold, typename Fin>
void reduce_rows(const ReducePlan& p, out_t* out, acc_t init, const Fold& fold, const Fin& fin) {
  const scalar_t* in = static_cast<const scalar_t*>(p.rows.impl()->data());
  int64_t inner = p.inner;
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1));
  parallel_for(0, p.outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      acc_t acc = init;
      const scalar_t* row = in + r * inner;
      for (int64_t i = 0; i < inner; ++i) acc = fold(acc, row[i], i);
      out[r] = fin(acc, inner);
    }
  });
}

}  // namespace retorch::cpu
