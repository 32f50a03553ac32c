// AVX2 kernels of the GGUF block formats: integer dot products of weight blocks with a quantized
// input row (Note [Activation quantization]) and bit-exact dequantization; compiled with
// -mavx2 -mfma -mf16c -ffp-contract=off and chosen at run time (scalar code elsewhere otherwise).
#include <cstring>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/QuantBlocks.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define RT_QUANT_AVX2 1
#endif

namespace retorch::cpu::quant {

#ifdef RT_QUANT_AVX2
namespace {

bool have_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("f16c");
  return ok && cpu_isa() >= CpuIsa::kAvx2;
}

inline float fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Note [Weight prefetch]
// Decode streams each weight row from memory once. Both cores' hardware prefetchers together did
// not keep enough lines in flight: prefetching kPrefetch bytes ahead of the current block (into
// the rest of the row, then the next rows, which follow contiguously) took Q4_0 4096x4096 at
// M = 1 from ~18 to ~21 GB/s on the 2-core dev VM. A prefetch past the end of the weight is
// harmless (a hint never faults).
constexpr int kPrefetch = 1024;

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch), _MM_HINT_T0);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Per 32-value block: maddubs needs an unsigned operand, so the int8 weights give their sign
// to the input (|w| * sign(w) x); 16-bit pair sums cannot saturate (2 * 128 * 127 < 2^15).
inline __m256 q8_0_block(const uint8_t* p, const int8_t* x, float dx, __m256 acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i w = load32(p + 2), q = load32(x);
  const __m256i s =
      _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(q, w)), ones);
  return _mm256_fmadd_ps(_mm256_set1_ps(fp16(p) * dx), _mm256_cvtepi32_ps(s), acc);
}

float dot_q8_0(int64_t K, const uint8_t* w, const ActRow& a) {
  const int64_t nb = K / kQK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t b = 0;
  // Two accumulators: the FMA latency, not the loads, would bound one chain.
  for (; b + 2 <= nb; b += 2) {
    prefetch(w + 34 * b);  // Note [Weight prefetch]
    prefetch(w + 34 * b + 64);
    acc0 = q8_0_block(w + 34 * b, a.q + kQK * b, a.d[b], acc0);
    acc1 = q8_0_block(w + 34 * (b + 1), a.q + kQK * (b + 1), a.d[b + 1], acc1);
  }
  if (b < nb) acc0 = q8_0_block(w + 34 * b, a.q + kQK * b, a.d[b], acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

// Per 32-value block: the nibbles (0..15) are already unsigned, so maddubs takes them as they
// are, and the -8 offset comes off in float as 8 * d_w * (d_x * sum(x)), summed separately.
// One 16-byte load broadcast to both halves, the upper half shifted by 4, gives the 32 values.
inline __m256i q4_0_sums(const uint8_t* p, const int8_t* x) {
  const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
  const __m256i raw =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)));
  const __m256i w = _mm256_and_si256(_mm256_srlv_epi64(raw, _mm256_setr_epi64x(0, 0, 4, 4)), m4);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, load32(x)), ones);
}

// Q4_0 has the most arithmetic per weight byte, so it is the kernel that decides whether decode
// keeps up with memory. The block scales (fp16 at an 18-byte stride) are converted and multiplied
// by the input's scales eight blocks at a time, and the offset term is one vector FMA per eight
// blocks: that cut the time per block by ~15% against doing both per block.
float dot_q4_0(int64_t K, const uint8_t* w, const ActRow& a) {
  const int64_t nb = K / kQK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), off = _mm256_setzero_ps();
  alignas(32) float dd[8];
  alignas(16) uint16_t dh[8];
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const uint8_t* p = w + 18 * b;
    for (int l = 0; l < 144; l += 64) prefetch(p + l);  // Note [Weight prefetch]
    for (int j = 0; j < 8; ++j) std::memcpy(&dh[j], p + 18 * j, 2);
    const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dh)));
    off = _mm256_fmadd_ps(dw, _mm256_loadu_ps(a.dsum + b), off);
    _mm256_store_ps(dd, _mm256_mul_ps(dw, _mm256_loadu_ps(a.d + b)));
    for (int j = 0; j < 8; j += 2) {
      const __m256i s0 = q4_0_sums(p + 18 * j, a.q + kQK * (b + j));
      const __m256i s1 = q4_0_sums(p + 18 * (j + 1), a.q + kQK * (b + j + 1));
      acc0 = _mm256_fmadd_ps(_mm256_broadcast_ss(dd + j), _mm256_cvtepi32_ps(s0), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_broadcast_ss(dd + j + 1), _mm256_cvtepi32_ps(s1), acc1);
    }
  }
  float tail_off = 0.0f;
  for (; b < nb; ++b) {
    const float dw = fp16(w + 18 * b);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d[b]),
                           _mm256_cvtepi32_ps(q4_0_sums(w + 18 * b, a.q + kQK * b)), acc0);
    tail_off += dw * a.dsum[b];
  }
  return hsum(_mm256_add_ps(acc0, acc1)) - 8.0f * (hsum(off) + tail_off);
}

