// chunked_unary: a unary op whose kernel runs over work buffers of its compute type, a chunk of
// elements at a time (the Bessel, Airy and normal-distribution functions of torch.special).
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "retorch/backend/cpu/Loops.h"

namespace retorch::cpu {

/// out = f(x, r, m, work) over copies of self's elements in the compute type (double with
/// kInDouble, else the dtype's opmath type), kChunk at a time, the tail padded with zeros to a
/// multiple of kPad; contiguous spans are read and written in loops the compiler vectorizes.
/// Integers compute in the default float dtype. Work<compute type> is one task's scratch.
template <bool kInDouble, int64_t kChunk, int64_t kPad, template <typename> class Work, typename F>
void chunked_unary(const char* name, const Tensor& self, Tensor& out, int64_t grain, const F& f) {
  static_assert(kChunk % kPad == 0);
  TensorIterator iter(out, {self}, {.name = name, .int_to_float = true});
  RT_DISPATCH_FLOATING(iter.common_dtype(), name, [&] {
    using C = std::conditional_t<kInDouble, double, opmath_t<scalar_t>>;
    iter.for_each(
        [&](char** data, const int64_t* st, int64_t n) {
          alignas(64) C xb[kChunk], rb[kChunk];
          Work<C> w;
          for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
            const int64_t m = std::min(kChunk, n - i0);
            const int64_t padded = (m + kPad - 1) / kPad * kPad;
            const char* in = data[1] + i0 * st[1];
            if (st[1] == sizeof(scalar_t))
              for (int64_t j = 0; j < m; ++j) xb[j] = C(reinterpret_cast<const scalar_t*>(in)[j]);
            else
              for (int64_t j = 0; j < m; ++j)
                xb[j] = C(*reinterpret_cast<const scalar_t*>(in + j * st[1]));
            std::fill(xb + m, xb + padded, C(0));
            f(xb, rb, padded, w);
            char* o = data[0] + i0 * st[0];
            if (st[0] == sizeof(scalar_t))
              for (int64_t j = 0; j < m; ++j) reinterpret_cast<scalar_t*>(o)[j] = scalar_t(rb[j]);
            else
              for (int64_t j = 0; j < m; ++j)
                *reinterpret_cast<scalar_t*>(o + j * st[0]) = scalar_t(rb[j]);
          }
        },
        grain);
  });
  iter.finish();
}

}  // namespace retorch::cpu
