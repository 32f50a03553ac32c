// Paged attention's per-token loops in AVX-512: the scores of a block of keys and the weighted
// sum of its values, over float32 or bfloat16 cache rows (Note [Decode attention]).
#include "retorch/backend/cpu/AttentionAvx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>

// Only intrinsics and this file's own functions below (see VecMathAvx512.cpp: a std:: template
// instantiated here could carry AVX-512 code to CPUs without it).

namespace retorch::cpu {

// Note [Decode attention]
// A decode step attends one query per sequence and head over every key of its sequence, block by
// block (Note [Paged attention]). Built for the baseline instruction set, those loops (a dot
// product per key, ending in a horizontal sum of 4-float vectors, then a 4-wide multiply-add of
// each value row) ran ~30 ns a key: a quarter of a 110m Q4_0 decode step at 512 positions. Here a
// key's dot product is D/16 multiply-adds and one horizontal sum, four keys at a time so their
// loads overlap, and a block's values are summed into the accumulator 16 floats at a time, the
// partial sums in registers across the block's rows. bfloat16 rows widen in registers (a
// bfloat16 is the top half of a float32), so a bfloat16 cache is read at half the bytes. A head's
// rows sit Hkv * D elements apart and a block's successor is anywhere in the cache, so the
// caller prefetches the next block's rows of the head while this one computes (110m Q4_0 decode
// with a bfloat16 cache at 640 positions: 283-288 -> 302-311 tokens/s).

namespace {

// The 16 floats at element off of base (float32, or bfloat16 widened), the lanes past `mask` 0.
inline __m512 load16(const void* base, bool bf16, int64_t off, __mmask16 mask) {
  if (!bf16) return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(base) + off);
  __m256i h = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(base) + off);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}

}  // namespace

bool attention_scores_avx512(const float* q, const void* k, bool bf16, int64_t n, int64_t stride,
                             int64_t D, float scale, float* out) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = tail_mask(D - d);
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
      s0 = _mm512_fmadd_ps(qv, load16(k, bf16, j * stride + d, m), s0);
      s1 = _mm512_fmadd_ps(qv, load16(k, bf16, (j + 1) * stride + d, m), s1);
      s2 = _mm512_fmadd_ps(qv, load16(k, bf16, (j + 2) * stride + d, m), s2);
      s3 = _mm512_fmadd_ps(qv, load16(k, bf16, (j + 3) * stride + d, m), s3);
    }
    out[j] = scale * _mm512_reduce_add_ps(s0);
    out[j + 1] = scale * _mm512_reduce_add_ps(s1);
    out[j + 2] = scale * _mm512_reduce_add_ps(s2);
    out[j + 3] = scale * _mm512_reduce_add_ps(s3);
  }
  for (; j < n; ++j) {
    __m512 s = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
      const __mmask16 m = tail_mask(D - d);
      s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), load16(k, bf16, j * stride + d, m), s);
    }
    out[j] = scale * _mm512_reduce_add_ps(s);
  }
  return true;
}

// Note [Grouped decode scores]
// Under GQA the G query heads of a kv head score the same keys. One head at a time, a key cost
// D/16 multiply-adds and a horizontal sum of its own, and a 1b-shaped model (32:4) decoded its
// attention at 8-10 GB/s, bound by those instructions. Here a block of 16 keys is transposed
// once (16x16 tiles in 64 shuffles, into kt: one vector of 16 keys per dimension) and every
// head of the group scores all 16 keys as one vector: D multiply-adds with a broadcast query
// value, four heads at a time, no horizontal sums.
namespace {

// kt[d * 16 + j] = row j's element d for j < nk and d < D (rows past nk are zeros).
void transpose_keys(const void* k, bool bf16, int64_t nk, int64_t stride, int64_t D, float* kt) {
  for (int64_t c = 0; c < D; c += 16) {
    const __mmask16 m = tail_mask(D - c);
    __m512 r[16], a[16], b[16];
    for (int j = 0; j < 16; ++j)
      r[j] = j < nk ? load16(k, bf16, j * stride + c, m) : _mm512_setzero_ps();
    for (int i = 0; i < 8; ++i) {
      a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    auto pd = [](__m512 v) { return _mm512_castps_pd(v); };
    for (int i = 0; i < 4; ++i) {  // b[4i + q], lane L: column 4L + q of rows 4i..4i+3
      b[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(a[4 * i]), pd(a[4 * i + 2])));
      b[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(a[4 * i]), pd(a[4 * i + 2])));
      b[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(a[4 * i + 1]), pd(a[4 * i + 3])));
      b[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(a[4 * i + 1]), pd(a[4 * i + 3])));
    }
    const int64_t cols = D - c < 16 ? D - c : 16;
    for (int q = 0; q < 4; ++q) {  // the 128-bit lanes of the four row groups, transposed
      const __m512 d0 = _mm512_shuffle_f32x4(b[q], b[4 + q], 0x44);
      const __m512 d1 = _mm512_shuffle_f32x4(b[q], b[4 + q], 0xEE);
      const __m512 d2 = _mm512_shuffle_f32x4(b[8 + q], b[12 + q], 0x44);
      const __m512 d3 = _mm512_shuffle_f32x4(b[8 + q], b[12 + q], 0xEE);
      const __m512 col[4] = {_mm512_shuffle_f32x4(d0, d2, 0x88), _mm512_shuffle_f32x4(d0, d2, 0xDD),
                             _mm512_shuffle_f32x4(d1, d3, 0x88), _mm512_shuffle_f32x4(d1, d3, 0xDD)};
      for (int L = 0; L < 4; ++L)
        if (4 * L + q < cols) _mm512_store_ps(kt + (c + 4 * L + q) * 16, col[L]);
    }
  }
}

}  // namespace

