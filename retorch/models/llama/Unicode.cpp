// UTF-8 decoding (strict and lossy), code-point class lookups and canonical normalization over
// the generated tables of UnicodeTables.inc.
#include "retorch/models/llama/Unicode.h"

#include <algorithm>
#include <unordered_map>

#include "retorch/core/Error.h"

namespace retorch::llama::unicode {

namespace {

struct ClassRange {
  uint32_t first, last, value;
};
struct CodeRange {
  uint32_t first, last;
};
struct Decomposition {
  uint32_t cp, first, second, composes;
};

#include "retorch/models/llama/UnicodeTables.inc"

template <typename Range, size_t N>
const Range* find_range(const Range (&table)[N], uint32_t cp) {
  const Range* it = std::upper_bound(table, table + N, cp,
                                     [](uint32_t c, const Range& r) { return c < r.first; });
  if (it == table) return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

constexpr uint32_t kReplacement = 0xFFFD;

// Hangul syllables compose and decompose by arithmetic (Unicode 3.12), not by table.
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr uint32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint32_t combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const ClassRange* r = find_range(kCombiningClassRanges, cp);
  return r ? r->value : 0;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* begin = kCanonicalDecompositions;
  const Decomposition* end = begin + std::size(kCanonicalDecompositions);
  const Decomposition* it =
      std::lower_bound(begin, end, cp, [](const Decomposition& d, uint32_t c) { return d.cp < c; });
  if (it == end || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  decompose(it->first, out);
  if (it->second != 0) decompose(it->second, out);
}

uint32_t compose_pair(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  static const std::unordered_map<uint64_t, uint32_t> table = [] {
    std::unordered_map<uint64_t, uint32_t> t;
    for (const Decomposition& d : kCanonicalDecompositions) {
      if (d.composes) t.emplace((uint64_t(d.first) << 32) | d.second, d.cp);
    }
    return t;
  }();
  auto it = table.find((uint64_t(a) << 32) | b);
  return it == table.end() ? 0 : it->second;
}

// Full canonical decomposition followed by the canonical ordering of each run of non-starters.
std::vector<uint32_t> canonical_decomposition(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (uint32_t cp : decode_utf8(s)) decompose(cp, out);
  for (size_t i = 0; i < out.size();) {
    if (combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && combining_class(out[j]) != 0) ++j;
    std::stable_sort(out.begin() + i, out.begin() + j, [](uint32_t a, uint32_t b) {
      return combining_class(a) < combining_class(b);
    });
    i = j;
  }
  return out;
}

// Text of code points below `limit` is unchanged by normalization: nothing below U+00C0
// decomposes, and nothing below U+0300 composes with what precedes it (the second parts of all
// primary composites are U+0300 or above), so NFD may skip text under U+00C0 and NFC text under
// U+0300. Both limits are two-byte code points with zero low bits, so a code point is below the
// limit exactly when its first byte is below the limit's first byte.
bool all_below(std::string_view s, uint32_t limit) {
  const unsigned lead = 0xC0 | (limit >> 6);
  for (unsigned char c : s) {
    if (c >= lead) return false;
  }
  return true;
}

}  // namespace

CharClass char_class(uint32_t cp) {
  const ClassRange* r = find_range(kClassRanges, cp);
  return r ? static_cast<CharClass>(r->value) : CharClass::kOther;
}

bool is_whitespace(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return find_range(kWhiteSpaceRanges, cp) != nullptr;
}

bool is_word(uint32_t cp) {
  if (cp < 0x80) {
    return ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') || (cp >= '0' && cp <= '9') || cp == '_';
  }
  if (cp == 0x200C || cp == 0x200D) return true;
  CharClass c = char_class(cp);
  return c != CharClass::kOther && c != CharClass::kOtherNum;
}

int valid_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) -> uint32_t { return i + k < s.size() ? uint8_t(s[i + k]) : 0x100; };
  auto cont = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
  uint32_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  uint32_t b1 = byte(1);
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    bool ok1 = b0 == 0xE0   ? (b1 >= 0xA0 && b1 <= 0xBF)
               : b0 == 0xED ? (b1 >= 0x80 && b1 <= 0x9F)
                            : cont(1);
    return ok1 && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    bool ok1 = b0 == 0xF0   ? (b1 >= 0x90 && b1 <= 0xBF)
               : b0 == 0xF4 ? (b1 >= 0x80 && b1 <= 0x8F)
                            : cont(1);
    return ok1 && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

namespace {

// The number of bytes at s[i] that start a valid sequence but do not finish it (at least 1):
// Unicode's "maximal subpart", which lossy decoding replaces by a single U+FFFD.
size_t maximal_invalid_prefix(std::string_view s, size_t i) {
  uint32_t b0 = uint8_t(s[i]);
  auto in = [&](size_t k, uint32_t lo, uint32_t hi) {
    return i + k < s.size() && uint8_t(s[i + k]) >= lo && uint8_t(s[i + k]) <= hi;
  };
  int need;
  bool second_ok;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    return 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    second_ok = b0 == 0xE0 ? in(1, 0xA0, 0xBF) : b0 == 0xED ? in(1, 0x80, 0x9F) : in(1, 0x80, 0xBF);
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    second_ok = b0 == 0xF0 ? in(1, 0x90, 0xBF) : b0 == 0xF4 ? in(1, 0x80, 0x8F) : in(1, 0x80, 0xBF);
  } else {
    return 1;
  }
  if (!second_ok) return 1;
  size_t n = 2;
  while (int(n) < need && in(n, 0x80, 0xBF)) ++n;
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    int n = valid_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void check_utf8(std::string_view s, const char* what) {
  for (size_t i = 0; i < s.size();) {
    int n = valid_sequence_length(s, i);
    RT_CHECK_VALUE(n > 0, what, ": invalid UTF-8 at byte ", i, " (0x", std::hex, int(uint8_t(s[i])),
                   ")");
    i += n;
  }
}

uint32_t code_point_at(std::string_view s, size_t i) {
  int n = valid_sequence_length(s, i);
  RT_CHECK_VALUE(n > 0, "decode_utf8: invalid UTF-8 at byte ", i);
  uint32_t b0 = uint8_t(s[i]);
  uint32_t cp = n == 1 ? b0 : n == 2 ? b0 & 0x1F : n == 3 ? b0 & 0x0F : b0 & 0x07;
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3F);
  return cp;
}

std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i += utf8_len(uint8_t(s[i]))) out.push_back(code_point_at(s, i));
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(const std::vector<uint32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (uint32_t cp : cps) append_utf8(out, cp);
  return out;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    int n = valid_sequence_length(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      append_utf8(out, kReplacement);
      i += maximal_invalid_prefix(bytes, i);
    }
  }
  return out;
}

std::string nfd(std::string_view s) {
  if (all_below(s, 0xC0)) return std::string(s);
  return encode_utf8(canonical_decomposition(s));
}

std::string nfc(std::string_view s) {
  if (all_below(s, 0x300)) return std::string(s);
  std::vector<uint32_t> d = canonical_decomposition(s);
  std::vector<uint32_t> out;
  out.reserve(d.size());
  // A mark composes with the last starter unless a character in between blocks it: one that is
  // a starter or has a combining class at least its own (the run is already canonically sorted).
  long starter = -1;
  int last_class = -1;  // of the last character after the starter; -1: none yet
  for (uint32_t cp : d) {
    int cls = int(combining_class(cp));
    if (starter >= 0 && (last_class == -1 || last_class < cls)) {
      if (uint32_t composed = compose_pair(out[starter], cp)) {
        out[starter] = composed;
        continue;
      }
    }
    if (cls == 0) {
      starter = long(out.size());
      last_class = -1;
    } else {
      last_class = cls;
    }
    out.push_back(cp);
  }
  return encode_utf8(out);
}

}  // namespace retorch::llama::unicode
