// The 2x2, stride-2 max pool of a float NCHW plane, 16 windows per AVX-512 step: forward (values
// and argmax indices) and backward (Note [2x2 max pool]).
#include "retorch/backend/cpu/PoolAvx512.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>

// Only intrinsics and this file's own functions below (see VecMathAvx512.cpp: a std:: template
// instantiated here could carry AVX-512 code to CPUs without it).

namespace retorch::cpu {

// Note [2x2 max pool]
// The pool of most CNNs. Its planes are small (the seed ConvNet's 28x28 -> 14x14 and
// 14x14 -> 7x7), and a loop vectorized by the compiler spent most of its time in the scalar tail
// of each output row (~3 ns an output for ow = 7 or 14, 5x under memory speed). Here a step
// takes 16 windows as two halves of up to 8 consecutive windows of one row pair: a row of more
// than 8 windows runs 16 at a time (both halves in the row, the last step masked, so 14 is one
// step); rows of at most 8 go two per step, one per half (a 7x7 output is 4 steps). Each half
// loads the 16 input columns under its windows from the top and the bottom row, masked to the
// 2n columns they cover (with W odd the last column is never read), and vpermt2ps splits the two
// halves' columns into even and odd: the four taps of 16 windows. The select keeps PoolOps.cpp's
// scalar rule, take tap k when v > best or v is NaN (PyTorch's: the first maximum wins, a NaN
// over any number, the last of several NaNs), two compare masks since no one predicate says it,
// and carries the winning tap's offset {0, 1, W, W + 1} in 8 int64 lanes per half, added to each
// window's top-left index.
// The backward writes each window's four input elements once, go where the index points and
// +0 elsewhere (0 + go, as the general scatter's zero fill and sum give it, -0 included), and
// zeroes the rows and columns no window covers. That is the scatter only when every index lies
// in its own window, which each step checks (the indices are the user's): at the first one that
// does not it gives up and the caller runs the general scatter over the plane, which zero-fills
// it again, sums and checks bounds. Nothing here depends on the pool's arguments; the caller
// passes them only to skip planes that would fail anyway.

namespace {

// One step: 16 windows, lanes 0-7 and lanes 8-15 each a run of up to 8 consecutive windows of
// one row pair (Note [2x2 max pool]).
struct Step {
  int64_t in[2];      // flat input index of the top-left element of each half's first window
  int64_t out[2];     // output index of each half's first window
  __mmask16 cols[2];  // each half's 2n input columns, as a 16-float vector's lanes
  __mmask8 lanes[2];  // each half's n windows
};

inline __mmask16 first_bits(int64_t n) { return __mmask16((1u << n) - 1u); }  // n <= 16

inline Step make_step(int64_t in0, int64_t out0, int64_t n0, int64_t in1, int64_t out1,
                      int64_t n1) {
  if (n1 == 0) in1 = in0, out1 = out0;  // no lanes: keeps every pointer inside the plane
  return {{in0, in1}, {out0, out1}, {first_bits(2 * n0), first_bits(2 * n1)},
          {__mmask8(first_bits(n0)), __mmask8(first_bits(n1))}};
}

// Calls f(step) over a plane's windows, a row of more than 8 windows 16 at a time (the last
// step masked), rows of at most 8 two at a time (one per half), until f returns false; returns
// whether every call returned true.
template <typename F>
inline bool for_each_step(int64_t W, int64_t oh, int64_t ow, const F& f) {
  if (ow <= 8) {
    for (int64_t oy = 0; oy < oh; oy += 2)
      if (!f(make_step(2 * oy * W, oy * ow, ow, 2 * (oy + 1) * W, (oy + 1) * ow,
                       oy + 1 < oh ? ow : 0)))
        return false;
    return true;
  }
  for (int64_t oy = 0; oy < oh; ++oy) {
    for (int64_t ox = 0; ox < ow; ox += 16) {
      const int64_t n = ow - ox < 16 ? ow - ox : 16;
      const int64_t in = 2 * oy * W + 2 * ox, out = oy * ow + ox;
      if (!f(make_step(in, out, n < 8 ? n : 8, in + 16, out + 8, n < 8 ? 0 : n - 8)))
        return false;
    }
  }
  return true;
}

// Column 2i of lane i of a half, relative to the half's first window.
inline __m512i half_columns() { return _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14); }

}  // namespace

