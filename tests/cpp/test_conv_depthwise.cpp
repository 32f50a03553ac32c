// The direct depthwise convolution kernels (Note [Depthwise convolution]) against naive loops:
// forward, input gradient (the transposed depthwise convolution) and weight gradient.
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {

struct DwCase {
  int64_t N, C, m, H, W, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t oh() const { return (H + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (W + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
};

// Calls f(n, co, c, oy, ox, i, j, iy, ix) for every tap of every output that reads inside x.
template <typename F>
void for_each_tap(const DwCase& c, const F& f) {
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t co = 0; co < c.C * c.m; ++co)
      for (int64_t oy = 0; oy < c.oh(); ++oy)
        for (int64_t ox = 0; ox < c.ow(); ++ox)
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              const int64_t iy = oy * c.sh - c.ph + i * c.dh, ix = ox * c.sw - c.pw + j * c.dw;
              if (iy >= 0 && iy < c.H && ix >= 0 && ix < c.W)
                f(n, co, co / c.m, oy, ox, i, j, iy, ix);
            }
}

template <typename T>
void check_depthwise(const DwCase& c, ScalarType dtype, double tol) {
  manual_seed(3);
  TensorOptions o(dtype);
  const int64_t CM = c.C * c.m, oh = c.oh(), ow = c.ow();
  Tensor x = randn({c.N, c.C, c.H, c.W}, std::nullopt, o);
  Tensor w = randn({CM, 1, c.kh, c.kw}, std::nullopt, o);
  Tensor b = randn({CM}, std::nullopt, o);
  Tensor gy = randn({c.N, CM, oh, ow}, std::nullopt, o);
  const T *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>(), *bp = b.data_ptr<T>();
  const T* gp = gy.data_ptr<T>();
  std::vector<double> y(size_t(c.N * CM * oh * ow)), gx(size_t(x.numel())), gw(size_t(w.numel()));
  for (int64_t q = 0; q < int64_t(y.size()); ++q) y[size_t(q)] = double(bp[q / (oh * ow) % CM]);
  for_each_tap(c, [&](int64_t n, int64_t co, int64_t ci, int64_t oy, int64_t ox, int64_t i,
                      int64_t j, int64_t iy, int64_t ix) {
    const int64_t yi = ((n * CM + co) * oh + oy) * ow + ox;
    const int64_t xi = ((n * c.C + ci) * c.H + iy) * c.W + ix, wi = (co * c.kh + i) * c.kw + j;
    y[size_t(yi)] += double(wp[wi]) * double(xp[xi]);
    gx[size_t(xi)] += double(wp[wi]) * double(gp[yi]);
    gw[size_t(wi)] += double(gp[yi]) * double(xp[xi]);
  });
  auto matches = [&](const Tensor& got, const std::vector<double>& ref, const char* what) {
    ASSERT_EQ(got.numel(), int64_t(ref.size())) << what;
    Tensor g = got.contiguous();
    for (int64_t q = 0; q < g.numel(); ++q)
      ASSERT_NEAR(double(g.data_ptr<T>()[q]), ref[size_t(q)], tol * (1 + std::abs(ref[size_t(q)])))
          << what << " at " << q;
  };
  matches(conv2d(x, w, b, {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw}, c.C), y, "forward");
  // The input gradient as autograd runs it: the transposed convolution with the same weight.
  const int64_t op_h = c.H - ((oh - 1) * c.sh - 2 * c.ph + c.dh * (c.kh - 1) + 1);
  const int64_t op_w = c.W - ((ow - 1) * c.sw - 2 * c.pw + c.dw * (c.kw - 1) + 1);
  matches(conv_transpose2d(gy, w, std::nullopt, {c.sh, c.sw}, {c.ph, c.pw}, {op_h, op_w}, c.C,
                           {c.dh, c.dw}),
          gx, "input gradient");
  matches(_convolution_backward_weight(gy, x, w.sizes(), {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw},
                                       false, c.C),
          gw, "weight gradient");
}

const std::vector<DwCase> kCases = {
    {3, 4, 1, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1},    // 3x3, padding 1
    {2, 3, 2, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1},    // multiplier 2, stride 2
    {1, 2, 1, 11, 10, 5, 5, 1, 1, 2, 2, 2, 2},  // 5x5, dilation 2
    {2, 2, 2, 6, 7, 3, 1, 2, 1, 0, 1, 1, 1},    // 3x1
    {1, 3, 1, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1},    // 1x1
    {2, 2, 1, 4, 3, 3, 3, 1, 1, 2, 2, 1, 1},    // padding wider than the image
};

}  // namespace

TEST(ConvDepthwise, MatchesNaiveLoopsFloat64) {
  for (const DwCase& c : kCases) check_depthwise<double>(c, kDouble, 1e-10);
}

TEST(ConvDepthwise, MatchesNaiveLoopsFloat32) {
  for (const DwCase& c : kCases) check_depthwise<float>(c, kFloat, 1e-4);
}
