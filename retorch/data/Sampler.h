// Samplers: the order in which a DataLoader visits dataset indices each epoch.
#pragma once
#include <cstdint>
#include <vector>

namespace retorch::data {

/// Produces one epoch's order of indices in [0, size()).
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// Number of indices per epoch.
  virtual int64_t size() const = 0;
  /// The indices of epoch `epoch`, in visiting order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

/// 0, 1, ..., n-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

/// A permutation of 0..n-1 that is a pure function of (seed, epoch); see Note [Data randomness].
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, uint64_t seed = 0);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices(int64_t epoch) const override;
  /// The seed mixed with the epoch.
  uint64_t seed() const { return seed_; }

 private:
  int64_t n_;
  uint64_t seed_;
};

}  // namespace retorch::data
