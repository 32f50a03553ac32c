// Elementwise loop helpers over a TensorIterator: unary, binary and ternary kernels with
// contiguous and scalar-broadcast fast paths. Arithmetic happens in opmath_t (float for
// the 16-bit floats, widened a block at a time: Note [16-bit float loops]).
#pragma once
#include <algorithm>
#include <type_traits>

#include "retorch/backend/cpu/Convert16.h"
#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/core/Dtypes.h"

namespace retorch::cpu {

namespace loops {
// The float32 values of in[0..m) (m <= kConvertBlock): in itself for float, else widened into
// buf. See Note [16-bit float loops].
template <typename T>
const float* widen(const T* in, float* buf, int64_t m) {
  if constexpr (std::is_same_v<T, float>) {
    return in;
  } else {
    to_float(in, buf, m);
    return buf;
  }
}

// out[j] = g(j) for j < m, through a float32 block narrowed at once when out_t is 16-bit.
template <typename out_t, typename G>
void store_block(out_t* out, int64_t m, const G& g) {
  if constexpr (is_float16_v<out_t>) {
    alignas(32) float ob[kConvertBlock];
    for (int64_t j = 0; j < m; ++j) ob[j] = static_cast<float>(g(j));
    from_float(ob, out, m);
  } else {
    for (int64_t j = 0; j < m; ++j) out[j] = static_cast<out_t>(g(j));
  }
}

// True when a contiguous loop over in_t -> out_t takes the blocked 16-bit path: one side is
// Half/BFloat16 and the arithmetic is float32.
template <typename out_t, typename in_t>
constexpr bool kBlocked16 = (is_float16_v<in_t> || is_float16_v<out_t>) &&
                            std::is_same_v<opmath_t<in_t>, float> &&
                            (is_float16_v<in_t> || std::is_same_v<in_t, float>);
}  // namespace loops

/// unary_loop's work on one span of the iterator (data and strides as for_each passes them);
/// kernels with their own fast path for some spans fall back to it for the others.
template <typename out_t, typename in_t, typename F>
void unary_span(char** data, const int64_t* st, int64_t n, const F& f) {
  using op_t = opmath_t<in_t>;
  auto* out = reinterpret_cast<out_t*>(data[0]);
  const auto* a = reinterpret_cast<const in_t*>(data[1]);
  if (st[0] == sizeof(out_t) && st[1] == sizeof(in_t)) {
    if constexpr (loops::kBlocked16<out_t, in_t>) {
      for (int64_t i0 = 0; i0 < n; i0 += kConvertBlock) {
        const int64_t m = std::min(kConvertBlock, n - i0);
        alignas(32) float ab[kConvertBlock];
        const float* x = loops::widen(a + i0, ab, m);
        loops::store_block(out + i0, m, [&](int64_t j) { return f(x[j]); });
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<out_t>(f(static_cast<op_t>(a[i])));
  } else if (st[0] == sizeof(out_t) && st[1] == 0) {
    // A broadcast input (an expanded gradient copied out, as a sum's backward is): one value
    // stored n times, a loop that vectorizes, where the strided one stored an element at a time.
    const out_t v = static_cast<out_t>(f(static_cast<op_t>(a[0])));
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      auto x = *reinterpret_cast<const in_t*>(data[1] + i * st[1]);
      *reinterpret_cast<out_t*>(data[0] + i * st[0]) = static_cast<out_t>(f(static_cast<op_t>(x)));
    }
  }
}

/// out[i] = f(a[i]); f takes and returns opmath values (or returns out_t directly).
template <typename out_t, typename in_t, typename F>
void unary_loop(TensorIterator& iter, const F& f) {
  iter.for_each([&](char** data, const int64_t* st, int64_t n) {
    unary_span<out_t, in_t>(data, st, n, f);
  });
}

namespace loops {
// binary_loop's contiguous 16-bit path: a and b are contiguous or (when !va / !vb) a broadcast
// scalar. See Note [16-bit float loops].
template <typename out_t, typename in_t, typename F>
void binary_blocked16(out_t* out, const in_t* a, const in_t* b, bool va, bool vb, int64_t n,
                      const F& f) {
  const float as = float(a[0]), bs = float(b[0]);
  for (int64_t i0 = 0; i0 < n; i0 += kConvertBlock) {
    const int64_t m = std::min(kConvertBlock, n - i0);
    alignas(32) float ab[kConvertBlock], bb[kConvertBlock];
    const float* x = va ? widen(a + i0, ab, m) : nullptr;
    const float* y = vb ? widen(b + i0, bb, m) : nullptr;
    if (va && vb) store_block(out + i0, m, [&](int64_t j) { return f(x[j], y[j]); });
    else if (va) store_block(out + i0, m, [&](int64_t j) { return f(x[j], bs); });
    else if (vb) store_block(out + i0, m, [&](int64_t j) { return f(as, y[j]); });
    else store_block(out + i0, m, [&](int64_t) { return f(as, bs); });
  }
}
}  // namespace loops

/// binary_loop's work on one span of the iterator, as unary_span.
template <typename out_t, typename in_t, typename F>
void binary_span(char** data, const int64_t* st, int64_t n, const F& f) {
  using op_t = opmath_t<in_t>;
  auto* out = reinterpret_cast<out_t*>(data[0]);
  const auto* a = reinterpret_cast<const in_t*>(data[1]);
  const auto* b = reinterpret_cast<const in_t*>(data[2]);
  constexpr int64_t so = sizeof(out_t), si = sizeof(in_t);
  if constexpr (loops::kBlocked16<out_t, in_t>) {
    if (st[0] == so && (st[1] == si || st[1] == 0) && (st[2] == si || st[2] == 0)) {
      loops::binary_blocked16<out_t>(out, a, b, st[1] != 0, st[2] != 0, n, f);
      return;
    }
  }
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
}

/// out[i] = f(a[i], b[i]).
template <typename out_t, typename in_t, typename F>
void binary_loop(TensorIterator& iter, const F& f) {
  iter.for_each([&](char** data, const int64_t* st, int64_t n) {
    binary_span<out_t, in_t>(data, st, n, f);
  });
}

namespace loops {
// For binary loops with a vector part: when the span's output is contiguous and each input is
// contiguous or a broadcast scalar, calls body(x, y, out, m) on L1-sized chunks (x and y point
// into the inputs, or at a chunk filled with the broadcast value) and returns true, unless body
// returns false (no vector form on this CPU: the first chunk, before writing anything).
template <typename T, typename Body>
bool binary_chunks(char** data, const int64_t* st, int64_t n, const Body& body) {
  constexpr int64_t s = sizeof(T), kChunk = 512;
  if (st[0] != s || (st[1] != s && st[1] != 0) || (st[2] != s && st[2] != 0)) return false;
  auto* out = reinterpret_cast<T*>(data[0]);
  const auto* a = reinterpret_cast<const T*>(data[1]);
  const auto* b = reinterpret_cast<const T*>(data[2]);
  alignas(64) T ab[kChunk], bb[kChunk];
  if (st[1] == 0) std::fill(ab, ab + std::min(kChunk, n), a[0]);
  if (st[2] == 0) std::fill(bb, bb + std::min(kChunk, n), b[0]);
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    if (!body(st[1] ? a + i0 : ab, st[2] ? b + i0 : bb, out + i0, m)) return false;
  }
  return true;
}

template <typename T>
constexpr bool kVecFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;

// binary_chunks for float16/bfloat16 spans: each chunk widened to float32, body's float form
// run on it, the result rounded once (what the scalar loop's float opmath gives, a chunk at a
// time). Contiguous spans only.
template <typename T, typename Body>
bool binary_chunks_widened(char** data, const int64_t* st, int64_t n, const Body& body) {
  constexpr int64_t s = sizeof(T), kChunk = 512;
  if (st[0] != s || st[1] != s || st[2] != s) return false;
  auto* out = reinterpret_cast<T*>(data[0]);
  const auto* a = reinterpret_cast<const T*>(data[1]);
  const auto* b = reinterpret_cast<const T*>(data[2]);
  alignas(64) float af[kChunk], bf[kChunk], of[kChunk];
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    to_float(a + i0, af, m);
    to_float(b + i0, bf, m);
    if (!body(static_cast<const float*>(af), static_cast<const float*>(bf), of, m)) return false;
    from_float(of, out + i0, m);
  }
  return true;
}
}  // namespace loops

