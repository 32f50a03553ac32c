// The orthogonal polynomials of torch.special at x for degree n (Chebyshev T, U, V, W and their
// shifted forms, Hermite H and He, Laguerre L, Legendre P), as PyTorch's kernels: the special
// values first, a trigonometric closed form inside (-1, 1) for large n, else the three-term
// recurrence, in the inputs' opmath type.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

// static_cast<int64_t>(n) as x86 computes it: truncation, and INT64_MIN (a negative degree) for
// NaN, infinities and values out of range, without the cast's undefined behaviour.
template <typename T>
int64_t degree(T n) {
  if (!(std::fabs(n) < T(9.2233720368547758e18))) return INT64_MIN;
  return static_cast<int64_t>(n);
}

bool even(int64_t n) {
  return n % 2 == 0;
}

// P_n from P_0 = 1, P_1 = first and P_{k+1} = step(k, P_k, P_{k-1}) for k = 1 .. n - 1.
template <typename T, typename Step>
T recurrence(int64_t n, T first, const Step& step) {
  if (n == 0) return T(1);
  T p = T(1), q = first;
  for (int64_t k = 1; k < n; ++k) {
    const T r = step(k, q, p);
    p = q;
    q = r;
  }
  return q;
}

// The families' three-term recurrences as first(x) = P_1 and step(k, x, P_k, P_{k-1}) =
// P_{k+1}, on T or on a vector of T (U), so the scalar and the vector paths compute alike.
template <char kKind>
struct ChebyshevRec {
  template <typename T, typename U>
  static U first(U y) {
    if constexpr (kKind == 't')
      return y;
    else if constexpr (kKind == 'u')
      return y + y;
    else if constexpr (kKind == 'v')
      return y + y - T(1);
    else
      return y + y + T(1);
  }
  template <typename T, typename U>
  static U step(int64_t, U y, U q, U p) {
    return (y + y) * q - p;
  }
};

struct HermiteHRec {  // H_{k+1} = 2x H_k - 2k H_{k-1}
  template <typename T, typename U>
  static U first(U x) {
    return x + x;
  }
  template <typename T, typename U>
  static U step(int64_t k, U x, U q, U p) {
    return (x + x) * q - T(k + k) * p;
  }
};

struct HermiteHeRec {
  template <typename T, typename U>
  static U first(U x) {
    return x;
  }
  template <typename T, typename U>
  static U step(int64_t k, U x, U q, U p) {
    return x * q - T(k) * p;
  }
};

struct LaguerreRec {
  template <typename T, typename U>
  static U first(U x) {
    return T(1) - x;
  }
  template <typename T, typename U>
  static U step(int64_t k, U x, U q, U p) {
    return ((T(k + k) + (T(1) - x)) * q - T(k) * p) / T(k + 1);
  }
};

struct LegendreRec {
  template <typename T, typename U>
  static U first(U x) {
    return x;
  }
  template <typename T, typename U>
  static U step(int64_t k, U x, U q, U p) {
    return (T(k + k + 1) * x * q - T(k) * p) / T(k + 1);
  }
};

template <typename Rec, typename T>
T run_recurrence(int64_t n, T x) {
  return recurrence(n, Rec::template first<T>(x),
                    [x](int64_t k, T q, T p) { return Rec::template step<T>(k, x, q, p); });
}

// T, U, V and W at y (y = x, or 2x - 1 for the shifted forms): the closed form inside (-1, 1)
// above degree big_n, else the recurrence. The values at the interval's ends are the callers'.
template <char kKind, typename T>
T chebyshev_core(T y, int64_t n, int64_t big_n) {
  if (n > big_n && std::fabs(y) < 1) {
    const T theta = std::acos(y);
    const T odd_edge = even(n) ? T(n + n + 1) : -T(n + n + 1);
    switch (kKind) {
      case 't':
        return std::cos(T(n) * theta);
      case 'u':
        if (std::sin(theta) != 0) return std::sin(T(n + 1) * theta) / std::sin(theta);
        return T(n + 1) * std::cos(T(n + 1) * theta) / y;
      case 'v':
        if (std::sin(theta / 2) != 1)
          return std::cos((T(n) + T(0.5)) * theta) / std::cos(theta / 2);
        return odd_edge;
      default:
        if (std::cos(theta / 2) != 1)
          return std::sin((T(n) + T(0.5)) * theta) / std::sin(theta / 2);
        return y > 0 ? T(n + n + 1) : even(n) ? T(1) : T(-1);
    }
  }
  return run_recurrence<ChebyshevRec<kKind>>(n, y);
}

