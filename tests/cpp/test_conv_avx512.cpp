// The AVX-512 stride-1 convolution kernels (Note [Row convolution], Note [Sliding taps]) against
// naive loops: forward, the transposed convolution that runs as one, and the weight gradient,
// here and under ASan.
#include "retorch/backend/cpu/ConvRows.h"
#include "retorch/backend/cpu/CpuIsa.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {

struct RowCase {
  int64_t N, C, O, H, W, kh, kw, ph, pw, dh, dw;
  bool rows;  // runs the row kernels on AVX-512 (else the direct ones, sliding taps included)
  int64_t oh() const { return H + 2 * ph - dh * (kh - 1); }
  int64_t ow() const { return W + 2 * pw - dw * (kw - 1); }
  cpu::DirectConvShape shape() const { return {C, H, W, O, kh, kw, dh, dw, ph, pw, oh(), ow()}; }
};

void check_rows(const RowCase& c) {
  manual_seed(5);
  const int64_t oh = c.oh(), ow = c.ow();
  Tensor x = randn({c.N, c.C, c.H, c.W}), w = randn({c.O, c.C, c.kh, c.kw}), b = randn({c.O});
  Tensor gy = randn({c.N, c.O, oh, ow});
  const float *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>(), *gp = gy.data_ptr<float>();
  std::vector<double> y(size_t(gy.numel())), gx(size_t(x.numel())), gw(size_t(w.numel()));
  for (int64_t q = 0; q < gy.numel(); ++q) y[size_t(q)] = b.data_ptr<float>()[q / (oh * ow) % c.O];
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t ci = 0; ci < c.C; ++ci)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                const int64_t iy = oy - c.ph + i * c.dh, ix = ox - c.pw + j * c.dw;
                if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
                const int64_t yi = ((n * c.O + o) * oh + oy) * ow + ox;
                const int64_t xi = ((n * c.C + ci) * c.H + iy) * c.W + ix;
                const int64_t wi = ((o * c.C + ci) * c.kh + i) * c.kw + j;
                y[size_t(yi)] += double(wp[wi]) * xp[xi];
                gx[size_t(xi)] += double(wp[wi]) * gp[yi];
                gw[size_t(wi)] += double(gp[yi]) * xp[xi];
              }
  auto matches = [](const Tensor& got, const std::vector<double>& ref, const char* what) {
    ASSERT_EQ(got.numel(), int64_t(ref.size())) << what;
    Tensor g = got.contiguous();
    for (int64_t q = 0; q < g.numel(); ++q)
      ASSERT_NEAR(g.data_ptr<float>()[q], ref[size_t(q)], 1e-4 * (1 + std::abs(ref[size_t(q)])))
          << what << " at " << q;
  };
  matches(conv2d(x, w, b, {1, 1}, {c.ph, c.pw}, {c.dh, c.dw}), y, "forward");
  matches(conv_transpose2d(gy, w, std::nullopt, {1, 1}, {c.ph, c.pw}, {0, 0}, 1, {c.dh, c.dw}),
          gx, "input gradient");
  matches(_convolution_backward_weight(gy, x, w.sizes(), {1, 1}, {c.ph, c.pw}, {c.dh, c.dw},
                                       false, 1),
          gw, "weight gradient");
}

const std::vector<RowCase> kCases = {
    {3, 1, 16, 28, 28, 5, 5, 2, 2, 1, 1, true},   // the seed ConvNet's first layer: two vectors a row
    {2, 2, 7, 13, 14, 3, 3, 1, 1, 1, 1, true},    // one masked vector a row, a channel block cut short
    {1, 3, 18, 12, 30, 3, 3, 1, 1, 1, 1, true},   // one image (the shared-buffer path), 18 channels
    {2, 1, 6, 16, 16, 3, 3, 2, 2, 2, 2, true},    // dilation 2
    {2, 16, 32, 14, 14, 5, 5, 2, 2, 1, 1, false}, // the second layer: sliding taps (and its input
                                                  // gradient, 32 -> 16)
    {1, 8, 16, 9, 11, 3, 3, 1, 1, 2, 1, false},   // a row's last tile moved back, row dilation 2
};

}  // namespace

TEST(ConvAvx512, MatchesNaiveLoops) {
  for (const RowCase& c : kCases) {
    check_rows(c);
    const bool rows =
        cpu::row_conv_applies(c.shape()) && cpu::row_weight_grad_applies(c.shape());
    // On an AVX-512 CPU the cases marked rows run the row kernels (else the other paths).
    if (cpu::cpu_isa() >= cpu::CpuIsa::kAvx512) EXPECT_EQ(rows, c.rows) << c.C << "->" << c.O;
  }
}
