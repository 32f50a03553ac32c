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

// The constants of one step in the parameter's type (by value: registers, not reloads).
template <typename T>
struct AdamConsts {
  T neg_step_size, bias2_sqrt, b1, one_minus_b1, b2, one_minus_b2, eps, wd, decay;
  bool l2, shrink, maximize;
};

// One span; see Notes [Fused update arithmetic] and [Vectorized updates] (SGD.cpp).
template <typename T, bool kAmsgrad>
void adam_span(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
               T* __restrict vmax, int64_t n, const AdamConsts<T> c) {
  for (int64_t i = 0; i < n; ++i) {
    T d = c.maximize ? -g[i] : g[i];
    T w = p[i];
    if (c.shrink) w = w * c.decay;
    if (c.l2) d = d + c.wd * w;
    T mi = m[i] * c.b1 + c.one_minus_b1 * d;
    T vi = v[i] * c.b2 + c.one_minus_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    if constexpr (kAmsgrad) {
      const T x = vmax[i];
      vi = (x > vi) | (x != x) ? x : vi;  // (||'s branch kept the loop scalar)
      vmax[i] = vi;
    }
    T denom = std::sqrt(vi) / c.bias2_sqrt + c.eps;
    p[i] = w + c.neg_step_size * mi / denom;
  }
}

template <typename T>
void adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamScalars& s) {
  const double bias1 = 1 - std::pow(s.beta1, s.step), bias2 = 1 - std::pow(s.beta2, s.step);
  const AdamConsts<T> c{T(-(s.lr / bias1)), T(std::sqrt(bias2)), T(s.beta1), T(1 - s.beta1),
                        T(s.beta2), T(1 - s.beta2), T(s.eps), T(s.weight_decay),
                        T(1 - s.lr * s.weight_decay), !s.decoupled && s.weight_decay != 0,
                        s.decoupled, s.maximize};
  const bool ams = s.amsgrad;
  parallel_for(0, n, 32768, [=](int64_t b, int64_t e) {
    T* const vx = ams ? vmax + b : nullptr;
    if (ams) adam_span<T, true>(p + b, g + b, m + b, v + b, vx, e - b, c);
    else adam_span<T, false>(p + b, g + b, m + b, v + b, vx, e - b, c);
  });
}

}  // namespace

void adam_update(Tensor& param, const Tensor& grad_in, const OptimizerOptions& o,
                 OptimizerParamState& state, bool decoupled, const char* name) {
  check_fusable(param, grad_in, name);
  Tensor grad = grad_in.contiguous();
  // The step counter is a float32 tensor, as in PyTorch, so beta ** step sees the same value.
  const double step = advance_step(state);
  // Handles, not references: inserting into the state may move its items.
  Tensor m = state_buffer(state, "exp_avg", param);
  Tensor v = state_buffer(state, "exp_avg_sq", param);
  AdamScalars s{o.get("lr"),           o.get("beta1"),         o.get("beta2"),
                o.get("eps"),          o.get("weight_decay"),  step,
                o.get("amsgrad") != 0, o.get("maximize") != 0, decoupled};
  Tensor vmax = s.amsgrad ? state_buffer(state, "max_exp_avg_sq", param) : Tensor();
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
