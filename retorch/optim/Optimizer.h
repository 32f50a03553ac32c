// Optimizer base: param groups with their own options, per-parameter state, flat state dicts.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "retorch/core/Tensor.h"
#include "retorch/nn/Options.h"
#include "retorch/nn/OrderedDict.h"

namespace retorch::optim {

// Note [Options as named numbers]
// Every optimizer's options are a handful of numbers and flags. Besides the typed chained
// setters (SGDOptions(0.1).momentum(0.9)), each Options struct lists them by name through
// visit(): bools read as 0/1, Adam's betas as "beta1"/"beta2". That one table gives the
// generic get/set used by schedulers (lr, momentum), the flat state_dict
// (param_groups.<g>.<name>) and the Python param_groups dicts, with no per-class glue.

/// The hyperparameters of one param group; subclasses add typed fields (see SGDOptions).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  /// A deep copy with the same dynamic type.
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// Names of the numeric hyperparameters in a fixed order. See Note [Options as named numbers].
  virtual std::vector<std::string> keys() const = 0;
  /// Whether `key` names a hyperparameter of these options.
  bool has(const std::string& key) const;
  /// The value of a hyperparameter (bools as 0/1); errors on unknown keys.
  virtual double get(const std::string& key) const = 0;
  /// Sets a hyperparameter (bools from nonzero); errors on unknown keys.
  virtual void set(const std::string& key, double value) = 0;
  double get_lr() const { return get("lr"); }
  void set_lr(double lr) { set("lr", lr); }
  /// The lr a scheduler started from (PyTorch's group['initial_lr']); unset until one does.
  std::optional<double> initial_lr;
};

/// Implements keys/get/set for an Options type from its visit(f) table (see Note above).
template <typename Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  std::vector<std::string> keys() const override {
    std::vector<std::string> out;
    const_cast<Derived&>(static_cast<const Derived&>(*this)).visit([&](const char* name, auto&) {
      out.emplace_back(name);
    });
    return out;
  }
  double get(const std::string& key) const override {
    std::optional<double> out;
    const_cast<Derived&>(static_cast<const Derived&>(*this)).visit([&](const char* name, auto& v) {
      if (key == name) out = double(v);
    });
    RT_CHECK_KIND(out.has_value(), ErrorKind::kIndex, "optimizer options have no key '", key, "'");
    return *out;
  }
  void set(const std::string& key, double value) override {
    bool found = false;
    static_cast<Derived&>(*this).visit([&](const char* name, auto& v) {
      if (key != name) return;
      using V = std::decay_t<decltype(v)>;
      v = std::is_same_v<V, bool> ? V(value != 0) : V(value);
      found = true;
    });
    RT_CHECK_KIND(found, ErrorKind::kIndex, "optimizer options have no key '", key, "'");
  }
};

/// A list of parameters optimized with one set of options.
class OptimizerParamGroup {
 public:
  /// A group that takes the optimizer's defaults when added.
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& o)
      : params_(o.params_), options_(o.options_ ? o.options_->clone() : nullptr) {}
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(const OptimizerParamGroup& o);
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  /// The group's options (errors when it has none yet).
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

/// Per-parameter state buffers by name ("step", "exp_avg", "momentum_buffer", ...).
using OptimizerParamState = OrderedDict<Tensor>;
/// Re-evaluates the model and returns the loss (passed to step()).
using LossClosure = std::function<Tensor()>;

/// The base of all optimizers: owns param groups and per-parameter state.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Appends a group; it takes the defaults when it has no options. Params may not repeat.
  void add_param_group(const OptimizerParamGroup& param_group);
  /// One update of every parameter that has a gradient; with a closure, returns its loss.
  Tensor step(const LossClosure& closure = nullptr);
  /// Sets every gradient to undefined (set_to_none) or to zeros.
  void zero_grad(bool set_to_none = true);

  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  /// All parameters of all groups, in group order.
  std::vector<Tensor> parameters() const;
  const OptimizerOptions& defaults() const { return *defaults_; }
  OptimizerOptions& defaults() { return *defaults_; }
  /// The state of one parameter (empty until its first update).
  OptimizerParamState& state(const Tensor& param);
  /// How many times step() has run.
  int64_t step_count() const { return step_count_; }

  /// Flat state: param_groups.<g>.<key> and state.<g>.<i>.<name>. See Note [Flat optimizer state].
  OrderedDict<Tensor> state_dict() const;
  /// Restores state_dict() output exactly; errors name missing, unexpected or misshapen keys.
  void load_state_dict(const OrderedDict<Tensor>& state_dict);

 protected:
  explicit Optimizer(std::unique_ptr<OptimizerOptions> defaults) : defaults_(std::move(defaults)) {}
  /// Validates the defaults and adds the groups (called by subclass constructors, where the
  /// virtual validate() already dispatches to the subclass).
  void init(std::vector<OptimizerParamGroup> param_groups);
  /// Updates one parameter in place (grad is defined); called under NoGradGuard.
  virtual void update(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                      OptimizerParamState& state) = 0;
  /// The update as tensor ops, for a parameter in device memory (each op a kernel of the
  /// device); false where the optimizer has no such path (Note [Optimizer steps on device
  /// memory] in Optimizer.cpp).
  virtual bool update_on_device(Tensor& /*param*/, const Tensor& /*grad*/,
                                OptimizerOptions& /*options*/, OptimizerParamState& /*state*/) {
    return false;
  }
  /// update() on host copies of a parameter in device memory and of its state (the same Note).
  void update_on_host_copy(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                           OptimizerParamState& state);
  /// Checks a group's options, with PyTorch's ValueError messages.
  virtual void validate(const OptimizerOptions& options) const = 0;
  /// The state buffer names this optimizer may create (checked by load_state_dict).
  virtual std::vector<std::string> state_names() const = 0;

 private:
  std::vector<OptimizerParamGroup> param_groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, OptimizerParamState> state_;
  int64_t step_count_ = 0;
};

namespace detail {
/// A double as Python's repr prints it ("-1.0", "1e-08"), for PyTorch-shaped messages.
std::string py_float(double v);
/// Checks grad matches param (shape, dtype) and the dtype is floating point.
void check_update_args(const Tensor& param, const Tensor& grad, const char* optimizer);
/// check_update_args, the dtype float32/float64 and both in host memory (the fused loops).
void check_fusable(const Tensor& param, const Tensor& grad, const char* optimizer);
/// A new 0-dim float32 tensor holding v (step counters, like PyTorch's torch.tensor(0.)).
Tensor step_tensor(double v);
/// The parameter's step counter (made on first use, a cpu float32 scalar as PyTorch's)
/// advanced by one; its new value.
double advance_step(OptimizerParamState& state);
/// The parameter's state buffer `name`, made on first use: zeros like `like`, contiguous.
Tensor state_buffer(OptimizerParamState& state, const char* name, const Tensor& like);
/// Runs f(contiguous_param) and writes the result back when param is not contiguous.
void with_contiguous(Tensor& param, const std::function<void(Tensor&)>& f);
}  // namespace detail

}  // namespace retorch::optim
