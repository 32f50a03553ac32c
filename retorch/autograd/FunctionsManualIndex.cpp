// Backward helpers of the index family (advanced indexing, diagonal, cumulative scans).
#include <cfloat>

#include "retorch/autograd/FunctionsManual.h"

namespace retorch::autograd::fm {

namespace {
// Sum from each position to the end of dim.
Tensor reverse_cumsum(const Tensor& t, int64_t dim) {
  return t.flip({dim}).cumsum(dim).flip({dim});
}
}  // namespace

Tensor index_backward(const Tensor& grad, IntArrayRef sizes,
                      ArrayRef<std::optional<Tensor>> indices) {
  return zeros(sizes, grad.options()).index_put(indices, grad, true);
}

Tensor index_put_self_backward(const Tensor& grad, ArrayRef<std::optional<Tensor>> indices,
                               bool accumulate) {
  if (accumulate) return grad;
  return grad.index_put(indices, zeros({}, grad.options()), false);
}

Tensor index_put_values_backward(const Tensor& grad, ArrayRef<std::optional<Tensor>> indices,
                                 IntArrayRef values_sizes) {
  return sum_to(retorch::index(grad, indices), values_sizes);
}

Tensor diagonal_backward(const Tensor& grad, IntArrayRef sizes, int64_t offset, int64_t dim1,
                         int64_t dim2) {
  int64_t nd = int64_t(sizes.size());
  int64_t d1 = maybe_wrap_dim(dim1, nd), d2 = maybe_wrap_dim(dim2, nd);
  // Put dim1, dim2 first, write the diagonal there with index_put (differentiable), undo.
  std::vector<int64_t> perm{d1, d2}, psizes{sizes[size_t(d1)], sizes[size_t(d2)]};
  for (int64_t i = 0; i < nd; ++i) {
    if (i == d1 || i == d2) continue;
    perm.push_back(i);
    psizes.push_back(sizes[size_t(i)]);
  }
  int64_t len = grad.size(-1);
  auto opts = TensorOptions().dtype(kLong).device(grad.device());
  Tensor rows = arange(0, len, 1, opts) + Scalar(std::max<int64_t>(-offset, 0));
  Tensor cols = arange(0, len, 1, opts) + Scalar(std::max<int64_t>(offset, 0));
  std::vector<int64_t> gperm{grad.dim() - 1};
  for (int64_t i = 0; i + 1 < grad.dim(); ++i) gperm.push_back(i);
  Tensor placed = zeros(psizes, grad.options()).index_put({rows, cols}, grad.permute(gperm));
  std::vector<int64_t> inv(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) inv[size_t(perm[size_t(i)])] = i;
  return placed.permute(inv);
}

// Note [cumprod backward with zeros]
// d out_j / d x_k = prod_{i <= j, i != k} x_i. Before the first zero of a row this is
// out_j / x_k, so grad_k = reverse_cumsum(grad * out)_k / x_k. At the first zero z it is
// prod_{i < z} x_i * sum_{j >= z} grad_j prod_{z < i <= j} x_i; after z every term holds x_z = 0.
// The masks are constants to autograd, so the second derivative is exact only away from zeros
// (after z it misses the x_z factor's own derivative).
Tensor cumprod_backward(const Tensor& grad, const Tensor& self, int64_t dim,
                        const Tensor& result) {
  if (self.numel() == 0) return zeros_like(self);
  if (self.dim() == 0) return grad.to(self.dtype());
  int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor x = self.to(result.dtype());
  Tensor g = grad.to(result.dtype());
  Tensor is_zero = x.eq(Scalar(0));
  Tensor zeros_seen = is_zero.cumsum(d);
  Tensor before = zeros_seen.eq(Scalar(0));
  Tensor first_zero = is_zero.logical_and(zeros_seen.eq(Scalar(1)));
  Tensor x_before = where(before, x, Scalar(1));
  Tensor part_before = where(before, reverse_cumsum(g * result, d) / x_before, Scalar(0));
  Tensor prefix = x_before.prod(d, true);
  Tensor after = where(before.logical_or(first_zero), Scalar(1), x).cumprod(d);
  Tensor tail = where(before, Scalar(0), g * after).sum(IntArrayRef(d), true);
  Tensor part_zero = where(first_zero, prefix * tail, Scalar(0));
  return (part_before + part_zero).to(self.dtype());
}

Tensor cummaxmin_backward(const Tensor& grad, const Tensor& self, const Tensor& indices,
                          int64_t dim) {
  if (self.dim() == 0) return grad;
  return zeros_like(grad).scatter_add(dim, indices, grad);
}

// PyTorch's formula: split grad by sign so each part is a logcumsumexp of log|grad|, which
// stays finite where exp(-result) would overflow.
Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                             int64_t dim) {
  if (self.dim() == 0) return grad;
  int64_t d = maybe_wrap_dim(dim, self.dim());
  auto reverse_lcse = [d](const Tensor& t) { return t.flip({d}).logcumsumexp(d).flip({d}); };
  Scalar lowest = grad.dtype() == kDouble ? Scalar(-DBL_MAX) : Scalar(double(-FLT_MAX));
  Tensor log_abs = grad.abs().log();
  Tensor log_pos = where(grad.gt(Scalar(0)), log_abs, lowest);
  Tensor log_neg = where(grad.lt(Scalar(0)), log_abs, lowest);
  return (reverse_lcse(log_pos - result) + self).exp() -
         (reverse_lcse(log_neg - result) + self).exp();
}

}  // namespace retorch::autograd::fm
