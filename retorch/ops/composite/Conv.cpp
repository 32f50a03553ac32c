// Composites of the convolution family: conv1d/conv2d (int and 'same'/'valid' padding),
// transposed convolutions, max_pool1d/2d, pixel (un)shuffle and the padding modes of F.pad.
#include <algorithm>
#include <string>

#include "retorch/autograd/GradMode.h"
#include "retorch/core/MemoryFormat.h"
#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

namespace {

// Runs a batched op on an unbatched input (one dim short) by adding a batch dim of 1.
template <typename F>
Tensor maybe_batched(const Tensor& input, int64_t batched_dim, const char* op, const F& f) {
  RT_CHECK(input.dim() == batched_dim || input.dim() == batched_dim - 1, "Expected ",
           batched_dim - 1, "D (unbatched) or ", batched_dim, "D (batched) input to ", op,
           ", but got input of size: ", input.sizes());
  if (input.dim() == batched_dim) return f(input);
  return f(input.unsqueeze(0)).squeeze(0);
}

void check_weight_dim(const Tensor& weight, int64_t want, const char* op) {
  RT_CHECK(weight.dim() == want, op, ": expected ", want, "-D weight, but got weight of size ",
           weight.sizes());
}

// Like PyTorch's CPU convolution, a 2-d conv of a channels-last input or weight gives a
// channels-last output (the kernels compute NCHW; the result is relaid out at the end).
Tensor conv_layout(const Tensor& out, const Tensor& input, const Tensor& weight) {
  if (out.dim() == 4 && (input.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                         weight.suggest_memory_format() == MemoryFormat::ChannelsLast))
    return out.contiguous(MemoryFormat::ChannelsLast);
  return out;
}

Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
               int64_t d, const char* op) {
  check_weight_dim(weight, d + 2, op);
  return maybe_batched(input, d + 2, op, [&](const Tensor& x) {
    return conv_layout(
        retorch::convolution(x, weight, bias, stride, padding, dilation, false, {0}, groups), x,
        weight);
  });
}

// padding='same' / 'valid' (PyTorch's _convolution_mode): 'same' pads dilation * (k - 1) in
// total per dim, the odd element on the right (by an explicit zero pad of the input).
Tensor conv_mode(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                 IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                 int64_t groups, int64_t d, const char* op) {
  if (padding == "valid")
    return conv_nd(input, weight, bias, stride, {0}, dilation, groups, d, op);
  RT_CHECK(padding == "same", op, ": invalid padding string: '", padding,
           "' (expected 'same' or 'valid')");
  for (int64_t s : stride)
    RT_CHECK(s == 1, op, ": padding='same' is not supported for strided convolutions (got "
             "stride=", stride, ")");
  check_weight_dim(weight, d + 2, op);
  std::vector<int64_t> pad(static_cast<size_t>(d)), extra(static_cast<size_t>(2 * d), 0);
  bool asymmetric = false;
  for (int64_t i = 0; i < d; ++i) {
    int64_t dl = dilation.size() == 1 ? dilation[0] : dilation[size_t(i)];
    int64_t total = dl * (weight.size(2 + i) - 1);
    pad[size_t(i)] = total / 2;
    if (total % 2) {
      // constant_pad_nd lists the last dim first: (left, right) pairs from the back.
      extra[size_t(2 * (d - 1 - i) + 1)] = 1;
      asymmetric = true;
    }
  }
  return maybe_batched(input, d + 2, op, [&](const Tensor& x) {
    Tensor xp = asymmetric ? retorch::constant_pad_nd(x, extra, 0) : x;
    return conv_layout(
        retorch::convolution(xp, weight, bias, stride, pad, dilation, false, {0}, groups), x,
        weight);
  });
}

Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                         IntArrayRef dilation, int64_t d, const char* op) {
  check_weight_dim(weight, d + 2, op);
  return maybe_batched(input, d + 2, op, [&](const Tensor& x) {
    return retorch::convolution(x, weight, bias, stride, padding, dilation, true, output_padding,
                                groups);
  });
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}
Tensor conv1d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return conv_mode(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}
Tensor conv2d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return conv_mode(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation,
                           1, "conv_transpose1d");
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation,
                           2, "conv_transpose2d");
}

