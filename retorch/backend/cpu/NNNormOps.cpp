// Fused normalization kernels: native_batch_norm and its backward passes (NCHW planes, or NHWC
// rows with channels innermost for channels-last inputs), native_layer_norm and its backward.
#include <array>
#include <cmath>
#include <vector>

#include "retorch/backend/cpu/Convert16.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/backend/cpu/ReduceUtils.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cpu {

namespace {

/// t (or `fill` where t is undefined) as C doubles, checked to hold `n` elements.
std::vector<double> as_doubles(const std::optional<Tensor>& t, int64_t n, double fill,
                               const char* op, const char* what) {
  std::vector<double> v(size_t(n), fill);
  if (!t || !t->defined()) return v;
  RT_CHECK(t->numel() == n, op, ": expected ", what, " to have ", n, " elements, but got a tensor "
           "of shape ", t->sizes());
  Tensor d = t->to(kDouble).contiguous();
  const double* p = d.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = p[i];
  return v;
}

/// Writes the doubles v into t (any floating dtype, any strides).
void write_doubles(const Tensor& t, const std::vector<double>& v) {
  Tensor d = make_empty({int64_t(v.size())}, kDouble, t.device());
  std::copy(v.begin(), v.end(), d.data_ptr<double>());
  t.copy_(d.view(t.sizes()));
}

// Note [NHWC channel sums]
// A channels-last tensor is an [R, C] matrix (R = N * H * W rows). Per-channel sums run over
// chunks of rows in parallel; body(r0, r1, acc) adds rows [r0, r1) into K accumulators of C
// op_t values each (acc[k * C + c], a contiguous vectorizable inner loop), flushed into double
// partials every 64 rows so float sums stay accurate; the partials are added at the end.
template <typename op_t, int K, typename Body>
std::array<std::vector<double>, K> channel_sums(int64_t R, int64_t C, const Body& body) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(R, get_num_threads() * 4));
  std::vector<double> part(size_t(chunks * K * C), 0.0);
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    std::vector<op_t> acc(size_t(K * C));
    for (int64_t ch = cb; ch < ce; ++ch) {
      double* pd = part.data() + ch * K * C;
      const int64_t r1 = (ch + 1) * R / chunks;
      for (int64_t r = ch * R / chunks; r < r1; r += 64) {
        std::fill(acc.begin(), acc.end(), op_t(0));
        body(r, std::min<int64_t>(r + 64, r1), acc.data());
        for (int64_t i = 0; i < K * C; ++i) pd[i] += double(acc[size_t(i)]);
      }
    }
  });
  std::array<std::vector<double>, K> out;
  for (int k = 0; k < K; ++k) {
    out[size_t(k)].assign(size_t(C), 0.0);
    for (int64_t ch = 0; ch < chunks; ++ch)
      for (int64_t c = 0; c < C; ++c)
        out[size_t(k)][size_t(c)] += part[size_t((ch * K + k) * C + c)];
  }
  return out;
}

// Note [16-bit batch norm planes]
// The NCHW loops read a plane at a time; float16/bfloat16 planes are widened a block at a time
// into float32 buffers (Note [16-bit float loops]) so the loops vectorize: converting an element
// at a time, bfloat16 batch norm took 4-6x float32's time (an autocast ConvNet's 64x32x32x32:
// 0.94 ms forward against 0.24). The NHWC elementwise loops widen blocks of whole rows (a block
// of rows is one contiguous span): channels-last 64x32x32x32 forward 1.59 -> 0.6 ms and the
// input gradient 1.62 -> 0.4. The arithmetic is the same float32 opmath.

/// Elements a span of the 16-bit planes: a 32x32 plane in one (4 KB of float32 on the stack).
constexpr int64_t kBnBlock = 1024;

/// f(r0, r1, u, v) over blocks of whole rows [r0, r1) of an R x C row-major matrix (about
/// kBnBlock elements a block) in parallel, with two float32 buffers of the block's size.
template <typename F>
void for_row_blocks(int64_t R, int64_t C, const F& f) {
  const int64_t rows = std::max<int64_t>(1, kBnBlock / std::max<int64_t>(C, 1));
  const int64_t blocks = (R + rows - 1) / rows;
  parallel_for(0, blocks, std::max<int64_t>(1, 16 / rows), [&](int64_t b, int64_t e) {
    std::vector<float> u(size_t(rows * C)), v(size_t(rows * C));
    for (int64_t blk = b; blk < e; ++blk)
      f(blk * rows, std::min(R, (blk + 1) * rows), u.data(), v.data());
  });
}

