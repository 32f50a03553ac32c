// Pooling on the CPU: max (with argmax indices), average and adaptive pools, and their backwards.
// Each kernel runs over (batch * channel) planes of a contiguous NCHW copy, planes in parallel,
// or for a channels-last input over NHWC pixels with channels innermost (PoolNhwc.h), giving a
// channels-last result like PyTorch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/backend/cpu/PoolAvx512.h"
#include "retorch/backend/cpu/PoolNhwc.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cpu {

namespace {

// Input as contiguous [planes, H, W] plus the shape of the batch/channel dims; or, when
// channels_last, as [N, H, W, C] (x is then NHWC-contiguous, n = N * C).
struct Planes {
  Tensor x;
  std::vector<int64_t> lead;
  int64_t n, H, W;
  // PyTorch's pools pick NHWC loops (and channels-last results) when the input's strides
  // suggest channels-last.
  MemoryFormat format = MemoryFormat::Contiguous;
  bool channels_last() const { return format == MemoryFormat::ChannelsLast; }
  int64_t N() const { return lead[0]; }
  int64_t C() const { return lead[1]; }
};

enum class EmptyOk { kBatch, kLeading, kNonSpatial };

// `empty` says which leading dims may be 0, as PyTorch allows: the batch dim of a 4-d input
// (pools), dim 0 of any input (adaptive max), or everything but H and W (adaptive average).
Planes as_planes(const Tensor& self, const char* op, EmptyOk empty = EmptyOk::kBatch) {
  // PyTorch reads size(-3) of avg_pool2d's input before checking its rank.
  if (std::string_view(op).substr(0, 10) == "avg_pool2d")
    RT_CHECK_INDEX(self.dim() >= 3, op, ": dimension out of range (expected a 3D or 4D input, "
                   "but got input of size ", self.sizes(), ")");
  bool ok = self.dim() == 3 || self.dim() == 4;
  int64_t first = empty == EmptyOk::kBatch ? (self.dim() == 4 ? 1 : 0)
                  : empty == EmptyOk::kLeading ? 1 : self.dim() - 2;
  for (int64_t i = first; ok && i < self.dim(); ++i) ok = self.size(i) != 0;
  RT_CHECK(ok, op, ": expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
           "input, but got input of size ", self.sizes());
  std::vector<int64_t> lead(self.sizes().begin(), self.sizes().end() - 2);
  int64_t H = self.size(-2), W = self.size(-1);
  MemoryFormat format = self.suggest_memory_format();
  Tensor x = self.contiguous(format);
  return {x, lead, H * W == 0 ? 0 : x.numel() / (H * W), H, W, format};
}

std::vector<int64_t> with_hw(const std::vector<int64_t>& lead, int64_t h, int64_t w) {
  std::vector<int64_t> s = lead;
  s.push_back(h);
  s.push_back(w);
  return s;
}

void check_float(const Tensor& t, const char* op) {
  RT_CHECK(is_floating_type(t.dtype()), "\"", op, "\" not implemented for '",
           dtype_name(t.dtype()), "'");
}

using Pool2d = Pool2dWindow;

Pool2d check_pool(const Planes& p, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, const char* op) {
  return check_pool2d(p.H, p.W, kernel_size, stride, padding, dilation, ceil_mode, op);
}

// PoolAvx512.h's kernels for float planes; false (the portable loops run) for other dtypes.
template <typename T>
bool max_pool_2x2_fast(const T*, int64_t, int64_t, int64_t, T*, int64_t*) {
  return false;
}
bool max_pool_2x2_fast(const float* x, int64_t W, int64_t oh, int64_t ow, float* y,
                       int64_t* ind) {
  return max_pool_2x2_avx512(x, W, oh, ow, y, ind);
}
template <typename T>
bool max_pool_2x2_backward_fast(const T*, const int64_t*, int64_t, int64_t, int64_t, int64_t,
                                T*) {
  return false;
}
bool max_pool_2x2_backward_fast(const float* go, const int64_t* ind, int64_t H, int64_t W,
                                int64_t oh, int64_t ow, float* gi) {
  return max_pool_2x2_backward_avx512(go, ind, H, W, oh, ow, gi);
}

// grad_input[plane][indices[o]] += grad_output[o]: the backward of every max pool. `two_by_two`
// says the pool was the 2x2, stride-2 one, whose float planes try the one-pass AVX-512 kernel
// first (Note [2x2 max pool]).
Tensor scatter_planes(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                      const char* op, bool two_by_two, ScalarType dt);

// t as dtype dt in memory format f (Note [16-bit max pools]).
Tensor converted(const Tensor& t, ScalarType dt, MemoryFormat f) {
  Tensor out = make_empty(t.sizes(), dt, t.device(), f);
  out.copy_(t);
  return out;
}

Tensor scatter_max_grad(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                        const char* op, bool two_by_two = false) {
  RT_CHECK(indices.dtype() == kLong, op, ": expected indices of dtype int64, got ",
           indices.dtype());
  RT_CHECK(grad_output.sizes().equals(indices.sizes()) && grad_output.dim() == self.dim() &&
           self.dim() >= 2 && grad_output.sizes().slice(0, size_t(self.dim() - 2))
                                  .equals(self.sizes().slice(0, size_t(self.dim() - 2))),
           op, ": grad_output of size ", grad_output.sizes(), " and indices of size ",
           indices.sizes(), " do not match the input of size ", self.sizes());
  RT_CHECK(grad_output.dtype() == self.dtype(), op, ": expected grad_output dtype ",
           self.dtype(), ", got ", grad_output.dtype());
  if (self.device().is_meta()) // See Note [Meta through CPU kernels]
    return make_empty(self.sizes(), self.dtype(), self.device(), self.suggest_memory_format());
  if (is_reduced_float(self.dtype())) {  // See Note [16-bit max pools]
    const MemoryFormat f = self.suggest_memory_format();
    return converted(scatter_planes(converted(grad_output, kFloat, f), self, indices, op,
                                    two_by_two, kFloat), self.dtype(), f);
  }
  return scatter_planes(grad_output, self, indices, op, two_by_two, self.dtype());
}

// scatter_max_grad's sums, into a result of dtype dt (grad_output's) shaped like self.
Tensor scatter_planes(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                      const char* op, bool two_by_two, ScalarType dt) {
  int64_t HW = self.size(-2) * self.size(-1);
  int64_t L = grad_output.size(-2) * grad_output.size(-1);
  int64_t planes = HW == 0 ? 0 : self.numel() / HW;
  if (self.suggest_memory_format() == MemoryFormat::ChannelsLast) {
    const auto cl = MemoryFormat::ChannelsLast;
    Tensor go = grad_output.contiguous(cl), idx = indices.contiguous(cl);
    Tensor gi = make_empty(self.sizes(), dt, self.device(), cl);
    RT_DISPATCH_FLOATING(dt, op, [&] {
      nhwc::max_pool_backward(go.data_ptr<scalar_t>(), idx.data_ptr<int64_t>(), self.size(0), HW,
                              L, self.size(1), gi.data_ptr<scalar_t>(), op);
    });
    return gi;
  }
  Tensor go = grad_output.contiguous(), idx = indices.contiguous();
  Tensor gi = make_empty(self.sizes(), dt, self.device());
  const int64_t H = self.size(-2), W = self.size(-1);
  const int64_t oh = grad_output.size(-2), ow = grad_output.size(-1);
  const bool avx512 = two_by_two && 2 * oh <= H && 2 * ow <= W && cpu_isa() >= CpuIsa::kAvx512;
  RT_DISPATCH_FLOATING(dt, op, [&] {
    using acc_t = opmath_t<scalar_t>;
    const scalar_t* g = go.data_ptr<scalar_t>();
    const int64_t* ip = idx.data_ptr<int64_t>();
    scalar_t* out = gi.data_ptr<scalar_t>();
    parallel_for(0, planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(HW + L, 1)),
                 [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<acc_t, scalar_t>) {
        // Sums straight into the output plane (no buffer to copy back from).
        for (int64_t pl = b; pl < e; ++pl) {
          scalar_t* plane = out + pl * HW;
          if (avx512 && max_pool_2x2_backward_fast(g + pl * L, ip + pl * L, H, W, oh, ow, plane))
            continue;
          std::fill(plane, plane + HW, scalar_t(0));
          for (int64_t o = 0; o < L; ++o) {
            const int64_t j = ip[pl * L + o];
            RT_CHECK_INDEX(j >= 0 && j < HW, op, ": index ", j,
                           " is out of bounds for a plane of ", HW, " elements");
            plane[j] = scalar_t(acc_t(plane[j]) + acc_t(g[pl * L + o]));  // acc_t is scalar_t
          }
        }
        return;
      }
      std::vector<acc_t> acc(static_cast<size_t>(HW));
      for (int64_t pl = b; pl < e; ++pl) {
        std::fill(acc.begin(), acc.end(), acc_t(0));
        for (int64_t o = 0; o < L; ++o) {
          int64_t j = ip[pl * L + o];
          RT_CHECK_INDEX(j >= 0 && j < HW, op, ": index ", j, " is out of bounds for a plane of ",
                         HW, " elements");
          acc[size_t(j)] += acc_t(g[pl * L + o]);
        }
        for (int64_t j = 0; j < HW; ++j) out[pl * HW + j] = scalar_t(acc[size_t(j)]);
      }
    });
  });
  return gi;
}

