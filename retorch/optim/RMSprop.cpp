// RMSprop's fused update: one pass over param, grad and the running averages.
#include "retorch/optim/RMSprop.h"

#include <cmath>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/generated/Functions.h"

namespace retorch::optim {

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions defaults)
    : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},
              std::move(defaults)) {}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups, RMSpropOptions defaults)
    : Optimizer(std::make_unique<RMSpropOptions>(defaults)) {
  init(std::move(param_groups));
}

void RMSprop::validate(const OptimizerOptions& o) const {
  using detail::py_float;
  RT_CHECK_VALUE(0.0 <= o.get("lr"), "Invalid learning rate: ", py_float(o.get("lr")));
  RT_CHECK_VALUE(0.0 <= o.get("eps"), "Invalid epsilon value: ", py_float(o.get("eps")));
  RT_CHECK_VALUE(0.0 <= o.get("momentum"), "Invalid momentum value: ", py_float(o.get("momentum")));
  RT_CHECK_VALUE(0.0 <= o.get("weight_decay"),
                 "Invalid weight_decay value: ", py_float(o.get("weight_decay")));
  RT_CHECK_VALUE(0.0 <= o.get("alpha"), "Invalid alpha value: ", py_float(o.get("alpha")));
}

namespace {

// See Note [Fused update arithmetic].
template <typename T>
void rmsprop_kernel(T* p, const T* g, T* sq, T* gavg, T* buf, int64_t n, const RMSpropOptions& o) {
  const T alpha = T(o.alpha()), one_minus_alpha = T(1 - o.alpha()), eps = T(o.eps());
  const T wd = T(o.weight_decay()), mom = T(o.momentum()), neg_lr = T(-o.lr());
  const bool use_wd = o.weight_decay() != 0, use_mom = o.momentum() > 0;
  const bool centered = o.centered(), maximize = o.maximize();
  parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T d = maximize ? -g[i] : g[i];
      if (use_wd) d = d + wd * p[i];
      T s = sq[i] * alpha + one_minus_alpha * d * d;
      sq[i] = s;
      T avg;
      if (centered) {
        T ga = gavg[i] * alpha + one_minus_alpha * d;
        gavg[i] = ga;
        avg = std::sqrt(s + T(-1) * ga * ga);
      } else {
        avg = std::sqrt(s);
      }
      avg = avg + eps;
      if (use_mom) {
        T bi = buf[i] * mom + T(1) * d / avg;
        buf[i] = bi;
        p[i] = p[i] + neg_lr * bi;
      } else {
        p[i] = p[i] + neg_lr * d / avg;
      }
    }
  });
}

Tensor buffer(OptimizerParamState& state, const char* name, const Tensor& like) {
  if (Tensor* t = state.find(name)) return *t;
  return state.insert(name, zeros_like(like).contiguous());
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

}  // namespace

void RMSprop::update(Tensor& param, const Tensor& grad_in, OptimizerOptions& options,
                     OptimizerParamState& state) {
  detail::check_fusable(param, grad_in, "RMSprop");
  const auto& o = static_cast<const RMSpropOptions&>(options);
  Tensor grad = grad_in.contiguous();
  if (!state.contains("step")) state.insert("step", detail::step_tensor(0));
  Tensor step = state["step"];
  *step.data_ptr<float>() += 1.0f;
  Tensor sq = buffer(state, "square_avg", param);
  Tensor buf = o.momentum() > 0 ? buffer(state, "momentum_buffer", param) : Tensor();
  Tensor gavg = o.centered() ? buffer(state, "grad_avg", param) : Tensor();
  detail::with_contiguous(param, [&](Tensor& p) {
    if (p.dtype() == kFloat) {
      rmsprop_kernel<float>(ptr<float>(p), ptr<float>(grad), ptr<float>(sq), ptr<float>(gavg),
                            ptr<float>(buf), p.numel(), o);
    } else {
      rmsprop_kernel<double>(ptr<double>(p), ptr<double>(grad), ptr<double>(sq), ptr<double>(gavg),
                             ptr<double>(buf), p.numel(), o);
    }
  });
}

}  // namespace retorch::optim