template <char kKind, typename T>
T chebyshev(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  if (std::fabs(x) == 1) {
    const bool plus = x > 0 || even(n);
    switch (kKind) {
      case 't':
        return plus ? T(1) : T(-1);
      case 'u':
        return plus ? T(n + 1) : -T(n + 1);
      case 'v':
        return x > 0 ? T(1) : even(n) ? T(n + n + 1) : -T(n + n + 1);
      default:
        return x > 0 ? T(n + n + 1) : even(n) ? T(1) : T(-1);
    }
  }
  return chebyshev_core<kKind>(x, n, kKind == 't' ? 6 : 8);
}

// The shifted forms T*(x) = T(2x - 1) & co., their values at x = 1 and x = 0 (y = 1 and -1).
template <char kKind, typename T>
T shifted_chebyshev(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  if (x == 1) return kKind == 'u' ? T(n + 1) : kKind == 'w' ? T(n + n + 1) : T(1);
  if (x == 0) {
    switch (kKind) {
      case 'u':
        return even(n) ? T(n + 1) : -T(n + 1);
      case 'v':
        return even(n) ? T(n + n + 1) : -T(n + n + 1);
      default:
        return even(n) ? T(1) : T(-1);
    }
  }
  return chebyshev_core<kKind>(x + x - 1, n, kKind == 'w' ? 4 : 6);
}

template <typename T>
T hermite_h(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  return run_recurrence<HermiteHRec>(n, x);
}

template <typename T>
T hermite_he(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  return run_recurrence<HermiteHeRec>(n, x);
}

template <typename T>
T laguerre_l(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  if (std::fabs(x) == 0) return T(1);
  return run_recurrence<LaguerreRec>(n, x);
}

template <typename T>
T legendre_p(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  if (std::fabs(x) == 1) return x > 0 || even(n) ? T(1) : T(-1);
  return run_recurrence<LegendreRec>(n, x);
}

// Note [Polynomials a block at a time]: one element's recurrence is a chain of dependent
// multiplies (and, for Laguerre and Legendre, divisions), latency-bound: Legendre of degree 50
// over 256K floats took 18 ms one element at a time (PyTorch 35). With one degree for a span
// of contiguous floats or doubles (a number n), kLanes elements step together in vector
// registers; the elements a special case covers (kept(x) false) take f, the scalar kernel.
constexpr int64_t kLanes = 16;

template <typename Rec, bool kShifted, typename T, typename Kept, typename F>
void recurrence_span(const T* x, T* out, int64_t len, T nf, const Kept& kept, const F& f) {
  typedef T V __attribute__((vector_size(kLanes * sizeof(T))));
  const int64_t n = degree(nf);
  int64_t j0 = 0;
  if (n >= 2) {
    for (; j0 + kLanes <= len; j0 += kLanes) {
      V y;
      std::memcpy(&y, x + j0, sizeof(V));
      if (kShifted) y = y + y - T(1);
      V p = V{} + T(1), q = Rec::template first<T>(y);
      for (int64_t k = 1; k < n; ++k) {
        const V r = Rec::template step<T>(k, y, q, p);
        p = q;
        q = r;
      }
      std::memcpy(out + j0, &q, sizeof(V));
      for (int64_t l = j0; l < j0 + kLanes; ++l)
        if (!kept(x[l], n)) out[l] = f(x[l], nf);
    }
  }
  for (; j0 < len; ++j0) out[j0] = f(x[j0], nf);
}