// _mm256_shuffle_epi8 patterns over 16-bit lanes (shuffles stay within each 128-bit half).
struct Shuffles {
  alignas(32) uint8_t same[8][32];  // lane j in every lane of both halves
  alignas(32) uint8_t pair[4][32];  // lane 2k in the low half, lane 2k + 1 in the high half
  constexpr Shuffles() : same{}, pair{} {
    for (int j = 0; j < 8; ++j)
      for (int i = 0; i < 32; i += 2) {
        same[j][i] = uint8_t(2 * j);
        same[j][i + 1] = uint8_t(2 * j + 1);
        const int lane = j < 4 ? (i < 16 ? 2 * j : 2 * j + 1) : 0;
        if (j < 4) {
          pair[j][i] = uint8_t(2 * lane);
          pair[j][i + 1] = uint8_t(2 * lane + 1);
        }
      }
  }
};
constexpr Shuffles kShuffles;

// Q4_K super-block: integer sums per 32-value sub-block times its 6-bit scale (8-bit lanes,
// unsigned nibbles), one float FMA per block; the mins come off through the input's sums per 16.
float dot_q4_k(int64_t K, const uint8_t* w, const ActRow& a) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_min = _mm_setzero_ps();
  for (int64_t b = 0; b < K / kQKK; ++b, w += 144) {
    for (int l = 0; l < 144; l += 64) prefetch(w + l);  // Note [Weight prefetch]
    const int8_t* q = a.q + b * kQKK;
    const float d = a.d[b] * fp16(w), dmin = a.d[b] * fp16(w + 2);
    // The 6-bit scales and mins of the 8 sub-blocks, four per 32-bit word (Note [Block formats]).
    uint32_t u[3];
    std::memcpy(u, w + 4, 12);
    const uint32_t sc_lo = u[0] & 0x3f3f3f3f, mn_lo = u[1] & 0x3f3f3f3f;
    const uint32_t sc_hi = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
    const uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
    const __m256i sm = _mm256_cvtepu8_epi16(
        _mm_setr_epi32(int(sc_lo), int(sc_hi), int(mn_lo), int(mn_hi)));  // sc[0..7], mn[0..7]
    // mins: sum_j mn[j] * (sum of x over sub-block j), from the sums per 16.
    const __m128i bs =
        _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.sum + 16 * b)),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.sum + 16 * b + 8)));
    const __m128i mins = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), bs);
    acc_min = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mins), acc_min);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i bits = load32(w + 16 + 32 * c);
      const __m256i lo = _mm256_and_si256(bits, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
      const __m256i pl =
          _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(q + 64 * c)),
                            _mm256_shuffle_epi8(scales, load32(kShuffles.same[2 * c])));
      const __m256i ph =
          _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load32(q + 64 * c + 32)),
                            _mm256_shuffle_epi8(scales, load32(kShuffles.same[2 * c + 1])));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  __m128 m = _mm_add_ps(acc_min, _mm_movehl_ps(acc_min, acc_min));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return hsum(acc) - _mm_cvtss_f32(m);
}

// The 128 6-bit values (0..63, unsigned) of one half of a Q6_K block as four vectors of 32
// bytes: low nibbles from `ql` (64 bytes), high two bits from `qh` (32 bytes). 16-bit shifts
// move bits across the bytes of a lane only into the bits masked off.
inline void q6_k_half(const uint8_t* ql, const uint8_t* qh, __m256i v[4]) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
  const __m256i hb = load32(qh), l0 = load32(ql), l1 = load32(ql + 32);
  v[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
  v[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
  v[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hb, m30));
  v[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                         _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
}

// Q6_K super-block: the 6-bit values (0..63) are assembled unsigned; the -32 offset comes off as
// 32 * sum over groups of scale * sum(x), from the input's sums per 16.
float dot_q6_k(int64_t K, const uint8_t* w, const ActRow& a) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < K / kQKK; ++b, w += 210) {
    for (int l = 0; l < 210; l += 64) prefetch(w + l);  // Note [Weight prefetch]
    const int8_t* q = a.q + b * kQKK;
    const __m256i sc =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 192)));
    // 32 * sum_g sc[g] * sum(x over group g), kept in 8 int32 lanes.
    __m256i sumi = _mm256_slli_epi32(_mm256_madd_epi16(sc, load32(a.sum + 16 * b)), 5);
    sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = w + 64 * h;
      __m256i v[4];
      q6_k_half(ql, w + 128 + 32 * h, v);
      // The scales of groups 8h..8h+7 in both halves; bytes 0-15 of v[k] are group 8h + 2k and
      // bytes 16-31 group 8h + 2k + 1.
      const __m256i sch = h == 0 ? _mm256_permute2x128_si256(sc, sc, 0x00)
                                 : _mm256_permute2x128_si256(sc, sc, 0x11);
      for (int k = 0; k < 4; ++k) {
        const __m256i scale = _mm256_shuffle_epi8(sch, load32(kShuffles.pair[k]));
        const __m256i p = _mm256_maddubs_epi16(v[k], load32(q + 128 * h + 32 * k));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(a.d[b] * fp16(w + 208)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc);
}

