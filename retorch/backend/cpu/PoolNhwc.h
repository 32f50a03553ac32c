// Channels-last (NHWC) pooling loops: every output pixel runs over its window with the channel
// dim innermost, so each tap is one contiguous, vectorizable run of C values.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Dtypes.h"

namespace retorch::cpu::nhwc {

// A pooling window clipped to the input: rows h0, h0 + dh, ... < h1 (columns alike), and the
// divisor of an average pool.
struct Window {
  int64_t h0, h1, dh, w0, w1, dw, div;
};

/// Max pool of x [N, H, W, C] into y, ind [N, OH, OW, C]; ind holds the flat h * W + w of each
/// channel's first maximum (PyTorch's per-plane index), a NaN wins like window_max.
/// window(oy, ox) gives the clipped window. The running index is int32 (planes are checked to
/// fit) so it has the width of a float lane and the compare-and-blend loop vectorizes. Output
/// pixel p's channel c goes to y[p * C + c] (ind likewise), or, given out_plane, to
/// y[c * out_plane + p]: NCHW planes (Note [NCHW max pool in NHWC blocks]).
template <typename scalar_t, typename WindowFn>
void max_pool(const scalar_t* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t OH,
              int64_t OW, const WindowFn& window, scalar_t* y, int64_t* ind,
              int64_t out_plane = 0) {
  using acc_t = opmath_t<scalar_t>;
  RT_CHECK(H * W <= std::numeric_limits<int32_t>::max(), "max_pool2d: an input plane of ", H,
           "x", W, " elements is too large for the channels-last kernel");
  // Channels go V at a time through every tap of a pixel's window, their maxima and indices in
  // registers: V / 16 independent compare-and-select chains per tap (one chain stalls on each
  // compare's latency; through arrays, on the loads and stores of the running values).
  constexpr int64_t V = 64;
  parallel_for(0, N * OH * OW, std::max<int64_t>(1, 2048 / std::max<int64_t>(C, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t n = p / (OH * OW), oy = p / OW % OH, ox = p % OW;
      const Window w = window(oy, ox);
      const int32_t first = int32_t(w.h0 * W + w.w0);
      const scalar_t* xn = x + n * H * W * C;
      // Channels [c0, c0 + m), m <= V (a compile-time V but in the tail).
      auto block = [&](int64_t c0, auto m) {
        acc_t bp[V];
        int32_t ap[V];
        for (int64_t c = 0; c < m; ++c) {
          bp[c] = -std::numeric_limits<acc_t>::infinity();
          ap[c] = first;
        }
        for (int64_t h = w.h0; h < w.h1; h += w.dh) {
          for (int64_t wx = w.w0; wx < w.w1; wx += w.dw) {
            const int32_t at = int32_t(h * W + wx);
            const scalar_t* __restrict xp = xn + int64_t(at) * C + c0;
            _Pragma("omp simd")
            for (int64_t c = 0; c < m; ++c) {
              const acc_t v = acc_t(xp[c]);
              const bool take = (v > bp[c]) | (v != v);
              bp[c] = take ? v : bp[c];
              ap[c] = take ? at : ap[c];
            }
          }
        }
        if (out_plane) {  // NCHW planes
          for (int64_t c = 0; c < m; ++c) {
            y[(c0 + c) * out_plane + p] = scalar_t(bp[c]);
            ind[(c0 + c) * out_plane + p] = ap[c];
          }
          return;
        }
        scalar_t* __restrict yp = y + p * C + c0;
        int64_t* __restrict ip = ind + p * C + c0;
        _Pragma("omp simd")
        for (int64_t c = 0; c < m; ++c) {
          yp[c] = scalar_t(bp[c]);
          ip[c] = ap[c];
        }
      };
      int64_t c0 = 0;
      for (; c0 + V <= C; c0 += V) block(c0, std::integral_constant<int64_t, V>());
      if (c0 < C) block(c0, C - c0);
    }
  });
}

/// Average pool of x [N, H, W, C] into y [N, OH, OW, C]; an empty window gives 0.
template <typename scalar_t, typename WindowFn>
void avg_pool(const scalar_t* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t OH,
              int64_t OW, const WindowFn& window, scalar_t* y) {
  using acc_t = opmath_t<scalar_t>;
  parallel_for(0, N * OH * OW, std::max<int64_t>(1, 2048 / std::max<int64_t>(C, 1)),
               [&](int64_t b, int64_t e) {
    std::vector<acc_t> sum(static_cast<size_t>(C));
    for (int64_t p = b; p < e; ++p) {
      const int64_t n = p / (OH * OW), oy = p / OW % OH, ox = p % OW;
      const Window w = window(oy, ox);
      acc_t* sp = sum.data();
      std::fill(sum.begin(), sum.end(), acc_t(0));
      for (int64_t h = w.h0; h < w.h1; ++h) {
        for (int64_t wx = w.w0; wx < w.w1; ++wx) {
          const scalar_t* xp = x + ((n * H + h) * W + wx) * C;
          _Pragma("omp simd")
          for (int64_t c = 0; c < C; ++c) sp[c] += acc_t(xp[c]);
        }
      }
      const bool empty = w.h0 >= w.h1 || w.w0 >= w.w1;
      scalar_t* yp = y + p * C;
      for (int64_t c = 0; c < C; ++c)
        yp[c] = empty ? scalar_t(0) : scalar_t(sp[c] / acc_t(w.div));
    }
  });
}

/// Backward of avg_pool: gi [N, H, W, C] gets each g [N, OH, OW, C] / div spread over its
/// window; images in parallel, summed in acc_t.
template <typename scalar_t, typename WindowFn>
void avg_pool_backward(const scalar_t* g, int64_t N, int64_t H, int64_t W, int64_t C,
                       int64_t OH, int64_t OW, const WindowFn& window, scalar_t* gi) {
  using acc_t = opmath_t<scalar_t>;
  const int64_t HWC = H * W * C;
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    std::vector<acc_t> acc(static_cast<size_t>(HWC));
    for (int64_t n = b; n < e; ++n) {
      std::fill(acc.begin(), acc.end(), acc_t(0));
      for (int64_t oy = 0; oy < OH; ++oy) {
        for (int64_t ox = 0; ox < OW; ++ox) {
          const Window w = window(oy, ox);
          const scalar_t* gp = g + ((n * OH + oy) * OW + ox) * C;
          const acc_t inv = acc_t(1) / acc_t(w.div);
          for (int64_t h = w.h0; h < w.h1; ++h) {
            for (int64_t wx = w.w0; wx < w.w1; ++wx) {
              acc_t* ap = acc.data() + (h * W + wx) * C;
              _Pragma("omp simd")
              for (int64_t c = 0; c < C; ++c) ap[c] += acc_t(gp[c]) * inv;
            }
          }
        }
      }
      scalar_t* out = gi + n * HWC;
      for (int64_t i = 0; i < HWC; ++i) out[i] = scalar_t(acc[size_t(i)]);
    }
  });
}

