// The split regexes as hand-written matchers over code points, tokenizers' split behaviours,
// and the normalizer / pre-tokenizer / decoder steps built on them.
#include "retorch/models/llama/PreTokenize.h"

#include <algorithm>

#include "retorch/core/Error.h"
#include "retorch/models/llama/Unicode.h"

namespace retorch::llama {

namespace {

// The patterns exactly as tokenizer.json spells them (GPT-2's is also ByteLevel's built-in one).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum : uint8_t { kL = 1, kN = 2, kS = 4 };

// Note [Split regex matchers]
// The split regexes are alternations tried in order at each position, Perl-style (Oniguruma,
// which tokenizers uses), and between them they match every character, so each match starts
// where the previous one ended. A matcher therefore returns, for position i, the end of the
// first alternative that matches there, written out by hand for each pattern:
//   - contractions 's 't 're 've 'm 'll 'd: case-sensitive for GPT-2; under (?i) for Llama 3 and
//     Qwen2, where Oniguruma's case folding also lets U+017F (long s) match 's';
//   - `\s+(?!\S)` backs off one character from a whitespace run that a non-space follows, so the
//     last space joins the next word (" ?\p{L}+" or, for Llama 3, "[^\r\n\p{L}\p{N}]?\p{L}+");
//     a single whitespace character before a non-space falls through to `\s+`;
//   - `\s*[\r\n]+` (Llama 3, Qwen2) backtracks to end just after the last \r or \n of the run.
class Matcher {
 public:
  Matcher(SplitRegex regex, std::string_view text) : regex_(regex) {
    cps_ = unicode::decode_utf8(text);
    flags_.resize(cps_.size());
    for (size_t i = 0; i < cps_.size(); ++i) {
      uint32_t c = cps_[i];
      flags_[i] = uint8_t((unicode::is_letter(c) ? kL : 0) | (unicode::is_number(c) ? kN : 0) |
                          (unicode::is_whitespace(c) ? kS : 0));
    }
  }
  size_t size() const { return cps_.size(); }
  uint32_t cp(size_t i) const { return cps_[i]; }
  size_t match_end(size_t i) const {
    return regex_ == SplitRegex::kGpt2 ? gpt2(i) : llama3(i, regex_ == SplitRegex::kLlama3 ? 3 : 1);
  }

 private:
  bool has(size_t i, uint8_t f) const { return i < cps_.size() && (flags_[i] & f); }
  bool other(size_t i) const { return i < cps_.size() && flags_[i] == 0; }
  bool is(size_t i, uint32_t c) const { return i < cps_.size() && cps_[i] == c; }
  bool newline(size_t i) const { return is(i, '\r') || is(i, '\n'); }
  size_t run(size_t i, uint8_t f) const {
    while (has(i, f)) ++i;
    return i;
  }
  size_t run_other(size_t i) const {
    while (other(i)) ++i;
    return i;
  }
  // Lower-cases for (?i): ASCII, and the long s that folds to 's'.
  uint32_t fold(size_t i, bool ignore_case) const {
    if (i >= cps_.size()) return 0;
    uint32_t c = cps_[i];
    if (!ignore_case) return c;
    if (c >= 'A' && c <= 'Z') return c + 32;
    return c == 0x17F ? 's' : c;
  }
  size_t contraction(size_t i, bool ignore_case) const {
    if (!is(i, '\'')) return 0;
    uint32_t a = fold(i + 1, ignore_case), b = fold(i + 2, ignore_case);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return 0;
  }
  size_t whitespace(size_t i) const {
    size_t end = run(i, kS);
    if (end == cps_.size() || end - i == 1) return end;  // \s+(?!\S) or \s+
    return end - 1;
  }
  size_t gpt2(size_t i) const {
    if (size_t end = contraction(i, false)) return end;
    size_t j = is(i, ' ') ? i + 1 : i;
    if (has(j, kL)) return run(j, kL);
    if (has(j, kN)) return run(j, kN);
    if (other(j)) return run_other(j);
    return whitespace(i);
  }
  size_t llama3(size_t i, size_t max_digits) const {
    if (size_t end = contraction(i, true)) return end;
    if (i < cps_.size() && !has(i, kL | kN) && !newline(i) && has(i + 1, kL)) return run(i + 1, kL);
    if (has(i, kL)) return run(i, kL);
    if (has(i, kN)) {
      size_t j = i;
      while (j - i < max_digits && has(j, kN)) ++j;
      return j;
    }
    size_t j = is(i, ' ') && other(i + 1) ? i + 1 : i;
    if (other(j)) {
      j = run_other(j);
      while (newline(j)) ++j;
      return j;
    }
    size_t end = run(i, kS);
    for (size_t k = end; k > i; --k) {
      if (newline(k - 1)) return k;  // \s*[\r\n]+
    }
    return whitespace(i);
  }

