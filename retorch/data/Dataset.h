// Datasets: Example, the Dataset interface, TensorDataset and the TransformDataset wrapper.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch::data {

class Transform;

/// One sample, or a batch of samples stacked along dim 0.
struct Example {
  Tensor data;
  Tensor target;
};

/// The (seed, epoch) samples are loaded under; random transforms seed from it and the index.
struct SampleContext {
  uint64_t seed = 0;
  int64_t epoch = 0;
};

/// A map-style dataset: size() samples, get(i) for 0 <= i < size(). get must be thread-safe.
class Dataset : public std::enable_shared_from_this<Dataset> {
 public:
  virtual ~Dataset() = default;
  /// Number of samples.
  virtual int64_t size() const = 0;
  /// Sample `index` (under the default SampleContext for datasets with random transforms).
  virtual Example get(int64_t index) const = 0;
  /// Samples `indices` stacked along a new dim 0; the default calls get for each and stacks.
  virtual Example get_batch(const std::vector<int64_t>& indices, const SampleContext& ctx) const;
  /// This dataset with `transform` applied to each sample's data (needs a shared_ptr owner).
  std::shared_ptr<Dataset> map(std::shared_ptr<Transform> transform);

 protected:
  /// Errors (naming the dataset size) unless 0 <= index < size().
  void check_index(int64_t index) const;
};

/// Samples are rows of `data` and `targets` (equal size(0)); batches are one index_select each.
class TensorDataset : public Dataset {
 public:
  /// data and targets must have the same size along dim 0.
  TensorDataset(Tensor data, Tensor targets);
  int64_t size() const override { return data_.size(0); }
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices, const SampleContext& ctx) const override;
  /// All samples' data, [N, ...].
  const Tensor& data() const { return data_; }
  /// All samples' targets, [N, ...].
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_;
  Tensor targets_;
};

/// Applies a per-sample Transform to the data of another dataset; targets pass through.
class TransformDataset : public Dataset {
 public:
  TransformDataset(std::shared_ptr<Dataset> inner, std::shared_ptr<Transform> transform);
  int64_t size() const override { return inner_->size(); }
  /// Sample `index` transformed under SampleContext{} (seed 0, epoch 0).
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices, const SampleContext& ctx) const override;
  /// The wrapped dataset.
  const std::shared_ptr<Dataset>& inner() const { return inner_; }

 private:
  std::shared_ptr<Dataset> inner_;
  std::shared_ptr<Transform> transform_;
  uint64_t depth_;  // nesting level, mixed into the sample seed so stacked wrappers differ
};

/// An int64 tensor holding `indices`.
Tensor index_tensor(const std::vector<int64_t>& indices);

}  // namespace retorch::data
