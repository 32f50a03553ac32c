// The libtorch (PyTorch 1.13 C++) side of bench_ops: the same cases as the retorch side.
#include <torch/torch.h>

#include <array>

#include "BenchUtil.h"

bench::Side run_libtorch() {
  bench::Side s{};
  torch::manual_seed(0);
  {
    auto a = torch::ones({1}), b = torch::ones({1});
    s.add_1elem = bench::time_per_call([&] { auto c = torch::add(a, b); }, 200000);
  }
  {
    auto a = torch::rand({16 << 20}), b = torch::rand({16 << 20});
    s.add_16m_fresh = bench::time_per_call([&] { auto c = a + b; }, 10);
  }
  {
    auto a = torch::rand({1024, 1024}), b = torch::rand({1024, 1024});
    s.mm_1024 = bench::time_per_call([&] { auto c = torch::mm(a, b); }, 10);
  }
  {
    auto x = torch::randn({64, 128});
    auto w = torch::randn({128, 128}, torch::requires_grad());
    s.fwd_bwd_small = bench::time_per_call([&] {
      auto l = torch::matmul(x, w).relu().sum();
      l.backward();
      w.mutable_grad().reset();
    }, 2000);
  }
  {
    auto a = torch::rand({2048, 2048}), b = torch::rand({2048, 2048});
    s.mm_2048 = bench::time_per_call([&] { auto c = torch::mm(a, b); }, 3);
  }
  {
    auto a = torch::randn({1 << 20});
    s.tanh_chain_1m = bench::time_per_call([&] { auto c = (a * 2 + 1).tanh(); }, 200);
  }
  {
    auto a = torch::rand({16 << 20});
    s.sum_16m = bench::time_per_call([&] { auto c = a.sum(); }, 20);
  }
  {
    auto a = torch::randn({256, 1000});
    s.softmax_256x1000 = bench::time_per_call([&] { auto c = a.softmax(1); }, 200);
  }
  {
    auto x = torch::randn({32, 32, 28, 28}), w = torch::randn({64, 32, 3, 3});
    s.conv_fwd = bench::time_per_call([&] { auto c = torch::conv2d(x, w, {}, 1, 1); }, 10);
    auto xg = x.clone().requires_grad_(true), wg = w.clone().requires_grad_(true);
    s.conv_fwd_bwd = bench::time_per_call([&] {
      torch::conv2d(xg, wg, {}, 1, 1).sum().backward();
      xg.mutable_grad().reset();
      wg.mutable_grad().reset();
    }, 5);
  }
  {
    auto a = torch::randn({1024, 1024}).to(torch::kBFloat16), b = torch::randn({1024, 1024}).to(torch::kBFloat16);
    s.bf16_mm_1024 = bench::time_per_call([&] { auto c = a.mm(b); }, 3);
    auto x = torch::randn({1 << 20}).to(torch::kBFloat16), y = torch::randn({16 << 20}).to(torch::kBFloat16);
    s.bf16_exp_1m = bench::time_per_call([&] { auto c = x.exp(); }, 50);
    s.bf16_sum_16m = bench::time_per_call([&] { auto c = y.sum(); }, 10);
  }
  for (auto [m, k, n] : {std::array<int64_t, 3>{100, 784, 256}, {64, 128, 128}}) {
    auto x = torch::randn({m, k}), w = torch::randn({k, n}), b = torch::randn({n});
    const int iters = m == 100 ? 500 : 5000;
    double fused = bench::time_per_call([&] { auto y = torch::_addmm_activation(b, x, w); }, iters);
    double unfused = bench::time_per_call([&] { auto y = torch::addmm(b, x, w).relu(); }, iters);
    (k == 784 ? s.linear_relu_784_fused : s.linear_relu_128_fused) = fused;
    (k == 784 ? s.linear_relu_784_unfused : s.linear_relu_128_unfused) = unfused;
  }
  return s;
}
