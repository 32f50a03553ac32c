// Linear-family modules: parameters, PyTorch's default initialization, forward, printing.
#include "retorch/nn/Linear.h"

#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"
#include "retorch/nn/Init.h"

namespace retorch::nn {

LinearImpl::LinearImpl(const LinearOptions& options_)
    : Module("retorch::nn::Linear"), options(options_) {
  reset();
}

void LinearImpl::reset() {
  RT_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
           "Linear: in_features and out_features must be non-negative, got ",
           options.in_features(), " and ", options.out_features());
  weight = register_parameter("weight", retorch::empty({options.out_features(), options.in_features()}));
  if (options.bias()) bias = register_parameter("bias", retorch::empty({options.out_features()}));
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) {
  return linear(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
}

void LinearImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "retorch::nn::Linear(in_features=" << options.in_features()
     << ", out_features=" << options.out_features() << ", bias=" << options.bias() << ")";
}

BilinearImpl::BilinearImpl(const BilinearOptions& options_)
    : Module("retorch::nn::Bilinear"), options(options_) {
  weight = register_parameter(
      "weight", retorch::empty({options.out_features(), options.in1_features(), options.in2_features()}));
  if (options.bias()) bias = register_parameter("bias", retorch::empty({options.out_features()}));
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  double bound = 1.0 / std::sqrt(double(weight.size(1)));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) {
  RT_CHECK(input1.dim() >= 1 && input2.dim() >= 1 &&
           input1.size(-1) == options.in1_features() && input2.size(-1) == options.in2_features(),
           "Bilinear: expected inputs with last dims ", options.in1_features(), " and ",
           options.in2_features(), ", got ", input1.sizes(), " and ", input2.sizes());
  // y[b, o] = sum_i x1[b, i] (sum_j W[o, i, j] x2[b, j]) over the flattened leading dims b.
  const int64_t O = options.out_features(), I = options.in1_features(), J = options.in2_features();
  Tensor x1 = input1.reshape({-1, I}), x2 = input2.reshape({-1, J});
  Tensor t = x2.matmul(weight.reshape({O * I, J}).t()).view({-1, O, I});
  Tensor y = (t * x1.unsqueeze(1)).sum(-1);
  if (bias.defined()) y = y + bias;
  std::vector<int64_t> shape(input1.sizes().begin(), input1.sizes().end() - 1);
  shape.push_back(O);
  return y.view(shape);
}

void BilinearImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "retorch::nn::Bilinear(in1_features=" << options.in1_features()
     << ", in2_features=" << options.in2_features() << ", out_features=" << options.out_features()
     << ", bias=" << options.bias() << ")";
}

Tensor FlattenImpl::forward(const Tensor& input) {
  return flatten(input, options.start_dim(), options.end_dim());
}

void FlattenImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Flatten(start_dim=" << options.start_dim()
     << ", end_dim=" << options.end_dim() << ")";
}

Tensor UnflattenImpl::forward(const Tensor& input) {
  int64_t d = options.dim() < 0 ? options.dim() + input.dim() : options.dim();
  RT_CHECK(d >= 0 && d < input.dim(), "Unflatten: dim ", options.dim(),
           " out of range for input of size ", input.sizes());
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().begin() + d);
  for (int64_t s : options.sizes()) shape.push_back(s);
  for (int64_t i = d + 1; i < input.dim(); ++i) shape.push_back(input.size(i));
  return input.view(shape);
}

void UnflattenImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Unflatten(dim=" << options.dim() << ", unflattened_size="
     << IntArrayRef(options.sizes()) << ")";
}

}  // namespace retorch::nn