  SplitRegex regex_;
  std::vector<uint32_t> cps_;
  std::vector<uint8_t> flags_;
};

// Byte offsets of each code point of valid UTF-8 `text`, plus its length at the end.
std::vector<size_t> code_point_offsets(std::string_view text) {
  std::vector<size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size(); i += unicode::utf8_len(uint8_t(text[i]))) {
    offsets.push_back(i);
  }
  offsets.push_back(text.size());
  return offsets;
}

// Every code point of `text` satisfying `pred`, each as its own match (tokenizers' char
// patterns).
template <typename Pred>
std::vector<Span> char_matches(std::string_view text, Pred pred) {
  std::vector<Span> out;
  for (size_t i = 0; i < text.size();) {
    size_t n = unicode::utf8_len(uint8_t(text[i]));
    if (pred(unicode::code_point_at(text, i))) out.push_back({i, i + n});
    i += n;
  }
  return out;
}

std::vector<Span> literal_matches(std::string_view text, std::string_view pattern) {
  std::vector<Span> out;
  if (pattern.empty()) return out;
  for (size_t pos = text.find(pattern); pos != std::string_view::npos;
       pos = text.find(pattern, pos + pattern.size())) {
    out.push_back({pos, pos + pattern.size()});
  }
  return out;
}

// tokenizers' NormalizedString::split: the matches and the text between them, flagged, then
// combined as the behaviour says. Empty pieces are dropped later.
std::vector<Span> split_spans(std::string_view text, const std::vector<Span>& matches,
                              SplitBehavior behavior, bool invert) {
  struct Part {
    Span span;
    bool is_match;
  };
  std::vector<Part> parts;
  size_t prev = 0;
  for (const Span& m : matches) {
    if (prev != m.begin) parts.push_back({{prev, m.begin}, invert});
    parts.push_back({m, !invert});
    prev = m.end;
  }
  if (prev != text.size()) parts.push_back({{prev, text.size()}, invert});

  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Part& p : parts) out.push_back(p.span);
      break;
    case SplitBehavior::kRemoved:
      for (const Part& p : parts) {
        if (!p.is_match) out.push_back(p.span);
      }
      break;
    case SplitBehavior::kContiguous:
      for (const Part& p : parts) {
        if (p.is_match == previous_match && !out.empty()) {
          out.back().end = p.span.end;
        } else {
          out.push_back(p.span);
        }
        previous_match = p.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !out.empty()) {
          out.back().end = p.span.end;
        } else {
          out.push_back(p.span);
        }
        previous_match = p.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->span.begin;
        } else {
          out.push_back(it->span);
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  return out;
}

// Replaces each piece by its sub-pieces; only the first sub-piece keeps `at_start`.
template <typename SplitFn>
void split_pieces(std::vector<Piece>& pieces, SplitFn fn) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) {
    bool first = true;
    for (const Span& s : fn(piece)) {
      if (s.end <= s.begin) continue;
      out.push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_start && first});
      first = false;
    }
  }
  pieces = std::move(out);
}

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view with) {
  if (pattern.empty()) return std::string(text);
  std::string out;
  size_t prev = 0;
  for (const Span& m : literal_matches(text, pattern)) {
    out.append(text.substr(prev, m.begin - prev));
    out.append(with);
    prev = m.end;
  }
  out.append(text.substr(prev));
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::optional<SplitRegex> split_regex_for_pattern(std::string_view pattern) {
  if (pattern == kGpt2Pattern) return SplitRegex::kGpt2;
  if (pattern == kLlama3Pattern) return SplitRegex::kLlama3;
  if (pattern == kQwen2Pattern) return SplitRegex::kQwen2;
  return std::nullopt;
}

const char* split_regex_name(SplitRegex regex) {
  switch (regex) {
    case SplitRegex::kGpt2:
      return "gpt2";
    case SplitRegex::kLlama3:
      return "llama3";
    case SplitRegex::kQwen2:
      return "qwen2";
  }
  return "?";
}

std::vector<Span> regex_matches(SplitRegex regex, std::string_view text) {
  Matcher m(regex, text);
  std::vector<size_t> offsets = code_point_offsets(text);
  std::vector<Span> out;
  for (size_t i = 0; i < m.size();) {
    size_t end = m.match_end(i);
    RT_INTERNAL_ASSERT(end > i && end <= m.size());
    out.push_back({offsets[i], offsets[end]});
    i = end;
  }
  return out;
}

std::optional<SplitBehavior> split_behavior_from_name(std::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return std::nullopt;
}

// Note [Byte-level alphabet]
// GPT-2's byte-level BPE works on bytes but stores tokens as text: each byte stands for one
// printable character. The 188 bytes that are printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ')
// stand for themselves; the other 68 take U+0100, U+0101, ... in byte order (so ' ' is 'Ġ',
// '\n' is 'Ċ'). Pre-tokenized words are mapped byte by byte before BPE, and decoding maps back.
const std::array<std::string, 256>& byte_level_chars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      unicode::append_utf8(t[b], printable ? uint32_t(b) : next++);
    }
    return t;
  }();
  return table;
}

