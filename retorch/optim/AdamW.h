// AdamW: Adam with decoupled weight decay, torch.optim.AdamW's math.
#pragma once
#include "retorch/optim/Adam.h"

namespace retorch::optim {

/// Options of AdamW: like AdamOptions, but weight_decay defaults to 1e-2.
struct AdamWOptions : public OptimizerCloneableOptions<AdamWOptions> {
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT (implicit like libtorch)
  RETORCH_ARG(double, lr);
  typedef std::tuple<double, double> betas_t;
  RETORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  RETORCH_ARG(double, eps) = 1e-8;
  RETORCH_ARG(double, weight_decay) = 1e-2;
  RETORCH_ARG(bool, amsgrad) = false;
  RETORCH_ARG(bool, maximize) = false;

 public:
  /// Calls f(name, field&) for every hyperparameter. See Note [Options as named numbers].
  template <typename F>
  void visit(F&& f) {
    f("lr", lr_);
    f("beta1", std::get<0>(betas_));
    f("beta2", std::get<1>(betas_));
    f("eps", eps_);
    f("weight_decay", weight_decay_);
    f("amsgrad", amsgrad_);
    f("maximize", maximize_);
  }
};

/// AdamW: Adam whose weight decay shrinks the weights directly (p *= 1 - lr * wd).
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = {});
  AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults = {});

 protected:
  void update(Tensor& param, const Tensor& grad, OptimizerOptions& options,
              OptimizerParamState& state) override {
    detail::adam_update(param, grad, options, state, /*decoupled=*/true, "AdamW");
  }
  bool update_on_device(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                        OptimizerParamState& state) override {
    detail::adam_update_ops(param, grad, options, state, /*decoupled=*/true);
    return true;
  }
  void validate(const OptimizerOptions& options) const override { detail::adam_validate(options); }
  std::vector<std::string> state_names() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
};

}  // namespace retorch::optim
