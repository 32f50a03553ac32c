// The tokenizer that goes with a checkpoint: tokenizer.json in a HF directory, or GGUF metadata.
#pragma once
#include <string>

#include "retorch/io/Gguf.h"
#include "retorch/models/llama/Tokenizer.h"

namespace retorch::llama {

/// The tokenizer of a HF directory (tokenizer.json) or a .gguf file (tokenizer.ggml.* keys).
Tokenizer load_tokenizer(const std::string& path);
/// The tokenizer described by a GGUF file's tokenizer.ggml.* and tokenizer.chat_template keys.
Tokenizer tokenizer_from_gguf(const io::GgufFile& file);

}  // namespace retorch::llama