int byte_level_byte(uint32_t cp) {
  static const std::vector<int16_t> inverse = [] {
    std::vector<int16_t> inv(512, -1);
    const auto& chars = byte_level_chars();
    for (int b = 0; b < 256; ++b) inv[unicode::decode_utf8(chars[b])[0]] = int16_t(b);
    return inv;
  }();
  return cp < inverse.size() ? inverse[cp] : -1;
}

std::string normalize(const std::vector<NormalizerStep>& steps, std::string text) {
  for (const NormalizerStep& step : steps) {
    switch (step.kind) {
      case NormalizerStep::Kind::kPrepend:
        if (!text.empty()) text = step.content + text;
        break;
      case NormalizerStep::Kind::kReplace:
        text = replace_all(text, step.pattern, step.content);
        break;
      case NormalizerStep::Kind::kNfc:
        text = unicode::nfc(text);
        break;
      case NormalizerStep::Kind::kNfd:
        text = unicode::nfd(text);
        break;
      case NormalizerStep::Kind::kStrip: {
        std::vector<uint32_t> cps = unicode::decode_utf8(text);
        size_t b = 0, e = cps.size();
        if (step.strip_left) {
          while (b < e && unicode::is_whitespace(cps[b])) ++b;
        }
        if (step.strip_right) {
          while (e > b && unicode::is_whitespace(cps[e - 1])) --e;
        }
        text = unicode::encode_utf8(std::vector<uint32_t>(cps.begin() + b, cps.begin() + e));
        break;
      }
    }
  }
  return text;
}

void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::vector<Piece>& pieces) {
  using Kind = PreTokenizerStep::Kind;
  for (const PreTokenizerStep& step : steps) {
    switch (step.kind) {
      case Kind::kSplitRegex:
        split_pieces(pieces, [&](const Piece& p) {
          return split_spans(p.text, regex_matches(step.regex, p.text), step.behavior, step.invert);
        });
        break;
      case Kind::kSplitLiteral:
        split_pieces(pieces, [&](const Piece& p) {
          return split_spans(p.text, literal_matches(p.text, step.literal), step.behavior,
                             step.invert);
        });
        break;
      case Kind::kDigits:
        split_pieces(pieces, [&](const Piece& p) {
          return split_spans(
              p.text, char_matches(p.text, unicode::is_number),
              step.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
              false);
        });
        break;
      case Kind::kWhitespaceSplit:
        split_pieces(pieces, [&](const Piece& p) {
          return split_spans(p.text, char_matches(p.text, unicode::is_whitespace),
                             SplitBehavior::kRemoved, false);
        });
        break;
      case Kind::kMetaspace: {
        uint32_t rep = unicode::decode_utf8(step.replacement).at(0);
        for (Piece& p : pieces) {
          p.text = replace_all(p.text, " ", step.replacement);
          bool prepend = step.prepend_scheme == PrependScheme::kAlways ||
                         (step.prepend_scheme == PrependScheme::kFirst && p.at_start);
          if (prepend && !starts_with(p.text, step.replacement)) p.text = step.replacement + p.text;
        }
        if (step.split) {
          split_pieces(pieces, [&](const Piece& p) {
            return split_spans(p.text, char_matches(p.text, [&](uint32_t c) { return c == rep; }),
                               SplitBehavior::kMergedWithNext, false);
          });
        }
        break;
      }
      case Kind::kByteLevel: {  // See Note [Byte-level alphabet]
        if (step.add_prefix_space) {
          for (Piece& p : pieces) {
            if (!starts_with(p.text, " ")) p.text = " " + p.text;
          }
        }
        if (step.use_regex) {
          split_pieces(pieces, [&](const Piece& p) {
            return split_spans(p.text, regex_matches(SplitRegex::kGpt2, p.text),
                               SplitBehavior::kIsolated, false);
          });
        }
        const auto& chars = byte_level_chars();
        for (Piece& p : pieces) {
          std::string mapped;
          mapped.reserve(p.text.size() * 2);
          for (unsigned char c : p.text) mapped += chars[c];
          p.text = std::move(mapped);
        }
        break;
      }
    }
    std::erase_if(pieces, [](const Piece& p) { return p.text.empty(); });
  }
}

