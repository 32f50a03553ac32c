// Direct depthwise convolution kernels: plane-by-plane correlation (forward and stride-1
// transposed), scatter-add (strided transposed) and per-channel tap sums (weight gradient).
#include "retorch/backend/cpu/ConvDepthwise.h"

#include <algorithm>
#include <vector>

#include "retorch/backend/cpu/Parallel.h"

namespace retorch::cpu {

// Note [Depthwise convolution]
// A depthwise convolution (groups == input channels, one input channel per group) has only
// kh*kw MACs per output, too few for im2col + one tiny GEMM per group to pay off, so it runs as
// plane-to-plane loops. Each input plane is first copied into its window Z, the zero-padded
// rectangle the kernel slides over (Z[r][c] = x[r - ph][c - pw], zero outside x; x itself when
// there is no padding): the copy is O(H*W) against O(H*W*kh*kw) MACs, and afterwards no loop
// tests bounds — the border columns and rows that would need checks simply read Z's zeros, and
// the loop over output columns ox is branch-free and, for stride 1, contiguous. gcc -O3
// (-march=native) vectorizes it: a 3x3 kernel sums its 9 taps per output in one register, other
// widths add one kernel row per pass while the output row stays in L1.
//
// The transposed convolution (the input gradient) with stride 1 is the same correlation, of the
// output-gradient plane with the flipped kernel and padding (k-1)*d - p (negative padding just
// crops Z), summed over the channel multiplier. With a larger stride it scatter-adds each
// output-gradient element through the taps into a zero-initialized window, whose inside is then
// added to the result. The weight gradient sums, per output channel, dot products of gradient
// rows with the tap's shifted window rows: per output column in the working type over one
// plane's rows (a vectorized multiply-add per row, no reduction chain), then in double.
//
// Threading: forward and transposed give each thread whole (n, channel) planes of the result,
// the weight gradient whole output channels (all samples), so no two threads write the same
// element, and each thread keeps its own window buffer.

namespace {

// A correlation of one in_h x in_w plane into one out_h x out_w plane; the padding may be
// negative (the transposed case's flipped padding).
struct Plane {
  int64_t in_h, in_w, out_h, out_w, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t zh() const { return (out_h - 1) * sh + (kh - 1) * dh + 1; }
  int64_t zw() const { return (out_w - 1) * sw + (kw - 1) * dw + 1; }
  // The input plane is its own window (no padding, rows of the window's width).
  bool unpadded() const { return ph == 0 && pw == 0 && zw() == in_w && zh() <= in_h; }
};

// Fills buf (zh x zw) with x's window; see Note [Depthwise convolution].
template <typename T>
const T* window(const T* x, const Plane& p, T* buf) {
  if (p.unpadded()) return x;
  const int64_t zh = p.zh(), zw = p.zw();
  // Window columns [c0, c1) lie inside x.
  const int64_t c0 = std::clamp<int64_t>(p.pw, 0, zw);
  const int64_t c1 = std::clamp<int64_t>(p.in_w + p.pw, c0, zw);
  for (int64_t r = 0; r < zh; ++r) {
    T* row = buf + r * zw;
    const int64_t iy = r - p.ph;
    if (iy < 0 || iy >= p.in_h || c0 == c1) {
      std::fill(row, row + zw, T(0));
      continue;
    }
    std::fill(row, row + c0, T(0));
    std::copy(x + iy * p.in_w + (c0 - p.pw), x + iy * p.in_w + (c1 - p.pw), row + c0);
    std::fill(row + c1, row + zw, T(0));
  }
  return buf;
}

// y[ox] += w * x[ox * sw] for ox in [0, n).
template <typename T>
void axpy_row(T* __restrict y, const T* __restrict x, T w, int64_t sw, int64_t n) {
  if (sw == 1) {
    for (int64_t ox = 0; ox < n; ++ox) y[ox] += w * x[ox];
  } else {
    for (int64_t ox = 0; ox < n; ++ox) y[ox] += w * x[ox * sw];
  }
}

// y[ox] += sum_j w[j] * x[ox + j*dw] for ox in [0, n): one kernel row at stride 1.
template <typename T, int KW>
void row_taps(T* __restrict y, const T* __restrict x, const T* __restrict w, int64_t dw,
              int64_t n) {
  T wr[KW];
  for (int j = 0; j < KW; ++j) wr[j] = w[j];
  for (int64_t ox = 0; ox < n; ++ox) {
    T acc = y[ox];
    for (int j = 0; j < KW; ++j) acc += wr[j] * x[ox + j * dw];
    y[ox] = acc;
  }
}

// y[ox] += sum_{i,j} w[3i + j] * x[i*ldx + ox + j*dw] for ox in [0, n): a whole 3x3 kernel at
// stride 1. DW > 0 fixes the column dilation at compile time, so that the taps are constant
// offsets from 3 row pointers rather than 9 pointers spilled out of registers.
template <typename T, int DW>
void block_3x3(T* __restrict y, const T* __restrict x, int64_t ldx, const T* __restrict w,
               int64_t dw, int64_t n) {
  T wr[9];
  for (int q = 0; q < 9; ++q) wr[q] = w[q];
  const int64_t d = DW > 0 ? DW : dw;
  const T* rows[3] = {x, x + ldx, x + 2 * ldx};
  for (int64_t ox = 0; ox < n; ++ox) {
    T acc = y[ox];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) acc += wr[i * 3 + j] * rows[i][ox + j * d];
    y[ox] = acc;
  }
}

// y += the window z (zw columns) correlated with the kh x kw kernel w.
template <typename T>
void correlate(const T* z, int64_t zw, const T* w, T* y, const Plane& p) {
  const int64_t ldx = p.dh * zw, n = p.out_w;
  for (int64_t oy = 0; oy < p.out_h; ++oy) {
    T* yr = y + oy * n;
    const T* zr = z + oy * p.sh * zw;
    if (p.sw == 1 && p.kh == 3 && p.kw == 3) {
      if (p.dw == 1) {
        block_3x3<T, 1>(yr, zr, ldx, w, 1, n);
      } else {
        block_3x3<T, 0>(yr, zr, ldx, w, p.dw, n);
      }
    } else if (p.sw == 1 && (p.kw == 3 || p.kw == 5 || p.kw == 7)) {
      for (int64_t i = 0; i < p.kh; ++i) {
        const T* wi = w + i * p.kw;
        const T* xi = zr + i * ldx;
        switch (p.kw) {
          case 3:
            row_taps<T, 3>(yr, xi, wi, p.dw, n);
            break;
          case 5:
            row_taps<T, 5>(yr, xi, wi, p.dw, n);
            break;
          default:
            row_taps<T, 7>(yr, xi, wi, p.dw, n);
            break;
        }
      }
    } else {
      for (int64_t i = 0; i < p.kh; ++i)
        for (int64_t j = 0; j < p.kw; ++j)
          axpy_row(yr, zr + i * ldx + j * p.dw, w[i * p.kw + j], p.sw, n);
    }
  }
}

// zg (a zh x zw window, zw columns) += the adjoint of correlate applied to gy.
template <typename T>
void scatter(const T* gy, const T* w, T* zg, int64_t zw, const Plane& p) {
  for (int64_t oy = 0; oy < p.out_h; ++oy) {
    const T* gr = gy + oy * p.out_w;
    for (int64_t i = 0; i < p.kh; ++i) {
      T* zr = zg + (oy * p.sh + i * p.dh) * zw;
      for (int64_t j = 0; j < p.kw; ++j) {
        const T wv = w[i * p.kw + j];
        T* d = zr + j * p.dw;
        for (int64_t ox = 0; ox < p.out_w; ++ox) d[ox * p.sw] += wv * gr[ox];
      }
    }
  }
}

// acc[ox] += g[ox] * z[ox * sw] for ox in [0, n).
template <typename T>
void mul_acc_row(T* __restrict acc, const T* __restrict g, const T* __restrict z, int64_t sw,
                 int64_t n) {
  if (sw == 1) {
    for (int64_t ox = 0; ox < n; ++ox) acc[ox] += g[ox] * z[ox];
  } else {
    for (int64_t ox = 0; ox < n; ++ox) acc[ox] += g[ox] * z[ox * sw];
  }
}

// Planes per parallel chunk: about 16K MACs, at least one plane (grain 0 is not allowed).
int64_t plane_grain(int64_t macs_per_plane) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, macs_per_plane));
}

