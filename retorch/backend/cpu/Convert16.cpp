// Vectorized float16/bfloat16 <-> float32 span conversions (see Note [16-bit float loops]).
#include "retorch/backend/cpu/Convert16.h"

#include <cstring>

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
  // The bits shifted into a float's top half, as a plain loop GCC vectorizes at the build's
  // width (sixteen lanes with AVX-512; the eight-lane intrinsics ran at about half the speed).
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(in);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t x = uint32_t(bits[i]) << 16;
    std::memcpy(out + i, &x, sizeof(x));
  }
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
  // The rounding of bf16x8 written as a plain loop over the bits, which GCC vectorizes at the
  // build's width: sixteen lanes with AVX-512, where the eight-lane intrinsics took to(bfloat16)
  // of 1M floats 0.091 ms (PyTorch 0.051).
  static_assert(sizeof(BFloat16) == sizeof(uint16_t));
  uint16_t* bits = reinterpret_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, in + i, sizeof(x));
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    bits[i] = uint16_t(in[i] != in[i] ? 0x7fc0u : rounded);
  }
}

}  // namespace retorch::cpu
