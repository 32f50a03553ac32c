// Backward helpers used by the ops.yaml derivative formulas; all written in retorch ops.
#pragma once
#include <array>
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
std::tuple<Tensor, Tensor> scatter_reduce_backward(const Tensor& grad, const Tensor& self,
                                                   int64_t dim, const Tensor& index,
                                                   const Tensor& src, std::string_view reduce,
                                                   bool include_self, const Tensor& result,
                                                   std::array<bool, 2> grad_input_mask);

Tensor silu_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self);
Tensor elu_double_backward(const Tensor& grad, const Tensor& grad_output, const Scalar& alpha,
                           const Scalar& scale, const Scalar& input_scale, bool is_result,
                           const Tensor& self_or_result);
Tensor gelu_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self,
                            std::string_view approximate);
Tensor softplus_backward(const Tensor& grad, const Tensor& self, const Scalar& beta,
                         const Scalar& threshold);

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
Tensor cumsum_backward(const Tensor& grad, int64_t dim);

// ---- conv (issue 3)
/// The last two entries of sizes (the spatial size of an NCHW tensor).
std::vector<int64_t> last_two(IntArrayRef sizes);
/// Gradient of convolution w.r.t. its input: the convolution with `transposed` flipped.
Tensor convolution_backward_input(const Tensor& grad, IntArrayRef input_sizes,
                                  const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                                  IntArrayRef dilation, bool transposed,
                                  IntArrayRef output_padding, int64_t groups);
/// Gradient of convolution w.r.t. its bias: grad summed over every dim but the channels.
Tensor convolution_backward_bias(const Tensor& grad);
/// Gradients of _convolution_backward_weight w.r.t. grad_output and input.
Tensor conv_weight_grad_grad_output(const Tensor& grad, const Tensor& input,
                                    IntArrayRef grad_output_sizes, IntArrayRef stride,
                                    IntArrayRef padding, IntArrayRef dilation, bool transposed,
                                    int64_t groups);
Tensor conv_weight_grad_input(const Tensor& grad, const Tensor& grad_output,
                              IntArrayRef input_sizes, IntArrayRef stride, IntArrayRef padding,
                              IntArrayRef dilation, bool transposed, int64_t groups);
/// Gradient of a max-pool backward w.r.t. its grad_output: grad gathered at the argmax indices.
Tensor max_pool_double_backward(const Tensor& grad, const Tensor& indices);
// ---- index (issue 3)
/// Gradient of index: the grad scattered (accumulated) back to the indexed positions.
Tensor index_backward(const Tensor& grad, IntArrayRef sizes,
                      ArrayRef<std::optional<Tensor>> indices);
/// Gradient of index_put w.r.t. self: grad, with overwritten positions zeroed unless accumulate.
Tensor index_put_self_backward(const Tensor& grad, ArrayRef<std::optional<Tensor>> indices,
                               bool accumulate);
/// Gradient of index_put w.r.t. values: grad at the indexed positions, summed to values' shape.
Tensor index_put_values_backward(const Tensor& grad, ArrayRef<std::optional<Tensor>> indices,
                                 IntArrayRef values_sizes);
Tensor diagonal_backward(const Tensor& grad, IntArrayRef sizes, int64_t offset, int64_t dim1,
                         int64_t dim2);
/// Gradient of cumprod, exact where self has zeros.
Tensor cumprod_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& result);
Tensor cummaxmin_backward(const Tensor& grad, const Tensor& self, const Tensor& indices,
                          int64_t dim);
Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                             int64_t dim);
// ---- pointwise (issue 3)
/// d i1(x) = i0(x) - i1(x) / x, with the limit 1/2 at x = 0.
Tensor i1_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
Tensor i1e_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
/// d sinc(x) = (cos(pi x) pi x - sin(pi x)) / (pi x^2), 0 at x = 0.
Tensor sinc_backward(const Tensor& grad, const Tensor& self);
Tensor logit_backward(const Tensor& grad, const Tensor& self, std::optional<double> eps);
Tensor xlogy_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other);
Tensor clamp_tensor_backward_self(const Tensor& grad, const Tensor& self,
                                  const std::optional<Tensor>& min,
                                  const std::optional<Tensor>& max);
