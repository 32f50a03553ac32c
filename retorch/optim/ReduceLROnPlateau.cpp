// ReduceLROnPlateau: PyTorch 1.13's plateau test, cooldown and min_lr clamp.
#include "retorch/optim/ReduceLROnPlateau.h"

#include <algorithm>
#include <limits>

#include "retorch/generated/Functions.h"
#include "retorch/optim/LRScheduler.h"

namespace retorch::optim {

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(optimizer), options_(std::move(options)) {
  RT_CHECK_VALUE(options_.factor() < 1.0, "Factor should be < 1.0.");
  const size_t n = optimizer_.param_groups().size();
  const auto& m = options_.min_lr();
  if (m.size() == 1) {
    min_lrs_.assign(n, m[0]);
  } else {
    RT_CHECK_VALUE(m.size() == n, "expected ", n, " min_lrs, got ", m.size());
    min_lrs_ = m;
  }
  RT_CHECK_VALUE(options_.mode() == "min" || options_.mode() == "max", "mode ", options_.mode(),
                 " is unknown!");
  RT_CHECK_VALUE(options_.threshold_mode() == "rel" || options_.threshold_mode() == "abs",
                 "threshold mode ", options_.threshold_mode(), " is unknown!");
  mode_min_ = options_.mode() == "min";
  rel_ = options_.threshold_mode() == "rel";
  best_ = mode_min_ ? std::numeric_limits<double>::infinity()
                    : -std::numeric_limits<double>::infinity();
  for (const auto& g : optimizer_.param_groups()) last_lr_.push_back(g.options().get_lr());
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  const double t = options_.threshold();
  if (mode_min_) return rel_ ? a < best * (1. - t) : a < best - t;
  return rel_ ? a > best * (t + 1.) : a > best + t;
}

void ReduceLROnPlateau::step(double metric) {
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (in_cooldown()) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  auto& groups = optimizer_.param_groups();
  if (num_bad_epochs_ > options_.patience()) {
    for (size_t i = 0; i < groups.size(); ++i) {
      double old_lr = groups[i].options().get_lr();
      double new_lr = std::max(old_lr * options_.factor(), min_lrs_[i]);
      if (old_lr - new_lr > options_.eps()) groups[i].options().set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown();
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& g : groups) last_lr_.push_back(g.options().get_lr());
}

OrderedDict<Tensor> ReduceLROnPlateau::state_dict() const {
  auto scalar = [](double v, ScalarType t) {
    return full(std::vector<int64_t>{}, v, TensorOptions(t));
  };
  OrderedDict<Tensor> out("scheduler state key");
  out.insert("last_epoch", scalar(double(last_epoch_), kLong));
  out.insert("best", scalar(best_, kDouble));
  out.insert("num_bad_epochs", scalar(double(num_bad_epochs_), kLong));
  out.insert("cooldown_counter", scalar(double(cooldown_counter_), kLong));
  out.insert("last_lr", detail::doubles_tensor(last_lr_));
  return out;
}

void ReduceLROnPlateau::load_state_dict(const OrderedDict<Tensor>& sd) {
  const char* what = "ReduceLROnPlateau";
  last_epoch_ = detail::require_key(sd, "last_epoch", what).item<int64_t>();
  best_ = detail::require_key(sd, "best", what).item<double>();
  num_bad_epochs_ = detail::require_key(sd, "num_bad_epochs", what).item<int64_t>();
  cooldown_counter_ = detail::require_key(sd, "cooldown_counter", what).item<int64_t>();
  last_lr_ = detail::tensor_doubles(detail::require_key(sd, "last_lr", what));
}

}  // namespace retorch::optim
