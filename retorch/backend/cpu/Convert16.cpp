// Vectorized float16/bfloat16 <-> float32 span conversions (see Note [16-bit float loops]).
#include "retorch/backend/cpu/Convert16.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

#include "retorch/backend/cpu/CpuIsa.h"
#define RT_CVT16_AVX2 1
#endif

namespace retorch::cpu {

namespace {
#ifdef RT_CVT16_AVX2
bool have_avx2_f16c() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return ok && cpu_isa() >= CpuIsa::kAvx2;
}

// Eight floats to eight bfloat16 with round-to-nearest-even; NaN becomes 0x7fc0 (the scalar
// float_to_bf16's rule).
__m128i bf16x8(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
                                                 lsb), 16);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), _mm256_castps_si256(nan));
  // Pack 32-bit lanes to 16 bits; packus works within 128-bit halves, so fix the order after.
  const __m256i p = _mm256_packus_epi32(r, r);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0xd8));
}
#endif
}  // namespace

void to_float(const Half* in, float* out, int64_t n) {
  int64_t i = 0;
#ifdef RT_CVT16_AVX2
  if (have_avx2_f16c())
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                    reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = float(in[i]);
}

void to_float(const BFloat16* in, float* out, int64_t n) {
  int64_t i = 0;
#ifdef RT_CVT16_AVX2
  if (have_avx2_f16c())
    for (; i + 8 <= n; i += 8) {
      __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
      _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
#endif
  for (; i < n; ++i) out[i] = float(in[i]);
}

void from_float(const float* in, Half* out, int64_t n) {
  int64_t i = 0;
#ifdef RT_CVT16_AVX2
  if (have_avx2_f16c())
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) out[i] = Half(in[i]);
}

void from_float(const float* in, BFloat16* out, int64_t n) {
  int64_t i = 0;
#ifdef RT_CVT16_AVX2
  if (have_avx2_f16c())
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bf16x8(_mm256_loadu_ps(in + i)));
#endif
  for (; i < n; ++i) out[i] = BFloat16(in[i]);
}

}  // namespace retorch::cpu
