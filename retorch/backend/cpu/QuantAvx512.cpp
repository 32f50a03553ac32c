// AVX-512 VNNI dot products of Q8_0 and Q4_0 weight rows with a quantized input row: two blocks
// per 512-bit step, one vpdpbusd for their 64 products (Note [VNNI block dots]).
#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/QuantBlocks.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__F16C__)
#include <immintrin.h>

#include <cstring>

// Only intrinsics and this file's own functions below (see VecMathAvx512.cpp: a std:: template
// instantiated here could carry AVX-512 code to CPUs without it).

namespace retorch::cpu::quant {

// Note [VNNI block dots]
// vpdpbusd multiplies 64 unsigned bytes by 64 signed bytes and adds each group of four products
// into one of 16 int32 lanes: lanes 0-7 hold block b's partial sums, 8-15 block b + 1's. Q4_0's
// nibbles are unsigned already; Q8_0's signed weights give their sign to the input (|w| times
// sign(w) x, as the AVX2 kernel's maddubs does). Each pair's int32 sums become floats scaled by
// d_w * d_x of their block (a permute spreads the 8 scales of an 8-block group over the two
// halves), so a block costs about half the instructions of the AVX2 kernels' one-block steps.
// Q4_0's 16 nibble bytes per block sit at an 18-byte stride: a byte permute places each
// block's 16 bytes in two 128-bit lanes, the second shifted right by 4 for the high nibbles
// (Note [Q4_0 groups in three loads]).

namespace {

// Bytes ahead (1024 in the AVX2 kernels): Note [Weight prefetch]. 2048 on the Intel machine;
// on Zen 4 (2026-11-25) it was the worst of 1-16 KB: `bench_quant` decode of 11008x4096,
// alternating runs, Q8_0 1.55-1.61 -> 0.74-0.87 ms and Q4_0 0.91-0.95 -> 0.59-0.71 ms at 8192;
// `retorch bench-llm --model 1b` decode Q8_0 24-27 -> 29-41 tok/s, Q4_0 41-43 -> 49-54. (The
// AVX2 kernels measured the same at 1024, 4096 and 8192.)
constexpr int kPrefetch = 8192;

// Into L2 only, leaving the L1 miss buffers to the loads: 1b Q8_0 decode 17.7-17.9 -> 21.0-21.8
// tok/s (72-74% -> 85-90% of the bound) against the T0 hint, Q4_0 6% faster in alternating runs.
inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch), _MM_HINT_T1);
}

inline float fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The 8 block scales d_w of the Q8_0 blocks at p, p + stride, ... widened, times the input's d.
inline __m512 group_scales(const uint8_t* p, int64_t stride, const float* dx) {
  alignas(16) uint16_t dh[8];
  for (int j = 0; j < 8; ++j) std::memcpy(&dh[j], p + stride * j, 2);
  const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dh)));
  return _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_loadu_ps(dx)));
}

// Spreads scales j and j + 1 of the group (lanes j, j + 1 of s) over lanes 0-7 and 8-15.
inline __m512 pair_scales(__m512 s, int j) {
  return _mm512_permutexvar_ps(
      _mm512_setr_epi32(j, j, j, j, j, j, j, j, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1, j + 1,
                        j + 1),
      s);
}

inline __m512i q8_0_pair(const uint8_t* p, const int8_t* x) {
  const __m512i w = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 36)), 1);
  const __m512i q = _mm512_loadu_si512(x);
  const __m512i sq = _mm512_mask_sub_epi8(q, _mm512_movepi8_mask(w), _mm512_setzero_si512(), q);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), sq);
}

