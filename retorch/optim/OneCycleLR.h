// OneCycleLR: the 1cycle policy (warm up to max_lr, anneal far below), cycling momentum too.
#pragma once
#include <string>
#include <vector>

#include "retorch/optim/LRScheduler.h"

namespace retorch::optim {

/// Options of OneCycleLR: OneCycleLROptions(0.1).total_steps(100).anneal_strategy("linear").
struct OneCycleLROptions {
  OneCycleLROptions(double max_lr) : max_lr_{max_lr} {}  // NOLINT (implicit)
  OneCycleLROptions(std::vector<double> max_lr) : max_lr_(std::move(max_lr)) {}  // NOLINT
  /// One value for all groups, or one per group.
  RETORCH_ARG(std::vector<double>, max_lr);
  /// Steps in the cycle; or leave 0 and give epochs and steps_per_epoch.
  RETORCH_ARG(int64_t, total_steps) = 0;
  RETORCH_ARG(int64_t, epochs) = 0;
  RETORCH_ARG(int64_t, steps_per_epoch) = 0;
  RETORCH_ARG(double, pct_start) = 0.3;
  /// "cos" or "linear".
  RETORCH_ARG(std::string, anneal_strategy) = "cos";
  RETORCH_ARG(bool, cycle_momentum) = true;
  RETORCH_ARG(double, base_momentum) = 0.85;
  RETORCH_ARG(double, max_momentum) = 0.95;
  RETORCH_ARG(double, div_factor) = 25.;
  RETORCH_ARG(double, final_div_factor) = 1e4;
  RETORCH_ARG(bool, three_phase) = false;
};

/// The 1cycle lr (and momentum, or Adam's beta1) schedule, stepped once per batch.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options, int64_t last_epoch = -1);
  int64_t total_steps() const { return total_steps_; }

 protected:
  std::vector<double> get_lr() override;

 private:
  enum class Anchor { kInitial, kMax, kMin, kMaxMomentum, kBaseMomentum };
  struct Phase {
    double end_step;
    Anchor start_lr, end_lr, start_momentum, end_momentum;
  };
  double value(Anchor a, size_t group) const;
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_;
  bool cos_, cycle_momentum_, use_beta1_ = false;
  std::vector<Phase> phases_;
  std::vector<double> initial_lrs_, max_lrs_, min_lrs_, max_momentums_, base_momentums_;
};

}  // namespace retorch::optim
