// Linear-family modules: Identity, Linear, Bilinear, Flatten, Unflatten.
#pragma once
#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

/// Returns its input unchanged.
class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("retorch::nn::Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
};
RETORCH_MODULE(Identity);

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  RETORCH_ARG(int64_t, in_features);
  RETORCH_ARG(int64_t, out_features);
  RETORCH_ARG(bool, bias) = true;
};

/// y = x W^T + b, initialized like torch (kaiming_uniform a=sqrt(5), bias U(+-1/sqrt(in))).
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  /// Re-creates and re-initializes the parameters.
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;

  LinearOptions options;
  Tensor weight, bias;
};
RETORCH_MODULE(Linear);

struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  RETORCH_ARG(int64_t, in1_features);
  RETORCH_ARG(int64_t, in2_features);
  RETORCH_ARG(int64_t, out_features);
  RETORCH_ARG(bool, bias) = true;
};

/// y = x1^T A x2 + b.
class BilinearImpl : public Module {
 public:
  BilinearImpl(int64_t in1, int64_t in2, int64_t out) : BilinearImpl(BilinearOptions(in1, in2, out)) {}
  explicit BilinearImpl(const BilinearOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input1, const Tensor& input2);
  void pretty_print(std::ostream& os) const override;

  BilinearOptions options;
  Tensor weight, bias;
};
RETORCH_MODULE(Bilinear);

struct FlattenOptions {
  RETORCH_ARG(int64_t, start_dim) = 1;
  RETORCH_ARG(int64_t, end_dim) = -1;
};

/// Flattens dims [start_dim, end_dim] into one.
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {})
      : Module("retorch::nn::Flatten"), options(options) {}
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  FlattenOptions options;
};
RETORCH_MODULE(Flatten);

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  RETORCH_ARG(int64_t, dim);
  RETORCH_ARG(std::vector<int64_t>, sizes);
};

/// Splits dim into sizes.
class UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes)
      : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(const UnflattenOptions& options)
      : Module("retorch::nn::Unflatten"), options(options) {}
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  UnflattenOptions options;
};
RETORCH_MODULE(Unflatten);

}  // namespace retorch::nn