// The 2x2, stride-2 pool of most CNNs: the four taps unrolled, with PyTorch's rule (the
// first maximum in scan order wins; a NaN wins over any number), as selects rather than
// branches: on real activations the comparisons are coin flips, and mispredicted branches made
// the loop ~4x slower. Float planes on AVX-512 take PoolAvx512.cpp's form of it instead
// (Note [2x2 max pool]).
template <typename scalar_t>
void max_pool_2x2(const scalar_t* x, int64_t W, int64_t oh, int64_t ow, scalar_t* y,
                  int64_t* ind) {
  using acc_t = opmath_t<scalar_t>;
  for (int64_t oy = 0; oy < oh; ++oy) {
    const scalar_t* top = x + 2 * oy * W;
    const scalar_t* bottom = top + W;
    const int64_t row = 2 * oy * W;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t c = 2 * ox;
      const acc_t v[4] = {acc_t(top[c]), acc_t(top[c + 1]), acc_t(bottom[c]),
                          acc_t(bottom[c + 1])};
      const int64_t at[4] = {row + c, row + c + 1, row + W + c, row + W + c + 1};
      acc_t best = v[0];
      int64_t arg = at[0];
      for (int k = 1; k < 4; ++k) {
        const bool take = v[k] > best || v[k] != v[k];
        best = take ? v[k] : best;
        arg = take ? at[k] : arg;
      }
      y[oy * ow + ox] = scalar_t(best);
      ind[oy * ow + ox] = arg;
    }
  }
}