// ---------------------------------------------------------------- max pooling

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      retorch::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  RT_CHECK(self.dim() == 2 || self.dim() == 3, "max_pool1d: expected 2D or 3D input tensor, but "
           "got input of size ", self.sizes());
  RT_CHECK(kernel_size.size() == 1 && stride.size() <= 1 && padding.size() == 1 &&
           dilation.size() == 1, "max_pool1d: expected one value each for kernel_size, stride, "
           "padding and dilation, but got kernel_size=", kernel_size, ", stride=", stride,
           ", padding=", padding, ", dilation=", dilation);
  // A row of height 1 through the 2-d kernel.
  int64_t s = stride.empty() ? kernel_size[0] : stride[0];
  Tensor r = std::get<0>(retorch::max_pool2d_with_indices(
      self.unsqueeze(-2), {1, kernel_size[0]}, {1, s}, {0, padding[0]}, {1, dilation[0]},
      ceil_mode));
  return r.squeeze(-2);
}

// ---------------------------------------------------------------- pixel shuffle

Tensor pixel_shuffle(const Tensor& self, int64_t upscale_factor) {
  const int64_t r = upscale_factor;
  RT_CHECK(self.dim() >= 3, "pixel_shuffle expects input to have at least 3 dimensions, but got "
           "input with ", self.dim(), " dimension(s)");
  RT_CHECK(r > 0, "pixel_shuffle expects a positive upscale_factor, but got ", r);
  int64_t C = self.size(-3), H = self.size(-2), W = self.size(-1);
  RT_CHECK(C % (r * r) == 0, "pixel_shuffle expects its input's 'channel' dimension to be "
           "divisible by the square of upscale_factor, but input.size(-3)=", C,
           " is not divisible by ", r * r);
  std::vector<int64_t> lead(self.sizes().begin(), self.sizes().end() - 3);
  int64_t b = int64_t(lead.size());
  std::vector<int64_t> split = lead, out = lead, perm;
  for (int64_t v : {C / (r * r), r, r, H, W}) split.push_back(v);
  for (int64_t v : {C / (r * r), H * r, W * r}) out.push_back(v);
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  for (int64_t v : {0, 3, 1, 4, 2}) perm.push_back(b + v);
  return self.reshape(split).permute(perm).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& self, int64_t downscale_factor) {
  const int64_t r = downscale_factor;
  RT_CHECK(self.dim() >= 3, "pixel_unshuffle expects input to have at least 3 dimensions, but "
           "got input with ", self.dim(), " dimension(s)");
  RT_CHECK(r > 0, "pixel_unshuffle expects a positive downscale_factor, but got ", r);
  int64_t C = self.size(-3), H = self.size(-2), W = self.size(-1);
  RT_CHECK(H % r == 0 && W % r == 0, "pixel_unshuffle expects height and width to be divisible "
           "by downscale_factor, but input.size(-2)=", H, " and input.size(-1)=", W,
           " are not divisible by ", r);
  std::vector<int64_t> lead(self.sizes().begin(), self.sizes().end() - 3);
  int64_t b = int64_t(lead.size());
  std::vector<int64_t> split = lead, out = lead, perm;
  for (int64_t v : {C, H / r, r, W / r, r}) split.push_back(v);
  for (int64_t v : {C * r * r, H / r, W / r}) out.push_back(v);
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  for (int64_t v : {0, 2, 4, 1, 3}) perm.push_back(b + v);
  return self.reshape(split).permute(perm).reshape(out);
}

