// Adam (L2 weight decay folded into the gradient), torch.optim.Adam's math.
#pragma once
#include <tuple>

#include "retorch/optim/Optimizer.h"
#include "retorch/optim/TensorOpUpdates.h"

namespace retorch::optim {

/// Options of Adam: AdamOptions(1e-3).betas({0.9, 0.999}).amsgrad(true).
struct AdamOptions : public OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT (implicit like libtorch)
  RETORCH_ARG(double, lr);
  typedef std::tuple<double, double> betas_t;
  RETORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  RETORCH_ARG(double, eps) = 1e-8;
  RETORCH_ARG(double, weight_decay) = 0;
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

/// Adam: adaptive moments with bias correction, optionally AMSGrad.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions defaults = {});
  Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults = {});

 protected:
  void update(Tensor& param, const Tensor& grad, OptimizerOptions& options,
              OptimizerParamState& state) override;
  bool update_on_device(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                        OptimizerParamState& state) override {
    detail::adam_update_ops(param, grad, options, state, /*decoupled=*/false);
    return true;
  }
  void validate(const OptimizerOptions& options) const override;
  std::vector<std::string> state_names() const override {
    return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
};

namespace detail {
/// The update shared by Adam and AdamW (decoupled: AdamW's decay of the weights themselves).
void adam_update(Tensor& param, const Tensor& grad, const OptimizerOptions& options,
                 OptimizerParamState& state, bool decoupled, const char* name);
/// Adam's and AdamW's option checks, with PyTorch's messages.
void adam_validate(const OptimizerOptions& options);
}  // namespace detail

}  // namespace retorch::optim
