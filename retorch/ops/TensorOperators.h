// Arithmetic and comparison operators on Tensor (and Scalar) for C++ code, like libtorch's.
#pragma once
#include <utility>

#include "retorch/generated/Functions.h"
#include "retorch/ops/Temporaries.h"

namespace retorch {

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
inline Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
inline Tensor operator-(const Scalar& a, const Tensor& b) { return neg(b).add(a); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
inline Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
inline Tensor operator/(const Scalar& a, const Tensor& b) { return reciprocal(b).mul(a); }

// A dying temporary operand takes the result in place when that is indistinguishable from a
// fresh output (Note [Reusing temporaries]); + and * reuse either side, as they commute.
#define RT_REUSING_OPERATOR(OP, FN)                                                    \
  inline Tensor operator OP(Tensor&& a, const Scalar& b) {                            \
    if (!detail::reusable_temporary(a)) return FN(a, b);                              \
    a.FN##_(b);                                                                        \
    return std::move(a);                                                               \
  }                                                                                    \
  inline Tensor operator OP(Tensor&& a, const Tensor& b) {                            \
    if (!detail::reusable_temporary(a, b)) return FN(a, b);                           \
    a.FN##_(b);                                                                        \
    return std::move(a);                                                               \
  }
RT_REUSING_OPERATOR(+, add)
RT_REUSING_OPERATOR(-, sub)
RT_REUSING_OPERATOR(*, mul)
RT_REUSING_OPERATOR(/, div)
#undef RT_REUSING_OPERATOR
#define RT_REUSING_RIGHT_OPERAND(OP, FN)                                               \
  inline Tensor operator OP(const Tensor& a, Tensor&& b) {                            \
    if (!detail::reusable_temporary(b, a)) return FN(a, b);                           \
    b.FN##_(a);                                                                        \
    return std::move(b);                                                               \
  }                                                                                    \
  inline Tensor operator OP(Tensor&& a, Tensor&& b) {                                 \
    return std::move(a) OP static_cast<const Tensor&>(b);                              \
  }                                                                                    \
  inline Tensor operator OP(const Scalar& a, Tensor&& b) {                            \
    if (!detail::reusable_temporary(b)) return FN(b, a);                              \
    b.FN##_(a);                                                                        \
    return std::move(b);                                                               \
  }
RT_REUSING_RIGHT_OPERAND(+, add)
RT_REUSING_RIGHT_OPERAND(*, mul)
#undef RT_REUSING_RIGHT_OPERAND

inline Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
inline Tensor operator%(const Tensor& a, const Scalar& b) { return remainder(a, b); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
inline Tensor operator&&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
inline Tensor operator||(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
inline Tensor operator!(const Tensor& a) { return logical_not(a); }

}  // namespace retorch

namespace retorch {
// Bitwise, as libtorch's are (logical on bool tensors, where both agree).
inline Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
inline Tensor operator&(const Tensor& a, const Scalar& b) { return bitwise_and(a, b); }
inline Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
inline Tensor operator|(const Tensor& a, const Scalar& b) { return bitwise_or(a, b); }
inline Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
inline Tensor operator^(const Tensor& a, const Scalar& b) { return bitwise_xor(a, b); }
inline Tensor operator~(const Tensor& a) { return bitwise_not(a); }
inline Tensor operator<<(const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }
inline Tensor operator<<(const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, b); }
inline Tensor operator>>(const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }
inline Tensor operator>>(const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, b); }
}  // namespace retorch