// ---------------------------------------------------------------- padding

Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  RT_CHECK(pad.size() % 2 == 0, "constant_pad_nd: length of pad must be even but instead it "
           "equals ", pad.size());
  int64_t n = int64_t(pad.size()) / 2;
  RT_CHECK(n <= self.dim(), "constant_pad_nd: length of pad should be no more than twice the "
           "number of dimensions of the input. Pad length is ", pad.size(),
           " while the input has ", self.dim(), " dimensions.");
  for (int64_t k = 0; k < n; ++k) {
    int64_t d = self.dim() - 1 - k, l = pad[size_t(2 * k)], r = pad[size_t(2 * k + 1)];
    int64_t size = self.size(d);
    RT_CHECK(size + l + r >= 0, "constant_pad_nd: the input size ", size, ", plus negative "
             "padding ", l, " and ", r, " resulted in a negative output size, which is invalid. "
             "Check dimension ", d, " of your input of size ", self.sizes(), ".");
  }
  if (n > 0 && !(GradMode::is_enabled() && self.requires_grad())) {
    // Without autograd: the output filled with the value and the (cropped) input copied into
    // its interior, where one cat per padded dim copied everything each time (a [1024, 1024]
    // float pad of 1 on both dims 0.22 ms, PyTorch 0.16).
    std::vector<int64_t> shape = self.sizes().vec();
    Tensor src = self;
    std::vector<std::pair<int64_t, int64_t>> at;  // (dim, offset) of the input in the output
    for (int64_t k = 0; k < n; ++k) {
      int64_t d = self.dim() - 1 - k, l = pad[size_t(2 * k)], r = pad[size_t(2 * k + 1)];
      if (l < 0) src = src.narrow(d, -l, src.size(d) + l);
      if (r < 0) src = src.narrow(d, 0, src.size(d) + r);
      shape[size_t(d)] += l + r;
      at.emplace_back(d, std::max<int64_t>(l, 0));
    }
    // (a channels-last input gives a channels-last output, as in PyTorch)
    Tensor out = self.dim() == 4 && self.suggest_memory_format() == MemoryFormat::ChannelsLast
                     ? retorch::empty_strided(shape, channels_last_strides(shape),
                                              self.options()).fill_(value)
                     : retorch::full(shape, value, self.options());
    Tensor inner = out;
    for (auto [d, off] : at) inner = inner.narrow(d, off, src.size(d));
    if (inner.numel() > 0) inner.copy_(src);
    return out;
  }
  Tensor x = self;
  for (int64_t k = 0; k < n; ++k) {
    int64_t d = self.dim() - 1 - k, l = pad[size_t(2 * k)], r = pad[size_t(2 * k + 1)];
    // Negative pads crop first; then constant blocks go on either side.
    if (l < 0) x = x.narrow(d, -l, x.size(d) + l);
    if (r < 0) x = x.narrow(d, 0, x.size(d) + r);
    if (l <= 0 && r <= 0) continue;
    std::vector<Tensor> parts;
    std::vector<int64_t> shape = x.sizes().vec();
    if (l > 0) {
      shape[size_t(d)] = l;
      parts.push_back(retorch::full(shape, value, x.options()));
    }
    parts.push_back(x);
    if (r > 0) {
      shape[size_t(d)] = r;
      parts.push_back(retorch::full(shape, value, x.options()));
    }
    x = retorch::cat(parts, d);
  }
  return n == 0 ? self.clone() : x;
}

namespace {

enum class PadMode { kReflect, kReplicate, kCircular };

// x with dim d padded by (l, r) by gathering along d: reflected, clamped or wrapped indices.
Tensor index_pad(const Tensor& x, int64_t d, int64_t l, int64_t r, PadMode mode) {
  int64_t size = x.size(d), out = size + l + r;
  Tensor idx = make_empty({std::max<int64_t>(out, 0)}, kLong, x.device());
  int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t o = 0; o < out; ++o) {
    int64_t j = o - l;
    if (mode == PadMode::kReflect) {
      if (j < 0) j = -j;
      if (j >= size) j = 2 * (size - 1) - j;
    } else if (mode == PadMode::kReplicate) {
      j = std::clamp<int64_t>(j, 0, size - 1);
    } else {
      j = ((j % size) + size) % size;
    }
    p[o] = j;
  }
  return x.index_select(d, idx);
}

// reflection/replication_pad{1,2}d: the last `n` dims of a (batch,) channel, spatial input.
Tensor mode_pad(const Tensor& self, IntArrayRef padding, int64_t n, PadMode mode,
                const char* op) {
  RT_CHECK(int64_t(padding.size()) == 2 * n, op, ": padding size is expected to be ", 2 * n,
           ", but got ", padding.size());
  bool ok = self.dim() == n + 1 || self.dim() == n + 2;
  for (int64_t i = self.dim() == n + 2 ? 1 : 0; ok && i < self.dim(); ++i) ok = self.size(i) != 0;
  RT_CHECK(ok, op, ": expected ", n + 1, "D or ", n + 2, "D (batch mode) tensor with possibly 0 "
           "batch size and other non-zero dimensions for input, but got: ", self.sizes());
  Tensor x = self;
  for (int64_t k = 0; k < n; ++k) {
    int64_t d = self.dim() - 1 - k, l = padding[size_t(2 * k)], r = padding[size_t(2 * k + 1)];
    int64_t size = self.size(d);
    if (mode == PadMode::kReflect)
      RT_CHECK(l < size && r < size, op, ": padding size should be less than the corresponding "
               "input dimension, but got: padding (", l, ", ", r, ") at dimension ", d,
               " of input ", self.sizes());
    RT_CHECK(size + l + r >= 1, op, ": input (size ", size, " at dimension ", d,
             ") is too small. Calculated output size: ", size + l + r);
    x = index_pad(x, d, l, r, mode);
  }
  return x;
}

