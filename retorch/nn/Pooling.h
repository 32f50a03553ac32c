// Pooling modules: MaxPool1d/2d, AvgPool2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d.
#pragma once
#include "retorch/nn/ExpandingArray.h"
#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

/// Max pooling options; stride defaults to the kernel size, as in torch.
template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  RETORCH_ARG(ExpandingArray<D>, kernel_size);
  RETORCH_ARG(ExpandingArray<D>, stride);
  RETORCH_ARG(ExpandingArray<D>, padding) = 0;
  RETORCH_ARG(ExpandingArray<D>, dilation) = 1;
  RETORCH_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;

class MaxPool1dImpl : public Module {
 public:
  MaxPool1dImpl(ExpandingArray<1> kernel_size) : MaxPool1dImpl(MaxPool1dOptions(kernel_size)) {}  // NOLINT
  MaxPool1dImpl(const MaxPool1dOptions& options) : Module("retorch::nn::MaxPool1d"), options(options) {}  // NOLINT
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  MaxPool1dOptions options;
};
RETORCH_MODULE(MaxPool1d);

class MaxPool2dImpl : public Module {
 public:
  MaxPool2dImpl(ExpandingArray<2> kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}  // NOLINT
  MaxPool2dImpl(const MaxPool2dOptions& options) : Module("retorch::nn::MaxPool2d"), options(options) {}  // NOLINT
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  MaxPool2dOptions options;
};
RETORCH_MODULE(MaxPool2d);

struct AvgPool2dOptions {
  AvgPool2dOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  RETORCH_ARG(ExpandingArray<2>, kernel_size);
  RETORCH_ARG(ExpandingArray<2>, stride);
  RETORCH_ARG(ExpandingArray<2>, padding) = 0;
  RETORCH_ARG(bool, ceil_mode) = false;
  RETORCH_ARG(bool, count_include_pad) = true;
  RETORCH_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

class AvgPool2dImpl : public Module {
 public:
  AvgPool2dImpl(ExpandingArray<2> kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}  // NOLINT
  AvgPool2dImpl(const AvgPool2dOptions& options) : Module("retorch::nn::AvgPool2d"), options(options) {}  // NOLINT
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  AvgPool2dOptions options;
};
RETORCH_MODULE(AvgPool2d);

struct AdaptivePool2dOptions {
  AdaptivePool2dOptions(ExpandingArray<2> output_size) : output_size_(output_size) {}  // NOLINT
  RETORCH_ARG(ExpandingArray<2>, output_size);
};
using AdaptiveAvgPool2dOptions = AdaptivePool2dOptions;
using AdaptiveMaxPool2dOptions = AdaptivePool2dOptions;

class AdaptiveAvgPool2dImpl : public Module {
 public:
  AdaptiveAvgPool2dImpl(ExpandingArray<2> output_size) : AdaptiveAvgPool2dImpl(AdaptiveAvgPool2dOptions(output_size)) {}  // NOLINT
  AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options)  // NOLINT
      : Module("retorch::nn::AdaptiveAvgPool2d"), options(options) {}
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  AdaptiveAvgPool2dOptions options;
};
RETORCH_MODULE(AdaptiveAvgPool2d);

class AdaptiveMaxPool2dImpl : public Module {
 public:
  AdaptiveMaxPool2dImpl(ExpandingArray<2> output_size) : AdaptiveMaxPool2dImpl(AdaptiveMaxPool2dOptions(output_size)) {}  // NOLINT
  AdaptiveMaxPool2dImpl(const AdaptiveMaxPool2dOptions& options)  // NOLINT
      : Module("retorch::nn::AdaptiveMaxPool2d"), options(options) {}
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  AdaptiveMaxPool2dOptions options;
};
RETORCH_MODULE(AdaptiveMaxPool2d);

}  // namespace retorch::nn
