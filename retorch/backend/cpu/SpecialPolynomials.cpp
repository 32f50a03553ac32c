// The orthogonal polynomials of torch.special at x for degree n (Chebyshev T, U, V, W and their
// shifted forms, Hermite H and He, Laguerre L, Legendre P), as PyTorch's kernels: the special
// values first, a trigonometric closed form inside (-1, 1) for large n, else the three-term
// recurrence, in the inputs' opmath type.
#include <cmath>
#include <cstdint>

#include "retorch/backend/cpu/Loops.h"
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

bool even(int64_t n) { return n % 2 == 0; }

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
        if (std::sin(theta / 2) != 1) return std::cos((T(n) + T(0.5)) * theta) / std::cos(theta / 2);
        return odd_edge;
      default:
        if (std::cos(theta / 2) != 1) return std::sin((T(n) + T(0.5)) * theta) / std::sin(theta / 2);
        return y > 0 ? T(n + n + 1) : even(n) ? T(1) : T(-1);
    }
  }
  const T first = kKind == 't' ? y : kKind == 'u' ? y + y : kKind == 'v' ? y + y - 1 : y + y + 1;
  return recurrence(n, first, [y](int64_t, T q, T p) { return (y + y) * q - p; });
}

template <char kKind, typename T>
T chebyshev(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  if (std::fabs(x) == 1) {
    const bool plus = x > 0 || even(n);
    switch (kKind) {
      case 't': return plus ? T(1) : T(-1);
      case 'u': return plus ? T(n + 1) : -T(n + 1);
      case 'v': return x > 0 ? T(1) : even(n) ? T(n + n + 1) : -T(n + n + 1);
      default: return x > 0 ? T(n + n + 1) : even(n) ? T(1) : T(-1);
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
      case 'u': return even(n) ? T(n + 1) : -T(n + 1);
      case 'v': return even(n) ? T(n + n + 1) : -T(n + n + 1);
      default: return even(n) ? T(1) : T(-1);
    }
  }
  return chebyshev_core<kKind>(x + x - 1, n, kKind == 'w' ? 4 : 6);
}

template <typename T>
T hermite_h(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  // H_{k+1} = 2x H_k - 2k H_{k-1}
  return recurrence(n, x + x, [x](int64_t k, T q, T p) { return (x + x) * q - T(k + k) * p; });
}

template <typename T>
T hermite_he(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  return recurrence(n, x, [x](int64_t k, T q, T p) { return x * q - T(k) * p; });
}

template <typename T>
T laguerre_l(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  if (std::fabs(x) == 0) return T(1);
  return recurrence(n, 1 - x, [x](int64_t k, T q, T p) {
    return ((T(k + k) + (1 - x)) * q - T(k) * p) / T(k + 1);
  });
}

template <typename T>
T legendre_p(T x, T nf) {
  const int64_t n = degree(nf);
  if (n < 0) return T(0);
  if (std::fabs(x) == 1) return x > 0 || even(n) ? T(1) : T(-1);
  return recurrence(n, x, [x](int64_t k, T q, T p) {
    return (T(k + k + 1) * x * q - T(k) * p) / T(k + 1);
  });
}

// out = f(x, n) in opmath over the floating dtypes, both promoted together (integers to the
// default float dtype, as PyTorch's float ops).
template <typename F>
void polynomial_out(const char* name, const Tensor& x, const Tensor& n, Tensor& out, const F& f) {
  TensorIterator iter(out, {x, n}, {.name = name, .int_to_float = true});
  RT_DISPATCH_FLOATING(iter.common_dtype(), name, [&] {
    using op_t = opmath_t<scalar_t>;
    iter.for_each([&](char** data, const int64_t* st, int64_t len) {
      binary_span<scalar_t, scalar_t>(data, st, len, [&](op_t a, op_t b) { return f(a, b); });
    }, 1024);
  });
  iter.finish();
}

}  // namespace

#define RT_POLYNOMIAL_OP(name, ...)                                                    \
  void special_##name##_out(const Tensor& x, const Tensor& n, Tensor& out) {         \
    polynomial_out("special_" #name, x, n, out,                                       \
                   [](auto a, auto b) { return __VA_ARGS__(a, b); });                 \
  }

RT_POLYNOMIAL_OP(chebyshev_polynomial_t, chebyshev<'t'>)
RT_POLYNOMIAL_OP(chebyshev_polynomial_u, chebyshev<'u'>)
RT_POLYNOMIAL_OP(chebyshev_polynomial_v, chebyshev<'v'>)
RT_POLYNOMIAL_OP(chebyshev_polynomial_w, chebyshev<'w'>)
RT_POLYNOMIAL_OP(shifted_chebyshev_polynomial_t, shifted_chebyshev<'t'>)
RT_POLYNOMIAL_OP(shifted_chebyshev_polynomial_u, shifted_chebyshev<'u'>)
RT_POLYNOMIAL_OP(shifted_chebyshev_polynomial_v, shifted_chebyshev<'v'>)
RT_POLYNOMIAL_OP(shifted_chebyshev_polynomial_w, shifted_chebyshev<'w'>)
RT_POLYNOMIAL_OP(hermite_polynomial_h, hermite_h)
RT_POLYNOMIAL_OP(hermite_polynomial_he, hermite_he)
RT_POLYNOMIAL_OP(laguerre_polynomial_l, laguerre_l)
RT_POLYNOMIAL_OP(legendre_polynomial_p, legendre_p)
#undef RT_POLYNOMIAL_OP

}  // namespace retorch::cpu
