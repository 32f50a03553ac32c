// The tokenizer's internal state, shared by Tokenizer.cpp (encode/decode, from_spec),
// TokenizerJson.cpp (from_file) and ChatTemplate.cpp; not part of the public API.
#pragma once
#include <unordered_set>

#include "retorch/models/llama/Bpe.h"
#include "retorch/models/llama/PreTokenize.h"
#include "retorch/models/llama/Tokenizer.h"

namespace retorch::llama {

/// tokenizers' AddedToken.
struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false;
  bool normalized = true, special = false;
  bool operator==(const AddedToken&) const = default;
};

/// A byte trie of added-token patterns for leftmost-longest matching (tokenizers uses
/// Aho-Corasick with MatchKind::LeftmostLongest; the patterns are few and short).
class TokenTrie {
 public:
  void insert(std::string_view pattern, int32_t id);
  bool empty() const { return nodes_.size() <= 1; }
  /// The longest pattern starting at text[pos]: (end, id), or end 0 when none.
  std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;
    int32_t id = -1;
  };
  std::vector<Node> nodes_ = std::vector<Node>(1);
};

struct Tokenizer::Impl {
  BpeModel model;
  /// Added tokens by id, and the order tokenizers matches them in (special ones first).
  std::unordered_map<int32_t, AddedToken> added;
  std::unordered_map<std::string, int32_t> added_ids;
  int32_t max_added_id = -1;
  std::vector<AddedToken> special_order, classic_order;
  std::unordered_set<std::string> special_contents;
  TokenTrie raw_trie, normalized_trie;  // non-normalized tokens; normalized tokens' normal form

  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> pre_tokenizer;
  bool has_decoder = true;  // without one tokenizers joins the tokens with spaces
  std::vector<DecoderStep> decoder;
  std::vector<int32_t> post_prefix, post_suffix;  // the post-processor's single-sequence ids

  std::optional<int32_t> bos, eos;
  std::optional<std::string> bos_token, eos_token;  // for chat templates
  std::vector<int32_t> stop;
  std::string chat_template;

  /// tokenizers' AddedVocabulary::add_tokens: assigns ids (the vocabulary's, else new ones).
  void add_tokens(const std::vector<AddedToken>& tokens);
  /// Builds the tries and the stop ids once the tokens and normalizer are set.
  void finish();
  std::optional<int32_t> find(std::string_view token) const;
  const std::string* token_text(int32_t id) const;
  int32_t vocab_size() const;
};

/// Renders the chat template families Tokenizer::apply_chat_template supports.
std::string render_chat_template(const std::string& chat_template,
                                 const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt,
                                 const std::optional<std::string>& bos_token,
                                 const std::optional<std::string>& eos_token);

/// The tokenizer.json reader (TokenizerJson.cpp).
std::shared_ptr<Tokenizer::Impl> load_tokenizer_json(const std::string& path);

}  // namespace retorch::llama
