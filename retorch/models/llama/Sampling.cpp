// Token sampling, following the order and tie rules of HF's logits processors and warpers.
#include "retorch/models/llama/Sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "retorch/autograd/GradMode.h"
#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

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
  double u = uniform();
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

double Sampler::uniform() {
  return rand({1}, gen_, TensorOptions().dtype(kDouble)).item<double>();
}

// Note [Sampling where the logits are]
// Sampler::sample takes a row of logits on the host: on a device that is 128 KB a row of a 32k
// vocabulary copied back each step, and top-p stable-sorts the vocabulary on the host (2.5 ms a
// row). sample_rows runs the same steps as tensor ops where the logits are, all rows at once, each
// with its own parameters (neutral values where a row has a filter off): the repetition penalty (a
// gather and scatter of the distinct tokens seen), temperature, top-k (the k-th largest from topk
// as a threshold), top-p (a stable ascending sort, cumulative probabilities, the removed tokens
// scattered back), min-p; then the draw with the u the row's own generator gives
// (Sampler::uniform, so a seed keeps its sequence): the token is the count of cumulative
// probabilities <= u (the host scan's first token whose cumulative sum passes u), or the last
// token with a probability where rounding left u above the total. Greedy rows take the argmax of
// the penalized logits. The arithmetic is the host's (penalty and temperature in float32,
// probabilities exp(double(x - max)) normalized in float64, thresholds compared in float64); only
// the order the sums add in differs, so a token can differ only where u or a top-p threshold lies
// within rounding (~1e-16) of a cumulative sum. The engine draws every step this way, on the cpu
// too, where it is as fast as the host sampler or faster (4-7x with top-p;
// bench/bench_sampling.py).

namespace {

// softmax() above on rows of float32 logits: exp(double(x - max)) / their float64 sum.
Tensor row_probabilities(const Tensor& x) {
  Tensor e = exp((x - amax(x, {1}, true)).to(kDouble));
  return e / sum(e, {1}, true);
}

}  // namespace

