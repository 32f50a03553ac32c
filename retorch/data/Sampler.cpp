// Sequential and seeded random samplers.
#include "retorch/data/Sampler.h"

#include <numeric>
#include <utility>

#include "retorch/core/Error.h"
#include "retorch/data/Random.h"

namespace retorch::data {

namespace {
constexpr uint64_t kSamplerStream = 0x5A3D1E5ull;  // keeps sampler draws apart from transforms'
}

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  RT_CHECK(n >= 0, "SequentialSampler: size ", n, " must be non-negative");
}

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t(0));
  return out;
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {
  RT_CHECK(n >= 0, "RandomSampler: size ", n, " must be non-negative");
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t(0));
  // Fisher-Yates with one Philox draw per position. See Note [Data randomness].
  Generator gen(mix_seed(seed_, uint64_t(epoch), kSamplerStream));
  for (int64_t i = n_ - 1; i > 0; --i) 
    std::swap(out[size_t(i)], out[size_t(random_below(gen, i + 1))]);
  return out;
}

}  // namespace retorch::data
