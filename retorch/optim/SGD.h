// SGD with momentum, dampening, Nesterov, weight decay and maximize (torch.optim.SGD's math).
#pragma once
#include "retorch/optim/Optimizer.h"
#include "retorch/optim/TensorOpUpdates.h"

namespace retorch::optim {

/// Options of SGD: SGDOptions(0.1).momentum(0.9).nesterov(true).
struct SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT (implicit like libtorch)
  RETORCH_ARG(double, lr);
  RETORCH_ARG(double, momentum) = 0;
  RETORCH_ARG(double, dampening) = 0;
  RETORCH_ARG(double, weight_decay) = 0;
  RETORCH_ARG(bool, nesterov) = false;
  RETORCH_ARG(bool, maximize) = false;

 public:
  /// Calls f(name, field&) for every hyperparameter. See Note [Options as named numbers].
  template <typename F>
  void visit(F&& f) {
    f("lr", lr_);
    f("momentum", momentum_);
    f("dampening", dampening_);
    f("weight_decay", weight_decay_);
    f("nesterov", nesterov_);
    f("maximize", maximize_);
  }
};

/// Stochastic gradient descent, optionally with (Nesterov) momentum.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions defaults);
  SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults);

 protected:
  void update(Tensor& param, const Tensor& grad, OptimizerOptions& options,
              OptimizerParamState& state) override;
  bool update_on_device(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                        OptimizerParamState& state) override {
    detail::sgd_update_ops(param, grad, options, state);
    return true;
  }
  void validate(const OptimizerOptions& options) const override;
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
};

}  // namespace retorch::optim
