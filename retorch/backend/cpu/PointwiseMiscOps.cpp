// Pointwise misc kernels: isinf family, nan_to_num, clamp with tensor bounds, histc, bincount,
// where(condition), threshold_backward.
#include <cmath>
#include <limits>
#include <vector>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {

/// A bool classification of each element; integers are all finite (int_result for them).
template <typename F>
Tensor float_class(const char* name, const Tensor& self, bool int_result, const F& f) {
  Tensor out;
  TensorIterator iter(out, {self}, {.name = name, .out_dtype = kBool});
  RT_DISPATCH_ALL(iter.common_dtype(), name, [&] {
    unary_loop<bool, scalar_t>(iter, [&](auto x) -> bool {
      if constexpr (std::is_floating_point_v<decltype(x)>) return f(x);
      else return int_result;
    });
  });
  iter.finish();
  return out;
}

/// The largest finite value of a dtype (what nan_to_num puts in place of +inf by default).
template <typename T>
double finite_max() {
  if constexpr (std::is_same_v<T, Half>) return 65504.0;
  else if constexpr (std::is_same_v<T, BFloat16>) return 3.3895313892515355e38;
  else return double(std::numeric_limits<T>::max());
}

}  // namespace

Tensor isinf(const Tensor& self) {
  return float_class("isinf", self, false, [](auto x) { return std::isinf(x); });
}
Tensor isfinite(const Tensor& self) {
  return float_class("isfinite", self, true, [](auto x) { return std::isfinite(x); });
}
Tensor isposinf(const Tensor& self) {
  return float_class("isposinf", self, false, [](auto x) { return std::isinf(x) && x > 0; });
}
Tensor isneginf(const Tensor& self) {
  return float_class("isneginf", self, false, [](auto x) { return std::isinf(x) && x < 0; });
}

void nan_to_num_out(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                    std::optional<double> neginf, Tensor& out) {
  RT_CHECK(!out.defined() || out.dtype() == self.dtype(), "nan_to_num: dtype of out: ",
           out.defined() ? out.dtype() : self.dtype(), " should be same as input: ", self.dtype());
  if (is_integral_type(self.dtype(), true)) {
    // Nothing to replace: PyTorch copies (any out dtype, overlapping self included).
    if (out.defined() && out.impl() == self.impl()) return;
    if (!out.defined()) {
      out = self.clone();
      return;
    }
    detail::resize_output(out, self.sizes(), "nan_to_num");
    out.copy_(self);
    return;
  }
  TensorIterator iter(out, {self}, {.name = "nan_to_num"});
  RT_DISPATCH_ALL(iter.common_dtype(), "nan_to_num", [&] {
    using op_t = opmath_t<scalar_t>;
    if constexpr (std::is_floating_point_v<op_t>) {
      // The replacements are rounded to the result dtype first, as PyTorch does.
      const op_t n = op_t(scalar_t(nan.value_or(0)));
      const op_t p = op_t(scalar_t(posinf.value_or(finite_max<scalar_t>())));
      const op_t m = op_t(scalar_t(neginf.value_or(-finite_max<scalar_t>())));
      unary_loop<scalar_t, scalar_t>(iter, [=](op_t x) -> op_t {
        if (std::isnan(x)) return n;
        if (std::isinf(x)) return x > 0 ? p : m;
        return x;
      });
    } else {
      unary_loop<scalar_t, scalar_t>(iter, [](op_t x) { return x; });
    }
  });
  iter.finish();
}

