// The prelude of every generated C++ source: loads and stores of each dtype and the rt_* math
// the emitter table calls, written as scalar code that `omp simd` loops vectorize.
#include "retorch/compiler/CppCodegen.h"

#include <cstdio>
#include <string>

#include "retorch/backend/cpu/VecMath.h"

namespace retorch::compiler {

// Note [Generated math]
// Generated kernels vectorize scalar code with `#pragma omp simd`. exp, tanh and sigmoid of
// float use the formulas of backend/cpu/VecMathAvx2.h (exp about 1 ulp, tanh within 5: Note
// [Rational tanh]; memory-bound chains need them: glibc's vector tanhf costs ~1 ns per element).
// Every other function of float or double is glibc's libmvec, declared `omp declare simd` so
// that the vectorizer calls its AVX2 or AVX-512 variants (within 4 ulp). 16-bit floats are
// widened on load and rounded (to nearest even) on store; everything between is float32.
namespace {

// "static constexpr float name[] = {1.0f, ...};" with every float written to round-trip.
std::string float_array(const char* name, const float* v, size_t n) {
  std::string out = std::string("static constexpr float ") + name + "[] = {";
  for (size_t i = 0; i < n; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%#.9gf", i ? ", " : "", double(v[i]));
    out += buf;
  }
  return out + "};\n";
}

const char* prelude_text() {
  return R"PRELUDE(#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#define RT_INLINE __attribute__((always_inline)) inline

extern "C" {
int omp_get_num_threads(void);  // (a row kernel's per-thread column sums)
int omp_get_thread_num(void);
#pragma omp declare simd notinbranch
float logf(float) __THROW;
#pragma omp declare simd notinbranch
double log(double) __THROW;
#pragma omp declare simd notinbranch
double exp(double) __THROW;
#pragma omp declare simd notinbranch
double tanh(double) __THROW;
#pragma omp declare simd notinbranch
float sinf(float) __THROW;
#pragma omp declare simd notinbranch
double sin(double) __THROW;
#pragma omp declare simd notinbranch
float cosf(float) __THROW;
#pragma omp declare simd notinbranch
double cos(double) __THROW;
#pragma omp declare simd notinbranch
float erff(float) __THROW;
#pragma omp declare simd notinbranch
double erf(double) __THROW;
#pragma omp declare simd notinbranch
float erfcf(float) __THROW;
#pragma omp declare simd notinbranch
double erfc(double) __THROW;
#pragma omp declare simd notinbranch
float log1pf(float) __THROW;
#pragma omp declare simd notinbranch
double log1p(double) __THROW;
#pragma omp declare simd notinbranch
float expm1f(float) __THROW;
#pragma omp declare simd notinbranch
double expm1(double) __THROW;
#pragma omp declare simd notinbranch
float exp2f(float) __THROW;
#pragma omp declare simd notinbranch
double exp2(double) __THROW;
#pragma omp declare simd notinbranch
float log2f(float) __THROW;
#pragma omp declare simd notinbranch
double log2(double) __THROW;
#pragma omp declare simd notinbranch
float log10f(float) __THROW;
#pragma omp declare simd notinbranch
double log10(double) __THROW;
#pragma omp declare simd notinbranch
float tanf(float) __THROW;
#pragma omp declare simd notinbranch
double tan(double) __THROW;
#pragma omp declare simd notinbranch
float atanf(float) __THROW;
#pragma omp declare simd notinbranch
double atan(double) __THROW;
#pragma omp declare simd notinbranch
float sinhf(float) __THROW;
#pragma omp declare simd notinbranch
double sinh(double) __THROW;
#pragma omp declare simd notinbranch
float coshf(float) __THROW;
#pragma omp declare simd notinbranch
double cosh(double) __THROW;
#pragma omp declare simd notinbranch
float asinf(float) __THROW;
#pragma omp declare simd notinbranch
double asin(double) __THROW;
#pragma omp declare simd notinbranch
float acosf(float) __THROW;
#pragma omp declare simd notinbranch
double acos(double) __THROW;
#pragma omp declare simd notinbranch
float powf(float, float) __THROW;
#pragma omp declare simd notinbranch
double pow(double, double) __THROW;
#pragma omp declare simd notinbranch
float atan2f(float, float) __THROW;
#pragma omp declare simd notinbranch
double atan2(double, double) __THROW;
}

// Loads widen to the compute type; stores round from it.
RT_INLINE float rt_load(uint16_t b) {  // bfloat16 bits
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
RT_INLINE float rt_load(_Float16 h) { return float(h); }
RT_INLINE float rt_load(float x) { return x; }
RT_INLINE double rt_load(double x) { return x; }
RT_INLINE bool rt_load(bool x) { return x; }
RT_INLINE int64_t rt_load(int64_t x) { return x; }
RT_INLINE uint16_t rt_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return f != f ? uint16_t(0x7fc0) : uint16_t(r);
}

template <typename T> RT_INLINE T rt_sqrt(T x) { return std::sqrt(x); }
template <typename T> RT_INLINE T rt_rsqrt(T x) { return T(1) / std::sqrt(x); }
template <typename T> RT_INLINE T rt_floor(T x) { return std::floor(x); }
template <typename T> RT_INLINE T rt_ceil(T x) { return std::ceil(x); }
template <typename T> RT_INLINE T rt_trunc(T x) { return std::trunc(x); }
template <typename T> RT_INLINE T rt_round(T x) { return std::nearbyint(x); }

// backend/cpu/VecMathAvx2.h's Note [Vector exp], the same steps: no clamp (out-of-range
// results are replaced, NaN runs through), n from the bits of x * log2(e) + 1.5 * 2^23.
// rt_exp_parts returns p ~ e^r for x = n ln2 + r and sets *scale = 2^(n + bias - 127).
RT_INLINE float rt_exp_parts(float x, uint32_t bias, float* scale) {
  float t = x * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  uint32_t bits;
  std::memcpy(&bits, &t, 4);
  bits = (bits + bias) << 23;
  std::memcpy(scale, &bits, 4);
  return p;
}
RT_INLINE float rt_exp(float x) {
  float scale;  // 2^(n - 1), doubled after: n = 128 (x near 88.7) stays finite
  float y = rt_exp_parts(x, 126u, &scale) * scale * 2.0f;
  y = x < -87.33654f ? 0.0f : y;
  return x > 88.72283f ? INFINITY : y;
}
RT_INLINE double rt_exp(double x) { return exp(x); }
// exp of a value minus its row's maximum (softmax, log_softmax): the argument is <= 0 or NaN,
// so the overflow check goes and 2^n is built whole (n >= -126 where the result is not 0).
// Two of rt_exp's ~20 vector operations fewer in a loop that bounds softmax's row kernel.
RT_INLINE float rt_exp_shifted(float x) {
  float scale;
  const float p = rt_exp_parts(x, 127u, &scale);
  return x < -87.33654f ? 0.0f : p * scale;
}
RT_INLINE double rt_exp_shifted(double x) { return exp(x); }

// backend/cpu/VecMath.h's Note [Rational tanh]: x P(x^2) / Q(x^2) with x clamped to [-sat, sat]
// and the result to [-1, 1]; the coefficient arrays (rt_tanh_p, ...) are VecMath.h's, written in
// by cpp_prelude(). Spelled on |x| with the sign put back, the same values: GCC turns fabs,
// copysign and one-sided clamps into single vector instructions, while two-sided clamps that
// keep NaN's ternary semantics became compares and blends (compiled tanh chain 0.20 ms, not 0.155).
template <int NP, int NQ>
RT_INLINE float rt_odd_rational(float x, const float (&P)[NP], const float (&Q)[NQ], float sat) {
  float ax = std::fabs(x);
  float c = ax > sat ? sat : ax;
  float s = c * c;
  float p = P[NP - 1];
  for (int k = NP - 2; k >= 0; --k) p = p * s + P[k];
  float q = Q[NQ - 1];
  for (int k = NQ - 2; k >= 0; --k) q = q * s + Q[k];
  float y = (c * p) / q;
  y = y > 1.0f ? 1.0f : y;  // NaN fails the comparison and stays
  return std::copysign(y, x);
}
@ODD_RATIONAL_CONSTANTS@
RT_INLINE float rt_tanh(float x) { return rt_odd_rational(x, rt_tanh_p, rt_tanh_q, rt_tanh_sat); }
RT_INLINE double rt_tanh(double x) { return tanh(x); }

RT_INLINE float rt_log(float x) { return logf(x); }
RT_INLINE double rt_log(double x) { return log(x); }
RT_INLINE float rt_sin(float x) { return sinf(x); }
RT_INLINE double rt_sin(double x) { return sin(x); }
RT_INLINE float rt_cos(float x) { return cosf(x); }
RT_INLINE double rt_cos(double x) { return cos(x); }
RT_INLINE float rt_erf(float x) { return erff(x); }
RT_INLINE double rt_erf(double x) { return erf(x); }
RT_INLINE float rt_erfc(float x) { return erfcf(x); }
RT_INLINE double rt_erfc(double x) { return erfc(x); }
RT_INLINE float rt_log1p(float x) { return log1pf(x); }
RT_INLINE double rt_log1p(double x) { return log1p(x); }
RT_INLINE float rt_expm1(float x) { return expm1f(x); }
RT_INLINE double rt_expm1(double x) { return expm1(x); }
RT_INLINE float rt_exp2(float x) { return exp2f(x); }
RT_INLINE double rt_exp2(double x) { return exp2(x); }
RT_INLINE float rt_log2(float x) { return log2f(x); }
RT_INLINE double rt_log2(double x) { return log2(x); }
RT_INLINE float rt_log10(float x) { return log10f(x); }
RT_INLINE double rt_log10(double x) { return log10(x); }
RT_INLINE float rt_tan(float x) { return tanf(x); }
RT_INLINE double rt_tan(double x) { return tan(x); }
RT_INLINE float rt_atan(float x) { return atanf(x); }
RT_INLINE double rt_atan(double x) { return atan(x); }
RT_INLINE float rt_sinh(float x) { return sinhf(x); }
RT_INLINE double rt_sinh(double x) { return sinh(x); }
RT_INLINE float rt_cosh(float x) { return coshf(x); }
RT_INLINE double rt_cosh(double x) { return cosh(x); }
RT_INLINE float rt_asin(float x) { return asinf(x); }
RT_INLINE double rt_asin(double x) { return asin(x); }
RT_INLINE float rt_acos(float x) { return acosf(x); }
RT_INLINE double rt_acos(double x) { return acos(x); }
RT_INLINE float rt_pow(float x, float y) { return powf(x, y); }
RT_INLINE double rt_pow(double x, double y) { return pow(x, y); }
RT_INLINE float rt_atan2(float x, float y) { return atan2f(x, y); }
RT_INLINE double rt_atan2(double x, double y) { return atan2(x, y); }
// erf for float GELU only (VecMathAvx2.h's erf8_fast, within 7 ulp, Note [Rational tanh]);
// the erf op itself keeps libmvec's erff.
RT_INLINE float rt_erf_fast(float x) {
  return rt_odd_rational(x, rt_erf_p, rt_erf_q, rt_erf_sat);
}
// GELU's erf, forward and derivative (rt_gelu_grad): the rational one for float, as eager's
// gelu and gelu_backward (libmvec's erff in the derivative was a fifth of a compiled
// layer_norm + gelu row's forward + backward).
RT_INLINE float rt_gelu_erf(float x) { return rt_erf_fast(x); }
RT_INLINE double rt_gelu_erf(double x) { return rt_erf(x); }
RT_INLINE float rt_gelu(float x) {
  return 0.5f * x * (1.f + rt_gelu_erf(x * 0.70710678118654752440f));
}
RT_INLINE double rt_gelu(double x) {
  return 0.5 * x * (1.0 + rt_gelu_erf(x * 0.70710678118654752440));
}
)PRELUDE";
}

}  // namespace

