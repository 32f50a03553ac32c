// Vectorized float32/float64 math over contiguous spans: SLEEF's 1-ULP AVX2 functions when the
// CPU has AVX2+FMA, nothing otherwise (callers keep their scalar loops as the fallback).
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

/// out[i] = fn(in[i]) for i < n (in == out allowed). Returns false, writing nothing, when fn has
/// no vector form or the CPU lacks AVX2/FMA.
bool vec_unary(VecFn fn, const float* in, float* out, int64_t n);
bool vec_unary(VecFn fn, const double* in, double* out, int64_t n);

/// out[i] = exp(in[i] - shift) and returns the sum of out (softmax rows); scalar fallback
/// inside, so it always succeeds.
float vec_exp_shift_sum(const float* in, float shift, float* out, int64_t n);

/// The maximum of x[0..n) (-inf when n == 0); NaN if any element is NaN, like a scalar max.
float vec_max(const float* x, int64_t n);

}  // namespace retorch::cpu
