// Binary elementwise kernels: arithmetic, division modes, pow, min/max, remainders,
// comparisons and logical ops, all through TensorIterator's promotion and broadcasting.
#include <cmath>
#include <functional>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T>;

void check_alpha(const char* op, ScalarType dtype, const Scalar& alpha) {
  RT_CHECK(!(is_integral_type(dtype, true) && alpha.is_floating_point()), op,
           ": for integral input tensors, argument alpha must not be a floating point number.");
  RT_CHECK(dtype == kBool || !alpha.is_boolean(), op,
           ": boolean alpha only supported for Boolean results.");
}

template <typename T>
bool any_zero(const Tensor& t) {
  const Tensor c = t.contiguous();
  const T* p = static_cast<const T*>(c.impl()->data());
  for (int64_t i = 0; i < c.numel(); ++i)
    if (p[i] == T(0)) return true;
  return false;
}

void check_int_divisor(const char* op, const TensorIterator& iter) {
  if (is_floating_type(iter.common_dtype()) || iter.is_meta()) return;  // needs the values
  bool zero = false;
  RT_DISPATCH_INTEGRAL(iter.common_dtype(), op, [&] { zero = any_zero<scalar_t>(iter.operand(2)); });
  RT_CHECK(!zero, "ZeroDivisionError: ", op, ": integer division by zero");
}

// floor(a / b) for floats, given mod = fmod(a, b) (PyTorch's div_floor: the quotient of the
// exact a - mod, rounded to the nearest integer). Every value is computed and then selected:
// a division under a condition may trap, so the compiler would not vectorize it.
template <typename T>
T floor_divide_from_mod(T a, T b, T mod) {
  const T q = a / b;
  T div = (a - mod) / b;
  const T below = div - T(1);
  div = ((mod != T(0)) & ((b < T(0)) != (mod < T(0)))) ? below : div;
  T fl = std::floor(div);
  const T up = fl + T(1);
  fl = div - fl > T(0.5) ? up : fl;
  const T zero = std::copysign(T(0), q);
  fl = div == T(0) ? zero : fl;
  return b == T(0) ? q : fl;
}

// remainder's sign fix of mod = fmod(a, b): the result takes b's sign, as Python's %.
template <typename T>
T python_mod_from_mod(T b, T mod) {
  const T shifted = mod + b;
  return ((mod != T(0)) & ((mod < T(0)) != (b < T(0)))) ? shifted : mod;
}

template <typename T>
T floor_divide(T a, T b) {
  if constexpr (is_float_v<T>) {
    return floor_divide_from_mod(a, b, b == T(0) ? T(0) : std::fmod(a, b));
  } else if constexpr (std::is_same_v<T, bool>) {
    return a;
  } else {
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
  }
}

template <typename T>
T python_mod(T a, T b) {
  if constexpr (is_float_v<T>) {
    return python_mod_from_mod(b, std::fmod(a, b));
  } else if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else {
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

}  // namespace

void add_out(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "add"});
  check_alpha("add", iter.common_dtype(), alpha);
  RT_DISPATCH_ALL(iter.common_dtype(), "add", [&] {
    using op_t = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, bool>) {
      bool a = alpha.to_bool();
      binary_loop<bool, bool>(iter, [a](bool x, bool y) { return x || (a && y); });
    } else {
      op_t a = alpha.to<op_t>();
      if (alpha.equal(1)) binary_loop<scalar_t, scalar_t>(iter, [](op_t x, op_t y) { return op_t(x + y); });
      else binary_loop<scalar_t, scalar_t>(iter, [a](op_t x, op_t y) { return op_t(x + a * y); });
    }
  });
  iter.finish();
}

void sub_out(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  RT_CHECK(!(self.dtype() == kBool && other.dtype() == kBool),
           "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
           "or `logical_xor()` operator instead.");
  RT_CHECK(!(self.dtype() == kBool || other.dtype() == kBool),
           "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
           "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  add_out(self, other, -alpha, out);
}

void mul_out(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "mul"});
  RT_DISPATCH_ALL(iter.common_dtype(), "mul", [&] {
    using op_t = opmath_t<scalar_t>;
    if constexpr (std::is_same_v<scalar_t, bool>)
      binary_loop<bool, bool>(iter, [](bool x, bool y) { return x && y; });
    else  // std::multiplies: this branch is compiled for bool too, where `*` would warn
      binary_loop<scalar_t, scalar_t>(iter,
                                      [](op_t x, op_t y) { return std::multiplies<op_t>()(x, y); });
  });
  iter.finish();
}

