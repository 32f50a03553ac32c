// Convolution on the CPU: im2col/col2im plus OpenBLAS GEMMs for convolution (plain and
// transposed) and its weight gradient, and the im2col/col2im ops behind F.unfold / F.fold.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "retorch/backend/cpu/Blas.h"
#include "retorch/backend/cpu/ConvDepthwise.h"
#include "retorch/backend/cpu/ConvDirect.h"
#include "retorch/backend/cpu/ConvOneDnn.h"
#include "retorch/backend/cpu/ConvRows.h"
#include "retorch/backend/cpu/GemmOneDnn.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

// One 2-d sliding window over a C x H x W image: kernel, padding, stride, dilation, and the
// number of window positions (oh x ow), which transposed convolutions fix from their input.
struct Window {
  int64_t C, H, W;
  int64_t kh, kw, ph, pw, sh, sw, dh, dw;
  int64_t oh, ow;
  int64_t rows() const { return C * kh * kw; }
  int64_t cols() const { return oh * ow; }
};

// A band of window rows [y0, y1): im2col/col2im work on bands so that the column buffer of a
// band stays in L2 while the GEMM reads it (see Note [Conv threading]).
struct Band {
  int64_t y0, y1;
  int64_t cols(const Window& g) const { return (y1 - y0) * g.ow; }
};

// Copies the windows of image channels [c0, c1) and window rows `band` into cols
// ([C*kh*kw, band.cols], row-major).
template <typename T>
void im2col_rows(const T* x, const Window& g, T* cols, int64_t c0, int64_t c1, Band band) {
  const int64_t L = band.cols(g);
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = cols + ((c * g.kh + i) * g.kw + j) * L;
        const int64_t off = j * g.dw - g.pw;
        // Output columns whose input column ox * sw + off lies inside [0, W).
        int64_t lo = off >= 0 ? 0 : std::min(g.ow, (-off + g.sw - 1) / g.sw);
        int64_t hi = g.W - off <= 0 ? 0 : std::min(g.ow, (g.W - off + g.sw - 1) / g.sw);
        hi = std::max(hi, lo);
        for (int64_t y = band.y0; y < band.y1; ++y) {
          T* r = row + (y - band.y0) * g.ow;
          const int64_t iy = y * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.H) {
            std::fill(r, r + g.ow, T(0));
            continue;
          }
          const T* xr = x + (c * g.H + iy) * g.W;
          std::fill(r, r + lo, T(0));
          if (g.sw == 1) {
            std::memcpy(r + lo, xr + lo + off, size_t(hi - lo) * sizeof(T));
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) r[ox] = xr[ox * g.sw + off];
          }
          std::fill(r + hi, r + g.ow, T(0));
        }
      }
    }
  }
}

// Adds cols back into image channels [c0, c1): the adjoint of im2col_rows.
template <typename T, typename Acc = T>
void col2im_rows(const T* cols, const Window& g, T* x, int64_t c0, int64_t c1, Band band) {
  const int64_t L = band.cols(g);
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = cols + ((c * g.kh + i) * g.kw + j) * L;
        const int64_t off = j * g.dw - g.pw;
        int64_t lo = off >= 0 ? 0 : std::min(g.ow, (-off + g.sw - 1) / g.sw);
        int64_t hi = g.W - off <= 0 ? 0 : std::min(g.ow, (g.W - off + g.sw - 1) / g.sw);
        for (int64_t y = band.y0; y < band.y1; ++y) {
          const int64_t iy = y * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.H) continue;
          const T* r = row + (y - band.y0) * g.ow;
          T* xr = x + (c * g.H + iy) * g.W;
          if (g.sw == 1) {
            T* d = xr + off;
            for (int64_t ox = lo; ox < hi; ++ox) d[ox] = T(Acc(d[ox]) + Acc(r[ox]));
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) {
              T& d = xr[ox * g.sw + off];
              d = T(Acc(d) + Acc(r[ox]));
            }
          }
        }
      }
    }
  }
}

// Splits channel ranges over threads; each channel's work is about rows/C * cols elements.
int64_t channel_grain(const Window& g) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, g.kh * g.kw * g.cols()));
}

template <typename T>
void im2col_image(const T* x, const Window& g, T* cols, Band band) {
  parallel_for(0, g.C, channel_grain(g),
               [&](int64_t b, int64_t e) { im2col_rows(x, g, cols, b, e, band); });
}


// Window rows per band: about 256 KB of columns, whole rows, at least one.
int64_t band_rows(const Window& g, size_t elem_size) {
  int64_t per_row = std::max<int64_t>(1, g.rows() * g.ow * int64_t(elem_size));
  return std::clamp<int64_t>((int64_t(256) << 10) / per_row, 1, std::max<int64_t>(g.oh, 1));
}

