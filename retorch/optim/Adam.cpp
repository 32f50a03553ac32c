// Adam's and AdamW's fused update: one pass over param, grad and the moment buffers.
#include "retorch/optim/Adam.h"

#include <cmath>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/generated/Functions.h"
#include "retorch/optim/AdamW.h"

namespace retorch::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions defaults)
    : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},
           std::move(defaults)) {}

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, AdamOptions defaults)
    : Optimizer(std::make_unique<AdamOptions>(defaults)) {
  init(std::move(param_groups));
}

void Adam::update(Tensor& param, const Tensor& grad, OptimizerOptions& options,
                  OptimizerParamState& state) {
  detail::adam_update(param, grad, options, state, /*decoupled=*/false, "Adam");
}

void Adam::validate(const OptimizerOptions& options) const {
  detail::adam_validate(options);
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},
            std::move(defaults)) {}

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups, AdamWOptions defaults)
    : Optimizer(std::make_unique<AdamWOptions>(defaults)) {
  init(std::move(param_groups));
}

namespace detail {

void adam_validate(const OptimizerOptions& o) {
  const double lr = o.get("lr"), eps = o.get("eps"), b1 = o.get("beta1"), b2 = o.get("beta2");
  RT_CHECK_VALUE(0.0 <= lr, "Invalid learning rate: ", py_float(lr));
  RT_CHECK_VALUE(0.0 <= eps, "Invalid epsilon value: ", py_float(eps));
  RT_CHECK_VALUE(0.0 <= b1 && b1 < 1.0, "Invalid beta parameter at index 0: ", py_float(b1));
  RT_CHECK_VALUE(0.0 <= b2 && b2 < 1.0, "Invalid beta parameter at index 1: ", py_float(b2));
  RT_CHECK_VALUE(0.0 <= o.get("weight_decay"),
                 "Invalid weight_decay value: ", py_float(o.get("weight_decay")));
}

namespace {

struct AdamScalars {
  double lr, beta1, beta2, eps, weight_decay, step;
  bool amsgrad, maximize, decoupled;
};

// See Note [Fused update arithmetic].
template <typename T>
void adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamScalars& s) {
  const double bias1 = 1 - std::pow(s.beta1, s.step), bias2 = 1 - std::pow(s.beta2, s.step);
  const T neg_step_size = T(-(s.lr / bias1)), bias2_sqrt = T(std::sqrt(bias2));
  const T b1 = T(s.beta1), one_minus_b1 = T(1 - s.beta1);
  const T b2 = T(s.beta2), one_minus_b2 = T(1 - s.beta2);
  const T eps = T(s.eps), wd = T(s.weight_decay), decay = T(1 - s.lr * s.weight_decay);
  const bool l2 = !s.decoupled && s.weight_decay != 0, shrink = s.decoupled;
  parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T d = s.maximize ? -g[i] : g[i];
      T w = p[i];
      if (shrink) w = w * decay;
      if (l2) d = d + wd * w;
      T mi = m[i] * b1 + one_minus_b1 * d;
      T vi = v[i] * b2 + one_minus_b2 * d * d;
      m[i] = mi;
      v[i] = vi;
      if (s.amsgrad) {
        vi = vmax[i] > vi || std::isnan(vmax[i]) ? vmax[i] : vi;
        vmax[i] = vi;
      }
      T denom = std::sqrt(vi) / bias2_sqrt + eps;
      p[i] = w + neg_step_size * mi / denom;
    }
  });
}

Tensor buffer(OptimizerParamState& state, const char* name, const Tensor& like) {
  if (Tensor* t = state.find(name)) return *t;
  return state.insert(name, zeros_like(like).contiguous());
}

}  // namespace

void adam_update(Tensor& param, const Tensor& grad_in, const OptimizerOptions& o,
                 OptimizerParamState& state, bool decoupled, const char* name) {
  check_fusable(param, grad_in, name);
  Tensor grad = grad_in.contiguous();
  if (!state.contains("step")) state.insert("step", step_tensor(0));
  // Handles, not references: inserting into the state may move its items.
  Tensor step = state["step"];
  Tensor m = buffer(state, "exp_avg", param);
  Tensor v = buffer(state, "exp_avg_sq", param);
  AdamScalars s{o.get("lr"),           o.get("beta1"),         o.get("beta2"),
                o.get("eps"),          o.get("weight_decay"),  0.0,
                o.get("amsgrad") != 0, o.get("maximize") != 0, decoupled};
  Tensor vmax = s.amsgrad ? buffer(state, "max_exp_avg_sq", param) : Tensor();
  // The step counter is a float32 tensor, as in PyTorch, so beta ** step sees the same value.
  float* step_ptr = step.data_ptr<float>();
  *step_ptr += 1.0f;
  s.step = *step_ptr;
  with_contiguous(param, [&](Tensor& p) {
    if (p.dtype() == kFloat) {
      adam_kernel<float>(p.data_ptr<float>(), grad.data_ptr<float>(), m.data_ptr<float>(),
                         v.data_ptr<float>(), vmax.defined() ? vmax.data_ptr<float>() : nullptr,
                         p.numel(), s);
    } else {
      adam_kernel<double>(p.data_ptr<double>(), grad.data_ptr<double>(), m.data_ptr<double>(),
                          v.data_ptr<double>(), vmax.defined() ? vmax.data_ptr<double>() : nullptr,
                          p.numel(), s);
    }
  });
}

}  // namespace detail

}  // namespace retorch::optim
