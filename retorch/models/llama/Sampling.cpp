// Token sampling, following the order and tie rules of HF's logits processors and warpers.
#include "retorch/models/llama/Sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"

namespace retorch::llama {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// softmax over x in float64 (the filters compare cumulative sums against thresholds).
std::vector<double> softmax(const std::vector<float>& x) {
  float m = kNegInf;
  for (float v : x) m = std::max(m, v);
  std::vector<double> p(x.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += p[i] = x[i] == kNegInf ? 0.0 : std::exp(double(x[i] - m));
  for (double& v : p) v /= s;
  return p;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params), gen_(params.seed) {
  RT_CHECK_VALUE(params.temperature >= 0, "sampling: temperature must be >= 0, got ",
                 params.temperature);
  RT_CHECK_VALUE(params.top_k >= 0, "sampling: top_k must be >= 0, got ", params.top_k);
  RT_CHECK_VALUE(params.top_p > 0 && params.top_p <= 1, "sampling: top_p must be in (0, 1], got ",
                 params.top_p);
  RT_CHECK_VALUE(params.min_p >= 0 && params.min_p <= 1, "sampling: min_p must be in [0, 1], got ",
                 params.min_p);
  RT_CHECK_VALUE(params.repetition_penalty > 0, "sampling: repetition_penalty must be > 0, got ",
                 params.repetition_penalty);
}

std::vector<float> Sampler::process(const float* logits, int64_t vocab,
                                    const std::vector<int64_t>& history) const {
  std::vector<float> x(logits, logits + vocab);
  if (params_.repetition_penalty != 1.0) {
    float pen = float(params_.repetition_penalty);
    std::unordered_set<int64_t> seen(history.begin(), history.end());
    for (int64_t t : seen) {
      if (t < 0 || t >= vocab) continue;
      float& v = x[size_t(t)];
      v = v < 0 ? v * pen : v / pen;
    }
  }
  if (params_.temperature == 0) return x;  // greedy: argmax of the penalized logits
  if (params_.temperature != 1.0)
    for (float& v : x) v = v / float(params_.temperature);
  if (params_.top_k > 0 && params_.top_k < vocab) {
    // Keep every token at least as large as the k-th largest (ties at the edge survive).
    std::vector<float> sorted = x;
    std::nth_element(sorted.begin(), sorted.begin() + (params_.top_k - 1), sorted.end(),
                     std::greater<float>());
    float kth = sorted[size_t(params_.top_k - 1)];
    for (float& v : x)
      if (v < kth) v = kNegInf;
  }
  if (params_.top_p < 1.0) {
    // Ascending order; drop the low tail whose cumulative probability is <= 1 - top_p, always
    // keeping the most likely token.
    std::vector<double> p = softmax(x);
    std::vector<int64_t> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return x[size_t(a)] < x[size_t(b)]; });
    double cum = 0;
    for (int64_t i = 0; i < vocab - 1; ++i) {
      cum += p[size_t(order[size_t(i)])];
      if (cum <= 1.0 - params_.top_p) x[size_t(order[size_t(i)])] = kNegInf;
    }
  }
  if (params_.min_p > 0) {
    std::vector<double> p = softmax(x);
    double top = *std::max_element(p.begin(), p.end());
    for (int64_t i = 0; i < vocab; ++i)
      if (p[size_t(i)] < params_.min_p * top) x[size_t(i)] = kNegInf;
  }
  return x;
}

int64_t Sampler::sample(const float* logits, int64_t vocab, const std::vector<int64_t>& history) {
  RT_CHECK_VALUE(vocab > 0, "sampling: empty logits");
  std::vector<float> x = process(logits, vocab, history);
  if (params_.temperature == 0)  // first maximum, like argmax
    return int64_t(std::max_element(x.begin(), x.end()) - x.begin());
  std::vector<double> p = softmax(x);
  double u = rand({1}, gen_, TensorOptions().dtype(kDouble)).item<double>();
  double cum = 0;
  int64_t last = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (p[size_t(i)] <= 0) continue;
    last = i;
    cum += p[size_t(i)];
    if (u < cum) return i;
  }
  return last;  // rounding left u above the total
}

}  // namespace retorch::llama
