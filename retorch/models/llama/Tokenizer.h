// LLM tokenizers read from a Hugging Face tokenizer.json or from GGUF metadata (as a
// TokenizerSpec): byte-level BPE and SentencePiece-style BPE that encode and decode exactly like
// the `tokenizers` package, added/special tokens, streaming decode and chat templates.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace retorch::llama {

/// llama.cpp's token types (GGUF `tokenizer.ggml.token_type`).
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

/// A tokenizer described by plain data, as GGUF metadata holds it.
struct TokenizerSpec {
  /// "gpt2": byte-level BPE by merge ranks; "llama": SentencePiece-style BPE with "▁" for
  /// spaces and "<0xAB>" byte fallback, merged by `scores` (or by `merges` when given).
  std::string kind = "gpt2";
  std::vector<std::string> tokens;
  std::vector<float> scores;         // "llama": one per token
  std::vector<int32_t> token_types;  // TokenType values; empty: all normal
  std::vector<std::string> merges;   // "a b", in rank order
  std::optional<int32_t> bos_id, eos_id, unk_id, pad_id;
  bool add_bos = false, add_eos = false;
  /// "llama": prefix text with "▁" (GGUF `tokenizer.ggml.add_space_prefix`, default true).
  bool add_space_prefix = true;
  /// "gpt2": the split regex by llama.cpp's `tokenizer.ggml.pre` name: "default"/"gpt2",
  /// "llama-bpe"/"llama3", "qwen2", "smollm"/"starcoder"/"refact".
  std::string pre = "default";
  std::string chat_template;
};

/// One chat turn for apply_chat_template.
struct ChatMessage {
  std::string role;
  std::string content;
};

class Tokenizer {
 public:
  /// Builds a tokenizer from GGUF-style data; throws retorch::Error naming what is wrong.
  static Tokenizer from_spec(const TokenizerSpec& spec);
  /// Reads a tokenizer.json (or the one in a directory), plus tokenizer_config.json beside it.
  static Tokenizer from_file(const std::string& path);

  /// Token ids of `text` (valid UTF-8); add_special_tokens adds BOS/EOS as the post-processor
  /// says. Special tokens written in the text are always recognised.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  /// Text of `ids`; bytes that do not form UTF-8 come out as U+FFFD.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  /// The token's text; throws for an id outside the vocabulary.
  const std::string& id_to_token(int32_t id) const;
  /// One more than the largest id (the embedding rows a model needs).
  int32_t vocab_size() const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  /// Ids that end generation: EOS plus end-of-turn tokens such as <|eot_id|> and <|im_end|>.
  const std::vector<int32_t>& stop_ids() const;
  /// Whether `id` is a special (control) token, which skip_special_tokens drops.
  bool is_special(int32_t id) const;

  const std::string& chat_template() const;
  /// The prompt for `messages` as transformers' apply_chat_template(tokenize=False) renders it,
  /// for the Llama-2, Llama-3, ChatML and Zephyr template families; throws for other templates.
  std::string apply_chat_template(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt = false) const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// Incremental decoding for generation: put() takes one new id and returns the text it
/// completes, holding back bytes until they form whole UTF-8 characters.
class StreamDecoder {
 public:
  /// `context`: ids already shown (the prompt), so the first new token decodes in context.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false,
                         std::vector<int32_t> context = {});
  std::string put(int32_t id);
  /// Text still held back (an incomplete character decodes to U+FFFD), then resets the window.
  std::string flush();

 private:
  std::pair<std::string, std::string> decode_window() const;  // (shown part, whole window)
  std::string new_text(const std::string& shown, const std::string& all) const;
  void advance();

  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_ = 0;  // ids_[prefix_, read_) are decoded for context only
  size_t read_ = 0;    // ids_[read_, end) are not shown yet
};

}  // namespace retorch::llama
