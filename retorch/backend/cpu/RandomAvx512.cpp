// Philox4x32 on AVX-512, sixteen counters at a time, for normal_'s uniform draws (Note [Vector
// Philox] in RandomAvx512.h); the same words as core/Generator.h's philox4x32.
#include "retorch/backend/cpu/RandomAvx512.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

// Only intrinsics and this file's own functions below (see VecMathAvx512.cpp).

namespace retorch::cpu {

namespace {

// u01_from(a, b) of RandomOps.cpp for the 8 word pairs in a and b: 53 random bits, exactly.
inline __m512d u01(__m256i a, __m256i b) {
  const __m512i bits = _mm512_xor_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(a), 21),
                                        _mm512_srli_epi64(_mm512_cvtepu32_epi64(b), 11));
  return _mm512_mul_pd(_mm512_cvtepu64_pd(bits), _mm512_set1_pd(1.0 / 9007199254740992.0));
}

// The high and low 32 bits of the 32x32-bit products a * m, lane by lane: vpmuludq multiplies
// the even lanes (and, shifted down, the odd ones) to 64 bits, whose halves are blended back.
inline void mul_hi_lo(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i even = _mm512_mul_epu32(a, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

// Sixteen Philox states, counters c0 (low words) and c1 (high words), c2 = c3 = 0.
struct Lanes {
  __m512i c0, c1, c2, c3;
};

// Counters first .. first + 15 as 64 bits, split into their low and high words.
inline Lanes counters(uint64_t first) {
  const __m512i lo8 = _mm512_add_epi64(_mm512_set1_epi64(int64_t(first)),
                                       _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
  const __m512i hi8 = _mm512_add_epi64(lo8, _mm512_set1_epi64(8));
  auto words = [&](int shift) {
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_srli_epi64(lo8, shift))),
        _mm512_cvtepi64_epi32(_mm512_srli_epi64(hi8, shift)), 1);
  };
  return {words(0), words(32), _mm512_setzero_si512(), _mm512_setzero_si512()};
}

inline void round(Lanes& s, __m512i m0, __m512i m1, __m512i k0, __m512i k1) {
  __m512i h0, l0, h1, l1;
  mul_hi_lo(s.c0, m0, h0, l0);
  mul_hi_lo(s.c2, m1, h1, l1);
  s.c0 = _mm512_ternarylogic_epi32(h1, s.c1, k0, 0x96);  // h1 ^ c1 ^ k0
  s.c2 = _mm512_ternarylogic_epi32(h0, s.c3, k1, 0x96);
  s.c1 = l1;
  s.c3 = l0;
}

// Stores the uniforms of elements i .. i + 15 (those below n) of the lanes s.
inline void store_uniforms(const Lanes& s, int64_t i, int64_t n, double* u1, double* u2) {
  const __m512d two_pi = _mm512_set1_pd(2.0 * 3.14159265358979323846);
  for (int h = 0; h < 2; ++h) {  // elements 8h..8h+7
    const int64_t cnt = n - i - 8 * h;
    if (cnt <= 0) break;
    const __mmask8 keep = cnt >= 8 ? __mmask8(0xFF) : __mmask8((1u << cnt) - 1);
    auto half = [h](__m512i v) {
      return h ? _mm512_extracti64x4_epi64(v, 1) : _mm512_castsi512_si256(v);
    };
    _mm512_mask_storeu_pd(u1 + i + 8 * h, keep,
                          _mm512_sub_pd(_mm512_set1_pd(1.0), u01(half(s.c0), half(s.c1))));
    _mm512_mask_storeu_pd(u2 + i + 8 * h, keep, _mm512_mul_pd(two_pi, u01(half(s.c2), half(s.c3))));
  }
}


}  // namespace

bool normal_uniforms_avx512(uint64_t key, uint64_t first, int64_t n, double* u1, double* u2) {
  static const bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  if (!cpu) return false;
  const __m512i m0 = _mm512_set1_epi32(int(0xD2511F53u)), m1 = _mm512_set1_epi32(int(0xCD9E8D57u));
  __m512i k0[10], k1[10];  // the round keys, as philox4x32 advances them
  for (uint32_t r = 0, a = uint32_t(key), b = uint32_t(key >> 32); r < 10;
       ++r, a += 0x9E3779B9u, b += 0xBB67AE85u) {
    k0[r] = _mm512_set1_epi32(int(a));
    k1[r] = _mm512_set1_epi32(int(b));
  }
  // Two sets of sixteen at a time: their rounds interleave, each a chain of dependent steps.
  for (int64_t i = 0; i < n; i += 32) {
    Lanes s = counters(first + uint64_t(i)), t = counters(first + uint64_t(i) + 16);
    for (int r = 0; r < 10; ++r) {
      round(s, m0, m1, k0[r], k1[r]);
      round(t, m0, m1, k0[r], k1[r]);
    }
    store_uniforms(s, i, n, u1, u2);
    store_uniforms(t, i + 16, n, u1, u2);
  }
  return true;
}

}  // namespace retorch::cpu

#else

namespace retorch::cpu {
bool normal_uniforms_avx512(uint64_t, uint64_t, int64_t, double*, double*) { return false; }
}  // namespace retorch::cpu

#endif
