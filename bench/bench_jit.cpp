// JIT interpreter overhead: the same model run eagerly and through its traced graph.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/BenchUtil.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/jit/Tracer.h"
#include "retorch/retorch.h"
#include "tools/cli/Models.h"

namespace rt = retorch;

namespace {

struct Row {
  const char* name;
  double eager, interp;  // seconds per call
  int nodes;             // graph nodes per call (for the per-node overhead)
};

void print(const Row& r) {
  double per_node_ns = r.nodes > 0 ? (r.interp - r.eager) / r.nodes * 1e9 : 0;
  std::printf("| %-40s | %10.1f | %10.1f | %5.2fx | %+8.0f ns |\n", r.name, r.eager * 1e6,
              r.interp * 1e6, r.interp / r.eager, per_node_ns);
}

// Times a and b alternately (so load from other processes hits both alike); medians.
template <typename A, typename B>
std::pair<double, double> time_pair(A&& a, B&& b, int iters, int reps = 15) {
  std::vector<double> ta, tb;
  for (int r = 0; r < reps; ++r) {
    ta.push_back(bench::time_per_call(a, iters, 1));
    tb.push_back(bench::time_per_call(b, iters, 1));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

int count_nodes(const rt::jit::Graph& g) {
  int n = 0;
  for (rt::jit::Node* node : g.nodes()) n += node->kind() != "prim::Constant";
  return n;
}

Row model_row(const char* label, const char* model, std::vector<int64_t> shape, int iters) {
  rt::manual_seed(0);
  std::shared_ptr<rt::nn::Module> m = rt::cli::make_model(model);
  m->eval();
  rt::Tensor x = rt::randn(shape);
  rt::jit::ScriptModule sm = rt::jit::trace(*m, {x});
  rt::NoGradGuard no_grad;
  std::vector<rt::IValue> in{rt::IValue(x)};
  auto [eager, interp] = time_pair([&] { m->forward(x); }, [&] { sm.forward(in); }, iters);
  return {label, eager, interp, count_nodes(sm.graph())};
}

// 64 dependent adds of 1-element tensors: nearly all of the time is per-op overhead.
Row chain_row(int iters) {
  const int n = 64;
  auto chain = [n](const std::vector<rt::Tensor>& in) {
    rt::Tensor y = in[0];
    for (int i = 0; i < n; ++i) y = y + in[1];
    return std::vector<rt::Tensor>{y};
  };
  rt::Tensor a = rt::ones({1}), b = rt::ones({1});
  rt::jit::ScriptFunction f = rt::jit::trace(chain, {a, b});
  std::vector<rt::IValue> in{rt::IValue(a), rt::IValue(b)};
  std::vector<rt::Tensor> tin{a, b};
  auto [eager, interp] = time_pair([&] { chain(tin); }, [&] { f.run(in); }, iters);
  return {"64 adds of 1-element tensors", eager, interp, count_nodes(f.graph())};
}

}  // namespace

int main() {
  std::printf("retorch bench_jit (threads: %d): eager C++ vs the interpreter on the traced graph\n",
              rt::get_num_threads());
  std::printf("| %-40s | %10s | %10s | %6s | %11s |\n", "case (no grad)", "eager us", "jit us",
              "ratio", "per node");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(42, '-').c_str(), std::string(12, '-').c_str(),
              std::string(12, '-').c_str(), std::string(8, '-').c_str(),
              std::string(13, '-').c_str());
  print(chain_row(2000));
  print(model_row("ConvNet forward, batch 1 (eval)", "convnet", {1, 1, 28, 28}, 100));
  print(model_row("MLP forward, batch 1 (eval)", "mlp", {1, 1, 28, 28}, 500));
  print(model_row("ResNet forward, batch 1 (eval)", "resnet", {1, 1, 28, 28}, 50));
  return 0;
}