float dot_q8_0(int64_t K, const uint8_t* w, const ActRow& a) {
  const int64_t nb = K / kQK;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const uint8_t* p = w + 34 * b;
    for (int l = 0; l < 272; l += 64) prefetch(p + l);
    const __m512 sc = group_scales(p, 34, a.d + b);
    for (int j = 0; j < 8; j += 4) {
      const __m512i s0 = q8_0_pair(p + 34 * j, a.q + kQK * (b + j));
      const __m512i s1 = q8_0_pair(p + 34 * (j + 2), a.q + kQK * (b + j + 2));
      acc0 = _mm512_fmadd_ps(pair_scales(sc, j), _mm512_cvtepi32_ps(s0), acc0);
      acc1 = _mm512_fmadd_ps(pair_scales(sc, j + 2), _mm512_cvtepi32_ps(s1), acc1);
    }
  }
  float tail = 0.0f;
  for (; b < nb; ++b) {  // one block at a time, 256 bits wide
    const uint8_t* p = w + 34 * b;
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q + kQK * b));
    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(wv, wv),
                                          _mm256_sign_epi8(q, wv));
    tail += fp16(p) * a.d[b] * float(_mm512_reduce_add_epi32(_mm512_zextsi256_si512(s)));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + tail;
}

// Note [Q4_0 groups in three loads]
// A group of 8 Q4_0 blocks is 144 bytes: its scales at 18-byte steps, each block's 16 nibble
// bytes after its scale. Three loads cover it (bytes 0-63, 64-127, and 16 masked bytes from
// 128), and byte permutes take everything else from registers: one two-source vpermt2b gathers
// the 8 fp16 scales, and each pair of blocks is one vpermb (pairs 0 and 2, inside one vector)
// or vpermt2b (pairs 1 and 3, across two) placing block b's 16 bytes in 128-bit lanes 0 and 1
// and block b + 1's in lanes 2 and 3. Per row of 768 values this replaced 12 masked loads,
// 24 scalar scale loads and their stack round trips; the sums are the same, in the same order.
// With the weight in cache (`bench_quant` decode of 2048x768 on one copy) 30.4-31.0 -> 26.8-27.6
// us; the same gather for Q8_0's 272-byte groups (five loads, six two-source permutes) was
// slower than its pairs of 32-byte loads (28.6-31.4 -> 34.4-35.5 us) and was not kept.
struct Q4Indices {
  alignas(64) uint8_t scales[64], pair[4][64];
  Q4Indices() : scales(), pair() {
    for (int j = 0; j < 8; ++j) {
      scales[2 * j] = uint8_t(18 * j);
      scales[2 * j + 1] = uint8_t(18 * j + 1);
    }
    // Pair q's blocks start at 36q + 2 and 36q + 20 in the group; pairs 2 and 3 index from
    // byte 64 (their first source is bytes 64-127).
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 64; ++i)
        pair[q][i] = uint8_t(36 * q + (i < 32 ? 2 : 20) + i % 16 - (q >= 2 ? 64 : 0));
  }
};

inline __m512i index_vector(const uint8_t* idx) {
  return _mm512_load_si512(idx);
}

// The integer sums of a pair of blocks (their 16 nibble bytes in lanes 0-1 and 2-3 of raw) with
// 64 input values.
inline __m512i q4_0_sums(__m512i raw, const int8_t* x) {
  const __m512i w = _mm512_and_si512(_mm512_srlv_epi64(raw, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)),
                                     _mm512_set1_epi8(0x0f));
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512(x));
}

// The index vectors of Note [Q4_0 groups in three loads], loaded once per call.
struct Q4Regs {
  __m512i is, i0, i1, i2, i3;
  Q4Regs() {
    static const Q4Indices kIdx;
    is = index_vector(kIdx.scales);
    i0 = index_vector(kIdx.pair[0]);
    i1 = index_vector(kIdx.pair[1]);
    i2 = index_vector(kIdx.pair[2]);
    i3 = index_vector(kIdx.pair[3]);
  }
};

// One row's running sums: two accumulators of pair products, and the -8 offset's in float.
struct Q4Sums {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m256 off = _mm256_setzero_ps();
};

