// OneCycleLR: phases of cosine or linear annealing between initial, max and min lr.
#include "retorch/optim/OneCycleLR.h"

#include <cmath>

namespace retorch::optim {

namespace {

std::vector<double> per_group(const std::vector<double>& v, size_t n, const char* name) {
  if (v.size() == 1) return std::vector<double>(n, v[0]);
  RT_CHECK_VALUE(v.size() == n, "expected ", n, " values for ", name, ", got ", v.size());
  return v;
}

// The schedule must be known before the base constructor's initial step, so the options are
// checked and the groups' initial_lr set here, in the base-class initializer.
Optimizer& prepare(Optimizer& optimizer, const OneCycleLROptions& o, int64_t last_epoch) {
  RT_CHECK_VALUE(o.total_steps() > 0 || o.epochs() > 0 || o.steps_per_epoch() > 0,
                 "You must define either total_steps OR (epochs AND steps_per_epoch)");
  if (o.total_steps() == 0) {
    RT_CHECK_VALUE(o.epochs() > 0, "Expected positive integer epochs, but got ", o.epochs());
    RT_CHECK_VALUE(o.steps_per_epoch() > 0, "Expected positive integer steps_per_epoch, but got ",
                   o.steps_per_epoch());
  } else {
    RT_CHECK_VALUE(o.total_steps() > 0, "Expected positive integer total_steps, but got ",
                   o.total_steps());
  }
  RT_CHECK_VALUE(o.pct_start() >= 0 && o.pct_start() <= 1,
                 "Expected float between 0 and 1 pct_start, but got ",
                 detail::py_float(o.pct_start()));
  RT_CHECK_VALUE(o.anneal_strategy() == "cos" || o.anneal_strategy() == "linear",
                 "anneal_strategy must by one of 'cos' or 'linear', instead got ",
                 o.anneal_strategy());
  auto& groups = optimizer.param_groups();
  auto max_lrs = per_group(o.max_lr(), groups.size(), "max_lr");
  if (last_epoch == -1)
    for (size_t i = 0; i < groups.size(); ++i)
      groups[i].options().initial_lr = max_lrs[i] / o.div_factor();
  if (o.cycle_momentum()) {
    const auto& d = optimizer.defaults();
    RT_CHECK_VALUE(d.has("momentum") || d.has("beta1"),
                   "optimizer must support momentum with `cycle_momentum` option enabled");
    if (last_epoch == -1)
      for (auto& g : groups)
        g.options().set(d.has("beta1") ? "beta1" : "momentum", o.max_momentum());
  }
  return optimizer;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& o, int64_t last_epoch)
    : LRScheduler(prepare(optimizer, o, last_epoch), last_epoch),
      total_steps_(o.total_steps() > 0 ? o.total_steps() : o.epochs() * o.steps_per_epoch()),
      cos_(o.anneal_strategy() == "cos"),
      cycle_momentum_(o.cycle_momentum()) {
  const double total = double(total_steps_), pct = o.pct_start();
  if (o.three_phase()) {
    phases_ = {
        {pct * total - 1, Anchor::kInitial, Anchor::kMax, Anchor::kMaxMomentum,
         Anchor::kBaseMomentum},
        {2 * pct * total - 2, Anchor::kMax, Anchor::kInitial, Anchor::kBaseMomentum,
         Anchor::kMaxMomentum},
        {total - 1, Anchor::kInitial, Anchor::kMin, Anchor::kMaxMomentum, Anchor::kMaxMomentum}};
  } else {
    phases_ = {
        {pct * total - 1, Anchor::kInitial, Anchor::kMax, Anchor::kMaxMomentum,
         Anchor::kBaseMomentum},
        {total - 1, Anchor::kMax, Anchor::kMin, Anchor::kBaseMomentum, Anchor::kMaxMomentum}};
  }
  const size_t n = optimizer_.param_groups().size();
  max_lrs_ = per_group(o.max_lr(), n, "max_lr");
  for (size_t i = 0; i < n; ++i) {
    initial_lrs_.push_back(max_lrs_[i] / o.div_factor());
    min_lrs_.push_back(initial_lrs_[i] / o.final_div_factor());
  }
  max_momentums_.assign(n, o.max_momentum());
  base_momentums_.assign(n, o.base_momentum());
  use_beta1_ = optimizer_.defaults().has("beta1");
  initial_step();
}

double OneCycleLR::value(Anchor a, size_t g) const {
  switch (a) {
    case Anchor::kInitial:
      return initial_lrs_[g];
    case Anchor::kMax:
      return max_lrs_[g];
    case Anchor::kMin:
      return min_lrs_[g];
    case Anchor::kMaxMomentum:
      return max_momentums_[g];
    case Anchor::kBaseMomentum:
      return base_momentums_[g];
  }
  return 0;
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (cos_) {
    double cos_out = std::cos(3.141592653589793 * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  RT_CHECK_VALUE(step_num <= total_steps_, "Tried to step ", step_num + 1,
                 " times. The specified number of total steps is ", total_steps_);
  auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t g = 0; g < groups.size(); ++g) {
    double start_step = 0, lr = 0, momentum = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (double(step_num) <= ph.end_step || i == phases_.size() - 1) {
        double pct = (double(step_num) - start_step) / (ph.end_step - start_step);
        lr = anneal(value(ph.start_lr, g), value(ph.end_lr, g), pct);
        if (cycle_momentum_)
          momentum = anneal(value(ph.start_momentum, g), value(ph.end_momentum, g), pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (cycle_momentum_) groups[g].options().set(use_beta1_ ? "beta1" : "momentum", momentum);
  }
  return lrs;
}

}  // namespace retorch::optim
