// Tokenizer: the encode pipeline (added tokens, normalizer, pre-tokenizer, model,
// post-processor), decode, building from a TokenizerSpec, and the stream decoder.
#include "retorch/models/llama/Tokenizer.h"

#include <algorithm>

#include "retorch/core/Error.h"
#include "retorch/models/llama/TokenizerImpl.h"
#include "retorch/models/llama/Unicode.h"

namespace retorch::llama {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁"
constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// The end-of-turn tokens models stop at besides EOS (llama.cpp's end-of-generation list).
constexpr std::string_view kStopTokens[] = {
    "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>"};

// The start of the UTF-8 character that ends s[0, end).
size_t last_char_start(std::string_view s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (uint8_t(s[b]) & 0xC0) == 0x80) --b;
  return b;
}

bool ends_with_word(std::string_view s) {
  return !s.empty() && unicode::is_word(unicode::code_point_at(s, last_char_start(s, s.size())));
}

bool starts_with_word(std::string_view s) {
  return !s.empty() && unicode::is_word(unicode::code_point_at(s, 0));
}

// Bytes of whitespace that end `s` / start `s` (what lstrip and rstrip take).
size_t trailing_space(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t b = last_char_start(s, end);
    if (!unicode::is_whitespace(unicode::code_point_at(s, b))) break;
    end = b;
  }
  return s.size() - end;
}
size_t leading_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && unicode::is_whitespace(unicode::code_point_at(s, i))) {
    i += unicode::utf8_len(uint8_t(s[i]));
  }
  return i;
}

// A piece of the input: text still to tokenize (id < 0) or an added token.
struct Segment {
  std::string text;
  int32_t id;
  bool at_start;  // begins at offset 0 of the input
};

// Note [Added tokens]
// tokenizers splits added tokens out of the text before anything else: first the tokens with
// normalized=false (all special tokens by default) are found in the raw text, then each piece
// between them is normalized and the normalized=true tokens are found in it, by the normalized
// form of their content. Matching is leftmost-longest and non-overlapping. A match is dropped if
// single_word is set and a word character (\w) touches it; lstrip/rstrip widen the match over
// the whitespace beside it (lstrip never reaching back into the previous match).
void split_added(const Tokenizer::Impl& im, const TokenTrie& trie, const std::string& text,
                 bool at_start, std::vector<Segment>& out) {
  size_t start_offset = 0;
  auto push_text = [&](size_t b, size_t e) {
    if (e > b) out.push_back({text.substr(b, e - b), -1, at_start && b == 0});
  };
  if (!trie.empty()) {
    for (size_t pos = 0; pos < text.size();) {
      auto [end, id] = trie.longest_at(text, pos);
      if (end == 0) {
        ++pos;
        continue;
      }
      size_t start = pos, stop = end;
      pos = end;
      const AddedToken& tok = im.added.at(id);
      std::string_view view(text);
      if (tok.single_word && ((start > 0 && ends_with_word(view.substr(0, start))) ||
                              (stop < text.size() && starts_with_word(view.substr(stop))))) {
        continue;
      }
      if (tok.lstrip) start = std::max(start - trailing_space(view.substr(0, start)), start_offset);
      if (tok.rstrip) stop += leading_space(view.substr(stop));
      start = std::min(start, stop);
      push_text(start_offset, start);
      out.push_back({text.substr(start, stop - start), id, false});
      start_offset = stop;
    }
  }
  push_text(start_offset, text.size());
}

std::vector<std::pair<std::string, std::string>> parse_merges(
    const std::vector<std::string>& merges) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    size_t sp = m.find(' ');
    RT_CHECK_VALUE(sp != std::string::npos && m.find(' ', sp + 1) == std::string::npos,
                   "tokenizer: merge ", i, " ('", m, "') is not two tokens separated by a space");
    out.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }
  return out;
}

// The pre-tokenizer llama.cpp's `tokenizer.ggml.pre` name selects, as tokenizer.json writes it.
std::vector<PreTokenizerStep> pre_tokenizer_for(const std::string& pre, bool& ignore_merges) {
  using Kind = PreTokenizerStep::Kind;
  PreTokenizerStep byte_level{Kind::kByteLevel};
  if (pre == "default" || pre == "gpt2" || pre == "gpt-2" || pre.empty()) return {byte_level};
  byte_level.use_regex = false;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    ignore_merges = true;  // Llama 3's tokenizer.json sets ignore_merges, llama.cpp does too
    return {{Kind::kSplitRegex, SplitRegex::kLlama3}, byte_level};
  }
  if (pre == "qwen2") return {{Kind::kSplitRegex, SplitRegex::kQwen2}, byte_level};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact") {
    PreTokenizerStep digits{Kind::kDigits};
    digits.individual_digits = true;
    byte_level.use_regex = true;
    return {digits, byte_level};
  }
  RT_ERROR_KIND(ErrorKind::kNotImplemented, "tokenizer: unsupported pre-tokenizer '", pre,
                "' (supported: default/gpt2, llama-bpe/llama3, qwen2, smollm/starcoder/refact)");
}

}  // namespace