Plane forward_plane(const DepthwiseShape& s) {
  return {s.H, s.W, s.oh, s.ow, s.kh, s.kw, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw};
}

template <typename T>
void forward_impl(const T* x, const T* w, const T* bias, T* y, int64_t N, const DepthwiseShape& s) {
  const Plane p = forward_plane(s);
  const int64_t in_plane = s.H * s.W, out_plane = s.oh * s.ow, K = s.kh * s.kw;
  const int64_t zw = p.unpadded() ? s.W : p.zw();
  parallel_for(0, N * s.C, plane_grain(out_plane * K * s.m), [&](int64_t b, int64_t e) {
    std::vector<T> buf(p.unpadded() ? 0 : size_t(p.zh() * p.zw()));
    for (int64_t q = b; q < e; ++q) {  // q = n*C + c: one input plane, m output planes
      const T* z = window(x + q * in_plane, p, buf.data());
      for (int64_t k = 0; k < s.m; ++k) {
        const int64_t co = q % s.C * s.m + k;
        T* yp = y + (q * s.m + k) * out_plane;
        std::fill(yp, yp + out_plane, bias ? bias[co] : T(0));
        correlate(z, zw, w + co * K, yp, p);
      }
    }
  });
}

template <typename T>
void transposed_impl(const T* gy, const T* w, const T* bias, T* gx, int64_t N,
                     const DepthwiseShape& s) {
  const int64_t CM = s.C * s.m, in_plane = s.H * s.W, out_plane = s.oh * s.ow, K = s.kh * s.kw;
  const bool gather = s.sh == 1 && s.sw == 1;
  // Stride 1: gy's window correlated with the flipped kernel gives gx. Otherwise gy scatters
  // through the forward taps into the forward window, whose inside is gx.
  const Plane p = gather ? Plane{s.oh,
                                 s.ow,
                                 s.H,
                                 s.W,
                                 s.kh,
                                 s.kw,
                                 1,
                                 1,
                                 s.dh * (s.kh - 1) - s.ph,
                                 s.dw * (s.kw - 1) - s.pw,
                                 s.dh,
                                 s.dw}
                         : forward_plane(s);
  const int64_t zh = p.zh(), zw = gather && p.unpadded() ? s.ow : p.zw();
  std::vector<T> flipped;
  if (gather) {
    flipped.resize(size_t(CM * K));
    for (int64_t q = 0; q < CM * K; ++q) flipped[size_t(q)] = w[q / K * K + (K - 1 - q % K)];
  }
  parallel_for(0, N * s.C, plane_grain(in_plane * K * s.m), [&](int64_t b, int64_t e) {
    std::vector<T> buf(size_t(zh * p.zw()));
    for (int64_t q = b; q < e; ++q) {  // q = n*C + c: one gx plane from m gy planes
      const int64_t c = q % s.C;
      T* xp = gx + q * in_plane;
      std::fill(xp, xp + in_plane, bias ? bias[c] : T(0));
      if (!gather) std::fill(buf.begin(), buf.end(), T(0));
      for (int64_t k = 0; k < s.m; ++k) {
        const int64_t co = c * s.m + k;
        const T* gp = gy + (q * s.m + k) * out_plane;
        if (gather) {
          correlate(window(gp, p, buf.data()), zw, flipped.data() + co * K, xp, p);
        } else {
          scatter(gp, w + co * K, buf.data(), zw, p);
        }
      }
      if (gather) continue;
      // gx[iy, ix] += window[iy + ph, ix + pw] where the window covers it.
      const int64_t r1 = std::min(s.H, zh - s.ph), c1 = std::min(s.W, zw - s.pw);
      for (int64_t iy = 0; iy < r1; ++iy) {
        const T* zr = buf.data() + (iy + s.ph) * zw + s.pw;
        T* xr = xp + iy * s.W;
        for (int64_t ix = 0; ix < c1; ++ix) xr[ix] += zr[ix];
      }
    }
  });
}

