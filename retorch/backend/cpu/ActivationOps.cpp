// One-pass kernels of the piecewise activations (hardtanh, leaky_relu, hardsigmoid, hardswish,
// elu): as composites they took three to five passes over fresh temporaries (3.5-9.7x PyTorch's
// time on 1M floats); here each is a select chain the compiler vectorizes, computed in opmath,
// and elu's exp runs vectorized in L1-sized chunks. elu's negative side is exp(x) - 1, as
// PyTorch's kernels compute it (bit for bit its formula, 1 ulp of 1 from expm1 near 0): SLEEF's
// vector expm1 took three times exp's time (elu of 1M mixed-sign floats 1.5x PyTorch's time).
#include <cmath>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

void check_floating(const char* kernel, const Tensor& x) {
  RT_CHECK(is_floating_type(x.dtype()), "\"", kernel, "\" not implemented for '",
           dtype_name(x.dtype()), "'");
}

// out = f(self) elementwise over the floating dtypes; f takes and returns opmath values.
template <typename F>
void floating_activation(const char* name, const Tensor& self, Tensor& out, const F& f) {
  TensorIterator iter(out, {self}, {.name = name});
  RT_DISPATCH_FLOATING(iter.common_dtype(), name, [&] {
    using op_t = opmath_t<scalar_t>;
    unary_loop<scalar_t, scalar_t>(iter, [&](op_t x) -> op_t { return f(x); });
  });
  iter.finish();
}

// min(max(x, lo), hi) with NaN passing through (both comparisons are false for it).
template <typename T>
T clip(T x, T lo, T hi) {
  T y = x < lo ? lo : x;
  return y > hi ? hi : y;
}

}  // namespace

void hardtanh_out(const Tensor& self, const Scalar& min_val, const Scalar& max_val, Tensor& out) {
  RT_CHECK(self.dtype() != kBool, "Bool inputs not supported for hardtanh");
  if (is_integral_type(self.dtype(), false)) {
    // Legacy PyTorch behaviour: on integer inputs the bounds are truncated to integers, so
    // they never promote the result.
    const int64_t lo = min_val.to_long(), hi = max_val.to_long();
    RT_CHECK(self.dtype() != kByte || (lo >= 0 && hi >= 0),
             "hardtanh: cannot do hardtanh on an unsigned type with negative limits");
    TensorIterator iter(out, {self}, {.name = "hardtanh"});
    RT_DISPATCH_INTS(iter.common_dtype(), "hardtanh", [&] {
      const scalar_t l = scalar_t(lo), h = scalar_t(hi);
      unary_loop<scalar_t, scalar_t>(iter, [=](scalar_t x) -> scalar_t { return clip(x, l, h); });
    });
    iter.finish();
    return;
  }
  const double lo = min_val.to_double(), hi = max_val.to_double();
  floating_activation("hardtanh", self, out, [=](auto x) {
    using T = decltype(x);
    return clip(x, T(lo), T(hi));
  });
}

void leaky_relu_out(const Tensor& self, const Scalar& negative_slope, Tensor& out) {
  check_floating("leaky_relu_cpu", self);
  const double s = negative_slope.to_double();
  floating_activation("leaky_relu", self, out, [=](auto x) {
    using T = decltype(x);
    const T scaled = x * T(s);  // read s unconditionally: a load under the select kept it scalar
    return x > T(0) ? x : scaled;
  });
}

void hardsigmoid_out(const Tensor& self, Tensor& out) {
  check_floating("hardsigmoid_cpu", self);
  floating_activation("hardsigmoid", self, out, [](auto x) {
    using T = decltype(x);
    return clip(x + T(3), T(0), T(6)) / T(6);
  });
}

void hardswish_out(const Tensor& self, Tensor& out) {
  check_floating("hardswish_cpu", self);
  floating_activation("hardswish", self, out, [](auto x) {
    using T = decltype(x);
    return x * clip(x + T(3), T(0), T(6)) / T(6);
  });
}

void elu_out(const Tensor& self, const Scalar& alpha, const Scalar& scale,
             const Scalar& input_scale, Tensor& out) {
  check_floating("elu_cpu", self);
  const double a = alpha.to_double(), s = scale.to_double(), is = input_scale.to_double();
  TensorIterator iter(out, {self}, {.name = "elu"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "elu", [&] {
    using op_t = opmath_t<scalar_t>;
    const op_t neg = op_t(a * s), pos = op_t(s), isc = op_t(is);
    iter.for_each([&](char** data, const int64_t* st, int64_t n) {
      constexpr int64_t sz = sizeof(scalar_t);
      const scalar_t sn = scalar_t(neg), sp = scalar_t(pos);
      if (st[0] == sz && st[1] == sz &&
          vec_chunked({VecFn::kExp}, reinterpret_cast<const scalar_t*>(data[1]),
                      reinterpret_cast<scalar_t*>(data[0]), n, scalar_t(isc),
                      [=](auto x, auto t) {
                        using T = decltype(x);
                        return x > T(0) ? x * sp : (t - T(1)) * sn;
                      },
                      [](auto x) { return !(x > decltype(x)(0)); }))  // exp only if needed
        return;
      unary_span<scalar_t, scalar_t>(data, st, n, [=](op_t x) -> op_t {
        return x > op_t(0) ? x * pos : (std::exp(x * isc) - op_t(1)) * neg;
      });
    });
  });
  iter.finish();
}

}  // namespace retorch::cpu