/// Backward of max_pool: gi [N, H, W, C] (zeroed here) gets g [N, L, C] at each channel's index.
template <typename scalar_t>
void max_pool_backward(const scalar_t* g, const int64_t* ind, int64_t N, int64_t HW, int64_t L,
                       int64_t C, scalar_t* gi, const char* op) {
  using acc_t = opmath_t<scalar_t>;
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    std::vector<acc_t> acc(static_cast<size_t>(HW * C));
    for (int64_t n = b; n < e; ++n) {
      std::fill(acc.begin(), acc.end(), acc_t(0));
      for (int64_t o = 0; o < L; ++o) {
        const scalar_t* gp = g + (n * L + o) * C;
        const int64_t* ip = ind + (n * L + o) * C;
        for (int64_t c = 0; c < C; ++c) {
          const int64_t j = ip[c];
          RT_CHECK_INDEX(j >= 0 && j < HW, op, ": index ", j, " is out of bounds for a plane of ",
                         HW, " elements");
          acc[size_t(j * C + c)] += acc_t(gp[c]);
        }
      }
      scalar_t* out = gi + n * HW * C;
      for (int64_t i = 0; i < HW * C; ++i) out[i] = scalar_t(acc[size_t(i)]);
    }
  });
}

}  // namespace retorch::cpu::nhwc
