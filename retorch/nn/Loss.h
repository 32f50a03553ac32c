// Loss modules: every torch.nn loss as a module holding its options (reduction, weights, ...).
#pragma once
#include <string>

#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

// A loss `Name` with options `NameOptions` and forward(input, target).
#define RETORCH_LOSS(Name)                                                        \
  class Name##Impl : public Module {                                              \
   public:                                                                        \
    Name##Impl(const Name##Options& options = {});                                \
    Tensor forward(const Tensor& input, const Tensor& target);                    \
    void pretty_print(std::ostream& os) const override { os << name() << "()"; } \
    Name##Options options;                                                        \
  };                                                                              \
  RETORCH_MODULE(Name)

// A loss `Name` over three tensors (two inputs and a target, or anchor/positive/negative).
#define RETORCH_LOSS3(Name)                                                       \
  class Name##Impl : public Module {                                              \
   public:                                                                        \
    Name##Impl(const Name##Options& options = {});                                \
    Tensor forward(const Tensor& a, const Tensor& b, const Tensor& c);            \
    void pretty_print(std::ostream& os) const override { os << name() << "()"; } \
    Name##Options options;                                                        \
  };                                                                              \
  RETORCH_MODULE(Name)

/// "none", "mean" or "sum".
#define RETORCH_REDUCTION RETORCH_ARG(std::string, reduction) = "mean"

struct L1LossOptions { RETORCH_REDUCTION; };
RETORCH_LOSS(L1Loss);
struct MSELossOptions { RETORCH_REDUCTION; };
RETORCH_LOSS(MSELoss);
struct SmoothL1LossOptions {
  RETORCH_REDUCTION;
  RETORCH_ARG(double, beta) = 1.0;
};
RETORCH_LOSS(SmoothL1Loss);
struct HuberLossOptions {
  RETORCH_REDUCTION;
  RETORCH_ARG(double, delta) = 1.0;
};
RETORCH_LOSS(HuberLoss);
struct NLLLossOptions {
  RETORCH_ARG(Tensor, weight) = {};
  RETORCH_ARG(int64_t, ignore_index) = -100;
  RETORCH_REDUCTION;
};
RETORCH_LOSS(NLLLoss);
struct CrossEntropyLossOptions {
  RETORCH_ARG(Tensor, weight) = {};
  RETORCH_ARG(int64_t, ignore_index) = -100;
  RETORCH_REDUCTION;
  RETORCH_ARG(double, label_smoothing) = 0.0;
};
RETORCH_LOSS(CrossEntropyLoss);
struct BCELossOptions {
  RETORCH_ARG(Tensor, weight) = {};
  RETORCH_REDUCTION;
};
RETORCH_LOSS(BCELoss);
struct BCEWithLogitsLossOptions {
  RETORCH_ARG(Tensor, weight) = {};
  RETORCH_REDUCTION;
  RETORCH_ARG(Tensor, pos_weight) = {};
};
RETORCH_LOSS(BCEWithLogitsLoss);
struct KLDivLossOptions {
  RETORCH_REDUCTION;
  RETORCH_ARG(bool, log_target) = false;
};
RETORCH_LOSS(KLDivLoss);
struct PoissonNLLLossOptions {
  RETORCH_ARG(bool, log_input) = true;
  RETORCH_ARG(bool, full) = false;
  RETORCH_ARG(double, eps) = 1e-8;
  RETORCH_REDUCTION;
};
RETORCH_LOSS(PoissonNLLLoss);
struct SoftMarginLossOptions { RETORCH_REDUCTION; };
RETORCH_LOSS(SoftMarginLoss);
struct MultiMarginLossOptions {
  RETORCH_ARG(int64_t, p) = 1;
  RETORCH_ARG(double, margin) = 1.0;
  RETORCH_ARG(Tensor, weight) = {};
  RETORCH_REDUCTION;
};
RETORCH_LOSS(MultiMarginLoss);
struct HingeEmbeddingLossOptions {
  RETORCH_ARG(double, margin) = 1.0;
  RETORCH_REDUCTION;
};
RETORCH_LOSS(HingeEmbeddingLoss);
struct MarginRankingLossOptions {
  RETORCH_ARG(double, margin) = 0.0;
  RETORCH_REDUCTION;
};
RETORCH_LOSS3(MarginRankingLoss);
struct CosineEmbeddingLossOptions {
  RETORCH_ARG(double, margin) = 0.0;
  RETORCH_REDUCTION;
};
RETORCH_LOSS3(CosineEmbeddingLoss);
struct TripletMarginLossOptions {
  RETORCH_ARG(double, margin) = 1.0;
  RETORCH_ARG(double, p) = 2.0;
  RETORCH_ARG(double, eps) = 1e-6;
  RETORCH_ARG(bool, swap) = false;
  RETORCH_REDUCTION;
};
RETORCH_LOSS3(TripletMarginLoss);

struct CTCLossOptions {
  RETORCH_ARG(int64_t, blank) = 0;
  RETORCH_REDUCTION;
  RETORCH_ARG(bool, zero_infinity) = false;
};

/// Connectionist temporal classification over log_probs [T, N, C].
class CTCLossImpl : public Module {
 public:
  CTCLossImpl(const CTCLossOptions& options = {});  // NOLINT
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  CTCLossOptions options;
};
RETORCH_MODULE(CTCLoss);

#undef RETORCH_LOSS
#undef RETORCH_LOSS3
#undef RETORCH_REDUCTION

}  // namespace retorch::nn
