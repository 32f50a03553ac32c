// Backward helpers of the index family (advanced indexing, diagonal, cumulative scans,
// scatter_reduce).
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

// PyTorch's formulas for each reduction. sum/mean: self and each src share the position's
// gradient (divided by the count for mean). prod: the product of the others, taken as result/x
// where x is nonzero and recomputed with the zero replaced by one where x is a position's only
// zero. amax/amin: split evenly among the values equal to the result (self counted whenever it
// equals the result, as PyTorch does even with include_self=False). Positions whose self was
// left out get no self gradient. A src larger than index gets zeros beyond index's extent.
std::tuple<Tensor, Tensor> scatter_reduce_backward(const Tensor& grad, const Tensor& self,
                                                   int64_t dim, const Tensor& index,
                                                   const Tensor& src_full, std::string_view reduce,
                                                   bool include_self, const Tensor& result,
                                                   std::array<bool, 2> grad_input_mask) {
  Tensor src = src_full;
  for (int64_t d = 0; d < index.dim(); ++d)
    if (src.size(d) != index.size(d)) src = src.narrow(d, 0, index.size(d));
  Tensor gself, gsrc;
  if (reduce == "sum") {
    gself = grad;
    gsrc = grad.gather(dim, index);
  } else if (reduce == "mean") {
    Tensor n = (include_self ? ones_like(grad) : zeros_like(grad))
                   .scatter_add(dim, index, ones_like(src));
    Tensor share = grad / n.masked_fill(n.eq(Scalar(0)), Scalar(1));
    gself = share;
    gsrc = share.gather(dim, index);
  } else if (reduce == "prod") {
    Tensor self_nz = self.masked_fill(self.eq(Scalar(0)), Scalar(1));
    gself = grad * self_nz.scatter_reduce(dim, index, src, reduce, include_self) / self_nz;
    Tensor src_zero = src.eq(Scalar(0));
    Tensor zeros_there = zeros_like(self)
                             .scatter_add(dim, index, src_zero.to(self.dtype()))
                             .gather(dim, index);
    Tensor only_zero = src_zero.logical_and(zeros_there.eq(Scalar(1)));
    Tensor others = self.scatter_reduce(dim, index, src.masked_fill(only_zero, Scalar(1)), reduce,
                                        include_self);
    gsrc = where(only_zero, (grad * others).gather(dim, index),
                 (grad * result).gather(dim, index) / src.masked_fill(src_zero, Scalar(1)));
  } else {  // amax, amin
    Tensor self_is = self.eq(result).to(grad.dtype());
    Tensor src_is = src.eq(result.gather(dim, index)).to(grad.dtype());
    Tensor share = grad / self_is.scatter_add(dim, index, src_is);
    gself = self_is * share;
    gsrc = src_is * share.gather(dim, index);
  }
  if (grad_input_mask[0] && !include_self) gself = gself.scatter(dim, index, Scalar(0));
  if (grad_input_mask[1] && !src.is_same(src_full)) {
    std::vector<int64_t> pad;
    for (int64_t d = src.dim() - 1; d >= 0; --d) {
      pad.push_back(0);
      pad.push_back(src_full.size(d) - src.size(d));
    }
    gsrc = constant_pad_nd(gsrc, pad, Scalar(0));
  }
  return {grad_input_mask[0] ? gself : Tensor(), grad_input_mask[1] ? gsrc : Tensor()};
}

}  // namespace retorch::autograd::fm
