// `retorch generate` (stream a Llama model's continuation of a prompt) and `retorch bench-llm`
// (prefill and decode throughput against the memory-bandwidth and GEMM bounds).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace retorch::cli {

struct GenerateConfig {
  std::string model;   // HF directory or .gguf file
  std::string prompt;
  std::string system;  // system message for --chat
  bool chat = false;   // wrap the prompt in the model's chat template
  int64_t max_new_tokens = 128;
  double temperature = 0.8;
  int64_t top_k = 0;
  double top_p = 0.95;
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  uint64_t seed = 0;
  std::vector<std::string> stop;  // stop strings
  std::string dtype = "float32";
  std::string kv_dtype = "float32";  // the KV cache: float32 or bfloat16
  std::string device = "cpu";        // where the model runs: cpu, cuda, cuda:N
  bool eager = false;                // no CUDA graphs of decode steps
};

struct BenchLlmConfig {
  std::string model = "110m";  // a checkpoint path, or a preset: 110m, 1b
  std::string format = "f32";  // random weights: f32, bf16, q8_0, q4_0
  int64_t batch = 1;
  int64_t prompt_len = 128;
  int64_t gen_len = 32;
  std::string kv_dtype = "float32";  // the KV cache: float32 or bfloat16
  std::string device = "cpu";        // where the model runs: cpu, cuda, cuda:N
  bool eager = false;                // no CUDA graphs of decode steps
  double temperature = 0;            // 0: greedy
  double top_p = 1;                  // 1: off
};

/// Runs `retorch generate`; returns the exit status.
int run_generate(const GenerateConfig& c);
/// Runs `retorch bench-llm`; returns the exit status.
int run_bench_llm(const BenchLlmConfig& c);

}  // namespace retorch::cli
