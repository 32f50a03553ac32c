// Upsampling on the CPU: nearest and bilinear 2-d resizing (F.interpolate) and their backwards,
// with PyTorch's source-index rules so results match it bit for bit in float.
#include <algorithm>
#include <cmath>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

struct Resize {
  int64_t planes, ih, iw, oh, ow;
  std::vector<int64_t> in_shape, out_shape;
};

Resize check_resize(IntArrayRef input_size, IntArrayRef output_size, const char* op) {
  RT_CHECK(output_size.size() == 2, op, ": it is expected output_size equals to 2, but got size ",
           output_size.size());
  RT_CHECK(input_size.size() == 4, op, ": it is expected input_size equals to 4, but got size ",
           input_size.size());
  int64_t ih = input_size[2], iw = input_size[3], oh = output_size[0], ow = output_size[1];
  RT_CHECK(ih > 0 && iw > 0 && oh > 0 && ow > 0, op, ": input and output sizes should be greater "
           "than 0, but got input (H: ", ih, ", W: ", iw, ") output (H: ", oh, ", W: ", ow, ")");
  return {input_size[0] * input_size[1], ih, iw, oh, ow, input_size.vec(),
          {input_size[0], input_size[1], oh, ow}};
}

Resize check_input(const Tensor& self, IntArrayRef output_size, const char* op) {
  bool ok = self.dim() == 4 && self.size(1) > 0 && self.size(2) > 0 && self.size(3) > 0;
  RT_CHECK(ok, op, ": non-empty 4D data tensor expected but got a tensor with sizes ",
           self.sizes());
  return check_resize(self.sizes(), output_size, op);
}

// PyTorch's compute_scales_value: 1 / scale when a positive scale is given, else in / out.
template <typename T>
T scale_of(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? T(1.0 / *scale) : T(in) / T(out);
}

// PyTorch's nearest_idx (computed in float).
int64_t nearest_index(int64_t o, int64_t in, int64_t out, std::optional<double> scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  float s = scale_of<float>(scale, in, out);
  return std::min(int64_t(std::floor(float(o) * s)), in - 1);
}

std::vector<int64_t> nearest_table(int64_t in, int64_t out, std::optional<double> scale) {
  std::vector<int64_t> t(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) t[size_t(o)] = nearest_index(o, in, out, scale);
  return t;
}

// Linear interpolation taps: source index i0, offset to the next tap, and the two weights.
template <typename T>
struct Taps {
  std::vector<int64_t> i0, step;
  std::vector<T> l0, l1;
};

template <typename T>
Taps<T> linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  T s = align_corners ? (out > 1 ? T(in - 1) / T(out - 1) : T(0)) : scale_of<T>(scale, in, out);
  Taps<T> t;
  for (int64_t o = 0; o < out; ++o) {
    T src = align_corners ? s * T(o) : std::max(s * (T(o) + T(0.5)) - T(0.5), T(0));
    int64_t i = std::min(int64_t(src), in - 1);
    T l1 = std::min(std::max(src - T(i), T(0)), T(1));
    t.i0.push_back(i);
    t.step.push_back(i < in - 1 ? 1 : 0);
    t.l0.push_back(T(1) - l1);
    t.l1.push_back(l1);
  }
  return t;
}

int64_t plane_grain(int64_t work) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(work, 1));
}

}  // namespace

Tensor upsample_nearest2d(const Tensor& self, IntArrayRef output_size,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  const char* op = "upsample_nearest2d";
  Resize r = check_input(self, output_size, op);
  RT_CHECK(is_floating_type(self.dtype()) || self.dtype() == kByte, "\"", op,
           "\" not implemented for '", dtype_name(self.dtype()), "'");
  Tensor x = self.contiguous();
  Tensor out = make_empty(r.out_shape, self.dtype(), self.device());
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  auto th = nearest_table(r.ih, r.oh, scales_h), tw = nearest_table(r.iw, r.ow, scales_w);
  RT_DISPATCH_ALL(self.dtype(), op, [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    parallel_for(0, r.planes, plane_grain(r.oh * r.ow), [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        const scalar_t* src = xp + pl * r.ih * r.iw;
        scalar_t* dst = y + pl * r.oh * r.ow;
        for (int64_t oy = 0; oy < r.oh; ++oy) {
          const scalar_t* row = src + th[size_t(oy)] * r.iw;
          for (int64_t ox = 0; ox < r.ow; ++ox) dst[oy * r.ow + ox] = row[tw[size_t(ox)]];
        }
      }
    });
  });
  return out;
}

