// Backward helpers for the derivative formulas, written with retorch ops so they differentiate.
#include "retorch/autograd/FunctionsManual.h"

#include <cmath>

#include "retorch/core/Shape.h"

namespace retorch {

Tensor sum_to(const Tensor& t, IntArrayRef shape) {
  if (t.sizes().equals(shape)) return t;
  int64_t lead = t.dim() - int64_t(shape.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 1 && t.size(lead + i) != 1) dims.push_back(lead + int64_t(i));
  Tensor r = dims.empty() ? t : t.sum(IntArrayRef(dims), /*keepdim=*/true);
  if (lead > 0 || !r.sizes().equals(shape)) r = r.reshape(shape);
  return r;
}

}  // namespace retorch

namespace retorch::autograd::fm {

Tensor maybe_multiply(const Tensor& t, const Scalar& s) {
  return s.equal(1) ? t : t * s;
}

Tensor to_copy_backward(const Tensor& grad, ScalarType self_dtype, Device self_device) {
  return retorch::_to_copy(grad, self_dtype, self_device);
}

Tensor permute_backwards(const Tensor& grad, IntArrayRef dims) {
  std::vector<int64_t> inv(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inv[size_t(maybe_wrap_dim(dims[i], int64_t(dims.size())))] = int64_t(i);
  return grad.permute(inv);
}

// Note [Differentiable view backward]
// The fast path writes grad into a view of fresh zeros. That write is not recorded by autograd
// (the zeros are no view base that autograd tracks), so under create_graph the result would
// silently carry no history and double backward would be wrong. When grad itself requires grad,
// build the same tensor with index_add, whose gradient w.r.t. grad is the matching index_select.
Tensor select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t index) {
  if (grad.requires_grad()) {
    int64_t d = maybe_wrap_dim(dim, int64_t(sizes.size()), "select_backward");
    Tensor idx = full({1}, Scalar(index < 0 ? index + sizes[d] : index), TensorOptions(kLong));
    return zeros(sizes, grad.options()).index_add(d, idx, grad.unsqueeze(d));
  }
  Tensor g = zeros(sizes, grad.options());
  g.select(dim, index).copy_(grad);
  return g;
}

Tensor slice_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim,
                      std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  if (grad.requires_grad()) {  // See Note [Differentiable view backward]
    int64_t d = maybe_wrap_dim(dim, int64_t(sizes.size()), "slice_backward");
    Tensor idx = arange(sizes[d], TensorOptions(kLong)).slice(0, start, end, step);
    return zeros(sizes, grad.options()).index_add(d, idx, grad);
  }
  Tensor g = zeros(sizes, grad.options());
  g.slice(dim, start, end, step).copy_(grad);
  return g;
}

Tensor as_strided_backward(const Tensor& grad, const Tensor& self, IntArrayRef size,
                           IntArrayRef stride, std::optional<int64_t> storage_offset) {
  // Map both geometries onto flat storage indices, scatter-add the gradient into storage
  // positions, then gather it back in the input's geometry.
  int64_t out_off = storage_offset.value_or(self.storage_offset());
  int64_t extent = std::max(storage_extent(size, stride, out_off),
                            storage_extent(self.sizes(), self.strides(), self.storage_offset()));
  Tensor pos = arange(extent, TensorOptions(kLong));
  Tensor out_idx = pos.as_strided(size, stride, out_off).reshape({-1});
  Tensor in_idx = pos.as_strided(self.sizes(), self.strides(), self.storage_offset()).reshape({-1});
  Tensor flat = zeros({extent}, grad.options()).scatter_add(0, out_idx, grad.reshape({-1}));
  return flat.gather(0, in_idx).reshape(self.sizes());
}

namespace {
Tensor cat_grads(const std::vector<Tensor>& grads, IntArrayRef split_sizes, int64_t dim,
                 IntArrayRef sizes, ScalarType dtype) {
  std::vector<Tensor> parts;
  int64_t d = maybe_wrap_dim(dim, int64_t(sizes.size()));
  for (size_t i = 0; i < split_sizes.size(); ++i) {
    if (i < grads.size() && grads[i].defined()) {
      parts.push_back(grads[i]);
    } else {
      std::vector<int64_t> s = sizes.vec();
      s[size_t(d)] = split_sizes[i];
      parts.push_back(zeros(s, TensorOptions(dtype)));
    }
  }
  return cat(parts, d);
}
}  // namespace