// Note [NCHW max pool in NHWC blocks]
// The general NCHW max pools (every one but the 2x2 stride-2 pool, adaptive ones included) run
// on blocks of 64 planes: their values transposed into an [H, W, 64] buffer (800 KB for 56x56
// planes), and the channels-last loop over it (PoolNhwc.h: each tap four 16-lane
// compare-and-select chains, the first maximum in scan order winning and NaN over any number),
// which writes the planes' outputs and indices in place. A plane at a time, the window loop
// branched on every comparison, a coin flip on real activations: 3x3 stride-2 of 32x64x56x56
// took 26 ms (PyTorch's branching loop 21-25 ms); vectorized along a row of outputs, 8 ms (rows
// of 28 outputs are two vectors, so each tap's loop was mostly overhead); in blocks, 6.6 ms.
constexpr int64_t kPoolBlock = 64;

template <typename scalar_t, typename WindowFn>
void max_pool_planes(const scalar_t* x, int64_t planes, int64_t H, int64_t W, int64_t oh,
                     int64_t ow, const WindowFn& window, scalar_t* y, int64_t* ind) {
  const int64_t HW = H * W, L = oh * ow;
  parallel_for(0, (planes + kPoolBlock - 1) / kPoolBlock, 1, [&](int64_t b, int64_t e) {
    thread_local std::vector<scalar_t> xb;  // kept: a fresh MB-sized buffer faults its pages
    if (xb.size() < size_t(HW * kPoolBlock)) xb.resize(size_t(HW * kPoolBlock));
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t p0 = blk * kPoolBlock, P = std::min(kPoolBlock, planes - p0);
      const scalar_t* src = x + p0 * HW;
      if (P == kPoolBlock) {
        for (int64_t i = 0; i < HW; ++i)
          for (int64_t j = 0; j < kPoolBlock; ++j) xb[size_t(i * kPoolBlock + j)] = src[j * HW + i];
      } else {
        for (int64_t i = 0; i < HW; ++i)
          for (int64_t j = 0; j < P; ++j) xb[size_t(i * P + j)] = src[j * HW + i];
      }
      // The results go straight to the planes (out_plane = L).
      nhwc::max_pool(xb.data(), 1, H, W, P, oh, ow, window, y + p0 * L, ind + p0 * L, L);
    }
  });
}

int64_t adaptive_start(int64_t a, int64_t out, int64_t in) { return (a * in) / out; }
int64_t adaptive_end(int64_t a, int64_t out, int64_t in) {
  return ((a + 1) * in + out - 1) / out;
}

}  // namespace