/// out[r, c] = f(c, x[r, c]) over an R x C row-major matrix, f computing in opmath (rounded once
/// into scalar_t); 16-bit rows widen a block of whole rows at a time.
template <typename scalar_t, typename F>
void map_rows(const scalar_t* x, scalar_t* out, int64_t R, int64_t C, const F& f) {
  if constexpr (is_float16_v<scalar_t>) {  // Note [16-bit batch norm planes]
    for_row_blocks(R, C, [&](int64_t r0, int64_t r1, float* u, float*) {
      const int64_t n = (r1 - r0) * C;
      to_float(x + r0 * C, u, n);
      for (int64_t r = 0; r < r1 - r0; ++r) {
        float* ur = u + r * C;
        _Pragma("omp simd")
        for (int64_t c = 0; c < C; ++c) ur[c] = f(c, ur[c]);
      }
      from_float(u, out + r0 * C, n);
    });
  } else {
    parallel_for(0, R, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const scalar_t* xr = x + r * C;
        scalar_t* o = out + r * C;
        _Pragma("omp simd")
        for (int64_t c = 0; c < C; ++c) o[c] = scalar_t(f(c, xr[c]));
      }
    });
  }
}

/// out[r, c] = f(c, a[r, c], b[r, c]) over R x C row-major matrices, as map_rows.
template <typename scalar_t, typename F>
void map_rows(const scalar_t* a, const scalar_t* b, scalar_t* out, int64_t R, int64_t C,
              const F& f) {
  if constexpr (is_float16_v<scalar_t>) {  // Note [16-bit batch norm planes]
    for_row_blocks(R, C, [&](int64_t r0, int64_t r1, float* u, float* v) {
      const int64_t n = (r1 - r0) * C;
      to_float(a + r0 * C, u, n);
      to_float(b + r0 * C, v, n);
      for (int64_t r = 0; r < r1 - r0; ++r) {
        float* ur = u + r * C;
        const float* vr = v + r * C;
        _Pragma("omp simd")
        for (int64_t c = 0; c < C; ++c) ur[c] = f(c, ur[c], vr[c]);
      }
      from_float(u, out + r0 * C, n);
    });
  } else {
    parallel_for(0, R, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)),
                 [&](int64_t b0, int64_t e0) {
      for (int64_t r = b0; r < e0; ++r) {
        const scalar_t* ar = a + r * C;
        const scalar_t* br = b + r * C;
        scalar_t* o = out + r * C;
        _Pragma("omp simd")
        for (int64_t c = 0; c < C; ++c) o[c] = scalar_t(f(c, ar[c], br[c]));
      }
    });
  }
}

/// y[r, c] = x[r, c] * scale[c] + shift[c] over NHWC rows.
template <typename scalar_t, typename op_t>
void affine_rows(const scalar_t* x, scalar_t* y, int64_t R, int64_t C,
                 const std::vector<op_t>& scale, const std::vector<op_t>& shift) {
  const op_t* sc = scale.data();
  const op_t* sh = shift.data();
  map_rows(x, y, R, C, [=](int64_t c, op_t v) { return v * sc[c] + sh[c]; });
}

/// f(v, i, m) over spans of p[0, n): v points at m values as op_t, starting at element i.
template <typename scalar_t, typename F>
void read_spans(const scalar_t* p, int64_t n, const F& f) {
  if constexpr (is_float16_v<scalar_t>) {
    alignas(64) float v[kBnBlock];
    for (int64_t i = 0; i < n; i += kBnBlock) {
      const int64_t m = std::min(kBnBlock, n - i);
      to_float(p + i, v, m);
      f(static_cast<const float*>(v), i, m);
    }
  } else {
    f(p, int64_t(0), n);
  }
}

/// f(u, v, i, m) over spans of a[0, n) and b[0, n) together.
template <typename scalar_t, typename F>
void read_spans(const scalar_t* a, const scalar_t* b, int64_t n, const F& f) {
  if constexpr (is_float16_v<scalar_t>) {
    alignas(64) float u[kBnBlock], v[kBnBlock];
    for (int64_t i = 0; i < n; i += kBnBlock) {
      const int64_t m = std::min(kBnBlock, n - i);
      to_float(a + i, u, m);
      to_float(b + i, v, m);
      f(static_cast<const float*>(u), static_cast<const float*>(v), i, m);
    }
  } else {
    f(a, b, int64_t(0), n);
  }
}

/// out[i] = f(x[i]) over a plane of n values, f computing in opmath (rounded once into scalar_t).
template <typename scalar_t, typename F>
void map_plane(const scalar_t* x, scalar_t* out, int64_t n, const F& f) {
  if constexpr (is_float16_v<scalar_t>) {
    alignas(64) float o[kBnBlock];
    read_spans(x, n, [&](const float* v, int64_t i, int64_t m) {
      _Pragma("omp simd")
      for (int64_t j = 0; j < m; ++j) o[j] = f(v[j]);
      from_float(o, out + i, m);
    });
  } else {
    _Pragma("omp simd")
    for (int64_t i = 0; i < n; ++i) out[i] = scalar_t(f(x[i]));
  }
}

