// UTF-8 and code-point classes for the tokenizer: strict and lossy decoding, the categories the
// split regexes ask for (\p{L}, \p{N}, \s, \w), and canonical normalization (NFC/NFD).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace retorch::llama::unicode {

/// General-category classes the tokenizer distinguishes (from UnicodeTables.inc).
enum class CharClass : uint8_t {
  kOther = 0,
  kLetter = 1,     // L*
  kMark = 2,       // M*
  kDecimal = 3,    // Nd
  kLetterNum = 4,  // Nl
  kOtherNum = 5,   // No
  kConnector = 6,  // Pc
};

CharClass char_class(uint32_t cp);
/// \p{L}.
inline bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return char_class(cp) == CharClass::kLetter;
}
/// \p{N} (also Rust's char::is_numeric).
inline bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  CharClass c = char_class(cp);
  return c == CharClass::kDecimal || c == CharClass::kLetterNum || c == CharClass::kOtherNum;
}
/// \s: the White_Space property (Rust's char::is_whitespace, Oniguruma's and Rust regex's \s).
bool is_whitespace(uint32_t cp);
/// Python's str.isspace(): White_Space plus the separators 0x1C..0x1F (Jinja's trim, strip()).
inline bool is_python_space(uint32_t cp) {
  return is_whitespace(cp) || (cp >= 0x1C && cp <= 0x1F);
}
/// \w as Rust's regex crate defines it, approximated by L, M, Nd, Nl, Pc and the joiners.
bool is_word(uint32_t cp);

/// Number of bytes of the UTF-8 sequence that starts with `lead` (1 for stray bytes).
inline int utf8_len(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

/// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one.
int valid_sequence_length(std::string_view s, size_t i);
bool is_valid_utf8(std::string_view s);
/// Throws retorch::Error (naming `what` and the byte offset) unless `s` is valid UTF-8.
void check_utf8(std::string_view s, const char* what);
/// The code point of the valid UTF-8 sequence starting at s[i].
uint32_t code_point_at(std::string_view s, size_t i);
/// Decodes valid UTF-8 (check first) to code points.
std::vector<uint32_t> decode_utf8(std::string_view s);
/// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, uint32_t cp);
std::string encode_utf8(const std::vector<uint32_t>& cps);
/// Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

/// Unicode canonical composition (NFC) and decomposition (NFD) of valid UTF-8.
std::string nfc(std::string_view s);
std::string nfd(std::string_view s);

}  // namespace retorch::llama::unicode
