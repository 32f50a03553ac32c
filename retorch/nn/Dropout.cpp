// Dropout modules: forward through the dropout ops in training mode only.
#include "retorch/nn/Dropout.h"

#include "retorch/generated/Functions.h"

namespace retorch::nn {

DropoutImplBase::DropoutImplBase(const DropoutOptions& options_, std::string name)
    : Module(std::move(name)), options(options_) {
  RT_CHECK(options.p() >= 0.0 && options.p() <= 1.0, this->name(),
           ": dropout probability has to be between 0 and 1, but got ", options.p());
}

void DropoutImplBase::pretty_print(std::ostream& os) const {
  os << std::boolalpha << name() << "(p=" << options.p() << ", inplace=" << options.inplace() << ")";
}

Tensor DropoutImpl::forward(const Tensor& input) {
  if (options.inplace() && is_training()) return dropout_(input, options.p(), true);
  return dropout(input, options.p(), is_training());
}

Tensor Dropout2dImpl::forward(const Tensor& input) {
  return dropout2d(input, options.p(), is_training(), options.inplace());
}

Tensor AlphaDropoutImpl::forward(const Tensor& input) {
  return alpha_dropout(input, options.p(), is_training());
}

Tensor FeatureAlphaDropoutImpl::forward(const Tensor& input) {
  return feature_alpha_dropout(input, options.p(), is_training());
}

}  // namespace retorch::nn
