// Autograd of individual ops at edge points (ties, kinks, in-place) and grad-mode corner cases.
#include <gtest/gtest.h>

#include <cmath>

#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

TEST(AutogradOpsTest, KinksFollowPyTorchConventions) {
  Tensor x = tensor({-1.0, 0.0, 2.0}, rg());
  x.relu().sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 1}));  // relu'(0) = 0

  Tensor a = tensor({-2.0, 0.0, 3.0}, rg());
  a.abs().sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{-1, 0, 1}));  // abs'(0) = sign(0) = 0

  Tensor c = tensor({-1.0, 0.0, 0.5, 1.0, 2.0}, rg());
  c.clamp(0.0, 1.0).sum().backward();  // boundary points pass the gradient
  EXPECT_EQ(values(c.grad()), (std::vector<double>{0, 1, 1, 1, 0}));

  Tensor p = tensor({0.0, 3.0}, rg());
  p.pow(2).sum().backward();
  EXPECT_EQ(values(p.grad()), (std::vector<double>{0, 6}));  // no 0 * inf nan at 0
}

TEST(AutogradOpsTest, MaxTiesAndIndices) {
  Tensor x = tensor({1.0, 3.0, 3.0}, rg());
  x.max().backward();  // full reduction: ties share the gradient evenly
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0.5, 0.5}));

  Tensor y = tensor({1.0, 3.0, 3.0}, rg());
  y.amax({0}).backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{0, 0.5, 0.5}));

  Tensor z = tensor({{1.0, 7.0}, {9.0, 2.0}}, rg());
  auto [v, i] = max(z, 1);
  v.sum().backward();  // max.dim routes the gradient to the returned index
  EXPECT_EQ(values(z.grad()), (std::vector<double>{0, 1, 1, 0}));
  EXPECT_FALSE(i.requires_grad());

  Tensor m = tensor({2.0, 5.0}, rg()), n = tensor({4.0, 1.0}, rg());
  maximum(m, n).sum().backward();
  EXPECT_EQ(values(m.grad()), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(n.grad()), (std::vector<double>{1, 0}));
}

TEST(AutogradOpsTest, SoftmaxAndReductions) {
  manual_seed(4);
  Tensor x = randn({2, 5}, std::nullopt, kDouble).requires_grad_();
  x.softmax(1).sum().backward();  // rows of softmax sum to 1: gradient is 0
  EXPECT_TRUE(all_close(x.grad(), zeros({2, 5}, kDouble), 0, 1e-12));

  Tensor y = tensor({{1.0, 2.0}, {3.0, 4.0}}, rg());
  y.mean(std::vector<int64_t>{1}, true).sum().backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));

  Tensor w = tensor({1.0, 2.0, 3.0}, rg(kDouble));
  w.prod().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{6, 3, 2}));

  Tensor c = tensor({1.0, 2.0, 3.0}, rg());
  c.cumsum(0).sum().backward();
  EXPECT_EQ(values(c.grad()), (std::vector<double>{3, 2, 1}));

  Tensor cond = tensor({true, false});
  Tensor a = ones({2}, rg()), b = ones({2}, rg());
  where(cond, a * 2, b * 3).sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{2, 0}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{0, 3}));
}

TEST(AutogradOpsTest, InPlaceOnNonLeafIsDifferentiable) {
  Tensor x = tensor({1.0, 2.0}, rg(kDouble));
  Tensor y = x * 2;
  y.mul_(3);
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6, 6}));

  Tensor u = tensor({0.5, 1.0}, rg(kDouble));
  Tensor v = u * 1;
  v.exp_();
  v.sum().backward();
  EXPECT_TRUE(all_close(u.grad(), u.detach().exp(), 1e-12));
}

TEST(AutogradOpsTest, InPlaceOnViewOfNonLeaf) {
  // PyTorch rebases the base's history (CopySlices): y = x * 1; y[0] *= 2 -> dx = [2, 1].
  Tensor x = tensor({1.0, 1.0}, rg());
  Tensor y = x * 1;
  y.select(0, 0).mul_(2);
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 1}));
}

TEST(AutogradOpsTest, WritesIntoViewsOfPlainTensorsAreDifferentiable) {
  // z = zeros(2, 3); z[1].copy_(x * 3); z[0].narrow(0, 1, 2).mul_(x[:2]) (a write into a view
  // taken without autograd gives the base the written values' history, as in PyTorch; the
  // mul_ of zeros leaves x's gradient there at 0) -> d sum(z * [1..6]) / dx = 3 * [4, 5, 6].
  Tensor x = tensor({1.0, 2.0, 3.0}, rg());
  Tensor z = zeros({2, 3}, TensorOptions(kDouble));
  z.select(0, 1).copy_(x * 3);
  z.select(0, 0).narrow(0, 1, 2).mul_(x.narrow(0, 0, 2));
  ASSERT_TRUE(z.requires_grad());
  (z * arange(1.0, 7.0, 1, TensorOptions(kDouble)).view({2, 3})).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{12, 15, 18}));
  // copy_ into a view of a tensor with history replaces its part of the gradient
  Tensor a = tensor({1.0, 1.0, 1.0}, rg());
  Tensor b = a * 2;
  b.narrow(0, 1, 1).copy_(x.narrow(0, 0, 1));
  b.sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{2, 0, 2}));
}

