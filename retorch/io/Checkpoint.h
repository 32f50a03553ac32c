// Module, optimizer and training checkpoints on safetensors files, written atomically.
#pragma once
#include <string>

#include "retorch/io/Safetensors.h"
#include "retorch/nn/Module.h"

namespace retorch::optim {
class Optimizer;
class LRScheduler;
}  // namespace retorch::optim

namespace retorch {

/// Saves a module's state_dict as a safetensors file (like torch::save(module, path)).
void save(const nn::Module& module, const std::string& path);
/// Loads a file saved by save() into module; the error lists missing, unexpected and
/// mis-shaped entries (a checkpoint of another architecture).
void load(nn::Module& module, const std::string& path);
/// Saves a tensor (or a list of tensors, named "0", "1", ...) as a safetensors file.
void save(const Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
/// Loads a file written by save(tensor) into `tensor` (like torch::load(tensor, path)).
void load(Tensor& tensor, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);
/// Saves and loads an optimizer's state (flat state dict).
void save(const optim::Optimizer& optimizer, const std::string& path);
void load(optim::Optimizer& optimizer, const std::string& path);

}  // namespace retorch

namespace retorch::io {

/// The parts of a training run stored in one checkpoint file, under the prefixes "model.",
/// "optimizer." and "scheduler.", with free-form metadata (epoch, step, RNG state, ...).
struct TrainingState {
  nn::Module* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  optim::LRScheduler* scheduler = nullptr;
};

/// Writes every part of state and the metadata to path atomically (a crash leaves the old file).
void save_checkpoint(const std::string& path, const TrainingState& state, const Metadata& metadata);
/// Restores the parts of state from path and returns the metadata. The model is restored
/// strictly; the error names the file.
Metadata load_checkpoint(const std::string& path, const TrainingState& state);

}  // namespace retorch::io
