// nn_oracle: builds a C++ nn module from a JSON spec, loads a torch state_dict and inputs from
// safetensors, runs forward and backward, and writes outputs and gradients to safetensors.
//
// usage: nn_oracle spec.json in.safetensors out.safetensors
//   spec: {"module": "LSTM", "options": {...}, "train": false, "dtype": "float64",
//          "grad_inputs": ["input", "h0"], "seed": 0, "load_state": true, "print": false}
//   in:   state.<name> (the state_dict), input.<name>, grad_output.<i>, option.<name>
//   out:  output.<i>, grad.input.<name>, grad.param.<name>, state_after.<name>
#include "nn_oracle.h"

#include <fstream>
#include <iostream>

#include "retorch/io/Safetensors.h"

namespace retorch::oracle {

const Tensor& Inputs::at(const std::string& name) const {
  auto it = tensors.find(name);
  RT_CHECK(it != tensors.end(), "nn_oracle: missing input tensor '", name, "'");
  return it->second;
}

Tensor Inputs::get(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? Tensor() : it->second;
}

namespace {

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

ScalarType dtype_of(const std::string& name) {
  if (name == "float64") return kDouble;
  RT_CHECK(name == "float32", "nn_oracle: unsupported dtype ", name);
  return kFloat;
}

int run(const std::string& spec_path, const std::string& in_path, const std::string& out_path) {
  std::ifstream f(spec_path);
  RT_CHECK(f.good(), "nn_oracle: cannot open ", spec_path);
  Json spec = Json::parse(f);
  const ScalarType dtype = dtype_of(spec.value("dtype", "float32"));

  OrderedDict<Tensor> file = io::load_safetensors(in_path);
  OrderedDict<Tensor> state("tensor");
  Inputs inputs, options;
  std::map<int, Tensor> grad_outputs;
  for (const auto& [key, value] : file) {
    Tensor t = value.clone();  // own the memory, not the file's map
    if (starts_with(key, "state."))
      state.insert(key.substr(6), t);
    else if (starts_with(key, "input."))
      inputs.tensors[key.substr(6)] = t;
    else if (starts_with(key, "option."))
      options.tensors[key.substr(7)] = t;
    else if (starts_with(key, "grad_output."))
      grad_outputs[std::stoi(key.substr(12))] = t;
  }
  for (const std::string& name : spec.value("grad_inputs", std::vector<std::string>{}))
    inputs.tensors[name] = inputs.at(name).detach().requires_grad_();

  if (spec.contains("seed")) manual_seed(spec["seed"].get<uint64_t>());
  Runner runner = make_runner(spec, options);
  runner.module->to(dtype);
  // "load_state": false keeps retorch's own initialization (the init-statistics tests).
  if (spec.value("load_state", true)) runner.module->load_state_dict(state, true);
  if (spec.value("print", false)) std::cout << *runner.module << std::endl;
  runner.module->train(spec.value("train", false));

  std::vector<Tensor> outputs;
  if (spec.value("forward", true)) outputs = runner.forward(inputs);
  OrderedDict<Tensor> result("tensor");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined()) result.insert("output." + std::to_string(i), outputs[i].detach());

  autograd::variable_list roots, grads;
  for (const auto& [i, g] : grad_outputs) {
    RT_CHECK(i < int(outputs.size()) && outputs[size_t(i)].defined(), "nn_oracle: grad_output.", i,
             " has no output");
    roots.push_back(outputs[size_t(i)]);
    grads.push_back(g);
  }
  if (!roots.empty()) {
    autograd::backward(roots, grads);
    for (const auto& [name, t] : inputs.tensors)
      if (t.requires_grad() && t.grad().defined()) result.insert("grad.input." + name, t.grad());
    for (const auto& [name, p] : runner.module->named_parameters())
      if (p.grad().defined()) result.insert("grad.param." + name, p.grad());
  }
  for (const auto& [name, t] : runner.module->state_dict()) result.insert("state_after." + name, t);
  io::save_safetensors(out_path, result);
  return 0;
}

}  // namespace
}  // namespace retorch::oracle

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: nn_oracle spec.json in.safetensors out.safetensors\n";
    return 2;
  }
  try {
    return retorch::oracle::run(argv[1], argv[2], argv[3]);
  } catch (const std::exception& e) {
    std::cerr << "nn_oracle: " << e.what() << "\n";
    return 1;
  }
}
