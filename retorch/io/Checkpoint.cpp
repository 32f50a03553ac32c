// Module, optimizer and training checkpoints: state dicts under prefixes in one safetensors file.
#include "retorch/io/Checkpoint.h"

#include "retorch/optim/LRScheduler.h"
#include "retorch/optim/Optimizer.h"

namespace retorch {

void save(const nn::Module& module, const std::string& path) {
  io::save_safetensors(path, module.state_dict());
}

void load(nn::Module& module, const std::string& path) {
  OrderedDict<Tensor> state = io::load_safetensors(path);
  try {
    module.load_state_dict(state);
  } catch (const Error& e) {
    RT_CHECK(false, "loading ", path, ": ", e.what());
  }
}

void save(const Tensor& tensor, const std::string& path) { save(std::vector<Tensor>{tensor}, path); }

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  OrderedDict<Tensor> named("tensor");
  for (size_t i = 0; i < tensors.size(); ++i) named.insert(std::to_string(i), tensors[i].detach());
  io::save_safetensors(path, named);
}

void load(Tensor& tensor, const std::string& path) {
  std::vector<Tensor> all;
  load(all, path);
  RT_CHECK(all.size() == 1, "load: ", path, " holds ", all.size(), " tensors, expected one");
  tensor = all[0];
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  OrderedDict<Tensor> named = io::load_safetensors(path);
  tensors.clear();
  for (size_t i = 0; i < named.size(); ++i) {
    const Tensor* t = named.find(std::to_string(i));
    RT_CHECK(t != nullptr, "load: ", path, " is not a tensor list saved by save(): no tensor '", i,
             "'");
    tensors.push_back(*t);
  }
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  io::save_safetensors(path, optimizer.state_dict());
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  optimizer.load_state_dict(io::load_safetensors(path));
}

}  // namespace retorch

namespace retorch::io {

namespace {

void add_prefixed(OrderedDict<Tensor>& out, const std::string& prefix,
                  const OrderedDict<Tensor>& part) {
  for (const auto& [name, t] : part) out.insert(prefix + name, t);
}

OrderedDict<Tensor> take_prefixed(const OrderedDict<Tensor>& all, const std::string& prefix) {
  OrderedDict<Tensor> out("state entry");
  for (const auto& [name, t] : all)
    if (name.rfind(prefix, 0) == 0) out.insert(name.substr(prefix.size()), t);
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const TrainingState& state, const Metadata& metadata) {
  OrderedDict<Tensor> all("checkpoint entry");
  if (state.model) add_prefixed(all, "model.", state.model->state_dict());
  if (state.optimizer) add_prefixed(all, "optimizer.", state.optimizer->state_dict());
  if (state.scheduler) add_prefixed(all, "scheduler.", state.scheduler->state_dict());
  save_safetensors(path, all, metadata);
}

Metadata load_checkpoint(const std::string& path, const TrainingState& state) {
  SafetensorsFile file = load_safetensors_file(path);
  try {
    if (state.model) state.model->load_state_dict(take_prefixed(file.tensors, "model."));
    if (state.optimizer) state.optimizer->load_state_dict(take_prefixed(file.tensors, "optimizer."));
    if (state.scheduler) state.scheduler->load_state_dict(take_prefixed(file.tensors, "scheduler."));
  } catch (const Error& e) {
    RT_CHECK(false, "checkpoint ", path, " does not fit this run: ", e.what());
  }
  return file.metadata;
}

}  // namespace retorch::io
