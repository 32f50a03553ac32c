// Normalization modules: running statistics, default initialization, forward, printing.
#include "retorch/nn/Normalization.h"

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/nn/Init.h"

namespace retorch::nn {

namespace {

std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

}  // namespace

BatchNormImplBase::BatchNormImplBase(const BatchNormOptions& options_, std::string name,
                                     std::vector<int64_t> dims)
    : Module(std::move(name)), options(options_), dims_(std::move(dims)) {
  const int64_t C = options.num_features();
  RT_CHECK(C > 0, this->name(), ": num_features must be positive, got ", C);
  if (options.affine()) {
    weight = register_parameter("weight", retorch::empty({C}));
    bias = register_parameter("bias", retorch::empty({C}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({C}));
    running_var = register_buffer("running_var", ones({C}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, TensorOptions(kLong)));
  }
  reset_parameters();
}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  init::zeros_(num_batches_tracked);
}

void BatchNormImplBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormImplBase::forward(const Tensor& input) {
  bool ok = false;
  for (int64_t d : dims_) ok = ok || input.dim() == d;
  RT_CHECK(ok, name(), ": expected ", dims_.size() == 1 ? std::to_string(dims_[0]) + "D" : "2D or 3D",
           " input (got ", input.dim(), "D input of size ", input.sizes(), ")");
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    if (!options.momentum()) factor = 1.0 / double(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch_stats = is_training() || !running_mean.defined();
  const bool pass_stats = !is_training() || options.track_running_stats();
  return batch_norm(input, opt(weight), opt(bias), pass_stats ? opt(running_mean) : std::nullopt,
                    pass_stats ? opt(running_var) : std::nullopt, use_batch_stats, factor,
                    options.eps(), false);
}

void BatchNormImplBase::pretty_print(std::ostream& os) const {
  os << std::boolalpha << name() << "(" << options.num_features() << ", eps=" << options.eps()
     << ", momentum=";
  if (options.momentum()) {
    os << *options.momentum();
  } else {
    os << "None";
  }
  os << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats()
     << ")";
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_)
    : Module("retorch::nn::LayerNorm"), options(options_) {
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", retorch::empty(options.normalized_shape()));
    bias = register_parameter("bias", retorch::empty(options.normalized_shape()));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return layer_norm(input, options.normalized_shape(), opt(weight), opt(bias), options.eps());
}

void LayerNormImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "retorch::nn::LayerNorm(" << IntArrayRef(options.normalized_shape())
     << ", elementwise_affine=" << options.elementwise_affine() << ", eps=" << options.eps() << ")";
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_)
    : Module("retorch::nn::GroupNorm"), options(options_) {
  RT_CHECK(options.num_groups() > 0 && options.num_channels() % options.num_groups() == 0,
           "GroupNorm: num_channels (", options.num_channels(),
           ") must be divisible by num_groups (", options.num_groups(), ")");
  if (options.affine()) {
    weight = register_parameter("weight", ones({options.num_channels()}));
    bias = register_parameter("bias", zeros({options.num_channels()}));
  }
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  return group_norm(input, options.num_groups(), opt(weight), opt(bias), options.eps());
}

void GroupNormImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "retorch::nn::GroupNorm(" << options.num_groups() << ", "
     << options.num_channels() << ", eps=" << options.eps() << ", affine=" << options.affine() << ")";
}

RMSNormImpl::RMSNormImpl(const RMSNormOptions& options_)
    : Module("retorch::nn::RMSNorm"), options(options_) {
  if (options.elementwise_affine())
    weight = register_parameter("weight", ones(options.normalized_shape()));
}

Tensor RMSNormImpl::forward(const Tensor& input) {
  return rms_norm(input, options.normalized_shape(), opt(weight), options.eps());
}

void RMSNormImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "retorch::nn::RMSNorm(" << IntArrayRef(options.normalized_shape())
     << ", elementwise_affine=" << options.elementwise_affine() << ")";
}

Tensor LocalResponseNormImpl::forward(const Tensor& input) {
  return local_response_norm(input, options.size(), options.alpha(), options.beta(), options.k());
}

}  // namespace retorch::nn