void clamp_tensor_out(const Tensor& self, const std::optional<Tensor>& min,
                      const std::optional<Tensor>& max, Tensor& out) {
  const bool has_lo = min && min->defined(), has_hi = max && max->defined();
  RT_CHECK(has_lo || has_hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (has_lo && has_hi) {
    TensorIterator iter(out, {self, *min, *max}, {.name = "clamp"});
    RT_CHECK(iter.common_dtype() != kBool, "\"clamp_cpu\" not implemented for 'Bool'");
    RT_DISPATCH_NUMERIC(iter.common_dtype(), "clamp", [&] {
      using op_t = opmath_t<scalar_t>;
      ternary_loop<scalar_t, scalar_t, scalar_t, scalar_t>(iter, [](op_t x, op_t lo, op_t hi) {
        if constexpr (std::is_floating_point_v<op_t>) {
          // A NaN bound gives NaN; a NaN input stays NaN (std::max/min keep their first
          // argument when a comparison is false); min > max gives max.
          if (std::isnan(lo) || std::isnan(hi)) return std::numeric_limits<op_t>::quiet_NaN();
        }
        x = x < lo ? lo : x;
        return hi < x ? hi : x;
      });
    });
    iter.finish();
    return;
  }
  // One bound: PyTorch uses maximum / minimum here (NaN in either operand propagates).
  const bool lower = has_lo;
  TensorIterator iter(out, {self, lower ? *min : *max},
                      {.name = lower ? "clamp_min" : "clamp_max"});
  RT_DISPATCH_ALL(iter.common_dtype(), "clamp", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_loop<scalar_t, scalar_t>(iter, [lower](op_t x, op_t b) -> op_t {
      if constexpr (std::is_floating_point_v<op_t>) {
        if (std::isnan(x) || std::isnan(b)) return x + b;
      }
      if (lower) return x < b ? b : x;
      return b < x ? b : x;
    });
  });
  iter.finish();
}

Tensor histc(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max) {
  RT_CHECK(is_floating_type(self.dtype()), "\"histogram_cpu\" not implemented for '",
           dtype_name(self.dtype()), "'");
  RT_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins);
  if (self.device().is_meta())  // See Note [Meta through CPU kernels]: the range needs data
    return make_empty({bins}, self.dtype(), self.device());
  double lo = min.to_double(), hi = max.to_double();
  if (lo == hi && self.numel() > 0) {
    lo = self.min().item().to_double();
    hi = self.max().item().to_double();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  RT_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc(): range of [", lo, ", ", hi,
           "] is not finite");
  RT_CHECK(lo < hi, "torch.histc(): max must be larger than min (got min ", lo, ", max ", hi,
           ")");
  std::vector<int64_t> counts(size_t(bins), 0);
  const Tensor x = self.contiguous();
  RT_DISPATCH_FLOATING(self.dtype(), "histc", [&] {
    // Same arithmetic as PyTorch's linear binning: in the input's type (float for 16-bit).
    using calc_t = opmath_t<scalar_t>;
    const calc_t left = calc_t(scalar_t(lo)), right = calc_t(scalar_t(hi));
    const auto* p = static_cast<const scalar_t*>(x.impl()->data());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const calc_t v = calc_t(p[i]);
      // PyTorch 1.13 filters with v < left || v > right, so a NaN is not skipped: it lands
      // in the first bin. Counted the same way.
      if (v < left || v > right) continue;
      if (std::isnan(v)) {
        counts[0] += 1;
        continue;
      }
      auto pos = int64_t((v - left) * calc_t(bins) / (right - left));
      if (pos >= bins) pos = bins - 1;  // the last bin includes its right edge
      counts[size_t(pos)] += 1;
    }
  });
  Tensor hist = zeros({bins}, TensorOptions(kDouble));
  auto* h = static_cast<double*>(hist.data_ptr());
  for (int64_t b = 0; b < bins; ++b) h[b] = double(counts[size_t(b)]);
  return hist.to(self.dtype());
}

Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  RT_CHECK(is_integral_type(self.dtype(), false), "\"bincount_cpu\" not implemented for '",
           dtype_name(self.dtype()), "'");
  RT_CHECK(minlength >= 0, "bincount: minlength should be >= 0, but got ", minlength);
  if (self.dim() == 1 && self.numel() == 0) return zeros({minlength}, TensorOptions(kLong));
  const Tensor x = self.to(kLong).contiguous();
  const auto* idx = static_cast<const int64_t*>(x.impl()->data());
  const int64_t n = x.numel();
  int64_t lo = 0, hi = -1;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, idx[i]);
    hi = std::max(hi, idx[i]);
  }
  RT_CHECK(self.dim() == 1 && lo >= 0, "bincount only supports 1-d non-negative integral "
           "inputs (got shape ", self.sizes(), ", min ", lo, ")");
  const bool has_w = weights && weights->defined();
  if (has_w) {
    RT_CHECK(weights->dim() == 1 && weights->size(0) == n, "bincount: weights should be 1-d and "
             "have the same length as input (got weights ", weights->sizes(), ", input ",
             self.sizes(), ")");
  }
  const int64_t nbins = std::max(hi + 1, minlength);
  if (!has_w) {
    Tensor out = zeros({nbins}, TensorOptions(kLong));
    auto* o = static_cast<int64_t*>(out.data_ptr());
    for (int64_t i = 0; i < n; ++i) o[idx[i]] += 1;
    return out;
  }
  // float32 weights accumulate in float32; every other dtype in float64 (PyTorch's rule).
  const ScalarType wt = weights->dtype() == kFloat ? kFloat : kDouble;
  const Tensor w = weights->to(wt).contiguous();
  Tensor out = zeros({nbins}, TensorOptions(wt));
  auto accumulate = [&](auto* o) {
    const auto* wp = static_cast<const std::remove_pointer_t<decltype(o)>*>(w.impl()->data());
    for (int64_t i = 0; i < n; ++i) o[idx[i]] += wp[i];
  };
  if (wt == kFloat) accumulate(static_cast<float*>(out.data_ptr()));
  else accumulate(static_cast<double*>(out.data_ptr()));
  return out;
}