// C[M,N] = op(A) op(B) + beta C, row-major.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              int(M), int(N), int(K), 1.0f, A, int(lda), B, int(ldb), beta, C, int(ldc));
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              int(M), int(N), int(K), 1.0, A, int(lda), B, int(ldb), beta, C, int(ldc));
}

// Integer convolutions (PyTorch allows them) accumulate exactly in int64; the cast back to the
// narrower type then wraps as PyTorch's own integer arithmetic does.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const int64_t* A, int64_t lda,
          const int64_t* B, int64_t ldb, int64_t beta, int64_t* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    int64_t* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0 ? 0 : c[j] * beta;
    for (int64_t k = 0; k < K; ++k) {
      int64_t a = ta ? A[k * lda + i] : A[i * lda + k];
      if (tb) {
        for (int64_t j = 0; j < N; ++j) c[j] += a * B[j * ldb + k];
      } else {
        const int64_t* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
      }
    }
  }
}

bool is_pointwise(const Window& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
         g.oh == g.H && g.ow == g.W;
}

// Fills each output plane of y ([O, L]) with its channel's bias, or zeros.
template <typename T>
void init_output(T* y, int64_t O, int64_t L, const T* bias) {
  for (int64_t o = 0; o < O; ++o) std::fill(y + o * L, y + (o + 1) * L, bias ? bias[o] : T(0));
}

// Note [Conv threading]
// Batched convolutions give each thread whole samples, with its own im2col buffer and a
// single-threaded GEMM: per-sample GEMMs (64 x 784 x 288 for a 32->64 3x3 conv on 28x28) are too
// small to split well across threads, and OpenBLAS's pthread pool must not be entered from
// several threads at once. A single sample runs one GEMM at a time on all of OpenBLAS's threads,
// with im2col/col2im on the calling thread: waking OpenMP threads between GEMMs would leave them
// spinning against OpenBLAS's threads (a 10x slowdown on two cores).

// Number of workers that take samples (see Note [Conv threading]).
int64_t sample_workers(int64_t N) {
  return N >= 2 ? std::min<int64_t>(N, get_num_threads()) : 1;
}

// Calls f(worker, n) for every sample n, worker w taking samples w, w + W, ...
template <typename F>
void for_each_sample(int64_t N, const F& f) {
  const int64_t workers = sample_workers(N);
  BlasSingleThreaded guard(workers > 1);
  parallel_for(0, workers, 1, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w)
      for (int64_t n = w; n < N; n += workers) f(w, n);
  });
}

// Calls f(y0, Lb, cols, ldc) for each band of window rows of image xn: cols is the band's
// [C*kh*kw, Lb] column matrix (row stride ldc), built in buf by im2col unless the conv is
// pointwise (then it is the image itself).
template <typename T, typename F>
void for_each_band(const T* xn, const Window& g, int64_t rows_per_band, bool direct, T* buf,
                   const F& f) {
  for (int64_t y0 = 0; y0 < g.oh; y0 += rows_per_band) {
    Band band{y0, std::min(g.oh, y0 + rows_per_band)};
    const int64_t Lb = band.cols(g);
    if (direct) {
      f(y0, Lb, xn + y0 * g.ow, g.cols());
    } else {
      im2col_rows(xn, g, buf, 0, g.C, band);
      f(y0, Lb, static_cast<const T*>(buf), Lb);
    }
  }
}

// y[n] = bias + W * im2col(x[n]) per group and band. x: [N, C, H, W], w: [O, C/groups, kh, kw].
template <typename T>
void conv_forward(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t O,
                  const Window& g, int64_t groups) {
  const int64_t Og = O / groups, Kg = g.rows() / groups, L = g.cols();
  const bool direct = is_pointwise(g);
  const int64_t rows_per_band = direct ? g.oh : band_rows(g, sizeof(T));
  const size_t buf_size = direct ? 0 : size_t(g.rows() * rows_per_band * g.ow);
  std::vector<std::vector<T>> bufs(size_t(sample_workers(N)), std::vector<T>(buf_size));
  for_each_sample(N, [&](int64_t worker, int64_t n) {
    const T* xn = x + n * g.C * g.H * g.W;
    T* yn = y + n * O * L;
    if (bias) init_output(yn, O, L, bias);
    for_each_band(xn, g, rows_per_band, direct, bufs[size_t(worker)].data(),
                  [&](int64_t y0, int64_t Lb, const T* cols, int64_t ldc) {
      for (int64_t gi = 0; gi < groups; ++gi)
        gemm(false, false, Og, Lb, Kg, w + gi * Og * Kg, Kg, cols + gi * Kg * ldc, ldc,
             bias ? T(1) : T(0), yn + gi * Og * L + y0 * g.ow, L);
    });
  });
}

