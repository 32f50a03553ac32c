// The tokenizer's subword models: BPE by merge ranks (tokenizers' BPE, byte fallback included)
// and SentencePiece-style BPE by token scores (llama.cpp's SPM tokenizer).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace retorch::llama {

struct BpeModel {
  BpeModel() { byte_ids.fill(-1); }

  /// Token text by id; `present[id]` is false for ids the vocabulary skips.
  std::vector<std::string> tokens;
  std::vector<uint8_t> present;
  std::unordered_map<std::string, int32_t> ids;

  /// Merge (left id, right id) -> (rank, merged id); empty for score merging.
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;
  /// Score merging (SentencePiece): per-token scores, the higher merges first.
  bool merge_by_score = false;
  std::vector<float> scores;

  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::string continuing_subword_prefix, end_of_word_suffix;
  /// Ids of the "<0xAB>" byte tokens, -1 where missing.
  std::array<int32_t, 256> byte_ids;

  /// Adds `text` as token `id` (the vocabulary's own entries; later duplicates overwrite).
  void add_token(const std::string& text, int32_t id);
  /// Builds the merge table from "a b" pairs in rank order; throws naming a bad merge.
  void set_merges(const std::vector<std::pair<std::string, std::string>>& pairs);
  /// Looks up the byte tokens; call once the vocabulary is complete.
  void finish();

  std::optional<int32_t> find(std::string_view text) const;
  /// Appends the ids of one pre-tokenized word.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

 private:
  void tokenize_by_rank(std::string_view word, std::vector<int32_t>& out) const;
  void tokenize_by_score(std::string_view word, std::vector<int32_t>& out) const;
  int32_t unk_id() const;
};

}  // namespace retorch::llama
