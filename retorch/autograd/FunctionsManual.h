// Backward helpers used by the ops.yaml derivative formulas; all written in retorch ops.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::autograd::fm {

Tensor maybe_multiply(const Tensor& t, const Scalar& s);
Tensor to_copy_backward(const Tensor& grad, ScalarType self_dtype, Device self_device);
Tensor permute_backwards(const Tensor& grad, IntArrayRef dims);
Tensor select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t index);
Tensor slice_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim,
                      std::optional<int64_t> start, std::optional<int64_t> end, int64_t step);
Tensor as_strided_backward(const Tensor& grad, const Tensor& self, IntArrayRef size,
                           IntArrayRef stride, std::optional<int64_t> storage_offset);
Tensor split_backward(const std::vector<Tensor>& grads, int64_t split_size, int64_t dim,
                      IntArrayRef sizes, ScalarType dtype);
Tensor split_with_sizes_backward(const std::vector<Tensor>& grads, IntArrayRef split_sizes,
                                 int64_t dim, IntArrayRef sizes, ScalarType dtype);
std::vector<Tensor> cat_tensors_backward(const Tensor& grad, const std::vector<Tensor>& tensors,
                                         int64_t dim);
Tensor index_select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim,
                             const Tensor& index);
Tensor gather_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, const Tensor& index);
Tensor masked_fill_value_backward(const Tensor& grad, const Tensor& mask);

Tensor tanh_backward(const Tensor& grad, const Tensor& result);
Tensor sigmoid_backward(const Tensor& grad, const Tensor& result);
Tensor silu_backward(const Tensor& grad, const Tensor& self);
Tensor gelu_backward(const Tensor& grad, const Tensor& self, std::string_view approximate);
Tensor softplus_backward(const Tensor& grad, const Tensor& self, const Scalar& beta,
                         const Scalar& threshold);
Tensor threshold_backward(const Tensor& grad, const Tensor& result, double threshold);

Tensor div_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other);
Tensor div_mode_self_backward(const Tensor& grad, const Tensor& other,
                              std::optional<std::string_view> mode);
Tensor div_mode_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                               std::optional<std::string_view> mode);
Tensor pow_backward(const Tensor& grad, const Tensor& self, const Scalar& exponent);
Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent);
Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                             const Tensor& result);
Tensor max_min_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other);
Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max);

Tensor sum_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim);
Tensor mean_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim, bool keepdim);
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
Tensor prod_dim_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                         int64_t dim, bool keepdim);
Tensor amax_amin_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                          IntArrayRef dim, bool keepdim);
Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
Tensor value_selecting_reduction_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                          IntArrayRef sizes, bool keepdim);
Tensor var_backward(const Tensor& grad, const Tensor& self, OptionalIntArrayRef dim,
                    std::optional<int64_t> correction, bool keepdim);
/// Gradient of std = sqrt(var), 0 where the standard deviation is 0.
Tensor std_backward(const Tensor& result, const Tensor& grad, const Tensor& self,
                    OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim);
Tensor norm_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& p,
                     const Tensor& result, OptionalIntArrayRef dim, bool keepdim);
Tensor softmax_backward_data(const Tensor& grad, const Tensor& result, int64_t dim);
Tensor log_softmax_backward_data(const Tensor& grad, const Tensor& result, int64_t dim);
Tensor cumsum_backward(const Tensor& grad, int64_t dim);

}  // namespace retorch::autograd::fm

namespace retorch {
/// Sums t over broadcast dims so it has `shape` (the inverse of expand).
Tensor sum_to(const Tensor& t, IntArrayRef shape);
}  // namespace retorch

// ---- nn: normalization, embedding, losses (issue 3)
namespace retorch::autograd::fm {
Tensor batch_norm_backward_input(const Tensor& grad, const Tensor& input,
                                 const std::optional<Tensor>& weight,
                                 const std::optional<Tensor>& running_mean,
                                 const std::optional<Tensor>& running_var, const Tensor& save_mean,
                                 const Tensor& save_invstd, bool training, double eps);
Tensor batch_norm_backward_weight(const Tensor& grad, const Tensor& input,
                                  const std::optional<Tensor>& running_mean,
                                  const std::optional<Tensor>& running_var,
                                  const Tensor& save_mean, const Tensor& save_invstd,
                                  bool training, double eps);
Tensor batch_norm_backward_bias(const Tensor& grad, const Tensor& input);
Tensor layer_norm_backward_input(const Tensor& grad, const Tensor& input,
                                 IntArrayRef normalized_shape, const Tensor& mean,
                                 const Tensor& rstd, const std::optional<Tensor>& weight,
                                 double eps);
Tensor layer_norm_backward_weight(const Tensor& grad, const Tensor& input,
                                  IntArrayRef normalized_shape, const Tensor& mean,
                                  const Tensor& rstd, double eps);
Tensor layer_norm_backward_bias(const Tensor& grad, const Tensor& input,
                                IntArrayRef normalized_shape);
/// The transpose of embedding_dense_backward (linear in its grad_output).
Tensor embedding_dense_double_backward(const Tensor& grad, const Tensor& indices,
                                       int64_t padding_idx, bool scale_grad_by_freq);
Tensor embedding_bag_backward_weight(const Tensor& grad, const Tensor& weight,
                                     const Tensor& indices, const Tensor& offset2bag,
                                     const Tensor& bag_size, const Tensor& max_indices,
                                     bool scale_grad_by_freq, int64_t mode,
                                     const std::optional<Tensor>& per_sample_weights,
                                     int64_t padding_idx);
Tensor embedding_bag_backward_per_sample_weights(const Tensor& grad, const Tensor& weight,
                                                 const Tensor& indices, const Tensor& offset2bag,
                                                 int64_t mode, int64_t padding_idx);
Tensor cross_entropy_fused_backward(const Tensor& grad, const Tensor& input, const Tensor& target,
                                    const std::optional<Tensor>& weight, int64_t ignore_index,
                                    int64_t reduction, double label_smoothing, const Tensor& lse);
}  // namespace retorch::autograd::fm