// Note [16-bit max pools]
// float16 and bfloat16 max pools (an autocast ConvNet's: its convolutions return bfloat16) run
// the float32 kernels on widened planes and round the result back. The maximum of widened values
// is the widened maximum, so values and indices are the 16-bit loops' exactly; the backward's sums
// (overlapping windows) were float32 already, rounded once. The conversions are two memory passes
// next to the portable 16-bit loops' scalar compare chains: the 2x2 pool of 64x32x32x32 bfloat16
// took 1.7 ms against float32's 0.24 (AVX-512 kernels, Note [2x2 max pool]).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const char* op = "max_pool2d";
  Planes p = as_planes(self, op);
  Pool2d k = check_pool(p, kernel_size, stride, padding, dilation, ceil_mode, op);
  check_float(self, "max_pool2d");
  if (is_reduced_float(self.dtype()) && !self.device().is_meta()) {  // Note [16-bit max pools]
    auto [y, ind] = cpu::max_pool2d_with_indices(converted(self, kFloat, p.format), kernel_size,
                                                 stride, padding, dilation, ceil_mode);
    return {converted(y, self.dtype(), p.format), ind};
  }
  auto shape = with_hw(p.lead, k.oh, k.ow);
  Tensor out = make_empty(shape, self.dtype(), self.device(), p.format);
  Tensor ind = make_empty(shape, kLong, self.device(), p.format);
  if (out.device().is_meta()) return {out, ind};  // See Note [Meta through CPU kernels]
  const int64_t L = k.oh * k.ow, HW = p.H * p.W;
  RT_DISPATCH_FLOATING(self.dtype(), op, [&] {
    const scalar_t* x = p.x.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    int64_t* ip = ind.data_ptr<int64_t>();
    auto window = [&](int64_t oy, int64_t ox) {
      int64_t h0 = oy * k.sh - k.ph, w0 = ox * k.sw - k.pw;
      int64_t h1 = std::min(h0 + (k.kh - 1) * k.dh + 1, p.H);
      int64_t w1 = std::min(w0 + (k.kw - 1) * k.dw + 1, p.W);
      while (h0 < 0) h0 += k.dh;
      while (w0 < 0) w0 += k.dw;
      return nhwc::Window{h0, h1, k.dh, w0, w1, k.dw, 1};
    };
    if (p.channels_last()) {
      nhwc::max_pool(x, p.N(), p.H, p.W, p.C(), k.oh, k.ow, window, y, ip);
      return;
    }
    const bool two_by_two = k.kh == 2 && k.kw == 2 && k.sh == 2 && k.sw == 2 && k.ph == 0 &&
                            k.pw == 0 && k.dh == 1 && k.dw == 1 && 2 * k.oh <= p.H &&
                            2 * k.ow <= p.W;  // ceil_mode's partial windows take the general path
    if (!two_by_two) {  // Note [NCHW max pool in NHWC blocks]
      max_pool_planes(x, p.n, p.H, p.W, k.oh, k.ow, window, y, ip);
      return;
    }
    const bool avx512 = cpu_isa() >= CpuIsa::kAvx512;
    parallel_for(0, p.n, std::max<int64_t>(1, 8192 / std::max<int64_t>(L * 4, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        if (avx512 && max_pool_2x2_fast(x + pl * HW, p.W, k.oh, k.ow, y + pl * L, ip + pl * L))
          continue;
        max_pool_2x2(x + pl * HW, p.W, k.oh, k.ow, y + pl * L, ip + pl * L);
      }
    });
  });
  return {out, ind};
}

namespace {

// v (or `fallback` when v is empty) is `want` in both spatial dims.
bool is_pair_of(IntArrayRef v, int64_t want, IntArrayRef fallback = {}) {
  if (v.empty()) v = fallback;
  return (v.size() == 1 || v.size() == 2) && v[0] == want && v.back() == want;
}

}  // namespace

Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool,
                                        const Tensor& indices) {
  // A hint only: the fast path checks the indices themselves (Note [2x2 max pool]).
  const bool two_by_two = is_pair_of(kernel_size, 2) && is_pair_of(stride, 2, kernel_size) &&
                          is_pair_of(padding, 0) && is_pair_of(dilation, 1);
  return scatter_max_grad(grad_output, self, indices, "max_pool2d_with_indices_backward",
                          two_by_two);
}

