// nn::summary: records leaf-module outputs through a forward observer and formats the table.
#include "retorch/nn/Summary.h"

#include <iomanip>
#include <map>
#include <sstream>

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn {

namespace {

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > (v < 0 ? 1 : 0); i -= 3) s.insert(size_t(i), ",");
  return s;
}

std::string short_name(const std::string& name) {
  auto pos = name.rfind("::");
  return pos == std::string::npos ? name : name.substr(pos + 2);
}

}  // namespace

ModelSummary summary(Module& model, const std::vector<int64_t>& input_shape, ScalarType dtype) {
  ModelSummary s;
  std::map<std::string, int> counts;
  int64_t activation_elems = 0;
  const bool was_training = model.is_training();
  model.eval();
  {
    NoGradGuard no_grad;
    ForwardObserverGuard observe([&](const Module& m, const Tensor& out) {
      if (!m.named_children().empty()) return;  // containers: their leaves are listed
      SummaryRow row;
      row.layer = short_name(m.name()) + "-" + std::to_string(++counts[short_name(m.name())]);
      row.output_shape = out.sizes().vec();
      for (const auto& p : m.parameters(false)) row.params += p.numel();
      activation_elems += out.numel();
      s.rows.push_back(std::move(row));
    });
    // On the model's device: a model moved to meta is summarized without computing anything.
    const auto params = model.parameters();
    const Device device = params.empty() ? Device(kCPU) : params.front().device();
    model.forward(zeros(input_shape, TensorOptions(dtype).device(device)));
  }
  model.train(was_training);
  for (const auto& p : model.parameters()) {
    s.total_params += p.numel();
    if (p.requires_grad()) s.trainable_params += p.numel();
  }
  const double bytes = double(element_size(dtype)), mb = 1024.0 * 1024.0;
  int64_t input_elems = 1;
  for (int64_t d : input_shape) input_elems *= d;
  s.input_mb = double(input_elems) * bytes / mb;
  s.activations_mb = 2.0 * double(activation_elems) * bytes / mb;  // outputs and their grads
  s.params_mb = double(s.total_params) * bytes / mb;
  return s;
}

std::string ModelSummary::to_string() const {
  std::ostringstream os;
  const std::string line(64, '-'), dline(64, '=');
  os << line << "\n"
     << std::left << std::setw(24) << "Layer (type)" << std::setw(26) << "Output Shape"
     << std::right << std::setw(14) << "Param #" << "\n"
     << dline << "\n";
  for (const auto& r : rows) {
    std::ostringstream shape;
    shape << IntArrayRef(r.output_shape);
    os << std::left << std::setw(24) << r.layer << std::setw(26) << shape.str() << std::right
       << std::setw(14) << with_commas(r.params) << "\n";
  }
  os << dline << "\n"
     << "Total params: " << with_commas(total_params) << "\n"
     << "Trainable params: " << with_commas(trainable_params) << "\n"
     << "Non-trainable params: " << with_commas(total_params - trainable_params) << "\n"
     << line << "\n"
     << std::fixed << std::setprecision(2) << "Input size (MB): " << input_mb << "\n"
     << "Forward/backward pass size (MB): " << activations_mb << "\n"
     << "Params size (MB): " << params_mb << "\n"
     << "Estimated Total Size (MB): " << input_mb + activations_mb + params_mb << "\n"
     << line << "\n";
  return os.str();
}

}  // namespace retorch::nn
