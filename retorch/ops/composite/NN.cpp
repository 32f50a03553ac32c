// Composite nn ops: norms built on the fused primitives, the dropout family, embedding_bag.
#include <cmath>
#include <limits>

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

// ---------------------------------------------------------------- normalization

Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                  const std::optional<Tensor>& running_var, bool training, double momentum,
                  double eps, bool /*cudnn_enabled*/) {
  return std::get<0>(retorch::native_batch_norm(input, weight, bias, running_mean, running_var,
                                                training, momentum, eps));
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps, bool /*cudnn_enable*/) {
  return std::get<0>(retorch::native_layer_norm(input, normalized_shape, weight, bias, eps));
}

namespace {
/// v (shape [C]) viewed as [1, C, 1, ...] to broadcast against an (N, C, ...) input.
Tensor per_channel(const Tensor& v, const Tensor& input) {
  std::vector<int64_t> s(size_t(input.dim()), 1);
  s[1] = input.size(1);
  return v.view(s);
}
}  // namespace

Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool /*cudnn_enabled*/) {
  RT_CHECK(input.dim() >= 2, "group_norm: expected an input with at least 2 dimensions (N, C, ...),"
           " got shape ", input.sizes());
  int64_t N = input.size(0), C = input.size(1);
  RT_CHECK(num_groups > 0 && C % num_groups == 0, "group_norm: Expected number of channels in "
           "input to be divisible by num_groups, but got input of shape ", input.sizes(),
           " and num_groups=", num_groups);
  for (const auto* p : {&weight, &bias})
    RT_CHECK(!*p || !(*p)->defined() || ((*p)->dim() == 1 && (*p)->numel() == C),
             "group_norm: Expected weight to be a vector of size equal to the number of channels "
             "in input, but got weight of shape ", (*p)->sizes(), " and input of shape ",
             input.sizes());
  if (input.is_contiguous() && is_floating_type(input.dtype()) && N > 0 && C > 0) {
    // Note [Group norm kernels]: one statistics pass and one affine pass
    return std::get<0>(retorch::native_group_norm(input, weight, bias, N, C,
                                                  input.numel() / (N * C), num_groups, eps));
  }
  // Otherwise (a channels-last or strided input keeps its layout through these ops) a layer norm
  // over each (sample, group) row, then a per-channel affine.
  int64_t per_group = (C / num_groups);
  for (int64_t i = 2; i < input.dim(); ++i) per_group *= input.size(i);
  Tensor rows = input.reshape({N, num_groups, per_group});
  Tensor y = std::get<0>(retorch::native_layer_norm(rows, {per_group}, std::nullopt, std::nullopt,
                                                    eps)).reshape(input.sizes());
  if (weight && weight->defined()) y = y * per_channel(*weight, input);
  if (bias && bias->defined()) y = y + per_channel(*bias, input);
  return y;
}