TEST(AutogradOpsTest, InPlaceOnStridedViewUsesOldValues) {
  // y = x * x; y[:, 1] *= y[:, 0]  ->  d/dx of sum(y) with y[:,1] = x1^2 * x0^2.
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}, rg());
  Tensor y = x * x;
  Tensor c0 = y.select(1, 0).clone();
  y.select(1, 1).mul_(c0);
  y.sum().backward();
  // rows: x0 gets 2*x0 + 2*x0*x1^2, x1 gets 2*x1*x0^2
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2 + 2 * 1 * 4, 2 * 2 * 1, 6 + 2 * 3 * 16, 2 * 4 * 9}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 4, 9, 144}));
}

TEST(AutogradOpsTest, DetachedViewModificationIsDetected) {
  Tensor x = tensor({1.0, 2.0}, rg());
  Tensor y = x.exp();
  y.detach().add_(1);  // shares the version counter with y
  Error e = catch_error([&] { y.sum().backward(); });
  EXPECT_TRUE(contains(e.message(), {"modified by an inplace operation"}));
}

TEST(AutogradOpsTest, GradDtypeFollowsLeaf) {
  Tensor x = tensor({1.0, 2.0}, rg(kFloat));
  (x.to(kDouble) * 2).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 2}));
  Tensor h = tensor({1.0, 2.0}, rg(kHalf));
  (h * h).sum().backward();
  EXPECT_EQ(h.grad().dtype(), kHalf);
  EXPECT_EQ(values(h.grad()), (std::vector<double>{2, 4}));
}

TEST(AutogradOpsTest, NonScalarGradOutputs) {
  Tensor x = tensor({1.0, 2.0, 3.0}, rg());
  Tensor y = x * x;
  auto g = autograd::grad({y}, {x}, {tensor({1.0, 0.0, 2.0})});
  EXPECT_EQ(values(g[0]), (std::vector<double>{2, 0, 12}));
  // A non-contiguous grad_output is fine too.
  Tensor m = zeros({2, 3}, rg());
  Tensor go = arange(6, kFloat).view({3, 2}).t();
  (m * 1).backward(go);
  EXPECT_EQ(values(m.grad()), (std::vector<double>{0, 2, 4, 1, 3, 5}));
}

TEST(AutogradOpsTest, CreateGraphBackwardMakesDifferentiableGrad) {
  Tensor x = tensor({2.0}, rg(kDouble));
  (x * x * x).sum().backward(Tensor(), std::nullopt, /*create_graph=*/true);
  Tensor g = x.grad();
  EXPECT_EQ(g.item<double>(), 12.0);
  EXPECT_TRUE(g.requires_grad());
  auto g2 = autograd::grad({g.sum()}, {x});
  EXPECT_EQ(g2[0].item<double>(), 12.0);  // d/dx 3x^2 = 6x
  // As in PyTorch, backward(create_graph=True) makes a reference cycle x -> x.grad ->
  // grad_fn -> x's AccumulateGrad -> x; resetting .grad breaks it (PyTorch's advice too).
  x.mutable_grad() = Tensor();
}

TEST(AutogradOpsTest, HooksRunInRegistrationOrder) {
  Tensor x = tensor({1.0}, rg());
  std::vector<int> order;
  x.register_hook([&order](const Tensor& g) {
    order.push_back(1);
    return g + 1;
  });
  x.register_hook([&order](const Tensor& g) {
    order.push_back(2);
    return g * 10;
  });
  (x * 1).sum().backward();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(x.grad().item<double>(), 20.0);  // (1 + 1) * 10
}

TEST(AutogradOpsTest, GradModeCornerCases) {
  {
    NoGradGuard ng;
    InferenceMode im(false);  // disabling inference mode enables grad, like PyTorch
    EXPECT_TRUE(GradMode::is_enabled());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  {
    InferenceMode outer;
    {
      InferenceMode inner(false);
      EXPECT_FALSE(InferenceMode::is_enabled());
    }
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(GradMode::is_enabled());
  }
  Tensor x = tensor({1.0}, rg());
  Tensor y = x * 2;
  Error e = catch_error([&] { y.requires_grad_(false); });
  EXPECT_TRUE(contains(e.message(), {"only change requires_grad flags of leaf variables"}));
  Tensor leaf = tensor({1.0}, rg());
  leaf.requires_grad_(false);
  EXPECT_FALSE(leaf.requires_grad());
  EXPECT_FALSE((leaf * 2).requires_grad());
}

TEST(AutogradOpsTest, AnomalyModeAllowsFiniteBackward) {
  DetectAnomalyGuard guard;
  Tensor x = tensor({4.0}, rg());
  x.sqrt().sum().backward();
  EXPECT_EQ(x.grad().item<double>(), 0.25);
}
