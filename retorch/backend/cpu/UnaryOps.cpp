// Unary elementwise kernels: floating math (integer inputs promote to float) and same-dtype ops.
#include <cmath>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cpu {

namespace {
// Contiguous float32/float64 spans go through the vector form of the function when there is one
// (Note [Vectorized math]); other dtypes, strided spans and CPUs without AVX2 use f.
// Half/BFloat16 spans widen a block to float32 first (Note [16-bit float loops]).
template <typename T>
bool vec_span(VecFn vf, const T* in, T* out, int64_t n) {
  if (vf == VecFn::kNone) return false;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return vec_unary(vf, in, out, n);
  } else if constexpr (is_float16_v<T>) {
    for (int64_t i0 = 0; i0 < n; i0 += kConvertBlock) {
      const int64_t m = std::min(kConvertBlock, n - i0);
      alignas(32) float buf[kConvertBlock];
      to_float(in + i0, buf, m);
      if (!vec_unary(vf, buf, buf, m)) return false;  // first block only: fn and CPU are fixed
      from_float(buf, out + i0, m);
    }
    return true;
  } else {
    return false;
  }
}

template <typename F>
void float_unary(const char* name, const Tensor& self, Tensor& out, const F& f,
                 VecFn vf = VecFn::kNone) {
  TensorIterator iter(out, {self}, {.name = name, .int_to_float = true});
  RT_DISPATCH_FLOATING(iter.common_dtype(), name, [&] {
    using op_t = opmath_t<scalar_t>;
    iter.for_each([&](char** data, const int64_t* st, int64_t n) {
      constexpr int64_t sz = sizeof(scalar_t);
      if (st[0] == sz && st[1] == sz &&
          vec_span(vf, reinterpret_cast<const scalar_t*>(data[1]),
                   reinterpret_cast<scalar_t*>(data[0]), n))
        return;
      unary_span<scalar_t, scalar_t>(data, st, n, [&](op_t x) -> op_t { return f(x); });
    });
  });
  iter.finish();
}
}  // namespace

#define RT_FLOAT_UNARY(NAME, EXPR, VEC)                                                  \
  void NAME##_out(const Tensor& self, Tensor& out) {                                     \
    float_unary(#NAME, self, out, [](auto x) -> decltype(x) { return EXPR; }, VecFn::VEC); \
  }

RT_FLOAT_UNARY(exp, std::exp(x), kExp)
RT_FLOAT_UNARY(exp2, std::exp2(x), kExp2)
RT_FLOAT_UNARY(log, std::log(x), kLog)
RT_FLOAT_UNARY(log2, std::log2(x), kLog2)
RT_FLOAT_UNARY(log10, std::log10(x), kLog10)
RT_FLOAT_UNARY(log1p, std::log1p(x), kLog1p)
RT_FLOAT_UNARY(expm1, std::expm1(x), kExpm1)
RT_FLOAT_UNARY(sqrt, std::sqrt(x), kNone)
RT_FLOAT_UNARY(rsqrt, decltype(x)(1) / std::sqrt(x), kNone)
RT_FLOAT_UNARY(sin, std::sin(x), kSin)
RT_FLOAT_UNARY(cos, std::cos(x), kCos)
RT_FLOAT_UNARY(tan, std::tan(x), kTan)
RT_FLOAT_UNARY(asin, std::asin(x), kAsin)
RT_FLOAT_UNARY(acos, std::acos(x), kAcos)
RT_FLOAT_UNARY(atan, std::atan(x), kAtan)
RT_FLOAT_UNARY(sinh, std::sinh(x), kSinh)
RT_FLOAT_UNARY(cosh, std::cosh(x), kCosh)
RT_FLOAT_UNARY(tanh, std::tanh(x), kTanh)
RT_FLOAT_UNARY(sigmoid, decltype(x)(1) / (decltype(x)(1) + std::exp(-x)), kSigmoid)
RT_FLOAT_UNARY(erf, std::erf(x), kErf)
RT_FLOAT_UNARY(reciprocal, decltype(x)(1) / x, kNone)
RT_FLOAT_UNARY(silu, x / (decltype(x)(1) + std::exp(-x)), kSilu)
#undef RT_FLOAT_UNARY

void gelu_out(const Tensor& self, std::string_view approximate, Tensor& out) {
  check_gelu_approximate(approximate, "gelu");
  RT_CHECK(is_floating_type(self.dtype()), "\"GeluKernelImpl\" not implemented for '",
           dtype_name(self.dtype()), "'");
  if (approximate == "tanh") {
    float_unary("gelu", self, out, [](auto x) -> decltype(x) {
      using T = decltype(x);
      const T k = T(0.7978845608028654), c = T(0.044715);
      return T(0.5) * x * (T(1) + std::tanh(k * (x + c * x * x * x)));
    }, VecFn::kGeluTanh);
  } else {
    float_unary("gelu", self, out, [](auto x) -> decltype(x) {
      using T = decltype(x);
      return x * T(0.5) * (T(1) + std::erf(x * T(M_SQRT1_2)));
    }, VecFn::kGelu);
  }
}

