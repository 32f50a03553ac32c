// Backward helpers of the convolution, pooling and resampling family, written in retorch ops.
#include "retorch/autograd/FunctionsManual.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::autograd::fm {

// Note [Convolution double backward]
// convolution's input gradient is the convolution with `transposed` flipped (an ordinary conv is
// the adjoint of a transposed one with the same weight), and its weight gradient is the op
// _convolution_backward_weight, which is linear in both its tensor arguments. The adjoints of
// _convolution_backward_weight are again convolutions, so every order of derivative stays inside
// {convolution, _convolution_backward_weight} and gradgradcheck holds.

namespace {

// The transposed convolution of a with w, given the output_padding that makes its spatial size
// equal to target's (the forward conv's floor division loses that remainder).
Tensor conv_transpose_to(const Tensor& a, const Tensor& w, IntArrayRef target, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  int64_t d = w.dim() - 2;
  auto s = expand_param(stride, size_t(d), 1), p = expand_param(padding, size_t(d), 0),
       dl = expand_param(dilation, size_t(d), 1);
  std::vector<int64_t> op(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) {
    size_t k = size_t(i);
    int64_t base = (a.size(2 + i) - 1) * s[k] - 2 * p[k] + dl[k] * (w.size(2 + i) - 1) + 1;
    op[k] = target[size_t(2 + i)] - base;
  }
  return convolution(a, w, std::nullopt, s, p, dl, true, op, groups);
}

Tensor conv_plain(const Tensor& a, const Tensor& w, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, int64_t groups) {
  int64_t d = w.dim() - 2;
  std::vector<int64_t> zeros_op(size_t(d), 0);
  return convolution(a, w, std::nullopt, stride, padding, dilation, false, zeros_op, groups);
}

// conv_plain cut to target's spatial size: a transposed convolution whose output_padding is at
// least its stride (allowed below the dilation) has an output that fits one more stride, and
// the positions past the transposed convolution's input have no input to send gradient to.
Tensor conv_plain_to(const Tensor& a, const Tensor& w, IntArrayRef target, IntArrayRef stride,
                     IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  Tensor r = conv_plain(a, w, stride, padding, dilation, groups);
  for (int64_t i = 2; i < r.dim(); ++i)
    if (r.size(i) > target[size_t(i)]) r = r.narrow(i, 0, target[size_t(i)]);
  return r;
}

}  // namespace

std::vector<int64_t> last_two(IntArrayRef sizes) {
  size_t n = sizes.size();
  return {sizes[n - 2], sizes[n - 1]};
}

Tensor convolution_backward_input(const Tensor& grad, IntArrayRef input_sizes,
                                  const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                                  IntArrayRef dilation, bool transposed,
                                  IntArrayRef /*output_padding*/, int64_t groups) {
  if (transposed)
    return conv_plain_to(grad, weight, input_sizes, stride, padding, dilation, groups);
  return conv_transpose_to(grad, weight, input_sizes, stride, padding, dilation, groups);
}

Tensor convolution_backward_bias(const Tensor& grad) {
  // Two contiguous-row reductions are several times faster than one over dims (0, 2, 3).
  int64_t spatial = 1;
  for (int64_t i = 2; i < grad.dim(); ++i) spatial *= grad.size(i);
  const std::vector<int64_t> last{2}, first{0};
  return grad.reshape({grad.size(0), grad.size(1), spatial}).sum(last).sum(first);
}

// _convolution_backward_weight(go, x) is W(go, x) when not transposed and W(x, go) when
// transposed, with W(g, x)[o, c, k] = sum g[n, o, p] * x[n, c, p * s - padding + k * dilation].
// Its adjoint in g is conv(x, ggw); in x it is conv_transpose(g, ggw).
Tensor conv_weight_grad_grad_output(const Tensor& grad, const Tensor& input,
                                    IntArrayRef grad_output_sizes, IntArrayRef stride,
                                    IntArrayRef padding, IntArrayRef dilation, bool transposed,
                                    int64_t groups) {
  if (!transposed) return conv_plain(input, grad, stride, padding, dilation, groups);
  return conv_transpose_to(input, grad, grad_output_sizes, stride, padding, dilation, groups);
}

Tensor conv_weight_grad_input(const Tensor& grad, const Tensor& grad_output,
                              IntArrayRef input_sizes, IntArrayRef stride, IntArrayRef padding,
                              IntArrayRef dilation, bool transposed, int64_t groups) {
  if (transposed)
    return conv_plain_to(grad_output, grad, input_sizes, stride, padding, dilation, groups);
  return conv_transpose_to(grad_output, grad, input_sizes, stride, padding, dilation, groups);
}

Tensor max_pool_double_backward(const Tensor& grad, const Tensor& indices) {
  // Indices are flat offsets into each (batch, channel) plane of the pooled input.
  std::vector<int64_t> lead(indices.sizes().begin(), indices.sizes().end() - 2);
  std::vector<int64_t> gshape = lead, ishape = lead;
  gshape.push_back(-1);
  ishape.push_back(-1);
  return grad.reshape(gshape).gather(-1, indices.reshape(ishape)).reshape(indices.sizes());
}

}  // namespace retorch::autograd::fm
