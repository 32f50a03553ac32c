// Dataset batching defaults, TensorDataset's index_select fast path, TransformDataset.
#include "retorch/data/Dataset.h"

#include <cstring>

#include "retorch/core/Error.h"
#include "retorch/data/Random.h"
#include "retorch/data/Transforms.h"
#include "retorch/generated/Functions.h"

namespace retorch::data {

Tensor index_tensor(const std::vector<int64_t>& indices) {
  Tensor t = make_empty({int64_t(indices.size())}, kLong);
  if (!indices.empty()) std::memcpy(t.data_ptr(), indices.data(), indices.size() * sizeof(int64_t));
  return t;
}

void Dataset::check_index(int64_t index) const {
  RT_CHECK_INDEX(index >= 0 && index < size(), "dataset index ", index,
                 " is out of range for a dataset of ", size(), " samples");
}

Example Dataset::get_batch(const std::vector<int64_t>& indices, const SampleContext&) const {
  RT_CHECK(!indices.empty(), "get_batch: empty list of indices");
  std::vector<Tensor> data, targets;
  data.reserve(indices.size());
  targets.reserve(indices.size());
  for (int64_t i : indices) {
    check_index(i);
    Example e = get(i);
    data.push_back(std::move(e.data));
    targets.push_back(std::move(e.target));
  }
  return {stack(data), stack(targets)};
}

std::shared_ptr<Dataset> Dataset::map(std::shared_ptr<Transform> transform) {
  std::shared_ptr<Dataset> self = weak_from_this().lock();
  RT_CHECK(self != nullptr,
           "Dataset::map needs the dataset to be owned by a std::shared_ptr (use make_shared)");
  return std::make_shared<TransformDataset>(std::move(self), std::move(transform));
}

TensorDataset::TensorDataset(Tensor data, Tensor targets)
    : data_(std::move(data)), targets_(std::move(targets)) {
  RT_CHECK(data_.defined() && targets_.defined(), "TensorDataset: data and targets must be defined");
  RT_CHECK(data_.dim() >= 1 && targets_.dim() >= 1,
           "TensorDataset: data and targets need a sample dimension (dim 0)");
  RT_CHECK(data_.size(0) == targets_.size(0), "TensorDataset: data has ", data_.size(0),
           " samples but targets has ", targets_.size(0));
}

Example TensorDataset::get(int64_t index) const {
  check_index(index);
  return {data_.select(0, index), targets_.select(0, index)};
}

Example TensorDataset::get_batch(const std::vector<int64_t>& indices, const SampleContext&) const {
  RT_CHECK(!indices.empty(), "get_batch: empty list of indices");
  for (int64_t i : indices) check_index(i);
  // One gather per tensor instead of size() selects and a stack.
  Tensor idx = index_tensor(indices);
  return {index_select(data_, 0, idx), index_select(targets_, 0, idx)};
}

TransformDataset::TransformDataset(std::shared_ptr<Dataset> inner,
                                   std::shared_ptr<Transform> transform)
    : inner_(std::move(inner)), transform_(std::move(transform)) {
  RT_CHECK(inner_ != nullptr, "TransformDataset: the inner dataset is null");
  RT_CHECK(transform_ != nullptr, "TransformDataset: the transform is null");
  auto* nested = dynamic_cast<const TransformDataset*>(inner_.get());
  depth_ = nested ? nested->depth_ + 1 : 0;
}

Example TransformDataset::get(int64_t index) const {
  Example b = get_batch({index}, SampleContext{});
  return {b.data.select(0, 0), b.target.select(0, 0)};
}

Example TransformDataset::get_batch(const std::vector<int64_t>& indices,
                                    const SampleContext& ctx) const {
  Example b = inner_->get_batch(indices, ctx);
  std::vector<Tensor> out;
  out.reserve(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    // See Note [Data randomness].
    Generator gen(mix_seed(ctx.seed, uint64_t(ctx.epoch), uint64_t(indices[k]), depth_));
    out.push_back(transform_->apply(b.data.select(0, int64_t(k)), gen));
  }
  return {stack(out), b.target};
}

}  // namespace retorch::data
