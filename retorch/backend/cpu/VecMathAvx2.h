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

// Note [Vector exp]
// exp(x) = 2^n * p(r): n = round(x / ln2) read from the low mantissa bits of
// x * log2(e) + 1.5 * 2^23 (no float-to-int conversion), r = x - n ln2 (ln2 in two parts) in
// [-ln2/2, ln2/2], p Cephes' degree-6 polynomial (about 1 ulp). The scale is built as 2^(n-1)
// and the product doubled, so that n = 128 (x up to 88.72, where exp is still finite) needs no
// exponent field of 255; products past the float range overflow to inf by themselves. Out of
// range inputs are not clamped, only their results replaced: x > 88.72 gives inf, x < -87.34
// gives 0 (so -inf, e.g. a masked attention score, becomes exactly 0; results below ~1.8e-38
// flush to 0), and NaN runs through the arithmetic as NaN. The same steps in exp_scalar,
// exp8, VecMathAvx512.cpp's exp16 and the compiler's rt_exp (CppPrelude.cpp): the same bits.
// The constants kExpHi, kExpLo, kExpShift are in VecMath.h.

/// exp for one float (Note [Vector exp]), written so that `omp simd` loops vectorize it.
__attribute__((always_inline)) inline float exp_scalar(float x) {
  float t = x * 1.44269504088896341f + kExpShift;
  float n = t - kExpShift;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // (std::bit_cast, unlike memcpy, keeps the loop vectorizable)
  float y = p * std::bit_cast<float>((std::bit_cast<uint32_t>(t) + 126u) << 23) * 2.0f;
  y = x < kExpLo ? 0.0f : y;
  return x > kExpHi ? INFINITY : y;
}

/// exp_scalar on 8 floats (Note [Vector exp]).
inline __m256 exp8(__m256 x) {
  const __m256 shift = _mm256_set1_ps(kExpShift);
  __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), shift);
  __m256 n = _mm256_sub_ps(t, shift);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(126)), 23);
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(),
                       _mm256_cmp_ps(x, _mm256_set1_ps(kExpLo), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                          _mm256_cmp_ps(x, _mm256_set1_ps(kExpHi), _CMP_GT_OQ));
}

/// 1 / (1 + exp(-x)) on 8 floats.
inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/// x * P(s) / Q(s) with s = x^2, x clamped to [-sat, sat] and the result to [-1, 1], so exactly
/// +-1 from sat on (Note [Rational tanh]); NaN stays NaN. NP and NQ count the coefficients,
/// lowest first.
template <int NP, int NQ>
inline __m256 odd_rational8(__m256 x, const float (&P)[NP], const float (&Q)[NQ], float sat) {
  const __m256 top = _mm256_set1_ps(sat), one = _mm256_set1_ps(1.f);
  // max/min return their second operand when unordered: a NaN passes through both clamps.
  __m256 c = _mm256_min_ps(top, _mm256_max_ps(_mm256_set1_ps(-sat), x));
  __m256 s = _mm256_mul_ps(c, c);
  __m256 p = _mm256_set1_ps(P[NP - 1]);
  for (int k = NP - 2; k >= 0; --k) p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(P[k]));
  __m256 q = _mm256_set1_ps(Q[NQ - 1]);
  for (int k = NQ - 2; k >= 0; --k) q = _mm256_fmadd_ps(q, s, _mm256_set1_ps(Q[k]));
  __m256 y = _mm256_div_ps(_mm256_mul_ps(c, p), q);
  return _mm256_min_ps(one, _mm256_max_ps(_mm256_set1_ps(-1.f), y));
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
