// nn::init: in-place initializers with PyTorch's formulas (fans, gains, bounds).
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "retorch/core/Generator.h"
#include "retorch/core/Tensor.h"

namespace retorch::nn::init {

/// The recommended gain for a nonlinearity ("linear", "conv2d", "sigmoid", "tanh", "relu",
/// "leaky_relu" (param = negative slope, default 0.01), "selu").
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
/// (fan_in, fan_out) of a weight of at least 2 dims: size(1)*receptive, size(0)*receptive.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// The initializers fill `tensor` in place without recording autograd history and return it.
Tensor uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0,
                std::optional<Generator> gen = std::nullopt);
Tensor normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0,
               std::optional<Generator> gen = std::nullopt);
Tensor constant_(const Tensor& tensor, double value);
Tensor ones_(const Tensor& tensor);
Tensor zeros_(const Tensor& tensor);
/// The identity matrix for a 2-d tensor.
Tensor eye_(const Tensor& tensor);
Tensor xavier_uniform_(const Tensor& tensor, double gain = 1.0);
Tensor xavier_normal_(const Tensor& tensor, double gain = 1.0);
/// mode: "fan_in" or "fan_out"; a: the negative slope for leaky_relu.
Tensor kaiming_uniform_(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal_(const Tensor& tensor, double a = 0.0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu");
/// A (semi-)orthogonal matrix from the QR decomposition of a normal matrix, times gain.
Tensor orthogonal_(const Tensor& tensor, double gain = 1.0);
/// Normal(mean, std) truncated to [a, b] (inverse-CDF sampling, like PyTorch).
Tensor trunc_normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0,
                     double b = 2.0);

}  // namespace retorch::nn::init