Tensor split_backward(const std::vector<Tensor>& grads, int64_t split_size, int64_t dim,
                      IntArrayRef sizes, ScalarType dtype) {
  int64_t d = maybe_wrap_dim(dim, int64_t(sizes.size()));
  int64_t n = sizes[size_t(d)];
  std::vector<int64_t> split_sizes;
  for (int64_t s = 0; s < n; s += split_size) split_sizes.push_back(std::min(split_size, n - s));
  if (split_sizes.empty()) split_sizes.push_back(0);
  return cat_grads(grads, split_sizes, d, sizes, dtype);
}

Tensor split_with_sizes_backward(const std::vector<Tensor>& grads, IntArrayRef split_sizes,
                                 int64_t dim, IntArrayRef sizes, ScalarType dtype) {
  return cat_grads(grads, split_sizes, dim, sizes, dtype);
}

std::vector<Tensor> cat_tensors_backward(const Tensor& grad, const std::vector<Tensor>& tensors,
                                         int64_t dim) {
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (const auto& t : tensors) {
    // Legacy: 1-D empty tensors are skipped by cat whatever the dim; their gradient is empty.
    if (t.dim() == 1 && t.numel() == 0) {
      out.push_back(zeros({0}, TensorOptions(grad.dtype()).device(grad.device())));
      continue;
    }
    int64_t d = maybe_wrap_dim(dim, t.dim());
    int64_t len = t.size(d);
    out.push_back(grad.narrow(d, offset, len));
    offset += len;
  }
  return out;
}

Tensor index_select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim,
                             const Tensor& index) {
  int64_t d = maybe_wrap_dim(dim, int64_t(sizes.size()));
  Tensor g = zeros(sizes, grad.options());
  if (sizes.empty()) return g.add(grad.reshape({}));
  return g.index_add_(d, index, grad);  // in place: g is fresh zeros
}

Tensor gather_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, const Tensor& index) {
  return zeros(sizes, grad.options()).scatter_add(dim, index, grad);
}

Tensor masked_fill_value_backward(const Tensor& grad, const Tensor& mask) {
  return where(mask, grad, Scalar(0)).sum();
}

Tensor silu_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self) {
  // silu''(x) = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x).
  Tensor s = self.sigmoid();
  Tensor ds = s * s.neg().add(1);
  return grad * grad_output * ds * (self * (s * -2).add(1)).add(2);
}

// d/dx of elu_backward: 0 above 0; elsewhere grad_output * input_scale^2 * alpha * scale *
// exp(x * input_scale) from the input, or grad_output * input_scale from the result.
Tensor elu_double_backward(const Tensor& grad, const Tensor& grad_output, const Scalar& alpha,
                           const Scalar& scale, const Scalar& input_scale, bool is_result,
                           const Tensor& self_or_result) {
  const double neg = alpha.to_double() * scale.to_double(), in_s = input_scale.to_double();
  Tensor d = is_result ? grad * grad_output * in_s
                       : grad * grad_output *
                             (self_or_result.clamp_max(Scalar(0)) * in_s).exp() *
                             (in_s * in_s * neg);
  return where(self_or_result.gt(Scalar(0)), Scalar(0), d);
}

Tensor gelu_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self,
                            std::string_view approximate) {
  if (approximate == "tanh") {
    // f = x (1 + t) / 2, t = tanh(u), u = k (x + c x^3):
    // f'' = (1 - t^2) (u' - x t u'^2 + x u'' / 2), u' = k (1 + 3 c x^2), u'' = 6 k c x.
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Tensor x2 = self * self;
    Tensor t = ((self + self * x2 * c) * k).tanh();
    Tensor du = (x2 * (3 * c)).add(1) * k;
    Tensor inner = du - self * t * du * du + self * self * (3 * k * c);
    return grad * grad_output * (t * t).neg().add(1) * inner;
  }
  // f'' = pdf(x) (2 - x^2).
  Tensor pdf = (self * self * -0.5).exp() * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
  return grad * grad_output * pdf * (self * self).neg().add(2);
}

