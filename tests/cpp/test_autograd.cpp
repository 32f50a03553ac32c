// Autograd tests: gradients vs hand-derived math, graph retention, higher order, hooks
// (saved-tensor hooks too), modes.
#include <gtest/gtest.h>

#include <cmath>

#include "retorch/autograd/GradMode.h"
#include "retorch/autograd/SavedVariable.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

namespace {
Tensor randn_d(IntArrayRef size) {
  return randn(size, std::nullopt, kDouble);
}
}  // namespace

// ---------------------------------------------------------------- gradients of expressions

TEST(AutogradTest, SumOfSquares) {
  Tensor x = tensor({1.0, -2.0, 3.0}, rg());
  Tensor sq = x * x;
  Tensor y = sq.sum();
  EXPECT_EQ(sq.grad_fn()->name(), "MulBackward0");
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward0");
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, -4, 6}));
}

TEST(AutogradTest, SinGradIsCos) {
  manual_seed(1);
  Tensor x = randn_d({5}).requires_grad_();
  x.sin().sum().backward();
  EXPECT_TRUE(all_close(x.grad(), x.detach().cos(), 1e-12, 1e-12));
  EXPECT_EQ(x.grad().dtype(), kDouble);
}

TEST(AutogradTest, ChainAndProductRules) {
  Tensor x = tensor({0.5, 1.0, 2.0}, rg(kDouble));
  (x.exp() * x).sum().backward();  // d/dx x e^x = e^x (1 + x)
  Tensor xd = x.detach();
  EXPECT_TRUE(all_close(x.grad(), xd.exp() * (xd + 1), 1e-12));

  Tensor a = tensor({1.0, 2.0}, rg(kDouble));
  Tensor b = tensor({4.0, -5.0}, rg(kDouble));
  (a / b).sum().backward();
  EXPECT_TRUE(all_close(a.grad(), tensor({0.25, -0.2}, kDouble), 1e-12));
  EXPECT_TRUE(all_close(b.grad(), tensor({-1.0 / 16, -2.0 / 25}, kDouble), 1e-12));

  Tensor p = tensor({1.0, 2.0, 3.0}, rg(kDouble));
  p.pow(3).sum().backward();
  EXPECT_EQ(values(p.grad()), (std::vector<double>{3, 12, 27}));

  Tensor m = tensor({1.0, 2.0, 3.0, 4.0}, rg());
  m.mean().backward();
  EXPECT_EQ(values(m.grad()), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
}

TEST(AutogradTest, DiamondGraphAccumulates) {
  Tensor x = tensor({1.0, 2.0}, rg(kDouble));
  Tensor y = x * 2;
  Tensor z = (y * y + y).sum();  // dz/dx = (2y + 1) * 2
  z.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{10, 18}));
}

TEST(AutogradTest, GradAccumulatesAcrossBackwardCalls) {
  Tensor x = tensor({1.0, 2.0}, rg());
  (x * 3).sum().backward();
  (x * 3).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6, 6}));
  x.mutable_grad().zero_();
  (x * 3).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 3}));
}

TEST(AutogradTest, BroadcastingReducesGradToInputShape) {
  Tensor a = zeros({2, 3}, rg());
  Tensor b = zeros({3}, rg());
  Tensor c = zeros({2, 1}, rg());
  Tensor s = zeros({}, rg());
  (a + b + c + s).sum().backward();
  EXPECT_EQ(shape(a.grad()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(shape(b.grad()), (std::vector<int64_t>{3}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(shape(c.grad()), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(c.grad()), (std::vector<double>{3, 3}));
  EXPECT_EQ(s.grad().dim(), 0);
  EXPECT_EQ(s.grad().item<double>(), 6.0);

  Tensor e = tensor({1.0, 2.0, 3.0}, rg());
  (e.expand({4, 3}) * 2).sum().backward();
  EXPECT_EQ(values(e.grad()), (std::vector<double>{8, 8, 8}));
}

TEST(AutogradTest, MatmulGrads) {
  manual_seed(2);
  Tensor x = randn_d({2, 3}).requires_grad_();
  Tensor w = randn_d({3, 4}).requires_grad_();
  Tensor g = randn_d({2, 4});
  Tensor out = x.matmul(w);
  out.backward(g);
  EXPECT_TRUE(all_close(x.grad(), g.mm(w.detach().t()), 1e-10, 1e-12));  // dX = G W^T
  EXPECT_TRUE(all_close(w.grad(), x.detach().t().mm(g), 1e-10, 1e-12));  // dW = X^T G

  Tensor v = randn_d({3}).requires_grad_();
  Tensor m = randn_d({2, 3}).requires_grad_();
  m.matmul(v).sum().backward();  // matrix @ vector
  EXPECT_TRUE(all_close(v.grad(), m.detach().sum(std::vector<int64_t>{0}), 1e-10, 1e-12));
  EXPECT_TRUE(all_close(m.grad(), v.detach().expand({2, 3}), 1e-12));
}

TEST(AutogradTest, ViewAndIndexGrads) {
  Tensor x = arange(6, kFloat).requires_grad_();
  Tensor y = x.view({2, 3}).t();
  (y * tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}})).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 3, 5, 2, 4, 6}));

  Tensor z = zeros({4}, rg());
  (z.slice(0, 1, 4, 2) * 5).sum().backward();
  EXPECT_EQ(values(z.grad()), (std::vector<double>{0, 5, 0, 5}));

  Tensor s = zeros({2, 2}, rg());
  s.select(1, 0).sum().backward();
  EXPECT_EQ(values(s.grad()), (std::vector<double>{1, 0, 1, 0}));

  Tensor q = zeros({3}, rg());
  index_select(q, 0, tensor({0, 0, 2})).sum().backward();  // repeated index: grads add up
  EXPECT_EQ(values(q.grad()), (std::vector<double>{2, 0, 1}));

  Tensor a = ones({2}, rg()), b = ones({3}, rg());
  (cat({a, b}) * arange(5, kFloat)).sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{2, 3, 4}));
}

