// nn::init: the initializers of torch.nn.init, on retorch's in-place random ops.
#include "retorch/nn/Init.h"

#include <cmath>

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn::init {

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  static const char* linear_fns[] = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                     "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  for (const char* f : linear_fns)
    if (nonlinearity == f) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  RT_CHECK(false, "Unsupported nonlinearity ", nonlinearity);
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  RT_CHECK(tensor.dim() >= 2, "Fan in and fan out can not be computed for tensor with fewer than "
           "2 dimensions (got a tensor of size ", tensor.sizes(), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

namespace {

int64_t fan(const Tensor& tensor, const std::string& mode) {
  RT_CHECK(mode == "fan_in" || mode == "fan_out", "Mode ", mode,
           " not supported, please use one of fan_in, fan_out");
  auto [in, out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? in : out;
}

}  // namespace

Tensor uniform_(const Tensor& tensor, double a, double b, std::optional<Generator> gen) {
  NoGradGuard no_grad;
  return tensor.uniform_(a, b, gen);
}

Tensor normal_(const Tensor& tensor, double mean, double std, std::optional<Generator> gen) {
  NoGradGuard no_grad;
  return tensor.normal_(mean, std, gen);
}

Tensor constant_(const Tensor& tensor, double value) {
  NoGradGuard no_grad;
  return tensor.fill_(value);
}

Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

Tensor zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }

Tensor eye_(const Tensor& tensor) {
  RT_CHECK(tensor.dim() == 2, "Only tensors with 2 dimensions are supported (got ",
           tensor.sizes(), ")");
  NoGradGuard no_grad;
  return tensor.copy_(eye(tensor.size(0), tensor.size(1), TensorOptions(tensor.dtype())));
}

Tensor xavier_uniform_(const Tensor& tensor, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(tensor);
  double a = gain * std::sqrt(2.0 / double(in + out)) * std::sqrt(3.0);
  return init::uniform_(tensor, -a, a);
}

Tensor xavier_normal_(const Tensor& tensor, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(tensor);
  return init::normal_(tensor, 0.0, gain * std::sqrt(2.0 / double(in + out)));
}

Tensor kaiming_uniform_(const Tensor& tensor, double a, const std::string& mode,
                        const std::string& nonlinearity) {
  if (tensor.numel() == 0) return tensor;  // torch warns and does nothing
  double bound = calculate_gain(nonlinearity, a) / std::sqrt(double(fan(tensor, mode))) *
                 std::sqrt(3.0);
  return init::uniform_(tensor, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& tensor, double a, const std::string& mode,
                       const std::string& nonlinearity) {
  if (tensor.numel() == 0) return tensor;
  return init::normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(double(fan(tensor, mode))));
}

Tensor orthogonal_(const Tensor& tensor, double gain) {
  RT_CHECK(tensor.dim() >= 2, "Only tensors with 2 or more dimensions are supported (got ",
           tensor.sizes(), ")");
  if (tensor.numel() == 0) return tensor;
  NoGradGuard no_grad;
  const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  Tensor flat = randn({rows, cols}, std::nullopt, TensorOptions(kDouble));
  if (rows < cols) flat = flat.t();
  auto [q, r] = linalg_qr(flat);
  // Make the decomposition unique (positive diagonal of r), as torch does.
  q = q * sign(diagonal(r)).unsqueeze(0);
  if (rows < cols) q = q.t();
  tensor.view(q.sizes()).copy_(q * gain);
  return tensor;
}

Tensor trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b) {
  NoGradGuard no_grad;
  auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double l = norm_cdf((a - mean) / std), u = norm_cdf((b - mean) / std);
  tensor.uniform_(2 * l - 1, 2 * u - 1);
  tensor.erfinv_();
  tensor.mul_(std * std::sqrt(2.0));
  tensor.add_(mean);
  tensor.clamp_(a, b);
  return tensor;
}

}  // namespace retorch::nn::init
