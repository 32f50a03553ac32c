// bench_ops: retorch vs libtorch on this machine, in one run, with the hardware limits
// (memory bandwidth from a plain copy loop, SGEMM peak from OpenBLAS directly).
#include <cblas.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "BenchUtil.h"
#include "retorch/backend/cpu/Parallel.h"
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
  auto ratio = [](double ours, double theirs) { return theirs > 0 ? ours / theirs : 0.0; };
  std::printf("\n%-36s %14s %14s %10s  %s\n", "case", "retorch", "libtorch", "time ratio", "limit");
  std::printf("%-36s %11.3f us %11.3f us %10.2f\n", "add, 1 element (C++ per-op)", r.add_1elem * 1e6,
              p.add_1elem * 1e6, ratio(r.add_1elem, p.add_1elem));
  std::printf("%-36s %9.2f GB/s %9.2f GB/s %10.2f  %.1f GB/s (pre-faulted add loop)\n",
              "add, 16M floats, fresh output", bytes16m / r.add_16m_fresh / 1e9,
              p.add_16m_fresh > 0 ? bytes16m / p.add_16m_fresh / 1e9 : 0.0,
              ratio(r.add_16m_fresh, p.add_16m_fresh), bw);
  std::printf("%-36s %6.1f GFLOP/s %6.1f GFLOP/s %10.2f  %.1f GFLOP/s (OpenBLAS SGEMM 2048^2)\n",
              "mm 1024x1024 fp32", flops / r.mm_1024 / 1e9,
              p.mm_1024 > 0 ? flops / p.mm_1024 / 1e9 : 0.0, ratio(r.mm_1024, p.mm_1024), peak);
  std::printf("%-36s %11.1f us %11.1f us %10.2f\n", "(x@w).relu().sum().backward() 64x128",
              r.fwd_bwd_small * 1e6, p.fwd_bwd_small * 1e6, ratio(r.fwd_bwd_small, p.fwd_bwd_small));
  std::printf("\ntime ratio = retorch time / libtorch time (below 1 means retorch is faster)\n");
  return 0;
}
