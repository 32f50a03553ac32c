// BPE word tokenization: merge-rank order as tokenizers' BPE model does it, score order as
// llama.cpp's SentencePiece tokenizer does it.
#include "retorch/models/llama/Bpe.h"

#include <cstdio>
#include <queue>

#include "retorch/core/Error.h"
#include "retorch/models/llama/Unicode.h"

namespace retorch::llama {

namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
}

struct Symbol {
  int32_t id;
  int32_t prev, next;
  size_t start, len;  // bytes of the word; len 0 once merged into the left neighbour
};

}  // namespace

void BpeModel::add_token(const std::string& text, int32_t id) {
  RT_CHECK_VALUE(id >= 0, "tokenizer: token '", text, "' has a negative id ", id);
  if (size_t(id) >= tokens.size()) {
    tokens.resize(size_t(id) + 1);
    present.resize(size_t(id) + 1, 0);
  }
  tokens[id] = text;
  present[id] = 1;
  ids[text] = id;
}

void BpeModel::set_merges(const std::vector<std::pair<std::string, std::string>>& pairs) {
  merges.clear();
  merges.reserve(pairs.size());
  const size_t prefix_len = continuing_subword_prefix.size();
  for (size_t rank = 0; rank < pairs.size(); ++rank) {
    const auto& [a, b] = pairs[rank];
    auto ia = find(a), ib = find(b);
    RT_CHECK_VALUE(ia && ib, "tokenizer: merge ", rank, " ('", a, "' '", b,
                   "') names a token that is not in the vocabulary");
    // The right part drops its continuing-subword prefix when merged (tokenizers does the same).
    std::string merged = a + (b.size() >= prefix_len ? b.substr(prefix_len) : b);
    auto im = find(merged);
    RT_CHECK_VALUE(im.has_value(), "tokenizer: merge ", rank, " ('", a, "' '", b, "') makes '",
                   merged, "', which is not in the vocabulary");
    // Later duplicates win, as when tokenizers collects the merges into a map.
    merges[pair_key(*ia, *ib)] = {int32_t(rank), *im};
  }
}

void BpeModel::finish() {
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto id = find(name);
    byte_ids[b] = id ? *id : -1;
  }
}

std::optional<int32_t> BpeModel::find(std::string_view text) const {
  auto it = ids.find(std::string(text));
  if (it == ids.end()) return std::nullopt;
  return it->second;
}

int32_t BpeModel::unk_id() const {
  auto id = find(*unk_token);
  RT_CHECK_VALUE(id.has_value(), "tokenizer: the unknown token '", *unk_token,
                 "' is not in the vocabulary");
  return *id;
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (merge_by_score) {
    tokenize_by_score(word, out);
    return;
  }
  if (ignore_merges) {
    if (auto id = find(word)) {
      out.push_back(*id);
      return;
    }
  }
  tokenize_by_rank(word, out);
}