/// out[i] = f(a[i], b[i]) over a plane of n values, as map_plane.
template <typename scalar_t, typename F>
void map_plane(const scalar_t* a, const scalar_t* b, scalar_t* out, int64_t n, const F& f) {
  if constexpr (is_float16_v<scalar_t>) {
    alignas(64) float o[kBnBlock];
    read_spans(a, b, n, [&](const float* u, const float* v, int64_t i, int64_t m) {
      _Pragma("omp simd")
      for (int64_t j = 0; j < m; ++j) o[j] = f(u[j], v[j]);
      from_float(o, out + i, m);
    });
  } else {
    _Pragma("omp simd")
    for (int64_t i = 0; i < n; ++i) out[i] = scalar_t(f(a[i], b[i]));
  }
}

}  // namespace

// ---------------------------------------------------------------- batch norm

std::tuple<Tensor, Tensor, Tensor> native_batch_norm(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    bool training, double momentum, double eps) {
  const char* op = "native_batch_norm";
  RT_CHECK(input.dim() >= 2, op, ": expected an input with at least 2 dimensions (N, C, ...), "
           "got shape ", input.sizes());
  RT_CHECK(is_floating_type(input.dtype()), "\"batch_norm\" not implemented for '",
           dtype_name(input.dtype()), "'");
  bool have_rm = running_mean && running_mean->defined();
  bool have_rv = running_var && running_var->defined();
  RT_CHECK(training || (have_rm && have_rv), op, ": running_mean and running_var must be "
           "defined in evaluation mode");
  int64_t N = input.size(0), C = input.size(1);
  int64_t S = C == 0 ? 0 : input.numel() / std::max<int64_t>(N * C, 1);
  if (input.device().is_meta()) {  // See Note [Meta through CPU kernels]
    const int64_t stats = training ? C : 0;
    return {make_empty(input.sizes(), input.dtype(), input.device(), input.suggest_memory_format()),
            make_empty({stats}, input.dtype(), input.device()),
            make_empty({stats}, input.dtype(), input.device())};
  }
  std::vector<double> w = as_doubles(weight, C, 1.0, op, "weight");
  std::vector<double> b = as_doubles(bias, C, 0.0, op, "bias");
  std::vector<double> rm = as_doubles(running_mean, C, 0.0, op, "running_mean");
  std::vector<double> rv = as_doubles(running_var, C, 1.0, op, "running_var");
  std::vector<double> mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  // NHWC loops (and a channels-last result) when PyTorch's would.
  const MemoryFormat format = input.suggest_memory_format();
  const bool cl = format == MemoryFormat::ChannelsLast;
  Tensor x = input.contiguous(format);
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device(), format);
  int64_t count = N * S;
  // Running statistics from the batch's mean and sum of squared deviations.
  auto update_running = [&](int64_t c, double m, double ss) {
    if (have_rm) rm[size_t(c)] = (1 - momentum) * rm[size_t(c)] + momentum * m;
    if (have_rv) {
      double unbiased = count > 1 ? ss / double(count - 1) : std::nan("");
      rv[size_t(c)] = (1 - momentum) * rv[size_t(c)] + momentum * unbiased;
    }
  };
  RT_DISPATCH_FLOATING(input.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* yp = out.data_ptr<scalar_t>();
    if (cl) {  // NHWC rows: see Note [NHWC channel sums]
      const int64_t R = N * S;
      if (training) {
        // Note [One-pass NHWC statistics]
        // One read of the input for both sums, of d = x - k and d^2, k a row of the input (the
        // first). Shifted, the squares cancel only by (mean - k)^2 / var, so the sums of d^2
        // over blocks of 64 rows are exact enough in op_t (float for float inputs: 16 lanes
        // and no conversions; the blocks flush into double partials, Note [NHWC channel sums]).
        // In double throughout, the pass was bound by its arithmetic at ~2.4x a plain channel
        // sum. Where k lies more than 8 standard deviations from a channel's mean (an outlier
        // first row), both sums are taken again around the mean (a second read). batch_norm of
        // 32x64x56x56 channels-last, training, on a Zen 4 VM whose bandwidth moves between runs:
        // two passes 2.2-2.4 ms; one pass in double 1.5-2.0 (PyTorch 1.4-1.9), in a later
        // session 1.74-1.95 (PyTorch 1.68-1.85); in float lanes down the rows 1.48-1.65
        // (PyTorch 1.83-2.13), of which the normalizing pass is ~1.0.

        // Per channel, the sums of d = x - shift[c] and of d^2 over all rows.
        auto shifted_sums = [&](const op_t* shift) {
          return channel_sums<op_t, 2>(R, C, [&](int64_t r0, int64_t r1, op_t* acc) {
            // Four cache lines of channels at a time down the rows (the whole row for 64 float
            // channels: one sequential stream), their sums in registers (summed through memory,
            // the row loop was bound by the accumulators' loads and stores; one line at a time,
            // by the strided loads' latency).
            constexpr int64_t L = 256 / int64_t(sizeof(op_t));
            int64_t c0 = 0;
            for (; c0 + L <= C; c0 += L) {
              op_t a1[L] = {}, a2[L] = {};
              for (int64_t r = r0; r < r1; ++r) {
                const scalar_t* row = xp + r * C + c0;
                _Pragma("omp simd")
                for (int64_t j = 0; j < L; ++j) {
                  const op_t d = op_t(row[j]) - shift[c0 + j];
                  a1[j] += d;
                  a2[j] += d * d;
                }
              }
              for (int64_t j = 0; j < L; ++j) {
                acc[c0 + j] += a1[j];
                acc[C + c0 + j] += a2[j];
              }
            }
            for (int64_t r = r0; r < r1 && c0 < C; ++r) {
              const scalar_t* row = xp + r * C;
              for (int64_t c = c0; c < C; ++c) {
                const op_t d = op_t(row[c]) - shift[c];
                acc[c] += d;
                acc[C + c] += d * d;
              }
            }
          });
        };
        // mean and sum of squared deviations from the shifted sums; whether the shift lay
        // more than 8 standard deviations from the mean in some channel.
        std::vector<double> ss(static_cast<size_t>(C), 0.0);
        auto moments = [&](const std::vector<op_t>& shift) {
          auto [s1, s2] = shifted_sums(shift.data());
          bool far = false;
          for (int64_t c = 0; c < C; ++c) {
            const double n = double(count), a = s1[size_t(c)];
            mean[size_t(c)] = count > 0 ? double(shift[size_t(c)]) + a / n : std::nan("");
            ss[size_t(c)] = count > 0 ? std::max(s2[size_t(c)] - a * (a / n), 0.0) : 0.0;
            far = far || (count > 0 && (a / n) * (a / n) * n > 64 * ss[size_t(c)]);
          }
          return far;
        };
        std::vector<op_t> first(static_cast<size_t>(C), op_t(0));
        if (R > 0)
          for (int64_t c = 0; c < C; ++c) first[size_t(c)] = op_t(xp[c]);
        if (moments(first)) moments(std::vector<op_t>(mean.begin(), mean.end()));
        for (int64_t c = 0; c < C; ++c) {
          double var = count > 0 ? ss[size_t(c)] / double(count) : std::nan("");
          invstd[size_t(c)] = 1.0 / std::sqrt(var + eps);
          update_running(c, mean[size_t(c)], ss[size_t(c)]);
        }
      } else {
        for (int64_t c = 0; c < C; ++c) {
          mean[size_t(c)] = rm[size_t(c)];
          invstd[size_t(c)] = 1.0 / std::sqrt(rv[size_t(c)] + eps);
        }
      }
      std::vector<op_t> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
      for (size_t c = 0; c < size_t(C); ++c) {
        scale[c] = op_t(invstd[c] * w[c]);
        shift[c] = op_t(b[c] - mean[c] * invstd[c] * w[c]);
      }
      affine_rows(xp, yp, R, C, scale, shift);
      return;
    }
    if (training) {
      // Two passes per channel (mean, then squared deviations) for accuracy.
      parallel_for(0, C, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          double s = 0;
          for (int64_t n = 0; n < N; ++n) {  // Note [16-bit batch norm planes]
            op_t acc = 0;
            read_spans(xp + (n * C + c) * S, S, [&](const auto* v, int64_t, int64_t len) {
              op_t part = 0;  // (locals: a captured reduction variable is not kept in registers)
              _Pragma("omp simd reduction(+ : part)")
              for (int64_t i = 0; i < len; ++i) part += op_t(v[i]);
              acc += part;
            });
            s += double(acc);
          }
          double m = count > 0 ? s / double(count) : std::nan("");
          double ss = 0;
          const op_t mf = op_t(m);
          for (int64_t n = 0; n < N; ++n) {
            op_t acc = 0;
            read_spans(xp + (n * C + c) * S, S, [&, mf](const auto* v, int64_t, int64_t len) {
              op_t part = 0;
              _Pragma("omp simd reduction(+ : part)")
              for (int64_t i = 0; i < len; ++i) {
                const op_t d = op_t(v[i]) - mf;
                part += d * d;
              }
              acc += part;
            });
            ss += double(acc);
          }
          double var = count > 0 ? ss / double(count) : std::nan("");
          mean[size_t(c)] = m;
          invstd[size_t(c)] = 1.0 / std::sqrt(var + eps);
          update_running(c, m, ss);
        }
      });
    } else {
      for (int64_t c = 0; c < C; ++c) {
        mean[size_t(c)] = rm[size_t(c)];
        invstd[size_t(c)] = 1.0 / std::sqrt(rv[size_t(c)] + eps);
      }
    }
    parallel_for(0, N * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(S, 1)),
                 [&](int64_t b0, int64_t e0) {
      for (int64_t nc = b0; nc < e0; ++nc) {
        size_t c = size_t(nc % C);
        const op_t scale = op_t(invstd[c] * w[c]);
        const op_t shift = op_t(b[c] - mean[c] * invstd[c] * w[c]);
        map_plane(xp + nc * S, yp + nc * S, S,
                  [=](op_t v) { return v * scale + shift; });
      }
    });
  });
  if (training) {
    if (have_rm) write_doubles(*running_mean, rm);
    if (have_rv) write_doubles(*running_var, rv);
    Tensor sm = make_empty({C}, input.dtype(), input.device());
    Tensor si = make_empty({C}, input.dtype(), input.device());
    write_doubles(sm, mean);
    write_doubles(si, invstd);
    return {out, sm, si};
  }
  // Like PyTorch's CPU kernel, evaluation mode saves no statistics.
  return {out, make_empty({0}, input.dtype(), input.device()),
          make_empty({0}, input.dtype(), input.device())};
}