void div_out(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "div", .int_to_float = true});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "div", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_loop<scalar_t, scalar_t>(iter, [](op_t x, op_t y) { return op_t(x / y); });
  });
  iter.finish();
}

void div_mode_out(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode,
                  Tensor& out) {
  if (!mode) return div_out(self, other, out);
  RT_CHECK(*mode == "trunc" || *mode == "floor", "div expected rounding_mode to be one of None, "
           "'trunc', or 'floor' but found '", *mode, "'");
  TensorIterator iter(out, {self, other}, {.name = "div"});
  check_int_divisor("div", iter);
  bool floor = *mode == "floor";
  RT_DISPATCH_NUMERIC(iter.common_dtype(), "div", [&] {
    using op_t = opmath_t<scalar_t>;
    if (floor) {
      binary_vec_loop<scalar_t>(
          iter, VecFn2::kFmod, [](op_t x, op_t y) { return floor_divide<op_t>(x, y); },
          [](auto x, auto y, auto mod) { return floor_divide_from_mod(x, y, mod); });
    } else {
      binary_loop<scalar_t, scalar_t>(iter, [](auto x, auto y) -> op_t {
        if constexpr (is_float_v<decltype(x)>) return std::trunc(x / y);
        else return op_t(x / y);
      });
    }
  });
  iter.finish();
}

namespace {
// pow with one exponent of 2, 3, 1/2, -1/2, -1 or -2 as PyTorch computes it (x * x, sqrt,
// 1 / x, ...): one multiply or root instead of SLEEF's pow (square of 1M floats 1.46 ->
// 0.19 ms). False for other exponents.
bool is_small_exponent(double e) {
  return e == 2 || e == 3 || e == 0.5 || e == -0.5 || e == -1 || e == -2;
}

bool pow_small_exponent(TensorIterator& iter, double e) {
  if (!is_small_exponent(e)) return false;
  RT_DISPATCH_FLOATING(iter.common_dtype(), "pow", [&] {
    using op_t = opmath_t<scalar_t>;
    const op_t one(1);
    auto run = [&](auto f) { binary_loop<scalar_t, scalar_t>(iter, f); };
    if (e == 2) run([](op_t x, op_t) { return x * x; });
    else if (e == 3) run([](op_t x, op_t) { return x * x * x; });
    else if (e == 0.5) run([](op_t x, op_t) { return std::sqrt(x); });
    else if (e == -0.5) run([one](op_t x, op_t) { return one / std::sqrt(x); });
    else if (e == -1) run([one](op_t x, op_t) { return one / x; });
    else run([one](op_t x, op_t) { return one / (x * x); });
  });
  return true;
}
}  // namespace

void pow_out(const Tensor& self, const Tensor& exponent, Tensor& out) {
  TensorIterator iter(out, {self, exponent}, {.name = "pow"});
  ScalarType ct = iter.common_dtype();
  RT_CHECK(ct != kBool, "\"pow\" not implemented for 'Bool'");
  RT_DISPATCH_NUMERIC(ct, "pow", [&] {
    using op_t = opmath_t<scalar_t>;
    // SLEEF's pow (PyTorch's too), but x * x for a square as PyTorch's scalar path does
    binary_vec_loop<scalar_t>(iter, VecFn2::kPow, [](auto x, auto y) -> op_t {
      if constexpr (is_float_v<decltype(x)>) {
        return y == op_t(2) ? x * x : std::pow(x, y);
      } else {
        // PyTorch's powi: a negative exponent gives 1 or -1 for bases 1 and -1, else 0.
        if (y < 0) return x == 1 ? op_t(1) : (x == op_t(-1) ? op_t((y & 1) ? -1 : 1) : op_t(0));
        op_t r = 1, b = x;
        for (auto e = y; e > 0; e >>= 1) {
          if (e & 1) r = op_t(r * b);
          b = op_t(b * b);
        }
        return r;
      }
    }, [](auto x, auto y, auto r) { return y == decltype(y)(2) ? x * x : r; });
  });
  iter.finish();
}