void TokenTrie::insert(std::string_view pattern, int32_t id) {
  if (pattern.empty()) return;
  int32_t node = 0;
  for (unsigned char c : pattern) {
    auto& ch = nodes_[node].children;
    auto it = std::find_if(ch.begin(), ch.end(), [&](const auto& p) { return p.first == c; });
    if (it != ch.end()) {
      node = it->second;
    } else {
      int32_t next = int32_t(nodes_.size());
      nodes_[node].children.emplace_back(c, next);
      nodes_.emplace_back();
      node = next;
    }
  }
  if (nodes_[node].id < 0) nodes_[node].id = id;  // the first pattern wins, as in Aho-Corasick
}

std::pair<size_t, int32_t> TokenTrie::longest_at(std::string_view text, size_t pos) const {
  std::pair<size_t, int32_t> best{0, -1};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto& ch = nodes_[node].children;
    auto it = std::find_if(ch.begin(), ch.end(),
                           [&](const auto& p) { return p.first == uint8_t(text[i]); });
    if (it == ch.end()) break;
    node = it->second;
    if (nodes_[node].id >= 0) best = {i + 1, nodes_[node].id};
  }
  return best;
}

void Tokenizer::Impl::add_tokens(const std::vector<AddedToken>& tokens) {
  for (const AddedToken& t : tokens) {
    if (t.special && !t.content.empty() && special_contents.insert(t.content).second) {
      special_order.push_back(t);
    }
  }
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    auto known = added_ids.find(t.content);
    if (known != added_ids.end() && added.at(known->second) == t) continue;
    int32_t id;
    if (auto existing = find(t.content)) {
      id = *existing;
    } else {
      // tokenizers' rule: after the model's vocabulary, or after the largest added id.
      int32_t model_size = int32_t(model.ids.size());
      id = model_size;
      if (max_added_id >= 0 && (max_added_id >= model_size || model_size == 0)) {
        id = max_added_id + 1;
      }
    }
    added_ids[t.content] = id;
    added[id] = t;
    max_added_id = std::max(max_added_id, id);
    if (!special_contents.count(t.content)) classic_order.push_back(t);
  }
}

void Tokenizer::Impl::finish() {
  model.finish();
  raw_trie = TokenTrie();
  normalized_trie = TokenTrie();
  for (const auto* list : {&special_order, &classic_order}) {
    for (const AddedToken& t : *list) {
      int32_t id = added_ids.at(t.content);
      if (t.normalized) {
        normalized_trie.insert(normalize(normalizer, t.content), id);
      } else {
        raw_trie.insert(t.content, id);
      }
    }
  }
  stop.clear();
  if (eos) stop.push_back(*eos);
  for (std::string_view name : kStopTokens) {
    auto it = added_ids.find(std::string(name));
    if (it != added_ids.end() && std::find(stop.begin(), stop.end(), it->second) == stop.end()) {
      stop.push_back(it->second);
    }
  }
  if (bos && !bos_token) bos_token = *token_text(*bos);
  if (eos && !eos_token) eos_token = *token_text(*eos);
}

std::optional<int32_t> Tokenizer::Impl::find(std::string_view token) const {
  auto it = added_ids.find(std::string(token));
  if (it != added_ids.end()) return it->second;
  return model.find(token);
}

const std::string* Tokenizer::Impl::token_text(int32_t id) const {
  auto it = added.find(id);
  if (it != added.end()) return &it->second.content;
  if (id >= 0 && size_t(id) < model.tokens.size() && model.present[id]) return &model.tokens[id];
  return nullptr;
}

int32_t Tokenizer::Impl::vocab_size() const {
  int32_t n = int32_t(model.tokens.size());
  for (const auto& [id, t] : added) n = std::max(n, id + 1);
  return n;
}

