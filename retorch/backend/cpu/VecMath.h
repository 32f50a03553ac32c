// Vectorized float32/float64 math over contiguous spans: SLEEF's 1-ULP AVX-512 or AVX2 functions,
// whichever cpu_isa() allows, nothing otherwise (callers keep their scalar loops as the fallback).
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace retorch::cpu {

/// The elementwise functions with a vector form (see Note [Vectorized math]).
enum class VecFn : uint8_t {
  kNone, kExp, kExp2, kExpm1, kLog, kLog2, kLog10, kLog1p, kSin, kCos, kTan, kAsin, kAcos,
  kAtan, kSinh, kCosh, kTanh, kErf, kErfc, kSigmoid, kSilu,
  kGelu,      // x/2 * (1 + erf(x/sqrt(2)))
  kGeluTanh,  // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
  kErfFast,   // erf within 7 float ulp (GELU's rational erf, Note [Rational tanh]); double: kErf
};

// The functions both vector forms take from SLEEF (u10: at most 1 ULP), as X(enum, SLEEF name
// stem); the .cpp files paste in the width and ISA suffix.
#define RT_SLEEF_UNARY(X)                                                                      \
  X(kExp, exp) X(kExp2, exp2) X(kExpm1, expm1) X(kLog, log) X(kLog2, log2) X(kLog10, log10)     \
  X(kLog1p, log1p) X(kSin, sin) X(kCos, cos) X(kTan, tan) X(kAsin, asin) X(kAcos, acos)         \
  X(kAtan, atan) X(kSinh, sinh) X(kCosh, cosh) X(kErf, erf)
// erfc comes as u15 only (at most 1.5 ULP): its cases are spelled out.

// Note [Rational tanh]
// float32 tanh is x * P(x^2) / Q(x^2), P and Q of degrees 5 and 4 in x^2, fitted for least
// maximum relative error on |x| <= kTanhSaturate by tools/mathfit/fit_odd_rational.py (1.3e-9
// in exact arithmetic; evaluated in float with FMAs, every float in [0, 16] is within 5 ulp of
// the correctly rounded tanh, 94% exact). x is clamped to [-kTanhSaturate, kTanhSaturate], the
// smallest float whose tanh rounds to 1, and the result to [-1, 1]: the rational evaluates to
// at least 1 at the clamp, so from there on the result is exactly +-1. The form is odd, so no
// absolute value and no sign to put back: on AVX-512 15 vector instructions (vrangeps does each
// clamp in one, vfixupimmps keeps a NaN a NaN), one of them a division, where the |x| form with
// a saturation mask took 18 (tanh_ of 1M floats 131 -> 122 us here; the exp-based form before
// it, about twice that).
// The same formula on AVX2, AVX-512 and in the compiler's generated code (CppPrelude.cpp spells
// the same constants), so the same bits. GELU's erf is the same shape (degrees 5 and 5, P(0)
// the float nearest 2/sqrt(pi): within 7 ulp, so 1 + erf within ~4e-7 absolute; the erf
// operator keeps SLEEF's 1-ulp erf, bit for bit PyTorch's).
inline constexpr float kTanhP[6] = {1.0f, 0.13681948f, 0.003870851f, 2.8056835e-05f,
                                    3.0697628e-08f, -1.2281461e-11f};
inline constexpr float kTanhQ[5] = {1.0f, 0.47015283f, 0.027255138f, 0.0003943025f,
                                    1.2907345e-06f};
inline constexpr float kTanhSaturate = 9.010914f;
inline constexpr float kErfP[6] = {1.1283792f, 0.17392534f, 0.05065569f, 0.003090119f,
                                   0.00027514473f, 2.243263e-06f};
inline constexpr float kErfQ[6] = {1.0f, 0.48747197f, 0.107377656f, 0.0136022f,
                                   0.0010095165f, 3.959518e-05f};
// One float past the smallest whose erf rounds to 1: the rational evaluates to 0.99999994 there,
// and to at least 1 here.
inline constexpr float kErfSaturate = 3.9192061f;

// Note [Vector exp] (VecMathAvx2.h): results past kExpHi are inf, below kExpLo 0; kExpShift
// (1.5 * 2^23) rounds x * log2(e) to an integer in the low mantissa bits.
inline constexpr float kExpHi = 88.72283f, kExpLo = -87.33654f, kExpShift = 12582912.0f;

/// out[i] = fn(in[i]) for i < n (in == out allowed). Returns false, writing nothing, when fn has
/// no vector form or the CPU lacks AVX2/FMA.
bool vec_unary(VecFn fn, const float* in, float* out, int64_t n);
bool vec_unary(VecFn fn, const double* in, double* out, int64_t n);

/// The two-argument functions with a vector form: SLEEF's, as PyTorch's CPU kernels use (fmod
/// exact, hypot within 0.5 ULP, atan2 and pow within 1 ULP), so the same bits as PyTorch.
enum class VecFn2 : uint8_t { kFmod, kAtan2, kHypot, kPow };
// X(enum, SLEEF name stem, accuracy suffix): the .cpp files paste in width and ISA.
#define RT_SLEEF_BINARY(X) X(kFmod, fmod, _) X(kAtan2, atan2, _u10) X(kHypot, hypot, _u05) \
  X(kPow, pow, _u10)

// One case of vec_binary's switch: the .cpp files define RT_MAP2 (their mapper over two inputs),
// RT_SLEEF_W (SLEEF's width-and-type stem: f8, d4, f16, d8) and RT_SLEEF_ISA (avx2, avx512f).
#define RT_SLEEF_PASTE(F, W, U, ISA) Sleef_##F##W##U##ISA
#define RT_SLEEF_NAME(F, W, U, ISA) RT_SLEEF_PASTE(F, W, U, ISA)
#define RT_SLEEF_BINARY_CASE(E, F, U)                                                          \
  case VecFn2::E:                                                                              \
    RT_MAP2([](auto x, auto y) { return RT_SLEEF_NAME(F, RT_SLEEF_W, U, RT_SLEEF_ISA)(x, y); }, \
            a, b, out, n);                                                                     \
    return true;

/// out[i] = fn(a[i], b[i]) for i < n (out may alias a or b); false, writing nothing, as
/// vec_unary.
bool vec_binary(VecFn2 fn, const float* a, const float* b, float* out, int64_t n);
bool vec_binary(VecFn2 fn, const double* a, const double* b, double* out, int64_t n);

/// out[i] = finish(in[i], t[i]) over a contiguous float/double span, t = in * scale taken through
/// the vector functions `fns` in turn, an L1-sized chunk at a time (softplus: exp then log1p;
/// elu: expm1). A chunk where no element satisfies `needs` skips t and the vector functions (elu
/// on positive values): finish then gets the input as t, and must not depend on it. False,
/// writing nothing, where a vector function is missing or T is another type. in == out is
/// allowed: each element is read before it is written.
template <typename T, size_t kFns, typename Finish, typename Needs = std::nullptr_t>
bool vec_chunked(const VecFn (&fns)[kFns], const T* in, T* out, int64_t n, T scale,
                 const Finish& finish, const Needs& needs = nullptr) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    constexpr int64_t kChunk = 512;
    alignas(64) T t[kChunk];
    T probe = 0;
    for (VecFn f : fns)
      if (!vec_unary(f, &probe, &probe, 0)) return false;  // no vector form: nothing written
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t m = n - i0 < kChunk ? n - i0 : kChunk;
      int any = 1;
      if constexpr (!std::is_null_pointer_v<Needs>) {
        any = 0;  // an int count vectorizes, a bool |= did not
        for (int64_t j = 0; j < m; ++j) any += needs(in[i0 + j]) ? 1 : 0;
      }
      if (!any) {  // finish must not depend on t here: it gets the input twice
        for (int64_t j = 0; j < m; ++j) out[i0 + j] = finish(in[i0 + j], in[i0 + j]);
        continue;
      }
      for (int64_t j = 0; j < m; ++j) t[j] = in[i0 + j] * scale;
      for (VecFn f : fns) vec_unary(f, t, t, m);
      for (int64_t j = 0; j < m; ++j) out[i0 + j] = finish(in[i0 + j], t[j]);
    }
    return true;
  } else {
    return false;
  }
}

