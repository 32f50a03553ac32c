// RT_DISPATCH_* macros: run a lambda with scalar_t bound to the C++ type of a dtype.
#pragma once
#include "retorch/core/Error.h"
#include "retorch/core/ScalarType.h"

#define RT_FORALL_TYPES(_) \
  _(uint8_t, Byte)         \
  _(int8_t, Char)          \
  _(int16_t, Short)        \
  _(int32_t, Int)          \
  _(int64_t, Long)         \
  _(::retorch::Half, Half) \
  _(float, Float)          \
  _(double, Double)        \
  _(bool, Bool)            \
  _(::retorch::BFloat16, BFloat16)

#define RT_DISPATCH_CASE(T, NAME, ...)        \
  case ::retorch::ScalarType::NAME: {         \
    using scalar_t [[maybe_unused]] = T;      \
    __VA_ARGS__();                            \
    break;                                    \
  }

#define RT_DISPATCH_FAIL(dtype, name) \
  default:                            \
    RT_ERROR_KIND(::retorch::ErrorKind::kRuntime, "\"", name, "\" not implemented for '", \
                  ::retorch::dtype_name(dtype), "'")

/// All ten dtypes.
#define RT_DISPATCH_ALL(dtype, name, ...)                             \
  [&] {                                                                \
    switch (dtype) {                                                   \
      RT_DISPATCH_CASE(uint8_t, Byte, __VA_ARGS__)                     \
      RT_DISPATCH_CASE(int8_t, Char, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int16_t, Short, __VA_ARGS__)                    \
      RT_DISPATCH_CASE(int32_t, Int, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int64_t, Long, __VA_ARGS__)                     \
      RT_DISPATCH_CASE(::retorch::Half, Half, __VA_ARGS__)             \
      RT_DISPATCH_CASE(float, Float, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(double, Double, __VA_ARGS__)                    \
      RT_DISPATCH_CASE(bool, Bool, __VA_ARGS__)                        \
      RT_DISPATCH_CASE(::retorch::BFloat16, BFloat16, __VA_ARGS__)     \
      RT_DISPATCH_FAIL(dtype, name);                                   \
    }                                                                  \
  }()

/// Every dtype but bool.
#define RT_DISPATCH_NUMERIC(dtype, name, ...)                         \
  [&] {                                                                \
    switch (dtype) {                                                   \
      RT_DISPATCH_CASE(uint8_t, Byte, __VA_ARGS__)                     \
      RT_DISPATCH_CASE(int8_t, Char, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int16_t, Short, __VA_ARGS__)                    \
      RT_DISPATCH_CASE(int32_t, Int, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int64_t, Long, __VA_ARGS__)                     \
      RT_DISPATCH_CASE(::retorch::Half, Half, __VA_ARGS__)             \
      RT_DISPATCH_CASE(float, Float, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(double, Double, __VA_ARGS__)                    \
      RT_DISPATCH_CASE(::retorch::BFloat16, BFloat16, __VA_ARGS__)     \
      RT_DISPATCH_FAIL(dtype, name);                                   \
    }                                                                  \
  }()

/// The four floating dtypes.
#define RT_DISPATCH_FLOATING(dtype, name, ...)                        \
  [&] {                                                                \
    switch (dtype) {                                                   \
      RT_DISPATCH_CASE(::retorch::Half, Half, __VA_ARGS__)             \
      RT_DISPATCH_CASE(float, Float, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(double, Double, __VA_ARGS__)                    \
      RT_DISPATCH_CASE(::retorch::BFloat16, BFloat16, __VA_ARGS__)     \
      RT_DISPATCH_FAIL(dtype, name);                                   \
    }                                                                  \
  }()

/// Integral dtypes without bool (shifts).
#define RT_DISPATCH_INTS(dtype, name, ...)                            \
  [&] {                                                                \
    switch (dtype) {                                                   \
      RT_DISPATCH_CASE(uint8_t, Byte, __VA_ARGS__)                     \
      RT_DISPATCH_CASE(int8_t, Char, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int16_t, Short, __VA_ARGS__)                    \
      RT_DISPATCH_CASE(int32_t, Int, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int64_t, Long, __VA_ARGS__)                     \
      RT_DISPATCH_FAIL(dtype, name);                                   \
    }                                                                  \
  }()

/// Integral dtypes (with bool).
#define RT_DISPATCH_INTEGRAL(dtype, name, ...)                        \
  [&] {                                                                \
    switch (dtype) {                                                   \
      RT_DISPATCH_CASE(uint8_t, Byte, __VA_ARGS__)                     \
      RT_DISPATCH_CASE(int8_t, Char, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int16_t, Short, __VA_ARGS__)                    \
      RT_DISPATCH_CASE(int32_t, Int, __VA_ARGS__)                      \
      RT_DISPATCH_CASE(int64_t, Long, __VA_ARGS__)                     \
      RT_DISPATCH_CASE(bool, Bool, __VA_ARGS__)                        \
      RT_DISPATCH_FAIL(dtype, name);                                   \
    }                                                                  \
  }()
