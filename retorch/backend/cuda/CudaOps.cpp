// CUDA kernels of the pointwise ops (unary ops and activations, binary, comparison, logical and
// ternary ops) and the device copies and casts, at the CUDA key.
#include "retorch/backend/cuda/CudaOps.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/core/Error.h"
#include "retorch/core/Half.h"
#include "retorch/core/Shape.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/generated/Functions.h"

namespace retorch::cuda_backend {

// Note [CUDA op kernels]
// The ops with CUDA kernels take boxed calls at the CUDA key (a launch costs microseconds; the
// boxing does not show) and read their variant off the schema: `exp` allocates its result,
// `exp_` writes self, `exp.out` writes out. A kernel runs what it covers: floating dtypes
// (float32, float64, float16, bfloat16), operands in device memory, a second operand that may be
// a cpu scalar (a 0-dim tensor or a wrapped Python number, passed by value), results of the
// promoted dtype (operands of another floating dtype are converted on the device first),
// out= tensors of the right shape and dtype; and int32/int64 tensors in the binary ops that keep
// integers integral (binary_int). Anything else (other integer ops, an out= that needs
// resizing, cpu tensors with dims) goes to the device fallback exactly as before the kernel
// existed (Note [Device routing]), so registering a kernel never narrows what runs. Functional
// results are contiguous. Kernels queue on the thread's current stream (Note [CUDA streams]), as
// the copies do, and do not synchronize: reading a result on the host (item(), a copy to the
// cpu) waits for them.

namespace {

// v rounded to a floating dtype, as the cpu kernel's scalar_t(v) rounds it.
double rounded_to(ScalarType dtype, double v) {
  switch (dtype) {
    case kHalf: return double(float(Half(float(v))));
    case kBFloat16: return double(float(BFloat16(float(v))));
    case kFloat: return double(float(v));
    default: return v;
  }
}

// The largest finite value of a floating dtype.
double finite_max(ScalarType dtype) {
  switch (dtype) {
    case kHalf: return 65504.0;
    case kBFloat16: return 3.38953138925153547590e38;
    case kFloat: return double(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}

// The unary ops whose integer and bool inputs give default-dtype floats (the cpu's rule).
bool int_to_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp: case UnaryOp::kLog: case UnaryOp::kSqrt: case UnaryOp::kRsqrt:
    case UnaryOp::kSin: case UnaryOp::kCos: case UnaryOp::kTanh: case UnaryOp::kSigmoid:
    case UnaryOp::kSilu: case UnaryOp::kReciprocal: case UnaryOp::kLog1p: case UnaryOp::kExpm1:
    case UnaryOp::kErf: case UnaryOp::kExp2: case UnaryOp::kLog2: case UnaryOp::kLog10:
    case UnaryOp::kTan: case UnaryOp::kAsin: case UnaryOp::kAcos: case UnaryOp::kAtan:
    case UnaryOp::kSinh: case UnaryOp::kCosh: case UnaryOp::kErfc: case UnaryOp::kErfinv:
    case UnaryOp::kLgamma: case UnaryOp::kDigamma: case UnaryOp::kI0: case UnaryOp::kSinc:
    case UnaryOp::kLogit:
      return true;
    default:
      return false;
  }
}

// Where the bounds of an op run as UnaryOp::kClamp sit among its arguments (after self):
// clamp(min?, max?) and hardtanh(min_val, max_val) at 1 and 2, clamp_min(min) and clamp_max(max)
// at 1 (and their in-place and out= forms); 0 for a side the overload has not got.
struct ClampBounds {
  size_t lower, upper;
};
ClampBounds clamp_bounds(std::string_view name) {
  if (name.rfind("clamp_min", 0) == 0) return {1, 0};
  if (name.rfind("clamp_max", 0) == 0) return {0, 1};
  return {1, 2};
}

// neg, abs, relu, sign, pow (an integral exponent >= 0), clamp (integral bounds) and the
// roundings of int32/int64 device tensors, which keep their dtype: neg multiplies by -1, abs is
// the maximum of x and -x (the most negative value stays itself, as PyTorch's), relu the maximum
// with 0, sign clamps to [-1, 1], pow runs the integer kernel's powi, clamp the maximum with the
// lower bound and then the minimum with the upper one (min > max gives max, as the cpu's), and
// rounding an integer copies it. false for other ops, bounds and targets (out= of another shape or dtype),
// which unary() routes on.
bool unary_int(UnaryOp op, const OpSchema& s, Variant v, const Tensor& self, Stack* stack) {
  const bool rounding = op == UnaryOp::kFloor || op == UnaryOp::kCeil ||
                        op == UnaryOp::kRound || op == UnaryOp::kTrunc;
  std::optional<int64_t> lo, hi;
  if (op == UnaryOp::kClamp) {  // clamp(min?, max?), clamp_min(min), clamp_max(max)
    const std::string_view name = s.name;
    if (name.rfind("clamp", 0) != 0) return false;  // (hardtanh)
    const size_t base = stack->size() - size_t(s.num_args);
    const ClampBounds at = clamp_bounds(name);
    auto bound = [&](size_t i, std::optional<int64_t>* b) {
      const IValue& a = (*stack)[base + i];
      if (i == 0 || a.is_none()) return true;
      const Scalar value = a.to_scalar();
      if (!value.is_integral(false)) return false;  // a floating bound gives floats
      *b = value.to<int64_t>();
      return true;
    };
    if (!bound(at.lower, &lo) || !bound(at.upper, &hi) || !(lo || hi)) return false;
  } else if (op == UnaryOp::kPow) {  // pow(self, exponent): an integral exponent >= 0
    const Scalar e = (*stack)[stack->size() - size_t(s.num_args) + 1].to_scalar();
    if (!e.is_integral(false) || e.to<int64_t>() < 0) return false;  // floats; the cpu's error
    lo = e.to<int64_t>();
  } else if (!(op == UnaryOp::kNeg || op == UnaryOp::kAbs || op == UnaryOp::kRelu ||
               op == UnaryOp::kSign || rounding)) {
    return false;
  }
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  if (out.defined() && !(in_device_memory(out) && out.dtype() == self.dtype() &&
                         out.sizes().equals(self.sizes())))
    return false;
  if (!out.defined()) out = make_empty(self.sizes(), self.dtype(), self.device());
  const IntType it = self.dtype() == kInt ? IntType::kInt : IntType::kLong;
  Geometry<3> g;
  const DimVector none(size_t(self.dim()), 0);
  // dst = op2(src, value) with a scalar value.
  auto run = [&](BinaryOp op2, const Tensor& dst, const Tensor& src, int64_t value) {
    RT_CHECK(geometry_of<3>(self.sizes(), {strides_of(dst), strides_of(src), none}, &g),
             "cuda ", s.name, ": a ", self.sizes(), " geometry");
    launch_binary_int(op2, it, g, device_ptr(dst), device_ptr(src), nullptr, true, value, 1,
                      current_stream());
  };
  if (rounding) {
    if (!out.is_same(self) && !copy_on_device(out, self)) return false;
  } else if (op == UnaryOp::kClamp) {
    if (lo) run(BinaryOp::kMaximum, out, self, *lo);
    if (hi) run(BinaryOp::kMinimum, out, lo ? out : self, *hi);
  } else if (op == UnaryOp::kPow) {
    run(BinaryOp::kPow, out, self, *lo);
  } else if (op == UnaryOp::kSign) {  // -1, 0 or 1: self clamped to [-1, 1]
    run(BinaryOp::kMaximum, out, self, -1);
    run(BinaryOp::kMinimum, out, out, 1);
  } else if (op == UnaryOp::kAbs) {
    const Tensor negated = make_empty(self.sizes(), self.dtype(), self.device());
    run(BinaryOp::kMul, negated, self, -1);
    Geometry<3> ga;
    RT_CHECK(geometry_of<3>(self.sizes(), {strides_of(out), strides_of(self), strides_of(negated)},
                            &ga),
             "cuda abs: a ", self.sizes(), " geometry");
    launch_binary_int(BinaryOp::kMaximum, it, ga, device_ptr(out), device_ptr(self),
                      device_ptr(negated), false, 0, 1, current_stream());
  } else {
    run(op == UnaryOp::kNeg ? BinaryOp::kMul : BinaryOp::kMaximum, out, self,
        op == UnaryOp::kNeg ? -1 : 0);
  }
  finish_call(s, v, out, stack);
  return true;
}

// Whether pow's exponent or one of clamp's bounds (clamp, clamp_min, clamp_max and their in-place
// forms) is a floating scalar: an integer input then gives floats, as PyTorch's result_type says.
bool floating_parameter(UnaryOp op, const OpSchema& s, const Stack& stack, size_t base) {
  const std::string_view name = s.name;
  if (op != UnaryOp::kPow && !(op == UnaryOp::kClamp && name.rfind("clamp", 0) == 0))
    return false;
  const ClampBounds at = op == UnaryOp::kPow ? ClampBounds{1, 0} : clamp_bounds(name);
  for (size_t i : {at.lower, at.upper})
    if (i != 0 && !stack[base + i].is_none() && stack[base + i].to_scalar().is_floating_point())
      return true;
  return false;
}

void unary(UnaryOp op, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  Tensor self = (*stack)[base + (op == UnaryOp::kPolygamma ? 1 : 0)].to_tensor();
  if (in_device_memory(self) && (self.dtype() == kInt || self.dtype() == kLong) &&
      unary_int(op, s, v, self, stack))
    return;
  // Integer and bool inputs of the ops that give floats (exp, log, sqrt, ..., and pow or clamp
  // with a floating scalar) are converted to the default dtype on the device first, as the cpu's
  // kernels compute them; in place the fallback's cpu kernel raises.
  if (in_device_memory(self) && !float_type(self.dtype()) && cast_type(self.dtype()) &&
      (int_to_float(op) || floating_parameter(op, s, *stack, base))) {
    const auto c = v == Variant::kInplace ? std::nullopt : converted(self, default_dtype());
    if (!c) return run_device_fallback(h, ks, stack);
    self = *c;
  }
  if (op == UnaryOp::kGelu) {
    const std::string& approximate = (*stack)[base + 1].to_string();
    if (approximate == "tanh") op = UnaryOp::kGeluTanh;
    else if (approximate != "none") return run_device_fallback(h, ks, stack);  // its error
  }
  // The scalar parameters: pow's exponent, clamp's and hardtanh's bounds (None: unbounded on
  // that side), leaky_relu's slope, softplus's beta and threshold, logit's eps (None: -1),
  // elu's coefficients, nan_to_num's replacements, polygamma's order.
  double p0 = 0, p1 = 0, p2 = 0;
  auto bound = [&](size_t i, double none) {
    const IValue& a = (*stack)[base + i];
    return a.is_none() ? none : a.to_scalar().to_double();
  };
  const std::string_view name = s.name;
  if (op == UnaryOp::kPow) {
    p0 = (*stack)[base + 1].to_scalar().to_double();
  } else if (op == UnaryOp::kClamp) {
    const ClampBounds at = clamp_bounds(name);
    if (at.lower && at.upper && (*stack)[base + 1].is_none() && (*stack)[base + 2].is_none())
      return run_device_fallback(h, ks, stack);  // its error: a bound is required
    p0 = at.lower ? bound(at.lower, -INFINITY) : -INFINITY;
    p1 = at.upper ? bound(at.upper, INFINITY) : INFINITY;
  } else if (op == UnaryOp::kLeakyRelu || op == UnaryOp::kSoftplus) {
    p0 = (*stack)[base + 1].to_scalar().to_double();
    if (op == UnaryOp::kSoftplus) p1 = (*stack)[base + 2].to_scalar().to_double();
  } else if (op == UnaryOp::kLogit) {
    p0 = (*stack)[base + 1].is_none() ? -1.0 : (*stack)[base + 1].to_double();
  } else if (op == UnaryOp::kElu) {  // as the cpu's: alpha * scale rounded once
    const double alpha = (*stack)[base + 1].to_scalar().to_double();
    p1 = (*stack)[base + 2].to_scalar().to_double();
    p0 = alpha * p1;
    p2 = (*stack)[base + 3].to_scalar().to_double();
  } else if (op == UnaryOp::kNanToNum && float_type(self.dtype())) {
    // The replacements rounded to self's dtype first, as PyTorch does; the infinities' default
    // is the dtype's largest finite value.
    const double big = finite_max(self.dtype());
    auto replacement = [&](size_t i, double none) {
      const IValue& a = (*stack)[base + i];
      return rounded_to(self.dtype(), a.is_none() ? none : a.to_double());
    };
    p0 = replacement(1, 0.0);
    p1 = replacement(2, big);
    p2 = replacement(3, -big);
  } else if (op == UnaryOp::kPolygamma) {
    const int64_t n = (*stack)[base].to_int();
    if (n < 0) return run_device_fallback(h, ks, stack);  // its error
    p0 = double(n);
  }
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  const auto t = float_type(self.dtype());
  bool ok = t && in_device_memory(self);
  if (ok && out.defined())
    ok = in_device_memory(out) && out.dtype() == self.dtype() && out.sizes().equals(self.sizes());
  if (!ok) return run_device_fallback(h, ks, stack);
  if (!out.defined()) out = make_empty(self.sizes(), self.dtype(), self.device());
  Geometry<2> g;
  if (!geometry_of<2>(out.sizes(), {strides_of(out), strides_of(self)}, &g))
    return run_device_fallback(h, ks, stack);
  launch_unary(op, *t, g, device_ptr(out), device_ptr(self), current_stream(), p0, p1, p2);
  finish_call(s, v, out, stack);
}

// Whether an integer device tensor holds a zero (read on the host: one synchronization, which
// the integer divisions pay to raise the cpu's ZeroDivisionError instead of dividing by zero).
bool any_zero(const Tensor& t) {
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  return retorch::eq(t, Scalar(int64_t(0))).any().item().to_bool();
}

// The integer form of binary(): int32 or int64 operands of the result's own dtype (a device
// tensor, or a cpu scalar such as a Python int) in an op that keeps integers integral (add and
// sub with an integral alpha, mul, maximum, minimum, the comparisons, the bitwise ops and
// shifts, the divisions with rounding modes, remainder and fmod with nonzero divisors); false
// for anything else, which binary() routes as before.
bool binary_int(BinaryOp op, const OpSchema& s, Variant v, const Tensor& self,
                const Tensor& other, const Scalar& alpha, Stack* stack) {
  const ScalarType dt = self.dtype();
  const bool scaled = op == BinaryOp::kAdd || op == BinaryOp::kSub;  // alpha: others pass 1.0
  const bool int_or_bool = dt == kInt || dt == kLong || (dt == kBool && is_bitwise(op));
  if (!integral_op(op) || !int_or_bool || !in_device_memory(self) || !other.defined() ||
      (scaled && !alpha.is_integral(false)))
    return false;
  const bool scalar = !in_device_memory(other) && other.dim() == 0;
  if ((scalar && dt == kBool) || !(scalar || in_device_memory(other))) return false;
  if (!(scalar ? is_integral_type(other.dtype(), false) : other.dtype() == dt) ||
      result_type({self, other}) != dt)
    return false;
  const DimVector shape = scalar ? DimVector(self.sizes().begin(), self.sizes().end())
                                 : broadcast_shapes(self.sizes(), other.sizes(), s.name.data());
  const ScalarType out_dtype = is_comparison(op) ? kBool : dt;
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  if (out.defined() && !(in_device_memory(out) && out.dtype() == out_dtype &&
                         out.sizes().equals(IntArrayRef(shape))))
    return false;
  if (!out.defined()) out = make_empty(shape, out_dtype, self.device());
  Geometry<3> g;
  const DimVector b_strides = scalar ? DimVector(shape.size(), 0) : broadcast_strides(other, shape);
  if (!geometry_of<3>(shape, {strides_of(out), broadcast_strides(self, shape), b_strides}, &g))
    return false;
  const int64_t b_value = scalar ? other.item().to<int64_t>() : 0;
  if (is_int_division(op) && (scalar ? b_value == 0 : any_zero(other)))
    return false;  // the fallback's cpu kernel raises ZeroDivisionError
  launch_binary_int(op, dt == kInt ? IntType::kInt : dt == kLong ? IntType::kLong : IntType::kBool,
                    g, device_ptr(out),
                    device_ptr(self), scalar ? nullptr : device_ptr(other), scalar, b_value,
                    scaled ? alpha.to<int64_t>() : 1, current_stream());
  finish_call(s, v, out, stack);
  return true;
}

void binary(BinaryOp op, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  Tensor self = (*stack)[base].to_tensor();
  Tensor other = (*stack)[base + 1].to_tensor();
  const bool has_alpha = op == BinaryOp::kAdd || op == BinaryOp::kSub ||
                         op == BinaryOp::kThresholdBackward || op == BinaryOp::kLerp ||
                         op == BinaryOp::kSmoothL1;
  const Scalar alpha = has_alpha ? (*stack)[base + 2].to_scalar() : Scalar(1.0);
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  if (binary_int(op, s, v, self, other, alpha, stack)) return;
  if (is_bitwise(op) || is_shift(op)) return run_device_fallback(h, ks, stack);  // its error
  const bool scalar = other.defined() && !in_device_memory(other) && other.dim() == 0;
  // Integer and bool operands of a floating result are converted on the device first (Note
  // [CUDA casts]); a true division of integers is in the default dtype, as PyTorch's.
  bool ok = in_device_memory(self) && cast_type(self.dtype()) &&
            (scalar || (in_device_memory(other) && cast_type(other.dtype())));
  // (sub with a bool operand: the fallback's cpu kernel raises)
  if (op == BinaryOp::kSub) ok = ok && self.dtype() != kBool && other.dtype() != kBool;
  // lerp does not promote: the fallback's cpu kernel raises for mixed dtypes.
  if (op == BinaryOp::kLerp) ok = ok && other.dtype() == self.dtype();
  if (!ok) return run_device_fallback(h, ks, stack);
  ScalarType rt = result_type({self, other});
  if (op == BinaryOp::kDiv && !float_type(rt))
    rt = default_dtype();
  const ScalarType out_dtype = is_comparison(op) ? kBool : rt;
  const auto t = float_type(rt);
  const DimVector shape = scalar ? DimVector(self.sizes().begin(), self.sizes().end())
                                 : broadcast_shapes(self.sizes(), other.sizes(), s.name.data());
  ok = t.has_value();
  if (ok && out.defined())
    ok = in_device_memory(out) && out.dtype() == out_dtype &&
         out.sizes().equals(IntArrayRef(shape));
  if (!ok) return run_device_fallback(h, ks, stack);
  // A tensor that is also the output must not be replaced by a converted copy.
  if (self.dtype() != rt) {
    auto c = converted(self, rt);
    if (!c) return run_device_fallback(h, ks, stack);
    self = *c;
  }
  if (!scalar && other.dtype() != rt) {
    auto c = converted(other, rt);
    if (!c) return run_device_fallback(h, ks, stack);
    other = *c;
  }
  if (!out.defined()) out = make_empty(shape, out_dtype, self.device());
  Geometry<3> g;
  const DimVector b_strides = scalar ? DimVector(shape.size(), 0) : broadcast_strides(other, shape);
  if (!geometry_of<3>(shape, {strides_of(out), broadcast_strides(self, shape), b_strides}, &g))
    return run_device_fallback(h, ks, stack);
  const double b_value = scalar ? other.item().to_double() : 0.0;
  launch_binary(op, *t, g, device_ptr(out), device_ptr(self), scalar ? nullptr : device_ptr(other),
                scalar, b_value, alpha.to_double(), current_stream());
  finish_call(s, v, out, stack);
}

// op(x) as a new bool tensor of x's shape, for a floating x in device memory.
std::optional<Tensor> predicate_of(PredicateOp op, const Tensor& x) {
  Tensor out = make_empty(x.sizes(), kBool, x.device());
  Geometry<2> g;
  if (!geometry_of<2>(x.sizes(), {strides_of(out), strides_of(x)}, &g)) return std::nullopt;
  launch_predicate(op, *float_type(x.dtype()), g, static_cast<bool*>(device_ptr(out)),
                   device_ptr(x), current_stream());
  return out;
}

// Copies a bool result into an out= or in-place target of its shape and dtype on the device;
// false (nothing written) for any other target, which the caller sends to the fallback.
bool into_bool_target(const Tensor& target, const Tensor& result) {
  if (!(in_device_memory(target) && target.dtype() == kBool &&
        target.sizes().equals(result.sizes())))
    return false;
  return copy_on_device(target, result);
}

// a op b over two bool device tensors broadcast together (b: nullptr for the value true).
std::optional<Tensor> bool_binary(BinaryOp op, const Tensor& a, const Tensor* b,
                                  const char* name) {
  const DimVector shape = b ? broadcast_shapes(a.sizes(), b->sizes(), name)
                            : DimVector(a.sizes().begin(), a.sizes().end());
  Tensor out = make_empty(shape, kBool, a.device());
  Geometry<3> g;
  const DimVector b_strides = b ? broadcast_strides(*b, shape) : DimVector(shape.size(), 0);
  if (!geometry_of<3>(shape, {strides_of(out), broadcast_strides(a, shape), b_strides}, &g))
    return std::nullopt;
  launch_binary_int(op, IntType::kBool, g, device_ptr(out), device_ptr(a),
                    b ? device_ptr(*b) : nullptr, b == nullptr, 1, 1, current_stream());
  return out;
}

// isnan, isinf, isfinite, isposinf, isneginf, signbit of a floating device tensor (functional;
// other dtypes, whose answers are constant, take the fallback).
void predicate(PredicateOp op, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[stack->size() - size_t(s.num_args)].to_tensor();
  if (!in_device_memory(self) || !float_type(self.dtype()) || v == Variant::kInplace)
    return run_device_fallback(h, ks, stack);
  auto out = predicate_of(op, self);
  if (!out) return run_device_fallback(h, ks, stack);
  if (v == Variant::kOut) {
    const Tensor target = stack->back().to_tensor();
    if (!into_bool_target(target, *out)) return run_device_fallback(h, ks, stack);
    out = target;
  }
  finish_call(s, v, *out, stack);
}

// logical_and/or/xor (op a bitwise op on bools) and logical_not (op kBitXor with true) of bool
// or floating device tensors: each operand made bool (x != 0) on the device. The in-place and
// out= forms write a bool target of the result's shape (others take the fallback).
void logical(BinaryOp op, bool unary, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  Tensor x[2];
  for (int i = 0; i < (unary ? 1 : 2); ++i) {
    x[i] = (*stack)[base + size_t(i)].to_tensor();
    const bool ok = in_device_memory(x[i]) && (x[i].dtype() == kBool || float_type(x[i].dtype()));
    if (!ok) return run_device_fallback(h, ks, stack);
  }
  const Tensor target = v == Variant::kOut ? stack->back().to_tensor()
                        : v == Variant::kInplace ? x[0] : Tensor();
  for (int i = 0; i < (unary ? 1 : 2); ++i) {
    if (x[i].dtype() == kBool) continue;
    auto b = predicate_of(PredicateOp::kNonzero, x[i]);
    if (!b) return run_device_fallback(h, ks, stack);
    x[i] = *b;
  }
  auto out = bool_binary(op, x[0], unary ? nullptr : &x[1], s.name.data());
  if (!out) return run_device_fallback(h, ks, stack);
  if (target.defined()) {
    if (!into_bool_target(target, *out)) return run_device_fallback(h, ks, stack);
    out = target;
  }
  finish_call(s, v, *out, stack);
}

// bitwise_not of int32/int64/bool device tensors: x ^ -1, or x ^ true (into self, or an out=
// of self's shape and dtype).
void bitwise_not(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[stack->size() - size_t(s.num_args)].to_tensor();
  const ScalarType dt = self.dtype();
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  bool ok = in_device_memory(self) && (dt == kInt || dt == kLong || dt == kBool);
  if (ok && out.defined())
    ok = in_device_memory(out) && out.dtype() == dt && out.sizes().equals(self.sizes());
  if (!ok) return run_device_fallback(h, ks, stack);
  if (!out.defined()) out = make_empty(self.sizes(), dt, self.device());
  Geometry<3> g;
  const DimVector zero(size_t(self.dim()), 0);
  if (!geometry_of<3>(self.sizes(), {strides_of(out), strides_of(self), zero}, &g))
    return run_device_fallback(h, ks, stack);
  const IntType it = dt == kInt ? IntType::kInt : dt == kLong ? IntType::kLong : IntType::kBool;
  launch_binary_int(BinaryOp::kBitXor, it, g, device_ptr(out), device_ptr(self), nullptr, true,
                    dt == kBool ? 1 : -1, 1, current_stream());
  finish_call(s, v, out, stack);
}

// addcmul, addcdiv (self, tensor1, tensor2, value), lerp.Tensor (self, end, weight) and
// clamp.Tensor (self, min?, max?): device tensors of floating dtypes broadcast together, in their
// promoted dtype (lerp's must share one: the fallback raises otherwise). clamp's missing bound is
// no tensor (one of the two is required: the fallback raises). An in-place call writes self, so
// the broadcast shape must be self's.
void ternary(TernaryOp op, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  Tensor x[3];
  for (size_t i = 0; i < 3; ++i)
    if (!(*stack)[base + i].is_none()) x[i] = (*stack)[base + i].to_tensor();
  const bool has_value = op == TernaryOp::kAddcmul || op == TernaryOp::kAddcdiv;
  const double value = has_value ? (*stack)[base + 3].to_scalar().to_double() : 0.0;
  bool ok = x[0].defined() && (x[1].defined() || x[2].defined());
  std::vector<Tensor> operands;
  for (const Tensor& t : x) {
    if (!t.defined()) continue;
    ok = ok && in_device_memory(t) && float_type(t.dtype());
    operands.push_back(t);
  }
  if (ok && op != TernaryOp::kClamp) ok = x[1].defined() && x[2].defined();
  if (ok && op == TernaryOp::kLerp)
    ok = x[1].dtype() == x[0].dtype() && x[2].dtype() == x[0].dtype();
  if (!ok) return run_device_fallback(h, ks, stack);
  const ScalarType rt = result_type(operands);
  DimVector shape(x[0].sizes().begin(), x[0].sizes().end());
  for (size_t i = 1; i < operands.size(); ++i)
    shape = broadcast_shapes(shape, operands[i].sizes(), s.name.data());
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? x[0] : Tensor();
  if (out.defined() && !(in_device_memory(out) && out.dtype() == rt &&
                         out.sizes().equals(IntArrayRef(shape))))
    return run_device_fallback(h, ks, stack);
  for (Tensor& t : x) {
    if (!t.defined() || t.dtype() == rt) continue;
    auto c = converted(t, rt);
    if (!c) return run_device_fallback(h, ks, stack);
    t = *c;
  }
  if (!out.defined()) out = make_empty(shape, rt, x[0].device());
  auto strides = [&](const Tensor& t) {
    return t.defined() ? broadcast_strides(t, shape) : DimVector(shape.size(), 0);
  };
  auto ptr = [](const Tensor& t) { return t.defined() ? device_ptr(t) : nullptr; };
  Geometry<4> g;
  if (!geometry_of<4>(shape, {strides_of(out), strides(x[0]), strides(x[1]), strides(x[2])}, &g))
    return run_device_fallback(h, ks, stack);
  launch_ternary(op, *float_type(rt), g, device_ptr(out), device_ptr(x[0]), ptr(x[1]), ptr(x[2]),
                 value, current_stream());
  finish_call(s, v, out, stack);
}

// div.Tensor_mode (its three variants): rounding_mode None is div, "trunc" and "floor" the
// rounding kernels, which binary() runs for floating operands only: integers (whose division by
// zero raises on the cpu) and bad modes take the fallback.
void div_mode(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const IValue& mode = (*stack)[base + 2];
  if (mode.is_none()) return binary(BinaryOp::kDiv, h, ks, stack);
  const std::string& m = mode.to_string();
  if (m == "trunc") return binary(BinaryOp::kDivTrunc, h, ks, stack);
  if (m == "floor") return binary(BinaryOp::kDivFloor, h, ks, stack);
  run_device_fallback(h, ks, stack);  // its error names the mode
}

struct UnaryEntry {
  std::string_view name;
  UnaryOp op;
};
constexpr UnaryEntry kUnaryOps[] = {
    {"neg", UnaryOp::kNeg},         {"abs", UnaryOp::kAbs},       {"exp", UnaryOp::kExp},
    {"log", UnaryOp::kLog},         {"sqrt", UnaryOp::kSqrt},     {"rsqrt", UnaryOp::kRsqrt},
    {"sin", UnaryOp::kSin},         {"cos", UnaryOp::kCos},       {"tanh", UnaryOp::kTanh},
    {"sigmoid", UnaryOp::kSigmoid}, {"relu", UnaryOp::kRelu},     {"silu", UnaryOp::kSilu},
    {"gelu", UnaryOp::kGelu},       {"reciprocal", UnaryOp::kReciprocal},
    {"log1p", UnaryOp::kLog1p},     {"expm1", UnaryOp::kExpm1},   {"erf", UnaryOp::kErf},
    {"exp2", UnaryOp::kExp2},       {"log2", UnaryOp::kLog2},     {"log10", UnaryOp::kLog10},
    {"tan", UnaryOp::kTan},         {"asin", UnaryOp::kAsin},     {"acos", UnaryOp::kAcos},
    {"atan", UnaryOp::kAtan},       {"sinh", UnaryOp::kSinh},     {"cosh", UnaryOp::kCosh},
    {"floor", UnaryOp::kFloor},     {"ceil", UnaryOp::kCeil},     {"round", UnaryOp::kRound},
    {"trunc", UnaryOp::kTrunc},     {"frac", UnaryOp::kFrac},     {"sign", UnaryOp::kSign},
    {"erfc", UnaryOp::kErfc},       {"erfinv", UnaryOp::kErfinv}, {"lgamma", UnaryOp::kLgamma},
    {"i0", UnaryOp::kI0},           {"sinc", UnaryOp::kSinc},
    {"hardsigmoid", UnaryOp::kHardsigmoid}, {"hardswish", UnaryOp::kHardswish},
    {"digamma", UnaryOp::kDigamma}, {"special_i1", UnaryOp::kI1},
};

// Unary ops with scalar parameters, by (name, overload of the functional form).
struct ParamEntry {
  std::string_view name, overload;
  UnaryOp op;
};
constexpr ParamEntry kParamOps[] = {
    {"pow", "Tensor_Scalar", UnaryOp::kPow}, {"clamp", "", UnaryOp::kClamp},
    {"clamp_min", "", UnaryOp::kClamp},      {"clamp_max", "", UnaryOp::kClamp},
    {"hardtanh", "", UnaryOp::kClamp},       {"leaky_relu", "", UnaryOp::kLeakyRelu},
    {"softplus", "", UnaryOp::kSoftplus},    {"logit", "", UnaryOp::kLogit},
    {"elu", "", UnaryOp::kElu},              {"nan_to_num", "", UnaryOp::kNanToNum},
    {"polygamma", "", UnaryOp::kPolygamma},
};

struct BinaryEntry {
  std::string_view name;
  std::string_view overload;  // of the functional variant
  BinaryOp op;
};
constexpr BinaryEntry kBinaryOps[] = {
    {"add", "Tensor", BinaryOp::kAdd},     {"sub", "Tensor", BinaryOp::kSub},
    {"mul", "Tensor", BinaryOp::kMul},     {"div", "Tensor", BinaryOp::kDiv},
    {"maximum", "", BinaryOp::kMaximum},   {"minimum", "", BinaryOp::kMinimum},
    {"threshold_backward", "", BinaryOp::kThresholdBackward},
    {"pow", "Tensor_Tensor", BinaryOp::kPow},
    {"atan2", "", BinaryOp::kAtan2},       {"copysign", "Tensor", BinaryOp::kCopysign},
    {"hypot", "", BinaryOp::kHypot},       {"fmax", "", BinaryOp::kFmax},
    {"fmin", "", BinaryOp::kFmin},         {"logaddexp", "", BinaryOp::kLogaddexp},
    {"logaddexp2", "", BinaryOp::kLogaddexp2},
    {"remainder", "Tensor", BinaryOp::kRemainder}, {"fmod", "Tensor", BinaryOp::kFmod},
    {"heaviside", "", BinaryOp::kHeaviside}, {"xlogy", "Tensor", BinaryOp::kXlogy},
    {"lerp", "Scalar", BinaryOp::kLerp},     {"_smooth_l1", "", BinaryOp::kSmoothL1},
    {"bitwise_and", "Tensor", BinaryOp::kBitAnd}, {"bitwise_or", "Tensor", BinaryOp::kBitOr},
    {"bitwise_xor", "Tensor", BinaryOp::kBitXor},
    {"bitwise_left_shift", "Tensor", BinaryOp::kShiftLeft},
    {"bitwise_right_shift", "Tensor", BinaryOp::kShiftRight},
    {"eq", "Tensor", BinaryOp::kEq},       {"ne", "Tensor", BinaryOp::kNe},
    {"lt", "Tensor", BinaryOp::kLt},       {"le", "Tensor", BinaryOp::kLe},
    {"gt", "Tensor", BinaryOp::kGt},       {"ge", "Tensor", BinaryOp::kGe},
};

struct PredicateEntry {
  std::string_view name;
  PredicateOp op;
};
constexpr PredicateEntry kPredicateOps[] = {
    {"isnan", PredicateOp::kIsnan},       {"isinf", PredicateOp::kIsinf},
    {"isfinite", PredicateOp::kIsfinite}, {"isposinf", PredicateOp::kIsposinf},
    {"isneginf", PredicateOp::kIsneginf}, {"signbit", PredicateOp::kSignbit},
};

struct LogicalEntry {
  std::string_view name;
  BinaryOp op;
  bool unary;
};
constexpr LogicalEntry kLogicalOps[] = {
    {"logical_and", BinaryOp::kBitAnd, false},
    {"logical_or", BinaryOp::kBitOr, false},
    {"logical_xor", BinaryOp::kBitXor, false},
    {"logical_not", BinaryOp::kBitXor, true},
};

struct TernaryEntry {
  std::string_view name, overload;  // of the functional variant
  TernaryOp op;
};
constexpr TernaryEntry kTernaryOps[] = {
    {"addcmul", "", TernaryOp::kAddcmul},
    {"addcdiv", "", TernaryOp::kAddcdiv},
    {"lerp", "Tensor", TernaryOp::kLerp},
    {"clamp", "Tensor", TernaryOp::kClamp},
};

}  // namespace

void register_pointwise_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view base = base_name(s);
    const bool out = variant_of(s) == Variant::kOut;
    for (const UnaryEntry& e : kUnaryOps)  // (not round.decimals and its out form)
      if (base == e.name && (s.overload.empty() || s.overload == "out")) {
        const UnaryOp op = e.op;
        h->set_kernel(DispatchKey::CUDA,
                      make_boxed_kernel([op](const OperatorHandle& oh, DispatchKeySet ks,
                                             Stack* st) { unary(op, oh, ks, st); }));
      }
    // The out form's overload: "out", or the functional one's with "_out".
    auto matches = [&](std::string_view functional) {
      return s.overload == functional ||
             (out && s.overload == (functional.empty() ? std::string("out")
                                                       : std::string(functional) + "_out"));
    };
    for (const ParamEntry& e : kParamOps)
      if (base == e.name && matches(e.overload)) {
        const UnaryOp op = e.op;
        h->set_kernel(DispatchKey::CUDA,
                      make_boxed_kernel([op](const OperatorHandle& oh, DispatchKeySet ks,
                                             Stack* st) { unary(op, oh, ks, st); }));
      }
    for (const PredicateEntry& e : kPredicateOps)
      if (s.name == e.name && (s.overload.empty() || s.overload == "out")) {
        const PredicateOp op = e.op;
        h->set_kernel(DispatchKey::CUDA,
                      make_boxed_kernel([op](const OperatorHandle& oh, DispatchKeySet ks,
                                             Stack* st) { predicate(op, oh, ks, st); }));
      }
    for (const LogicalEntry& e : kLogicalOps)
      if (base == e.name && (s.overload.empty() || s.overload == "out")) {
        const BinaryOp op = e.op;
        const bool unary = e.unary;
        h->set_kernel(DispatchKey::CUDA, make_boxed_kernel([op, unary](const OperatorHandle& oh,
                                                                       DispatchKeySet ks,
                                                                       Stack* st) {
                        logical(op, unary, oh, ks, st);
                      }));
      }
    if (base == "bitwise_not" && (s.overload.empty() || s.overload == "out"))
      set_cuda_kernel(h, &bitwise_not);
    if (base == "div" && (s.overload == "Tensor_mode" || s.overload == "Tensor_mode_out"))
      set_cuda_kernel(h, &div_mode);
    for (const TernaryEntry& e : kTernaryOps) {
      if (base == e.name && matches(e.overload)) {
        const TernaryOp op = e.op;
        h->set_kernel(DispatchKey::CUDA,
                      make_boxed_kernel([op](const OperatorHandle& oh, DispatchKeySet ks,
                                             Stack* st) { ternary(op, oh, ks, st); }));
      }
    }
    for (const BinaryEntry& e : kBinaryOps) {
      if (base == e.name && matches(e.overload)) {
        const BinaryOp op = e.op;
        h->set_kernel(DispatchKey::CUDA,
                      make_boxed_kernel([op](const OperatorHandle& oh, DispatchKeySet ks,
                                             Stack* st) { binary(op, oh, ks, st); }));
      }
    }
  }
}

}  // namespace retorch::cuda_backend
