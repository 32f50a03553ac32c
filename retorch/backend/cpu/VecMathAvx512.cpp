// The AVX-512 forms of the vector math (16 floats or 8 doubles per step), same formulas as the
// AVX2 ones, so both paths give the same bits; compiled with AVX-512 flags, called only when
// cpu_isa() allows.
#include "retorch/backend/cpu/VecMath.h"

#if defined(RETORCH_HAVE_SLEEF) && defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
#include <sleef.h>

// Only intrinsics and this file's own functions below: a std:: template instantiated here could
// be the copy the linker keeps for the whole library, and carry AVX-512 code to CPUs without it.

namespace retorch::cpu::vec512 {

namespace {

// exp on 16 floats: VecMathAvx2.h's exp8 lane for lane (Note [Vector exp]).
inline __m512 exp16(__m512 x) {
  const __m512 shift = _mm512_set1_ps(kExpShift);
  __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shift);
  __m512 n = _mm512_sub_ps(t, shift);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  __m512i e = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(126)), 23);
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_castsi512_ps(e)), _mm512_set1_ps(2.0f));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpLo), _CMP_LT_OQ),
                         _mm512_setzero_ps());
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpHi), _CMP_GT_OQ),
                            _mm512_set1_ps(__builtin_inff()));
}

inline __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.f);
  return _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

inline __m512 silu16(__m512 x) { return _mm512_mul_ps(x, sigmoid16(x)); }

// odd_rational8 of VecMathAvx2.h on 16 lanes (Note [Rational tanh]), the same values in fewer
// instructions: vrangeps takes the smaller magnitude with the first operand's sign, each clamp
// in one; it turns a NaN into the bound, so vfixupimmps puts x back where x is a NaN.
template <int NP, int NQ>
inline __m512 odd_rational16(__m512 x, const float (&P)[NP], const float (&Q)[NQ], float sat) {
  constexpr int kMinMagnitudeSignOfFirst = 0x02;
  const __m512i kQuietNanWhereNan = _mm512_set1_epi32(0x22);  // tokens for the QNaN, SNaN classes
  __m512 c = _mm512_range_ps(x, _mm512_set1_ps(sat), kMinMagnitudeSignOfFirst);
  __m512 s = _mm512_mul_ps(c, c);
  __m512 p = _mm512_set1_ps(P[NP - 1]);
  for (int k = NP - 2; k >= 0; --k) p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(P[k]));
  __m512 q = _mm512_set1_ps(Q[NQ - 1]);
  for (int k = NQ - 2; k >= 0; --k) q = _mm512_fmadd_ps(q, s, _mm512_set1_ps(Q[k]));
  __m512 y = _mm512_div_ps(_mm512_mul_ps(c, p), q);
  y = _mm512_range_ps(y, _mm512_set1_ps(1.f), kMinMagnitudeSignOfFirst);
  return _mm512_fixupimm_ps(y, x, kQuietNanWhereNan, 0);
}

inline __m512 tanh16(__m512 x) { return odd_rational16(x, kTanhP, kTanhQ, kTanhSaturate); }
inline __m512 erf16_fast(__m512 x) { return odd_rational16(x, kErfP, kErfQ, kErfSaturate); }

inline __m512 gelu16(__m512 x) {
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.f);
  __m512 e = erf16_fast(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
  return _mm512_mul_ps(_mm512_mul_ps(x, half), _mm512_add_ps(one, e));
}

inline __m512 gelu_tanh16(__m512 x) {
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.f);
  __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  __m512 inner = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f),
                               _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x3, x));
  return _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_add_ps(one, tanh16(inner)));
}

inline __m512d sigmoid8d(__m512d x) {
  const __m512d one = _mm512_set1_pd(1.0);
  __m512d e = Sleef_expd8_u10avx512f(_mm512_sub_pd(_mm512_setzero_pd(), x));
  return _mm512_div_pd(one, _mm512_add_pd(one, e));
}

inline __m512d silu8d(__m512d x) { return _mm512_mul_pd(x, sigmoid8d(x)); }

inline __m512d gelu8d(__m512d x) {
  const __m512d half = _mm512_set1_pd(0.5), one = _mm512_set1_pd(1.0);
  __m512d e = Sleef_erfd8_u10avx512f(_mm512_mul_pd(x, _mm512_set1_pd(0.70710678118654752)));
  return _mm512_mul_pd(_mm512_mul_pd(x, half), _mm512_add_pd(one, e));
}

// Applies f to 16 floats (8 doubles) at a time; the tail is one masked step.
template <typename F>
inline void map16(const F& f, const float* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, f(_mm512_loadu_ps(in + i)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(out + i, m, f(_mm512_maskz_loadu_ps(m, in + i)));
  }
}

template <typename F>
inline void map8d(const F& f, const double* in, double* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm512_storeu_pd(out + i, f(_mm512_loadu_pd(in + i)));
  if (i < n) {
    const __mmask8 m = __mmask8((1u << (n - i)) - 1);
    _mm512_mask_storeu_pd(out + i, m, f(_mm512_maskz_loadu_pd(m, in + i)));
  }
}

// map16/map8d for two inputs.
template <typename F>
inline void map16x2(const F& f, const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, f(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(out + i, m, f(_mm512_maskz_loadu_ps(m, a + i),
                                        _mm512_maskz_loadu_ps(m, b + i)));
  }
}

