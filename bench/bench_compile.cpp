// retorch::compile against retorch eager on the compiler issue's cases: memory-bound pointwise
// chains and row kernels (GB/s against the machine's copy bandwidth), and compile time cold and
// cached.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "BenchUtil.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/compiler/Compiler.h"
#include "retorch/retorch.h"
#include "tools/cli/Models.h"

namespace rt = retorch;
using Fn = std::vector<rt::Tensor> (*)(const std::vector<rt::Tensor>&);

namespace {

// Bytes per second of a pre-faulted out = a + b over 16M floats (the bandwidth limit).
double copy_gbps() {
  rt::Tensor a = rt::rand({16 << 20}), b = rt::rand({16 << 20}), c = rt::empty({16 << 20});
  double t = bench::time_per_call([&] { rt::add_out(c, a, b); }, 10);
  return 3.0 * (16 << 20) * 4 / t / 1e9;
}

std::vector<rt::Tensor> tanh_chain(const std::vector<rt::Tensor>& x) {
  return {(x[0] * 2 + 1).tanh()};
}
// bias + GELU + residual add, 4096x1024 (the pointwise tail of a transformer MLP).
std::vector<rt::Tensor> gelu_residual(const std::vector<rt::Tensor>& x) {
  return {rt::gelu(x[0] + x[1]) + x[2]};
}
// RMSNorm without the weight: a reduction kernel (square, mean, + eps, rsqrt) and a pointwise one.
std::vector<rt::Tensor> rms_norm(const std::vector<rt::Tensor>& x) {
  return {x[0] * ((x[0] * x[0]).mean({-1}, true) + 1e-6).rsqrt()};
}
// layer_norm + GELU + residual add: one row kernel (mean, centered squares, the tail).
std::vector<rt::Tensor> norm_gelu_residual(const std::vector<rt::Tensor>& x) {
  return {rt::gelu(rt::layer_norm(x[0], {x[0].size(-1)}, x[1], x[2])) + x[0]};
}
// Attention-style scores: scale, add a mask row, softmax (eager: three kernels).
std::vector<rt::Tensor> masked_softmax(const std::vector<rt::Tensor>& x) {
  return {rt::softmax(x[0] * 0.125 + x[1], -1)};
}
std::vector<rt::Tensor> swiglu(const std::vector<rt::Tensor>& x) {
  return {rt::silu(x[0]) * x[1]};
}

void row(const char* name, Fn fn, const std::vector<rt::Tensor>& in, double bytes, double bw,
         int iters) {
  auto f = rt::compile(fn);
  f(in);
  double te = bench::time_per_call([&] { fn(in); }, iters);
  double tc = bench::time_per_call([&] { f(in); }, iters);
  std::printf("| %-34s | %8.3f | %8.3f | %5.2fx | %6.1f GB/s (%3.0f%% of %.1f) |\n", name,
              te * 1e3, tc * 1e3, te / tc, bytes / tc / 1e9, 100 * bytes / tc / 1e9 / bw, bw);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  std::printf("retorch bench_compile (threads: %d)\n\n", rt::get_num_threads());
  double bw = copy_gbps();
  std::printf("| case | eager ms | compiled ms | speedup | compiled rate |\n|---|---|---|---|---|\n");
  rt::manual_seed(0);
  rt::Tensor a = rt::randn({1 << 20});
  row("(a*2+1).tanh(), 1M floats", tanh_chain, {a}, 8.0 * (1 << 20), bw, 200);
  rt::Tensor h = rt::randn({4096, 1024}), bias = rt::randn({1024}), res = rt::randn({4096, 1024});
  row("gelu(h + bias) + res, 4096x1024", gelu_residual, {h, bias, res}, 12.0 * 4096 * 1024, bw,
      10);
  rt::Tensor g = rt::randn({4096, 1024}), u = rt::randn({4096, 1024});
  row("silu(g) * u, 4096x1024", swiglu, {g, u}, 12.0 * 4096 * 1024, bw, 10);
  row("rms_norm (no weight), 4096x1024", rms_norm, {g}, 8.0 * 4096 * 1024, bw, 10);
  rt::Tensor w = rt::randn({1024});
  row("layer_norm + gelu + residual, 4096x1024", norm_gelu_residual, {g, w, bias},
      8.0 * 4096 * 1024, bw, 10);
  row("softmax(x * 0.125 + mask), 4096x1024", masked_softmax, {g, bias}, 8.0 * 4096 * 1024, bw,
      10);

  // Compile time: a fresh cache directory (cold), then a new function on the same graph once
  // the first is gone (the object comes back from disk, verified).
  char tmpl[] = "/tmp/retorch_bench_cacheXXXXXX";
  if (::mkdtemp(tmpl)) ::setenv("RETORCH_CACHE_DIR", tmpl, 1);
  rt::Tensor x = rt::randn({100, 64});
  double cold, warm;
  {
    auto t0 = std::chrono::steady_clock::now();
    auto f = rt::compile(gelu_residual);
    f({x, x, x});
    cold = seconds_since(t0);
  }
  {
    auto t0 = std::chrono::steady_clock::now();
    auto f = rt::compile(gelu_residual);
    f({x, x, x});
    warm = seconds_since(t0);
  }
  std::printf("\nfirst call of a compiled gelu+residual (trace, lower, build, load): %.2f s cold, "
              "%.3f s from the cache\n", cold, warm);
  // The seed ConvNet (eval, batch 100): first call cold and cached, and a step against eager.
  {
    std::shared_ptr<rt::nn::Module> net = rt::cli::make_model("convnet");
    net->eval();
    rt::NoGradGuard ng;
    rt::Tensor img = rt::randn({100, 1, 28, 28});
    auto t0 = std::chrono::steady_clock::now();
    {
      auto f = rt::compile(*net);
      f({img});
      cold = seconds_since(t0);
    }
    t0 = std::chrono::steady_clock::now();
    auto f = rt::compile(*net);
    f({img});
    warm = seconds_since(t0);
    double te = bench::time_per_call([&] { net->forward(img); }, 20);
    double tc = bench::time_per_call([&] { f({img}); }, 20);
    std::printf("seed ConvNet forward, batch 100: first call %.2f s cold, %.3f s cached; "
                "eager %.2f ms, compiled %.2f ms (%.2fx), %zu kernels\n",
                cold, warm, te * 1e3, tc * 1e3, te / tc, f.last().lowered.kernels.size());
  }
  // Forward and backward of layer_norm + gelu + residual (x, weight and bias require grad):
  // compiled, one row kernel each way (Note [Compiled backward]), against eager.
  {
    rt::Tensor x = rt::randn({4096, 1024}).requires_grad_(), w = rt::randn({1024}).requires_grad_(),
               b = rt::randn({1024}).requires_grad_(), gy = rt::randn({4096, 1024});
    auto f = rt::compile(norm_gelu_residual);
    auto step = [&](bool compiled) {
      std::vector<rt::Tensor> in = {x, w, b};
      rt::Tensor y = compiled ? f(in)[0] : norm_gelu_residual(in)[0];
      y.backward(gy);
    };
    double te = bench::time_per_call([&] { step(false); }, 10);
    double tc = bench::time_per_call([&] { step(true); }, 10);
    std::printf("layer_norm + gelu + residual, forward + backward, 4096x1024: eager %.2f ms, "
                "compiled %.2f ms (%.2fx)\n", te * 1e3, tc * 1e3, te / tc);
  }
  // A training step (forward, cross-entropy, backward, SGD) of the seed ConvNet, batch 100:
  // compiled (ReLU kernels with generated backward kernels) against eager.
  {
    rt::Tensor img = rt::randn({100, 1, 28, 28}), labels = rt::randint(0, 10, {100});
    auto step_time = [&](bool compiled) {
      rt::manual_seed(0);
      std::shared_ptr<rt::nn::Module> net = rt::cli::make_model("convnet");
      net->train();
      rt::optim::SGD opt(net->parameters(), rt::optim::SGDOptions(0.01).momentum(0.9));
      auto f = rt::compile(*net);
      return bench::time_per_call([&] {
        opt.zero_grad();
        rt::Tensor out = compiled ? f({img})[0] : net->forward(img);
        rt::cross_entropy(out, labels).backward();
        opt.step();
      }, 20);
    };
    double te = step_time(false), tc = step_time(true);
    std::printf("seed ConvNet training step, batch 100: eager %.2f ms, compiled %.2f ms (%.2fx)\n",
                te * 1e3, tc * 1e3, te / tc);
  }
  std::string rm = std::string("rm -rf ") + tmpl;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