std::vector<int64_t> sample_rows(const Tensor& logits, const std::vector<Sampler*>& samplers,
                                 const std::vector<const std::vector<int64_t>*>& histories) {
  const int64_t rows = logits.dim() == 2 ? logits.size(0) : -1;
  RT_CHECK_VALUE(rows >= 0 && logits.dtype() == kFloat && logits.size(1) > 0,
                 "sample_rows: expected [rows, vocab] float32 logits, got ", logits.sizes(), " ",
                 logits.dtype());
  RT_CHECK_VALUE(samplers.size() == size_t(rows) && histories.size() == size_t(rows),
                 "sample_rows: ", rows, " rows of logits for ", samplers.size(), " samplers and ",
                 histories.size(), " histories");
  const int64_t vocab = logits.size(1);
  const Device dev = logits.device();
  NoGradGuard no_grad;
  // Per row: temperature (1 where off or greedy), 1 - top_p (-1 where off), min_p, penalty,
  // the draw's u, top_k (0 where off), whether greedy; one copy to the device.
  constexpr int kCols = 7;
  Tensor host = make_empty({rows, kCols}, kDouble);
  double* hp = host.data_ptr<double>();
  bool penalty = false, top_k = false, top_p = false, min_p = false, all_greedy = true;
  int64_t max_k = 0;
  std::vector<std::vector<int64_t>> seen(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const SamplingParams& p = samplers[size_t(r)]->params();
    const bool greedy = p.temperature == 0;
    double* row = hp + r * kCols;
    row[0] = greedy ? 1.0 : p.temperature;
    row[1] = !greedy && p.top_p < 1.0 ? 1.0 - p.top_p : -1.0;
    row[2] = greedy ? 0.0 : p.min_p;
    row[3] = p.repetition_penalty;
    row[4] = greedy ? 0.0 : samplers[size_t(r)]->uniform();
    row[5] = !greedy && p.top_k > 0 && p.top_k < vocab ? double(p.top_k) : 0.0;
    row[6] = greedy ? 1.0 : 0.0;
    if (p.repetition_penalty != 1.0) {
      std::unordered_set<int64_t> distinct;
      for (int64_t t : *histories[size_t(r)])
        if (t >= 0 && t < vocab && distinct.insert(t).second) seen[size_t(r)].push_back(t);
      if (seen[size_t(r)].empty()) row[3] = 1.0;
    }
    penalty = penalty || row[3] != 1.0;
    top_k = top_k || row[5] > 0;
    max_k = std::max(max_k, int64_t(row[5]));
    top_p = top_p || row[1] >= 0;
    min_p = min_p || row[2] > 0;
    all_greedy = all_greedy && greedy;
  }
  const auto host_ids = [rows](const Tensor& tokens) {  // one copy back, a token a row
    const Tensor ids = tokens.to(Device(kCPU), kLong).contiguous();
    return std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + rows);
  };
  // The parameters go to the device only when a row needs them (greedy rows without a penalty
  // need none); counts and indices below are float64, exact below 2^53, which keeps them on the
  // device's floating kernels (its integer reductions would take the fallback).
  const Tensor params = penalty || !all_greedy ? host.to(dev) : Tensor();
  auto column = [&](int c) { return params.narrow(1, c, 1); };  // [rows, 1]
  Tensor x = logits;
  if (penalty) {  // the host's v < 0 ? v * pen : v / pen over each row's distinct tokens
    size_t width = 1;
    for (const auto& v : seen) width = std::max(width, v.size());
    Tensor idx = make_empty({rows, int64_t(width)}, kLong);
    int64_t* ip = idx.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < width; ++j)  // padded with the row's first token: the same write
        ip[r * int64_t(width) + int64_t(j)] =
            seen[size_t(r)].empty() ? 0 : seen[size_t(r)][std::min(j, seen[size_t(r)].size() - 1)];
    idx = idx.to(dev);
    const Tensor pen = column(3).to(kFloat), v = gather(x, 1, idx);
    x = scatter(x, 1, idx, where(lt(v, 0), v * pen, v / pen));
  }
  if (all_greedy) return host_ids(argmax(x, 1));
  const Tensor greedy = argmax(x, 1).to(kDouble);
  x = x / column(0).to(kFloat);
  const double inf = std::numeric_limits<double>::infinity();
  if (top_k) {  // below the row's k-th largest: -inf (off: a threshold of -inf)
    const Tensor values = std::get<0>(topk(x, max_k, 1, true, true));
    const Tensor k = column(5);
    const Tensor kth = gather(values, 1, (k - 1).clamp_min(0).to(kLong));
    x = where(lt(x, where(gt(k, 0), kth, full({}, -inf, TensorOptions(kFloat).device(dev)))),
              -inf, x);
  }
  if (top_p) {  // ascending; the low tail with cumulative probability <= 1 - top_p goes
    auto [sorted, order] = sort(x, true, 1, false);
    Tensor cum = cumsum(gather(row_probabilities(x), 1, order), 1);
    Tensor drop = le(cum, column(1));
    drop.narrow(1, vocab - 1, 1).fill_(false);  // the most likely token stays
    x = scatter(x, 1, order, masked_fill(sorted, drop, -inf));
  }
  if (min_p) {
    const Tensor p = row_probabilities(x);
    x = where(lt(p, column(2) * amax(p, {1}, true)), -inf, x);
  }
  const Tensor p = row_probabilities(x);
  const Tensor passed = sum(le(cumsum(p, 1), column(4)).to(kDouble), {1});
  const Tensor index = arange(vocab, TensorOptions(kDouble).device(dev));
  const Tensor last = amax(where(gt(p, 0), index, -1.0), {1});
  const Tensor drawn = where(lt(passed, double(vocab)), passed, last);
  return host_ids(where(gt(column(6).squeeze(1), 0), greedy, drawn));
}

}  // namespace retorch::llama
