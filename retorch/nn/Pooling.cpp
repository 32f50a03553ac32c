// Pooling modules: forward through the pooling ops and libtorch-style printing.
#include "retorch/nn/Pooling.h"

#include "retorch/generated/Functions.h"

namespace retorch::nn {

Tensor MaxPool1dImpl::forward(const Tensor& input) {
  return max_pool1d(input, options.kernel_size(), options.stride(), options.padding(),
                    options.dilation(), options.ceil_mode());
}

Tensor MaxPool2dImpl::forward(const Tensor& input) {
  return max_pool2d(input, options.kernel_size(), options.stride(), options.padding(),
                    options.dilation(), options.ceil_mode());
}

template <size_t D>
static void print_max_pool(std::ostream& os, const char* name, const MaxPoolOptions<D>& o) {
  os << std::boolalpha << name << "(kernel_size=" << o.kernel_size().ref()
     << ", stride=" << o.stride().ref() << ", padding=" << o.padding().ref()
     << ", dilation=" << o.dilation().ref() << ", ceil_mode=" << o.ceil_mode() << ")";
}

void MaxPool1dImpl::pretty_print(std::ostream& os) const { print_max_pool(os, name().c_str(), options); }

void MaxPool2dImpl::pretty_print(std::ostream& os) const { print_max_pool(os, name().c_str(), options); }

Tensor AvgPool2dImpl::forward(const Tensor& input) {
  return avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(),
                    options.ceil_mode(), options.count_include_pad(), options.divisor_override());
}

void AvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::AvgPool2d(kernel_size=" << options.kernel_size().ref()
     << ", stride=" << options.stride().ref() << ", padding=" << options.padding().ref() << ")";
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input, options.output_size());
}

void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::AdaptiveAvgPool2d(output_size=" << options.output_size().ref() << ")";
}

Tensor AdaptiveMaxPool2dImpl::forward(const Tensor& input) {
  return std::get<0>(adaptive_max_pool2d(input, options.output_size()));
}

void AdaptiveMaxPool2dImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::AdaptiveMaxPool2d(output_size=" << options.output_size().ref() << ")";
}

}  // namespace retorch::nn
