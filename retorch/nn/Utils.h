// nn::utils: gradient clipping and flattening parameters to and from one vector.
#pragma once
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch::nn::utils {

/// Scales all gradients so that their joint norm is at most max_norm; returns the norm before
/// clipping. norm_type may be infinity. error_if_nonfinite raises on a NaN/inf norm.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
/// Clamps every gradient element to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
/// All parameters flattened and concatenated.
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
/// Copies consecutive slices of vec into the parameters.
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace retorch::nn::utils