namespace {

// A "<0xAB>" byte-fallback token's byte, as tokenizers' ByteFallback decoder parses it
// (u8::from_str_radix also takes a leading '+').
std::optional<uint8_t> byte_fallback_value(std::string_view t) {
  if (t.size() != 6 || !starts_with(t, "<0x") || t[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  int hi = t[3] == '+' ? 0 : hex(t[3]), lo = hex(t[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return uint8_t(hi * 16 + lo);
}

void flush_bytes(std::string& bytes, std::vector<std::string>& out) {
  if (bytes.empty()) return;
  if (unicode::utf8_lossy(bytes) == bytes) {
    out.push_back(bytes);
  } else {
    for (size_t i = 0; i < bytes.size(); ++i) out.push_back("\xEF\xBF\xBD");  // one U+FFFD per byte
  }
  bytes.clear();
}

}  // namespace

std::string run_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens) {
  using Kind = DecoderStep::Kind;
  for (const DecoderStep& step : steps) {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    switch (step.kind) {
      case Kind::kByteLevel: {  // See Note [Byte-level alphabet]
        std::string bytes;
        for (const std::string& t : tokens) {
          std::string mapped;
          bool all = true;
          for (uint32_t cp : unicode::decode_utf8(t)) {
            int b = byte_level_byte(cp);
            if (b < 0) {
              all = false;
              break;
            }
            mapped.push_back(char(b));
          }
          bytes += all ? mapped : t;
        }
        out.push_back(unicode::utf8_lossy(bytes));
        break;
      }
      case Kind::kReplace:
        for (const std::string& t : tokens)
          out.push_back(replace_all(t, step.pattern, step.content));
        break;
      case Kind::kByteFallback: {
        std::string bytes;
        for (std::string& t : tokens) {
          if (auto b = byte_fallback_value(t)) {
            bytes.push_back(char(*b));
          } else {
            flush_bytes(bytes, out);
            out.push_back(std::move(t));
          }
        }
        flush_bytes(bytes, out);
        break;
      }
      case Kind::kFuse: {
        std::string joined;
        for (const std::string& t : tokens) joined += t;
        out.push_back(std::move(joined));
        break;
      }
      case Kind::kStrip: {
        uint32_t content = unicode::decode_utf8(step.content).at(0);
        for (const std::string& t : tokens) {
          std::vector<uint32_t> cps = unicode::decode_utf8(t);
          size_t b = 0, e = cps.size();
          while (b < step.start && b < e && cps[b] == content) ++b;
          for (size_t k = 0; k < step.stop && e > b && cps[e - 1] == content; ++k) --e;
          out.push_back(
              unicode::encode_utf8(std::vector<uint32_t>(cps.begin() + b, cps.begin() + e)));
        }
        break;
      }
      case Kind::kMetaspace: {
        uint32_t rep = unicode::decode_utf8(step.replacement).at(0);
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string s;
          for (uint32_t cp : unicode::decode_utf8(tokens[i])) {
            if (cp != rep) {
              unicode::append_utf8(s, cp);
            } else if (i != 0 || step.prepend_scheme == PrependScheme::kNever) {
              s.push_back(' ');
            }
          }
          out.push_back(std::move(s));
        }
        break;
      }
    }
    tokens = std::move(out);
  }
  std::string text;
  for (const std::string& t : tokens) text += t;
  return text;
}

}  // namespace retorch::llama
