// bench_ops: retorch vs libtorch on this machine, in one run, with the hardware limits
// (memory bandwidth from a plain copy loop, SGEMM peak from OpenBLAS directly).
#include <cblas.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "BenchUtil.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/compiler/Compiler.h"
#include "retorch/retorch.h"

#ifdef RETORCH_BENCH_LIBTORCH
bench::Side run_libtorch();
#endif

namespace rt = retorch;

static bench::Side run_retorch() {
  bench::Side s{};
  rt::manual_seed(0);
  {
    rt::Tensor a = rt::ones({1}), b = rt::ones({1});
    s.add_1elem = bench::time_per_call([&] { rt::Tensor c = rt::add(a, b); }, 200000);
  }
  {
    rt::Tensor a = rt::rand({16 << 20}), b = rt::rand({16 << 20});
    s.add_16m_fresh = bench::time_per_call([&] { rt::Tensor c = a + b; }, 10);
  }
  {
    rt::Tensor a = rt::rand({1024, 1024}), b = rt::rand({1024, 1024});
    s.mm_1024 = bench::time_per_call([&] { rt::Tensor c = rt::mm(a, b); }, 10);
  }
  {
    rt::Tensor x = rt::randn({64, 128});
    rt::Tensor w = rt::randn({128, 128}, rt::requires_grad());
    s.fwd_bwd_small = bench::time_per_call([&] {
      rt::Tensor l = rt::matmul(x, w).relu().sum();
      l.backward();
      w.mutable_grad() = rt::Tensor();
    }, 2000);
  }
  {
    rt::Tensor a = rt::rand({2048, 2048}), b = rt::rand({2048, 2048});
    s.mm_2048 = bench::time_per_call([&] { rt::Tensor c = rt::mm(a, b); }, 3);
  }
  {
    rt::Tensor a = rt::randn({1 << 20});
    s.tanh_chain_1m = bench::time_per_call([&] { rt::Tensor c = (a * 2 + 1).tanh(); }, 200);
    auto f = rt::compile([](const std::vector<rt::Tensor>& x) {
      return std::vector<rt::Tensor>{(x[0] * 2 + 1).tanh()};
    });
    s.tanh_chain_1m_compiled = bench::time_per_call([&] { f({a}); }, 200);
  }
  {
    rt::Tensor a = rt::rand({16 << 20});
    s.sum_16m = bench::time_per_call([&] { rt::Tensor c = a.sum(); }, 20);
  }
  {
    rt::Tensor a = rt::randn({256, 1000});
    s.softmax_256x1000 = bench::time_per_call([&] { rt::Tensor c = a.softmax(1); }, 200);
  }
  {
    rt::Tensor x = rt::randn({32, 32, 28, 28}), w = rt::randn({64, 32, 3, 3});
    s.conv_fwd = bench::time_per_call([&] { rt::Tensor c = rt::conv2d(x, w, {}, 1, 1); }, 10);
    rt::Tensor xg = x.clone().requires_grad_(true), wg = w.clone().requires_grad_(true);
    s.conv_fwd_bwd = bench::time_per_call([&] {
      rt::conv2d(xg, wg, {}, 1, 1).sum().backward();
      xg.mutable_grad() = rt::Tensor();
      wg.mutable_grad() = rt::Tensor();
    }, 5);
  }
  {
    rt::Tensor a = rt::randn({1024, 1024}).to(rt::kBFloat16), b = rt::randn({1024, 1024}).to(rt::kBFloat16);
    s.bf16_mm_1024 = bench::time_per_call([&] { rt::Tensor c = a.mm(b); }, 3);
    rt::Tensor x = rt::randn({1 << 20}).to(rt::kBFloat16), y = rt::randn({16 << 20}).to(rt::kBFloat16);
    s.bf16_exp_1m = bench::time_per_call([&] { rt::Tensor c = x.exp(); }, 50);
    s.bf16_sum_16m = bench::time_per_call([&] { rt::Tensor c = y.sum(); }, 10);
  }
  for (auto [m, k, n] : {std::array<int64_t, 3>{100, 784, 256}, {64, 128, 128}}) {
    rt::Tensor x = rt::randn({m, k}), w = rt::randn({k, n}), b = rt::randn({n});
    const int iters = m == 100 ? 500 : 5000;
    double fused =
        bench::time_per_call([&] { rt::Tensor y = rt::_addmm_activation(b, x, w); }, iters);
    double unfused = bench::time_per_call([&] { rt::Tensor y = rt::addmm(b, x, w).relu(); }, iters);
    (k == 784 ? s.linear_relu_784_fused : s.linear_relu_128_fused) = fused;
    (k == 784 ? s.linear_relu_784_unfused : s.linear_relu_128_unfused) = unfused;
  }
  return s;
}

// Streams 3 x 64 MB (read a, read b, write c) with pre-faulted buffers: the bandwidth an
// elementwise add could reach here.
static double stream_add_gbps() {
  size_t n = 16 << 20;
  std::vector<float> a(n, 1.f), b(n, 2.f), c(n, 0.f);
  double t = bench::time_per_call([&] {
    rt::parallel_for(0, int64_t(n), 1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) c[size_t(i)] = a[size_t(i)] + b[size_t(i)];
    });
  }, 10);
  return 3.0 * double(n) * 4 / t / 1e9;
}

static double sgemm_peak_gflops() {
  int n = 2048;
  std::vector<float> a(size_t(n) * n, 1.f), b(size_t(n) * n, 1.f), c(size_t(n) * n);
  double t = bench::time_per_call([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n,
                0.f, c.data(), n);
  }, 3, 3);
  return 2.0 * n * double(n) * n / t / 1e9;
}