Tensor pad_circular(const Tensor& self, IntArrayRef pad) {
  int64_t n = int64_t(pad.size()) / 2;
  RT_CHECK(self.dim() == n + 1 || self.dim() == n + 2, "pad: circular padding of ", n,
           " dims expects a ", n + 1, "D or ", n + 2, "D input, but got input of size ",
           self.sizes());
  Tensor x = self;
  for (int64_t k = 0; k < n; ++k) {
    int64_t d = self.dim() - 1 - k, l = pad[size_t(2 * k)], r = pad[size_t(2 * k + 1)];
    int64_t size = self.size(d);
    RT_CHECK(l <= size && r <= size, "pad: padding value causes wrapping around more than once "
             "(padding (", l, ", ", r, ") at dimension ", d, " of input ", self.sizes(), ")");
    RT_CHECK(size + l + r >= 1 && l > -size && r > -size, "pad: negative padding (", l, ", ", r,
             ") at dimension ", d, " of input ", self.sizes(), " leaves no elements");
    // Like PyTorch, negative pads crop first and the positive ones wrap the cropped tensor.
    int64_t cl = std::max<int64_t>(-l, 0), cr = std::max<int64_t>(-r, 0);
    x = x.narrow(d, cl, size - cl - cr);
    x = index_pad(x, d, std::max<int64_t>(l, 0), std::max<int64_t>(r, 0), PadMode::kCircular);
  }
  return x;
}

}  // namespace

Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding) {
  return mode_pad(self, padding, 1, PadMode::kReflect, "reflection_pad1d");
}
Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding) {
  return mode_pad(self, padding, 2, PadMode::kReflect, "reflection_pad2d");
}
Tensor replication_pad1d(const Tensor& self, IntArrayRef padding) {
  return mode_pad(self, padding, 1, PadMode::kReplicate, "replication_pad1d");
}
Tensor replication_pad2d(const Tensor& self, IntArrayRef padding) {
  return mode_pad(self, padding, 2, PadMode::kReplicate, "replication_pad2d");
}

// PyTorch's aten::pad: the mode is parsed first, then the pad length, then the input rank.
Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode,
           std::optional<double> value) {
  std::optional<PadMode> m;
  if (mode == "reflect") m = PadMode::kReflect;
  if (mode == "replicate") m = PadMode::kReplicate;
  if (mode == "circular") m = PadMode::kCircular;
  if (!m && mode != "constant")
    RT_ERROR_KIND(ErrorKind::kNotImplemented, "pad: unrecognised padding mode \"", mode, "\"");
  RT_CHECK(pad.size() % 2 == 0, "pad: padding length must be divisible by 2, got ", pad.size());
  RT_CHECK(int64_t(pad.size()) <= 2 * self.dim(), "pad: padding length should be less than or "
           "equal to two times the input dimension but got padding length ", pad.size(),
           " and input of dimension ", self.dim());
  if (!m) return retorch::constant_pad_nd(self, pad, value.value_or(0.0));
  RT_CHECK(!value || *value == 0, "pad: padding mode \"", mode,
           "\" doesn't take in value argument");
  int64_t n = int64_t(pad.size()) / 2;
  if (n < 1 || n > 3 || (self.dim() != n + 1 && self.dim() != n + 2))
    RT_ERROR_KIND(ErrorKind::kNotImplemented, "pad: only 2D, 3D, 4D, 5D padding with "
                  "non-constant padding are supported (got mode \"", mode, "\", padding of "
                  "length ", pad.size(), " and input of size ", self.sizes(), ")");
  if (*m == PadMode::kCircular) {
    RT_CHECK(self.dim() == n + 2, "pad: invalid padding size for circular padding of input of "
             "size ", self.sizes(), ": expected ", 2 * (self.dim() - 2), " values but got ",
             pad.size());
    return pad_circular(self, pad);
  }
  if (*m == PadMode::kReflect) {
    if (n == 1) return retorch::reflection_pad1d(self, pad);
    if (n == 2) return retorch::reflection_pad2d(self, pad);
    return mode_pad(self, pad, 3, PadMode::kReflect, "reflection_pad3d");
  }
  if (n == 1) return retorch::replication_pad1d(self, pad);
  if (n == 2) return retorch::replication_pad2d(self, pad);
  return mode_pad(self, pad, 3, PadMode::kReplicate, "replication_pad3d");
}

}  // namespace retorch::composite