// The transposed convolution: y[n] = bias + col2im(W^T x[n]). x: [N, Cin, oh, ow] (the window
// positions), w: [Cin, Cout/groups, kh, kw], y: [N, Cout, H, W] with g.C == Cout.
template <typename T>
void conv_transpose_forward(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t Cin,
                            const Window& g, int64_t groups) {
  const int64_t Cing = Cin / groups, Kg = g.rows() / groups, L = g.cols();
  const int64_t rows_per_band = band_rows(g, sizeof(T));
  std::vector<std::vector<T>> bufs(size_t(sample_workers(N)),
                                   std::vector<T>(size_t(g.rows() * rows_per_band * g.ow)));
  for_each_sample(N, [&](int64_t worker, int64_t n) {
    T* buf = bufs[size_t(worker)].data();
    const T* xn = x + n * Cin * L;
    T* yn = y + n * g.C * g.H * g.W;
    init_output(yn, g.C, g.H * g.W, bias);
    for (int64_t y0 = 0; y0 < g.oh; y0 += rows_per_band) {
      Band band{y0, std::min(g.oh, y0 + rows_per_band)};
      const int64_t Lb = band.cols(g);
      for (int64_t gi = 0; gi < groups; ++gi)
        gemm(true, false, Kg, Lb, Cing, w + gi * Cing * Kg, Kg, xn + gi * Cing * L + y0 * g.ow, L,
             T(0), buf + gi * Kg * Lb, Lb);
      col2im_rows(buf, g, yn, 0, g.C, band);
    }
  });
}

// gw[o, c, k] = sum_n,p go[n, o, p] * im2col(x[n])[c, k, p] per group. go: [N, O, oh, ow].
// Each worker sums its samples into its own buffer; the buffers are added at the end.
template <typename T>
void conv_weight_grad(const T* go, const T* x, T* gw, int64_t N, int64_t O, const Window& g,
                      int64_t groups) {
  const int64_t Og = O / groups, Kg = g.rows() / groups, L = g.cols();
  const bool direct = is_pointwise(g);
  const int64_t rows_per_band = direct ? g.oh : band_rows(g, sizeof(T));
  const size_t workers = size_t(sample_workers(N));
  std::vector<std::vector<T>> bufs(
      workers, std::vector<T>(direct ? 0 : size_t(g.rows() * rows_per_band * g.ow)));
  std::vector<std::vector<T>> partial(workers, std::vector<T>(size_t(O * Kg), T(0)));
  for_each_sample(N, [&](int64_t worker, int64_t n) {
    const T* xn = x + n * g.C * g.H * g.W;
    T* acc = partial[size_t(worker)].data();
    for_each_band(xn, g, rows_per_band, direct, bufs[size_t(worker)].data(),
                  [&](int64_t y0, int64_t Lb, const T* cols, int64_t ldc) {
      for (int64_t gi = 0; gi < groups; ++gi)
        gemm(false, true, Og, Kg, Lb, go + (n * O + gi * Og) * L + y0 * g.ow, L,
             cols + gi * Kg * ldc, ldc, T(1), acc + gi * Og * Kg, Kg);
    });
  });
  std::copy(partial[0].begin(), partial[0].end(), gw);
  for (size_t wk = 1; wk < workers; ++wk)
    for (int64_t i = 0; i < O * Kg; ++i) gw[i] += partial[wk][size_t(i)];
}

// ---------------------------------------------------------------- argument checks

// A per-dimension parameter given as one value or one per spatial dim (like aten's int[2]).
std::vector<int64_t> expand(IntArrayRef p, int64_t d, const char* op, const char* name) {
  RT_CHECK(int64_t(p.size()) == d || p.size() == 1, op, ": expected ", name,
           " to be a single integer value or a list of ", d, " values to match the convolution "
           "dimensions, but got ", name, "=", p);
  if (int64_t(p.size()) == d) return p.vec();
  return std::vector<int64_t>(size_t(d), p[0]);
}

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
};