// ---- dequantization (bit-exact with the scalar code: the same float32 products and
// differences, never fused; this file is compiled with -ffp-contract=off)

// y[0..32) = float(q[i]) * d - m for 32 int8 values in q (m == 0 gives exactly the product).
template <bool kSub>
inline void store32(float* y, __m256i q, float d, float m = 0.0f) {
  const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
  const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int k = 0; k < 4; ++k) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[k])), vd);
    if constexpr (kSub) v = _mm256_sub_ps(v, vm);
    _mm256_storeu_ps(y + 8 * k, v);
  }
}

// The 32 nibble values of a 16-byte Q4 chunk: low nibbles first, then high nibbles.
inline __m256i nibbles32(const uint8_t* p) {
  const __m256i raw =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi64(raw, _mm256_setr_epi64x(0, 0, 4, 4)),
                          _mm256_set1_epi8(0x0f));
}

void dequant_q8_0(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += 34, y += kQK)
    store32<false>(y, load32(x + 2), fp16(x));
}

void dequant_q4_0(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += 18, y += kQK)
    store32<false>(y, _mm256_sub_epi8(nibbles32(x + 2), _mm256_set1_epi8(8)), fp16(x));
}

void dequant_q4_k(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += 144) {
    const float d = fp16(x), dmin = fp16(x + 2);
    const uint8_t* s = x + 4;
    for (int c = 0; c < 4; ++c, y += 64) {
      int sc[2], m[2];
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        sc[h] = j < 4 ? s[j] & 63 : (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        m[h] = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      }
      const __m256i bits = load32(x + 16 + 32 * c), m4 = _mm256_set1_epi8(0x0f);
      store32<true>(y, _mm256_and_si256(bits, m4), d * float(sc[0]), dmin * float(m[0]));
      store32<true>(y + 32, _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), d * float(sc[1]),
                    dmin * float(m[1]));
    }
  }
}

void dequant_q6_k(const uint8_t* x, float* y, int64_t n) {
  const __m256i m32 = _mm256_set1_epi8(32);
  for (int64_t b = 0; b < n / kQKK; ++b, x += 210) {
    const float d = fp16(x + 208);
    for (int h = 0; h < 2; ++h, y += 128) {
      const uint8_t* ql = x + 64 * h;
      __m256i v[4];
      q6_k_half(ql, x + 128 + 32 * h, v);
      for (int k = 0; k < 4; ++k) {
        // Values 32k..32k+31 of this half: groups 8h + 2k (first 16) and 8h + 2k + 1.
        const __m256i q = _mm256_sub_epi8(v[k], m32);
        const float d0 = d * float(int8_t(x[192 + 8 * h + 2 * k]));
        const float d1 = d * float(int8_t(x[192 + 8 * h + 2 * k + 1]));
        const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
        const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
        for (int p = 0; p < 4; ++p)
          _mm256_storeu_ps(y + 32 * k + 8 * p,
                           _mm256_mul_ps(_mm256_set1_ps(p < 2 ? d0 : d1),
                                         _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[p]))));
      }
    }
  }
}

