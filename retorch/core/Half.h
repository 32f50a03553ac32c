// float16 and bfloat16 storage types: 16 bits in memory, arithmetic in float32.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

namespace retorch {

namespace detail {
inline uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }
inline float f32_from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// IEEE half <-> float with round-to-nearest-even.
inline float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return f32_from_bits(sign);
    float v = (float)man * 5.9604644775390625e-08f;  // 2^-24
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t float_to_half(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  // overflow to inf
  if (ax < 0x38800000u) {                                     // subnormal or zero
    float v = f32_from_bits(ax) + 0.5f;                       // uses float rounding
    return (uint16_t)(sign | (f32_bits(v) - 0x3f000000u));
  }
  uint32_t mant_odd = (ax >> 13) & 1;
  ax += 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
  return (uint16_t)(sign | (ax >> 13));
}

inline float bf16_to_float(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return (uint16_t)((x + rounding) >> 16);
}
}  // namespace detail

struct Half {
  uint16_t x = 0;
  Half() = default;
  Half(float f) : x(detail::float_to_half(f)) {}
  operator float() const { return detail::half_to_float(x); }
  static Half from_bits(uint16_t b) { Half h; h.x = b; return h; }
};

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  BFloat16(float f) : x(detail::float_to_bf16(f)) {}
  operator float() const { return detail::bf16_to_float(x); }
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.x = b; return h; }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace retorch
