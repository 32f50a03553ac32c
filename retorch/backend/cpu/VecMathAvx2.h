// AVX2/FMA building blocks of the vector math (exp, tanh, sigmoid on 8 floats), for the files
// compiled with AVX2 (VecMath.cpp always; others when the build targets AVX2).
#pragma once
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace retorch::cpu::avx2 {

/// exp for one float, written so that `omp simd` loops vectorize it: 2^n * p(r) with
/// r = x - n ln2 in [-ln2/2, ln2/2] and Cephes' degree-6 polynomial (about 1 ulp); NaN stays
/// NaN, x > 88.72 gives inf, x < -87.34 gives 0.
__attribute__((always_inline)) inline float exp_scalar(float x) {
  float c = std::min(std::max(x, -87.33654f), 88.72283f);  // NaN passes through
  float n = std::floor(c * 1.44269504088896341f + 0.5f);
  float r = c - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // (std::bit_cast, unlike memcpy, keeps the loop vectorizable)
  float y = p * std::bit_cast<float>((int32_t(n) + 127) << 23);
  // IEEE edges like exp8: under/overflow give 0/inf (so exp(-inf) is exactly 0).
  y = x < -87.33654f ? 0.0f : y;
  return x > 88.72283f ? INFINITY : y;
}

/// exp_scalar on 8 floats, with IEEE edges: NaN stays NaN, x > 88.72 gives inf, x < -87.34
/// gives 0 (so -inf, e.g. a masked attention score, becomes exactly 0).
inline __m256 exp8(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.72283f), lo = _mm256_set1_ps(-87.33654f);
  __m256 c = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(c, _mm256_set1_ps(1.44269504088896341f),
                                             _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), c);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// 1 / (1 + exp(-x)) on 8 floats.
inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/// tanh on 8 floats: the odd Taylor series through x^15 for |x| < 0.5 (truncation below 1e-8
/// relative there), 1 - 2 / (exp(2|x|) + 1) with the sign of x above (no cancellation: the
/// result is at least 0.46), |x| clamped at 9 where tanh rounds to 1.
inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  __m256 ax = _mm256_andnot_ps(sign, x);
  __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-929569.f / 638512875.f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(21844.f / 6081075.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1382.f / 155925.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(62.f / 2835.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-17.f / 315.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.f / 15.f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.f / 3.f));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), x, x);
  __m256 e = exp8(_mm256_add_ps(_mm256_min_ps(ax, _mm256_set1_ps(9.f)),
                                _mm256_min_ps(ax, _mm256_set1_ps(9.f))));
  const __m256 one = _mm256_set1_ps(1.f);
  __m256 big = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, one)));
  // Exactly +-1 from 9 on (tanh(9) rounds to 1 in float), so 1 + tanh(-inf) is 0 like libm's.
  big = _mm256_blendv_ps(big, one, _mm256_cmp_ps(ax, _mm256_set1_ps(9.f), _CMP_GE_OQ));
  big = _mm256_or_ps(big, _mm256_and_ps(sign, x));
  __m256 y = _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// erf on 8 floats to about 1.5e-7 absolute (Abramowitz & Stegun 7.1.26: 1 - poly(t) e^{-x^2},
/// t = 1 / (1 + 0.3275911 |x|), odd extension). Absolute, not relative, accuracy: meant for
/// 1 + erf(x) inside GELU, not for the erf operator (which keeps SLEEF's 1-ULP erf).
inline __m256 erf8_abs(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.f), one = _mm256_set1_ps(1.f);
  __m256 ax = _mm256_andnot_ps(sign, x);
  __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), ax, one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(ax, ax)));
  __m256 y = _mm256_fnmadd_ps(p, e, one);
  y = _mm256_or_ps(y, _mm256_and_ps(sign, x));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// The sum of the 8 lanes.
inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(_mm_hadd_ps(s, s));
}

}  // namespace retorch::cpu::avx2
#endif
