// The ten dtypes, their properties, and PyTorch's type-promotion rules.
#pragma once
#include <cstdint>
#include <ostream>
#include <string_view>

#include "retorch/core/Half.h"

namespace retorch {

enum class ScalarType : int8_t {
  Byte = 0,  // uint8
  Char,      // int8
  Short,     // int16
  Int,       // int32
  Long,      // int64
  Half,      // float16
  Float,     // float32
  Double,    // float64
  Bool,
  BFloat16,
  Undefined,
  NumOptions = Undefined,
};

constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;

constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case kByte: case kChar: case kBool: return 1;
    case kShort: case kHalf: case kBFloat16: return 2;
    case kInt: case kFloat: return 4;
    case kLong: case kDouble: return 8;
    default: return 0;
  }
}

constexpr bool is_floating_type(ScalarType t) {
  return t == kHalf || t == kFloat || t == kDouble || t == kBFloat16;
}
constexpr bool is_integral_type(ScalarType t, bool include_bool) {
  return (t >= kByte && t <= kLong) || (include_bool && t == kBool);
}
constexpr bool is_reduced_float(ScalarType t) { return t == kHalf || t == kBFloat16; }

/// PyTorch-style short name: "float32", "int64", ...
std::string_view dtype_name(ScalarType t);
/// Legacy tensor type name used in error messages: "torch.FloatTensor".
std::string_view legacy_type_name(ScalarType t);
/// c10's name of the dtype ("Float", "Short", "BFloat16"), as PyTorch's messages and the
/// JIT's types print it.
std::string_view scalar_type_name(ScalarType t);
/// PyTorch's promote_types table.
ScalarType promote_types(ScalarType a, ScalarType b);
/// Default floating dtype (float32 unless changed).
ScalarType default_dtype();
void set_default_dtype(ScalarType t);

inline std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

template <typename T> struct CppTypeToScalarType;
#define RT_MAP_TYPE(cpp, st) \
  template <> struct CppTypeToScalarType<cpp> { static constexpr ScalarType value = st; };
RT_MAP_TYPE(uint8_t, kByte)
RT_MAP_TYPE(int8_t, kChar)
RT_MAP_TYPE(int16_t, kShort)
RT_MAP_TYPE(int32_t, kInt)
RT_MAP_TYPE(int64_t, kLong)
RT_MAP_TYPE(Half, kHalf)
RT_MAP_TYPE(float, kFloat)
RT_MAP_TYPE(double, kDouble)
RT_MAP_TYPE(bool, kBool)
RT_MAP_TYPE(BFloat16, kBFloat16)
#undef RT_MAP_TYPE

/// The type arithmetic is done in: float for the 16-bit floats, the type itself otherwise.
template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename OpMath<T>::type;

}  // namespace retorch