Tensor instance_norm(const Tensor& input, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                     const std::optional<Tensor>& running_var, bool use_input_stats,
                     double momentum, double eps, bool /*cudnn_enabled*/) {
  RT_CHECK(input.dim() >= 2, "instance_norm: expected an input with at least 2 dimensions "
           "(N, C, ...), got shape ", input.sizes());
  RT_CHECK(use_input_stats || (running_mean && running_mean->defined() && running_var &&
                               running_var->defined()),
           "Expected running_mean and running_var to be defined when use_input_stats is false");
  // Like PyTorch: one batch norm over a single sample with N*C channels; per-channel tensors
  // are repeated N times, and the running statistics averaged back over the samples.
  int64_t N = input.size(0), C = input.size(1);
  auto repeat = [&](const std::optional<Tensor>& t) -> std::optional<Tensor> {
    if (!t || !t->defined()) return std::nullopt;
    return t->unsqueeze(0).expand({N, C}).reshape({N * C});
  };
  std::optional<Tensor> rm = repeat(running_mean), rv = repeat(running_var);
  if (rm) rm = rm->clone();
  if (rv) rv = rv->clone();
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape[0] = 1;
  shape[1] = N * C;
  Tensor out = std::get<0>(retorch::native_batch_norm(input.reshape(shape), repeat(weight),
                                                      repeat(bias), rm, rv, use_input_stats,
                                                      momentum, eps));
  if (use_input_stats) {
    NoGradGuard no_grad;
    if (rm) running_mean->copy_(rm->view({N, C}).mean(IntArrayRef({0})));
    if (rv) running_var->copy_(rv->view({N, C}).mean(IntArrayRef({0})));
  }
  return out.view(input.sizes());
}

Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape,
                const std::optional<Tensor>& weight, std::optional<double> eps) {
  int64_t nd = int64_t(normalized_shape.size());
  bool ok = nd >= 1 && input.dim() >= nd;
  for (int64_t i = 0; ok && i < nd; ++i)
    ok = input.size(input.dim() - nd + i) == normalized_shape[size_t(i)];
  RT_CHECK(ok, "rms_norm: Given normalized_shape=", normalized_shape,
           ", expected input with shape [*, ...normalized_shape], but got input of size",
           input.sizes());
  RT_CHECK(!weight || !weight->defined() || weight->sizes() == normalized_shape,
           "rms_norm: Expected weight to be of same shape as normalized_shape, but got weight of "
           "shape ", weight->sizes(), " and normalized_shape = ", normalized_shape);
  RT_CHECK(is_floating_type(input.dtype()), "rms_norm: expected a floating point input, got ",
           input.dtype());
  // PyTorch 2.x: computed in the op-math type (float for half types), default eps its epsilon.
  bool wide = input.dtype() == kDouble;
  Tensor x = wide ? input : input.to(kFloat);
  double e = eps.value_or(wide ? std::numeric_limits<double>::epsilon()
                               : double(std::numeric_limits<float>::epsilon()));
  std::vector<int64_t> dims;
  for (int64_t i = input.dim() - nd; i < input.dim(); ++i) dims.push_back(i);
  Tensor r = x * ((x * x).mean(IntArrayRef(dims), true) + e).rsqrt();
  if (weight && weight->defined()) r = r * *weight;
  return r.to(input.dtype());
}

Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta,
                           double k) {
  RT_CHECK_VALUE(input.dim() >= 3, "Expected 3D or higher dimensionality input (got ", input.dim(),
                 " dimensions)");
  RT_CHECK(size > 0, "local_response_norm: size must be positive, got ", size);
  if (input.numel() == 0) return input;
  // div[c] = mean of x^2 over channels [c - size/2, c + (size-1)/2], zero padded (F's avg_pool).
  int64_t C = input.size(1);
  Tensor sq = input * input;
  std::vector<int64_t> pad_shape(input.sizes().begin(), input.sizes().end());
  std::vector<Tensor> parts;
  if (size / 2 > 0) {
    pad_shape[1] = size / 2;
    parts.push_back(zeros(pad_shape, input.options()));
  }
  parts.push_back(sq);
  if ((size - 1) / 2 > 0) {
    pad_shape[1] = (size - 1) / 2;
    parts.push_back(zeros(pad_shape, input.options()));
  }
  Tensor padded = parts.size() == 1 ? sq : retorch::cat(parts, 1);
  Tensor div = padded.narrow(1, 0, C);
  for (int64_t j = 1; j < size; ++j) div = div + padded.narrow(1, j, C);
  div = (div * (alpha / double(size)) + k).pow(Scalar(beta));
  return input / div;
}

// ---------------------------------------------------------------- dropout

namespace {

/// PyTorch's _dropout_impl: Bernoulli(1-p) noise, per element or per (sample, channel) feature,
/// scaled by 1/(1-p); alpha dropout instead keeps the SELU mean and variance.
Tensor dropout_impl(const Tensor& input, double p, bool train, bool feature, bool alpha) {
  RT_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (p == 0 || !train || input.numel() == 0) return input;
  if (feature)
    RT_CHECK(input.dim() >= 2, "Feature dropout requires at least 2 dimensions in the input");
  if (p == 1) return input * zeros({}, input.options());
  std::vector<int64_t> noise_shape(input.sizes().begin(), input.sizes().end());
  if (feature)
    for (size_t i = 2; i < noise_shape.size(); ++i) noise_shape[i] = 1;
  Tensor noise = retorch::bernoulli(empty(noise_shape, input.options()), 1 - p);
  if (!alpha) return input * (noise / (1 - p));
  constexpr double kAlpha = 1.7580993408473766;
  double a = 1. / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
  Tensor b = (noise - 1) * (kAlpha * a) + kAlpha * a * p;
  return input * (noise * a) + b;
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, false, false);
}
Tensor feature_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, true, false);
}
Tensor alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, false, true);
}
Tensor feature_alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, true, true);
}

Tensor dropout2d(const Tensor& input, double p, bool training, bool inplace) {
  RT_CHECK_VALUE(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  // torch 1.13 reads a 3-D input as (N, C, L) (channel-wise 1-D dropout) and, with a warning,
  // applies feature dropout to other ranks too.
  return inplace ? retorch::feature_dropout_(input, p, training)
                 : retorch::feature_dropout(input, p, training);
}

// ---------------------------------------------------------------- embedding_bag

using Tensor4 = std::tuple<Tensor, Tensor, Tensor, Tensor>;

Tensor4 embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                      bool scale_grad_by_freq, int64_t mode, bool sparse,
                      const std::optional<Tensor>& per_sample_weights, bool include_last_offset) {
  return retorch::_embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                                 per_sample_weights, include_last_offset, -1);
}

Tensor4 embedding_bag_padding_idx(const Tensor& weight, const Tensor& indices,
                                  const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
                                  bool sparse, const std::optional<Tensor>& per_sample_weights,
                                  bool include_last_offset, std::optional<int64_t> padding_idx) {
  int64_t pi = padding_idx.value_or(-1);
  if (padding_idx && pi < 0) pi += weight.size(0);
  return retorch::_embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                                 per_sample_weights, include_last_offset, pi);
}

}  // namespace retorch::composite
