// One-pass kernels of the piecewise activations (hardtanh, leaky_relu, hardsigmoid, hardswish,
// elu): as composites they took three to five passes over fresh temporaries (3.5-9.7x PyTorch's
// time on 1M floats); here each is a select chain the compiler vectorizes, computed in opmath,
// and elu's exp runs vectorized in L1-sized chunks. elu's negative side is exp(x) - 1, as
// PyTorch's kernels compute it (bit for bit its formula, 1 ulp of 1 from expm1 near 0): SLEEF's
// vector expm1 took three times exp's time (elu of 1M mixed-sign floats 1.5x PyTorch's time).
// log_sigmoid_forward writes logsigmoid and its backward's buffer in the same pass.
#include <algorithm>
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

namespace {

// log_sigmoid_forward over contiguous float/double spans, the vector exp and log1p an L1-sized
// chunk at a time; false, writing nothing, for other types or without the vector functions.
template <typename T>
bool log_sigmoid_span(const T* x, T* y, T* b, int64_t n) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    T probe = 0;
    if (!vec_unary(VecFn::kExp, &probe, &probe, 0) || !vec_unary(VecFn::kLog1p, &probe, &probe, 0))
      return false;
    constexpr int64_t kChunk = 512;
    alignas(64) T l[kChunk];
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t m = std::min(kChunk, n - i0);
      for (int64_t j = 0; j < m; ++j) b[i0 + j] = -std::abs(x[i0 + j]);
      vec_unary(VecFn::kExp, b + i0, b + i0, m);
      vec_unary(VecFn::kLog1p, b + i0, l, m);
      for (int64_t j = 0; j < m; ++j)  // NaN stays NaN: l is NaN
        y[i0 + j] = std::min(x[i0 + j], T(0)) - l[j];
    }
    return true;
  } else {
    return false;
  }
}

}  // namespace

// PyTorch's log_sigmoid_forward: the output min(x, 0) - log1p(exp(-|x|)) and the buffer
// exp(-|x|), PyTorch's formula through the same SLEEF functions (so the same bits), in one pass.
// Both are contiguous, so the buffer sits at the output's byte offsets. As the
// composite -softplus(-x) it took three passes (1M floats 0.69 ms; PyTorch 1.41).
std::tuple<Tensor, Tensor> log_sigmoid_forward(const Tensor& self) {
  check_floating("log_sigmoid_cpu", self);
  // Contiguous whatever self's layout, as PyTorch's.
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  Tensor buffer = make_empty(self.sizes(), self.dtype(), self.device());
  TensorIterator iter(out, {self}, {.name = "log_sigmoid_cpu"});
  if (iter.is_meta() || self.numel() == 0) return {out, buffer};  // Note [Meta through CPU kernels]
  const std::ptrdiff_t shift =
      static_cast<char*>(buffer.data_ptr()) - static_cast<char*>(out.data_ptr());
  RT_DISPATCH_FLOATING(self.dtype(), "log_sigmoid_cpu", [&] {
    using op_t = opmath_t<scalar_t>;
    iter.for_each([&](char** data, const int64_t* st, int64_t n) {
      if (st[0] == sizeof(scalar_t) && st[1] == sizeof(scalar_t) &&
          log_sigmoid_span(reinterpret_cast<const scalar_t*>(data[1]),
                           reinterpret_cast<scalar_t*>(data[0]),
                           reinterpret_cast<scalar_t*>(data[0] + shift), n))
        return;
      for (int64_t i = 0; i < n; ++i) {
        const op_t x = op_t(*reinterpret_cast<const scalar_t*>(data[1] + i * st[1]));
        const op_t z = std::exp(-std::abs(x));
        *reinterpret_cast<scalar_t*>(data[0] + shift + i * st[0]) = scalar_t(z);
        *reinterpret_cast<scalar_t*>(data[0] + i * st[0]) =
            scalar_t(std::min(x, op_t(0)) - std::log1p(z));
      }
    });
  });
  return {out, buffer};
}

}  // namespace retorch::cpu