template <typename T>
void weight_grad_impl(const T* gy, const T* x, T* gw, int64_t N, const DepthwiseShape& s) {
  const Plane p = forward_plane(s);
  const int64_t CM = s.C * s.m, in_plane = s.H * s.W, out_plane = s.oh * s.ow, K = s.kh * s.kw;
  const int64_t zw = p.unpadded() ? s.W : p.zw();
  parallel_for(0, CM, plane_grain(N * out_plane * K), [&](int64_t b, int64_t e) {
    std::vector<double> acc(static_cast<size_t>(K), 0.0);
    std::vector<T> cols(size_t(K * s.ow));  // per tap, per output column: one plane's sums
    std::vector<T> buf(p.unpadded() ? 0 : size_t(p.zh() * p.zw()));
    for (int64_t co = b; co < e; ++co) {
      std::fill(acc.begin(), acc.end(), 0.0);
      const int64_t c = co / s.m;
      for (int64_t n = 0; n < N; ++n) {
        const T* gp = gy + (n * CM + co) * out_plane;
        const T* z = window(x + (n * s.C + c) * in_plane, p, buf.data());
        std::fill(cols.begin(), cols.end(), T(0));
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          const T* gr = gp + oy * s.ow;
          for (int64_t i = 0; i < s.kh; ++i) {
            const T* zr = z + (oy * s.sh + i * s.dh) * zw;
            for (int64_t j = 0; j < s.kw; ++j)
              mul_acc_row(cols.data() + (i * s.kw + j) * s.ow, gr, zr + j * s.dw, s.sw, s.ow);
          }
        }
        for (int64_t q = 0; q < K; ++q) {
          const T* cq = cols.data() + q * s.ow;
          double sum = 0;
          for (int64_t ox = 0; ox < s.ow; ++ox) sum += double(cq[ox]);
          acc[size_t(q)] += sum;
        }
      }
      for (int64_t q = 0; q < K; ++q) gw[co * K + q] = T(acc[size_t(q)]);
    }
  });
}

}  // namespace

