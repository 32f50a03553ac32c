// The oneDNN bfloat16 GEMM (Note [bfloat16 GEMM]) against float32 products of the same values;
// skipped on CPUs without AVX-512 BF16, where bfloat16 products always widen to SGEMM.
#include "retorch/backend/cpu/GemmOneDnn.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {

// |got - want| within a bfloat16 rounding of want plus float32 accumulation-order slack.
void expect_bf16_close(const Tensor& got, const Tensor& want, int64_t K) {
  std::vector<double> g = values(got), w = values(want);
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], std::abs(w[i]) * (1.0 / 128) + 1e-5 * double(K)) << "at " << i;
}

}  // namespace

TEST(Bf16Gemm, OneDnnMatchesFloat32Products) {
  if (!cpu::onednn_bf16_available()) GTEST_SKIP() << "no native bfloat16 GEMM on this CPU";
  manual_seed(0);
  // Row-major, transposed and batched operands, a size-1 batch, an odd K.
  for (auto [B, M, K, N] : {std::tuple{1, 64, 96, 48}, std::tuple{3, 17, 33, 5},
                            std::tuple{2, 128, 256, 64}}) {
    Tensor a = randn({B, M, K}).to(kBFloat16), b = randn({B, N, K}).to(kBFloat16).transpose(1, 2);
    Tensor out = empty({B, M, N}, kBFloat16);
    ASSERT_TRUE(cpu::onednn_bf16_gemm(a, b, out));
    expect_bf16_close(out, bmm(a.to(kFloat), b.to(kFloat)), K);
    // The public ops take the same path.
    expect_bf16_close(bmm(a, b), bmm(a.to(kFloat), b.to(kFloat)), K);
    expect_bf16_close(mm(a[0], b[0]), mm(a[0].to(kFloat), b[0].to(kFloat)), K);
  }
}

TEST(Bf16Gemm, WideningPathWhenUnavailable) {
  // Whatever the CPU, bfloat16 mm agrees with the float32 product of the same values.
  manual_seed(1);
  Tensor a = randn({31, 40}).to(kBFloat16), b = randn({40, 23}).to(kBFloat16);
  Tensor got = mm(a, b.t().contiguous().t());
  EXPECT_EQ(got.dtype(), kBFloat16);
  expect_bf16_close(got, mm(a.to(kFloat), b.to(kFloat)), 40);
}
