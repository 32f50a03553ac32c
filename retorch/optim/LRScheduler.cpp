// LR schedulers: PyTorch 1.13's recursive and closed forms, term by term in the same order.
#include "retorch/optim/LRScheduler.h"

#include <algorithm>
#include <cmath>

#include "retorch/core/TensorFactory.h"
#include "retorch/generated/Functions.h"

namespace retorch::optim {

namespace {

constexpr double kPi = 3.141592653589793;

Tensor int_scalar(int64_t v) {
  return full(std::vector<int64_t>{}, v, TensorOptions(kLong));
}

int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

}  // namespace

namespace detail {

OrderedDict<Tensor> sub_dict(const OrderedDict<Tensor>& sd, const std::string& prefix) {
  OrderedDict<Tensor> out;
  for (const auto& item : sd)
    if (item.key.rfind(prefix, 0) == 0) out.insert(item.key.substr(prefix.size()), item.value);
  return out;
}

Tensor doubles_tensor(const std::vector<double>& v) {
  return tensor(TensorData(v), TensorOptions(kDouble));
}

std::vector<double> tensor_doubles(const Tensor& t) {
  Tensor c = t.detach().to(kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

const Tensor& require_key(const OrderedDict<Tensor>& sd, const std::string& key, const char* what) {
  const Tensor* t = sd.find(key);
  RT_CHECK_VALUE(t != nullptr, "Error in loading state_dict for ", what, ": missing key '", key,
                 "'");
  return *t;
}

}  // namespace detail

// ---- LRScheduler

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch)
    : optimizer_(optimizer), last_epoch_(last_epoch) {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    auto& o = groups[i].options();
    if (last_epoch == -1) {
      if (!o.initial_lr) o.initial_lr = o.get_lr();
    } else {
      RT_CHECK_INDEX(o.initial_lr.has_value(),
                     "param 'initial_lr' is not specified in "
                     "param_groups[",
                     i, "] when resuming an optimizer");
    }
    base_lrs_.push_back(*o.initial_lr);
  }
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (const auto& g : optimizer_.param_groups()) out.push_back(g.options().get_lr());
  return out;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size() && i < lrs.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step_epoch(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  auto closed = closed_form_lr();
  apply(closed ? *closed : get_lr());
}

OrderedDict<Tensor> LRScheduler::state_dict() const {
  OrderedDict<Tensor> out("scheduler state key");
  out.insert("last_epoch", int_scalar(last_epoch_));
  out.insert("step_count", int_scalar(step_count_));
  out.insert("base_lrs", detail::doubles_tensor(base_lrs_));
  out.insert("last_lr", detail::doubles_tensor(last_lr_));
  return out;
}

void LRScheduler::load_state_dict(const OrderedDict<Tensor>& sd) {
  const char* what = "LR scheduler";
  last_epoch_ = detail::require_key(sd, "last_epoch", what).item<int64_t>();
  step_count_ = detail::require_key(sd, "step_count", what).item<int64_t>();
  base_lrs_ = detail::tensor_doubles(detail::require_key(sd, "base_lrs", what));
  last_lr_ = detail::tensor_doubles(detail::require_key(sd, "last_lr", what));
}

// ---- StepLR

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), step_size_(step_size), gamma_(gamma) {
  RT_CHECK_VALUE(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (auto& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> out;
  const int64_t k =
      last_epoch_ >= 0 ? last_epoch_ / step_size_ : -((-last_epoch_ + step_size_ - 1) / step_size_);
  for (double base : base_lrs_) out.push_back(base * std::pow(gamma_, double(k)));
  return out;
}

// ---- MultiStepLR

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma,
                         int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  auto lrs = group_lrs();
  auto n = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (n == 0) return lrs;
  for (auto& lr : lrs) lr = lr * std::pow(gamma_, double(n));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  auto k =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> out;
  for (double base : base_lrs_) out.push_back(base * std::pow(gamma_, double(k)));
  return out;
}

// ---- ExponentialLR

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (auto& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> out;
  for (double base : base_lrs_) out.push_back(base * std::pow(gamma_, double(last_epoch_)));
  return out;
}

// ---- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min,
                                     int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), T_max_(T_max), eta_min_(eta_min) {
  RT_CHECK_VALUE(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  auto lrs = group_lrs();
  const double e = double(last_epoch_), T = double(T_max_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1 + std::cos(e * kPi / T)) / 2;
  } else if (py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
  } else {
    for (auto& lr : lrs)
      lr = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lr - eta_min_) +
           eta_min_;
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> out;
  const double e = double(last_epoch_), T = double(T_max_);
  for (double base : base_lrs_)
    out.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(kPi * e / T)) / 2);
  return out;
}

// ---- LinearLR

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  RT_CHECK_VALUE(!(start_factor > 1.0 || start_factor < 0),
                 "Starting multiplicative factor expected to be between 0 and 1.");
  RT_CHECK_VALUE(!(end_factor > 1.0 || end_factor < 0),
                 "Ending multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (auto& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double diff = end_factor_ - start_factor_;
  for (auto& lr : lrs)
    lr = lr * (1. + diff / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * diff));
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> out;
  const double e = double(std::min(total_iters_, last_epoch_));
  for (double base : base_lrs_)
    out.push_back(base *
                  (start_factor_ + (end_factor_ - start_factor_) * e / double(total_iters_)));
  return out;
}

// ---- SequentialLR

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  RT_CHECK_VALUE(!schedulers_.empty(), "SequentialLR expects at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i)
    RT_CHECK_VALUE(&schedulers_[i]->optimizer() == &optimizer,
                   "Sequential Schedulers expects all schedulers to belong to the same optimizer, "
                   "but got schedulers at index ",
                   i, " to be different than the optimizer passed in.");
  RT_CHECK_VALUE(milestones_.size() == schedulers_.size() - 1,
                 "Sequential Schedulers expects number of schedulers provided to be one more "
                 "than the number of milestone points, but got number of schedulers ",
                 schedulers_.size(), " and the number of milestones to be equal to ",
                 milestones_.size());
  last_epoch_ = last_epoch + 1;
  // Undo the steps the children took when they were built, then restart the first one.
  for (auto& g : optimizer_.param_groups()) g.options().set_lr(*g.options().initial_lr);
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  size_t idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  auto& s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s->step_epoch(0);
  else
    s->step();
  last_lr_ = s->get_last_lr();
}

OrderedDict<Tensor> SequentialLR::state_dict() const {
  OrderedDict<Tensor> out = LRScheduler::state_dict();
  for (size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& item : schedulers_[i]->state_dict())
      out.insert("schedulers." + std::to_string(i) + "." + item.key, item.value);
  return out;
}

void SequentialLR::load_state_dict(const OrderedDict<Tensor>& sd) {
  LRScheduler::load_state_dict(sd);
  for (size_t i = 0; i < schedulers_.size(); ++i)
    schedulers_[i]->load_state_dict(detail::sub_dict(sd, "schedulers." + std::to_string(i) + "."));
}

}  // namespace retorch::optim
