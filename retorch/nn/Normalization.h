// Normalization modules: BatchNorm1d/2d, LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm.
#pragma once
#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  RETORCH_ARG(int64_t, num_features);
  RETORCH_ARG(double, eps) = 1e-5;
  /// None means a cumulative moving average (momentum 1/num_batches_tracked).
  RETORCH_ARG(std::optional<double>, momentum) = 0.1;
  RETORCH_ARG(bool, affine) = true;
  RETORCH_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

/// Batch normalization over dim 1; `expected_dims` are the input ranks it accepts.
class BatchNormImplBase : public Module {
 public:
  BatchNormImplBase(const BatchNormOptions& options, std::string name, std::vector<int64_t> dims);
  Tensor forward(const Tensor& input) override;
  void reset_running_stats();
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  std::vector<int64_t> dims_;
};

/// BatchNorm over [N, C] or [N, C, L].
class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  BatchNorm1dImpl(const BatchNorm1dOptions& options)  // NOLINT
      : BatchNormImplBase(options, "retorch::nn::BatchNorm1d", {2, 3}) {}
};
RETORCH_MODULE(BatchNorm1d);

/// BatchNorm over [N, C, H, W].
class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  BatchNorm2dImpl(const BatchNorm2dOptions& options)  // NOLINT
      : BatchNormImplBase(options, "retorch::nn::BatchNorm2d", {4}) {}
};
RETORCH_MODULE(BatchNorm2d);

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  RETORCH_ARG(std::vector<int64_t>, normalized_shape);
  RETORCH_ARG(double, eps) = 1e-5;
  RETORCH_ARG(bool, elementwise_affine) = true;
};

class LayerNormImpl : public Module {
 public:
  LayerNormImpl(const LayerNormOptions& options);  // NOLINT
  Tensor forward(const Tensor& input) override;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;
  LayerNormOptions options;
  Tensor weight, bias;
};
RETORCH_MODULE(LayerNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  RETORCH_ARG(int64_t, num_groups);
  RETORCH_ARG(int64_t, num_channels);
  RETORCH_ARG(double, eps) = 1e-5;
  RETORCH_ARG(bool, affine) = true;
};

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t groups, int64_t channels) : GroupNormImpl(GroupNormOptions(groups, channels)) {}
  GroupNormImpl(const GroupNormOptions& options);  // NOLINT
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  GroupNormOptions options;
  Tensor weight, bias;
};
RETORCH_MODULE(GroupNorm);

struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  RETORCH_ARG(std::vector<int64_t>, normalized_shape);
  /// None: the dtype's machine epsilon, as torch.
  RETORCH_ARG(std::optional<double>, eps) = std::nullopt;
  RETORCH_ARG(bool, elementwise_affine) = true;
};

class RMSNormImpl : public Module {
 public:
  RMSNormImpl(const RMSNormOptions& options);  // NOLINT
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  RMSNormOptions options;
  Tensor weight;
};
RETORCH_MODULE(RMSNorm);

struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}  // NOLINT
  RETORCH_ARG(int64_t, size);
  RETORCH_ARG(double, alpha) = 1e-4;
  RETORCH_ARG(double, beta) = 0.75;
  RETORCH_ARG(double, k) = 1.0;
};

class LocalResponseNormImpl : public Module {
 public:
  LocalResponseNormImpl(const LocalResponseNormOptions& options)  // NOLINT
      : Module("retorch::nn::LocalResponseNorm"), options(options) {}
  Tensor forward(const Tensor& input) override;
  LocalResponseNormOptions options;
};
RETORCH_MODULE(LocalResponseNorm);

}  // namespace retorch::nn
