// Vectorized float32/float64 math over contiguous spans: SLEEF's 1-ULP AVX-512 or AVX2 functions,
// whichever cpu_isa() allows, nothing otherwise (callers keep their scalar loops as the fallback).
#pragma once
#include <cstdint>

namespace retorch::cpu {

/// The elementwise functions with a vector form (see Note [Vectorized math]).
enum class VecFn : uint8_t {
  kNone, kExp, kExp2, kExpm1, kLog, kLog2, kLog10, kLog1p, kSin, kCos, kTan, kAsin, kAcos,
  kAtan, kSinh, kCosh, kTanh, kErf, kSigmoid, kSilu,
  kGelu,      // x/2 * (1 + erf(x/sqrt(2)))
  kGeluTanh,  // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
};

// The functions both vector forms take from SLEEF (u10: at most 1 ULP), as X(enum, SLEEF name
// stem); the .cpp files paste in the width and ISA suffix.
#define RT_SLEEF_UNARY(X)                                                                      \
  X(kExp, exp) X(kExp2, exp2) X(kExpm1, expm1) X(kLog, log) X(kLog2, log2) X(kLog10, log10)     \
  X(kLog1p, log1p) X(kSin, sin) X(kCos, cos) X(kTan, tan) X(kAsin, asin) X(kAcos, acos)         \
  X(kAtan, atan) X(kSinh, sinh) X(kCosh, cosh) X(kErf, erf)

/// out[i] = fn(in[i]) for i < n (in == out allowed). Returns false, writing nothing, when fn has
/// no vector form or the CPU lacks AVX2/FMA.
bool vec_unary(VecFn fn, const float* in, float* out, int64_t n);
bool vec_unary(VecFn fn, const double* in, double* out, int64_t n);

/// out[i] = exp(in[i] - shift) and returns the sum of out (softmax rows); scalar fallback
/// inside, so it always succeeds.
float vec_exp_shift_sum(const float* in, float shift, float* out, int64_t n);

namespace vec512 {
// The AVX-512 forms (VecMathAvx512.cpp); callers check cpu_isa() first.
bool vec_unary_avx512(VecFn fn, const float* in, float* out, int64_t n);
bool vec_unary_avx512(VecFn fn, const double* in, double* out, int64_t n);
float vec_exp_shift_sum_avx512(const float* in, float shift, float* out, int64_t n);
// lane[k] += float(x[i]) for i < m, i % 32 == k, over the first m = n - n % 32 elements of
// float16 or (bf16) bfloat16 bits x; returns m.
int64_t sum_lanes16_avx512(const uint16_t* x, int64_t n, bool bf16, double* lane);
bool vec_avx512_compiled();
}  // namespace vec512

/// True when the AVX-512 forms may run (compiled in, and cpu_isa() allows them).
bool vec_avx512();

/// The maximum of x[0..n) (-inf when n == 0); NaN if any element is NaN, like a scalar max.
float vec_max(const float* x, int64_t n);

}  // namespace retorch::cpu