// Blocks b..b+7 of the row at w (p = w + 18 b) into r.
inline void q4_0_group(const uint8_t* p, const ActRow& a, int64_t b, const Q4Regs& ix,
                       Q4Sums& r) {
  for (int l = 0; l < 144; l += 64) prefetch(p + l);
  const __m512i z0 = _mm512_loadu_si512(p), z1 = _mm512_loadu_si512(p + 64),
                z2 = _mm512_maskz_loadu_epi8(0xffffULL, p + 128);
  const __m256 dw = _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi8(z0, ix.is, z1)));
  const __m512 sc = _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_loadu_ps(a.d + b)));
  r.off = _mm256_fmadd_ps(dw, _mm256_loadu_ps(a.dsum + b), r.off);  // the -8 offset, in float
  const int8_t* x = a.q + kQK * b;
  const __m512i s0 = q4_0_sums(_mm512_permutexvar_epi8(ix.i0, z0), x);
  const __m512i s1 = q4_0_sums(_mm512_permutex2var_epi8(z0, ix.i1, z1), x + 2 * kQK);
  r.acc0 = _mm512_fmadd_ps(pair_scales(sc, 0), _mm512_cvtepi32_ps(s0), r.acc0);
  r.acc1 = _mm512_fmadd_ps(pair_scales(sc, 2), _mm512_cvtepi32_ps(s1), r.acc1);
  const __m512i s2 = q4_0_sums(_mm512_permutexvar_epi8(ix.i2, z1), x + 4 * kQK);
  const __m512i s3 = q4_0_sums(_mm512_permutex2var_epi8(z1, ix.i3, z2), x + 6 * kQK);
  r.acc0 = _mm512_fmadd_ps(pair_scales(sc, 4), _mm512_cvtepi32_ps(s2), r.acc0);
  r.acc1 = _mm512_fmadd_ps(pair_scales(sc, 6), _mm512_cvtepi32_ps(s3), r.acc1);
}

// The row's dot product: its blocks from b on (fewer than 8) one at a time, then the sums.
inline float q4_0_finish(int64_t K, const uint8_t* w, const ActRow& a, int64_t b,
                         const Q4Regs& ix, const Q4Sums& r) {
  const int64_t nb = K / kQK;
  float tail = 0.0f, tail_off = 0.0f;
  for (; b < nb; ++b) {  // one block at a time: the pair kernel with the second block masked off
    const uint8_t* p = w + 18 * b;
    const __m512i raw = _mm512_permutexvar_epi8(ix.i0, _mm512_maskz_loadu_epi8(0x3ffffULL, p));
    const __m512i wv = _mm512_and_si512(
        _mm512_srlv_epi64(raw, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)), _mm512_set1_epi8(0x0f));
    const __m512i s = _mm512_dpbusd_epi32(
        _mm512_setzero_si512(), wv, _mm512_maskz_loadu_epi8(0xffffffffULL, a.q + kQK * b));
    const float dw = fp16(p);
    tail += dw * a.d[b] * float(_mm512_reduce_add_epi32(s));
    tail_off += dw * a.dsum[b];
  }
  const float offset = _mm512_reduce_add_ps(_mm512_zextps256_ps512(r.off));
  return _mm512_reduce_add_ps(_mm512_add_ps(r.acc0, r.acc1)) + tail - 8.0f * (offset + tail_off);
}

float dot_q4_0(int64_t K, const uint8_t* w, const ActRow& a) {
  const Q4Regs ix;
  Q4Sums r;
  int64_t b = 0;
  for (; b + 8 <= K / kQK; b += 8) q4_0_group(w + 18 * b, a, b, ix, r);
  return q4_0_finish(K, w, a, b, ix, r);
}