namespace {

struct AvgArgs {
  Pool2d k;
  bool count_include_pad;
  std::optional<int64_t> divisor;
};

AvgArgs check_avg(const Planes& p, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override, const char* op) {
  RT_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
  return {check_pool(p, kernel_size, stride, padding, {1}, ceil_mode, op), count_include_pad,
          divisor_override};
}

// Output pixel (oy, ox)'s window of an average pool, clipped to the input, with the divisor
// PyTorch uses (see cpu_avg_pool).
nhwc::Window avg_window(const AvgArgs& a, int64_t H, int64_t W, int64_t oy, int64_t ox) {
  const Pool2d& k = a.k;
  int64_t h0 = oy * k.sh - k.ph, w0 = ox * k.sw - k.pw;
  int64_t h1 = std::min(h0 + k.kh, H + k.ph), w1 = std::min(w0 + k.kw, W + k.pw);
  int64_t pool = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H);
  w1 = std::min(w1, W);
  int64_t div = a.divisor ? *a.divisor : (a.count_include_pad ? pool : (h1 - h0) * (w1 - w0));
  return {h0, h1, 1, w0, w1, 1, div};
}

// The window of output pixel (oy, ox) of an adaptive pool (PyTorch's start/end index rule).
nhwc::Window adaptive_window(int64_t oy, int64_t ox, int64_t oh, int64_t ow, int64_t H,
                             int64_t W) {
  int64_t h0 = (oy * H) / oh, h1 = ((oy + 1) * H + oh - 1) / oh;
  int64_t w0 = (ox * W) / ow, w1 = ((ox + 1) * W + ow - 1) / ow;
  return {h0, h1, 1, w0, w1, 1, (h1 - h0) * (w1 - w0)};
}

// Note [Separable average pool]
// An NCHW plane is average-pooled a row of outputs at a time: the window's input rows are summed
// into one zero-padded row (contiguous vector adds), then each output sums kw entries of that row
// at its stride (a loop per tap over all outputs, which vectorizes) and is divided by its
// divisor, the product of a row and a column length (padded lengths with count_include_pad,
// clipped ones without; divisor_override as given). A window wholly in the padding gives 0.
// Summing columns first changes float rounding within PyTorch's tolerance; the per-window loop it
// replaced took a 2x2 pool of [16, 32, 32, 32] floats 0.86 ms and a 3x3 stride-1 padded one
// 4.9 ms (PyTorch 0.49 and 2.2).
// r[w] = the sum of input rows [h0, h1) of a W-wide plane at column w (h0 < h1).
template <typename scalar_t, typename acc_t>
void sum_rows(const scalar_t* x, int64_t W, int64_t h0, int64_t h1, acc_t* r) {
  for (int64_t w = 0; w < W; ++w) r[w] = acc_t(x[h0 * W + w]);
  for (int64_t h = h0 + 1; h < h1; ++h)
    for (int64_t w = 0; w < W; ++w) r[w] += acc_t(x[h * W + w]);
}

// Adds the W-wide row r to rows [h0, h1) of acc (the backward of sum_rows).
template <typename acc_t>
void add_to_rows(acc_t* acc, int64_t W, int64_t h0, int64_t h1, const acc_t* r) {
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t w = 0; w < W; ++w) acc[h * W + w] += r[w];
}

// The column part of each output column's divisor (0 for a window with no input column), and
// the length of the zero-padded row the taps read.
int64_t avg_columns(const AvgArgs& a, int64_t W, std::vector<int64_t>& col_len) {
  const Pool2d& k = a.k;
  col_len.resize(size_t(k.ow));
  for (int64_t ox = 0; ox < k.ow; ++ox) {
    const nhwc::Window w = avg_window(a, 1, W, 0, ox);
    const int64_t w0 = ox * k.sw - k.pw, w1p = std::min(w0 + k.kw, W + k.pw);
    col_len[size_t(ox)] = w.w0 >= w.w1 ? 0 : a.count_include_pad ? w1p - w0 : w.w1 - w.w0;
  }
  return std::max(W + 2 * k.pw, (k.ow - 1) * k.sw + k.kw);
}

template <typename scalar_t>
void avg_pool_plane(const scalar_t* x, int64_t H, int64_t W, const AvgArgs& a, scalar_t* y) {
  using acc_t = opmath_t<scalar_t>;
  const Pool2d& k = a.k;
  thread_local std::vector<acc_t> row, acc;
  thread_local std::vector<int64_t> col_len;
  row.assign(size_t(avg_columns(a, W, col_len)), acc_t(0));
  acc.resize(size_t(k.ow));
  acc_t* const r = row.data() + k.pw;  // (r[w] is input column w)
  for (int64_t oy = 0; oy < k.oh; ++oy) {
    const int64_t h0p = oy * k.sh - k.ph, h1p = std::min(h0p + k.kh, H + k.ph);
    const int64_t h0 = std::max<int64_t>(h0p, 0), h1 = std::min(h1p, H);
    scalar_t* yo = y + oy * k.ow;
    if (h0 >= h1) {
      std::fill(yo, yo + k.ow, scalar_t(0));
      continue;
    }
    sum_rows(x, W, h0, h1, r);
    const acc_t* const rp = row.data();
    acc_t* const s = acc.data();
    const int64_t sw = k.sw, ow = k.ow;
    for (int64_t ox = 0; ox < ow; ++ox) s[ox] = rp[ox * sw];
    for (int64_t t = 1; t < k.kw; ++t)
      for (int64_t ox = 0; ox < ow; ++ox) s[ox] += rp[ox * sw + t];
    const int64_t row_len = a.count_include_pad ? h1p - h0p : h1 - h0;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t div = a.divisor ? *a.divisor : row_len * col_len[size_t(ox)];
      yo[ox] = col_len[size_t(ox)] == 0 ? scalar_t(0) : scalar_t(s[ox] / acc_t(div));
    }
  }
}

