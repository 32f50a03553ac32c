// Adagrad's fused update: one pass over param, grad and the squared-gradient sum.
#include "retorch/optim/Adagrad.h"

#include <cmath>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/generated/Functions.h"

namespace retorch::optim {

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions defaults)
    : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},
              std::move(defaults)) {}

Adagrad::Adagrad(std::vector<OptimizerParamGroup> param_groups, AdagradOptions defaults)
    : Optimizer(std::make_unique<AdagradOptions>(defaults)) {
  init(std::move(param_groups));
}

void Adagrad::validate(const OptimizerOptions& o) const {
  using detail::py_float;
  RT_CHECK_VALUE(0.0 <= o.get("lr"), "Invalid learning rate: ", py_float(o.get("lr")));
  RT_CHECK_VALUE(0.0 <= o.get("lr_decay"), "Invalid lr_decay value: ", py_float(o.get("lr_decay")));
  RT_CHECK_VALUE(0.0 <= o.get("weight_decay"),
                 "Invalid weight_decay value: ", py_float(o.get("weight_decay")));
  RT_CHECK_VALUE(
      0.0 <= o.get("initial_accumulator_value"),
      "Invalid initial_accumulator_value value: ", py_float(o.get("initial_accumulator_value")));
  RT_CHECK_VALUE(0.0 <= o.get("eps"), "Invalid epsilon value: ", py_float(o.get("eps")));
}

namespace {

// See Note [Fused update arithmetic]; a span function over __restrict pointers with its
// constants by value (Note [Vectorized updates] in SGD.cpp), so the loop vectorizes.
template <typename T>
struct AdagradConsts {
  T wd, eps, neg_clr;
  bool use_wd, maximize;
};

template <typename T>
void adagrad_span(T* __restrict p, const T* __restrict g, T* __restrict sum, int64_t n,
                  const AdagradConsts<T> c) {
  for (int64_t i = 0; i < n; ++i) {
    T d = c.maximize ? -g[i] : g[i];
    if (c.use_wd) d = d + c.wd * p[i];
    T s = sum[i] + T(1) * d * d;
    sum[i] = s;
    T std_dev = std::sqrt(s) + c.eps;
    p[i] = p[i] + c.neg_clr * d / std_dev;
  }
}

template <typename T>
void adagrad_kernel(T* p, const T* g, T* sum, int64_t n, const AdagradOptions& o, double clr) {
  const AdagradConsts<T> c{T(o.weight_decay()), T(o.eps()), T(-clr), o.weight_decay() != 0,
                           o.maximize()};
  parallel_for(0, n, 32768, [=](int64_t b, int64_t e) {
    adagrad_span<T>(p + b, g + b, sum + b, e - b, c);
  });
}

}  // namespace

void Adagrad::update(Tensor& param, const Tensor& grad_in, OptimizerOptions& options,
                     OptimizerParamState& state) {
  detail::check_fusable(param, grad_in, "Adagrad");
  const auto& o = static_cast<const AdagradOptions&>(options);
  Tensor grad = grad_in.contiguous();
  // PyTorch fills the state when the optimizer is built; here on the first update, which
  // gives the same numbers (the state of a parameter is unused before its first gradient).
  const double step = detail::advance_step(state);
  if (!state.contains("sum"))
    state.insert("sum", full_like(param, o.initial_accumulator_value()).contiguous());
  Tensor sum = state["sum"];
  const double clr = o.lr() / (1 + (step - 1) * o.lr_decay());
  detail::with_contiguous(param, [&](Tensor& p) {
    if (p.dtype() == kFloat) {
      adagrad_kernel<float>(p.data_ptr<float>(), grad.data_ptr<float>(), sum.data_ptr<float>(),
                            p.numel(), o, clr);
    } else {
      adagrad_kernel<double>(p.data_ptr<double>(), grad.data_ptr<double>(), sum.data_ptr<double>(),
                             p.numel(), o, clr);
    }
  });
}

}  // namespace retorch::optim
