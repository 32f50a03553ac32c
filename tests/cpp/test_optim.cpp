// The C++ optim API: optimizers minimize, options chain, groups, state dicts, errors, schedulers.
#include <gtest/gtest.h>

#include "retorch/optim/optim.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::optim;
using retorch::testing::catch_error;
using retorch::testing::contains;
using retorch::testing::values;

namespace {

// loss = sum((x - target)^2), minimized at x == target.
Tensor quadratic_loss(const Tensor& x, const Tensor& target) {
  return ((x - target) * (x - target)).sum();
}

}  // namespace

TEST(OptimSGD, MomentumMinimizesQuadratic) {
  Tensor x = zeros({3}, TensorOptions(kDouble).requires_grad(true));
  Tensor target = tensor({1.0, -2.0, 3.0}, TensorOptions(kDouble));
  SGD opt({x}, SGDOptions(0.05).momentum(0.9));
  for (int i = 0; i < 400; ++i) {
    opt.zero_grad();
    quadratic_loss(x, target).backward();
    opt.step();
  }
  EXPECT_TRUE(retorch::testing::all_close(x, target, 1e-6, 1e-6));
  EXPECT_EQ(opt.step_count(), 400);
  EXPECT_FALSE(x.grad_fn());
}

TEST(OptimSGD, ClosureReturnsLoss) {
  Tensor x = zeros({2}, TensorOptions(kDouble).requires_grad(true));
  Tensor target = tensor({1.0, 1.0}, TensorOptions(kDouble));
  SGD opt({x}, SGDOptions(0.1));
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = quadratic_loss(x, target);
    l.backward();
    return l;
  });
  EXPECT_DOUBLE_EQ(loss.item<double>(), 2.0);
  EXPECT_EQ(values(x), (std::vector<double>{0.2, 0.2}));
}

TEST(OptimAdam, OptionsChainAndMinimize) {
  AdamOptions o = AdamOptions(0.1).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.0).amsgrad(true);
  EXPECT_DOUBLE_EQ(o.lr(), 0.1);
  EXPECT_DOUBLE_EQ(std::get<0>(o.betas()), 0.8);
  EXPECT_TRUE(o.amsgrad());
  EXPECT_DOUBLE_EQ(o.get("beta2"), 0.99);
  EXPECT_EQ(o.keys().size(), 7u);
  EXPECT_DOUBLE_EQ(AdamWOptions().weight_decay(), 1e-2);

  Tensor x = zeros({3}, TensorOptions(kFloat).requires_grad(true));
  Tensor target = tensor({0.5, -0.5, 1.0});
  Adam opt({x}, o);
  for (int i = 0; i < 300; ++i) {
    opt.zero_grad();
    quadratic_loss(x, target).backward();
    opt.step();
  }
  EXPECT_TRUE(retorch::testing::all_close(x, target, 1e-3, 1e-3));
  EXPECT_TRUE(opt.state(x).contains("max_exp_avg_sq"));
  EXPECT_FLOAT_EQ(opt.state(x)["step"].item<float>(), 300.0f);
}

