// Autocast in C++ (retorch::autocast::AutocastGuard): policies, nesting, eligibility, the cast
// cache and gradients through the casts; values against PyTorch are in test_autocast.py.
#include <gtest/gtest.h>

#include "retorch/retorch.h"
#include "test_helpers.h"

using namespace retorch;

TEST(Autocast, GuardRunsListedOpsInItsDtypeAndRestores) {
  Tensor a = randn({3, 4}), b = randn({4, 5});
  EXPECT_FALSE(autocast::is_enabled(kCPU));
  {
    autocast::AutocastGuard on(kCPU, kBFloat16);
    EXPECT_TRUE(autocast::is_enabled(kCPU));
    EXPECT_FALSE(autocast::is_enabled(kCUDA));
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);                  // lower_precision_fp
    EXPECT_EQ(matmul(a, b).dtype(), kBFloat16);
    EXPECT_EQ(mse_loss(a.to(kBFloat16), a.to(kBFloat16)).dtype(), kFloat);  // fp32
    EXPECT_EQ(cat({a.to(kBFloat16), a}).dtype(), kFloat);   // promote
    EXPECT_EQ(exp(a).dtype(), kFloat);                       // not listed on the cpu
    EXPECT_EQ(mm(a.to(kDouble), b.to(kDouble)).dtype(), kDouble);  // float64 is never cast
    {
      autocast::AutocastGuard off(kCPU, kBFloat16, /*enabled=*/false);
      EXPECT_EQ(mm(a, b).dtype(), kFloat);
      autocast::AutocastGuard half(kCPU, kHalf);
      EXPECT_EQ(mm(a, b).dtype(), kHalf);
    }
    EXPECT_EQ(autocast::get_dtype(kCPU), kBFloat16);
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    // An op listed only for cuda (einsum) still lets its cpu parts be cast, like an unlisted one.
    EXPECT_EQ(einsum("ij,jk->ik", {a, b}).dtype(), kBFloat16);
  }
  EXPECT_FALSE(autocast::is_enabled(kCPU));
  EXPECT_EQ(autocast::state_key(), 0u);
  EXPECT_EQ(mm(a, b).dtype(), kFloat);
}

TEST(Autocast, GradientsFlowThroughTheCastsToFloat32Leaves) {
  Tensor x = randn({3, 4}).set_requires_grad(true);
  Tensor w = randn({5, 4}).set_requires_grad(true);
  Tensor y;
  {
    autocast::AutocastGuard on(kCPU, kBFloat16);
    y = linear(x, w);
  }
  ASSERT_EQ(y.dtype(), kBFloat16);
  y.to(kFloat).sum().backward();
  ASSERT_EQ(x.grad().dtype(), kFloat);
  ASSERT_EQ(w.grad().dtype(), kFloat);
  // d(sum(x w^T))/dx = column sums of w, rounded through bfloat16 as torch's are.
  Tensor expect = w.detach().to(kBFloat16).to(kFloat).sum(std::vector<int64_t>{0}, true)
                      .expand({3, 4});
  EXPECT_TRUE(allclose(x.grad(), expect, 1e-2, 1e-2));
}

TEST(Autocast, BannedAndUnsupportedInputsRaiseClearly) {
  EXPECT_THROW(autocast::set_enabled(kMPS, true), Error);
  EXPECT_THROW(autocast::set_dtype(kCPU, kFloat), Error);
  EXPECT_FALSE(autocast::is_enabled(kMPS));
}