// The backward of Note [Separable average pool], its transpose: each output row's gradients,
// divided by their divisors, are spread over a zero-padded row tap by tap, and that row is added
// to each input row of the window (the per-window loop took the 3x3 stride-1 pool's backward of
// [16, 32, 32, 32] floats 3.0 ms, PyTorch 2.3). gi is the plane's gradient, H * W elements.
template <typename scalar_t>
void avg_pool_plane_backward(const scalar_t* g, int64_t H, int64_t W, const AvgArgs& a,
                             scalar_t* gi) {
  using acc_t = opmath_t<scalar_t>;
  const Pool2d& k = a.k;
  thread_local std::vector<acc_t> row, acc, v;
  thread_local std::vector<int64_t> col_len;
  const int64_t padded = avg_columns(a, W, col_len);
  row.resize(size_t(padded));
  acc.assign(size_t(H * W), acc_t(0));
  v.resize(size_t(k.ow));
  for (int64_t oy = 0; oy < k.oh; ++oy) {
    const int64_t h0p = oy * k.sh - k.ph, h1p = std::min(h0p + k.kh, H + k.ph);
    const int64_t h0 = std::max<int64_t>(h0p, 0), h1 = std::min(h1p, H);
    if (h0 >= h1) continue;
    const int64_t row_len = a.count_include_pad ? h1p - h0p : h1 - h0;
    const scalar_t* go = g + oy * k.ow;
    acc_t* const vp = v.data();
    for (int64_t ox = 0; ox < k.ow; ++ox) {
      const int64_t div = a.divisor ? *a.divisor : row_len * col_len[size_t(ox)];
      vp[ox] = col_len[size_t(ox)] == 0 ? acc_t(0) : acc_t(go[ox]) / acc_t(div);
    }
    acc_t* const rp = row.data();
    std::fill(rp, rp + padded, acc_t(0));
    const int64_t sw = k.sw, ow = k.ow;
    for (int64_t t = 0; t < k.kw; ++t)
      for (int64_t ox = 0; ox < ow; ++ox) rp[ox * sw + t] += vp[ox];
    add_to_rows(acc.data(), W, h0, h1, rp + k.pw);
  }
  for (int64_t j = 0; j < H * W; ++j) gi[j] = scalar_t(acc[size_t(j)]);
}

}  // namespace

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d";
  Planes p = as_planes(self, op);
  AvgArgs a = check_avg(p, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override, op);
  // Like PyTorch, int64 inputs average with integer (truncating) division.
  if (self.dtype() != kLong) check_float(self, op);
  Tensor out =
      make_empty(with_hw(p.lead, a.k.oh, a.k.ow), self.dtype(), self.device(), p.format);
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  const int64_t L = a.k.oh * a.k.ow, HW = p.H * p.W;
  auto body = [&](auto tag) {
    using scalar_t = decltype(tag);
    const scalar_t* x = p.x.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    if (p.channels_last()) {
      nhwc::avg_pool(x, p.N(), p.H, p.W, p.C(), a.k.oh, a.k.ow, [&](int64_t oy, int64_t ox) {
        return avg_window(a, p.H, p.W, oy, ox);
      }, y);
      return;
    }
    parallel_for(0, p.n, std::max<int64_t>(1, 8192 / std::max<int64_t>(L * a.k.kh * a.k.kw, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) avg_pool_plane(x + pl * HW, p.H, p.W, a, y + pl * L);
    });
  };
  if (self.dtype() == kLong) {
    body(int64_t{});
  } else {
    RT_DISPATCH_FLOATING(self.dtype(), op, [&] { body(scalar_t{}); });
  }
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d_backward";
  Planes p = as_planes(self, op);
  AvgArgs a = check_avg(p, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override, op);
  check_float(self, op);
  auto shape = with_hw(p.lead, a.k.oh, a.k.ow);
  RT_CHECK(grad_output.sizes().equals(shape) && grad_output.dtype() == self.dtype(), op,
           ": expected grad_output of size ", IntArrayRef(shape), " and dtype ", self.dtype(),
           ", got ", grad_output.sizes(), " and ", grad_output.dtype());
  Tensor go = grad_output.contiguous(p.format);
  Tensor gi = make_empty(self.sizes(), self.dtype(), self.device(), p.format);
  if (gi.device().is_meta()) return gi;  // See Note [Meta through CPU kernels]
  const int64_t L = a.k.oh * a.k.ow, HW = p.H * p.W;
  RT_DISPATCH_FLOATING(self.dtype(), op, [&] {
    const scalar_t* g = go.data_ptr<scalar_t>();
    scalar_t* out = gi.data_ptr<scalar_t>();
    if (p.channels_last()) {
      nhwc::avg_pool_backward(g, p.N(), p.H, p.W, p.C(), a.k.oh, a.k.ow,
                              [&](int64_t oy, int64_t ox) {
                                return avg_window(a, p.H, p.W, oy, ox);
                              }, out);
      return;
    }
    parallel_for(0, p.n, std::max<int64_t>(1, 8192 / std::max<int64_t>(L * a.k.kh * a.k.kw, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl)
        avg_pool_plane_backward(g + pl * L, p.H, p.W, a, out + pl * HW);
    });
  });
  return gi;
}

