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

template <typename T>
struct RMSpropConsts {
  T alpha, one_minus_alpha, eps, wd, mom, neg_lr;
  bool use_wd, maximize;
};

// One span; see Notes [Fused update arithmetic] and [Vectorized updates] (SGD.cpp).
template <typename T, bool kCentered, bool kMomentum>
void rmsprop_span(T* __restrict p, const T* __restrict g, T* __restrict sq, T* __restrict gavg,
                  T* __restrict buf, int64_t n, const RMSpropConsts<T> c) {
  for (int64_t i = 0; i < n; ++i) {
    T d = c.maximize ? -g[i] : g[i];
    if (c.use_wd) d = d + c.wd * p[i];
    T s = sq[i] * c.alpha + c.one_minus_alpha * d * d;
    sq[i] = s;
    T avg;
    if constexpr (kCentered) {
      T ga = gavg[i] * c.alpha + c.one_minus_alpha * d;
      gavg[i] = ga;
      avg = std::sqrt(s + T(-1) * ga * ga);
    } else {
      avg = std::sqrt(s);
    }
    avg = avg + c.eps;
    if constexpr (kMomentum) {
      T bi = buf[i] * c.mom + T(1) * d / avg;
      buf[i] = bi;
      p[i] = p[i] + c.neg_lr * bi;
    } else {
      p[i] = p[i] + c.neg_lr * d / avg;
    }
  }
}

template <typename T>
void rmsprop_kernel(T* p, const T* g, T* sq, T* gavg, T* buf, int64_t n, const RMSpropOptions& o) {
  const RMSpropConsts<T> c{T(o.alpha()), T(1 - o.alpha()), T(o.eps()), T(o.weight_decay()),
                           T(o.momentum()), T(-o.lr()), o.weight_decay() != 0, o.maximize()};
  const bool centered = o.centered(), momentum = o.momentum() > 0;
  parallel_for(0, n, 32768, [=](int64_t b, int64_t e) {
    T* const ga = centered ? gavg + b : nullptr;
    T* const bf = momentum ? buf + b : nullptr;
    const int64_t m = e - b;
    if (centered && momentum) rmsprop_span<T, true, true>(p + b, g + b, sq + b, ga, bf, m, c);
    else if (centered) rmsprop_span<T, true, false>(p + b, g + b, sq + b, ga, bf, m, c);
    else if (momentum) rmsprop_span<T, false, true>(p + b, g + b, sq + b, ga, bf, m, c);
    else rmsprop_span<T, false, false>(p + b, g + b, sq + b, ga, bf, m, c);
  });
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
  detail::advance_step(state);
  Tensor sq = detail::state_buffer(state, "square_avg", param);
  Tensor buf = o.momentum() > 0 ? detail::state_buffer(state, "momentum_buffer", param) : Tensor();
  Tensor gavg = o.centered() ? detail::state_buffer(state, "grad_avg", param) : Tensor();
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