TEST(OptimParamGroups, PerGroupOptionsAndSkippedParams) {
  Tensor a = ones({2}, TensorOptions(kDouble).requires_grad(true));
  Tensor b = ones({2}, TensorOptions(kDouble).requires_grad(true));
  Tensor c = ones({2}, TensorOptions(kDouble).requires_grad(true));
  std::vector<OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a, c});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<SGDOptions>(SGDOptions(0.5)));
  SGD opt(groups, SGDOptions(0.1));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].options().get_lr(), 0.5);
  a.set_grad(ones({2}, TensorOptions(kDouble)));
  b.set_grad(ones({2}, TensorOptions(kDouble)));  // c has no grad: skipped
  opt.step();
  EXPECT_EQ(values(a), (std::vector<double>{0.9, 0.9}));
  EXPECT_EQ(values(b), (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(values(c), (std::vector<double>{1.0, 1.0}));

  opt.param_groups()[0].options().set_lr(0.2);
  opt.step();
  EXPECT_NEAR(values(a)[0], 0.7, 1e-15);

  Tensor d = ones({1}, TensorOptions(kDouble).requires_grad(true));
  opt.add_param_group(OptimizerParamGroup({d}));
  EXPECT_DOUBLE_EQ(opt.param_groups()[2].options().get_lr(), 0.1);
  Error e = catch_error([&] { opt.add_param_group(OptimizerParamGroup({a})); });
  EXPECT_TRUE(contains(e.message(), {"more than one parameter group"}));
}

TEST(OptimStateDict, RoundTripIsExact) {
  auto run = [](Optimizer& opt, Tensor& x, int from, int to) {
    for (int i = from; i < to; ++i) {
      x.set_grad(full({4}, 0.1 * (i + 1), TensorOptions(kFloat)) - x.detach());
      opt.step();
    }
  };
  Tensor straight = tensor({1.0f, 2.0f, 3.0f, 4.0f}).requires_grad_();
  RMSprop ref({straight}, RMSpropOptions(0.01).momentum(0.9).centered(true));
  run(ref, straight, 0, 10);

  Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f}).requires_grad_();
  RMSprop first({x}, RMSpropOptions(0.01).momentum(0.9).centered(true));
  run(first, x, 0, 5);
  OrderedDict<Tensor> sd = first.state_dict();
  EXPECT_TRUE(sd.contains("param_groups.0.lr"));
  EXPECT_TRUE(sd.contains("state.0.0.grad_avg"));
  EXPECT_EQ(sd["param_groups.0.lr"].dtype(), kDouble);
  EXPECT_EQ(sd["param_groups.0.lr"].dim(), 0);

  Tensor y = x.detach().clone().requires_grad_();
  RMSprop second({y}, RMSpropOptions(0.5));
  second.load_state_dict(sd);
  EXPECT_DOUBLE_EQ(second.param_groups()[0].options().get_lr(), 0.01);
  run(second, y, 5, 10);
  EXPECT_EQ(values(y), values(straight));

  OrderedDict<Tensor> bad = sd;
  bad["state.0.0.square_avg"] = zeros({5});
  Error e = catch_error([&] { second.load_state_dict(bad); });
  EXPECT_EQ(e.kind(), ErrorKind::kValue);
  EXPECT_TRUE(contains(e.message(), {"state.0.0.square_avg", "[5]", "[4]"}));
}

TEST(OptimErrors, InvalidOptionsRaise) {
  Tensor x = zeros({2}, TensorOptions(kFloat).requires_grad(true));
  Error e = catch_error([&] { SGD({x}, SGDOptions(-1.0)); });
  EXPECT_EQ(e.kind(), ErrorKind::kValue);
  EXPECT_EQ(e.message(), "Invalid learning rate: -1.0");
  e = catch_error([&] { SGD({x}, SGDOptions(0.1).nesterov(true)); });
  EXPECT_EQ(e.message(), "Nesterov momentum requires a momentum and zero dampening");
  e = catch_error([&] { Adam({x}, AdamOptions().betas({1.0, 0.9})); });
  EXPECT_EQ(e.message(), "Invalid beta parameter at index 0: 1.0");
  e = catch_error([&] { Adam({x}, AdamOptions().eps(-1e-8)); });
  EXPECT_EQ(e.message(), "Invalid epsilon value: -1e-08");
  e = catch_error([&] { Adagrad({x}, AdagradOptions().lr_decay(-0.5)); });
  EXPECT_EQ(e.message(), "Invalid lr_decay value: -0.5");
  e = catch_error([&] { RMSprop({x}, RMSpropOptions().alpha(-1)); });
  EXPECT_TRUE(contains(e.message(), {"Invalid alpha value"}));
  e = catch_error([&] { SGD(std::vector<Tensor>{}, SGDOptions(0.1)); });
  EXPECT_TRUE(contains(e.message(), {"empty parameter list"}));

  Tensor h = zeros({2}, TensorOptions(kHalf).requires_grad(true));
  SGD opt({h}, SGDOptions(0.1));
  h.set_grad(ones({2}, TensorOptions(kHalf)));
  e = catch_error([&] { opt.step(); });
  EXPECT_EQ(e.kind(), ErrorKind::kType);
  EXPECT_TRUE(contains(e.message(), {"SGD", "float32 and float64"}));
}

