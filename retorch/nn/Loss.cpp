// Loss modules: each forward calls its loss op with the module's options.
#include "retorch/nn/Loss.h"

#include "retorch/generated/Functions.h"

namespace retorch::nn {

namespace {

std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

void check_reduction(const Module& m, const std::string& r) {
  RT_CHECK(r == "none" || r == "mean" || r == "sum", m.name(), ": ", r,
           " is not a valid value for reduction");
}

}  // namespace

// Constructors check the reduction and keep class weights as buffers (moved by to()).
#define RETORCH_LOSS_CTOR(Name)                                                   \
  Name##Impl::Name##Impl(const Name##Options& options_)                           \
      : Module("retorch::nn::" #Name), options(options_) {                        \
    check_reduction(*this, options.reduction());                                  \
  }
#define RETORCH_WEIGHTED_LOSS_CTOR(Name)                                          \
  Name##Impl::Name##Impl(const Name##Options& options_)                           \
      : Module("retorch::nn::" #Name), options(options_) {                        \
    check_reduction(*this, options.reduction());                                  \
    if (options.weight().defined()) options.weight() = register_buffer("weight", options.weight()); \
  }

RETORCH_LOSS_CTOR(L1Loss)
RETORCH_LOSS_CTOR(MSELoss)
RETORCH_LOSS_CTOR(SmoothL1Loss)
RETORCH_LOSS_CTOR(HuberLoss)
RETORCH_WEIGHTED_LOSS_CTOR(NLLLoss)
RETORCH_WEIGHTED_LOSS_CTOR(CrossEntropyLoss)
RETORCH_WEIGHTED_LOSS_CTOR(BCELoss)
RETORCH_LOSS_CTOR(PoissonNLLLoss)
RETORCH_LOSS_CTOR(SoftMarginLoss)
RETORCH_WEIGHTED_LOSS_CTOR(MultiMarginLoss)
RETORCH_LOSS_CTOR(HingeEmbeddingLoss)
RETORCH_LOSS_CTOR(MarginRankingLoss)
RETORCH_LOSS_CTOR(CosineEmbeddingLoss)
RETORCH_LOSS_CTOR(TripletMarginLoss)
RETORCH_LOSS_CTOR(CTCLoss)

// torch keeps pos_weight as a buffer next to weight, so both appear in the state_dict.
BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options_)
    : Module("retorch::nn::BCEWithLogitsLoss"), options(options_) {
  check_reduction(*this, options.reduction());
  if (options.weight().defined()) options.weight() = register_buffer("weight", options.weight());
  if (options.pos_weight().defined())
    options.pos_weight() = register_buffer("pos_weight", options.pos_weight());
}

// KLDivLoss also takes "batchmean" (the sum divided by the batch size), like torch.
KLDivLossImpl::KLDivLossImpl(const KLDivLossOptions& options_)
    : Module("retorch::nn::KLDivLoss"), options(options_) {
  if (options.reduction() != "batchmean") check_reduction(*this, options.reduction());
}
#undef RETORCH_LOSS_CTOR
#undef RETORCH_WEIGHTED_LOSS_CTOR

Tensor L1LossImpl::forward(const Tensor& x, const Tensor& y) {
  return l1_loss(x, y, options.reduction());
}
Tensor MSELossImpl::forward(const Tensor& x, const Tensor& y) {
  return mse_loss(x, y, options.reduction());
}
Tensor SmoothL1LossImpl::forward(const Tensor& x, const Tensor& y) {
  return smooth_l1_loss(x, y, options.reduction(), options.beta());
}
Tensor HuberLossImpl::forward(const Tensor& x, const Tensor& y) {
  return huber_loss(x, y, options.reduction(), options.delta());
}
Tensor NLLLossImpl::forward(const Tensor& x, const Tensor& y) {
  return nll_loss(x, y, opt(options.weight()), options.ignore_index(), options.reduction());
}
Tensor CrossEntropyLossImpl::forward(const Tensor& x, const Tensor& y) {
  return cross_entropy(x, y, opt(options.weight()), options.ignore_index(), options.reduction(),
                       options.label_smoothing());
}
Tensor BCELossImpl::forward(const Tensor& x, const Tensor& y) {
  return binary_cross_entropy(x, y, opt(options.weight()), options.reduction());
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& x, const Tensor& y) {
  return binary_cross_entropy_with_logits(x, y, opt(options.weight()), options.reduction(),
                                          opt(options.pos_weight()));
}
Tensor KLDivLossImpl::forward(const Tensor& x, const Tensor& y) {
  return kl_div(x, y, options.reduction(), options.log_target());
}
Tensor PoissonNLLLossImpl::forward(const Tensor& x, const Tensor& y) {
  return poisson_nll_loss(x, y, options.log_input(), options.full(), options.eps(),
                          options.reduction());
}
Tensor SoftMarginLossImpl::forward(const Tensor& x, const Tensor& y) {
  return soft_margin_loss(x, y, options.reduction());
}
Tensor MultiMarginLossImpl::forward(const Tensor& x, const Tensor& y) {
  return multi_margin_loss(x, y, options.p(), options.margin(), opt(options.weight()),
                           options.reduction());
}
Tensor HingeEmbeddingLossImpl::forward(const Tensor& x, const Tensor& y) {
  return hinge_embedding_loss(x, y, options.margin(), options.reduction());
}
Tensor MarginRankingLossImpl::forward(const Tensor& a, const Tensor& b, const Tensor& y) {
  return margin_ranking_loss(a, b, y, options.margin(), options.reduction());
}
Tensor CosineEmbeddingLossImpl::forward(const Tensor& a, const Tensor& b, const Tensor& y) {
  return cosine_embedding_loss(a, b, y, options.margin(), options.reduction());
}
Tensor TripletMarginLossImpl::forward(const Tensor& a, const Tensor& p, const Tensor& n) {
  return triplet_margin_loss(a, p, n, options.margin(), options.p(), options.eps(), options.swap(),
                             options.reduction());
}
Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets,
                            const Tensor& input_lengths, const Tensor& target_lengths) {
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, options.blank(),
                  options.reduction(), options.zero_infinity());
}

}  // namespace retorch::nn