// The functions both preludes share, written once over the target's rt_exp, rt_tanh and rt_erf.
const char* prelude_common() {
  return R"PRELUDE(
// Shared by the C++ and CUDA preludes (CppPrelude.cpp's prelude_common).
template <typename T> RT_INLINE T rt_max_nan(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <typename T> RT_INLINE T rt_min_nan(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <typename T> RT_INLINE T rt_relu(T x) { return x > T(0) ? x : (x != x ? x : T(0)); }
template <typename T> RT_INLINE T rt_abs(T x) { return x < T(0) ? -x : (x == T(0) ? T(0) : x); }
template <typename T> RT_INLINE T rt_sign(T x) { return T((x > T(0)) - (x < T(0))); }
template <typename T> RT_INLINE T rt_sigmoid(T x) { return T(1) / (T(1) + rt_exp(-x)); }
template <typename T> RT_INLINE T rt_silu(T x) { return x / (T(1) + rt_exp(-x)); }
template <typename T> RT_INLINE T rt_gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + rt_tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
}

// Derivatives used by backward kernels (PointwiseGrads.cpp).
template <typename T> RT_INLINE T rt_silu_grad(T x) {
  T s = rt_sigmoid(x);
  return s * (T(1) + x * (T(1) - s));
}
template <typename T> RT_INLINE T rt_gelu_grad(T x) {  // cdf + x * pdf
  T cdf = T(0.5) * (T(1) + rt_gelu_erf(x * T(0.70710678118654752440)));
  return cdf + x * rt_exp(T(-0.5) * x * x) * T(0.39894228040143267794);
}
template <typename T> RT_INLINE T rt_gelu_tanh_grad(T x) {
  const T k = T(0.79788456080286535588), c = T(0.044715);
  T t = rt_tanh(k * (x + c * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * c * x * x);
}
)PRELUDE";
}

const char* cpp_prelude() {
  static const std::string text = [] {
    using namespace retorch::cpu;
    std::string constants = float_array("rt_tanh_p", kTanhP, 6) +
                            float_array("rt_tanh_q", kTanhQ, 5) +
                            float_array("rt_erf_p", kErfP, 6) + float_array("rt_erf_q", kErfQ, 6);
    char sat[96];
    std::snprintf(sat, sizeof sat,
                  "static constexpr float rt_tanh_sat = %#.9gf, rt_erf_sat = %#.9gf;\n",
                  double(kTanhSaturate), double(kErfSaturate));
    std::string t = std::string(prelude_text()) + prelude_common();
    const std::string mark = "@ODD_RATIONAL_CONSTANTS@\n";
    return t.replace(t.find(mark), mark.size(), constants + sat);
  }();
  return text.c_str();
}

}  // namespace retorch::compiler