namespace {

// grad_out and input as contiguous [N, C, S] (or NHWC [N * S, C] when channels_last) with
// per-channel mean/invstd as doubles.
struct BnBackwardArgs {
  Tensor dy, x;
  int64_t N, C, S;
  std::vector<double> mean, invstd;
  MemoryFormat format;
  bool channels_last;
};

BnBackwardArgs bn_backward_args(const char* op, const Tensor& grad_out, const Tensor& input,
                                const Tensor& mean, const Tensor& invstd) {
  RT_CHECK(input.dim() >= 2 && grad_out.sizes() == input.sizes() &&
           grad_out.dtype() == input.dtype() && is_floating_type(input.dtype()), op,
           ": expected grad_out and input of the same floating dtype and shape (N, C, ...), got ",
           grad_out.sizes(), " ", grad_out.dtype(), " and ", input.sizes(), " ", input.dtype());
  BnBackwardArgs a;
  a.N = input.size(0);
  a.C = input.size(1);
  a.S = a.C == 0 ? 0 : input.numel() / std::max<int64_t>(a.N * a.C, 1);
  a.format = input.suggest_memory_format();
  a.channels_last = a.format == MemoryFormat::ChannelsLast;
  a.dy = grad_out.contiguous(a.format);
  a.x = input.contiguous(a.format);
  a.mean = as_doubles(mean, a.C, 0.0, op, "mean");
  a.invstd = as_doubles(invstd, a.C, 1.0, op, "invstd");
  return a;
}

}  // namespace