Tensor upsample_nearest2d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                   IntArrayRef input_size, std::optional<double> scales_h,
                                   std::optional<double> scales_w) {
  const char* op = "upsample_nearest2d_backward";
  Resize r = check_resize(input_size, output_size, op);
  RT_CHECK(grad_output.sizes().equals(r.out_shape), op, ": expected grad_output of size ",
           IntArrayRef(r.out_shape), ", but got ", grad_output.sizes());
  Tensor go = grad_output.contiguous();
  Tensor gi = make_empty(r.in_shape, grad_output.dtype(), grad_output.device());
  if (gi.device().is_meta()) return gi;  // See Note [Meta through CPU kernels]
  auto th = nearest_table(r.ih, r.oh, scales_h), tw = nearest_table(r.iw, r.ow, scales_w);
  RT_DISPATCH_FLOATING(grad_output.dtype(), op, [&] {
    using acc_t = opmath_t<scalar_t>;
    const scalar_t* g = go.data_ptr<scalar_t>();
    scalar_t* out = gi.data_ptr<scalar_t>();
    parallel_for(0, r.planes, plane_grain(r.oh * r.ow), [&](int64_t b, int64_t e) {
      std::vector<acc_t> acc(size_t(r.ih * r.iw));
      for (int64_t pl = b; pl < e; ++pl) {
        std::fill(acc.begin(), acc.end(), acc_t(0));
        const scalar_t* gp = g + pl * r.oh * r.ow;
        for (int64_t oy = 0; oy < r.oh; ++oy)
          for (int64_t ox = 0; ox < r.ow; ++ox)
            acc[size_t(th[size_t(oy)] * r.iw + tw[size_t(ox)])] += acc_t(gp[oy * r.ow + ox]);
        for (int64_t j = 0; j < r.ih * r.iw; ++j)
          out[pl * r.ih * r.iw + j] = scalar_t(acc[size_t(j)]);
      }
    });
  });
  return gi;
}

Tensor upsample_bilinear2d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  const char* op = "upsample_bilinear2d";
  Resize r = check_input(self, output_size, op);
  RT_CHECK(is_floating_type(self.dtype()), "\"", op, "\" not implemented for '",
           dtype_name(self.dtype()), "'");
  Tensor x = self.contiguous();
  Tensor out = make_empty(r.out_shape, self.dtype(), self.device());
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(self.dtype(), op, [&] {
    using acc_t = opmath_t<scalar_t>;
    auto th = linear_taps<acc_t>(r.ih, r.oh, align_corners, scales_h);
    auto tw = linear_taps<acc_t>(r.iw, r.ow, align_corners, scales_w);
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    parallel_for(0, r.planes, plane_grain(r.oh * r.ow * 4), [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        const scalar_t* src = xp + pl * r.ih * r.iw;
        scalar_t* dst = y + pl * r.oh * r.ow;
        for (int64_t oy = 0; oy < r.oh; ++oy) {
          size_t a = size_t(oy);
          const scalar_t* r0 = src + th.i0[a] * r.iw;
          const scalar_t* r1 = r0 + th.step[a] * r.iw;
          for (int64_t ox = 0; ox < r.ow; ++ox) {
            size_t c = size_t(ox);
            int64_t w0 = tw.i0[c], w1 = w0 + tw.step[c];
            acc_t v = th.l0[a] * (tw.l0[c] * acc_t(r0[w0]) + tw.l1[c] * acc_t(r0[w1])) +
                      th.l1[a] * (tw.l0[c] * acc_t(r1[w0]) + tw.l1[c] * acc_t(r1[w1]));
            dst[oy * r.ow + ox] = scalar_t(v);
          }
        }
      }
    });
  });
  return out;
}

Tensor upsample_bilinear2d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                    IntArrayRef input_size, bool align_corners,
                                    std::optional<double> scales_h,
                                    std::optional<double> scales_w) {
  const char* op = "upsample_bilinear2d_backward";
  Resize r = check_resize(input_size, output_size, op);
  RT_CHECK(grad_output.sizes().equals(r.out_shape), op, ": expected grad_output of size ",
           IntArrayRef(r.out_shape), ", but got ", grad_output.sizes());
  Tensor go = grad_output.contiguous();
  Tensor gi = make_empty(r.in_shape, grad_output.dtype(), grad_output.device());
  if (gi.device().is_meta()) return gi;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(grad_output.dtype(), op, [&] {
    using acc_t = opmath_t<scalar_t>;
    auto th = linear_taps<acc_t>(r.ih, r.oh, align_corners, scales_h);
    auto tw = linear_taps<acc_t>(r.iw, r.ow, align_corners, scales_w);
    const scalar_t* g = go.data_ptr<scalar_t>();
    scalar_t* out = gi.data_ptr<scalar_t>();
    parallel_for(0, r.planes, plane_grain(r.oh * r.ow * 4), [&](int64_t b, int64_t e) {
      std::vector<acc_t> acc(size_t(r.ih * r.iw));
      for (int64_t pl = b; pl < e; ++pl) {
        std::fill(acc.begin(), acc.end(), acc_t(0));
        const scalar_t* gp = g + pl * r.oh * r.ow;
        for (int64_t oy = 0; oy < r.oh; ++oy) {
          size_t a = size_t(oy);
          int64_t h0 = th.i0[a] * r.iw, h1 = h0 + th.step[a] * r.iw;
          for (int64_t ox = 0; ox < r.ow; ++ox) {
            size_t c = size_t(ox);
            int64_t w0 = tw.i0[c], w1 = w0 + tw.step[c];
            acc_t v = acc_t(gp[oy * r.ow + ox]);
            acc[size_t(h0 + w0)] += th.l0[a] * tw.l0[c] * v;
            acc[size_t(h0 + w1)] += th.l0[a] * tw.l1[c] * v;
            acc[size_t(h1 + w0)] += th.l1[a] * tw.l0[c] * v;
            acc[size_t(h1 + w1)] += th.l1[a] * tw.l1[c] * v;
          }
        }
        for (int64_t j = 0; j < r.ih * r.iw; ++j)
          out[pl * r.ih * r.iw + j] = scalar_t(acc[size_t(j)]);
      }
    });
  });
  return gi;
}

}  // namespace retorch::cpu
