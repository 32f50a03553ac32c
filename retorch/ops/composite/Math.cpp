// Composite math: full reductions, var/std, logsumexp, max/min of two tensors, matmul, linear.
#include <algorithm>
#include <cmath>

#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) {
  return retorch::sum(self, OptionalIntArrayRef(), false, dtype);
}
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) {
  return retorch::mean(self, OptionalIntArrayRef(), false, dtype);
}
Tensor max_other(const Tensor& self, const Tensor& other) { return retorch::maximum(self, other); }
Tensor min_other(const Tensor& self, const Tensor& other) { return retorch::minimum(self, other); }

Tensor var_unbiased(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim) {
  return retorch::var(self, dim, std::optional<int64_t>(unbiased ? 1 : 0), keepdim);
}
Tensor std_correction(const Tensor& self, OptionalIntArrayRef dim, std::optional<int64_t> correction,
                      bool keepdim) {
  return retorch::var(self, dim, correction, keepdim).sqrt();
}
Tensor std_unbiased(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim) {
  // Through the dispatcher, so std.correction's backward (finite at std == 0) is used.
  return retorch::std(self, dim, std::optional<int64_t>(unbiased ? 1 : 0), keepdim);
}

Tensor var_all_unbiased(const Tensor& self, bool unbiased) {
  return retorch::var(self, OptionalIntArrayRef(), std::optional<int64_t>(unbiased ? 1 : 0), false);
}
Tensor std_all_unbiased(const Tensor& self, bool unbiased) {
  return retorch::std(self, OptionalIntArrayRef(), std::optional<int64_t>(unbiased ? 1 : 0), false);
}

std::vector<Tensor> split_sizes(const Tensor& self, IntArrayRef split_size, int64_t dim) {
  return retorch::split_with_sizes(self, split_size, dim);
}

Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  // Half/BFloat16 inputs are reduced in float: rounding exp, sum and log separately to 16 bits
  // would lose several ulps (PyTorch's result is within one ulp of the float computation).
  if (self.dtype() == kHalf || self.dtype() == kBFloat16)
    return retorch::logsumexp(self.to(kFloat), dim, keepdim).to(self.dtype());
  Tensor x = is_floating_type(self.dtype()) ? self : self.to(default_dtype());
  if (x.numel() == 0) return x.exp().sum(dim, keepdim).log();
  // Shift by the (detached) max for stability; infinite maxima shift by 0.
  Tensor m = x.amax(dim, true).detach();
  m = m.masked_fill(m.isnan() | (m.abs() == INFINITY), Scalar(0));
  Tensor r = (x - m).exp().sum(dim, true).log() + m;
  if (keepdim) return r;
  if (dim.empty()) return r.reshape({});
  std::vector<int64_t> ds;
  for (int64_t d : dim) ds.push_back(maybe_wrap_dim(d, x.dim(), "logsumexp"));
  std::sort(ds.rbegin(), ds.rend());
  for (int64_t d : ds) r = r.squeeze(d);
  return r;
}

Tensor matmul(const Tensor& self, const Tensor& other) {
  int64_t da = self.dim(), db = other.dim();
  RT_CHECK(da > 0 && db > 0, "both arguments to matmul need to be at least 1D, but they are ", da,
           "D and ", db, "D");
  if (da == 1 && db == 1) return self.dot(other);
  if (da == 2 && db == 1) return self.mm(other.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return self.unsqueeze(0).mm(other).squeeze(0);
  if (da == 2 && db == 2) return self.mm(other);
  if (da >= 3 && db <= 2) {
    // Fold the batch into rows: [..., n, k] @ [k, m].
    Tensor b = db == 1 ? other.unsqueeze(1) : other;
    std::vector<int64_t> out_shape(self.sizes().begin(), self.sizes().end() - 1);
    int64_t rows = 1;  // (not -1: a reshape cannot infer it when the inner size is 0)
    for (int64_t d = 0; d + 1 < da; ++d) rows *= self.size(d);
    Tensor r = self.reshape({rows, self.size(-1)}).mm(b);
    if (db == 2) out_shape.push_back(other.size(1));
    return r.reshape(out_shape);
  }
  // General batched case with broadcasting of batch dims.
  Tensor a = da == 1 ? self.unsqueeze(0) : self;
  Tensor b = db == 1 ? other.unsqueeze(1) : other;
  int64_t n = a.size(-2), k = a.size(-1), k2 = b.size(-2), m = b.size(-1);
  RT_CHECK(k == k2, "matmul: shapes ", self.sizes(), " and ", other.sizes(), " cannot be multiplied");
  std::vector<int64_t> ba(a.sizes().begin(), a.sizes().end() - 2);
  std::vector<int64_t> bb(b.sizes().begin(), b.sizes().end() - 2);
  DimVector batch = broadcast_shapes(ba, bb, "matmul");
  std::vector<int64_t> ea(batch.begin(), batch.end()), eb(batch.begin(), batch.end());
  ea.push_back(n); ea.push_back(k);
  eb.push_back(k); eb.push_back(m);
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  Tensor r = a.expand(ea).reshape({B, n, k}).bmm(b.expand(eb).reshape({B, k, m}));
  std::vector<int64_t> out(batch.begin(), batch.end());
  if (da > 1) out.push_back(n);
  if (db > 1) out.push_back(m);
  return r.reshape(out);
}

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  bool has_bias = bias && bias->defined();
  if (has_bias && input.dim() == 2) return retorch::addmm(*bias, input, weight.t());
  if (has_bias && input.dim() == 3 && input.is_contiguous()) {
    // PyTorch's fast path: fold the batch into rows and add the bias inside the GEMM (one
    // rounding instead of two in reduced precision).
    Tensor r = retorch::addmm(*bias, input.view({-1, input.size(2)}), weight.t());
    return r.view({input.size(0), input.size(1), r.size(1)});
  }
  Tensor r = input.matmul(weight.t());
  if (bias && bias->defined()) r = r + *bias;
  return r;
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  RT_CHECK(self.dim() == 1 && vec2.dim() == 1, "outer: expected 1-D vectors, got ", self.dim(),
           "-D and ", vec2.dim(), "-D");
  return self.unsqueeze(1) * vec2.unsqueeze(0);
}

}  // namespace retorch::composite