/// out[i] = exp(in[i] - shift) and returns the sum of out (softmax rows); scalar fallback
/// inside, so it always succeeds.
float vec_exp_shift_sum(const float* in, float shift, float* out, int64_t n);

// The lanes and block of Note [Float sum accumulation] (ReduceOps.cpp): 16 double lanes in two
// vectors, fed by float sums of blocks of 64 elements.
typedef double SumLanes __attribute__((vector_size(64)));
constexpr int64_t kSumBlock = 64;

namespace vec512 {
// The AVX-512 forms (VecMathAvx512.cpp); callers check cpu_isa() first.
bool vec_unary_avx512(VecFn fn, const float* in, float* out, int64_t n);
bool vec_unary_avx512(VecFn fn, const double* in, double* out, int64_t n);
bool vec_binary_avx512(VecFn2 fn, const float* a, const float* b, float* out, int64_t n);
bool vec_binary_avx512(VecFn2 fn, const double* a, const double* b, double* out, int64_t n);
float vec_exp_shift_sum_avx512(const float* in, float shift, float* out, int64_t n);
// The widening block sums of Note [Float sum accumulation] (ReduceOps.cpp) for float16 or (bf16)
// bfloat16 bits x, the same adds in the same order as sum_quads over the widened floats;
// returns the count summed, a multiple of kSumBlock.
int64_t sum_quads16_avx512(const uint16_t* x, int64_t n, bool bf16, SumLanes& lo, SumLanes& hi);
bool vec_avx512_compiled();
}  // namespace vec512

/// True when the AVX-512 forms may run (compiled in, and cpu_isa() allows them).
bool vec_avx512();

/// The maximum of x[0..n) (-inf when n == 0); NaN if any element is NaN, like a scalar max.
float vec_max(const float* x, int64_t n);

}  // namespace retorch::cpu
