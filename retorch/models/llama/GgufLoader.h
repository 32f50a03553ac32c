// Llama models and tokenizers from llama.cpp's GGUF files (config keys, tensor names, vocab).
#pragma once
#include <string>

#include "retorch/models/llama/Model.h"

namespace retorch::llama {

/// Loads a Llama-family model from a .gguf file; quantized tensors stay quantized.
LlamaForCausalLM load_llama_gguf(const std::string& path, const LoadOptions& options);

}  // namespace retorch::llama
