// `retorch compile`: compile a seed model's forward, report its kernels and first-call time, and
// optionally benchmark it against eager.
#include "tools/cli/CompileCmd.h"

#include <chrono>
#include <cstdio>
#include <iostream>

#include "retorch/compiler/Benchmark.h"
#include "retorch/compiler/Compiler.h"
#include "retorch/retorch.h"
#include "tools/cli/Models.h"

namespace retorch::cli {

namespace {

void print_timing(const char* what, const compiler::BenchmarkResult& r) {
  std::printf("%-9s median %8.3f ms  p20 %8.3f  p80 %8.3f  (%d reps)\n", what, r.median * 1e3,
              r.p20 * 1e3, r.p80 * 1e3, r.reps);
}

}  // namespace

int run_compile(const CompileConfig& c) {
  RT_CHECK(c.batch_size > 0, "compile: --batch-size must be positive, got ", c.batch_size);
  manual_seed(0);
  std::shared_ptr<nn::Module> model = make_model(c.model);
  model->eval();
  NoGradGuard no_grad;
  Tensor x = randn({c.batch_size, 1, 28, 28});
  compiler::CompiledFunction f = compile(*model);
  auto t0 = std::chrono::steady_clock::now();
  Tensor y = f({x})[0];
  double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const compiler::CompiledGraphInfo& info = f.last();
  Tensor want = model->forward(x);
  double diff = (y - want).abs().max().item<double>();
  std::printf("%s, batch %lld: %zu kernels, first call %.3f s (%s), max |compiled - eager| %.3g\n",
              c.model.c_str(), static_cast<long long>(c.batch_size),
              info.lowered.kernels.size(), first,
              info.object.empty() ? "nothing to build"
              : info.cache_hit    ? "from the cache"
                                  : "built",
              diff);
  for (const compiler::Kernel& k : info.lowered.kernels) std::printf("  %s\n", k.name.c_str());
  if (!info.object.empty()) std::printf("object: %s\n", info.object.c_str());
  if (c.source) std::cout << info.source;
  if (c.benchmark) {
    compiler::BenchmarkResult e = compiler::benchmark([&] { model->forward(x); });
    compiler::BenchmarkResult k = compiler::benchmark([&] { f({x}); });
    print_timing("eager", e);
    print_timing("compiled", k);
    std::printf("speedup   %.2fx (eager median / compiled median)\n", e.median / k.median);
  }
  return 0;
}

}  // namespace retorch::cli
