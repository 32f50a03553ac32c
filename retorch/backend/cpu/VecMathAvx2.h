// AVX2/FMA building blocks of the vector math (exp, tanh, sigmoid on 8 floats), for the files
// compiled with AVX2 (VecMath.cpp always; others when the build targets AVX2).
#pragma once
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "retorch/backend/cpu/VecMath.h"

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

/// sign(x) * P(s) / Q(s) * |x| with s = x^2 and |x| clamped at sat, exactly +-1 from sat on
/// (Note [Rational tanh]); NaN stays NaN. NP and NQ count the coefficients, lowest first.
template <int NP, int NQ>
inline __m256 odd_rational8(__m256 x, const float (&P)[NP], const float (&Q)[NQ], float sat) {
  const __m256 sign = _mm256_set1_ps(-0.f), top = _mm256_set1_ps(sat);
  __m256 ax = _mm256_andnot_ps(sign, x);
  __m256 c = _mm256_min_ps(top, ax);  // the second operand when unordered: NaN passes through
  __m256 s = _mm256_mul_ps(c, c);
  __m256 p = _mm256_set1_ps(P[NP - 1]);
  for (int k = NP - 2; k >= 0; --k) p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(P[k]));
  __m256 q = _mm256_set1_ps(Q[NQ - 1]);
  for (int k = NQ - 2; k >= 0; --k) q = _mm256_fmadd_ps(q, s, _mm256_set1_ps(Q[k]));
  __m256 y = _mm256_div_ps(_mm256_mul_ps(c, p), q);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(1.f), _mm256_cmp_ps(ax, top, _CMP_GE_OQ));
  return _mm256_or_ps(y, _mm256_and_ps(sign, x));
}

/// tanh on 8 floats (Note [Rational tanh]); tanh(+-inf) is exactly +-1, so 1 + tanh(-inf) is 0.
inline __m256 tanh8(__m256 x) { return odd_rational8(x, kTanhP, kTanhQ, kTanhSaturate); }

/// erf on 8 floats within 7 ulp (Note [Rational tanh]): for 1 + erf(x) inside GELU, not for
/// the erf operator (which keeps SLEEF's 1-ULP erf).
inline __m256 erf8_fast(__m256 x) { return odd_rational8(x, kErfP, kErfQ, kErfSaturate); }

/// The sum of the 8 lanes.
inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(_mm_hadd_ps(s, s));
}

}  // namespace retorch::cpu::avx2
#endif