std::tuple<Tensor, Tensor> batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& input,
                                                      const Tensor& mean, const Tensor& invstd) {
  const char* op = "_batch_norm_backward_reduce";
  if (input.device().is_meta()) {  // See Note [Meta through CPU kernels]
    RT_CHECK(input.dim() >= 2, op, ": expected an input of shape (N, C, ...), got ", input.sizes());
    return {make_empty({input.size(1)}, input.dtype(), input.device()),
            make_empty({input.size(1)}, input.dtype(), input.device())};
  }
  BnBackwardArgs a = bn_backward_args(op, grad_out, input, mean, invstd);
  std::vector<double> sum_dy(size_t(a.C)), sum_dy_xmu(size_t(a.C));
  RT_DISPATCH_FLOATING(input.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* dy = a.dy.data_ptr<scalar_t>();
    const scalar_t* x = a.x.data_ptr<scalar_t>();
    if (a.channels_last) {  // See Note [NHWC channel sums]
      const int64_t C = a.C;
      std::vector<op_t> mf(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) mf[size_t(c)] = op_t(a.mean[size_t(c)]);
      const op_t* mp = mf.data();
      auto sums = channel_sums<op_t, 2>(a.N * a.S, C, [&](int64_t r0, int64_t r1, op_t* acc) {
        for (int64_t r = r0; r < r1; ++r) {
          const scalar_t* g = dy + r * C;
          const scalar_t* xr = x + r * C;
          _Pragma("omp simd")
          for (int64_t c = 0; c < C; ++c) {
            acc[c] += op_t(g[c]);
            acc[C + c] += op_t(g[c]) * (op_t(xr[c]) - mp[c]);
          }
        }
      });
      sum_dy = sums[0];
      sum_dy_xmu = sums[1];
      return;
    }
    parallel_for(0, a.C, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        double s1 = 0, s2 = 0;
        const op_t m = op_t(a.mean[size_t(c)]);
        for (int64_t n = 0; n < a.N; ++n) {  // Note [16-bit batch norm planes]
          const int64_t at = (n * a.C + c) * a.S;
          op_t acc1 = 0, acc2 = 0;
          read_spans(dy + at, x + at, a.S,
                     [&, m](const auto* g, const auto* xr, int64_t, int64_t len) {
            op_t p1 = 0, p2 = 0;
            _Pragma("omp simd reduction(+ : p1, p2)")
            for (int64_t i = 0; i < len; ++i) {
              p1 += op_t(g[i]);
              p2 += op_t(g[i]) * (op_t(xr[i]) - m);
            }
            acc1 += p1;
            acc2 += p2;
          });
          s1 += double(acc1);
          s2 += double(acc2);
        }
        sum_dy[size_t(c)] = s1;
        sum_dy_xmu[size_t(c)] = s2;
      }
    });
  });
  Tensor t1 = make_empty({a.C}, input.dtype(), input.device());
  Tensor t2 = make_empty({a.C}, input.dtype(), input.device());
  write_doubles(t1, sum_dy);
  write_doubles(t2, sum_dy_xmu);
  return {t1, t2};
}