// Note [Q4_0 rows in fours]
// A decode step's Q4_0 rows are short (768 values in a 110m model: three groups of 8 blocks),
// and a row's fixed costs (the call, the index vectors, two horizontal sums and the offset's)
// came to about a third of its time: 2048x768 read at 13-17 GB/s against 28-31 for 4096x4096.
// Four rows now go through their groups together, the index vectors loaded once, the four
// rows' chains interleaved; each row's sums are the one-row kernel's, in the same order.
void dot_q4_0_rows(int64_t K, const uint8_t* w, int64_t rb, int64_t rows, const ActRow& a,
                   float* out) {
  const Q4Regs ix;
  const int64_t groups = K / kQK / 8;
  int64_t n = 0;
  for (; n + 4 <= rows; n += 4) {
    const uint8_t* w0 = w + n * rb;
    Q4Sums r[4];
    for (int64_t g = 0; g < groups; ++g)
      for (int k = 0; k < 4; ++k) q4_0_group(w0 + k * rb + 144 * g, a, 8 * g, ix, r[k]);
    for (int k = 0; k < 4; ++k) out[n + k] = q4_0_finish(K, w0 + k * rb, a, 8 * groups, ix, r[k]);
  }
  for (; n < rows; ++n) out[n] = dot_q4_0(K, w + n * rb, a);
}

// Note [Q4_0 in groups of 16 rows], the kernel: per block, four 64-byte loads hold the 16 rows'
// 32 values; their low and high nibbles meet the input's 4-byte pieces broadcast (vpdpbusd's
// {1to16} operand), two chains of four so the block's latency is four steps. The -8 offset is
// taken off in integers (8 times the input block's sum of q), so a block adds
// d_w * d_x * (sum q_w q_x - 8 sum q_x) exactly as the one-row kernels' terms, in lane l for
// row l. Up to four input rows share each block's unpacked weights.
template <int M>
void q4_0x16_rows(int64_t nb, const uint8_t* w, const ActRow* a, float* out, int64_t ldo) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  __m512 acc[M];
  for (int m = 0; m < M; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = w + 288 * b;
    for (int l = 0; l < 288; l += 64) prefetch(p + l);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    __m512i lo[4], hi[4];
    for (int v = 0; v < 4; ++v) {
      const __m512i raw = _mm512_loadu_si512(p + 32 + 64 * v);
      lo[v] = _mm512_and_si512(raw, low);
      hi[v] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
    }
    for (int m = 0; m < M; ++m) {
      int32_t xq[8];
      std::memcpy(xq, a[m].q + kQK * b, sizeof(xq));
      __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
      for (int v = 0; v < 4; ++v) {
        s0 = _mm512_dpbusd_epi32(s0, lo[v], _mm512_set1_epi32(xq[v]));
        s1 = _mm512_dpbusd_epi32(s1, hi[v], _mm512_set1_epi32(xq[4 + v]));
      }
      const __m512i s = _mm512_sub_epi32(_mm512_add_epi32(s0, s1),
                                         _mm512_set1_epi32(8 * int32_t(a[m].sum[b])));
      acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(a[m].d[b])),
                               _mm512_cvtepi32_ps(s), acc[m]);
    }
  }
  for (int m = 0; m < M; ++m) _mm512_storeu_ps(out + m * ldo, acc[m]);
}

void q4_0x16_group(int64_t K, const uint8_t* w, const ActRow* a, int64_t M, float* out,
                   int64_t ldo) {
  in_fours(M, [&](auto rows, int64_t m) {
    q4_0x16_rows<decltype(rows)::value>(K / kQK, w, a + m, out + m * ldo, ldo);
  });
}

}  // namespace