ConvParams check_conv(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                      bool transposed, IntArrayRef output_padding, int64_t groups) {
  const char* op = "convolution";
  int64_t wd = weight.dim();
  RT_CHECK(wd == 3 || wd == 4, op, ": only 1-d and 2-d convolutions are supported; expected a "
           "3-D or 4-D weight, but got weight of size ", weight.sizes());
  RT_CHECK(input.dim() == wd, op, ": expected ", wd, "-dimensional input for ", wd,
           "-dimensional weight ", weight.sizes(), ", but got ", input.dim(),
           "-dimensional input of size ", input.sizes(), " instead");
  int64_t d = wd - 2;
  ConvParams p{expand(stride, d, op, "stride"), expand(padding, d, op, "padding"),
               expand(dilation, d, op, "dilation"),
               expand(output_padding.empty() ? IntArrayRef(int64_t(0)) : output_padding, d, op,
                      "output_padding")};
  RT_CHECK(groups > 0, op, ": non-positive groups is not supported (got groups=", groups, ")");
  for (int64_t i = 0; i < d; ++i) {
    size_t k = size_t(i);
    RT_CHECK(p.stride[k] > 0, op, ": non-positive stride is not supported (got stride=",
             IntArrayRef(p.stride), ")");
    RT_CHECK(p.padding[k] >= 0, op, ": negative padding is not supported (got padding=",
             IntArrayRef(p.padding), ")");
    RT_CHECK(p.dilation[k] > 0, op, ": dilation should be greater than zero (got dilation=",
             IntArrayRef(p.dilation), ")");
    RT_CHECK(p.output_padding[k] >= 0, op, ": negative output_padding is not supported (got "
             "output_padding=", IntArrayRef(p.output_padding), ")");
    if (transposed)
      RT_CHECK(p.output_padding[k] < std::max(p.stride[k], p.dilation[k]), op,
               ": output padding must be smaller than either stride or dilation, but got "
               "output_padding=", IntArrayRef(p.output_padding), ", stride=",
               IntArrayRef(p.stride), ", dilation=", IntArrayRef(p.dilation));
  }
  RT_CHECK(weight.size(0) % groups == 0, op, ": given groups=", groups,
           ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of "
           "size ", weight.sizes(), " instead");
  int64_t in_ch = transposed ? weight.size(0) : weight.size(1) * groups;
  RT_CHECK(input.size(1) == in_ch, op, ": given groups=", groups, ", weight of size ",
           weight.sizes(), (transposed ? " (transposed)" : ""), ", expected input ",
           input.sizes(), " to have ", in_ch, " channels, but got ", input.size(1),
           " channels instead");
  int64_t out_ch = transposed ? weight.size(1) * groups : weight.size(0);
  if (bias && bias->defined())
    RT_CHECK(bias->dim() == 1 && bias->size(0) == out_ch, op, ": given weight of size ",
             weight.sizes(), ", expected bias to be 1-dimensional with ", out_ch,
             " elements, but got bias of size ", bias->sizes(), " instead");
  if (!transposed) {
    for (int64_t i = 0; i < d; ++i) {
      size_t k = size_t(i);
      int64_t padded = input.size(2 + i) + 2 * p.padding[k];
      int64_t kernel = p.dilation[k] * (weight.size(2 + i) - 1) + 1;
      RT_CHECK(padded >= kernel, op, ": calculated padded input size per channel ",
               input.sizes().slice(2), " + padding ", IntArrayRef(p.padding),
               " is smaller than the (dilated) kernel size ", weight.sizes().slice(2),
               "; kernel size can't be greater than actual input size");
    }
  }
  RT_CHECK(input.dtype() == weight.dtype() &&
           (!bias || !bias->defined() || bias->dtype() == input.dtype()), op,
           ": input type (", input.dtype(), "), weight type (", weight.dtype(),
           ") and bias type should be the same");
  // PyTorch's slow kernels take every integer type, but its transposed one only int64.
  bool ok = input.dtype() != kBool && (!transposed || is_floating_type(input.dtype()) ||
                                       input.dtype() == kLong);
  RT_CHECK(ok, "\"", op, transposed ? "_transpose" : "", "\" not implemented for '",
           dtype_name(input.dtype()), "'");
  return p;
}

// Views 1-d (N, C, L) tensors as 2-d (N, C, 1, L); 2-d tensors are returned as is.
Tensor as_2d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(2) : t; }
std::vector<int64_t> as_2d(const std::vector<int64_t>& p, int64_t pad_value) {
  return p.size() == 1 ? std::vector<int64_t>{pad_value, p[0]} : p;
}

// Half and BFloat16 compute in float (one rounding at the end), integers in int64.
ScalarType compute_type(ScalarType t) {
  if (t == kDouble) return kDouble;
  return is_floating_type(t) ? kFloat : kLong;
}

template <typename T>
constexpr bool kConvType = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                           std::is_same_v<T, int64_t>;

// Runs float32 stride-1 convolutions (and stride-1 transposed ones, as convolutions with the
// flipped weight) through the direct kernel when it applies; see Note [Direct convolution].
template <typename T>
bool try_direct(const Tensor& x, const Tensor& w, const T* bias, Tensor& y, int64_t groups,
                const Window& g, bool transposed) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (g.sh != 1 || g.sw != 1) return false;
    const int64_t N = x.size(0), Cg = x.size(1) / groups;
    DirectConvShape d{};
    if (!transposed) {
      d = {Cg, g.H, g.W, w.size(0) / groups, g.kh, g.kw, g.dh, g.dw, g.ph, g.pw, g.oh, g.ow};
    } else {  // the input is the window grid (oh x ow), the output the image (H x W)
      d = {Cg, g.oh, g.ow, w.size(1), g.kh, g.kw, g.dh, g.dw, g.dh * (g.kh - 1) - g.ph,
           g.dw * (g.kw - 1) - g.pw, g.H, g.W};
    }
    const DirectWeight layout = transposed ? DirectWeight::kTransposedFlipped : DirectWeight::kConv;
    if (row_conv_applies(d)) {  // See Note [Row convolution]
      row_conv2d(x.data_ptr<float>(), w.data_ptr<float>(), bias, y.data_ptr<float>(), N, groups,
                 d, layout);
      return true;
    }
    if (!direct_conv_applies(d)) return false;
    direct_conv2d(x.data_ptr<float>(), w.data_ptr<float>(), bias, y.data_ptr<float>(), N, groups,
                  d, layout);
    return true;
  }
}