TEST(AutogradTest, DetachStopsGradient) {
  Tensor x = tensor({2.0, 3.0}, rg());
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr(), x.data_ptr());
  (d * x).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 3}));
}

// ---------------------------------------------------------------- graph retention, higher order

TEST(AutogradTest, SecondBackwardNeedsRetainGraph) {
  Tensor x = tensor({1.0, 2.0}, rg());
  Tensor y = (x * x).sum();
  y.backward();
  Error e = catch_error([&] { y.backward(); });
  EXPECT_TRUE(contains(e.message(), {"second time", "retain_graph"}));

  Tensor x2 = tensor({1.0, 2.0}, rg());
  Tensor y2 = (x2 * x2).sum();
  y2.backward(Tensor(), true);
  y2.backward();
  EXPECT_EQ(values(x2.grad()), (std::vector<double>{4, 8}));
}

TEST(AutogradTest, CreateGraphSecondDerivative) {
  Tensor x = tensor({1.0, 2.0, -3.0}, rg(kDouble));
  Tensor y = x.pow(3).sum();
  auto g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(values(g[0]), (std::vector<double>{3, 12, 27}));  // 3x^2
  EXPECT_TRUE(g[0].requires_grad());
  auto g2 = autograd::grad({g[0].sum()}, {x});
  EXPECT_EQ(values(g2[0]), (std::vector<double>{6, 12, -18}));  // 6x
  EXPECT_FALSE(x.grad().defined());  // autograd::grad does not touch .grad

  // Through a product: d2/dx2 sin(x) * x = 2 cos x - x sin x.
  Tensor z = tensor({0.3, 1.1}, rg(kDouble));
  auto dz = autograd::grad({(z.sin() * z).sum()}, {z}, {}, std::nullopt, true);
  auto d2z = autograd::grad({dz[0].sum()}, {z});
  Tensor zd = z.detach();
  EXPECT_TRUE(all_close(d2z[0], zd.cos() * 2 - zd * zd.sin(), 1e-12));
}

TEST(AutogradTest, GradAllowUnused) {
  Tensor x = tensor({1.0, 2.0}, rg());
  Tensor unused = tensor({5.0}, rg());
  Tensor y = (x * 2).sum();
  auto g = autograd::grad({y}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(values(g[0]), (std::vector<double>{2, 2}));
  EXPECT_FALSE(g[1].defined());
  Error e = catch_error([&] { autograd::grad({y}, {x, unused}); });
  EXPECT_TRUE(contains(e.message(), {"allow_unused"}));
}

TEST(AutogradTest, BackwardWithInputsOnlyAccumulatesThere) {
  Tensor a = tensor({1.0}, rg()), b = tensor({2.0}, rg());
  Tensor y = (a * b).sum();
  autograd::backward({y}, {}, std::nullopt, false, {a});
  EXPECT_EQ(values(a.grad()), (std::vector<double>{2}));
  EXPECT_FALSE(b.grad().defined());
}

// ---------------------------------------------------------------- hooks

TEST(AutogradTest, HooksModifyGradient) {
  Tensor x = tensor({1.0, 2.0}, rg());
  unsigned h = x.register_hook([](const Tensor& g) { return g * 2; });
  (x * 3).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6, 6}));
  x.remove_hook(h);
  x.mutable_grad().zero_();
  (x * 3).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 3}));

  // A hook on a non-leaf changes what flows further back.
  Tensor a = tensor({1.0, 2.0}, rg());
  Tensor b = a * 2;
  Tensor seen;
  b.register_hook([&seen](const Tensor& g) {
    seen = g.clone();
    return g * 10;
  });
  (b * b).sum().backward();
  EXPECT_EQ(values(seen), (std::vector<double>{4, 8}));         // 2b
  EXPECT_EQ(values(a.grad()), (std::vector<double>{80, 160}));  // 10 * 2b * 2

  // A hook returning an undefined tensor leaves the gradient as is.
  Tensor c = tensor({1.0}, rg());
  int calls = 0;
  c.register_hook([&calls](const Tensor&) {
    ++calls;
    return Tensor();
  });
  (c * 4).sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(values(c.grad()), (std::vector<double>{4}));

  Tensor no = tensor({1.0});
  EXPECT_THROW(no.register_hook([](const Tensor& g) { return g; }), Error);
}

