// Convolution modules: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d with libtorch options.
#pragma once
#include <string>
#include <variant>

#include "retorch/nn/ExpandingArray.h"
#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

/// Options of a D-dimensional (transposed) convolution: Conv2dOptions(1, 16, 5).padding(2).
template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  RETORCH_ARG(int64_t, in_channels);
  RETORCH_ARG(int64_t, out_channels);
  RETORCH_ARG(ExpandingArray<D>, kernel_size);
  RETORCH_ARG(ExpandingArray<D>, stride) = 1;
  RETORCH_ARG(ExpandingArray<D>, dilation) = 1;
  RETORCH_ARG(ExpandingArray<D>, output_padding) = 0;
  RETORCH_ARG(int64_t, groups) = 1;
  RETORCH_ARG(bool, bias) = true;
  /// "zeros", "reflect", "replicate" or "circular".
  RETORCH_ARG(std::string, padding_mode) = "zeros";

 public:
  /// Padding per side, or "same" / "valid".
  ConvOptions& padding(ExpandingArray<D> p) {
    padding_ = p;
    return *this;
  }
  ConvOptions& padding(const std::string& mode) {
    padding_ = mode;
    return *this;
  }
  ConvOptions& padding(const char* mode) { return padding(std::string(mode)); }
  const std::variant<ExpandingArray<D>, std::string>& padding() const { return padding_; }

 private:
  std::variant<ExpandingArray<D>, std::string> padding_ = ExpandingArray<D>(0);
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using ConvTranspose1dOptions = ConvOptions<1>;
using ConvTranspose2dOptions = ConvOptions<2>;

/// The shared part of (transposed) convolutions: weight/bias, init, printing.
template <size_t D>
class ConvNdImpl : public Module {
 public:
  ConvNdImpl(const ConvOptions<D>& options, bool transposed, std::string name);
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  ConvOptions<D> options;
  Tensor weight, bias;

 protected:
  /// The input padded for a non-"zeros" padding_mode, and the padding left for the conv.
  Tensor pad_input(const Tensor& input, std::vector<int64_t>& conv_padding) const;
  bool transposed_;
};

/// A 1-d convolution over [N, C, L] (or unbatched [C, L]) inputs.
class Conv1dImpl : public ConvNdImpl<1> {
 public:
  Conv1dImpl(int64_t in, int64_t out, ExpandingArray<1> k) : Conv1dImpl(Conv1dOptions(in, out, k)) {}
  explicit Conv1dImpl(const Conv1dOptions& options)
      : ConvNdImpl<1>(options, false, "retorch::nn::Conv1d") {}
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(Conv1d);

/// A 2-d convolution over [N, C, H, W] (or unbatched [C, H, W]) inputs.
class Conv2dImpl : public ConvNdImpl<2> {
 public:
  Conv2dImpl(int64_t in, int64_t out, ExpandingArray<2> k) : Conv2dImpl(Conv2dOptions(in, out, k)) {}
  explicit Conv2dImpl(const Conv2dOptions& options)
      : ConvNdImpl<2>(options, false, "retorch::nn::Conv2d") {}
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(Conv2d);

/// The transposed 1-d convolution (weight [in, out/groups, k]).
class ConvTranspose1dImpl : public ConvNdImpl<1> {
 public:
  ConvTranspose1dImpl(int64_t in, int64_t out, ExpandingArray<1> k)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in, out, k)) {}
  explicit ConvTranspose1dImpl(const ConvTranspose1dOptions& options)
      : ConvNdImpl<1>(options, true, "retorch::nn::ConvTranspose1d") {}
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(ConvTranspose1d);

/// The transposed 2-d convolution (weight [in, out/groups, kh, kw]).
class ConvTranspose2dImpl : public ConvNdImpl<2> {
 public:
  ConvTranspose2dImpl(int64_t in, int64_t out, ExpandingArray<2> k)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in, out, k)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options)
      : ConvNdImpl<2>(options, true, "retorch::nn::ConvTranspose2d") {}
  Tensor forward(const Tensor& input) override;
};
RETORCH_MODULE(ConvTranspose2d);

}  // namespace retorch::nn
