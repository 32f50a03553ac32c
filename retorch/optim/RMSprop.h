// RMSprop (optionally centered, with momentum), torch.optim.RMSprop's math.
#pragma once
#include "retorch/optim/Optimizer.h"
#include "retorch/optim/TensorOpUpdates.h"

namespace retorch::optim {

/// Options of RMSprop: RMSpropOptions(0.01).alpha(0.9).centered(true).momentum(0.9).
struct RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT (implicit like libtorch)
  RETORCH_ARG(double, lr);
  RETORCH_ARG(double, alpha) = 0.99;
  RETORCH_ARG(double, eps) = 1e-8;
  RETORCH_ARG(double, weight_decay) = 0;
  RETORCH_ARG(double, momentum) = 0;
  RETORCH_ARG(bool, centered) = false;
  RETORCH_ARG(bool, maximize) = false;

 public:
  /// Calls f(name, field&) for every hyperparameter. See Note [Options as named numbers].
  template <typename F>
  void visit(F&& f) {
    f("lr", lr_);
    f("alpha", alpha_);
    f("eps", eps_);
    f("weight_decay", weight_decay_);
    f("momentum", momentum_);
    f("centered", centered_);
    f("maximize", maximize_);
  }
};

/// RMSprop: divides the gradient by a running RMS of past gradients.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {});
  RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults = {});

 protected:
  void update(Tensor& param, const Tensor& grad, OptimizerOptions& options,
              OptimizerParamState& state) override;
  bool update_on_device(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                        OptimizerParamState& state) override {
    detail::rmsprop_update_ops(param, grad, options, state);
    return true;
  }
  void validate(const OptimizerOptions& options) const override;
  std::vector<std::string> state_names() const override {
    return {"step", "square_avg", "momentum_buffer", "grad_avg"};
  }
};

}  // namespace retorch::optim
