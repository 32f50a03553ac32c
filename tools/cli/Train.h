// `retorch train`: the training job (data, model, optimizer, schedule, checkpoints, reports).
#pragma once
#include <cstdint>
#include <string>

namespace retorch::cli {

/// Everything `retorch train` takes on its command line.
struct TrainConfig {
  std::string model = "convnet";
  std::string dataset = "fashion-mnist";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t epochs = 5;
  int64_t batch_size = 100;
  double lr = 1e-3;
  std::string optimizer = "adam";  // sgd | adam
  double momentum = 0.9;           // sgd only
  double weight_decay = 0.0;
  // cosine: lr decays from --lr to 0 over the run, per batch (the default; see Train.cpp)
  std::string schedule = "cosine";  // none | onecycle | cosine
  bool augment = false;            // random crop (padding 2) + horizontal flip
  uint64_t seed = 0;
  std::string out_dir = "runs/train";
  std::string checkpoint_dir;      // default <out_dir>/checkpoints
  bool resume = false;
  std::string init_weights;        // safetensors state dict to start from
  int64_t max_steps = -1;          // stop after this many optimizer steps (-1: no limit)
  int64_t train_limit = -1;        // use only the first N training images (-1: all)
  int64_t test_limit = -1;         // use only the first N test images
  bool shuffle = true;
  int64_t workers = 1;             // data-loading threads
  // Where the model and batches live: cpu, or cuda/mps/xpu (without that backend here, ops run
  // on cpu through the device fallback and give the cpu run's numbers).
  std::string device = "cpu";
  int64_t log_interval = 50;       // steps between step records in metrics.jsonl
  bool plot = true;
  bool tensorboard = true;
};

/// Runs the job; returns the process exit code (0 ok, 2 diverged, 130 interrupted).
int run_training(const TrainConfig& config);

}  // namespace retorch::cli
