// ReduceLROnPlateau: lowers the lr when a metric stops improving (stepped with the metric).
#pragma once
#include <string>
#include <vector>

#include "retorch/optim/Optimizer.h"

namespace retorch::optim {

/// Options of ReduceLROnPlateau: ReduceLROnPlateauOptions().mode("max").patience(3).
struct ReduceLROnPlateauOptions {
  /// "min" (the metric should fall) or "max".
  RETORCH_ARG(std::string, mode) = "min";
  RETORCH_ARG(double, factor) = 0.1;
  RETORCH_ARG(int64_t, patience) = 10;
  RETORCH_ARG(double, threshold) = 1e-4;
  /// "rel" (threshold relative to the best) or "abs".
  RETORCH_ARG(std::string, threshold_mode) = "rel";
  RETORCH_ARG(int64_t, cooldown) = 0;
  /// One value for all groups, or one per group.
  RETORCH_ARG(std::vector<double>, min_lr) = {0.0};
  RETORCH_ARG(double, eps) = 1e-8;
};

/// Multiplies the lr by factor after `patience` steps without improvement of the metric.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  /// Records one epoch's metric and reduces the lrs if it has plateaued.
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  Optimizer& optimizer() const { return optimizer_; }

  /// last_epoch, best, num_bad_epochs, cooldown_counter, last_lr.
  OrderedDict<Tensor> state_dict() const;
  void load_state_dict(const OrderedDict<Tensor>& state_dict);

 private:
  bool is_better(double a, double best) const;

  Optimizer& optimizer_;
  ReduceLROnPlateauOptions options_;
  std::vector<double> min_lrs_;
  bool mode_min_, rel_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace retorch::optim
