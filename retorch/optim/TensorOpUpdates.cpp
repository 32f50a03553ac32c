// The optimizers' updates as tensor ops (SGD, Adam/AdamW, RMSprop, Adagrad), for parameters in
// device memory, where each op runs as the device's kernel.
#include "retorch/optim/TensorOpUpdates.h"

#include <cmath>

#include "retorch/generated/Functions.h"

namespace retorch::optim::detail {

namespace {

// The gradient the update uses: negated to maximize, plus the L2 term weight_decay * param.
Tensor direction(const Tensor& param, const Tensor& grad, bool maximize, double weight_decay) {
  Tensor d = maximize ? grad.neg() : grad;
  return weight_decay != 0 ? d.add(param, weight_decay) : d;
}

}  // namespace

void sgd_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& o,
                    OptimizerParamState& state) {
  check_update_args(param, grad, "SGD");
  const double momentum = o.get("momentum");
  Tensor d = direction(param, grad, o.get("maximize") != 0, o.get("weight_decay"));
  if (momentum != 0) {
    Tensor buf;
    if (Tensor* found = state.find("momentum_buffer")) {
      buf = *found;
      buf.mul_(momentum).add_(d, 1 - o.get("dampening"));
    } else {
      buf = state.insert("momentum_buffer", d.clone().contiguous());
    }
    d = o.get("nesterov") != 0 ? d.add(buf, momentum) : buf;
  }
  param.add_(d, -o.get("lr"));
}

void adam_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& o,
                     OptimizerParamState& state, bool decoupled) {
  check_update_args(param, grad, decoupled ? "AdamW" : "Adam");
  const double lr = o.get("lr"), b1 = o.get("beta1"), b2 = o.get("beta2");
  const double wd = o.get("weight_decay");
  const double step = advance_step(state);
  Tensor m = state_buffer(state, "exp_avg", param), v = state_buffer(state, "exp_avg_sq", param);
  Tensor vmax = o.get("amsgrad") != 0 ? state_buffer(state, "max_exp_avg_sq", param) : Tensor();
  if (decoupled) param.mul_(1 - lr * wd);
  Tensor d = direction(param, grad, o.get("maximize") != 0, decoupled ? 0.0 : wd);
  m.mul_(b1).add_(d, 1 - b1);
  v.mul_(b2).add_(d.mul(d), 1 - b2);
  if (vmax.defined()) maximum_out(vmax, vmax, v);
  const double bias1 = 1 - std::pow(b1, step), bias2 = 1 - std::pow(b2, step);
  Tensor denom = (vmax.defined() ? vmax : v).sqrt().div_(std::sqrt(bias2)).add_(o.get("eps"));
  param.add_(m.div(denom), -(lr / bias1));
}

void rmsprop_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& o,
                        OptimizerParamState& state) {
  check_update_args(param, grad, "RMSprop");
  const double alpha = o.get("alpha"), momentum = o.get("momentum");
  advance_step(state);
  Tensor sq = state_buffer(state, "square_avg", param);
  Tensor buf = momentum > 0 ? state_buffer(state, "momentum_buffer", param) : Tensor();
  Tensor gavg = o.get("centered") != 0 ? state_buffer(state, "grad_avg", param) : Tensor();
  Tensor d = direction(param, grad, o.get("maximize") != 0, o.get("weight_decay"));
  sq.mul_(alpha).add_(d.mul(d), 1 - alpha);
  Tensor avg;
  if (gavg.defined()) {
    gavg.mul_(alpha).add_(d, 1 - alpha);
    avg = sq.add(gavg.mul(gavg), -1).sqrt_();
  } else {
    avg = sq.sqrt();
  }
  avg.add_(o.get("eps"));
  if (buf.defined()) {
    buf.mul_(momentum).add_(d.div(avg));
    param.add_(buf, -o.get("lr"));
  } else {
    param.add_(d.div(avg), -o.get("lr"));
  }
}

void adagrad_update_ops(Tensor& param, const Tensor& grad, const OptimizerOptions& o,
                        OptimizerParamState& state) {
  check_update_args(param, grad, "Adagrad");
  const double step = advance_step(state);
  if (!state.contains("sum"))
    state.insert("sum", full_like(param, o.get("initial_accumulator_value")).contiguous());
  Tensor sum = state["sum"];
  const double clr = o.get("lr") / (1 + (step - 1) * o.get("lr_decay"));
  Tensor d = direction(param, grad, o.get("maximize") != 0, o.get("weight_decay"));
  sum.add_(d.mul(d));
  param.add_(d.div(sum.sqrt().add_(o.get("eps"))), -clr);
}

}  // namespace retorch::optim::detail