Tensor softplus_backward(const Tensor& grad, const Tensor& self, const Scalar& beta,
                         const Scalar& threshold) {
  Tensor z = self * beta;
  return where(z > threshold, grad, grad * z.sigmoid());
}

Tensor div_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other) {
  return (grad * self / (other * other)).neg();
}

Tensor div_mode_self_backward(const Tensor& grad, const Tensor& other,
                              std::optional<std::string_view> mode) {
  if (mode) return zeros_like(grad);
  return grad / other;
}

Tensor div_mode_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                               std::optional<std::string_view> mode) {
  if (mode) return zeros_like(grad);
  return div_other_backward(grad, self, other);
}

Tensor pow_backward(const Tensor& grad, const Tensor& self, const Scalar& exponent) {
  if (exponent.equal(0)) return zeros_like(grad);
  double e = exponent.to_double();
  return grad * self.pow(Scalar(e - 1)) * e;
}

Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent) {
  Tensor r = grad * exponent * self.pow(exponent - 1);
  return where(exponent == 0, Scalar(0), r);
}

Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                             const Tensor& result) {
  // d/de x^e = x^e * log(x); defined as 0 where x == 0 and e >= 0.
  Tensor r = grad * result * self.log();
  return where((self == 0) & (exponent >= 0), Scalar(0), r);
}

Tensor max_min_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other) {
  // Gradient goes to self where it wins, and is split evenly on ties.
  Tensor half = where(self == other, grad / 2, grad);
  return where(self < other, Scalar(0), half);
}

Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max) {
  Tensor g = grad;
  if (min) g = where(self >= *min, g, Scalar(0));
  if (max) g = where(self <= *max, g, Scalar(0));
  return g;
}

namespace {
// Re-inserts reduced dims (size 1) so grad broadcasts against the input again.
Tensor unsqueeze_reduced(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim,
                         bool keepdim) {
  int64_t nd = int64_t(sizes.size());
  if (keepdim || nd == 0) return grad;
  if (!dim || dim->empty()) return grad.reshape(std::vector<int64_t>(size_t(nd), 1));
  std::vector<bool> reduced(size_t(nd), false);
  for (int64_t d : *dim) reduced[size_t(maybe_wrap_dim(d, nd))] = true;
  Tensor g = grad;
  for (int64_t d = 0; d < nd; ++d)
    if (reduced[size_t(d)]) g = g.unsqueeze(d);
  return g;
}
int64_t reduced_count(IntArrayRef sizes, OptionalIntArrayRef dim) {
  int64_t n = 1;
  if (sizes.empty()) return 1;  // a 0-dim tensor reduced over dim 0 or -1 has one element
  if (!dim || dim->empty()) {
    for (int64_t s : sizes) n *= s;
    return n;
  }
  std::vector<bool> seen(sizes.size(), false);
  for (int64_t d : *dim) {
    size_t w = size_t(maybe_wrap_dim(d, int64_t(sizes.size())));
    if (!seen[w]) n *= sizes[w];
    seen[w] = true;
  }
  return n;
}
}  // namespace

Tensor sum_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim) {
  return unsqueeze_reduced(grad, sizes, dim, keepdim).expand(sizes);
}

Tensor mean_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim) {
  // Divided before it is expanded: one division per output element, not per input element.
  return sum_backward(grad / double(reduced_count(sizes, dim)), sizes, dim, keepdim);
}

Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  if (self.numel() == 0) return zeros_like(self);
  Tensor flat = self.reshape({-1});
  Tensor g = prod_dim_backward(grad.reshape({1}), flat, result.reshape({1}), 0, true);
  return g.reshape(self.sizes());
}

Tensor prod_dim_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                         int64_t dim, bool keepdim) {
  if (self.dim() == 0) return grad;
  int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor g = keepdim ? grad : grad.unsqueeze(d);
  Tensor r = keepdim ? result : result.unsqueeze(d);
  // Product of all other elements = exclusive cumprod from both sides; computed with
  // logs would fail on zeros, so use prefix/suffix products via cumsum of logs only when
  // there are no zeros, and an explicit product otherwise.
  Tensor zero_mask = self == 0;
  if (!zero_mask.any().item<bool>()) return g * r / self;
  int64_t n = self.size(d);
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < n; ++i) {
    Tensor others = ones_like(self.narrow(d, 0, 1));
    for (int64_t j = 0; j < n; ++j)
      if (j != i) others = others * self.narrow(d, j, 1);
    parts.push_back(others);
  }
  return g * cat(parts, d);
}