bool max_pool_2x2_avx512(const float* x, int64_t W, int64_t oh, int64_t ow, float* y,
                         int64_t* ind) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i cols = half_columns();
  const __m512i tap[4] = {_mm512_setzero_si512(), _mm512_set1_epi64(1), _mm512_set1_epi64(W),
                          _mm512_set1_epi64(W + 1)};
  return for_each_step(W, oh, ow, [&](const Step& s) {
    const __m512 t0 = _mm512_maskz_loadu_ps(s.cols[0], x + s.in[0]);
    const __m512 t1 = _mm512_maskz_loadu_ps(s.cols[1], x + s.in[1]);
    const __m512 b0 = _mm512_maskz_loadu_ps(s.cols[0], x + s.in[0] + W);
    const __m512 b1 = _mm512_maskz_loadu_ps(s.cols[1], x + s.in[1] + W);
    const __m512 v[4] = {_mm512_permutex2var_ps(t0, even, t1), _mm512_permutex2var_ps(t0, odd, t1),
                         _mm512_permutex2var_ps(b0, even, b1), _mm512_permutex2var_ps(b0, odd, b1)};
    __m512 best = v[0];
    __m512i off0 = tap[0], off1 = tap[0];
    for (int k = 1; k < 4; ++k) {
      const __mmask16 take = _mm512_kor(_mm512_cmp_ps_mask(v[k], best, _CMP_GT_OQ),
                                        _mm512_cmp_ps_mask(v[k], v[k], _CMP_UNORD_Q));
      best = _mm512_mask_mov_ps(best, take, v[k]);
      off0 = _mm512_mask_mov_epi64(off0, __mmask8(take), tap[k]);
      off1 = _mm512_mask_mov_epi64(off1, __mmask8(take >> 8), tap[k]);
    }
    // Full-width masked stores, which never fault on a masked-off lane: GCC folds the store of
    // an _mm512_extractf32x8_ps into a masked vextractf32x8, which did fault (mask all 0, the
    // output ending at an unmapped page).
    _mm512_mask_storeu_ps(y + s.out[0], s.lanes[0], best);
    _mm512_mask_storeu_ps(y + s.out[1], s.lanes[1], _mm512_shuffle_f32x4(best, best, 0xee));
    const __m512i at0 = _mm512_add_epi64(_mm512_set1_epi64(s.in[0]), cols);
    const __m512i at1 = _mm512_add_epi64(_mm512_set1_epi64(s.in[1]), cols);
    _mm512_mask_storeu_epi64(ind + s.out[0], s.lanes[0], _mm512_add_epi64(at0, off0));
    _mm512_mask_storeu_epi64(ind + s.out[1], s.lanes[1], _mm512_add_epi64(at1, off1));
    return true;
  });
}

bool max_pool_2x2_backward_avx512(const float* go, const int64_t* ind, int64_t H, int64_t W,
                                  int64_t oh, int64_t ow, float* gi) {
  // Interleave two 16-float vectors a, b into a0 b0 a1 b1 ...: lanes 0-7, then lanes 8-15.
  const __m512i zip0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i zip1 = _mm512_add_epi32(zip0, _mm512_set1_epi32(8));
  const __m512i cols = half_columns();
  const __m512i tap[4] = {_mm512_setzero_si512(), _mm512_set1_epi64(1), _mm512_set1_epi64(W),
                          _mm512_set1_epi64(W + 1)};
  const __m512 zero = _mm512_setzero_ps();
  const bool ok = for_each_step(W, oh, ow, [&](const Step& s) {
    // Each index's offset from its window's top-left element.
    const __m512i d0 = _mm512_sub_epi64(_mm512_maskz_loadu_epi64(s.lanes[0], ind + s.out[0]),
                                        _mm512_add_epi64(_mm512_set1_epi64(s.in[0]), cols));
    const __m512i d1 = _mm512_sub_epi64(_mm512_maskz_loadu_epi64(s.lanes[1], ind + s.out[1]),
                                        _mm512_add_epi64(_mm512_set1_epi64(s.in[1]), cols));
    __mmask16 hit[4];
    for (int k = 0; k < 4; ++k)
      hit[k] = _mm512_kunpackb(_mm512_cmpeq_epi64_mask(d1, tap[k]),
                               _mm512_cmpeq_epi64_mask(d0, tap[k]));
    const __mmask16 lanes = _mm512_kunpackb(s.lanes[1], s.lanes[0]);
    const __mmask16 any = _mm512_kor(_mm512_kor(hit[0], hit[1]), _mm512_kor(hit[2], hit[3]));
    if (_mm512_kandn(any, lanes) != 0) return false;  // an index outside its window
    const __m512 g = _mm512_shuffle_f32x4(_mm512_maskz_loadu_ps(s.lanes[0], go + s.out[0]),
                                          _mm512_maskz_loadu_ps(s.lanes[1], go + s.out[1]), 0x44);
    __m512 a[4];
    for (int k = 0; k < 4; ++k) a[k] = _mm512_maskz_add_ps(hit[k], zero, g);
    float* top0 = gi + s.in[0];
    float* top1 = gi + s.in[1];
    _mm512_mask_storeu_ps(top0, s.cols[0], _mm512_permutex2var_ps(a[0], zip0, a[1]));
    _mm512_mask_storeu_ps(top1, s.cols[1], _mm512_permutex2var_ps(a[0], zip1, a[1]));
    _mm512_mask_storeu_ps(top0 + W, s.cols[0], _mm512_permutex2var_ps(a[2], zip0, a[3]));
    _mm512_mask_storeu_ps(top1 + W, s.cols[1], _mm512_permutex2var_ps(a[2], zip1, a[3]));
    return true;
  });
  if (!ok) return false;
  // What no window covers: the columns right of the windows and the rows below them (W or H
  // odd).
  for (int64_t r = 0; r < 2 * oh && 2 * ow < W; ++r)
    for (int64_t w = 2 * ow; w < W; ++w) gi[r * W + w] = 0.0f;
  for (float* p = gi + 2 * oh * W; p < gi + H * W; ++p) *p = 0.0f;
  return true;
}

}  // namespace retorch::cpu

#else

namespace retorch::cpu {
bool max_pool_2x2_avx512(const float*, int64_t, int64_t, int64_t, float*, int64_t*) {
  return false;
}
bool max_pool_2x2_backward_avx512(const float*, const int64_t*, int64_t, int64_t, int64_t,
                                  int64_t, float*) {
  return false;
}
}  // namespace retorch::cpu

#endif