Tensor clamp_tensor_backward_min(const Tensor& grad, const Tensor& self,
                                 const std::optional<Tensor>& min,
                                 const std::optional<Tensor>& max);
Tensor clamp_tensor_backward_max(const Tensor& grad, const Tensor& self,
                                 const std::optional<Tensor>& min,
                                 const std::optional<Tensor>& max);

}  // namespace retorch::autograd::fm

namespace retorch {
/// Sums t over broadcast dims so it has `shape` (the inverse of expand).
Tensor sum_to(const Tensor& t, IntArrayRef shape);
}  // namespace retorch

// ---- linalg (issue 3)
namespace retorch::autograd::fm {
Tensor euclidean_dist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2,
                               const Tensor& result, bool for_x1);
Tensor solve_triangular_backward_A(const Tensor& grad, const Tensor& A, const Tensor& X,
                                   bool upper, bool left, bool unitriangular);
Tensor solve_triangular_backward_B(const Tensor& grad, const Tensor& A, const Tensor& B,
                                   bool upper, bool left, bool unitriangular);
Tensor linalg_solve_backward_A(const Tensor& grad, const Tensor& A, const Tensor& B,
                               const Tensor& X);
Tensor linalg_solve_backward_B(const Tensor& grad, const Tensor& A, const Tensor& B);
Tensor linalg_inv_backward(const Tensor& grad, const Tensor& inv);
Tensor linalg_det_backward(const Tensor& grad, const Tensor& det, const Tensor& A);
Tensor slogdet_backward(const Tensor& grad_logabsdet, const Tensor& A);
Tensor cholesky_backward(const Tensor& grad, bool upper, const Tensor& L);
Tensor lu_unpack_backward(const Tensor& gL, const Tensor& gU, int64_t m, int64_t n);
Tensor linalg_lu_factor_ex_backward(const Tensor& gLU, const Tensor& LU, const Tensor& pivots);
Tensor linalg_qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R,
                          std::string_view mode);
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U,
                    const Tensor& S, const Tensor& Vh, bool full_matrices, bool compute_uv);
Tensor eigh_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V);
/// The gradients of _addmm_activation w.r.t. self, mat1, mat2 (those mask asks for): the
/// activation's derivative once, then addmm's three formulas.
std::tuple<Tensor, Tensor, Tensor> addmm_activation_backward(const Tensor& grad, const Tensor& self,
                                                             const Tensor& mat1, const Tensor& mat2,
                                                             const Scalar& beta,
                                                             const Scalar& alpha, bool use_gelu,
                                                             const Tensor& result,
                                                             std::array<bool, 3> mask);
}  // namespace retorch::autograd::fm

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
/// The three gradients of native_batch_norm from one reduction pass when no graph of the
/// backward is recorded; mask says which are needed (undefined tensors for the others).
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(
    const Tensor& grad, const Tensor& input, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const Tensor& save_mean, const Tensor& save_invstd, bool training, double eps,
    std::array<bool, 3> mask);
std::tuple<Tensor, Tensor, Tensor> group_norm_backward(
    const Tensor& grad, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, int64_t N, int64_t C, int64_t HxW, int64_t group,
    double eps, std::array<bool, 3> mask);
Tensor layer_norm_backward_input(const Tensor& grad, const Tensor& input,
                                 IntArrayRef normalized_shape, const Tensor& mean,
                                 const Tensor& rstd, const std::optional<Tensor>& weight,
                                 double eps);
Tensor layer_norm_backward_weight(const Tensor& grad, const Tensor& input,
                                  IntArrayRef normalized_shape, const Tensor& mean,
                                  const Tensor& rstd, double eps);
Tensor smooth_l1_double_backward(const Tensor& grad, const Tensor& grad_output,
                                 const Tensor& self, const Tensor& target, double beta);
Tensor bce_backward(const Tensor& grad, const Tensor& input, const Tensor& target,
                    const std::optional<Tensor>& weight, std::string_view reduction,
                    int64_t which);
Tensor bce_with_logits_backward(const Tensor& grad, const Tensor& input, const Tensor& target,
                                const std::optional<Tensor>& weight,
                                const std::optional<Tensor>& pos_weight,
                                std::string_view reduction, int64_t which);
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
