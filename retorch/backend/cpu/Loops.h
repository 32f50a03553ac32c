// Elementwise loop helpers over a TensorIterator: unary, binary and ternary kernels with
// contiguous and scalar-broadcast fast paths. Arithmetic happens in opmath_t (float for
// the 16-bit floats).
#pragma once
#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/core/Dtypes.h"

namespace retorch::cpu {

/// out[i] = f(a[i]); f takes and returns opmath values (or returns out_t directly).
template <typename out_t, typename in_t, typename F>
void unary_loop(TensorIterator& iter, const F& f) {
  using op_t = opmath_t<in_t>;
  iter.for_each([&](char** data, const int64_t* st, int64_t n) {
    auto* out = reinterpret_cast<out_t*>(data[0]);
    const auto* a = reinterpret_cast<const in_t*>(data[1]);
    if (st[0] == sizeof(out_t) && st[1] == sizeof(in_t)) {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<out_t>(f(static_cast<op_t>(a[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        auto x = *reinterpret_cast<const in_t*>(data[1] + i * st[1]);
        *reinterpret_cast<out_t*>(data[0] + i * st[0]) = static_cast<out_t>(f(static_cast<op_t>(x)));
      }
    }
  });
}

/// out[i] = f(a[i], b[i]).
template <typename out_t, typename in_t, typename F>
void binary_loop(TensorIterator& iter, const F& f) {
  using op_t = opmath_t<in_t>;
  iter.for_each([&](char** data, const int64_t* st, int64_t n) {
    auto* out = reinterpret_cast<out_t*>(data[0]);
    const auto* a = reinterpret_cast<const in_t*>(data[1]);
    const auto* b = reinterpret_cast<const in_t*>(data[2]);
    constexpr int64_t so = sizeof(out_t), si = sizeof(in_t);
    if (st[0] == so && st[1] == si && st[2] == si) {
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<out_t>(f(static_cast<op_t>(a[i]), static_cast<op_t>(b[i])));
    } else if (st[0] == so && st[1] == si && st[2] == 0) {
      const op_t bv = static_cast<op_t>(b[0]);
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<out_t>(f(static_cast<op_t>(a[i]), bv));
    } else if (st[0] == so && st[1] == 0 && st[2] == si) {
      const op_t av = static_cast<op_t>(a[0]);
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<out_t>(f(av, static_cast<op_t>(b[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        auto x = static_cast<op_t>(*reinterpret_cast<const in_t*>(data[1] + i * st[1]));
        auto y = static_cast<op_t>(*reinterpret_cast<const in_t*>(data[2] + i * st[2]));
        *reinterpret_cast<out_t*>(data[0] + i * st[0]) = static_cast<out_t>(f(x, y));
      }
    }
  });
}

/// out[i] = f(a[i], b[i], c[i]) with possibly different input types.
template <typename out_t, typename a_t, typename b_t, typename c_t, typename F>
void ternary_loop(TensorIterator& iter, const F& f) {
  iter.for_each([&](char** data, const int64_t* st, int64_t n) {
    constexpr int64_t so = sizeof(out_t), sa = sizeof(a_t), sb = sizeof(b_t), sc = sizeof(c_t);
    auto* out = reinterpret_cast<out_t*>(data[0]);
    const auto* a = reinterpret_cast<const a_t*>(data[1]);
    const auto* b = reinterpret_cast<const b_t*>(data[2]);
    const auto* c = reinterpret_cast<const c_t*>(data[3]);
    // Contiguous, and contiguous with a broadcast scalar last input (where(mask, x, 0)).
    if (st[0] == so && st[1] == sa && st[2] == sb && (st[3] == sc || st[3] == 0)) {
      if (st[3] == 0) {
        const auto z = static_cast<opmath_t<c_t>>(c[0]);
        for (int64_t i = 0; i < n; ++i)
          out[i] = static_cast<out_t>(f(static_cast<opmath_t<a_t>>(a[i]),
                                        static_cast<opmath_t<b_t>>(b[i]), z));
      } else {
        for (int64_t i = 0; i < n; ++i)
          out[i] = static_cast<out_t>(f(static_cast<opmath_t<a_t>>(a[i]),
                                        static_cast<opmath_t<b_t>>(b[i]),
                                        static_cast<opmath_t<c_t>>(c[i])));
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      auto x = static_cast<opmath_t<a_t>>(*reinterpret_cast<const a_t*>(data[1] + i * st[1]));
      auto y = static_cast<opmath_t<b_t>>(*reinterpret_cast<const b_t*>(data[2] + i * st[2]));
      auto z = static_cast<opmath_t<c_t>>(*reinterpret_cast<const c_t*>(data[3] + i * st[3]));
      *reinterpret_cast<out_t*>(data[0] + i * st[0]) = static_cast<out_t>(f(x, y, z));
    }
  });
}

}  // namespace retorch::cpu