void softplus_out(const Tensor& self, const Scalar& beta, const Scalar& threshold, Tensor& out) {
  RT_CHECK(is_floating_type(self.dtype()), "\"softplus_cpu\" not implemented for '",
           dtype_name(self.dtype()), "'");
  double b = beta.to_double(), th = threshold.to_double();
  auto f = [b, th](auto x) -> decltype(x) {
    using T = decltype(x);
    return (x * T(b)) > T(th) ? x : std::log1p(std::exp(x * T(b))) / T(b);
  };
  TensorIterator iter(out, {self}, {.name = "softplus"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "softplus", [&] {
    using op_t = opmath_t<scalar_t>;
    iter.for_each([&](char** data, const int64_t* st, int64_t n) {
      constexpr int64_t sz = sizeof(scalar_t);
      // The vector exp and log1p in chunks (the scalar libm calls took 6.4x PyTorch's time).
      const scalar_t sb = scalar_t(b), sth = scalar_t(th);
      if (st[0] == sz && st[1] == sz &&
          vec_chunked({VecFn::kExp, VecFn::kLog1p}, reinterpret_cast<const scalar_t*>(data[1]),
                      reinterpret_cast<scalar_t*>(data[0]), n, sb,
                      [=](auto x, auto t) { return x * sb > sth ? x : t / sb; }))
        return;
      unary_span<scalar_t, scalar_t>(data, st, n, [&](op_t x) -> op_t { return f(x); });
    });
  });
  iter.finish();
}

namespace {
template <typename F>
void same_unary(const char* name, const Tensor& self, Tensor& out, bool allow_bool, const F& f) {
  RT_CHECK(allow_bool || self.dtype() != kBool, name, ": not supported for bool tensors");
  TensorIterator iter(out, {self}, {.name = name});
  RT_DISPATCH_ALL(iter.common_dtype(), name, [&] {
    using op_t = opmath_t<scalar_t>;
    unary_loop<scalar_t, scalar_t>(iter, [&](op_t x) -> op_t { return f(x); });
  });
  iter.finish();
}
}  // namespace

void neg_out(const Tensor& self, Tensor& out) {
  RT_CHECK(self.dtype() != kBool, "Negation, the `-` operator, on a bool tensor is not supported. "
           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  same_unary("neg", self, out, false, [](auto x) -> decltype(x) {
    if constexpr (std::is_same_v<decltype(x), bool>) return x;
    else return decltype(x)(-x);
  });
}

void abs_out(const Tensor& self, Tensor& out) {
  same_unary("abs", self, out, false, [](auto x) -> decltype(x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return x;
    else if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
    else return x < 0 ? T(-x) : x;
  });
}

void sign_out(const Tensor& self, Tensor& out) {
  same_unary("sign", self, out, true, [](auto x) -> decltype(x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, bool>) return x;
    else return T((T(0) < x) - (x < T(0)));
  });
}

void relu_out(const Tensor& self, Tensor& out) {
  same_unary("relu", self, out, false, [](auto x) -> decltype(x) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) return std::isnan(x) ? x : (x > T(0) ? x : T(0));
    else return x > T(0) ? x : T(0);
  });
}

#define RT_ROUNDING(NAME, FN)                                                        \
  void NAME##_out(const Tensor& self, Tensor& out) {                                 \
    same_unary(#NAME, self, out, false, [](auto x) -> decltype(x) {                  \
      if constexpr (std::is_floating_point_v<decltype(x)>) return FN(x);             \
      else return x;                                                                 \
    });                                                                              \
  }
RT_ROUNDING(floor, std::floor)
RT_ROUNDING(ceil, std::ceil)
RT_ROUNDING(round, std::nearbyint)
RT_ROUNDING(trunc, std::trunc)
#undef RT_ROUNDING

void signbit_out(const Tensor& self, Tensor& out) {
  TensorIterator iter(out, {self}, {.name = "signbit", .out_dtype = kBool});
  RT_DISPATCH_ALL(iter.common_dtype(), "signbit", [&] {
    unary_loop<bool, scalar_t>(iter, [](auto x) -> bool {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>) return std::signbit(x);
      else if constexpr (std::is_signed_v<T>) return x < T(0);
      else return false;
    });
  });
  iter.finish();
}

void frac_out(const Tensor& self, Tensor& out) {
  TensorIterator iter(out, {self}, {.name = "frac"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "frac_cpu", [&] {
    using op_t = opmath_t<scalar_t>;
    unary_loop<scalar_t, scalar_t>(iter, [](op_t x) -> op_t { return x - std::trunc(x); });
  });
  iter.finish();
}

Tensor isnan(const Tensor& self) {
  Tensor out;
  TensorIterator iter(out, {self}, {.name = "isnan", .out_dtype = kBool});
  RT_DISPATCH_ALL(iter.common_dtype(), "isnan", [&] {
    unary_loop<bool, scalar_t>(iter, [](auto x) -> bool {
      if constexpr (std::is_floating_point_v<decltype(x)>) return std::isnan(x);
      else return false;
    });
  });
  return out;
}

void logical_not_out(const Tensor& self, Tensor& out) {
  TensorIterator iter(out, {self}, {.name = "logical_not", .out_dtype = kBool});
  RT_DISPATCH_ALL(iter.common_dtype(), "logical_not", [&] {
    if constexpr (std::is_same_v<scalar_t, bool>)  // bytes: see bitwise_not (BitwiseOps.cpp)
      unary_loop<uint8_t, uint8_t>(iter, [](uint8_t x) -> uint8_t { return uint8_t(x ^ 1); });
    else
      unary_loop<bool, scalar_t>(iter, [](auto x) -> bool { return !bool(x); });
  });
  iter.finish();
}

}  // namespace retorch::cpu
