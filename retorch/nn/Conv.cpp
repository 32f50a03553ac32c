// Convolution modules: weight layout, PyTorch's default initialization, padding modes, printing.
#include "retorch/nn/Conv.h"

#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/nn/Init.h"

namespace retorch::nn {

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const ConvOptions<D>& options_, bool transposed, std::string name)
    : Module(std::move(name)), options(options_), transposed_(transposed) {
  const int64_t in = options.in_channels(), out = options.out_channels(), g = options.groups();
  RT_CHECK(g > 0, this->name(), ": groups must be a positive integer, got ", g);
  RT_CHECK(in % g == 0, this->name(), ": in_channels must be divisible by groups (", in, " vs ",
           g, ")");
  RT_CHECK(out % g == 0, this->name(), ": out_channels must be divisible by groups (", out,
           " vs ", g, ")");
  const std::string& mode = options.padding_mode();
  RT_CHECK(mode == "zeros" || mode == "reflect" || mode == "replicate" || mode == "circular",
           this->name(), ": padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
           "'circular', but got padding_mode='", mode, "'");
  if (const auto* s = std::get_if<std::string>(&options.padding())) {
    RT_CHECK(*s == "same" || *s == "valid", this->name(), ": Invalid padding string '", *s,
             "', should be one of {'valid', 'same'}");
    RT_CHECK(!transposed, this->name(), ": padding='", *s, "' is only supported for convolutions");
    for (int64_t st : options.stride().vec())
      RT_CHECK(*s != "same" || st == 1, this->name(),
               ": padding='same' is not supported for strided convolutions");
  }
  std::vector<int64_t> shape = transposed ? std::vector<int64_t>{in, out / g}
                                          : std::vector<int64_t>{out, in / g};
  for (int64_t k : options.kernel_size().vec()) shape.push_back(k);
  weight = register_parameter("weight", retorch::empty(shape));
  if (options.bias()) bias = register_parameter("bias", retorch::empty({out}));
  reset_parameters();
}

template <size_t D>
void ConvNdImpl<D>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
    if (fan_in != 0) init::uniform_(bias, -1.0 / std::sqrt(double(fan_in)), 1.0 / std::sqrt(double(fan_in)));
  }
}

template <size_t D>
Tensor ConvNdImpl<D>::pad_input(const Tensor& input, std::vector<int64_t>& conv_padding) const {
  std::vector<int64_t> lo(D, 0), hi(D, 0);
  if (const auto* p = std::get_if<ExpandingArray<D>>(&options.padding())) {
    lo = hi = p->vec();
  } else if (std::get<std::string>(options.padding()) == "same") {
    for (size_t i = 0; i < D; ++i) {
      int64_t total = options.dilation()[i] * (options.kernel_size()[i] - 1);
      lo[i] = total / 2;
      hi[i] = total - lo[i];
    }
  }
  if (options.padding_mode() == "zeros") {
    bool symmetric = lo == hi;
    conv_padding = symmetric ? lo : std::vector<int64_t>(D, 0);
    if (symmetric) return input;
    std::vector<int64_t> pads;  // last dim first, as F.pad takes them
    for (size_t i = D; i-- > 0;) {
      pads.push_back(lo[i]);
      pads.push_back(hi[i]);
    }
    return pad(input, pads, "constant", 0.0);
  }
  conv_padding.assign(D, 0);
  std::vector<int64_t> pads;
  for (size_t i = D; i-- > 0;) {
    pads.push_back(lo[i]);
    pads.push_back(hi[i]);
  }
  return pad(input, pads, options.padding_mode(), std::nullopt);
}

template <size_t D>
void ConvNdImpl<D>::pretty_print(std::ostream& os) const {
  os << std::boolalpha << name() << "(" << options.in_channels() << ", " << options.out_channels()
     << ", kernel_size=" << options.kernel_size().ref() << ", stride=" << options.stride().ref();
  if (const auto* p = std::get_if<ExpandingArray<D>>(&options.padding())) {
    for (int64_t v : p->vec())
      if (v != 0) {
        os << ", padding=" << p->ref();
        break;
      }
  } else {
    os << ", padding='" << std::get<std::string>(options.padding()) << "'";
  }
  for (int64_t v : options.dilation().vec())
    if (v != 1) {
      os << ", dilation=" << options.dilation().ref();
      break;
    }
  if (transposed_)
    for (int64_t v : options.output_padding().vec())
      if (v != 0) {
        os << ", output_padding=" << options.output_padding().ref();
        break;
      }
  if (options.groups() != 1) os << ", groups=" << options.groups();
  if (!options.bias()) os << ", bias=false";
  if (options.padding_mode() != "zeros") os << ", padding_mode=" << options.padding_mode();
  os << ")";
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;

namespace {

std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

}  // namespace

Tensor Conv1dImpl::forward(const Tensor& input) {
  std::vector<int64_t> p;
  Tensor x = pad_input(input, p);
  return conv1d(x, weight, opt(bias), options.stride(), p, options.dilation(), options.groups());
}

Tensor Conv2dImpl::forward(const Tensor& input) {
  std::vector<int64_t> p;
  Tensor x = pad_input(input, p);
  return conv2d(x, weight, opt(bias), options.stride(), p, options.dilation(), options.groups());
}

Tensor ConvTranspose1dImpl::forward(const Tensor& input) {
  RT_CHECK(options.padding_mode() == "zeros", name(), ": Only \"zeros\" padding mode is supported");
  return conv_transpose1d(input, weight, opt(bias), options.stride(),
                          std::get<ExpandingArray<1>>(options.padding()), options.output_padding(),
                          options.groups(), options.dilation());
}

Tensor ConvTranspose2dImpl::forward(const Tensor& input) {
  RT_CHECK(options.padding_mode() == "zeros", name(), ": Only \"zeros\" padding mode is supported");
  return conv_transpose2d(input, weight, opt(bias), options.stride(),
                          std::get<ExpandingArray<2>>(options.padding()), options.output_padding(),
                          options.groups(), options.dilation());
}

}  // namespace retorch::nn
