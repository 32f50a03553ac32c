// float16/bfloat16 <-> float32 conversion of contiguous spans (AVX2/F16C when the CPU has them).
#pragma once
#include <cstdint>
#include <type_traits>

#include "retorch/core/Half.h"

namespace retorch::cpu {

// Note [16-bit float loops]
// Half and BFloat16 are storage types: kernels compute in float32 (opmath_t). Converting one
// element at a time costs a branchy scalar function per element (float_to_half is ~15
// instructions) and defeats vectorization of the loop around it, so the elementwise loops,
// the sums and the GEMM widen contiguous 16-bit spans a block at a time into a float32 buffer,
// run the float32 loop there, and narrow the result back. The conversions round to nearest
// even exactly like Half(float) and BFloat16(float), so results do not depend on the path (up to
// the payload bits of a half NaN: F16C keeps the float's top payload bits; a NaN stays a NaN).

/// Elements per widen/narrow block of the 16-bit loops: a multiple of 8, small enough that the
/// float32 buffers stay on the stack and in L1.
constexpr int64_t kConvertBlock = 256;

void to_float(const Half* in, float* out, int64_t n);
void to_float(const BFloat16* in, float* out, int64_t n);
void from_float(const float* in, Half* out, int64_t n);
void from_float(const float* in, BFloat16* out, int64_t n);

template <typename T>
constexpr bool is_float16_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

}  // namespace retorch::cpu