Tokenizer Tokenizer::from_spec(const TokenizerSpec& spec) {
  const size_t n = spec.tokens.size();
  RT_CHECK_VALUE(n > 0, "TokenizerSpec: no tokens");
  RT_CHECK_VALUE(n < size_t(INT32_MAX), "TokenizerSpec: too many tokens (", n, ")");
  RT_CHECK_VALUE(spec.token_types.empty() || spec.token_types.size() == n,
                 "TokenizerSpec: ", spec.token_types.size(), " token types for ", n, " tokens");
  RT_CHECK_VALUE(spec.scores.empty() || spec.scores.size() == n,
                 "TokenizerSpec: ", spec.scores.size(), " scores for ", n, " tokens");
  for (const auto& [name, id] : {std::pair{"bos_id", spec.bos_id},
                                 {"eos_id", spec.eos_id},
                                 {"unk_id", spec.unk_id},
                                 {"pad_id", spec.pad_id}}) {
    RT_CHECK_INDEX(!id || (*id >= 0 && size_t(*id) < n), "TokenizerSpec: ", name, " ", *id,
                   " is out of range for ", n, " tokens");
  }
  auto im = std::make_shared<Impl>();
  for (size_t i = 0; i < n; ++i) {
    RT_CHECK_VALUE(unicode::is_valid_utf8(spec.tokens[i]), "TokenizerSpec: token ", i,
                   " is not valid UTF-8");
    im->model.add_token(spec.tokens[i], int32_t(i));
  }
  if (spec.unk_id) im->model.unk_token = spec.tokens[*spec.unk_id];
  if (spec.kind == "gpt2") {
    im->pre_tokenizer = pre_tokenizer_for(spec.pre, im->model.ignore_merges);
    im->model.set_merges(parse_merges(spec.merges));
    im->decoder = {{DecoderStep::Kind::kByteLevel}};
  } else if (spec.kind == "llama") {
    // The Llama-2 tokenizer.json layout. See Note [BPE by score] for the scores route.
    if (spec.merges.empty()) {
      RT_CHECK_VALUE(spec.scores.size() == n, "TokenizerSpec: kind 'llama' needs scores or merges");
      im->model.merge_by_score = true;
      im->model.scores = spec.scores;
    } else {
      im->model.set_merges(parse_merges(spec.merges));
    }
    im->model.byte_fallback = true;
    im->model.fuse_unk = true;
    if (spec.add_space_prefix) {
      im->normalizer.push_back({NormalizerStep::Kind::kPrepend, "", std::string(kSpaceMarker)});
    }
    im->normalizer.push_back({NormalizerStep::Kind::kReplace, " ", std::string(kSpaceMarker)});
    DecoderStep strip{DecoderStep::Kind::kStrip, "", " "};
    strip.start = spec.add_space_prefix ? 1 : 0;
    im->decoder = {{DecoderStep::Kind::kReplace, std::string(kSpaceMarker), " "},
                   {DecoderStep::Kind::kByteFallback},
                   {DecoderStep::Kind::kFuse},
                   strip};
  } else {
    RT_ERROR_KIND(ErrorKind::kNotImplemented, "TokenizerSpec: unsupported kind '", spec.kind,
                  "' (supported: gpt2, llama)");
  }
  // Control, unknown and user-defined tokens are matched in the text like tokenizers' added
  // tokens; the first two are special (skipped by skip_special_tokens).
  std::vector<AddedToken> added;
  for (size_t i = 0; i < spec.token_types.size(); ++i) {
    auto type = TokenType(spec.token_types[i]);
    if (type != TokenType::kControl && type != TokenType::kUnknown &&
        type != TokenType::kUserDefined) {
      continue;
    }
    AddedToken t;
    t.content = spec.tokens[i];
    t.normalized = false;
    t.special = type != TokenType::kUserDefined;
    added.push_back(t);
  }
  im->add_tokens(added);
  if (spec.add_bos) {
    RT_CHECK_VALUE(spec.bos_id.has_value(), "TokenizerSpec: add_bos is set but bos_id is not");
    im->post_prefix = {*spec.bos_id};
  }
  if (spec.add_eos) {
    RT_CHECK_VALUE(spec.eos_id.has_value(), "TokenizerSpec: add_eos is set but eos_id is not");
    im->post_suffix = {*spec.eos_id};
  }
  im->bos = spec.bos_id;
  im->eos = spec.eos_id;
  im->chat_template = spec.chat_template;
  im->finish();
  return Tokenizer(std::move(im));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  return Tokenizer(load_tokenizer_json(path));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const Impl& im = *impl_;
  unicode::check_utf8(text, "Tokenizer.encode");
  std::vector<Segment> raw, segments;
  split_added(im, im.raw_trie, std::string(text), true, raw);
  for (Segment& s : raw) {
    if (s.id >= 0) {
      segments.push_back(std::move(s));
    } else {
      split_added(im, im.normalized_trie, normalize(im.normalizer, std::move(s.text)), s.at_start,
                  segments);
    }
  }
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = im.post_prefix;
  std::vector<Piece> pieces;
  for (Segment& s : segments) {
    if (s.id >= 0) {
      ids.push_back(s.id);
      continue;
    }
    pieces.assign(1, Piece{std::move(s.text), s.at_start});
    pre_tokenize(im.pre_tokenizer, pieces);
    for (const Piece& p : pieces) im.model.tokenize(p.text, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), im.post_suffix.begin(), im.post_suffix.end());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  const Impl& im = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* text = im.token_text(id);
    RT_CHECK_INDEX(text != nullptr, "Tokenizer.decode: token id ", id,
                   " is out of range (vocab_size ", im.vocab_size(), ")");
    if (skip_special_tokens && im.special_contents.count(*text)) continue;
    tokens.push_back(*text);
  }
  if (!im.has_decoder) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  return run_decoders(im.decoder, std::move(tokens));
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  return impl_->find(token);
}