// Chebyshev T and U (kKind 't', 'u') of one degree n above big_n over a contiguous span: the
// closed forms cos(n acos y) and sin((n + 1) acos y) / sin(acos y) through the vector functions
// for the y inside (-1, 1), an L1-sized chunk at a time (elementwise they took 4.2 and 5.1 ms
// for degree 50 over 256K floats, PyTorch 4.0 and 4.7); a block of kLanes with any other y takes
// recurrence_span, and an element whose sine is 0 the scalar kernel f. Below big_n, or without
// the vector functions, all of it takes recurrence_span.
template <char kKind, bool kShifted, typename T, typename Kept, typename F>
void chebyshev_span(const T* x, T* out, int64_t len, T nf, int64_t big_n, const Kept& kept,
                    const F& f) {
  static_assert(kKind == 't' || kKind == 'u');
  using Rec = ChebyshevRec<kKind>;
  const int64_t n = degree(nf);
  T probe = 0;
  if (n <= big_n || !vec_unary(VecFn::kAcos, &probe, &probe, 0)) {
    recurrence_span<Rec, kShifted>(x, out, len, nf, kept, f);
    return;
  }
  const auto y_of = [](T v) { return kShifted ? v + v - 1 : v; };
  // The recurrence's value stands wherever y is outside (-1, 1) and no special case covers x.
  const auto outside_kept = [&](T v, int64_t deg) {
    const bool inside = std::fabs(y_of(v)) < 1;
    return kept(v, deg) & !inside;
  };
  constexpr int64_t kChunk = 512;
  alignas(64) T th[kChunk], a[kChunk], d[kChunk];
  const T factor = kKind == 't' ? T(n) : T(n + 1);
  for (int64_t i0 = 0; i0 < len; i0 += kChunk) {
    const int64_t m = std::min(kChunk, len - i0);
    const T* xs = x + i0;
    T* o = out + i0;
    for (int64_t j = 0; j < m; ++j) {
      const T y = y_of(xs[j]);
      th[j] = std::fabs(y) < 1 ? y : T(0);
    }
    vec_unary(VecFn::kAcos, th, th, m);
    for (int64_t j = 0; j < m; ++j) a[j] = factor * th[j];
    if (kKind == 't') {
      vec_unary(VecFn::kCos, a, o, m);
    } else {
      vec_unary(VecFn::kSin, a, a, m);
      vec_unary(VecFn::kSin, th, d, m);
      for (int64_t j = 0; j < m; ++j) o[j] = a[j] / d[j];
    }
    for (int64_t j0 = 0; j0 < m; j0 += kLanes) {
      const int64_t b = std::min(kLanes, m - j0);
      int inside = 0;
      for (int64_t j = j0; j < j0 + b; ++j) inside += std::fabs(y_of(xs[j])) < 1 ? 1 : 0;
      if (inside < b) {  // the recurrence for the block, the closed forms put back
        for (int64_t j = j0; j < j0 + b; ++j) a[j] = o[j];
        recurrence_span<Rec, kShifted>(xs + j0, o + j0, b, nf, outside_kept, f);
        for (int64_t j = j0; j < j0 + b; ++j)
          if (std::fabs(y_of(xs[j])) < 1) o[j] = a[j];
      }
      if (kKind == 'u')
        for (int64_t j = j0; j < j0 + b; ++j)
          if (std::fabs(y_of(xs[j])) < 1 && d[j] == 0) o[j] = f(xs[j], nf);
    }
  }
}

// out = f(x, n) in opmath over the floating dtypes, both promoted together (integers to the
// default float dtype, as PyTorch's float ops); span(x, out, len, n) takes contiguous float or
// double spans with one degree (Note [Polynomials a block at a time]).
template <typename F, typename Span>
void polynomial_out(const char* name, const Tensor& x, const Tensor& n, Tensor& out, const F& f,
                    const Span& span) {
  TensorIterator iter(out, {x, n}, {.name = name, .int_to_float = true});
  RT_DISPATCH_FLOATING(iter.common_dtype(), name, [&] {
    using op_t = opmath_t<scalar_t>;
    iter.for_each(
        [&](char** data, const int64_t* st, int64_t len) {
          if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>) {
            if (st[0] == sizeof(scalar_t) && st[1] == sizeof(scalar_t) && st[2] == 0) {
              span(reinterpret_cast<const scalar_t*>(data[1]), reinterpret_cast<scalar_t*>(data[0]),
                   len, *reinterpret_cast<const scalar_t*>(data[2]));
              return;
            }
          }
          binary_span<scalar_t, scalar_t>(data, st, len, [&](op_t a, op_t b) { return f(a, b); });
        },
        1024);
  });
  iter.finish();
}

}  // namespace