bool depthwise_applies(int64_t multiplier) {
  return multiplier >= 1 && multiplier <= 8;
}

void depthwise_conv2d(const float* x, const float* w, const float* bias, float* y, int64_t N,
                      const DepthwiseShape& s) {
  forward_impl(x, w, bias, y, N, s);
}
void depthwise_conv2d(const double* x, const double* w, const double* bias, double* y, int64_t N,
                      const DepthwiseShape& s) {
  forward_impl(x, w, bias, y, N, s);
}

void depthwise_conv2d_transposed(const float* gy, const float* w, const float* bias, float* gx,
                                 int64_t N, const DepthwiseShape& s) {
  transposed_impl(gy, w, bias, gx, N, s);
}
void depthwise_conv2d_transposed(const double* gy, const double* w, const double* bias, double* gx,
                                 int64_t N, const DepthwiseShape& s) {
  transposed_impl(gy, w, bias, gx, N, s);
}

void depthwise_conv2d_weight_grad(const float* gy, const float* x, float* gw, int64_t N,
                                  const DepthwiseShape& s) {
  weight_grad_impl(gy, x, gw, N, s);
}
void depthwise_conv2d_weight_grad(const double* gy, const double* x, double* gw, int64_t N,
                                  const DepthwiseShape& s) {
  weight_grad_impl(gy, x, gw, N, s);
}

}  // namespace retorch::cpu