// The weight gradient of a float32 stride-1 convolution through the direct kernel when it
// applies; see Note [Direct weight gradient].
template <typename T>
bool try_direct_weight_grad(const T* go, const T* x, T* gw, int64_t N, int64_t O, const Window& g,
                            int64_t groups) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (g.sh != 1 || g.sw != 1) return false;
    const DirectConvShape d{g.C / groups, g.H, g.W, O / groups, g.kh, g.kw, g.dh, g.dw, g.ph,
                            g.pw, g.oh, g.ow};
    if (row_weight_grad_applies(d)) {  // See Note [Row convolution]
      row_conv2d_weight_grad(go, x, gw, N, groups, d);
      return true;
    }
    if (!direct_weight_grad_applies(d)) return false;
    direct_conv2d_weight_grad(go, x, gw, N, groups, d);
    return true;
  }
}

// The depthwise shape of a convolution whose groups each hold one image channel (the input's
// channels, or the output's when transposed) and whose multiplier the depthwise kernels take;
// nullopt otherwise. g is the convolution's Window, `channels` the other side's channel count.
std::optional<DepthwiseShape> depthwise_shape(const Window& g, int64_t channels, int64_t groups) {
  if (groups != g.C || channels % groups != 0 || !depthwise_applies(channels / groups))
    return std::nullopt;
  return DepthwiseShape{g.C, channels / groups, g.H, g.W, g.kh, g.kw, g.sh, g.sw,
                        g.ph, g.pw, g.dh, g.dw, g.oh, g.ow};
}

// Runs float and double depthwise convolutions (plain and transposed) through the direct
// depthwise kernels; see Note [Depthwise convolution].
template <typename T>
bool try_depthwise(const Tensor& x, const Tensor& w, const T* bias, Tensor& y, int64_t groups,
                   const Window& g, bool transposed) {
  if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>) {
    return false;
  } else {
    // Plain: w is [C*m, 1, kh, kw]. Transposed: w is [C*m, Cout/groups, kh, kw] with one
    // output channel per group, the image side (g.C) being the output.
    if (w.size(1) != 1) return false;
    auto s = depthwise_shape(g, w.size(0), groups);
    if (!s) return false;
    if (!transposed) {
      depthwise_conv2d(x.data_ptr<T>(), w.data_ptr<T>(), bias, y.data_ptr<T>(), x.size(0), *s);
    } else {
      depthwise_conv2d_transposed(x.data_ptr<T>(), w.data_ptr<T>(), bias, y.data_ptr<T>(),
                                  x.size(0), *s);
    }
    return true;
  }
}

// The weight gradient of a depthwise convolution (one image channel per group, weight
// [O, 1, kh, kw]) by the direct depthwise kernel; see Note [Depthwise convolution].
template <typename T>
bool try_depthwise_weight_grad(const T* go, const T* x, T* gw, int64_t N, int64_t O,
                               const Window& g, int64_t groups) {
  if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>) {
    return false;
  } else {
    auto s = depthwise_shape(g, O, groups);
    if (!s) return false;
    depthwise_conv2d_weight_grad(go, x, gw, N, *s);
    return true;
  }
}

// Where oneDNN's kernels beat retorch's (Note [oneDNN convolution]): bfloat16 with 8+ channels a
// group on both sides, or with any counts for one group but transposed; float32 strided windows
// larger than 1x1 (the direct kernels take stride 1 only) of one group and 8+ channels.
bool onednn_conv_pays(ScalarType dt, int64_t in_per_group, int64_t out_per_group, int64_t groups,
                      bool transposed, bool strided_window) {
  const bool wide = in_per_group >= 8 && out_per_group >= 8;
  if (dt == kFloat) return strided_window && groups == 1 && wide;
  return dt == kBFloat16 && (wide || (!transposed && groups == 1));
}

// A window that is strided and not a single tap (float32's oneDNN case above).
bool strided_window(int64_t sh, int64_t sw, int64_t kh, int64_t kw) {
  return (sh > 1 || sw > 1) && kh * kw > 1;
}

