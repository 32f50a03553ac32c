// Scalar: a number (double, int64 or bool) passed to ops, like c10::Scalar.
#pragma once
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "retorch/core/Error.h"
#include "retorch/core/ScalarType.h"

namespace retorch {

class Scalar {
 public:
  enum class Tag : uint8_t { kDouble, kLong, kBool };

  Scalar() : Scalar(int64_t(0)) {}
  Scalar(double v) : tag_(Tag::kDouble) { v_.d = v; }
  Scalar(float v) : Scalar(double(v)) {}
  Scalar(Half v) : Scalar(double(float(v))) {}
  Scalar(BFloat16 v) : Scalar(double(float(v))) {}
  Scalar(bool v) : tag_(Tag::kBool) { v_.i = v; }
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : tag_(Tag::kLong) { v_.i = static_cast<int64_t>(v); }

  bool is_floating_point() const { return tag_ == Tag::kDouble; }
  bool is_integral(bool include_bool) const {
    return tag_ == Tag::kLong || (include_bool && tag_ == Tag::kBool);
  }
  bool is_boolean() const { return tag_ == Tag::kBool; }
  Tag tag() const { return tag_; }
  /// The dtype a wrapped tensor of this scalar gets: float64, int64 or bool.
  ScalarType type() const {
    return tag_ == Tag::kDouble ? kDouble : (tag_ == Tag::kLong ? kLong : kBool);
  }

  double to_double() const { return tag_ == Tag::kDouble ? v_.d : double(v_.i); }
  int64_t to_long() const { return tag_ == Tag::kDouble ? int64_t(v_.d) : v_.i; }
  bool to_bool() const { return tag_ == Tag::kDouble ? v_.d != 0 : v_.i != 0; }

  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_same_v<T, double>) return to_double();
    else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                       std::is_same_v<T, BFloat16>)
      return T(static_cast<float>(to_double()));
    else if (tag_ == Tag::kDouble) return static_cast<T>(v_.d);
    else return static_cast<T>(v_.i);
  }

  Scalar operator-() const {
    RT_CHECK(tag_ != Tag::kBool, "negation of a boolean Scalar is not supported");
    return tag_ == Tag::kDouble ? Scalar(-v_.d) : Scalar(-v_.i);
  }
  bool equal(double d) const { return to_double() == d; }

 private:
  Tag tag_;
  union {
    double d;
    int64_t i;
  } v_;
};

template <>
inline double Scalar::to<double>() const { return to_double(); }
template <>
inline float Scalar::to<float>() const { return static_cast<float>(to_double()); }

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace retorch