template <typename F>
inline void map8dx2(const F& f, const double* a, const double* b, double* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm512_storeu_pd(out + i, f(_mm512_loadu_pd(a + i), _mm512_loadu_pd(b + i)));
  if (i < n) {
    const __mmask8 m = __mmask8((1u << (n - i)) - 1);
    _mm512_mask_storeu_pd(out + i, m, f(_mm512_maskz_loadu_pd(m, a + i),
                                        _mm512_maskz_loadu_pd(m, b + i)));
  }
}

}  // namespace

#define RT_SLEEF_ISA avx512f
bool vec_binary_avx512(VecFn2 fn, const float* a, const float* b, float* out, int64_t n) {
#define RT_MAP2 map16x2
#define RT_SLEEF_W f16
  switch (fn) { RT_SLEEF_BINARY(RT_SLEEF_BINARY_CASE) }
#undef RT_SLEEF_W
#undef RT_MAP2
  return false;
}

bool vec_binary_avx512(VecFn2 fn, const double* a, const double* b, double* out, int64_t n) {
#define RT_MAP2 map8dx2
#define RT_SLEEF_W d8
  switch (fn) { RT_SLEEF_BINARY(RT_SLEEF_BINARY_CASE) }
#undef RT_SLEEF_W
#undef RT_MAP2
  return false;
}
#undef RT_SLEEF_ISA

#define RT_VEC_CASE(E, FN)                         \
  case VecFn::E:                                   \
    MAP([](auto x) { return FN(x); }, in, out, n); \
    return true;

bool vec_unary_avx512(VecFn fn, const float* in, float* out, int64_t n) {
#define MAP map16
  switch (fn) {
#define RT_SLEEF_CASE(E, F) RT_VEC_CASE(E, Sleef_##F##f16_u10avx512f)
    RT_SLEEF_UNARY(RT_SLEEF_CASE)
#undef RT_SLEEF_CASE
    RT_VEC_CASE(kTanh, tanh16)
    RT_VEC_CASE(kErfc, Sleef_erfcf16_u15avx512f)
    RT_VEC_CASE(kSigmoid, sigmoid16)
    RT_VEC_CASE(kSilu, silu16)
    RT_VEC_CASE(kGelu, gelu16)
    RT_VEC_CASE(kGeluTanh, gelu_tanh16)
    RT_VEC_CASE(kErfFast, erf16_fast)
    case VecFn::kNone:
      break;
  }
#undef MAP
  return false;
}

bool vec_unary_avx512(VecFn fn, const double* in, double* out, int64_t n) {
#define MAP map8d
  switch (fn) {
#define RT_SLEEF_CASE(E, F) RT_VEC_CASE(E, Sleef_##F##d8_u10avx512f)
    RT_SLEEF_UNARY(RT_SLEEF_CASE)
#undef RT_SLEEF_CASE
    RT_VEC_CASE(kTanh, Sleef_tanhd8_u10avx512f)
    RT_VEC_CASE(kErfc, Sleef_erfcd8_u15avx512f)
    RT_VEC_CASE(kSigmoid, sigmoid8d)
    RT_VEC_CASE(kSilu, silu8d)
    RT_VEC_CASE(kGelu, gelu8d)
    RT_VEC_CASE(kErfFast, Sleef_erfd8_u10avx512f)
    case VecFn::kGeluTanh:  // double keeps the scalar formula
    case VecFn::kNone:
      break;
  }
#undef MAP
  return false;
}
#undef RT_VEC_CASE

float vec_exp_shift_sum_avx512(const float* in, float shift, float* out, int64_t n) {
  const __m512 sh = _mm512_set1_ps(shift);
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(in + i), sh));
    _mm512_storeu_ps(out + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, in + i), sh));
    _mm512_mask_storeu_ps(out + i, m, e);
    acc = _mm512_mask_add_ps(acc, m, acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

int64_t sum_quads16_avx512(const uint16_t* x, int64_t n, bool bf16, SumLanes& lo,
                           SumLanes& hi) {
  static_assert(kSumBlock == 64);
  __m512d l = _mm512_loadu_pd(&lo), h = _mm512_loadu_pd(&hi);
  int64_t i = 0;
  for (; i + kSumBlock <= n; i += kSumBlock) {
    __m512 f[4];
    for (int k = 0; k < 4; ++k) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16 * k));
      f[k] = bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16))
                  : _mm512_cvtph_ps(raw);
    }
    const __m512 q = _mm512_add_ps(_mm512_add_ps(f[0], f[1]), _mm512_add_ps(f[2], f[3]));
    l = _mm512_add_pd(l, _mm512_cvtps_pd(_mm512_castps512_ps256(q)));
    h = _mm512_add_pd(
        h, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(q), 1))));
  }
  _mm512_storeu_pd(&lo, l);
  _mm512_storeu_pd(&hi, h);
  return i;
}

bool vec_avx512_compiled() { return true; }

}  // namespace retorch::cpu::vec512

#else

namespace retorch::cpu::vec512 {
bool vec_unary_avx512(VecFn, const float*, float*, int64_t) { return false; }
bool vec_unary_avx512(VecFn, const double*, double*, int64_t) { return false; }
bool vec_binary_avx512(VecFn2, const float*, const float*, float*, int64_t) { return false; }
bool vec_binary_avx512(VecFn2, const double*, const double*, double*, int64_t) { return false; }
float vec_exp_shift_sum_avx512(const float*, float, float*, int64_t) { return 0; }
int64_t sum_quads16_avx512(const uint16_t*, int64_t, bool, SumLanes&, SumLanes&) { return 0; }
bool vec_avx512_compiled() { return false; }
}  // namespace retorch::cpu::vec512

#endif
