// Matrix helpers shared by the linear-algebra composites and their backward formulas, written in
// differentiable retorch ops.
#pragma once
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::linalg_detail {

/// The last two dims swapped (PyTorch's Tensor.mT).
inline Tensor mT(const Tensor& t) {
  return t.transpose(-2, -1);
}

/// Mask of the (rows, cols) positions with col - row <= k (lower) or >= k (upper).
inline Tensor triangle_mask(int64_t rows, int64_t cols, int64_t k, bool lower, Device dev) {
  Tensor r = arange(Scalar(0), Scalar(rows), Scalar(1), TensorOptions().dtype(kLong).device(dev))
                 .unsqueeze(1);
  Tensor c = arange(Scalar(0), Scalar(cols), Scalar(1), TensorOptions().dtype(kLong).device(dev))
                 .unsqueeze(0);
  Tensor d = c - r;
  return lower ? d.le(Scalar(k)) : d.ge(Scalar(k));
}

/// Square matrices with v (..., n) on the diagonal.
inline Tensor diag_embed(const Tensor& v) {
  int64_t n = v.size(-1);
  return v.unsqueeze(-1) * eye(n, n, TensorOptions().dtype(v.dtype()).device(v.device()));
}
/// Identity matrix like the last two dims of t (square).
inline Tensor eye_like(const Tensor& t) {
  return eye(t.size(-1), t.size(-1), TensorOptions().dtype(t.dtype()).device(t.device()));
}

}  // namespace retorch::linalg_detail