void pow_scalar_out(const Tensor& self, const Scalar& exponent, Tensor& out) {
  // Only the Scalar-exponent overload rejects negative integer powers (as in PyTorch).
  RT_CHECK(is_floating_type(self.dtype()) || exponent.is_floating_point() ||
               exponent.is_boolean() || exponent.to_long() >= 0,
           "Integers to negative integer powers are not allowed.");
  if (is_floating_type(self.dtype()) && !exponent.is_boolean() &&
      is_small_exponent(exponent.to_double())) {
    // Only the Scalar overload takes these shortcuts, as in PyTorch: sqrt(-inf) is NaN where
    // pow(-inf, 0.5) is inf.
    TensorIterator iter(out, {self, scalar_to_tensor(exponent)}, {.name = "pow"});
    if (!iter.is_meta() && is_floating_type(iter.common_dtype()) &&
        pow_small_exponent(iter, exponent.to_double()))
      return iter.finish();
  }
  pow_out(self, scalar_to_tensor(exponent), out);
}

namespace {
// maximum/minimum (kMax) and, with kSkipNan, fmax/fmin: the larger (smaller) value; a NaN wins
// for maximum/minimum and loses for fmax/fmin (the other value, NaN only if both are).
template <bool kMax, bool kSkipNan = false>
void max_min_out(const char* name, const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = name});
  RT_DISPATCH_ALL(iter.common_dtype(), name, [&] {
    using op_t = opmath_t<scalar_t>;
    binary_loop<scalar_t, scalar_t>(iter, [](auto x, auto y) -> op_t {
      const op_t m = kMax ? (x > y ? x : y) : (x < y ? x : y);
      if constexpr (is_float_v<decltype(x)>) {
        if constexpr (kSkipNan) {
          const op_t r = std::isnan(x) ? y : m;
          return std::isnan(y) ? x : r;
        } else {
          if (std::isnan(x) || std::isnan(y)) return x + y;
        }
      }
      return m;
    });
  });
  iter.finish();
}
}  // namespace

void maximum_out(const Tensor& self, const Tensor& other, Tensor& out) {
  max_min_out<true>("maximum", self, other, out);
}
void minimum_out(const Tensor& self, const Tensor& other, Tensor& out) {
  max_min_out<false>("minimum", self, other, out);
}

void remainder_out(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "remainder"});
  RT_CHECK(iter.common_dtype() != kBool, "\"remainder_cpu\" not implemented for 'Bool'");
  check_int_divisor("remainder", iter);
  RT_DISPATCH_NUMERIC(iter.common_dtype(), "remainder", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_vec_loop<scalar_t>(
        iter, VecFn2::kFmod, [](op_t x, op_t y) { return python_mod<op_t>(x, y); },
        [](auto, auto y, auto mod) { return python_mod_from_mod(y, mod); });
  });
  iter.finish();
}

void fmod_out(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "fmod"});
  RT_CHECK(iter.common_dtype() != kBool, "\"fmod_cpu\" not implemented for 'Bool'");
  check_int_divisor("fmod", iter);
  RT_DISPATCH_NUMERIC(iter.common_dtype(), "fmod", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_vec_loop<scalar_t>(iter, VecFn2::kFmod, [](auto x, auto y) -> op_t {
      if constexpr (is_float_v<decltype(x)>) return std::fmod(x, y);
      else return op_t(x % y);
    }, [](auto, auto, auto r) { return r; });
  });
  iter.finish();
}

void atan2_out(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "atan2", .int_to_float = true});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "atan2", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_vec_loop<scalar_t>(iter, VecFn2::kAtan2, [](op_t x, op_t y) { return std::atan2(x, y); },
                              [](auto, auto, auto r) { return r; });
  });
  iter.finish();
}

void hypot_out(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "hypot"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "hypot_cpu", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_vec_loop<scalar_t>(iter, VecFn2::kHypot, [](op_t x, op_t y) { return std::hypot(x, y); },
                              [](auto, auto, auto r) { return r; });
  });
  iter.finish();
}