// ---------------------------------------------------------------- adaptive pools

namespace {

std::pair<int64_t, int64_t> check_adaptive(const Tensor& self, IntArrayRef output_size,
                                           const char* op) {
  RT_CHECK(output_size.size() == 2 || output_size.size() == 1, op, ": output_size must be 2, "
           "got ", output_size);
  int64_t oh = output_size[0], ow = output_size.size() == 2 ? output_size[1] : output_size[0];
  RT_CHECK(oh >= 0 && ow >= 0, op, ": elements of output_size must be greater than or equal to "
           "0 but received ", output_size);
  (void)self;
  return {oh, ow};
}

}  // namespace

namespace {

// Adaptive average pools of NCHW planes a row of outputs at a time, as in Note [Separable average
// pool], with PyTorch's adaptive windows: an output row's input rows summed into one row (vector
// adds), each output the sum of its window's entries of that row over the window's size; the
// backward spreads each output row's gradients over one row and adds it to the window's input
// rows (the per-window loops took [16, 32, 32, 32] floats to 7x7 0.32 ms forward and 0.29 back,
// PyTorch 0.28 and 0.24).
template <typename scalar_t>
void adaptive_avg_plane(const scalar_t* x, int64_t H, int64_t W, int64_t oh, int64_t ow,
                        scalar_t* y) {
  using acc_t = opmath_t<scalar_t>;
  thread_local std::vector<acc_t> row;
  row.resize(size_t(W));
  acc_t* const r = row.data();
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t h0 = adaptive_start(oy, oh, H), h1 = adaptive_end(oy, oh, H);
    sum_rows(x, W, h0, h1, r);
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t w0 = adaptive_start(ox, ow, W), w1 = adaptive_end(ox, ow, W);
      acc_t s = 0;
      for (int64_t w = w0; w < w1; ++w) s += r[w];
      y[oy * ow + ox] = scalar_t(s / acc_t((h1 - h0) * (w1 - w0)));
    }
  }
}