Tensor batch_norm_backward_elemt(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                 const Tensor& invstd, const std::optional<Tensor>& weight,
                                 const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  const char* op = "_batch_norm_backward_elemt";
  if (input.device().is_meta())  // See Note [Meta through CPU kernels]
    return make_empty(input.sizes(), input.dtype(), input.device(), input.suggest_memory_format());
  BnBackwardArgs a = bn_backward_args(op, grad_out, input, mean, invstd);
  std::vector<double> w = as_doubles(weight, a.C, 1.0, op, "weight");
  std::vector<double> s1 = as_doubles(sum_dy, a.C, 0.0, op, "sum_dy");
  std::vector<double> s2 = as_doubles(sum_dy_xmu, a.C, 0.0, op, "sum_dy_xmu");
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device(), a.format);
  const double M = double(std::max<int64_t>(a.N * a.S, 1));
  RT_DISPATCH_FLOATING(input.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* dy = a.dy.data_ptr<scalar_t>();
    const scalar_t* x = a.x.data_ptr<scalar_t>();
    scalar_t* gi = out.data_ptr<scalar_t>();
    if (a.channels_last) {
      // gi = (dy - mean(dy) - (x - mean) * proj) * scale, per channel c over NHWC rows.
      const int64_t C = a.C;
      const size_t nc = static_cast<size_t>(C);
      std::vector<op_t> m(nc), gm(nc), pr(nc), sc(nc);
      for (size_t c = 0; c < size_t(C); ++c) {
        m[c] = op_t(a.mean[c]);
        gm[c] = op_t(s1[c] / M);
        pr[c] = op_t(s2[c] / M * a.invstd[c] * a.invstd[c]);
        sc[c] = op_t(a.invstd[c] * w[c]);
      }
      const op_t *mp = m.data(), *gmp = gm.data(), *prp = pr.data(), *scp = sc.data();
      map_rows(dy, x, gi, a.N * a.S, C, [=](int64_t c, op_t g, op_t xv) {
        return (g - gmp[c] - (xv - mp[c]) * prp[c]) * scp[c];
      });
      return;
    }
    parallel_for(0, a.N * a.C, std::max<int64_t>(1, 16384 / std::max<int64_t>(a.S, 1)),
                 [&](int64_t b0, int64_t e0) {
      for (int64_t nc = b0; nc < e0; ++nc) {
        const size_t c = size_t(nc % a.C);
        // gi = (dy - mean(dy) - (x - mean) * invstd^2 * mean(dy * (x - mean))) * invstd * w
        const op_t m = op_t(a.mean[c]), grad_mean = op_t(s1[c] / M);
        const op_t proj = op_t(s2[c] / M * a.invstd[c] * a.invstd[c]);
        const op_t scale = op_t(a.invstd[c] * w[c]);
        map_plane(dy + nc * a.S, x + nc * a.S, gi + nc * a.S, a.S, [=](op_t g, op_t xv) {
          return (g - grad_mean - (xv - m) * proj) * scale;
        });
      }
    });
  });
  return out;
}

// ---------------------------------------------------------------- layer norm