// Note [Q4_0 in groups of 16 rows] with AVX2: a 256-bit vector holds 8 rows' 4-byte pieces, so
// each block is two halves of 8 rows, and maddubs + madd(1) stand in for vpdpbusd (a pair of
// nibble-times-byte products stays within 2 * 15 * 127 in 16 bits). The integer sums are
// exact, so the results are the AVX-512 kernel's, bit for bit.
template <int M>
void q4_0x16_rows(int64_t nb, const uint8_t* w, const ActRow* a, float* out, int64_t ldo) {
  const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  __m256 acc[M][2];
  for (int m = 0; m < M; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
  auto dot4 = [&](__m256i s, __m256i wv, int32_t x) {
    return _mm256_add_epi32(
        s, _mm256_madd_epi16(_mm256_maddubs_epi16(wv, _mm256_set1_epi32(x)), ones));
  };
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = w + 288 * b;
    for (int l = 0; l < 288; l += 64) prefetch(p + l);
    for (int h = 0; h < 2; ++h) {  // rows 8h..8h+7
      const __m256 dw =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
      __m256i lo[4], hi[4];
      for (int v = 0; v < 4; ++v) {
        const __m256i raw = load32(p + 32 + 64 * v + 32 * h);
        lo[v] = _mm256_and_si256(raw, low);
        hi[v] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
      }
      for (int m = 0; m < M; ++m) {
        int32_t xq[8];
        std::memcpy(xq, a[m].q + kQK * b, sizeof(xq));
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        for (int v = 0; v < 4; ++v) {
          s0 = dot4(s0, lo[v], xq[v]);
          s1 = dot4(s1, hi[v], xq[4 + v]);
        }
        const __m256i s = _mm256_sub_epi32(_mm256_add_epi32(s0, s1),
                                           _mm256_set1_epi32(8 * int32_t(a[m].sum[b])));
        acc[m][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(a[m].d[b])),
                                    _mm256_cvtepi32_ps(s), acc[m][h]);
      }
    }
  }
  for (int m = 0; m < M; ++m) {
    _mm256_storeu_ps(out + m * ldo, acc[m][0]);
    _mm256_storeu_ps(out + m * ldo + 8, acc[m][1]);
  }
}

void q4_0x16_group(int64_t K, const uint8_t* w, const ActRow* a, int64_t M, float* out,
                   int64_t ldo) {
  in_fours(M, [&](auto rows, int64_t m) {
    q4_0x16_rows<decltype(rows)::value>(K / kQK, w, a + m, out + m * ldo, ldo);
  });
}

}  // namespace

GroupDotFn group_dot_fn_avx2(int64_t qtype) {
  return qtype == kQ4_0x16 && have_avx2() ? q4_0x16_group : nullptr;
}

DotFn dot_fn_avx2(int64_t qtype) {
  if (!have_avx2()) return nullptr;
  switch (qtype) {
    case kQ8_0:
      return dot_q8_0;
    case kQ4_0:
      return dot_q4_0;
    case kQ4_K:
      return dot_q4_k;
    case kQ6_K:
      return dot_q6_k;
    default:
      return nullptr;
  }
}

bool dequantize_row_avx2(int64_t qtype, const uint8_t* x, float* y, int64_t n) {
  if (!have_avx2()) return false;
  switch (qtype) {
    case kQ8_0:
      dequant_q8_0(x, y, n);
      return true;
    case kQ4_0:
      dequant_q4_0(x, y, n);
      return true;
    case kQ4_K:
      dequant_q4_k(x, y, n);
      return true;
    case kQ6_K:
      dequant_q6_k(x, y, n);
      return true;
    default:
      return false;
  }
}

bool dot_f32_avx2(const float* x, const float* y, int64_t n, float* out) {
  if (!have_avx2()) return false;
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k)
      acc[k] =
          _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8 * k), _mm256_loadu_ps(y + i + 8 * k), acc[k]);
  for (; i + 8 <= n; i += 8)
    acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc[0]);
  float s = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; i < n; ++i) s += x[i] * y[i];
  *out = s;
  return true;
}

bool dot_half_avx2(int64_t qtype, const float* x, const uint8_t* w, int64_t n, float* out) {
  if (!have_avx2() || (qtype != kBF16 && qtype != kF16)) return false;
  // 8 weights per load, widened in registers (bfloat16: the top half of a float32; float16:
  // F16C), so the row is read from memory once and never written out as float32.
  auto widen = [qtype](const uint8_t* p) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (qtype == kF16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  };
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k)
      acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8 * k), widen(w + 2 * (i + 8 * k)), acc[k]);
  for (; i + 8 <= n; i += 8)
    acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), widen(w + 2 * i), acc[0]);
  float s = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  if (i < n) {
    float tail[8];
    dequantize_row(qtype, w + 2 * i, tail, n - i);
    for (int64_t j = i; j < n; ++j) s += x[j] * tail[j - i];
  }
  *out = s;
  return true;
}

#else  // no AVX2 in this build: the scalar kernels run

DotFn dot_fn_avx2(int64_t) {
  return nullptr;
}
GroupDotFn group_dot_fn_avx2(int64_t) {
  return nullptr;
}
bool dequantize_row_avx2(int64_t, const uint8_t*, float*, int64_t) {
  return false;
}
bool dot_f32_avx2(const float*, const float*, int64_t, float*) {
  return false;
}
bool dot_half_avx2(int64_t, const float*, const uint8_t*, int64_t, float*) {
  return false;
}

#endif

}  // namespace retorch::cpu::quant
