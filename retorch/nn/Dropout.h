// Dropout modules: Dropout, Dropout2d, AlphaDropout, FeatureAlphaDropout (identity in eval).
#pragma once
#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT
  RETORCH_ARG(double, p);
  RETORCH_ARG(bool, inplace) = false;
};

/// The shared part: checks p, prints "Name(p=0.5, inplace=false)".
class DropoutImplBase : public Module {
 public:
  DropoutImplBase(const DropoutOptions& options, std::string name);
  void pretty_print(std::ostream& os) const override;
  DropoutOptions options;
};

class DropoutImpl : public DropoutImplBase {
 public:
  DropoutImpl(const DropoutOptions& options = {}) : DropoutImplBase(options, "retorch::nn::Dropout") {}  // NOLINT
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(Dropout);

class Dropout2dImpl : public DropoutImplBase {
 public:
  Dropout2dImpl(const DropoutOptions& options = {}) : DropoutImplBase(options, "retorch::nn::Dropout2d") {}  // NOLINT
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(Dropout2d);

class AlphaDropoutImpl : public DropoutImplBase {
 public:
  AlphaDropoutImpl(const DropoutOptions& options = {}) : DropoutImplBase(options, "retorch::nn::AlphaDropout") {}  // NOLINT
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(AlphaDropout);

class FeatureAlphaDropoutImpl : public DropoutImplBase {
 public:
  FeatureAlphaDropoutImpl(const DropoutOptions& options = {})  // NOLINT
      : DropoutImplBase(options, "retorch::nn::FeatureAlphaDropout") {}
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(FeatureAlphaDropout);

}  // namespace retorch::nn