// A convolution on oneDNN (Note [oneDNN convolution]) of the 2-D views x and w into a new tensor
// of out_shape; an undefined tensor when it does not apply and retorch's kernels run.
Tensor onednn_convolution(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                          const std::vector<int64_t>& out_shape, const ConvGeometry& g) {
  const bool with_bias = bias && bias->defined();
  const ScalarType dt = x.dtype();
  if (w.dtype() != dt || (with_bias && bias->dtype() != dt) || x.device().is_meta() ||
      x.numel() == 0 || w.numel() == 0 ||
      !onednn_conv_pays(dt, x.size(1) / g.groups, out_shape[1] / g.groups, g.groups,
                        g.transposed, strided_window(g.sh, g.sw, w.size(2), w.size(3))))
    return Tensor();
  Tensor y = make_empty(out_shape, dt, x.device());
  if (y.numel() == 0 ||
      !onednn_conv(x.contiguous(), w.contiguous(), with_bias ? bias->contiguous() : Tensor(), y,
                   g))
    return Tensor();
  return y;
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  ConvParams p = check_conv(input, weight, bias, stride, padding, dilation, transposed,
                            output_padding, groups);
  const bool one_d = weight.dim() == 3;
  auto s = as_2d(p.stride, 1), pd = as_2d(p.padding, 0), dl = as_2d(p.dilation, 1);
  auto op = as_2d(p.output_padding, 0);
  Tensor x = as_2d(input), w = as_2d(weight);
  const int64_t N = x.size(0), kh = w.size(2), kw = w.size(3);
  Window g{};
  int64_t out_ch = 0;
  std::vector<int64_t> out_shape;
  if (!transposed) {
    out_ch = w.size(0);
    int64_t oh = (x.size(2) + 2 * pd[0] - dl[0] * (kh - 1) - 1) / s[0] + 1;
    int64_t ow = (x.size(3) + 2 * pd[1] - dl[1] * (kw - 1) - 1) / s[1] + 1;
    g = {x.size(1), x.size(2), x.size(3), kh, kw, pd[0], pd[1], s[0], s[1], dl[0], dl[1], oh, ow};
    out_shape = {N, out_ch, oh, ow};
  } else {
    out_ch = w.size(1) * groups;
    int64_t H = (x.size(2) - 1) * s[0] - 2 * pd[0] + dl[0] * (kh - 1) + op[0] + 1;
    int64_t W = (x.size(3) - 1) * s[1] - 2 * pd[1] + dl[1] * (kw - 1) + op[1] + 1;
    RT_CHECK(H > 0 && W > 0, "convolution: given input of size ", input.sizes(),
             " and weight of size ", weight.sizes(), ", the transposed convolution's output "
             "size (", H, ", ", W, ") is too small");
    g = {out_ch, H, W, kh, kw, pd[0], pd[1], s[0], s[1], dl[0], dl[1], x.size(2), x.size(3)};
    out_shape = {N, out_ch, H, W};
  }
  const ConvGeometry geometry{s[0], s[1], pd[0], pd[1], dl[0], dl[1], op[0], op[1], groups,
                              transposed};
  if (Tensor y = onednn_convolution(x, w, bias, out_shape, geometry); y.defined())
    return one_d ? y.squeeze(2) : y;  // See Note [oneDNN convolution]
  ScalarType ct = compute_type(input.dtype());
  x = x.to(ct).contiguous();
  w = w.to(ct).contiguous();
  Tensor b = bias && bias->defined() ? bias->to(ct).contiguous() : Tensor();
  Tensor y = make_empty(out_shape, ct, input.device());
  if (y.numel() > 0 && !y.device().is_meta()) {  // See Note [Meta through CPU kernels]
    RT_DISPATCH_ALL(ct, "convolution", [&] {
      if constexpr (kConvType<scalar_t>) {
        const scalar_t* bp = b.defined() ? b.data_ptr<scalar_t>() : nullptr;
        if (x.size(1) == 0 || g.rows() == 0) {  // empty reduction: the output is the bias
          scalar_t* yp = y.data_ptr<scalar_t>();
          for (int64_t n = 0; n < N; ++n)
            init_output(yp + n * out_ch * (y.numel() / N / out_ch), out_ch,
                        y.numel() / N / out_ch, bp);
        } else if (try_depthwise(x, w, bp, y, groups, g, transposed)) {
          // done by the depthwise kernels
        } else if (try_direct(x, w, bp, y, groups, g, transposed)) {
          // done by the direct kernel
        } else if (!transposed) {
          conv_forward(x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), bp,
                       y.data_ptr<scalar_t>(), N, out_ch, g, groups);
        } else {
          conv_transpose_forward(x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), bp,
                                 y.data_ptr<scalar_t>(), N, x.size(1), g, groups);
        }
      }
    });
  }
  if (one_d) y = y.squeeze(2);
  return ct == input.dtype() ? y : y.to(input.dtype());
}