TEST(AutogradTest, RetainGradOnNonLeaf) {
  Tensor x = tensor({1.0, 2.0}, rg());
  Tensor y = x * 3;
  Tensor w = x * 4;
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  EXPECT_FALSE(w.retains_grad());
  (y * y + w).sum().backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{6, 12}));  // 2y
  EXPECT_FALSE(w.grad().defined());  // non-leaf grads are not kept by default
  EXPECT_EQ(values(x.grad()), (std::vector<double>{22, 40}));  // 2y*3 + 4
}

// ---------------------------------------------------------------- grad modes

TEST(AutogradTest, NoGradGuard) {
  Tensor x = tensor({1.0}, rg());
  EXPECT_TRUE(GradMode::is_enabled());
  {
    NoGradGuard guard;
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = x * 2;
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_FALSE(y.requires_grad());
    x.add_(1);  // in-place on a leaf is fine without grad recording
    {
      AutoGradMode enable(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_EQ(x.item<double>(), 2.0);
  EXPECT_TRUE((x * 2).requires_grad());
}

TEST(AutogradTest, InferenceMode) {
  Tensor x = tensor({1.0}, rg());
  EXPECT_FALSE(InferenceMode::is_enabled());
  {
    InferenceMode guard;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = x * 2;
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.item<double>(), 2.0);
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(GradMode::is_enabled());
}

TEST(AutogradTest, AnomalyModeNamesNodeProducingNan) {
  {
    // sqrt'(0) = inf, times an incoming 0 gives nan inside SqrtBackward0.
    DetectAnomalyGuard guard;
    EXPECT_TRUE(AnomalyMode::is_enabled());
    Tensor x = zeros({2}, rg());
    Tensor y = (x.sqrt() * 0).sum();
    Error e = catch_error([&] { y.backward(); });
    EXPECT_TRUE(contains(e.message(), {"SqrtBackward0", "nan"}));
  }
  EXPECT_FALSE(AnomalyMode::is_enabled());
  // Without anomaly mode the nan silently reaches .grad, like PyTorch.
  Tensor x = zeros({2}, rg());
  (x.sqrt() * 0).sum().backward();
  EXPECT_TRUE(std::isnan(values(x.grad())[0]));
}

// ---------------------------------------------------------------- errors

TEST(AutogradTest, InPlaceModificationOfSavedTensorIsDetected) {
  Tensor x = tensor({1.0, 2.0, 3.0}, rg());
  Tensor y = x.exp();  // ExpBackward0 saves its result
  y.add_(1);
  Error e = catch_error([&] { y.sum().backward(); });
  EXPECT_TRUE(contains(e.message(), {"modified by an inplace operation", "ExpBackward0",
                                     "is at version 1; expected version 0"}));
  // Modifying a tensor that backward does not need is fine.
  Tensor a = tensor({1.0, 2.0}, rg());
  Tensor b = a * 2;  // MulBackward0 with a scalar saves nothing of b
  b.add_(1);
  b.sum().backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{2, 2}));
}

TEST(AutogradTest, InPlaceOnLeafRequiringGradErrors) {
  Tensor x = tensor({1.0}, rg());
  Error e = catch_error([&] { x.add_(1); });
  EXPECT_TRUE(contains(e.message(), {"leaf Variable", "in-place"}));
  Error e2 = catch_error([&] { x.select(0, 0).mul_(2); });
  EXPECT_TRUE(contains(e2.message(), {"leaf Variable"}));
}

TEST(AutogradTest, NonScalarBackwardNeedsGradient) {
  Tensor x = tensor({1.0, 2.0}, rg());
  Tensor y = x * 2;
  Error e = catch_error([&] { y.backward(); });
  EXPECT_TRUE(contains(e.message(), {"implicitly created only for scalar"}));
  y.backward(tensor({1.0, 10.0}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 20}));
  Tensor z = x * 2;
  EXPECT_THROW(z.backward(ones({3})), Error);  // wrong gradient shape
}

