// LR schedulers: the base (PyTorch's _LRScheduler) and the epoch-style schedules.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "retorch/optim/Optimizer.h"

namespace retorch::optim {

// Note [Recursive and closed-form schedules]
// PyTorch 1.13 computes most schedules recursively from the groups' current lr (get_lr),
// and only uses the closed form when step is given an epoch (SequentialLR does that at each
// milestone). The two differ in the last bits, and the recursive one composes with anything
// else that changes the lr, so both are kept, and step() / step_epoch() pick them the way
// PyTorch's step() / step(epoch) do.

/// The base of the epoch-style schedulers: sets each group's lr on every step().
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances one epoch (or iteration) and writes the new lrs into the optimizer.
  virtual void step();
  /// Jumps to `epoch`, by the closed form where there is one (PyTorch's step(epoch)).
  void step_epoch(int64_t epoch);
  /// The lrs the last step set, one per param group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return optimizer_; }

  /// Counters and lrs as tensors: last_epoch, step_count, base_lrs, last_lr (+ subclass keys).
  virtual OrderedDict<Tensor> state_dict() const;
  /// Restores state_dict() output; errors name the missing keys.
  virtual void load_state_dict(const OrderedDict<Tensor>& state_dict);

 protected:
  /// Records base_lrs from the groups (setting their initial_lr when last_epoch is -1).
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  /// PyTorch's _initial_step: every subclass constructor ends with it.
  void initial_step();
  /// The next lrs, computed recursively from the groups' current lrs.
  virtual std::vector<double> get_lr() = 0;
  /// The lrs at last_epoch_ in closed form, if the schedule has one.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  /// The groups' current lrs.
  std::vector<double> group_lrs() const;

  Optimizer& optimizer_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;

 private:
  void apply(const std::vector<double>& lrs);
  friend class SequentialLR;
};

/// Multiplies the lr by gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// Multiplies the lr by gamma at each milestone (repeated milestones multiply again).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1,
              int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  std::vector<int64_t> milestones_;  // sorted, with repeats
  double gamma_;
};

/// Multiplies the lr by gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double gamma_;
};

/// Cosine annealing from the base lr to eta_min over T_max epochs (no restarts).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0,
                    int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

/// Scales the lr linearly from start_factor to end_factor over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/// Runs schedulers one after another, switching at the milestones (e.g. warmup, then decay).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  void step() override;
  /// Adds each child's state under schedulers.<i>.
  OrderedDict<Tensor> state_dict() const override;
  void load_state_dict(const OrderedDict<Tensor>& state_dict) override;
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 protected:
  std::vector<double> get_lr() override { return last_lr_; }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

namespace detail {
/// The entries of `sd` under `prefix`, with the prefix removed.
OrderedDict<Tensor> sub_dict(const OrderedDict<Tensor>& sd, const std::string& prefix);
/// A 1-D float64 tensor of the values.
Tensor doubles_tensor(const std::vector<double>& v);
/// The values of a tensor as doubles.
std::vector<double> tensor_doubles(const Tensor& t);
/// sd[key], or an error naming the key and the scheduler.
const Tensor& require_key(const OrderedDict<Tensor>& sd, const std::string& key, const char* what);
}  // namespace detail

}  // namespace retorch::optim