namespace {

/// Rows M and row length N of a layer norm over the trailing `normalized_shape` dims of input.
std::pair<int64_t, int64_t> layer_norm_rows(const Tensor& input, IntArrayRef normalized_shape) {
  int64_t nd = int64_t(normalized_shape.size()), in_dim = input.dim();
  RT_CHECK(nd >= 1, "layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., "
           "containing at least one element, but got normalized_shape = ", normalized_shape);
  bool ok = in_dim >= nd;
  for (int64_t i = 0; ok && i < nd; ++i)
    ok = input.size(in_dim - nd + i) == normalized_shape[size_t(i)];
  RT_CHECK(ok, "layer_norm: Given normalized_shape=", normalized_shape,
           ", expected input with shape [*", [&] {
             std::string s;
             for (int64_t v : normalized_shape) s += ", " + std::to_string(v);
             return s;
           }(), "], but got input of size", input.sizes());
  int64_t N = 1;
  for (int64_t v : normalized_shape) N *= v;
  int64_t M = 1;
  for (int64_t i = 0; i < in_dim - nd; ++i) M *= input.size(i);
  return {M, N};
}

/// weight/bias as contiguous tensors of input's dtype (or undefined), shape-checked.
Tensor affine_param(const std::optional<Tensor>& t, IntArrayRef normalized_shape,
                    const Tensor& input, const char* what) {
  if (!t || !t->defined()) return Tensor();
  RT_CHECK(t->sizes() == normalized_shape, "layer_norm: Expected ", what,
           " to be of same shape as normalized_shape, but got ", what, " of shape ", t->sizes(),
           " and normalized_shape = ", normalized_shape);
  return t->to(input.dtype()).contiguous();
}

/// grad_out as [M, N] rows: contiguous, or a broadcast scalar (the grad of .sum()) read in place
/// through a zero row step instead of being materialized.
struct GradRows {
  Tensor t;
  int64_t row_step;  // elements between rows; 0 for a broadcast scalar
  bool scalar;       // every element equals t's first
};

GradRows grad_rows(const Tensor& grad_out, const Tensor& input, int64_t N) {
  bool all_zero = grad_out.numel() > 0;
  for (int64_t i = 0; i < grad_out.dim(); ++i) all_zero = all_zero && grad_out.stride(i) == 0;
  if (all_zero && grad_out.dtype() == input.dtype()) return {grad_out, 0, true};
  return {grad_out.to(input.dtype()).contiguous(), N, false};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_layer_norm(
    const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& bias, double eps) {
  auto [M, N] = layer_norm_rows(input, normalized_shape);
  RT_CHECK(is_floating_type(input.dtype()), "\"LayerNormKernelImpl\" not implemented for '",
           dtype_name(input.dtype()), "'");
  Tensor w = affine_param(weight, normalized_shape, input, "weight");
  Tensor b = affine_param(bias, normalized_shape, input, "bias");
  Tensor x = input.contiguous();
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  std::vector<int64_t> ss = norm_stat_shape(input.sizes(), normalized_shape.size());
  Tensor mean = make_empty(ss, input.dtype(), input.device());
  Tensor rstd = make_empty(ss, input.dtype(), input.device());
  if (out.device().is_meta()) return {out, mean, rstd};  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(input.dtype(), "native_layer_norm", [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* wp = w.defined() ? w.data_ptr<scalar_t>() : nullptr;
    const scalar_t* bp = b.defined() ? b.data_ptr<scalar_t>() : nullptr;
    scalar_t* yp = out.data_ptr<scalar_t>();
    scalar_t* mp = mean.data_ptr<scalar_t>();
    scalar_t* rp = rstd.data_ptr<scalar_t>();
    parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)),
                 [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const scalar_t* xr = xp + r * N;
        scalar_t* yr = yp + r * N;
        const auto [m, rs] = row_moments(xr, N, eps, op_t(NAN));
        mp[r] = scalar_t(m);
        rp[r] = scalar_t(rs);
        if (wp && bp) {
          _Pragma("omp simd")
          for (int64_t i = 0; i < N; ++i)
            yr[i] = scalar_t((op_t(xr[i]) - m) * rs * op_t(wp[i]) + op_t(bp[i]));
        } else if (wp) {
          _Pragma("omp simd")
          for (int64_t i = 0; i < N; ++i) yr[i] = scalar_t((op_t(xr[i]) - m) * rs * op_t(wp[i]));
        } else if (bp) {
          _Pragma("omp simd")
          for (int64_t i = 0; i < N; ++i) yr[i] = scalar_t((op_t(xr[i]) - m) * rs + op_t(bp[i]));
        } else {
          _Pragma("omp simd")
          for (int64_t i = 0; i < N; ++i) yr[i] = scalar_t((op_t(xr[i]) - m) * rs);
        }
      }
    });
  });
  return {out, mean, rstd};
}