const std::string& Tokenizer::id_to_token(int32_t id) const {
  const std::string* text = impl_->token_text(id);
  RT_CHECK_INDEX(text != nullptr, "Tokenizer.id_to_token: token id ", id,
                 " is out of range (vocab_size ", impl_->vocab_size(), ")");
  return *text;
}

int32_t Tokenizer::vocab_size() const {
  return impl_->vocab_size();
}
std::optional<int32_t> Tokenizer::bos_id() const {
  return impl_->bos;
}
std::optional<int32_t> Tokenizer::eos_id() const {
  return impl_->eos;
}
const std::vector<int32_t>& Tokenizer::stop_ids() const {
  return impl_->stop;
}
const std::string& Tokenizer::chat_template() const {
  return impl_->chat_template;
}

bool Tokenizer::is_special(int32_t id) const {
  const std::string* text = impl_->token_text(id);
  return text != nullptr && impl_->special_contents.count(*text) > 0;
}

std::string Tokenizer::apply_chat_template(const std::vector<ChatMessage>& messages,
                                           bool add_generation_prompt) const {
  return render_chat_template(impl_->chat_template, messages, add_generation_prompt,
                              impl_->bos_token, impl_->eos_token);
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens,
                             std::vector<int32_t> context)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens), ids_(std::move(context)) {
  // A few ids of context are enough for the first new token to decode as it would in place
  // (SentencePiece's decoder strips the leading space of the first token it sees).
  read_ = ids_.size();
  prefix_ = read_ > 5 ? read_ - 5 : 0;
}

// Note [Stream decoding]
// A token can end inside a UTF-8 character (byte-level BPE, byte fallback), and decoders work
// on whole sequences (SentencePiece strips the first token's leading space), so put() decodes a
// window twice: the ids already shown since `prefix_`, and the same plus the unshown ones. The
// difference is new text unless it ends in U+FFFD, which means an incomplete character: then
// nothing is shown until more ids arrive (or flush()).
std::string StreamDecoder::put(int32_t id) {
  ids_.push_back(id);
  auto [shown, all] = decode_window();
  if (all.size() <= shown.size() || all.ends_with(kReplacementChar)) return "";
  std::string text = new_text(shown, all);
  advance();
  return text;
}

std::string StreamDecoder::flush() {
  if (read_ >= ids_.size()) return "";
  auto [shown, all] = decode_window();
  std::string text = new_text(shown, all);
  advance();
  return text;
}

std::string StreamDecoder::new_text(const std::string& shown, const std::string& all) const {
  if (all.starts_with(shown)) return all.substr(shown.size());
  // A decoder that rewrote the shown text (ByteFallback turns a whole run of bytes into U+FFFDs
  // when it ends mid-character): decode the unshown ids on their own instead.
  std::vector<int32_t> rest(ids_.begin() + std::ptrdiff_t(read_), ids_.end());
  return tokenizer_->decode(rest, skip_special_tokens_);
}

std::pair<std::string, std::string> StreamDecoder::decode_window() const {
  std::vector<int32_t> window(ids_.begin() + std::ptrdiff_t(prefix_), ids_.end());
  std::string all = tokenizer_->decode(window, skip_special_tokens_);
  window.resize(read_ - prefix_);
  return {tokenizer_->decode(window, skip_special_tokens_), std::move(all)};
}

void StreamDecoder::advance() {
  // The ids just shown become the next window's context; older ones are not needed.
  ids_.erase(ids_.begin(), ids_.begin() + std::ptrdiff_t(read_));
  prefix_ = 0;
  read_ = ids_.size();
}

}  // namespace retorch::llama