Tensor amax_amin_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                          IntArrayRef dim, bool keepdim) {
  OptionalIntArrayRef od = dim.empty() ? OptionalIntArrayRef() : OptionalIntArrayRef(dim);
  Tensor r = unsqueeze_reduced(result, self.sizes(), od, keepdim);
  Tensor g = unsqueeze_reduced(grad, self.sizes(), od, keepdim);
  Tensor mask = (self == r).to(grad.dtype());
  Tensor count = od ? mask.sum(*od, true) : mask.sum(OptionalIntArrayRef(), true);
  return g * mask / count;
}

Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  Tensor mask = self == result;
  if (is_floating_type(self.dtype())) mask = mask | (self.isnan() & result.isnan());
  Tensor m = mask.to(grad.dtype());
  return m * (grad / m.sum());
}

Tensor value_selecting_reduction_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                          IntArrayRef sizes, bool keepdim) {
  if (sizes.empty()) return grad;
  int64_t d = maybe_wrap_dim(dim, int64_t(sizes.size()));
  Tensor g = keepdim ? grad : grad.unsqueeze(d);
  Tensor idx = keepdim ? indices : indices.unsqueeze(d);
  return zeros(sizes, grad.options()).scatter(d, idx, g);
}

Tensor var_backward(const Tensor& grad, const Tensor& self, OptionalIntArrayRef dim,
                    std::optional<int64_t> correction, bool keepdim) {
  int64_t n = reduced_count(self.sizes(), dim);
  double denom = double(n - correction.value_or(1));
  Tensor g = unsqueeze_reduced(grad, self.sizes(), dim, keepdim);
  Tensor mean = dim ? self.mean(*dim, true) : self.mean(OptionalIntArrayRef(), true);
  return g * (self - mean) * (2.0 / denom);
}

Tensor std_backward(const Tensor& result, const Tensor& grad, const Tensor& self,
                    OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim) {
  // d sqrt(v) = dv / (2 sqrt(v)); PyTorch defines the gradient as 0 where std is 0.
  Tensor g = where(result == 0, Scalar(0), grad / (result * 2));
  return var_backward(g, self, dim, correction, keepdim);
}

Tensor norm_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& p,
                     const Tensor& result, OptionalIntArrayRef dim, bool keepdim) {
  // PyTorch's norm_backward, case by case, so points where self or the norm is 0 get the same
  // finite (sub)gradient instead of 0 * inf.
  double pv = p ? p->to_double() : 2.0;
  Tensor g = unsqueeze_reduced(grad, self.sizes(), dim, keepdim);
  Tensor r = unsqueeze_reduced(result, self.sizes(), dim, keepdim);
  if (pv == 0.0) return zeros_like(self);
  if (pv == 1.0) return g * self.sign();
  if (pv == 2.0) return g * where(r == 0, Scalar(0), self / r);
  if (std::isinf(pv)) {
    Tensor abs = self.abs();
    Tensor mask = ((abs == r) | abs.isnan()).to(self.dtype());
    Tensor count = dim ? mask.sum(*dim, true) : mask.sum(OptionalIntArrayRef(), true);
    return self.sign() * (g / count * mask);
  }
  if (pv < 1.0) {
    Tensor scaled = self.sign() * where(self == 0, Scalar(0), self.abs().pow(Scalar(pv - 1)));
    return scaled * g * r.pow(Scalar(1 - pv));
  }
  Tensor scale = where(r == 0, Scalar(0), g / r.pow(Scalar(pv - 1)));
  if (pv < 2.0) return self.sign() * self.abs().pow(Scalar(pv - 1)) * scale;
  return self * self.abs().pow(Scalar(pv - 2)) * scale;
}

Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  if (grad.dim() == 0) return grad;
  // Reverse cumulative sum: total - inclusive prefix + self.
  return grad.sum(IntArrayRef(dim), true) - grad.cumsum(dim) + grad;
}

}  // namespace retorch::autograd::fm