std::vector<Tensor> where_condition(const Tensor& condition) {
  // nonzero(condition, as_tuple=True): one int64 index tensor per dim (a 0-dim condition
  // counts as one-dimensional), in row-major order.
  const Tensor c = condition.contiguous();
  const int64_t nd = std::max<int64_t>(c.dim(), 1), n = c.numel();
  std::vector<bool> hit(static_cast<size_t>(n));
  int64_t count = 0;
  RT_DISPATCH_ALL(c.dtype(), "where", [&] {
    const auto* p = static_cast<const scalar_t*>(c.impl()->data());
    for (int64_t i = 0; i < n; ++i) {
      hit[size_t(i)] = bool(p[i]);  // NaN is nonzero
      count += hit[size_t(i)];
    }
  });
  std::vector<Tensor> out;
  std::vector<int64_t*> ptrs;
  for (int64_t d = 0; d < nd; ++d) {
    out.push_back(empty({count}, TensorOptions(kLong)));
    ptrs.push_back(static_cast<int64_t*>(out.back().data_ptr()));
  }
  std::vector<int64_t> idx(size_t(nd), 0);
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (hit[size_t(i)]) {
      for (int64_t d = 0; d < nd; ++d) ptrs[size_t(d)][k] = idx[size_t(d)];
      ++k;
    }
    for (int64_t d = c.dim() - 1; d >= 0; --d) {  // advance the row-major multi-index
      if (++idx[size_t(d)] < c.size(d)) break;
      idx[size_t(d)] = 0;
    }
  }
  return out;
}

Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  // PyTorch's rule: zero where self <= threshold, so a NaN in self passes the gradient through.
  Tensor out;
  TensorIterator iter(out, {grad_output, self}, {.name = "threshold_backward"});
  RT_CHECK(iter.common_dtype() != kBool, "\"threshold_cpu\" not implemented for 'Bool'");
  RT_DISPATCH_NUMERIC(iter.common_dtype(), "threshold_backward", [&] {
    using op_t = opmath_t<scalar_t>;
    const op_t th = op_t(threshold.to<scalar_t>());  // PyTorch casts it to the input dtype
    binary_loop<scalar_t, scalar_t>(iter, [th](op_t g, op_t x) { return x <= th ? op_t(0) : g; });
  });
  iter.finish();
  return out;
}

}  // namespace retorch::cpu