Tensor convolution_backward_weight(const Tensor& grad_output, const Tensor& input,
                                   IntArrayRef weight_size, IntArrayRef stride,
                                   IntArrayRef padding, IntArrayRef dilation, bool transposed,
                                   int64_t groups) {
  const char* op = "_convolution_backward_weight";
  int64_t wd = int64_t(weight_size.size());
  RT_CHECK((wd == 3 || wd == 4) && grad_output.dim() == wd && input.dim() == wd, op,
           ": expected grad_output ", grad_output.sizes(), " and input ", input.sizes(),
           " to have as many dims as the weight size ", weight_size, " (3 or 4)");
  RT_CHECK(groups > 0 && weight_size[0] % groups == 0, op, ": weight size ", weight_size,
           " is not divisible into groups=", groups);
  RT_CHECK(grad_output.dtype() == input.dtype() && is_floating_type(input.dtype()), op,
           ": expected grad_output and input of the same floating dtype, got ",
           grad_output.dtype(), " and ", input.dtype());
  int64_t d = wd - 2;
  auto s = as_2d(expand(stride, d, op, "stride"), 1);
  auto pd = as_2d(expand(padding, d, op, "padding"), 0);
  auto dl = as_2d(expand(dilation, d, op, "dilation"), 1);
  // See Note [Convolution double backward]: the transposed case swaps the two roles.
  const Tensor& go_t = transposed ? input : grad_output;
  const Tensor& x_t = transposed ? grad_output : input;
  ScalarType ct = compute_type(input.dtype());
  Tensor go = as_2d(go_t).contiguous(), x = as_2d(x_t).contiguous();
  std::vector<int64_t> ws = weight_size.vec();
  if (d == 1) ws.insert(ws.begin() + 2, 1);
  const int64_t O = ws[0], N = x.size(0);
  RT_CHECK(go.size(0) == N && go.size(1) == O && x.size(1) == ws[1] * groups, op,
           ": grad_output ", grad_output.sizes(), " and input ", input.sizes(),
           " do not match the weight size ", weight_size, " with groups=", groups);
  Window g{x.size(1), x.size(2), x.size(3), ws[2], ws[3], pd[0], pd[1], s[0], s[1], dl[0], dl[1],
           go.size(2), go.size(3)};
  Tensor gw = make_empty(ws, ct, input.device());
  const ConvGeometry geometry{s[0], s[1], pd[0], pd[1], dl[0], dl[1], 0, 0, groups, false};
  // See Note [oneDNN convolution]
  const bool on_onednn =
      !gw.device().is_meta() && gw.numel() > 0 && go.numel() > 0 && x.numel() > 0 &&
      onednn_conv_pays(input.dtype(), ws[1], O / groups, groups, false,
                       strided_window(s[0], s[1], ws[2], ws[3])) &&
      onednn_conv_weight_grad(go, x, gw, geometry);
  if (!on_onednn) {  // the widening path (float32 for 16-bit inputs; contiguous stays so)
    go = go.to(ct);
    x = x.to(ct);
  }
  if (!on_onednn && !gw.device().is_meta())  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(ct, op, [&] {
    if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>) {
      if (g.rows() == 0 || g.cols() == 0 || N == 0 || O == 0) {
        std::fill(gw.data_ptr<scalar_t>(), gw.data_ptr<scalar_t>() + gw.numel(), scalar_t(0));
      } else if (ws[1] == 1 && try_depthwise_weight_grad(go.data_ptr<scalar_t>(),
                                                         x.data_ptr<scalar_t>(),
                                                         gw.data_ptr<scalar_t>(), N, O, g,
                                                         groups)) {
        // done by the depthwise kernel
      } else if (!try_direct_weight_grad(go.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                                         gw.data_ptr<scalar_t>(), N, O, g, groups)) {
        conv_weight_grad(go.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), gw.data_ptr<scalar_t>(),
                         N, O, g, groups);
      }
    }
  });
  if (d == 1) gw = gw.squeeze(2);
  return ct == input.dtype() ? gw : gw.to(input.dtype());
}

// ---------------------------------------------------------------- im2col / col2im (unfold / fold)