TEST(OptimErrors, PyFloat) {
  EXPECT_EQ(optim::detail::py_float(-1.0), "-1.0");
  EXPECT_EQ(optim::detail::py_float(0.1), "0.1");
  EXPECT_EQ(optim::detail::py_float(1e-8), "1e-08");
  EXPECT_EQ(optim::detail::py_float(100000.0), "100000.0");
  EXPECT_EQ(optim::detail::py_float(1e16), "1e+16");
  EXPECT_EQ(optim::detail::py_float(0.0001), "0.0001");
  EXPECT_EQ(optim::detail::py_float(123.456), "123.456");
}

TEST(OptimSchedulers, StepAndWarmupCosine) {
  Tensor x = zeros({2}, TensorOptions(kFloat).requires_grad(true));
  SGD opt({x}, SGDOptions(1.0).momentum(0.9));
  StepLR step_lr(opt, 2, 0.5);
  std::vector<double> lrs;
  for (int i = 0; i < 5; ++i) {
    opt.step();
    step_lr.step();
    lrs.push_back(step_lr.get_last_lr()[0]);
  }
  EXPECT_EQ(lrs, (std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25}));
  EXPECT_EQ(step_lr.last_epoch(), 5);

  SGD opt2({x}, SGDOptions(1.0));
  auto warm = std::make_shared<LinearLR>(opt2, 0.5, 1.0, 2);
  auto cos = std::make_shared<CosineAnnealingLR>(opt2, 4);
  SequentialLR seq(opt2, {warm, cos}, {2});
  EXPECT_DOUBLE_EQ(seq.get_last_lr()[0], 0.5);
  seq.step();
  EXPECT_DOUBLE_EQ(opt2.param_groups()[0].options().get_lr(), 0.75);
  seq.step();  // milestone: cosine restarts from the base lr
  EXPECT_DOUBLE_EQ(opt2.param_groups()[0].options().get_lr(), 1.0);
  seq.step();
  EXPECT_NEAR(opt2.param_groups()[0].options().get_lr(), (1 + std::cos(M_PI / 4)) / 2, 1e-15);
}

TEST(OptimSchedulers, OneCycleCyclesBeta1AndPlateau) {
  Tensor x = zeros({2}, TensorOptions(kFloat).requires_grad(true));
  Adam opt({x}, AdamOptions(0.1));
  OneCycleLR sched(opt, OneCycleLROptions(1.0).total_steps(10));
  EXPECT_NEAR(opt.param_groups()[0].options().get_lr(), 1.0 / 25, 1e-15);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get("beta1"), 0.95);
  for (int i = 0; i < 2; ++i) sched.step();  // the peak is at pct_start * 10 - 1
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 1.0);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get("beta1"), 0.85);

  Adagrad ada({x}, AdagradOptions(0.1));
  Error e = catch_error([&] { OneCycleLR(ada, OneCycleLROptions(1.0).total_steps(10)); });
  EXPECT_TRUE(contains(e.message(), {"must support momentum"}));

  SGD sgd({x}, SGDOptions(1.0));
  ReduceLROnPlateau plateau(sgd, ReduceLROnPlateauOptions().patience(1).factor(0.5));
  for (double m : {1.0, 1.0, 1.0, 1.0, 1.0}) plateau.step(m);
  EXPECT_DOUBLE_EQ(sgd.param_groups()[0].options().get_lr(), 0.25);
}
