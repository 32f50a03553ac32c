// SLEEF-backed vector math for the elementwise kernels (AVX2/FMA or AVX-512, chosen at run time).
#include "retorch/backend/cpu/VecMath.h"

#include <cmath>
#include <cstring>

#if defined(RETORCH_HAVE_SLEEF) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <sleef.h>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/VecMathAvx2.h"
#define RT_VEC_MATH 1
#endif

namespace retorch::cpu {

bool vec_avx512() {
  static const bool compiled = vec512::vec_avx512_compiled();
  return compiled && cpu_isa() >= CpuIsa::kAvx512;
}

// Note [Vectorized math]
// exp, log, erf, sin, ... on contiguous float32/float64 spans run SLEEF's u10 (max 1.0 ULP
// error) AVX2 functions, 8 floats or 4 doubles per call, instead of one libm call per element;
// these match PyTorch bit for bit (its CPU kernels use the same SLEEF functions). float32 tanh,
// sigmoid, SiLU and the softmax exponentials use the cheaper exp8/tanh8 of VecMathAvx2.h (a few
// ULP, within PyTorch's float32 tolerances; the oracle sweep checks them): SLEEF's tanh costs
// ~23 ns per 8 floats, the rational tanh8 about 4 (Note [Rational tanh]). float32 GELU uses
// erf8_fast (the same rational shape) or tanh8 for approximate='tanh'. The file is compiled
// with -mavx2 -mfma whatever the rest of the build targets and checks the CPU at run time, so
// every build (including the sanitizer one) runs the same vector code where the hardware has
// it. Where cpu_isa() allows AVX-512, VecMathAvx512.cpp runs the same formulas 16 floats at a
// time (SLEEF's avx512f functions, exp16/tanh16/...: the same bits as the AVX2 path), tails as
// masked steps.

#ifdef RT_VEC_MATH
namespace {

bool have_avx2() { return cpu_isa() >= CpuIsa::kAvx2; }

using avx2::sigmoid8;
using avx2::tanh8;
__m256 silu8(__m256 x) { return _mm256_mul_ps(x, sigmoid8(x)); }
__m256 gelu8(__m256 x) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f);
  __m256 e = avx2::erf8_fast(_mm256_mul_ps(x, _mm256_set1_ps(float(M_SQRT1_2))));
  return _mm256_mul_ps(_mm256_mul_ps(x, half), _mm256_add_ps(one, e));
}
__m256 gelu_tanh8(__m256 x) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f);
  __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  __m256 inner = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f),
                               _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
  return _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, tanh8(inner)));
}
__m256d sigmoid4(__m256d x) {
  const __m256d one = _mm256_set1_pd(1.0);
  __m256d e = Sleef_expd4_u10avx2(_mm256_sub_pd(_mm256_setzero_pd(), x));
  return _mm256_div_pd(one, _mm256_add_pd(one, e));
}
__m256d silu4(__m256d x) { return _mm256_mul_pd(x, sigmoid4(x)); }
__m256d gelu4(__m256d x) {
  const __m256d half = _mm256_set1_pd(0.5), one = _mm256_set1_pd(1.0);
  __m256d e = Sleef_erfd4_u10avx2(_mm256_mul_pd(x, _mm256_set1_pd(M_SQRT1_2)));
  return _mm256_mul_pd(_mm256_mul_pd(x, half), _mm256_add_pd(one, e));
}

// Applies f to 8 floats at a time; the tail goes through a zero-padded lane buffer.
template <typename F>
void map8(const F& f, const float* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(in + i)));
  if (i < n) {
    alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(buf, in + i, size_t(n - i) * sizeof(float));
    _mm256_store_ps(buf, f(_mm256_load_ps(buf)));
    std::memcpy(out + i, buf, size_t(n - i) * sizeof(float));
  }
}

template <typename F>
void map4(const F& f, const double* in, double* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(out + i, f(_mm256_loadu_pd(in + i)));
  if (i < n) {
    alignas(32) double buf[4] = {0, 0, 0, 0};
    std::memcpy(buf, in + i, size_t(n - i) * sizeof(double));
    _mm256_store_pd(buf, f(_mm256_load_pd(buf)));
    std::memcpy(out + i, buf, size_t(n - i) * sizeof(double));
  }
}

// map8/map4 for two inputs.
template <typename F>
void map8x2(const F& f, const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    alignas(32) float x[8] = {0, 0, 0, 0, 0, 0, 0, 0}, y[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    std::memcpy(x, a + i, size_t(n - i) * sizeof(float));
    std::memcpy(y, b + i, size_t(n - i) * sizeof(float));
    _mm256_store_ps(x, f(_mm256_load_ps(x), _mm256_load_ps(y)));
    std::memcpy(out + i, x, size_t(n - i) * sizeof(float));
  }
}

template <typename F>
void map4x2(const F& f, const double* a, const double* b, double* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(out + i, f(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i)));
  if (i < n) {
    alignas(32) double x[4] = {0, 0, 0, 0}, y[4] = {1, 1, 1, 1};
    std::memcpy(x, a + i, size_t(n - i) * sizeof(double));
    std::memcpy(y, b + i, size_t(n - i) * sizeof(double));
    _mm256_store_pd(x, f(_mm256_load_pd(x), _mm256_load_pd(y)));
    std::memcpy(out + i, x, size_t(n - i) * sizeof(double));
  }
}

}  // namespace

