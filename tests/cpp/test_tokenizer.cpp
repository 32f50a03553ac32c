// The LLM tokenizer's C++ pieces: UTF-8 handling of malformed bytes, code-point classes and NFC,
// the split-regex matchers, and tiny hand-made vocabularies (tests/python/test_tokenizer.py
// compares whole tokenizers with the Hugging Face tokenizers package).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "retorch/core/Error.h"
#include "retorch/models/llama/PreTokenize.h"
#include "retorch/models/llama/Tokenizer.h"
#include "retorch/models/llama/Unicode.h"

namespace {

using namespace retorch::llama;
namespace uc = retorch::llama::unicode;

std::vector<std::string> pieces(SplitRegex regex, const std::string& text) {
  std::vector<std::string> out;
  for (const Span& s : regex_matches(regex, text))
    out.push_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

TEST(TokenizerUtf8, RejectsMalformedInput) {
  for (const char* bad : {"\xff", "abc\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
                          "\xe0\x80\x80", "\x80", "\xf8\x88\x80\x80\x80"}) {
    EXPECT_FALSE(uc::is_valid_utf8(bad)) << bad;
    EXPECT_THROW(uc::check_utf8(bad, "test"), retorch::Error);
  }
  EXPECT_TRUE(uc::is_valid_utf8("h\xc3\xa9llo \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  try {
    uc::check_utf8("ab\xff", "Tokenizer.encode");
    FAIL();
  } catch (const retorch::Error& e) {
    EXPECT_NE(e.message().find("invalid UTF-8 at byte 2"), std::string::npos) << e.message();
  }
}

TEST(TokenizerUtf8, LossyDecodingReplacesMaximalSubparts) {
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(uc::utf8_lossy("a\xff"
                           "b"),
            "a" + fffd + "b");
  EXPECT_EQ(uc::utf8_lossy("\xf0\x9f\x98"), fffd);                // truncated 4-byte sequence
  EXPECT_EQ(uc::utf8_lossy("\xe0\x80"), fffd + fffd);             // E0 needs A0..BF next
  EXPECT_EQ(uc::utf8_lossy("\xed\xa0\x80"), fffd + fffd + fffd);  // surrogate
  EXPECT_EQ(uc::utf8_lossy("\xf0\x9f\x98x"), fffd + "x");
  EXPECT_EQ(uc::utf8_lossy("\xc3"), fffd);
}

TEST(TokenizerUnicode, ClassesAndNormalization) {
  EXPECT_TRUE(uc::is_letter('a') && uc::is_letter(0x4E2D) && uc::is_letter(0x01C5));
  EXPECT_TRUE(uc::is_number('7') && uc::is_number(0x0663) && uc::is_number(0x00BD));
  EXPECT_TRUE(uc::is_whitespace(0x3000) && uc::is_whitespace(0x85) && !uc::is_whitespace(0x200B));
  EXPECT_TRUE(uc::is_python_space(0x1C) && !uc::is_whitespace(0x1C));
  EXPECT_TRUE(uc::is_word(0x0301) && uc::is_word('_') && !uc::is_word('-'));
  EXPECT_EQ(uc::nfc("e\xcc\x81"), "\xc3\xa9");     // e + acute -> é
  EXPECT_EQ(uc::nfc("\xe2\x84\xab"), "\xc3\x85");  // Angstrom sign -> Å
  EXPECT_EQ(uc::nfc("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"), "\xea\xb0\x81");  // jamo -> 각
  EXPECT_EQ(uc::nfc("a\xcc\x82\xcc\xa3"), "\xe1\xba\xad");  // marks reordered: ậ
  EXPECT_EQ(uc::nfd("\xe1\xba\xad"), "a\xcc\xa3\xcc\x82");
  EXPECT_EQ(uc::nfd("caf\xc3\xa9"), "cafe\xcc\x81");  // Latin-1 letters decompose too
  EXPECT_EQ(uc::nfc("plain ascii"), "plain ascii");
}

TEST(TokenizerSplit, MatchersFollowTheRegexes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(SplitRegex::kGpt2, "Hello  world's 123 \n\n x"),
            (V{"Hello", " ", " world", "'s", " 123", " \n\n", " x"}));
  EXPECT_EQ(pieces(SplitRegex::kGpt2, "DON'T"), (V{"DON", "'", "T"}));
  EXPECT_EQ(pieces(SplitRegex::kLlama3, "DON'T"), (V{"DON", "'T"}));
  EXPECT_EQ(pieces(SplitRegex::kLlama3, "  \n\n  a"), (V{"  \n\n", " ", " a"}));
  EXPECT_EQ(pieces(SplitRegex::kLlama3, "1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(pieces(SplitRegex::kQwen2, "123"), (V{"1", "2", "3"}));
  EXPECT_EQ(pieces(SplitRegex::kLlama3, "x \r\n y"), (V{"x", " \r\n", " y"}));
  EXPECT_EQ(pieces(SplitRegex::kLlama3, "I'\xc5\xbfup"), (V{"I", "'\xc5\xbf", "up"}));  // long s
  EXPECT_TRUE(pieces(SplitRegex::kGpt2, "").empty());
  EXPECT_FALSE(split_regex_for_pattern("\\w+").has_value());
}

// A SentencePiece-style vocabulary: "▁" marks spaces, bytes fall back to <0xAB> tokens.
TokenizerSpec tiny_spm() {
  TokenizerSpec spec;
  spec.kind = "llama";
  spec.tokens = {"<unk>",
                 "<s>",
                 "</s>",
                 "\xe2\x96\x81",
                 "a",
                 "b",
                 "ab",
                 "\xe2\x96\x81"
                 "ab",
                 "<0x63>",
                 "<0xC3>",
                 "<0xA9>"};
  spec.token_types = {2, 3, 3, 1, 1, 1, 1, 1, 6, 6, 6};
  spec.scores = {0, 0, 0, 0, 0, 0, -1, -2, 0, 0, 0};
  spec.bos_id = 1;
  spec.eos_id = 2;
  spec.unk_id = 0;
  spec.add_bos = true;
  return spec;
}

TEST(TokenizerSpecTest, SentencePieceByScoresAndByMerges) {
  TokenizerSpec spec = tiny_spm();
  for (bool by_merges : {false, true}) {
    if (by_merges) spec.merges = {"a b", "\xe2\x96\x81 ab"};
    Tokenizer tok = Tokenizer::from_spec(spec);
    EXPECT_EQ(tok.encode("ab ab"), (std::vector<int32_t>{1, 7, 7}));
    EXPECT_EQ(tok.encode("ab c\xc3\xa9", false), (std::vector<int32_t>{7, 3, 8, 9, 10}));
    EXPECT_EQ(tok.encode("x", false), (std::vector<int32_t>{3, 0}));  // no byte token: unknown
    EXPECT_EQ(tok.encode("a</s>", false), (std::vector<int32_t>{3, 4, 2}));
    EXPECT_EQ(tok.decode({1, 7, 3, 8, 9, 10}), "<s> ab c\xc3\xa9");
    EXPECT_EQ(tok.decode({1, 7, 3, 8, 9, 10}, true), "ab c\xc3\xa9");
    EXPECT_EQ(tok.decode({7, 9}), "ab\xef\xbf\xbd");  // a lone byte decodes to U+FFFD
    EXPECT_EQ(tok.stop_ids(), std::vector<int32_t>{2});
    EXPECT_TRUE(tok.is_special(2) && !tok.is_special(7));
  }
}

TEST(TokenizerSpecTest, StreamDecoderWaitsForWholeCharacters) {
  Tokenizer tok = Tokenizer::from_spec(tiny_spm());
  StreamDecoder dec(tok, false, {1, 7});  // "<s>", "▁ab": the space of "▁" is not stripped
  EXPECT_EQ(dec.put(3), " ");
  EXPECT_EQ(dec.put(8), "c");
  EXPECT_EQ(dec.put(9), "");  // first byte of é
  EXPECT_EQ(dec.put(10), "\xc3\xa9");
  EXPECT_EQ(dec.put(9), "");
  EXPECT_EQ(dec.flush(), "\xef\xbf\xbd");
  EXPECT_EQ(dec.flush(), "");
}

TEST(TokenizerSpecTest, ErrorsNameTheProblem) {
  TokenizerSpec spec = tiny_spm();
  Tokenizer tok = Tokenizer::from_spec(spec);
  EXPECT_THROW(tok.decode({11}), retorch::Error);
  EXPECT_THROW(tok.decode({-1}), retorch::Error);
  EXPECT_THROW(tok.id_to_token(1 << 30), retorch::Error);
  EXPECT_THROW(tok.encode("\xc3"), retorch::Error);
  spec.tokens[4] = "\xff";
  EXPECT_THROW(Tokenizer::from_spec(spec), retorch::Error);
  spec = tiny_spm();
  spec.scores.pop_back();
  EXPECT_THROW(Tokenizer::from_spec(spec), retorch::Error);
  spec = tiny_spm();
  spec.kind = "wordpiece";
  EXPECT_THROW(Tokenizer::from_spec(spec), retorch::Error);
  spec = tiny_spm();
  spec.merges = {"a c"};
  EXPECT_THROW(Tokenizer::from_spec(spec), retorch::Error);
}

TEST(TokenizerJsonTest, ReadsAMinimalFileAndRejectsBrokenOnes) {
  std::string path = ::testing::TempDir() + "retorch_tokenizer_test.json";
  auto write = [&](const std::string& text) { std::ofstream(path, std::ios::binary) << text; };
  write(R"({"added_tokens": [{"id": 3, "content": "<eos>", "special": true, "normalized": false}],
    "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
    "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}})");
  Tokenizer tok = Tokenizer::from_file(path);
  EXPECT_EQ(tok.encode("abab<eos>a"), (std::vector<int32_t>{2, 2, 3, 0}));
  EXPECT_EQ(tok.encode("a c"), (std::vector<int32_t>{0}));  // no byte-level "Ġ", "c": dropped
  EXPECT_EQ(tok.decode({2, 3}), "ab<eos>");
  EXPECT_EQ(tok.eos_id(), std::optional<int32_t>(3));
  EXPECT_EQ(tok.vocab_size(), 4);
  for (const char* broken :
       {"{", "[1, 2]", R"({"model": {"type": "Unigram", "vocab": []}})",
        R"({"model": {"vocab": {"a": "zero"}, "merges": []}})",
        R"({"model": {"vocab": {"a": 0}, "merges": ["a a"]}})",
        R"({"model": {"vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Punctuation"}})",
        R"({"model": {"vocab": {"a": 0}}, "added_tokens": [{"id": 0}]})"}) {
    write(broken);
    EXPECT_THROW(Tokenizer::from_file(path), retorch::Error) << broken;
  }
  std::remove(path.c_str());
  EXPECT_THROW(Tokenizer::from_file(path), retorch::Error);
}

TEST(TokenizerChat, FamiliesAndErrors) {
  TokenizerSpec spec = tiny_spm();
  spec.chat_template =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
  Tokenizer tok = Tokenizer::from_spec(spec);
  // This template has no generation-prompt branch, so the flag adds nothing.
  EXPECT_EQ(tok.apply_chat_template({{"user", "hi"}}, true), "<|im_start|>user\nhi<|im_end|>\n");
  spec.chat_template += "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  EXPECT_EQ(Tokenizer::from_spec(spec).apply_chat_template({{"user", "hi"}}, true),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  spec.chat_template = "{{ bos_token }}[INST] <<SYS>>";  // Llama-2 needs alternating roles
  EXPECT_THROW(Tokenizer::from_spec(spec).apply_chat_template({{"assistant", "x"}}),
               retorch::Error);
  spec.chat_template = "{{ messages }}";
  EXPECT_THROW(Tokenizer::from_spec(spec).apply_chat_template({{"user", "hi"}}), retorch::Error);
}

}  // namespace
