// Ternary elementwise kernels: where, clamp, lerp, addcmul, addcdiv.
#include <cmath>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  RT_CHECK(condition.dtype() == kBool || condition.dtype() == kByte,
           "where expected condition to be a boolean tensor, but got a tensor with dtype ",
           condition.dtype());
  ScalarType ct = result_type({self, other});
  Tensor a = self.dtype() == ct ? self : self.to(ct);
  Tensor b = other.dtype() == ct ? other : other.to(ct);
  Tensor out;
  TensorIterator iter(out, {condition, a, b},
                      {.name = "where", .promote_inputs = false, .out_dtype = ct, .common = ct});
  // A bool condition is read as its bytes (0 or 1), as a uint8 one is: GCC does not vectorize
  // a loop that loads bool, and branching on a random condition took where of 1M floats 2.2 ms
  // (PyTorch's too).
  RT_DISPATCH_ALL(ct, "where", [&] {
    using op_t = opmath_t<scalar_t>;
    ternary_loop<scalar_t, uint8_t, scalar_t, scalar_t>(
        iter, [](uint8_t c, op_t x, op_t y) { return c ? x : y; });
  });
  return out;
}

void clamp_out(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
               Tensor& out) {
  RT_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Tensor> ts{self};
  if (min) ts.push_back(scalar_to_tensor(*min));
  if (max) ts.push_back(scalar_to_tensor(*max));
  ScalarType ct = result_type(ts);
  RT_CHECK(ct != kBool, "\"clamp_cpu\" not implemented for 'Bool'");
  TensorIterator iter(out, {self}, {.name = "clamp", .common = ct});
  RT_DISPATCH_NUMERIC(ct, "clamp", [&] {
    using op_t = opmath_t<scalar_t>;
    bool has_lo = bool(min), has_hi = bool(max);
    op_t lo = has_lo ? min->to<op_t>() : op_t(0), hi = has_hi ? max->to<op_t>() : op_t(0);
    bool nan_bound = false;
    if constexpr (std::is_floating_point_v<op_t>)
      nan_bound = (has_lo && std::isnan(lo)) || (has_hi && std::isnan(hi));
    // Branch-free selects per bound (they vectorize); a NaN x fails both comparisons and comes
    // through, and min > max gives max, as PyTorch's min(max(x, lo), hi). A NaN bound makes
    // everything NaN when both bounds are given; alone it leaves x as it is, as torch.clamp
    // does (clamp_min/clamp_max pass it as both bounds to get their NaN).
    if (nan_bound && !(has_lo && has_hi)) {
      unary_loop<scalar_t, scalar_t>(iter, [](op_t x) -> op_t { return x; });
    } else if (nan_bound) {
      op_t nan = has_lo && lo != lo ? lo : hi;
      unary_loop<scalar_t, scalar_t>(iter, [=](op_t x) -> op_t { return x != x ? x : nan; });
    } else if (has_lo && has_hi) {
      unary_loop<scalar_t, scalar_t>(iter, [=](op_t x) -> op_t {
        op_t y = x < lo ? lo : x;
        return y > hi ? hi : y;
      });
    } else if (has_lo) {
      unary_loop<scalar_t, scalar_t>(iter, [=](op_t x) -> op_t { return x < lo ? lo : x; });
    } else {
      unary_loop<scalar_t, scalar_t>(iter, [=](op_t x) -> op_t { return x > hi ? hi : x; });
    }
  });
  iter.finish();
}

namespace {
template <typename T>
T lerp(T a, T b, T w) {
  return std::abs(w) < T(0.5) ? a + w * (b - a) : b - (b - a) * (T(1) - w);
}
}  // namespace

void lerp_scalar_out(const Tensor& self, const Tensor& end, const Scalar& weight, Tensor& out) {
  RT_CHECK(self.dtype() == end.dtype(), "lerp: expected dtype ", self.dtype(),
           " for `end` but got dtype ", end.dtype());
  TensorIterator iter(out, {self, end}, {.name = "lerp"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "lerp", [&] {
    using op_t = opmath_t<scalar_t>;
    op_t w = weight.to<op_t>();
    binary_loop<scalar_t, scalar_t>(iter, [w](op_t a, op_t b) { return lerp(a, b, w); });
  });
  iter.finish();
}

void lerp_tensor_out(const Tensor& self, const Tensor& end, const Tensor& weight, Tensor& out) {
  RT_CHECK(self.dtype() == end.dtype() && self.dtype() == weight.dtype(),
           "lerp: expected dtype ", self.dtype(), " for `end` and `weight` but got ",
           end.dtype(), " and ", weight.dtype());
  TensorIterator iter(out, {self, end, weight}, {.name = "lerp"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "lerp", [&] {
    using op_t = opmath_t<scalar_t>;
    ternary_loop<scalar_t, scalar_t, scalar_t, scalar_t>(
        iter, [](op_t a, op_t b, op_t w) { return lerp(a, b, w); });
  });
  iter.finish();
}

void addcmul_out(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                 const Scalar& value, Tensor& out) {
  TensorIterator iter(out, {self, tensor1, tensor2}, {.name = "addcmul"});
  RT_CHECK(iter.common_dtype() != kBool, "\"addcmul_cpu_out\" not implemented for 'Bool'");
  RT_DISPATCH_NUMERIC(iter.common_dtype(), "addcmul", [&] {
    using op_t = opmath_t<scalar_t>;
    op_t v = value.to<op_t>();
    ternary_loop<scalar_t, scalar_t, scalar_t, scalar_t>(
        iter, [v](op_t a, op_t b, op_t c) { return op_t(a + v * b * c); });
  });
  iter.finish();
}

void addcdiv_out(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                 const Scalar& value, Tensor& out) {
  RT_CHECK(!(is_integral_type(tensor1.dtype(), true) && is_integral_type(tensor2.dtype(), true)),
           "Integer division with addcdiv is no longer supported, and in a future release "
           "addcdiv will perform a true division of tensor1 and tensor2.");
  TensorIterator iter(out, {self, tensor1, tensor2}, {.name = "addcdiv"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "addcdiv", [&] {
    using op_t = opmath_t<scalar_t>;
    op_t v = value.to<op_t>();
    ternary_loop<scalar_t, scalar_t, scalar_t, scalar_t>(
        iter, [v](op_t a, op_t b, op_t c) { return op_t(a + v * b / c); });
  });
  iter.finish();
}

}  // namespace retorch::cpu