#define RT_SLEEF_ISA avx2
bool vec_binary(VecFn2 fn, const float* a, const float* b, float* out, int64_t n) {
  if (vec_avx512()) return vec512::vec_binary_avx512(fn, a, b, out, n);
  if (!have_avx2()) return false;
#define RT_MAP2 map8x2
#define RT_SLEEF_W f8
  switch (fn) { RT_SLEEF_BINARY(RT_SLEEF_BINARY_CASE) }
#undef RT_SLEEF_W
#undef RT_MAP2
  return false;
}

bool vec_binary(VecFn2 fn, const double* a, const double* b, double* out, int64_t n) {
  if (vec_avx512()) return vec512::vec_binary_avx512(fn, a, b, out, n);
  if (!have_avx2()) return false;
#define RT_MAP2 map4x2
#define RT_SLEEF_W d4
  switch (fn) { RT_SLEEF_BINARY(RT_SLEEF_BINARY_CASE) }
#undef RT_SLEEF_W
#undef RT_MAP2
  return false;
}
#undef RT_SLEEF_ISA

#define RT_VEC_CASE(E, FN)                                        \
  case VecFn::E:                                                  \
    MAP([](auto x) { return FN(x); }, in, out, n);                \
    return true;

bool vec_unary(VecFn fn, const float* in, float* out, int64_t n) {
  if (vec_avx512()) return vec512::vec_unary_avx512(fn, in, out, n);
  if (!have_avx2()) return false;
#define MAP map8
  switch (fn) {
#define RT_SLEEF_CASE(E, F) RT_VEC_CASE(E, Sleef_##F##f8_u10avx2)
    RT_SLEEF_UNARY(RT_SLEEF_CASE)
#undef RT_SLEEF_CASE
    RT_VEC_CASE(kTanh, tanh8)
    RT_VEC_CASE(kErfc, Sleef_erfcf8_u15avx2)
    RT_VEC_CASE(kSigmoid, sigmoid8)
    RT_VEC_CASE(kSilu, silu8)
    RT_VEC_CASE(kGelu, gelu8)
    RT_VEC_CASE(kGeluTanh, gelu_tanh8)
    RT_VEC_CASE(kErfFast, avx2::erf8_fast)
    case VecFn::kNone:
      break;
  }
#undef MAP
  return false;
}

bool vec_unary(VecFn fn, const double* in, double* out, int64_t n) {
  if (vec_avx512()) return vec512::vec_unary_avx512(fn, in, out, n);
  if (!have_avx2()) return false;
#define MAP map4
  switch (fn) {
#define RT_SLEEF_CASE(E, F) RT_VEC_CASE(E, Sleef_##F##d4_u10avx2)
    RT_SLEEF_UNARY(RT_SLEEF_CASE)
#undef RT_SLEEF_CASE
    RT_VEC_CASE(kTanh, Sleef_tanhd4_u10avx2)
    RT_VEC_CASE(kErfc, Sleef_erfcd4_u15avx2)
    RT_VEC_CASE(kSigmoid, sigmoid4)
    RT_VEC_CASE(kSilu, silu4)
    RT_VEC_CASE(kGelu, gelu4)
    RT_VEC_CASE(kErfFast, Sleef_erfd4_u10avx2)
    case VecFn::kGeluTanh:  // double keeps the scalar formula
    case VecFn::kNone:
      break;
  }
#undef MAP
  return false;
}
#undef RT_VEC_CASE

float vec_exp_shift_sum(const float* in, float shift, float* out, int64_t n) {
  if (vec_avx512()) return vec512::vec_exp_shift_sum_avx512(in, shift, out, n);
  if (!have_avx2()) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += out[i] = std::exp(in[i] - shift);
    return s;
  }
  const __m256 sh = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 e = avx2::exp8(_mm256_sub_ps(_mm256_loadu_ps(in + i), sh));
    _mm256_storeu_ps(out + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float s = avx2::hsum8(acc);
  for (; i < n; ++i) s += out[i] = avx2::exp_scalar(in[i] - shift);
  return s;
}

float vec_max(const float* x, int64_t n) {
  if (!have_avx2()) {
    float r = -INFINITY;
    bool has_nan = false;
    for (int64_t i = 0; i < n; ++i) {
      has_nan = has_nan || std::isnan(x[i]);
      r = std::max(r, x[i]);
    }
    return has_nan ? NAN : r;
  }
  __m256 m = _mm256_set1_ps(-INFINITY), nan = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_loadu_ps(x + j);
    m = _mm256_max_ps(m, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
  float r = _mm_cvtss_f32(h);
  bool has_nan = _mm256_movemask_ps(nan) != 0;
  for (; j < n; ++j) {
    has_nan = has_nan || std::isnan(x[j]);
    r = std::max(r, x[j]);
  }
  return has_nan ? NAN : r;
}

#else  // no SLEEF or no AVX2 compiler support: callers use their scalar loops

bool vec_unary(VecFn, const float*, float*, int64_t) { return false; }
bool vec_unary(VecFn, const double*, double*, int64_t) { return false; }
bool vec_binary(VecFn2, const float*, const float*, float*, int64_t) { return false; }
bool vec_binary(VecFn2, const double*, const double*, double*, int64_t) { return false; }
float vec_exp_shift_sum(const float* in, float shift, float* out, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += out[i] = std::exp(in[i] - shift);
  return s;
}

float vec_max(const float* x, int64_t n) {
  float r = -INFINITY;
  bool has_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    has_nan = has_nan || std::isnan(x[i]);
    r = std::max(r, x[i]);
  }
  return has_nan ? NAN : r;
}

#endif

}  // namespace retorch::cpu