TEST(AutogradTest, RequiresGradRules) {
  Error e = catch_error([&] { zeros({2}, kLong).requires_grad_(); });
  EXPECT_TRUE(contains(e.message(), {"floating point"}));
  Tensor x = tensor({1.0}, rg());
  Tensor y = x * 2;
  EXPECT_THROW(y.requires_grad_(false), Error);  // only leaves can drop requires_grad
  Tensor c = tensor({1.0});
  EXPECT_THROW((c * 2).sum().backward(), Error);  // nothing requires grad
}

// ---------------------------------------------------------------- gradcheck

TEST(GradcheckTest, PassesForCommonOps) {
  manual_seed(3);
  using VL = autograd::variable_list;
  Tensor a = randn_d({3, 4}).requires_grad_();
  Tensor b = randn_d({3, 4}).requires_grad_();
  Tensor pos = (rand({3, 4}, std::nullopt, kDouble) + 0.5).requires_grad_();
  Tensor m = randn_d({4, 2}).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0] * v[1]}; }, {a, b}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0] / v[1]}; }, {a, pos}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].exp()}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].tanh()}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].matmul(v[1])}; }, {a, m}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].softmax(1)}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].log_softmax(0)}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].logsumexp({1})}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck(
      [](const VL& v) { return VL{v[0].sum(std::vector<int64_t>{0}, true)}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck(
      [](const VL& v) { return VL{v[0].var(std::vector<int64_t>{1}, true, false)}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].sigmoid() * v[0]}; }, {a}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].log()}; }, {pos}));
  EXPECT_TRUE(autograd::gradcheck([](const VL& v) { return VL{v[0].sqrt()}; }, {pos}));
}

TEST(GradcheckTest, NeedsAnInputRequiringGrad) {
  using VL = autograd::variable_list;
  EXPECT_THROW(autograd::gradcheck([](const VL& v) { return VL{v[0] * 2}; }, {randn_d({2})}),
               Error);
}

// ---------------------------------------------------------------- saved-tensor hooks

namespace {
// Hooks that count their calls and keep a clone of each saved tensor.
struct CloningHooks : autograd::SavedVariableHooks {
  int* packs;
  int* unpacks;
  Tensor kept;
  CloningHooks(int* p, int* u) : packs(p), unpacks(u) {}
  void call_pack_hook(const Tensor& t) override {
    ++*packs;
    EXPECT_FALSE(GradMode::is_enabled());  // pack hooks record no graph
    kept = t.clone();
  }
  Tensor call_unpack_hook() override {
    ++*unpacks;
    return kept;
  }
};
struct CloningFactory : autograd::SavedVariableHooksFactory {
  int packs = 0, unpacks = 0;
  std::unique_ptr<autograd::SavedVariableHooks> make() override {
    return std::make_unique<CloningHooks>(&packs, &unpacks);
  }
};
}  // namespace

TEST(AutogradTest, SavedTensorHooksPackAtSaveAndUnpackInBackward) {
  Tensor x = tensor({1.0, 2.0}, rg()), w = tensor({3.0, 4.0});
  auto hooks = std::make_shared<CloningFactory>();
  autograd::push_saved_tensor_hooks(hooks);
  Tensor y = (x * w).sum();  // mul saves w (for x's grad)
  autograd::pop_saved_tensor_hooks();
  Tensor z = (x * w).sum();  // no hooks: saved as is
  EXPECT_EQ(hooks->packs, 1);
  EXPECT_EQ(hooks->unpacks, 0);
  w.mul_(10);  // the clone stands; no version check through hooks
  y.backward();
  EXPECT_EQ(hooks->unpacks, 1);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3.0, 4.0}));
  EXPECT_THROW(z.backward(), Error);  // without hooks the in-place change is caught
}

TEST(AutogradTest, SavedTensorHooksErrors) {
  EXPECT_THROW(autograd::pop_saved_tensor_hooks(), Error);  // none pushed
  autograd::disable_saved_tensor_hooks("hooks are off here");
  try {
    autograd::push_saved_tensor_hooks(std::make_shared<CloningFactory>());
    ADD_FAILURE() << "pushing while disabled did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hooks are off here"), std::string::npos);
  }
  autograd::enable_saved_tensor_hooks();
  struct Mutating : autograd::SavedVariableHooks {
    void call_pack_hook(const Tensor& t) override { t.add_(1); }
    Tensor call_unpack_hook() override { return Tensor(); }
  };
  struct MutatingFactory : autograd::SavedVariableHooksFactory {
    std::unique_ptr<autograd::SavedVariableHooks> make() override {
      return std::make_unique<Mutating>();
    }
  };
  Tensor x = tensor({1.0, 2.0}, rg());
  Tensor w = tensor({3.0, 4.0});
  autograd::push_saved_tensor_hooks(std::make_shared<MutatingFactory>());
  EXPECT_THROW((x * w).sum(), Error);
  autograd::pop_saved_tensor_hooks();
}
