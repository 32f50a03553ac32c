// Chat templates: the common families recognised from the Jinja template string and rendered
// by hand, as transformers' apply_chat_template(tokenize=False) renders them.
#include <string_view>

#include "retorch/core/Error.h"
#include "retorch/models/llama/TokenizerImpl.h"
#include "retorch/models/llama/Unicode.h"

namespace retorch::llama {

namespace {

// Note [Chat template families]
// A Jinja interpreter is out of scope, so a template is recognised by its markers and rendered
// by a hand-written equivalent of the published template of its family:
//   - Llama-2 ("[INST]" and "<<SYS>>", meta-llama/Llama-2-*-chat): a leading system message is
//     folded into the first user turn; roles must alternate user/assistant; contents are
//     strip()ped; each user turn opens with BOS, each assistant turn closes with EOS.
//   - Llama-3 ("<|start_header_id|>"): header, two newlines, trimmed content, <|eot_id|>; BOS
//     before the first message.
//   - ChatML ("<|im_start|>", Qwen2, SmolLM): role line, content, <|im_end|> and a newline; the
//     literal that some templates print first when the conversation has no system message (the
//     default system prompt) is read out of the template.
//   - Zephyr ("<|user|>", TinyLlama-chat): "<|role|>\n" + content + EOS, then what the template
//     prints after EOS: literals added in the same expression and the text after its "}}" (a
//     newline in TinyLlama's, which trim_blocks keeps because it follows "}}", not "%}"); the
//     generation prompt is read the same way.
// transformers renders with trim_blocks and lstrip_blocks; the literal text read from a template
// (after "}}", up to the next "{%") is trimmed the way lstrip_blocks would trim it.
// Templates that need more (tool calls, dates: Llama 3.1, Qwen2.5) are refused by name.
enum class Family { kLlama2, kLlama3, kChatMl, kZephyr };

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Python's str.strip(), which Jinja's trim filter calls.
std::string py_strip(const std::string& s) {
  std::vector<uint32_t> cps = unicode::decode_utf8(s);
  size_t b = 0, e = cps.size();
  while (b < e && unicode::is_python_space(cps[b])) ++b;
  while (e > b && unicode::is_python_space(cps[e - 1])) --e;
  return unicode::encode_utf8(std::vector<uint32_t>(cps.begin() + b, cps.begin() + e));
}

// The Jinja string literal starting at tmpl[pos] (a quote), unescaped; pos moves past it.
std::optional<std::string> string_literal(std::string_view tmpl, size_t& pos) {
  if (pos >= tmpl.size() || (tmpl[pos] != '\'' && tmpl[pos] != '"')) return std::nullopt;
  char quote = tmpl[pos++];
  std::string out;
  while (pos < tmpl.size() && tmpl[pos] != quote) {
    char c = tmpl[pos++];
    if (c != '\\' || pos >= tmpl.size()) {
      out.push_back(c);
      continue;
    }
    char e = tmpl[pos++];
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      default:
        out.push_back(e);
        break;  // \\, \', \"
    }
  }
  if (pos >= tmpl.size()) return std::nullopt;
  ++pos;
  return out;
}

void skip_spaces(std::string_view tmpl, size_t& pos) {
  while (pos < tmpl.size() && (tmpl[pos] == ' ' || tmpl[pos] == '\n' || tmpl[pos] == '-')) ++pos;
}

// The string literals joined by '+' from tmpl[pos] up to "}}" (others end it), then the literal
// text after that "}}" up to the next tag, trimmed as lstrip_blocks trims it before "{%".
std::string output_from(std::string_view tmpl, size_t pos) {
  std::string out;
  for (;;) {
    skip_spaces(tmpl, pos);
    if (pos < tmpl.size() && tmpl[pos] == '+') {
      ++pos;
      continue;
    }
    std::optional<std::string> lit = string_literal(tmpl, pos);
    if (!lit) break;
    out += *lit;
  }
  size_t close = tmpl.find("}}", pos);
  if (close == std::string_view::npos) return out;
  size_t begin = close + 2;
  size_t end = std::min(tmpl.find("{%", begin), tmpl.find("{{", begin));
  std::string text(
      tmpl.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
  // Whitespace control: "-}}" eats the whitespace after it, "{%-" the whitespace before it.
  if (close > 0 && tmpl[close - 1] == '-') text.erase(0, text.find_first_not_of(" \t\r\n"));
  if (end != std::string_view::npos && tmpl.compare(end, 3, "{%-") == 0) {
    size_t keep = text.find_last_not_of(" \t\r\n");
    text.resize(keep == std::string::npos ? 0 : keep + 1);
  } else if (end != std::string_view::npos && tmpl.compare(end, 2, "{%") == 0) {
    size_t line = text.rfind('\n');  // lstrip_blocks: only a block tag's own line
    if (line != std::string::npos && text.find_first_not_of(" \t", line + 1) == std::string::npos) {
      text.resize(line + 1);
    }
  }
  return out + text;
}

// What a Zephyr template prints after "... + eos_token" and as its generation prompt.
std::pair<std::string, std::string> zephyr_literals(std::string_view tmpl) {
  size_t eos = tmpl.find("eos_token");
  std::string after_turn = eos == std::string_view::npos ? "" : output_from(tmpl, eos + 9);
  size_t gen = tmpl.find("add_generation_prompt");
  size_t open = gen == std::string_view::npos ? gen : tmpl.find("{{", gen);
  std::string prompt =
      open == std::string_view::npos ? "<|assistant|>" : output_from(tmpl, open + 2);
  return {after_turn, prompt};
}

// ChatML's default system block: the literal printed under "messages[0]['role'] != 'system'".
std::optional<std::string> default_system_block(std::string_view tmpl) {
  for (std::string_view cond : {"!= 'system'", "!= \"system\""}) {
    size_t at = tmpl.find(cond);
    if (at == std::string_view::npos) continue;
    size_t open = tmpl.find("{{", at);
    if (open == std::string_view::npos) return std::nullopt;
    size_t pos = open + 2;
    skip_spaces(tmpl, pos);
    return string_literal(tmpl, pos);
  }
  return std::nullopt;
}

Family detect(const std::string& tmpl) {
  RT_CHECK_VALUE(!tmpl.empty(), "apply_chat_template: the tokenizer has no chat template");
  RT_CHECK_KIND(!contains(tmpl, "tools") && !contains(tmpl, "Cutting Knowledge"),
                ErrorKind::kNotImplemented,
                "apply_chat_template: templates with tool calls or dates (Llama 3.1, Qwen2.5) "
                "are not supported");
  if (contains(tmpl, "<|start_header_id|>")) return Family::kLlama3;
  if (contains(tmpl, "<|im_start|>")) return Family::kChatMl;
  if (contains(tmpl, "[INST]") && contains(tmpl, "<<SYS>>")) return Family::kLlama2;
  if (contains(tmpl, "<|user|>") && contains(tmpl, "<|assistant|>")) return Family::kZephyr;
  RT_ERROR_KIND(ErrorKind::kNotImplemented,
                "apply_chat_template: unrecognised chat template (supported families: Llama-2 "
                "[INST]/<<SYS>>, Llama-3 <|start_header_id|>, ChatML <|im_start|>, Zephyr "
                "<|user|>): ",
                tmpl.substr(0, 120), tmpl.size() > 120 ? "..." : "");
}

const std::string& need(const std::optional<std::string>& token, const char* name) {
  RT_CHECK_VALUE(token.has_value(), "apply_chat_template: the template uses ", name,
                 " but the tokenizer has none");
  return *token;
}

std::string render_llama2(const std::vector<ChatMessage>& messages,
                          const std::optional<std::string>& bos,
                          const std::optional<std::string>& eos) {
  RT_CHECK_VALUE(!messages.empty(), "apply_chat_template: no messages");
  size_t first = messages[0].role == "system" ? 1 : 0;
  std::string out;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    size_t index = i - first;
    RT_CHECK_VALUE((m.role == "user") == (index % 2 == 0),
                   "apply_chat_template: Conversation roles must alternate "
                   "user/assistant/user/assistant/...");
    std::string content = m.content;
    if (index == 0 && first == 1) {
      content = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + m.content;
    }
    if (m.role == "user") {
      out += need(bos, "bos_token") + "[INST] " + py_strip(content) + " [/INST]";
    } else if (m.role == "assistant") {
      out += " " + py_strip(content) + " " + need(eos, "eos_token");
    }
  }
  return out;
}

}  // namespace

