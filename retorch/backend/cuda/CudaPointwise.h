// Launchers of the CUDA backend's pointwise kernels (CudaPointwise.cu): unary and binary
// floating-point ops and dtype-converting strided copies over an offset-calculator geometry.
#pragma once
#include "retorch/backend/cuda/CudaGeometry.h"
#include "retorch/backend/cuda/CudaRuntime.h"

namespace retorch::cuda_backend {

/// The element types the pointwise kernels compute in (16-bit floats widen to float).
enum class FloatType : int { kFloat, kDouble, kHalf, kBFloat16 };

/// Unary ops, chosen per launch (a switch on a value every thread shares).
enum class UnaryOp : int {
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kSin, kCos, kTanh, kSigmoid, kRelu, kSilu,
  kGelu, kGeluTanh, kReciprocal, kLog1p, kExpm1, kErf,
  kExp2, kLog2, kLog10, kTan, kAsin, kAcos, kAtan, kSinh, kCosh,
  kFloor, kCeil, kRound, kTrunc, kFrac, kSign,
  kErfc, kErfinv, kLgamma, kI0, kSinc, kHardsigmoid, kHardswish,
  kPow,        // x ^ p0
  kClamp,      // min(max(x, p0), p1), NaN staying NaN (clamp, hardtanh)
  kLeakyRelu,  // x > 0 ? x : x * p0
  kSoftplus,   // beta p0, threshold p1
  kLogit,      // eps p0 (negative: no clamp)
  kElu,        // x > 0 ? x * p1 : expm1(x * p2) * p0 (p0 = alpha * scale, p1 scale, p2 input scale)
  kNanToNum,   // NaN -> p0, +inf -> p1, -inf -> p2
  kI1, kDigamma,
  kPolygamma,  // order p0
};
/// Binary ops: add and sub scale the second operand by alpha; threshold_backward(a = grad,
/// b = self) gives a where b > alpha, else 0; the comparisons give 1 or 0 (a bool output).
enum class BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kThresholdBackward, kPow,
  kAtan2, kCopysign, kHypot, kFmax, kFmin, kLogaddexp, kLogaddexp2, kRemainder, kFmod,
  kHeaviside, kXlogy,
  kLerp,  // a + alpha (b - a), the weight alpha (lerp.Scalar)
  kBitAnd, kBitOr, kBitXor,  // integers and bool only
  kDivTrunc, kDivFloor,       // div with rounding_mode "trunc" / "floor" (floating)
  kShiftLeft, kShiftRight,    // integers only: 0 (left) or the sign fill (right) past the width
  kSmoothL1,                  // smooth_l1_loss's elementwise term, beta alpha (floating)
  kEq, kNe, kLt, kLe, kGt, kGe,  // the comparisons last (is_comparison)
};
/// Whether op is a comparison (its output is bool).
inline bool is_comparison(BinaryOp op) { return op >= BinaryOp::kEq; }

/// out = op(in) over g (operand 0 the output, 1 the input), all of type t; p0, p1 and p2 are
/// the op's scalar parameters (kPow, kClamp, kLeakyRelu, kSoftplus, kLogit, kElu, kNanToNum,
/// kPolygamma).
void launch_unary(UnaryOp op, FloatType t, const Geometry<2>& g, void* out, const void* in,
                  StreamHandle s, double p0 = 0, double p1 = 0, double p2 = 0);
/// out = op(a, b) over g (operands out, a, b), a and b of type t, out of type t (bool for a
/// comparison); with b_is_scalar, b is b_value everywhere and its pointer and strides are
/// unused.
void launch_binary(BinaryOp op, FloatType t, const Geometry<3>& g, void* out, const void* a,
                   const void* b, bool b_is_scalar, double b_value, double alpha, StreamHandle s);