namespace {

struct FoldArgs {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

FoldArgs check_fold_args(const char* op, IntArrayRef kernel_size, IntArrayRef dilation,
                         IntArrayRef padding, IntArrayRef stride) {
  auto k = expand(kernel_size, 2, op, "kernel_size"), dl = expand(dilation, 2, op, "dilation");
  auto pd = expand(padding, 2, op, "padding"), s = expand(stride, 2, op, "stride");
  RT_CHECK(k[0] > 0 && k[1] > 0, op, ": kernel size should be greater than zero, but got "
           "kernel_size=", IntArrayRef(k));
  RT_CHECK(dl[0] > 0 && dl[1] > 0, op, ": dilation should be greater than zero, but got "
           "dilation=", IntArrayRef(dl));
  RT_CHECK(pd[0] >= 0 && pd[1] >= 0, op, ": padding should be non-negative, but got padding=",
           IntArrayRef(pd));
  RT_CHECK(s[0] > 0 && s[1] > 0, op, ": stride should be greater than zero, but got stride=",
           IntArrayRef(s));
  return {k[0], k[1], dl[0], dl[1], pd[0], pd[1], s[0], s[1]};
}

}  // namespace

Tensor im2col(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  FoldArgs a = check_fold_args("im2col", kernel_size, dilation, padding, stride);
  // PyTorch reads size(2) of the input before checking its rank.
  RT_CHECK_INDEX(self.dim() >= 3, "im2col: dimension out of range (expected a 3D or 4D input, "
                 "but got input of size ", self.sizes(), ")");
  RT_CHECK((self.dim() == 3 && self.size(0) > 0 && self.size(1) > 0 && self.size(2) > 0) ||
           (self.dim() == 4 && self.size(1) > 0 && self.size(2) > 0 && self.size(3) > 0),
           "im2col: expected non-empty 3D or 4D input tensor (batch dim may be 0), but got "
           "input of size ", self.sizes());
  Tensor x = (self.dim() == 3 ? self.unsqueeze(0) : self).contiguous();
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int64_t oh = (H + 2 * a.ph - (a.dh * (a.kh - 1) + 1)) / a.sh + 1;
  int64_t ow = (W + 2 * a.pw - (a.dw * (a.kw - 1) + 1)) / a.sw + 1;
  RT_CHECK(oh >= 1 && ow >= 1 && H + 2 * a.ph >= a.dh * (a.kh - 1) + 1 &&
           W + 2 * a.pw >= a.dw * (a.kw - 1) + 1,
           "im2col: given input with spatial size (", H, ", ", W, "), kernel_size=(", a.kh, ", ",
           a.kw, "), dilation=(", a.dh, ", ", a.dw, "), padding=(", a.ph, ", ", a.pw,
           "), calculated shape of the array of sliding blocks as (", oh, ", ", ow,
           "), but its components must be at least one.");
  Window g{C, H, W, a.kh, a.kw, a.ph, a.pw, a.sh, a.sw, a.dh, a.dw, oh, ow};
  Tensor out = make_empty({N, g.rows(), g.cols()}, x.dtype(), x.device());
  if (!out.device().is_meta())  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(x.dtype(), "im2col", [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    for (int64_t n = 0; n < N; ++n)
      im2col_image(xp + n * C * H * W, g, op + n * g.rows() * g.cols(), Band{0, oh});
  });
  return self.dim() == 3 ? out.squeeze(0) : out;
}

Tensor col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size,
              IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  FoldArgs a = check_fold_args("col2im", kernel_size, dilation, padding, stride);
  auto os = expand(output_size, 2, "col2im", "output_size");
  RT_CHECK(os[0] > 0 && os[1] > 0, "col2im: expected output_size to be positive, but got "
           "output_size=", IntArrayRef(os));
  RT_CHECK((self.dim() == 2 && self.size(0) > 0 && self.size(1) > 0) ||
           (self.dim() == 3 && self.size(1) > 0 && self.size(2) > 0),
           "col2im: expected non-empty 2D or 3D input tensor (batch dim may be 0), but got "
           "input of size ", self.sizes());
  Tensor c = (self.dim() == 2 ? self.unsqueeze(0) : self).contiguous();
  int64_t N = c.size(0), K = c.size(1), L = c.size(2);
  RT_CHECK(K % (a.kh * a.kw) == 0, "col2im: expected size of input's dimension 1 to be "
           "divisible by the product of kernel_size, but got input.size(1)=", K,
           " and kernel_size=(", a.kh, ", ", a.kw, ")");
  int64_t H = os[0], W = os[1];
  int64_t oh = (H + 2 * a.ph - (a.dh * (a.kh - 1) + 1)) / a.sh + 1;
  int64_t ow = (W + 2 * a.pw - (a.dw * (a.kw - 1) + 1)) / a.sw + 1;
  RT_CHECK(oh >= 1 && ow >= 1 && oh * ow == L, "col2im: given output_size=(", H, ", ", W,
           "), kernel_size=(", a.kh, ", ", a.kw, "), dilation=(", a.dh, ", ", a.dw,
           "), padding=(", a.ph, ", ", a.pw, "), stride=(", a.sh, ", ", a.sw,
           "), expected size of input's dimension 2 to match the calculated number of sliding "
           "blocks ", oh, " * ", ow, " = ", oh * ow, ", but got input.size(2)=", L, ".");
  int64_t C = K / (a.kh * a.kw);
  Window g{C, H, W, a.kh, a.kw, a.ph, a.pw, a.sh, a.sw, a.dh, a.dw, oh, ow};
  Tensor out = make_empty({N, C, H, W}, c.dtype(), c.device());
  if (!out.device().is_meta())  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(c.dtype(), "col2im", [&] {
    const scalar_t* cp = c.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    std::fill(op, op + out.numel(), scalar_t(0));
    for (int64_t n = 0; n < N; ++n) {
      parallel_for(0, C, channel_grain(g), [&](int64_t b, int64_t e) {
        col2im_rows<scalar_t, opmath_t<scalar_t>>(cp + n * K * L, g, op + n * C * H * W, b, e,
                                                   Band{0, oh});
      });
    }
  });
  return self.dim() == 2 ? out.squeeze(0) : out;
}

}  // namespace retorch::cpu