std::string render_chat_template(const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, const std::optional<std::string>& bos,
                                 const std::optional<std::string>& eos) {
  for (const ChatMessage& m : messages) {
    unicode::check_utf8(m.role, "apply_chat_template: role");
    unicode::check_utf8(m.content, "apply_chat_template: content");
  }
  // The generation prompt exists only in templates that test the flag.
  add_generation_prompt = add_generation_prompt && contains(tmpl, "add_generation_prompt");
  std::string out;
  switch (detect(tmpl)) {
    case Family::kLlama2:
      return render_llama2(messages, bos, eos);
    case Family::kLlama3:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0) out += need(bos, "bos_token");
        out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" +
               py_strip(messages[i].content) + "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case Family::kChatMl: {
      std::optional<std::string> system = default_system_block(tmpl);
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0 && system && messages[0].role != "system") out += *system;
        out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      return out;
    }
    case Family::kZephyr: {
      auto [after_turn, prompt] = zephyr_literals(tmpl);
      for (size_t i = 0; i < messages.size(); ++i) {
        const std::string& role = messages[i].role;
        if (role == "user" || role == "system" || role == "assistant") {
          out += "<|" + role + "|>\n" + messages[i].content + need(eos, "eos_token") + after_turn;
        }
        if (i + 1 == messages.size() && add_generation_prompt) out += prompt;
      }
      return out;
    }
  }
  return out;
}

}  // namespace retorch::llama