bool attention_scores_group_avx512(const float* q, int64_t G, const void* k, bool bf16, int64_t n,
                                   int64_t stride, int64_t D, float scale, float* out,
                                   int64_t ldo) {
  if (D > kGroupScoresMaxDim) return false;
  alignas(64) float kt[kGroupScoresMaxDim * 16];
  const __m512 vs = _mm512_set1_ps(scale);
  for (int64_t j0 = 0; j0 < n; j0 += 16) {
    const int64_t nk = n - j0 < 16 ? n - j0 : 16;
    const __mmask16 keep = tail_mask(nk);
    transpose_keys(k, bf16, nk, stride, D, kt);
    k = bf16 ? static_cast<const void*>(static_cast<const uint16_t*>(k) + 16 * stride)
             : static_cast<const void*>(static_cast<const float*>(k) + 16 * stride);
    int64_t g = 0;
    for (; g + 4 <= G; g += 4) {  // four heads per pass over kt
      const float* q0 = q + g * D;
      __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t d = 0; d < D; ++d) {
        const __m512 kv = _mm512_load_ps(kt + d * 16);
        s0 = _mm512_fmadd_ps(_mm512_set1_ps(q0[d]), kv, s0);
        s1 = _mm512_fmadd_ps(_mm512_set1_ps(q0[D + d]), kv, s1);
        s2 = _mm512_fmadd_ps(_mm512_set1_ps(q0[2 * D + d]), kv, s2);
        s3 = _mm512_fmadd_ps(_mm512_set1_ps(q0[3 * D + d]), kv, s3);
      }
      _mm512_mask_storeu_ps(out + g * ldo + j0, keep, _mm512_mul_ps(vs, s0));
      _mm512_mask_storeu_ps(out + (g + 1) * ldo + j0, keep, _mm512_mul_ps(vs, s1));
      _mm512_mask_storeu_ps(out + (g + 2) * ldo + j0, keep, _mm512_mul_ps(vs, s2));
      _mm512_mask_storeu_ps(out + (g + 3) * ldo + j0, keep, _mm512_mul_ps(vs, s3));
    }
    for (; g < G; ++g) {
      __m512 s0 = _mm512_setzero_ps();
      for (int64_t d = 0; d < D; ++d)
        s0 = _mm512_fmadd_ps(_mm512_set1_ps(q[g * D + d]), _mm512_load_ps(kt + d * 16), s0);
      _mm512_mask_storeu_ps(out + g * ldo + j0, keep, _mm512_mul_ps(vs, s0));
    }
  }
  return true;
}

bool attention_accumulate_avx512(const float* w, const void* v, bool bf16, int64_t n,
                                 int64_t stride, int64_t D, float* acc) {
  for (int64_t d = 0; d < D; d += 16) {
    const __mmask16 m = tail_mask(D - d);
    __m512 a0 = _mm512_maskz_loadu_ps(m, acc + d), a1 = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
      a0 = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), load16(v, bf16, j * stride + d, m), a0);
      a1 = _mm512_fmadd_ps(_mm512_set1_ps(w[j + 1]), load16(v, bf16, (j + 1) * stride + d, m),
                           a1);
    }
    if (j < n) a0 = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), load16(v, bf16, j * stride + d, m), a0);
    _mm512_mask_storeu_ps(acc + d, m, _mm512_add_ps(a0, a1));
  }
  return true;
}

}  // namespace retorch::cpu

#else

namespace retorch::cpu {
bool attention_scores_avx512(const float*, const void*, bool, int64_t, int64_t, int64_t, float,
                             float*) {
  return false;
}
bool attention_accumulate_avx512(const float*, const void*, bool, int64_t, int64_t, int64_t,
                                 float*) {
  return false;
}
bool attention_scores_group_avx512(const float*, int64_t, const void*, bool, int64_t, int64_t,
                                   int64_t, float, float*, int64_t) {
  return false;
}
}  // namespace retorch::cpu

#endif
