// DataLoader: batches of a Dataset in sampler order, prefetched by worker threads, delivered in order.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "retorch/data/Dataset.h"
#include "retorch/data/Sampler.h"
#include "retorch/nn/Options.h"

namespace retorch::data {

/// Options of a DataLoader: DataLoaderOptions().batch_size(100).shuffle(true).num_workers(2).
struct DataLoaderOptions {
  DataLoaderOptions() = default;
  explicit DataLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}
  /// Samples per batch.
  RETORCH_ARG(int64_t, batch_size) = 1;
  /// Visit samples in a RandomSampler order (a new permutation per epoch) instead of 0..n-1.
  RETORCH_ARG(bool, shuffle) = false;
  /// Drop the last batch when it would be smaller than batch_size.
  RETORCH_ARG(bool, drop_last) = false;
  /// Worker threads that load batches ahead; 0 loads each batch on the calling thread.
  RETORCH_ARG(int64_t, num_workers) = 0;
  /// Batches each worker may load ahead of the consumer.
  RETORCH_ARG(int64_t, prefetch) = 2;
  /// Seed of the shuffle and of random transforms (see Note [Data randomness]).
  RETORCH_ARG(uint64_t, seed) = 0;
};

class EpochRun;

/// Iterates batches of a dataset: `for (Example& batch : loader)`.
class DataLoader {
 public:
  /// Uses a RandomSampler when options.shuffle(), a SequentialSampler otherwise.
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  /// Uses the given sampler (options.shuffle() must be false).
  DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
             DataLoaderOptions options = {});

  /// Number of batches per epoch.
  int64_t size() const;
  /// The epoch the next pass uses; each begin() then advances it by one.
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  /// The epoch the next pass will use.
  int64_t epoch() const { return epoch_; }
  /// The options given at construction.
  const DataLoaderOptions& options() const { return options_; }
  /// The dataset batches are drawn from.
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }

  /// The sample indices of each batch of `epoch`.
  std::vector<std::vector<int64_t>> batch_indices(int64_t epoch) const;
  /// Loads one batch on the calling thread, exactly as a worker would for `epoch`.
  Example load_batch(const std::vector<int64_t>& indices, int64_t epoch) const;

  /// Input iterator over one epoch's batches; it owns the epoch's worker threads.
  class Iterator {
   public:
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    explicit Iterator(std::shared_ptr<EpochRun> run) : run_(std::move(run)) {}
    /// The current batch (waits for its worker; rethrows the worker's error).
    Example& operator*() const;
    Example* operator->() const { return &**this; }
    /// Moves to the next batch, releasing the current one.
    Iterator& operator++();
    /// Equal when both are at the end, or are the same pass.
    bool operator==(const Iterator& o) const;
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    bool at_end() const;
    std::shared_ptr<EpochRun> run_;
  };

  /// Starts a pass over epoch() (starting its workers) and advances epoch() for the next pass.
  Iterator begin();
  /// The end of any pass.
  Iterator end() { return Iterator(); }

 private:
  std::shared_ptr<Dataset> dataset_;
  std::shared_ptr<Sampler> sampler_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace retorch::data
