// SGD's fused update: one pass over param, grad and momentum buffer per parameter.
#include "retorch/optim/SGD.h"

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/generated/Functions.h"

namespace retorch::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))},
          std::move(defaults)) {}

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults)
    : Optimizer(std::make_unique<SGDOptions>(defaults)) {
  init(std::move(param_groups));
}

void SGD::validate(const OptimizerOptions& o) const {
  RT_CHECK_VALUE(o.get("lr") >= 0, "Invalid learning rate: ", detail::py_float(o.get("lr")));
  RT_CHECK_VALUE(o.get("momentum") >= 0,
                 "Invalid momentum value: ", detail::py_float(o.get("momentum")));
  RT_CHECK_VALUE(o.get("weight_decay") >= 0,
                 "Invalid weight_decay value: ", detail::py_float(o.get("weight_decay")));
  RT_CHECK_VALUE(!o.get("nesterov") || (o.get("momentum") > 0 && o.get("dampening") == 0),
                 "Nesterov momentum requires a momentum and zero dampening");
}

namespace {

// Note [Fused update arithmetic]
// The fused loops replay PyTorch's single-tensor path op by op in the parameter's own type:
// every Python float (lr, momentum, 1 - dampening, ...) is rounded to T once, and each line
// is one of PyTorch's ops (add_ with alpha: a + alpha * b; addcmul_: a + v * b * c;
// addcdiv_: a + v * b / c), so float32 results stay within an ulp or two of torch's.
template <typename T>
void sgd_kernel(T* p, const T* g, T* buf, int64_t n, const SGDOptions& o, bool first) {
  const T wd = T(o.weight_decay()), mom = T(o.momentum()), damp1 = T(1 - o.dampening());
  const T neg_lr = T(-o.lr());
  const bool use_wd = o.weight_decay() != 0, use_mom = o.momentum() != 0;
  const bool nesterov = o.nesterov(), maximize = o.maximize();
  parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T d = maximize ? -g[i] : g[i];
      if (use_wd) d = d + wd * p[i];
      if (use_mom) {
        T m = first ? d : buf[i] * mom + damp1 * d;
        buf[i] = m;
        d = nesterov ? d + mom * m : m;
      }
      p[i] = p[i] + neg_lr * d;
    }
  });
}

}  // namespace

void SGD::update(Tensor& param, const Tensor& grad_in, OptimizerOptions& options,
                 OptimizerParamState& state) {
  detail::check_fusable(param, grad_in, "SGD");
  const auto& o = static_cast<const SGDOptions&>(options);
  Tensor grad = grad_in.contiguous();
  bool first = false;
  Tensor buf;
  if (o.momentum() != 0) {
    Tensor* found = state.find("momentum_buffer");
    first = found == nullptr;
    buf = first ? state.insert("momentum_buffer", empty_like(param).contiguous()) : *found;
  }
  detail::with_contiguous(param, [&](Tensor& p) {
    if (p.dtype() == kFloat) {
      sgd_kernel<float>(p.data_ptr<float>(), grad.data_ptr<float>(),
                        buf.defined() ? buf.data_ptr<float>() : nullptr, p.numel(), o, first);
    } else {
      sgd_kernel<double>(p.data_ptr<double>(), grad.data_ptr<double>(),
                         buf.defined() ? buf.data_ptr<double>() : nullptr, p.numel(), o, first);
    }
  });
}

}  // namespace retorch::optim