// Note [BPE by merge rank]
// tokenizers' BPE: the word starts as one symbol per character (its vocabulary id, else its
// "<0xAB>" byte tokens under byte fallback, else the unknown token, consecutive unknowns fused
// under fuse_unk, else nothing). Then, repeatedly, the adjacent pair with the lowest merge rank
// (leftmost on ties) is merged, until no adjacent pair has a merge. A heap of candidate merges,
// checked for staleness when popped, makes that O(n log n). One quirk is kept on purpose: byte
// fallback does not flush a pending unknown token, so the unknown lands after those bytes.
void BpeModel::tokenize_by_rank(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&](int32_t id, size_t start, size_t len) {
    int32_t n = int32_t(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, start, len});
  };
  // The pending unknown token (unk_len > 0): its id and byte range.
  int32_t unk = -1;
  size_t unk_start = 0, unk_len = 0;
  auto flush_unk = [&] {
    if (unk_len > 0) add(unk, unk_start, unk_len);
    unk_len = 0;
  };
  for (size_t i = 0; i < word.size();) {
    size_t n = std::min<size_t>(unicode::utf8_len(uint8_t(word[i])), word.size() - i);
    std::string s(word.substr(i, n));
    if (i > 0) s = continuing_subword_prefix + s;
    if (i + n == word.size()) s += end_of_word_suffix;
    if (auto id = find(s)) {
      flush_unk();
      add(*id, i, n);
    } else {
      bool done = false;
      if (byte_fallback) {
        bool all = true;
        for (unsigned char c : s) all = all && byte_ids[c] >= 0;
        if (all) {
          for (unsigned char c : s) add(byte_ids[c], i, 1);
          done = true;
        }
      }
      if (!done && unk_token) {
        if (unk_len > 0 && fuse_unk) {
          unk_len += n;
        } else {
          flush_unk();
          unk = unk_id();
          unk_start = i;
          unk_len = n;
        }
      }
    }
    i += n;
  }
  flush_unk();

  struct Merge {
    int32_t rank, pos, new_id;
    bool operator<(const Merge& o) const {  // the heap's top: lowest rank, then lowest position
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  auto lookup = [&](int32_t a, int32_t b) -> const std::pair<int32_t, int32_t>* {
    auto it = merges.find(pair_key(a, b));
    return it == merges.end() ? nullptr : &it->second;
  };
  std::priority_queue<Merge> queue;
  for (size_t k = 0; k + 1 < symbols.size(); ++k) {
    if (auto m = lookup(symbols[k].id, symbols[k + 1].id)) {
      queue.push({m->first, int32_t(k), m->second});
    }
  }
  while (!queue.empty()) {
    Merge top = queue.top();
    queue.pop();
    Symbol& cur = symbols[top.pos];
    if (cur.len == 0 || cur.next < 0) continue;
    Symbol right = symbols[cur.next];
    auto m = lookup(cur.id, right.id);
    if (!m || m->second != top.new_id) continue;  // stale entry
    symbols[cur.next].len = 0;
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (cur.prev >= 0) {
      if (auto pm = lookup(symbols[cur.prev].id, cur.id)) {
        queue.push({pm->first, cur.prev, pm->second});
      }
    }
    if (cur.next >= 0) {
      if (auto nm = lookup(cur.id, symbols[cur.next].id)) {
        queue.push({nm->first, top.pos, nm->second});
      }
    }
  }
  for (const Symbol& s : symbols) {
    if (s.len != 0) out.push_back(s.id);
  }
}

// Note [BPE by score]
// SentencePiece's BPE, as llama.cpp runs it from GGUF's tokens and scores: the word starts as
// one symbol per UTF-8 character; repeatedly, of the adjacent pairs whose concatenation is a
// token, the one whose token has the highest score (leftmost on ties) is merged. Symbols left
// that are not tokens (single characters outside the vocabulary) become their "<0xAB>" byte
// tokens, else the unknown token. With the scores of a merge-trained vocabulary set to minus the
// rank of the merge that made each token, this usually reproduces merge-rank BPE, but not
// always: a pair need not be a merge rule to be merged here, only its concatenation a token.
// (llama.cpp throws for a character with neither a token nor byte tokens; this uses the unknown
// token, else drops it, as tokenizers' BPE does.)
void BpeModel::tokenize_by_score(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  for (size_t i = 0; i < word.size();) {
    size_t n = std::min<size_t>(unicode::utf8_len(uint8_t(word[i])), word.size() - i);
    int32_t k = int32_t(symbols.size());
    symbols.push_back({-1, k - 1, i + n == word.size() ? -1 : k + 1, i, n});
    i += n;
  }
  struct Bigram {
    float score;
    int32_t left, right;
    size_t size;
    bool operator<(const Bigram& o) const {  // the heap's top: highest score, then leftmost
      return score != o.score ? score < o.score : left > o.left;
    }
  };
  std::priority_queue<Bigram> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    size_t size = symbols[left].len + symbols[right].len;
    auto id = find(word.substr(symbols[left].start, size));
    if (!id) return;
    float score = size_t(*id) < scores.size() ? scores[*id] : 0.0f;
    queue.push({score, left, right, size});
  };
  for (int32_t k = 1; k < int32_t(symbols.size()); ++k) try_add(k - 1, k);
  while (!queue.empty()) {
    Bigram top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.len == 0 || right.len == 0 || left.len + right.len != top.size) continue;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    try_add(left.prev, top.left);
    try_add(top.left, left.next);
  }
  for (int32_t k = symbols.empty() ? -1 : 0; k >= 0; k = symbols[k].next) {
    std::string_view text = word.substr(symbols[k].start, symbols[k].len);
    if (auto id = find(text)) {
      out.push_back(*id);
      continue;
    }
    bool all = true;
    for (unsigned char c : text) all = all && byte_ids[c] >= 0;
    if (all) {
      for (unsigned char c : text) out.push_back(byte_ids[c]);
    } else if (unk_token) {
      out.push_back(unk_id());
    }
  }
}

}  // namespace retorch::llama
