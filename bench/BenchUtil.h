// Timing helpers shared by the retorch and libtorch sides of the benchmark.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

namespace bench {

/// Median over `reps` runs of the mean time per call (seconds) of `iters` calls of f.
template <typename F>
double time_per_call(F&& f, int iters, int reps = 7) {
  for (int i = 0; i < std::max(1, iters / 10); ++i) f();  // warm-up
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto a = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f();
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(b - a).count() / iters);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The cases both sides implement; each returns seconds per call.
struct Side {
  double add_1elem;
  double add_16m_fresh;
  double mm_1024;
  double mm_2048;
  double fwd_bwd_small;
  double tanh_chain_1m;  // (a * 2 + 1).tanh(), 1M floats
  double tanh_chain_1m_compiled;  // the same through retorch::compile (retorch side only)
  double sum_16m;
  double softmax_256x1000;
  double conv_fwd;       // 32x32x28x28 -> 64 channels, 3x3, padding 1
  double conv_fwd_bwd;   // the same, forward + input and weight gradients
  double bf16_mm_1024;   // bfloat16 1024x1024 @ 1024x1024
  double bf16_exp_1m;    // exp of 1M bfloat16
  double bf16_sum_16m;   // sum of 16M bfloat16
  // A linear layer + relu, x [100,784] @ w [784,256] + b [256] and x [64,128] @ w [128,128] + b:
  // fused (_addmm_activation) and as two ops (relu(addmm)).
  double linear_relu_784_fused;
  double linear_relu_784_unfused;
  double linear_relu_128_fused;
  double linear_relu_128_unfused;
};

}  // namespace bench