int main() {
  std::printf("retorch bench_ops (threads: %d)\n", rt::get_num_threads());
  bench::Side r = run_retorch();
#ifdef RETORCH_BENCH_LIBTORCH
  bench::Side p = run_libtorch();
#else
  bench::Side p{};
#endif
  double bw = stream_add_gbps();
  double peak = sgemm_peak_gflops();
  const double bytes16m = 3.0 * (16 << 20) * 4, flops = 2.0 * 1024 * 1024 * 1024;
  const double conv_flops = 2.0 * 32 * 64 * 28 * 28 * 32 * 9;
  // One row per case: rates (GB/s, GFLOP/s) where the work is known, else time per call.
  struct Row {
    const char* name;
    double ours, theirs;
    double work;       // bytes or flops per call; 0: print times
    const char* unit;  // "GB/s", "GFLOP/s" or "us"/"ms"
    std::string limit;
  };
  char bw_s[64], peak_s[64];
  std::snprintf(bw_s, sizeof bw_s, "%.1f GB/s (pre-faulted add loop)", bw);
  std::snprintf(peak_s, sizeof peak_s, "%.1f GFLOP/s (OpenBLAS SGEMM 2048^2)", peak);
  const double sum_bytes = double(16 << 20) * 4;
  std::vector<Row> rows = {
      {"add, 1 element (C++ per-op)", r.add_1elem, p.add_1elem, 0, "us", ""},
      {"add, 16M floats, fresh output", r.add_16m_fresh, p.add_16m_fresh, bytes16m, "GB/s", bw_s},
      {"sum of 16M floats", r.sum_16m, p.sum_16m, sum_bytes, "GB/s", bw_s},
      {"(a*2+1).tanh(), 1M floats", r.tanh_chain_1m, p.tanh_chain_1m, 0, "ms", ""},
      {"  the same, retorch::compile", r.tanh_chain_1m_compiled, p.tanh_chain_1m, 0, "ms", ""},
      {"softmax(dim=1), 256x1000", r.softmax_256x1000, p.softmax_256x1000, 0, "ms", ""},
      {"mm 1024x1024 fp32", r.mm_1024, p.mm_1024, flops, "GFLOP/s", peak_s},
      {"mm 2048x2048 fp32", r.mm_2048, p.mm_2048, flops * 8, "GFLOP/s", peak_s},
      {"conv2d 32x32x28x28->64 3x3, fwd", r.conv_fwd, p.conv_fwd, conv_flops, "GFLOP/s", peak_s},
      {"conv2d same, fwd + both grads", r.conv_fwd_bwd, p.conv_fwd_bwd, 3 * conv_flops, "GFLOP/s",
       peak_s},
      {"(x@w).relu().sum().backward() 64x128", r.fwd_bwd_small, p.fwd_bwd_small, 0, "us", ""},
      // retorch's fused linear+relu against libtorch's fused one and its two-op form; the last
      // row of each pair is retorch's own two-op form.
      {"_addmm_activation 100x784x256", r.linear_relu_784_fused, p.linear_relu_784_fused, 0, "us",
       ""},
      {"  vs libtorch relu(addmm)", r.linear_relu_784_fused, p.linear_relu_784_unfused, 0, "us",
       ""},
      {"  relu(addmm) both", r.linear_relu_784_unfused, p.linear_relu_784_unfused, 0, "us", ""},
      {"_addmm_activation 64x128x128", r.linear_relu_128_fused, p.linear_relu_128_fused, 0, "us",
       ""},
      {"  vs libtorch relu(addmm)", r.linear_relu_128_fused, p.linear_relu_128_unfused, 0, "us",
       ""},
      {"  relu(addmm) both", r.linear_relu_128_unfused, p.linear_relu_128_unfused, 0, "us", ""},
      {"mm 1024x1024 bf16", r.bf16_mm_1024, p.bf16_mm_1024, flops, "GFLOP/s", peak_s},
      {"exp, 1M bf16", r.bf16_exp_1m, p.bf16_exp_1m, 0, "ms", ""},
      {"sum of 16M bf16", r.bf16_sum_16m, p.bf16_sum_16m, sum_bytes / 2, "GB/s", bw_s},
  };
  std::printf("\n%-38s %16s %16s %10s  %s\n", "case", "retorch", "libtorch", "time ratio",
              "hardware limit");
  for (const Row& row : rows) {
    auto show = [&](double t) {
      char buf[32];
      if (t <= 0) return std::string("-");
      if (row.work > 0)
        std::snprintf(buf, sizeof buf, "%.1f %s", row.work / t / 1e9, row.unit);
      else
        std::snprintf(buf, sizeof buf, "%.3f %s", t * (row.unit[0] == 'u' ? 1e6 : 1e3),
                      row.unit);
      return std::string(buf);
    };
    std::printf("%-38s %16s %16s %10.2f  %s\n", row.name, show(row.ours).c_str(),
                show(row.theirs).c_str(), row.theirs > 0 ? row.ours / row.theirs : 0.0,
                row.limit.c_str());
  }
  const rt::AllocatorStats as = rt::cpu_allocator()->stats();
  std::printf("\nretorch CPU caching allocator over the retorch cases: %lld allocations, %.2f%% "
              "served from the cache (%lld went to the OS), peak %.1f MB\n",
              static_cast<long long>(as.num_allocs),
              as.num_allocs > 0 ? 100.0 * double(as.num_allocs - as.num_os_allocs) /
                                      double(as.num_allocs)
                                : 0.0,
              static_cast<long long>(as.num_os_allocs), double(as.peak_allocated_bytes) / 1e6);
  std::printf("\ntime ratio = retorch time / libtorch time (below 1 means retorch is faster)\n");
  return 0;
}
