// Activation modules: every torch.nn activation as a module over the pointwise ops.
#pragma once
#include <string>

#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

// A parameterless activation `Name` whose forward is `fn(input)`.
#define RETORCH_ACTIVATION(Name)                                            \
  class Name##Impl : public Module {                                        \
   public:                                                                  \
    Name##Impl() : Module("retorch::nn::" #Name) {}                         \
    Tensor forward(const Tensor& input) override;                          \
    void pretty_print(std::ostream& os) const override { os << name() << "()"; } \
  };                                                                        \
  RETORCH_MODULE(Name)

RETORCH_ACTIVATION(ReLU);
RETORCH_ACTIVATION(ReLU6);
RETORCH_ACTIVATION(SELU);
RETORCH_ACTIVATION(SiLU);
RETORCH_ACTIVATION(Mish);
RETORCH_ACTIVATION(Sigmoid);
RETORCH_ACTIVATION(Tanh);
RETORCH_ACTIVATION(Softsign);
RETORCH_ACTIVATION(Hardswish);
RETORCH_ACTIVATION(Hardsigmoid);
RETORCH_ACTIVATION(LogSigmoid);
RETORCH_ACTIVATION(Tanhshrink);
RETORCH_ACTIVATION(Softmax2d);
#undef RETORCH_ACTIVATION

// An activation `Name` with an Options struct `NameOptions` holding its constants.
#define RETORCH_ACTIVATION_WITH_OPTIONS(Name)                                      \
  class Name##Impl : public Module {                                               \
   public:                                                                         \
    Name##Impl(const Name##Options& options = {})                                  \
        : Module("retorch::nn::" #Name), options(options) {}                       \
    Tensor forward(const Tensor& input) override;                                 \
    void pretty_print(std::ostream& os) const override;                           \
    Name##Options options;                                                         \
  };                                                                               \
  RETORCH_MODULE(Name)

struct LeakyReLUOptions {
  RETORCH_ARG(double, negative_slope) = 1e-2;
  RETORCH_ARG(bool, inplace) = false;
};
RETORCH_ACTIVATION_WITH_OPTIONS(LeakyReLU);

struct ELUOptions {
  RETORCH_ARG(double, alpha) = 1.0;
  RETORCH_ARG(bool, inplace) = false;
};
RETORCH_ACTIVATION_WITH_OPTIONS(ELU);

struct CELUOptions {
  RETORCH_ARG(double, alpha) = 1.0;
  RETORCH_ARG(bool, inplace) = false;
};
RETORCH_ACTIVATION_WITH_OPTIONS(CELU);

struct GELUOptions {
  /// "none" or "tanh".
  RETORCH_ARG(std::string, approximate) = "none";
};
RETORCH_ACTIVATION_WITH_OPTIONS(GELU);

struct SoftplusOptions {
  RETORCH_ARG(double, beta) = 1.0;
  RETORCH_ARG(double, threshold) = 20.0;
};
RETORCH_ACTIVATION_WITH_OPTIONS(Softplus);

struct HardtanhOptions {
  RETORCH_ARG(double, min_val) = -1.0;
  RETORCH_ARG(double, max_val) = 1.0;
  RETORCH_ARG(bool, inplace) = false;
};
RETORCH_ACTIVATION_WITH_OPTIONS(Hardtanh);

struct SoftshrinkOptions {
  RETORCH_ARG(double, lambda) = 0.5;
};
RETORCH_ACTIVATION_WITH_OPTIONS(Softshrink);

struct HardshrinkOptions {
  RETORCH_ARG(double, lambda) = 0.5;
};
RETORCH_ACTIVATION_WITH_OPTIONS(Hardshrink);

struct RReLUOptions {
  RETORCH_ARG(double, lower) = 1.0 / 8.0;
  RETORCH_ARG(double, upper) = 1.0 / 3.0;
  RETORCH_ARG(bool, inplace) = false;
};
RETORCH_ACTIVATION_WITH_OPTIONS(RReLU);

struct GLUOptions {
  RETORCH_ARG(int64_t, dim) = -1;
};
RETORCH_ACTIVATION_WITH_OPTIONS(GLU);

/// Options of the activations that need a dim (Softmax, LogSoftmax, Softmin).
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  RETORCH_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;
using SoftminOptions = SoftmaxOptions;

#define RETORCH_DIM_ACTIVATION(Name)                                                  \
  class Name##Impl : public Module {                                                  \
   public:                                                                            \
    Name##Impl(const SoftmaxOptions& options) : Module("retorch::nn::" #Name), options(options) {} \
    Tensor forward(const Tensor& input) override;                                    \
    void pretty_print(std::ostream& os) const override {                             \
      os << name() << "(dim=" << options.dim() << ")";                               \
    }                                                                                 \
    SoftmaxOptions options;                                                           \
  };                                                                                  \
  RETORCH_MODULE(Name)

RETORCH_DIM_ACTIVATION(Softmax);
RETORCH_DIM_ACTIVATION(LogSoftmax);
RETORCH_DIM_ACTIVATION(Softmin);
#undef RETORCH_DIM_ACTIVATION

struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  RETORCH_ARG(double, threshold);
  RETORCH_ARG(double, value);
  RETORCH_ARG(bool, inplace) = false;
};

class ThresholdImpl : public Module {
 public:
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  ThresholdImpl(const ThresholdOptions& options)  // NOLINT
      : Module("retorch::nn::Threshold"), options(options) {}
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  ThresholdOptions options;
};
RETORCH_MODULE(Threshold);

struct PReLUOptions {
  RETORCH_ARG(int64_t, num_parameters) = 1;
  RETORCH_ARG(double, init) = 0.25;
};

/// Leaky ReLU with a learned slope (one, or one per channel).
class PReLUImpl : public Module {
 public:
  PReLUImpl(const PReLUOptions& options = {});  // NOLINT
  Tensor forward(const Tensor& input) override;
  void pretty_print(std::ostream& os) const override;
  PReLUOptions options;
  Tensor weight;
};
RETORCH_MODULE(PReLU);

#undef RETORCH_ACTIVATION_WITH_OPTIONS

}  // namespace retorch::nn