// Note [bfloat16 rows in pairs]
// A decode step's bfloat16 weight rows (M == 1) were widened 8 at a time by the AVX2 dot
// (a 128-bit load, a zero-extension and a shift per 8 weights, and a load of x for each):
// 110m bf16 decode at 68% of its bandwidth bound. A 64-byte load holds 32 bfloat16 weights as
// 16 int32 lanes, the even column in each lane's low half and the odd one in its high half, so
// a shift left by 16 makes the 16 even weights floats and a mask the 16 odd ones: one load and
// two integer operations per 32 weights. x is split once per call into its even and odd
// columns (xe, xo) to match, and four rows go together so each load of xe and xo serves four
// rows. The sum pairs even and odd columns differently from the AVX2 loop (rounding only).
// Prefetched into L2 like the integer rows (T0 had been kept here): streamed 2304x768 and
// 32000x768 rows at one input row (a /tmp script timing quantized_linear over copies of the
// weight past the L3) 155-185 -> 105-124 us and 2104-3616 -> 1272-1837 us in alternating
// builds; `retorch bench-llm --model 110m --format bf16` decode after a 16-token prompt 85 ->
// 108-122 tok/s (95-107% of the bound), after 512 tokens 74-84 -> 92-93.
bool dot_bf16_rows_avx512(const float* xe, const float* xo, const uint8_t* w, int64_t rb,
                          int64_t rows, int64_t n, float* out) {
  static const bool cpu = __builtin_cpu_supports("avx512bw");
  if (!cpu || cpu_isa() < CpuIsa::kAvx512 || n % 32 != 0) return false;
  const __m512i odd_mask = _mm512_set1_epi32(int(0xFFFF0000u));
  auto even = [](__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); };
  auto odd = [&](__m512i v) { return _mm512_castsi512_ps(_mm512_and_si512(v, odd_mask)); };
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const uint8_t* w0 = w + r * rb;
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    for (int64_t i = 0; i < n; i += 32) {
      const __m512 e = _mm512_loadu_ps(xe + i / 2), o = _mm512_loadu_ps(xo + i / 2);
      for (int k = 0; k < 4; ++k) {
        const uint8_t* p = w0 + k * rb + 2 * i;
        prefetch(p);  // into L2, as the integer kernels: with T0 the rows streamed at 13-24 GB/s
        const __m512i v = _mm512_loadu_si512(p);
        a[k] = _mm512_fmadd_ps(e, even(v), a[k]);
        a[k] = _mm512_fmadd_ps(o, odd(v), a[k]);
      }
    }
    for (int k = 0; k < 4; ++k) out[r + k] = _mm512_reduce_add_ps(a[k]);
  }
  for (; r < rows; ++r) {
    const uint8_t* p0 = w + r * rb;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 32) {
      const __m512i v = _mm512_loadu_si512(p0 + 2 * i);
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xe + i / 2), even(v), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xo + i / 2), odd(v), a1);
    }
    out[r] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  }
  return true;
}

DotRowsFn dot_rows_fn_avx512(int64_t qtype) {
  return qtype == kQ4_0 && dot_fn_avx512(qtype) ? dot_q4_0_rows : nullptr;
}

GroupDotFn group_dot_fn_avx512(int64_t qtype) {
  return qtype == kQ4_0x16 && dot_fn_avx512(kQ4_0) ? q4_0x16_group : nullptr;
}

DotFn dot_fn_avx512(int64_t qtype) {
  static const bool cpu = __builtin_cpu_supports("avx512vnni") &&
                          __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("f16c");
  if (!cpu || cpu_isa() < CpuIsa::kAvx512) return nullptr;
  switch (qtype) {
    case kQ8_0:
      return dot_q8_0;
    case kQ4_0:
      return dot_q4_0;
    default:
      return nullptr;
  }
}

}  // namespace retorch::cpu::quant

#else

namespace retorch::cpu::quant {
DotFn dot_fn_avx512(int64_t) { return nullptr; }
DotRowsFn dot_rows_fn_avx512(int64_t) { return nullptr; }
GroupDotFn group_dot_fn_avx512(int64_t) { return nullptr; }
bool dot_bf16_rows_avx512(const float*, const float*, const uint8_t*, int64_t, int64_t, int64_t,
                          float*) {
  return false;
}
}  // namespace retorch::cpu::quant

#endif
