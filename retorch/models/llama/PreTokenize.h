// Normalizers, pre-tokenizers and decoders of the tokenizer pipeline, as the Hugging Face
// `tokenizers` package defines them: each is a plain step struct applied by a free function.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace retorch::llama {

/// The split regexes recognised by their exact pattern, each a hand-written matcher.
enum class SplitRegex : uint8_t { kGpt2, kLlama3, kQwen2 };
/// The regex for a tokenizer.json pattern string, or nullopt when it is not a known one.
std::optional<SplitRegex> split_regex_for_pattern(std::string_view pattern);
const char* split_regex_name(SplitRegex regex);

/// A byte range [begin, end) of a string.
struct Span {
  size_t begin, end;
};
/// The non-overlapping leftmost matches of `regex` in `text` (valid UTF-8), like find_iter.
std::vector<Span> regex_matches(SplitRegex regex, std::string_view text);

/// tokenizers' SplitDelimiterBehavior.
enum class SplitBehavior : uint8_t {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous
};
std::optional<SplitBehavior> split_behavior_from_name(std::string_view name);

/// GPT-2's byte-level alphabet: the UTF-8 text of the character standing for each byte.
const std::array<std::string, 256>& byte_level_chars();
/// The byte a byte-level character stands for, or -1 when it stands for none.
int byte_level_byte(uint32_t cp);

struct NormalizerStep {
  enum class Kind : uint8_t { kPrepend, kReplace, kNfc, kNfd, kStrip };
  Kind kind;
  std::string pattern;                           // kReplace: the literal to replace
  std::string content;                           // kPrepend: the prefix; kReplace: the replacement
  bool strip_left = false, strip_right = false;  // kStrip
};
/// Applies the normalizer steps in order (tokenizers' normalizers.Sequence).
std::string normalize(const std::vector<NormalizerStep>& steps, std::string text);

enum class PrependScheme : uint8_t { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind : uint8_t {
    kSplitRegex,
    kSplitLiteral,
    kByteLevel,
    kMetaspace,
    kDigits,
    kWhitespaceSplit
  };
  Kind kind;
  SplitRegex regex = SplitRegex::kGpt2;  // kSplitRegex
  std::string literal;                   // kSplitLiteral
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false, use_regex = true;  // kByteLevel
  std::string replacement = "\xE2\x96\x81";         // kMetaspace ("▁")
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
  bool individual_digits = false;  // kDigits
};

/// One piece of text on its way through the pre-tokenizers. `at_start`: it begins at offset 0
/// of the original text (Metaspace's prepend_scheme "first" asks).
struct Piece {
  std::string text;
  bool at_start;
};
/// Applies the pre-tokenizer steps in order; empty pieces are dropped as tokenizers does.
void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::vector<Piece>& pieces);

struct DecoderStep {
  enum class Kind : uint8_t { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind;
  std::string pattern, content;              // kReplace; kStrip's content is one character
  size_t start = 0, stop = 0;                // kStrip
  std::string replacement = "\xE2\x96\x81";  // kMetaspace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
};
/// tokenizers' Decoder::decode_chain for each step in turn, then the pieces joined.
std::string run_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens);

}  // namespace retorch::llama
