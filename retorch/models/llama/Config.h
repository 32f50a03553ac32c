// LlamaConfig: the hyper-parameters of a Llama-family model, read from HF config.json or GGUF keys.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch::llama {

/// How positions are stretched beyond the trained context (HF's rope_scaling).
struct RopeScaling {
  std::string type = "none";  // none, linear, llama3
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3
};

/// The architecture of a Llama-family checkpoint. Qwen2, Mistral, SmolLM and TinyLlama are Llama
/// with the flags below (q/k/v bias, sliding window, tied head).
struct LlamaConfig {
  std::string model_type = "llama";
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_layers = 32;
  int64_t num_heads = 32;
  int64_t num_kv_heads = 32;
  int64_t head_dim = 128;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 2048;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;       // Qwen2, and Llama's attention_bias
  bool o_bias = false;         // Llama's attention_bias
  bool mlp_bias = false;       // Llama's mlp_bias
  int64_t sliding_window = -1;  // Mistral; -1 attends to the whole context
  bool rope_interleaved = false;  // GPT-J pairs: llama.cpp's "llama" layout (q/k rows permuted)
  std::vector<float> rope_freq_factors;  // GGUF rope_freqs: frequency i is divided by factor i
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;

  /// Reads a Hugging Face config.json (errors name the file and the key).
  static LlamaConfig from_hf_json(const std::string& path);
  /// Parses the text of a config.json; `name` labels errors.
  static LlamaConfig from_hf_json_text(const std::string& text, const std::string& name);
  /// Checks that the sizes are consistent (heads divide, head_dim positive, ...).
  void validate() const;
  /// Parameter count of the dense model (embeddings and head included).
  int64_t num_parameters() const;
};

/// The rotary frequencies (head_dim / 2 of them) after rope scaling, computed in float32 like HF.
std::vector<float> rope_inv_freq(const LlamaConfig& config);
/// cos/sin rows for positions [0, n): [n, head_dim] with cos in the first half, sin in the second
/// (the layout rotary_embedding takes).
Tensor rope_cos_sin_cache(const LlamaConfig& config, int64_t n);

}  // namespace retorch::llama
