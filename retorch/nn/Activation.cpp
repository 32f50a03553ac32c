// Activation modules: forward through the pointwise ops, printing like libtorch.
#include "retorch/nn/Activation.h"

#include "retorch/generated/Functions.h"

namespace retorch::nn {

Tensor ReLUImpl::forward(const Tensor& x) { return relu(x); }
Tensor ReLU6Impl::forward(const Tensor& x) { return relu6(x); }
Tensor SELUImpl::forward(const Tensor& x) { return selu(x); }
Tensor SiLUImpl::forward(const Tensor& x) { return silu(x); }
Tensor MishImpl::forward(const Tensor& x) { return mish(x); }
Tensor SigmoidImpl::forward(const Tensor& x) { return sigmoid(x); }
Tensor TanhImpl::forward(const Tensor& x) { return tanh(x); }
Tensor SoftsignImpl::forward(const Tensor& x) { return softsign(x); }
Tensor HardswishImpl::forward(const Tensor& x) { return hardswish(x); }
Tensor HardsigmoidImpl::forward(const Tensor& x) { return hardsigmoid(x); }
Tensor LogSigmoidImpl::forward(const Tensor& x) { return logsigmoid(x); }
Tensor TanhshrinkImpl::forward(const Tensor& x) { return tanhshrink(x); }

Tensor Softmax2dImpl::forward(const Tensor& x) {
  RT_CHECK(x.dim() == 3 || x.dim() == 4, "Softmax2d: expected input of 3 or 4 dimensions, got ",
           x.sizes());
  return softmax(x, -3);
}

Tensor LeakyReLUImpl::forward(const Tensor& x) { return leaky_relu(x, options.negative_slope()); }
void LeakyReLUImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::LeakyReLU(negative_slope=" << options.negative_slope() << ")";
}

Tensor ELUImpl::forward(const Tensor& x) { return elu(x, options.alpha()); }
void ELUImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::ELU(alpha=" << options.alpha() << ")";
}

Tensor CELUImpl::forward(const Tensor& x) { return celu(x, options.alpha()); }
void CELUImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::CELU(alpha=" << options.alpha() << ")";
}

Tensor GELUImpl::forward(const Tensor& x) { return gelu(x, options.approximate()); }
void GELUImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::GELU(approximate=" << options.approximate() << ")";
}

Tensor SoftplusImpl::forward(const Tensor& x) {
  return softplus(x, options.beta(), options.threshold());
}
void SoftplusImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Softplus(beta=" << options.beta() << ", threshold=" << options.threshold()
     << ")";
}

Tensor HardtanhImpl::forward(const Tensor& x) {
  return hardtanh(x, options.min_val(), options.max_val());
}
void HardtanhImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val()
     << ")";
}

Tensor SoftshrinkImpl::forward(const Tensor& x) { return softshrink(x, options.lambda()); }
void SoftshrinkImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Softshrink(" << options.lambda() << ")";
}

Tensor HardshrinkImpl::forward(const Tensor& x) { return hardshrink(x, options.lambda()); }
void HardshrinkImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Hardshrink(" << options.lambda() << ")";
}

Tensor RReLUImpl::forward(const Tensor& x) {
  return rrelu(x, options.lower(), options.upper(), is_training());
}
void RReLUImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::RReLU(lower=" << options.lower() << ", upper=" << options.upper() << ")";
}

Tensor GLUImpl::forward(const Tensor& x) { return glu(x, options.dim()); }
void GLUImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::GLU(dim=" << options.dim() << ")";
}

Tensor SoftmaxImpl::forward(const Tensor& x) { return softmax(x, options.dim()); }
Tensor LogSoftmaxImpl::forward(const Tensor& x) { return log_softmax(x, options.dim()); }
Tensor SoftminImpl::forward(const Tensor& x) { return softmin(x, options.dim()); }

Tensor ThresholdImpl::forward(const Tensor& x) {
  return threshold(x, options.threshold(), options.value());
}
void ThresholdImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Threshold(threshold=" << options.threshold() << ", value=" << options.value()
     << ")";
}

PReLUImpl::PReLUImpl(const PReLUOptions& options_) : Module("retorch::nn::PReLU"), options(options_) {
  weight = register_parameter("weight", full({options.num_parameters()}, options.init()));
}

Tensor PReLUImpl::forward(const Tensor& x) { return prelu(x, weight); }
void PReLUImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::PReLU(num_parameters=" << options.num_parameters() << ")";
}

}  // namespace retorch::nn
