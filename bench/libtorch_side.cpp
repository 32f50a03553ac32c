// The libtorch (PyTorch 1.13 C++) side of bench_ops: the same cases as the retorch side.
#include <torch/torch.h>

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
  return s;
}