Tensor layer_norm_backward_input(const Tensor& grad_out, const Tensor& input,
                                 IntArrayRef normalized_shape, const Tensor& mean,
                                 const Tensor& rstd, const std::optional<Tensor>& weight) {
  auto [M, N] = layer_norm_rows(input, normalized_shape);
  RT_CHECK(grad_out.sizes() == input.sizes(), "_layer_norm_backward_input: grad_out of shape ",
           grad_out.sizes(), " does not match input of shape ", input.sizes());
  RT_CHECK(mean.numel() == M && rstd.numel() == M, "_layer_norm_backward_input: expected mean and "
           "rstd with ", M, " elements, got shapes ", mean.sizes(), " and ", rstd.sizes());
  Tensor w = affine_param(weight, normalized_shape, input, "weight");
  GradRows gv = grad_rows(grad_out, input, N);
  Tensor x = input.contiguous(), g = gv.t;
  Tensor mc = mean.to(input.dtype()).contiguous(), rc = rstd.to(input.dtype()).contiguous();
  Tensor dx = make_empty(input.sizes(), input.dtype(), input.device());
  if (dx.device().is_meta()) return dx;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(input.dtype(), "_layer_norm_backward_input", [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* gp = static_cast<const scalar_t*>(g.data_ptr());
    const scalar_t* wp = w.defined() ? w.data_ptr<scalar_t>() : nullptr;
    const scalar_t* mp = mc.data_ptr<scalar_t>();
    const scalar_t* rp = rc.data_ptr<scalar_t>();
    scalar_t* dp = dx.data_ptr<scalar_t>();
    // A broadcast scalar grad becomes one row of N equal values.
    std::vector<scalar_t> grow;
    if (gv.scalar) {
      grow.assign(size_t(N), gp[0]);
      gp = grow.data();
    }
    int64_t gstep = gv.row_step;
    parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)),
                 [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const scalar_t* xr = xp + r * N;
        const scalar_t* gr = gp + r * gstep;
        scalar_t* dr = dp + r * N;
        op_t m = op_t(mp[r]), rs = op_t(rp[r]);
        // dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)).
        op_t a = 0, bsum = 0;
        if (wp) {
          _Pragma("omp simd reduction(+ : a, bsum)")
          for (int64_t i = 0; i < N; ++i) {
            op_t gw = op_t(gr[i]) * op_t(wp[i]);
            a += gw;
            bsum += gw * op_t(xr[i]);
          }
        } else {
          _Pragma("omp simd reduction(+ : a, bsum)")
          for (int64_t i = 0; i < N; ++i) {
            op_t gw = op_t(gr[i]);
            a += gw;
            bsum += gw * op_t(xr[i]);
          }
        }
        bsum -= a * m;  // sum(gw * (x - m))
        op_t ca = a / op_t(N), cb = bsum * rs * rs / op_t(N);
        // dx = rs * gw - (rs * ca - m * rs * cb) - x * (rs * cb)
        op_t k0 = rs * ca - m * rs * cb, k1 = rs * cb;
        if (wp) {
          _Pragma("omp simd")
          for (int64_t i = 0; i < N; ++i)
            dr[i] = scalar_t(rs * op_t(gr[i]) * op_t(wp[i]) - k0 - op_t(xr[i]) * k1);
        } else {
          _Pragma("omp simd")
          for (int64_t i = 0; i < N; ++i)
            dr[i] = scalar_t(rs * op_t(gr[i]) - k0 - op_t(xr[i]) * k1);
        }
      }
    });
  });
  return dx;
}

Tensor layer_norm_backward_weight(const Tensor& grad_out, const Tensor& input,
                                  IntArrayRef normalized_shape, const Tensor& mean,
                                  const Tensor& rstd) {
  auto [M, N] = layer_norm_rows(input, normalized_shape);
  RT_CHECK(grad_out.sizes() == input.sizes(), "_layer_norm_backward_weight: grad_out of shape ",
           grad_out.sizes(), " does not match input of shape ", input.sizes());
  RT_CHECK(mean.numel() == M && rstd.numel() == M, "_layer_norm_backward_weight: expected mean "
           "and rstd with ", M, " elements, got shapes ", mean.sizes(), " and ", rstd.sizes());
  GradRows gv = grad_rows(grad_out, input, N);
  Tensor x = input.contiguous(), g = gv.t;
  Tensor mc = mean.to(input.dtype()).contiguous(), rc = rstd.to(input.dtype()).contiguous();
  Tensor dw = make_empty(normalized_shape, input.dtype(), input.device());
  if (dw.device().is_meta()) return dw;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(input.dtype(), "_layer_norm_backward_weight", [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* gp = static_cast<const scalar_t*>(g.data_ptr());
    const scalar_t* mp = mc.data_ptr<scalar_t>();
    const scalar_t* rp = rc.data_ptr<scalar_t>();
    scalar_t* wp = dw.data_ptr<scalar_t>();
    std::vector<scalar_t> grow;
    if (gv.scalar) {
      grow.assign(size_t(N), gp[0]);
      gp = grow.data();
    }
    int64_t gstep = gv.row_step;
    // Each chunk of rows sums into its own row of partials (streaming, vectorized), then the
    // partials are added: no races and no strided column walks.
    int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(get_num_threads() * 2, M));
    std::vector<op_t> part(size_t(chunks * N), op_t(0));
    parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t ch = cb; ch < ce; ++ch) {
        op_t* acc = part.data() + ch * N;
        for (int64_t r = ch * M / chunks; r < (ch + 1) * M / chunks; ++r) {
          const scalar_t* xr = xp + r * N;
          const scalar_t* gr = gp + r * gstep;
          op_t m = op_t(mp[r]), rs = op_t(rp[r]);
          _Pragma("omp simd")
          for (int64_t i = 0; i < N; ++i) acc[i] += op_t(gr[i]) * (op_t(xr[i]) - m) * rs;
        }
      }
    });
    for (int64_t i = 0; i < N; ++i) {
      op_t s = 0;
      for (int64_t ch = 0; ch < chunks; ++ch) s += part[size_t(ch * N + i)];
      wp[i] = scalar_t(s);
    }
  });
  return dw;
}

}  // namespace retorch::cpu
