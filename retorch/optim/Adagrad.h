// Adagrad (with lr decay and an initial accumulator), torch.optim.Adagrad's math.
#pragma once
#include "retorch/optim/Optimizer.h"
#include "retorch/optim/TensorOpUpdates.h"

namespace retorch::optim {

/// Options of Adagrad: AdagradOptions(0.01).lr_decay(1e-3).initial_accumulator_value(0.1).
struct AdagradOptions : public OptimizerCloneableOptions<AdagradOptions> {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT (implicit like libtorch)
  RETORCH_ARG(double, lr);
  RETORCH_ARG(double, lr_decay) = 0;
  RETORCH_ARG(double, weight_decay) = 0;
  RETORCH_ARG(double, initial_accumulator_value) = 0;
  RETORCH_ARG(double, eps) = 1e-10;
  RETORCH_ARG(bool, maximize) = false;

 public:
  /// Calls f(name, field&) for every hyperparameter. See Note [Options as named numbers].
  template <typename F>
  void visit(F&& f) {
    f("lr", lr_);
    f("lr_decay", lr_decay_);
    f("weight_decay", weight_decay_);
    f("initial_accumulator_value", initial_accumulator_value_);
    f("eps", eps_);
    f("maximize", maximize_);
  }
};

/// Adagrad: per-coordinate steps scaled by the root of the summed squared gradients.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {});
  Adagrad(std::vector<OptimizerParamGroup> param_groups, AdagradOptions defaults = {});

 protected:
  void update(Tensor& param, const Tensor& grad, OptimizerOptions& options,
              OptimizerParamState& state) override;
  bool update_on_device(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                        OptimizerParamState& state) override {
    detail::adagrad_update_ops(param, grad, options, state);
    return true;
  }
  void validate(const OptimizerOptions& options) const override;
  std::vector<std::string> state_names() const override { return {"step", "sum"}; }
};

}  // namespace retorch::optim