namespace {
// logaddexp (kLog2 false) and logaddexp2 as PyTorch computes them: max(a, b) + log1p(exp(-|a - b|))
// (exp2, and the log1p over ln 2, for logaddexp2), a itself where a == b is infinite; float32
// and float64 with SLEEF's exp/exp2/log1p a chunk at a time.
template <bool kLog2>
void logaddexp_impl(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = kLog2 ? "logaddexp2" : "logaddexp"});
  // PyTorch's kernel names in the dtype error
  RT_DISPATCH_FLOATING(iter.common_dtype(), kLog2 ? "logaddexp2_cpu" : "logaddexp_cpu", [&] {
    using op_t = opmath_t<scalar_t>;
    auto finish = [](auto a, auto b, auto t) {
      using T = decltype(a);
      const T sum = std::max(a, b) + (kLog2 ? t * T(1.4426950408889634) : t);
      return (std::isinf(a) & (a == b)) ? a : sum;
    };
    auto f = [finish](op_t a, op_t b) {
      const op_t d = -std::abs(a - b);
      return finish(a, b, std::log1p(kLog2 ? std::exp2(d) : std::exp(d)));
    };
    constexpr VecFn kFns[2] = {kLog2 ? VecFn::kExp2 : VecFn::kExp, VecFn::kLog1p};
    binary_unary_chain_loop<scalar_t>(
        iter, kFns, f, [](auto a, auto b) { return -std::abs(a - b); }, finish);
  });
  iter.finish();
}

}  // namespace

void logaddexp_out(const Tensor& self, const Tensor& other, Tensor& out) {
  logaddexp_impl<false>(self, other, out);
}
void logaddexp2_out(const Tensor& self, const Tensor& other, Tensor& out) {
  logaddexp_impl<true>(self, other, out);
}
void fmax_out(const Tensor& self, const Tensor& other, Tensor& out) {
  max_min_out<true, true>("fmax", self, other, out);
}
void fmin_out(const Tensor& self, const Tensor& other, Tensor& out) {
  max_min_out<false, true>("fmin", self, other, out);
}

void copysign_out(const Tensor& self, const Tensor& other, Tensor& out) {
  TensorIterator iter(out, {self, other}, {.name = "copysign", .int_to_float = true});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "copysign", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_loop<scalar_t, scalar_t>(iter, [](op_t x, op_t y) { return std::copysign(x, y); });
  });
  iter.finish();
}

void heaviside_out(const Tensor& self, const Tensor& values, Tensor& out) {
  RT_CHECK(self.dtype() == values.dtype(),
           "heaviside is not yet implemented for tensors with different dtypes.");
  TensorIterator iter(out, {self, values}, {.name = "heaviside"});
  RT_DISPATCH_ALL(iter.common_dtype(), "heaviside", [&] {
    using op_t = opmath_t<scalar_t>;
    binary_loop<scalar_t, scalar_t>(iter, [](op_t x, op_t v) -> op_t {
      const op_t step = op_t(x > op_t(0));
      return x == op_t(0) ? v : step;
    });
  });
  iter.finish();
}

#define RT_COMPARISON(NAME, OP)                                                       \
  void NAME##_out(const Tensor& self, const Tensor& other, Tensor& out) {             \
    TensorIterator iter(out, {self, other}, {.name = #NAME, .out_dtype = kBool});     \
    RT_DISPATCH_ALL(iter.common_dtype(), #NAME, [&] {                                 \
      using op_t = opmath_t<scalar_t>;                                                \
      binary_loop<bool, scalar_t>(iter, [](op_t x, op_t y) -> bool { return x OP y; }); \
    });                                                                               \
    iter.finish();                                                                    \
  }
RT_COMPARISON(eq, ==)
RT_COMPARISON(ne, !=)
RT_COMPARISON(lt, <)
RT_COMPARISON(le, <=)
RT_COMPARISON(gt, >)
RT_COMPARISON(ge, >=)
#undef RT_COMPARISON

#define RT_LOGICAL(NAME, EXPR)                                                        \
  void NAME##_out(const Tensor& self, const Tensor& other, Tensor& out) {             \
    TensorIterator iter(out, {self, other}, {.name = #NAME, .out_dtype = kBool});     \
    RT_DISPATCH_ALL(iter.common_dtype(), #NAME, [&] {                                 \
      using op_t = opmath_t<scalar_t>;                                                \
      binary_loop<bool, scalar_t>(iter, [](op_t x, op_t y) -> bool {                  \
        bool a = bool(x), b = bool(y);                                                \
        return EXPR;                                                                  \
      });                                                                             \
    });                                                                               \
    iter.finish();                                                                    \
  }
RT_LOGICAL(logical_and, a && b)
RT_LOGICAL(logical_or, a || b)
RT_LOGICAL(logical_xor, a != b)
#undef RT_LOGICAL

}  // namespace retorch::cpu