// kept(x, n): whether the recurrence's value stands (no special case of f covers x); written
// without short-circuits, which mispredicted on mixed inputs (shifted T of degree 3 over 256K
// floats in [-1, 1]: 0.88 ms, 0.2 over either half).
#define RT_POLYNOMIAL_OP(name, scalar, Rec, shifted, kept)                   \
  void special_##name##_out(const Tensor& x, const Tensor& n, Tensor& out) { \
    const auto f = [](auto a, auto b) { return scalar(a, b); };              \
    polynomial_out("special_" #name, x, n, out, f,                           \
                   [&](const auto* xs, auto* o, int64_t len, auto nf) {      \
                     recurrence_span<Rec, shifted>(xs, o, len, nf, kept, f); \
                   });                                                       \
  }
// Chebyshev T and U, with their vector closed forms above degree big_n (chebyshev_span).
#define RT_CHEBYSHEV_OP(name, scalar, kind, shifted, big_n, kept)                   \
  void special_##name##_out(const Tensor& x, const Tensor& n, Tensor& out) {        \
    const auto f = [](auto a, auto b) { return scalar(a, b); };                     \
    polynomial_out("special_" #name, x, n, out, f,                                  \
                   [&](const auto* xs, auto* o, int64_t len, auto nf) {             \
                     chebyshev_span<kind, shifted>(xs, o, len, nf, big_n, kept, f); \
                   });                                                              \
  }

// The Chebyshev families recur up to degree big_n inside (-1, 1) and everywhere outside it.
#define RT_CHEBYSHEV_KEPT(big_n) \
  [](auto v, int64_t deg) { return (std::fabs(v) > 1) | ((std::fabs(v) < 1) & (deg <= big_n)); }
#define RT_SHIFTED_KEPT(big_n)                                                                 \
  [](auto v, int64_t deg) {                                                                    \
    const auto y = v + v - 1;                                                                  \
    return (v != 0) & (v != 1) & ((std::fabs(y) > 1) | ((std::fabs(y) < 1) & (deg <= big_n))); \
  }

RT_CHEBYSHEV_OP(chebyshev_polynomial_t, chebyshev<'t'>, 't', false, 6, RT_CHEBYSHEV_KEPT(6))
RT_CHEBYSHEV_OP(chebyshev_polynomial_u, chebyshev<'u'>, 'u', false, 8, RT_CHEBYSHEV_KEPT(8))
RT_POLYNOMIAL_OP(chebyshev_polynomial_v, chebyshev<'v'>, ChebyshevRec<'v'>, false,
                 RT_CHEBYSHEV_KEPT(8))
RT_POLYNOMIAL_OP(chebyshev_polynomial_w, chebyshev<'w'>, ChebyshevRec<'w'>, false,
                 RT_CHEBYSHEV_KEPT(8))
RT_CHEBYSHEV_OP(shifted_chebyshev_polynomial_t, shifted_chebyshev<'t'>, 't', true, 6,
                RT_SHIFTED_KEPT(6))
RT_CHEBYSHEV_OP(shifted_chebyshev_polynomial_u, shifted_chebyshev<'u'>, 'u', true, 6,
                RT_SHIFTED_KEPT(6))
RT_POLYNOMIAL_OP(shifted_chebyshev_polynomial_v, shifted_chebyshev<'v'>, ChebyshevRec<'v'>, true,
                 RT_SHIFTED_KEPT(6))
RT_POLYNOMIAL_OP(shifted_chebyshev_polynomial_w, shifted_chebyshev<'w'>, ChebyshevRec<'w'>, true,
                 RT_SHIFTED_KEPT(4))
RT_POLYNOMIAL_OP(hermite_polynomial_h, hermite_h, HermiteHRec, false,
                 [](auto, int64_t) { return true; })
RT_POLYNOMIAL_OP(hermite_polynomial_he, hermite_he, HermiteHeRec, false,
                 [](auto, int64_t) { return true; })
RT_POLYNOMIAL_OP(laguerre_polynomial_l, laguerre_l, LaguerreRec, false,
                 [](auto v, int64_t) { return v != 0; })
RT_POLYNOMIAL_OP(legendre_polynomial_p, legendre_p, LegendreRec, false,
                 [](auto v, int64_t) { return std::fabs(v) != 1; })
#undef RT_SHIFTED_KEPT
#undef RT_CHEBYSHEV_KEPT
#undef RT_POLYNOMIAL_OP
#undef RT_CHEBYSHEV_OP

}  // namespace retorch::cpu
