// nn::utils: gradient clipping and parameter flattening, without recording autograd history.
#include "retorch/nn/Utils.h"

#include <cmath>
#include <limits>

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn::utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  double total = 0.0;
  if (std::isinf(norm_type)) {
    for (const auto& g : grads) total = std::max(total, g.abs().max().item<double>());
  } else {
    for (const auto& g : grads)
      total += std::pow(linalg_vector_norm(g, norm_type).item<double>(), norm_type);
    total = std::pow(total, 1.0 / norm_type);
  }
  RT_CHECK(!error_if_nonfinite || std::isfinite(total), "The total norm of order ", norm_type,
           " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable "
           "this error and scale the gradients by the non-finite norm anyway, set "
           "`error_if_nonfinite=False`");
  double coef = max_norm / (total + 1e-6);
  if (coef < 1.0)
    for (const auto& g : grads) g.mul_(coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const auto& p : parameters)
    if (p.grad().defined()) p.grad().clamp_(-clip_value, clip_value);
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> flat;
  for (const auto& p : parameters) flat.push_back(p.reshape({-1}));
  return cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  int64_t total = 0;
  for (const auto& p : parameters) total += p.numel();
  RT_CHECK(vec.dim() == 1 && vec.numel() == total, "vector_to_parameters: expected a 1-d vector "
           "of ", total, " elements, got size ", vec.sizes());
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& p : parameters) {
    p.copy_(vec.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
}

}  // namespace retorch::nn::utils