/// binary_loop for a function with a vector form (VecMath.h): float/double spans that
/// loops::binary_chunks takes run vec_binary(fn) a chunk at a time, then
/// out[i] = fix(a[i], b[i], r[i]) on its result r (remainder's sign fix, say: a loop the compiler
/// vectorizes); everything else runs f per element.
template <typename scalar_t, typename F, typename Fix>
void binary_vec_loop(TensorIterator& iter, VecFn2 fn, const F& f, const Fix& fix) {
  iter.for_each([&](char** data, const int64_t* st, int64_t n) {
    if constexpr (loops::kVecFloat<scalar_t>) {
      alignas(64) scalar_t r[512];
      auto body = [&](const scalar_t* x, const scalar_t* y, scalar_t* o, int64_t m) {
        if (!vec_binary(fn, x, y, r, m)) return false;
        for (int64_t j = 0; j < m; ++j) o[j] = fix(x[j], y[j], r[j]);
        return true;
      };
      if (loops::binary_chunks<scalar_t>(data, st, n, body)) return;
    }
    binary_span<scalar_t, scalar_t>(data, st, n, f);
  });
}

/// binary_loop for a function built from one-argument vector functions: on the spans of
/// binary_vec_loop, t[i] = pre(a[i], b[i]) goes through the vector functions `fns` in turn and
/// out[i] = finish(a[i], b[i], t[i]) (logaddexp: -|a - b|, exp, log1p, then max + t); elsewhere
/// f per element.
template <typename scalar_t, size_t kFns, typename F, typename Pre, typename Finish>
void binary_unary_chain_loop(TensorIterator& iter, const VecFn (&fns)[kFns], const F& f,
                             const Pre& pre, const Finish& finish) {
  iter.for_each([&](char** data, const int64_t* st, int64_t n) {
    if constexpr (loops::kVecFloat<scalar_t>) {
      alignas(64) scalar_t t[512];
      auto body = [&](const scalar_t* x, const scalar_t* y, scalar_t* o, int64_t m) {
        for (int64_t j = 0; j < m; ++j) t[j] = pre(x[j], y[j]);
        for (VecFn fn : fns)
          if (!vec_unary(fn, t, t, m)) return false;
        for (int64_t j = 0; j < m; ++j) o[j] = finish(x[j], y[j], t[j]);
        return true;
      };
      if (loops::binary_chunks<scalar_t>(data, st, n, body)) return;
    }
    binary_span<scalar_t, scalar_t>(data, st, n, f);
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
    // Each input contiguous or a broadcast scalar (where(mask, x, 0); a column mask's rows),
    // one loop per combination: a runtime stride of 0 or 1 in the index kept the loop scalar
    // (where over [1024, 1024] with a [1024, 1] mask 1.7x PyTorch's time).
    if (st[0] == so && (st[1] == sa || st[1] == 0) && (st[2] == sb || st[2] == 0) &&
        (st[3] == sc || st[3] == 0)) {
      auto run = [&](auto ka, auto kb, auto kc) {
        constexpr bool A = decltype(ka)::value, B = decltype(kb)::value, Cb = decltype(kc)::value;
        for (int64_t i = 0; i < n; ++i)
          out[i] = static_cast<out_t>(f(static_cast<opmath_t<a_t>>(a[A ? 0 : i]),
                                        static_cast<opmath_t<b_t>>(b[B ? 0 : i]),
                                        static_cast<opmath_t<c_t>>(c[Cb ? 0 : i])));
      };
      using T1 = std::true_type;
      using F0 = std::false_type;
      const int k = (st[1] == 0) * 4 + (st[2] == 0) * 2 + (st[3] == 0);
      switch (k) {
        case 0: run(F0{}, F0{}, F0{}); break;
        case 1: run(F0{}, F0{}, T1{}); break;
        case 2: run(F0{}, T1{}, F0{}); break;
        case 3: run(F0{}, T1{}, T1{}); break;
        case 4: run(T1{}, F0{}, F0{}); break;
        case 5: run(T1{}, F0{}, T1{}); break;
        case 6: run(T1{}, T1{}, F0{}); break;
        default: run(T1{}, T1{}, T1{}); break;
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