template <typename scalar_t>
void adaptive_avg_plane_backward(const scalar_t* g, int64_t H, int64_t W, int64_t oh, int64_t ow,
                                 scalar_t* gi) {
  using acc_t = opmath_t<scalar_t>;
  thread_local std::vector<acc_t> row, acc;
  row.resize(size_t(W));
  acc.assign(size_t(H * W), acc_t(0));
  acc_t* const r = row.data();
  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t h0 = adaptive_start(oy, oh, H), h1 = adaptive_end(oy, oh, H);
    std::fill(r, r + W, acc_t(0));
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t w0 = adaptive_start(ox, ow, W), w1 = adaptive_end(ox, ow, W);
      const acc_t v = acc_t(g[oy * ow + ox]) / acc_t((h1 - h0) * (w1 - w0));
      for (int64_t w = w0; w < w1; ++w) r[w] += v;
    }
    add_to_rows(acc.data(), W, h0, h1, r);
  }
  for (int64_t j = 0; j < H * W; ++j) gi[j] = scalar_t(acc[size_t(j)]);
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool2d";
  auto [oh, ow] = check_adaptive(self, output_size, op);
  Planes p = as_planes(self, op, EmptyOk::kNonSpatial);
  check_float(self, op);
  Tensor out = make_empty(with_hw(p.lead, oh, ow), self.dtype(), self.device(), p.format);
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  // Global average pooling of NCHW planes is each plane's mean: the vectorized row sums (Note
  // [Float sum accumulation]), where the window loop added a plane's elements one after another
  // (16x32x32x32 float32: 0.225 ms, PyTorch 0.031, which takes the mean too).
  if (oh == 1 && ow == 1 && !p.channels_last() && out.numel() > 0)
    return retorch::mean(p.x, IntArrayRef{-2, -1}, /*keepdim=*/true);
  const int64_t L = oh * ow, HW = p.H * p.W;
  RT_DISPATCH_FLOATING(self.dtype(), op, [&] {
    const scalar_t* x = p.x.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    if (p.channels_last()) {
      nhwc::avg_pool(x, p.N(), p.H, p.W, p.C(), oh, ow, [&](int64_t oy, int64_t ox) {
        return adaptive_window(oy, ox, oh, ow, p.H, p.W);
      }, y);
      return;
    }
    parallel_for(0, p.n, std::max<int64_t>(1, 8192 / std::max<int64_t>(HW, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl)
        adaptive_avg_plane(x + pl * HW, p.H, p.W, oh, ow, y + pl * L);
    });
  });
  return out;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  const char* op = "_adaptive_avg_pool2d_backward";
  Planes p = as_planes(self, op, EmptyOk::kNonSpatial);
  check_float(self, op);
  RT_CHECK(grad_output.dim() == self.dim() && grad_output.dtype() == self.dtype() &&
           grad_output.sizes().slice(0, size_t(self.dim() - 2))
               .equals(self.sizes().slice(0, size_t(self.dim() - 2))), op,
           ": grad_output of size ", grad_output.sizes(), " and dtype ", grad_output.dtype(),
           " does not match the input of size ", self.sizes(), " and dtype ", self.dtype());
  const int64_t oh = grad_output.size(-2), ow = grad_output.size(-1);
  const int64_t L = oh * ow, HW = p.H * p.W;
  Tensor go = grad_output.contiguous(p.format);
  Tensor gi = make_empty(self.sizes(), self.dtype(), self.device(), p.format);
  if (gi.device().is_meta()) return gi;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(self.dtype(), op, [&] {
    const scalar_t* g = go.data_ptr<scalar_t>();
    scalar_t* out = gi.data_ptr<scalar_t>();
    if (p.channels_last()) {
      nhwc::avg_pool_backward(g, p.N(), p.H, p.W, p.C(), oh, ow, [&](int64_t oy, int64_t ox) {
        return adaptive_window(oy, ox, oh, ow, p.H, p.W);
      }, out);
      return;
    }
    parallel_for(0, p.n, std::max<int64_t>(1, 8192 / std::max<int64_t>(HW, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl)
        adaptive_avg_plane_backward(g + pl * L, p.H, p.W, oh, ow, out + pl * HW);
    });
  });
  return gi;
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  const char* op = "adaptive_max_pool2d";
  auto [oh, ow] = check_adaptive(self, output_size, op);
  Planes p = as_planes(self, op, EmptyOk::kLeading);
  check_float(self, op);
  auto shape = with_hw(p.lead, oh, ow);
  Tensor out = make_empty(shape, self.dtype(), self.device(), p.format);
  Tensor ind = make_empty(shape, kLong, self.device(), p.format);
  if (out.device().is_meta()) return {out, ind};  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(self.dtype(), op, [&] {
    const scalar_t* x = p.x.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    int64_t* ip = ind.data_ptr<int64_t>();
    if (p.channels_last()) {
      nhwc::max_pool(x, p.N(), p.H, p.W, p.C(), oh, ow, [&](int64_t oy, int64_t ox) {
        return adaptive_window(oy, ox, oh, ow, p.H, p.W);
      }, y, ip);
      return;
    }
    max_pool_planes(x, p.n, p.H, p.W, oh, ow, [&](int64_t oy, int64_t ox) {
      return adaptive_window(oy, ox, oh, ow, p.H, p.W);
    }, y, ip);  // Note [NCHW max pool in NHWC blocks]
  });
  return {out, ind};
}

Tensor adaptive_max_pool2d_backward(const Tensor& grad_output, const Tensor& self,
                                    const Tensor& indices) {
  return scatter_max_grad(grad_output, self, indices, "adaptive_max_pool2d_backward");
}

}  // namespace retorch::cpu