/// Whether op is a bitwise op (integers and bool only).
inline bool is_bitwise(BinaryOp op) { return op >= BinaryOp::kBitAnd && op <= BinaryOp::kBitXor; }
/// Integer element types of the binary ops that keep integers integral (add, sub with alpha,
/// mul, maximum, minimum, the bitwise ops) and of the comparisons; bool for the bitwise ops.
enum class IntType : int { kInt, kLong, kBool };
inline bool is_shift(BinaryOp op) {
  return op == BinaryOp::kShiftLeft || op == BinaryOp::kShiftRight;
}
/// The divisions whose integer forms need a nonzero divisor: div with rounding modes,
/// remainder and fmod.
inline bool is_int_division(BinaryOp op) {
  return op == BinaryOp::kDivTrunc || op == BinaryOp::kDivFloor || op == BinaryOp::kRemainder ||
         op == BinaryOp::kFmod;
}
inline bool integral_op(BinaryOp op) {
  return op == BinaryOp::kAdd || op == BinaryOp::kSub || op == BinaryOp::kMul ||
         op == BinaryOp::kMaximum || op == BinaryOp::kMinimum || op == BinaryOp::kPow ||
         is_comparison(op) ||
         is_bitwise(op) || is_shift(op) || is_int_division(op);
}
/// Tests of floating values with a bool result: isnan, isinf, isfinite, isposinf, isneginf,
/// signbit, x != 0 (logical ops' operands) and x == 0 (logical_not).
enum class PredicateOp : int {
  kIsnan, kIsinf, kIsfinite, kIsposinf, kIsneginf, kSignbit, kNonzero, kIsZero,
};
/// out = op(in) over g (operands out, in), in of type t, out bool.
void launch_predicate(PredicateOp op, FloatType t, const Geometry<2>& g, bool* out,
                      const void* in, StreamHandle s);
/// launch_binary over integers (integral_op(op)): arithmetic wraps as PyTorch's does.
void launch_binary_int(BinaryOp op, IntType t, const Geometry<3>& g, void* out, const void* a,
                       const void* b, bool b_is_scalar, int64_t b_value, int64_t alpha,
                       StreamHandle s);
/// Ternary ops: out = a + value * b * c (addcmul), a + value * b / c (addcdiv), lerp(a, b,
/// weight c) (lerp.Tensor), a clamped to [b, c] (clamp.Tensor: NaN where a bound is NaN).
enum class TernaryOp : int { kAddcmul, kAddcdiv, kLerp, kClamp };
/// out = op(a, b, c) over g (operands out, a, b, c), all of type t; kClamp takes a null b or c
/// for a missing bound (-inf, +inf).
void launch_ternary(TernaryOp op, FloatType t, const Geometry<4>& g, void* out, const void* a,
                    const void* b, const void* c, double value, StreamHandle s);
/// out = cond ? a : b over g (operands out, cond (bool), a, b), a and b of type t; a scalar
/// side is its value everywhere (its pointer and strides unused).
void launch_select(FloatType t, const Geometry<4>& g, void* out, const bool* cond, const void* a,
                   bool a_is_scalar, double a_value, const void* b, bool b_is_scalar,
                   double b_value, StreamHandle s);
/// Sets every element of out (of `element_size` bytes) over g to the bit pattern `bits`.
void launch_fill_bytes(int element_size, const Geometry<1>& g, void* out, uint64_t bits,
                       StreamHandle s);
/// The element types of the factory kernels: the floating ones and the integers.
enum class NumericType : int {
  kFloat, kDouble, kHalf, kBFloat16, kInt8, kUInt8, kInt16, kInt32, kInt64,
};
/// n contiguous elements of out (arange, linspace): with `integral`, istart + i * istep in
/// int64; else, in double, start + step * i for i < half and end - step * (n - 1 - i) from
/// half on, rounded to a floating type or truncated to an integer one.
void launch_ramp(NumericType t, void* out, int64_t n, bool integral, int64_t istart,
                 int64_t istep, double start, double step, double end, int64_t half,
                 StreamHandle s);
/// The element types of the casts between dtypes: the numeric ones and bool.
enum class CastType : int {
  kFloat, kDouble, kHalf, kBFloat16, kInt8, kUInt8, kInt16, kInt32, kInt64, kBool,
};
/// out = in converted from type `from` to type `to` over g (operands out, in), as C++ converts
/// (floats to integers truncate; anything nonzero, NaN too, is true), 16-bit floats through
/// float (Note [CUDA casts]).
void launch_cast(CastType to, CastType from, const Geometry<2>& g, void* out, const void* in,
                 StreamHandle s);
/// A strided copy of elements of `element_size` bytes (1, 2, 4 or 8) over g, any dtype.
void launch_copy_bytes(int element_size, const Geometry<2>& g, void* out, const void* in,
                       StreamHandle s);

}  // namespace retorch::cuda_backend
