// Reads a Hugging Face tokenizer.json (and tokenizer_config.json beside it) into the tokenizer's
// pipeline; anything outside the supported subset is an error that names it.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "retorch/core/Error.h"
#include "retorch/models/llama/TokenizerImpl.h"
#include "retorch/models/llama/Unicode.h"

namespace retorch::llama {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

[[noreturn]] void unsupported(const std::string& what, const std::string& type,
                              const char* supported) {
  RT_ERROR_KIND(ErrorKind::kNotImplemented, "tokenizer.json: unsupported ", what, " type '", type,
                "' (supported: ", supported, ")");
}

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string get_string(const json& obj, const char* key, const char* where,
                       std::optional<std::string> fallback = std::nullopt) {
  const json* v = field(obj, key);
  if (!v) {
    RT_CHECK_VALUE(fallback.has_value(), "tokenizer.json: ", where, " has no '", key, "'");
    return *fallback;
  }
  RT_CHECK_VALUE(v->is_string(), "tokenizer.json: ", where, ".", key, " is not a string");
  return v->get<std::string>();
}

bool get_bool(const json& obj, const char* key, bool fallback) {
  const json* v = field(obj, key);
  if (!v) return fallback;
  RT_CHECK_VALUE(v->is_boolean(), "tokenizer.json: '", key, "' is not a boolean");
  return v->get<bool>();
}

int64_t get_int(const json& v, const char* where) {
  RT_CHECK_VALUE(v.is_number_integer(), "tokenizer.json: ", where, " is not an integer");
  return v.get<int64_t>();
}

const json& get_array(const json& obj, const char* key, const char* where) {
  const json* v = field(obj, key);
  RT_CHECK_VALUE(v && v->is_array(), "tokenizer.json: ", where, " has no '", key, "' list");
  return *v;
}

std::string type_of(const json& obj, const char* where) {
  RT_CHECK_VALUE(obj.is_object(), "tokenizer.json: ", where, " is not an object");
  return get_string(obj, "type", where);
}

// A pattern {"String": s} or {"Regex": r}: (is_regex, text).
std::pair<bool, std::string> get_pattern(const json& obj, const char* where) {
  const json* p = field(obj, "pattern");
  RT_CHECK_VALUE(p && p->is_object(), "tokenizer.json: ", where, " has no pattern");
  if (const json* s = field(*p, "String")) {
    RT_CHECK_VALUE(s->is_string(), "tokenizer.json: ", where, " pattern is not a string");
    return {false, s->get<std::string>()};
  }
  if (const json* r = field(*p, "Regex")) {
    RT_CHECK_VALUE(r->is_string(), "tokenizer.json: ", where, " pattern is not a string");
    return {true, r->get<std::string>()};
  }
  RT_ERROR_KIND(ErrorKind::kValue, "tokenizer.json: ", where,
                " pattern is neither String nor Regex");
}

PrependScheme get_prepend_scheme(const json& obj) {
  if (const json* legacy = field(obj, "add_prefix_space");
      legacy && !field(obj, "prepend_scheme")) {
    return legacy->is_boolean() && legacy->get<bool>() ? PrependScheme::kAlways
                                                       : PrependScheme::kNever;
  }
  std::string s = get_string(obj, "prepend_scheme", "Metaspace", "always");
  if (s == "always") return PrependScheme::kAlways;
  if (s == "first") return PrependScheme::kFirst;
  if (s == "never") return PrependScheme::kNever;
  RT_ERROR_KIND(ErrorKind::kValue, "tokenizer.json: unknown Metaspace prepend_scheme '", s, "'");
}

std::string get_char(const json& obj, const char* key, const char* where, const char* fallback) {
  std::string s = get_string(obj, key, where, fallback);
  RT_CHECK_VALUE(unicode::decode_utf8(s).size() == 1, "tokenizer.json: ", where, ".", key,
                 " must be one character, got '", s, "'");
  return s;
}

void parse_normalizer(const json& n, std::vector<NormalizerStep>& out) {
  using Kind = NormalizerStep::Kind;
  std::string type = type_of(n, "normalizer");
  if (type == "Sequence") {
    for (const json& child : get_array(n, "normalizers", "normalizer Sequence")) {
      parse_normalizer(child, out);
    }
  } else if (type == "Prepend") {
    out.push_back({Kind::kPrepend, "", get_string(n, "prepend", "Prepend normalizer")});
  } else if (type == "Replace") {
    auto [is_regex, pattern] = get_pattern(n, "Replace normalizer");
    RT_CHECK_KIND(!is_regex, ErrorKind::kNotImplemented,
                  "tokenizer.json: unsupported Replace normalizer regex '", pattern, "'");
    out.push_back({Kind::kReplace, pattern, get_string(n, "content", "Replace normalizer")});
  } else if (type == "NFC" || type == "NFD") {
    out.push_back({type == "NFC" ? Kind::kNfc : Kind::kNfd});
  } else if (type == "Strip") {
    NormalizerStep step{Kind::kStrip};
    step.strip_left = get_bool(n, "strip_left", true);
    step.strip_right = get_bool(n, "strip_right", true);
    out.push_back(step);
  } else {
    unsupported("normalizer", type, "Sequence, Prepend, Replace (string), NFC, NFD, Strip");
  }
}

void parse_pre_tokenizer(const json& p, std::vector<PreTokenizerStep>& out) {
  using Kind = PreTokenizerStep::Kind;
  std::string type = type_of(p, "pre_tokenizer");
  if (type == "Sequence") {
    for (const json& child : get_array(p, "pretokenizers", "pre_tokenizer Sequence")) {
      parse_pre_tokenizer(child, out);
    }
  } else if (type == "Split") {
    auto [is_regex, pattern] = get_pattern(p, "Split pre_tokenizer");
    PreTokenizerStep step{is_regex ? Kind::kSplitRegex : Kind::kSplitLiteral};
    if (is_regex) {
      auto regex = split_regex_for_pattern(pattern);
      RT_CHECK_KIND(regex.has_value(), ErrorKind::kNotImplemented,
                    "tokenizer.json: unsupported Split regex '", pattern,
                    "' (recognised: the GPT-2, Llama 3 and Qwen2 patterns)");
      step.regex = *regex;
    } else {
      step.literal = pattern;
    }
    std::string behavior = get_string(p, "behavior", "Split pre_tokenizer");
    auto b = split_behavior_from_name(behavior);
    RT_CHECK_VALUE(b.has_value(), "tokenizer.json: unknown Split behavior '", behavior, "'");
    step.behavior = *b;
    step.invert = get_bool(p, "invert", false);
    out.push_back(step);
  } else if (type == "ByteLevel") {
    PreTokenizerStep step{Kind::kByteLevel};
    step.add_prefix_space = get_bool(p, "add_prefix_space", true);
    step.use_regex = get_bool(p, "use_regex", true);
    out.push_back(step);
  } else if (type == "Metaspace") {
    PreTokenizerStep step{Kind::kMetaspace};
    step.replacement = get_char(p, "replacement", "Metaspace", "\xE2\x96\x81");
    step.prepend_scheme = get_prepend_scheme(p);
    step.split = get_bool(p, "split", true);
    out.push_back(step);
  } else if (type == "Digits") {
    PreTokenizerStep step{Kind::kDigits};
    step.individual_digits = get_bool(p, "individual_digits", false);
    out.push_back(step);
  } else if (type == "WhitespaceSplit") {
    out.push_back({Kind::kWhitespaceSplit});
  } else {
    unsupported("pre_tokenizer", type,
                "Sequence, Split, ByteLevel, Metaspace, Digits, WhitespaceSplit");
  }
}

void parse_decoder(const json& d, std::vector<DecoderStep>& out) {
  using Kind = DecoderStep::Kind;
  std::string type = type_of(d, "decoder");
  if (type == "Sequence") {
    for (const json& child : get_array(d, "decoders", "decoder Sequence"))
      parse_decoder(child, out);
  } else if (type == "ByteLevel") {
    out.push_back({Kind::kByteLevel});
  } else if (type == "Replace") {
    auto [is_regex, pattern] = get_pattern(d, "Replace decoder");
    RT_CHECK_KIND(!is_regex, ErrorKind::kNotImplemented,
                  "tokenizer.json: unsupported Replace decoder regex '", pattern, "'");
    out.push_back({Kind::kReplace, pattern, get_string(d, "content", "Replace decoder")});
  } else if (type == "ByteFallback" || type == "Fuse") {
    out.push_back({type == "Fuse" ? Kind::kFuse : Kind::kByteFallback});
  } else if (type == "Strip") {
    DecoderStep step{Kind::kStrip, "", get_char(d, "content", "Strip decoder", " ")};
    const json* start = field(d, "start");
    const json* stop = field(d, "stop");
    step.start = start ? size_t(std::max<int64_t>(0, get_int(*start, "Strip.start"))) : 0;
    step.stop = stop ? size_t(std::max<int64_t>(0, get_int(*stop, "Strip.stop"))) : 0;
    out.push_back(step);
  } else if (type == "Metaspace") {
    DecoderStep step{Kind::kMetaspace};
    step.replacement = get_char(d, "replacement", "Metaspace decoder", "\xE2\x96\x81");
    step.prepend_scheme = get_prepend_scheme(d);
    out.push_back(step);
  } else {
    unsupported("decoder", type,
                "Sequence, ByteLevel, Replace (string), ByteFallback, Fuse, "
                "Strip, Metaspace");
  }
}

// The ids a post-processor puts around a single sequence, wrapped around what earlier
// processors of a Sequence put.
void parse_post_processor(const json& p, std::vector<int32_t>& prefix,
                          std::vector<int32_t>& suffix) {
  std::string type = type_of(p, "post_processor");
  auto id_of = [](const json& v, const char* where) {
    int64_t id = get_int(v, where);
    RT_CHECK_VALUE(id >= 0 && id < INT32_MAX, "tokenizer.json: ", where, " id ", id,
                   " is out of range");
    return int32_t(id);
  };
  if (type == "Sequence") {
    for (const json& child : get_array(p, "processors", "post_processor Sequence")) {
      parse_post_processor(child, prefix, suffix);
    }
  } else if (type == "ByteLevel") {
    // Only trims offsets.
  } else if (type == "TemplateProcessing") {
    const json* specials = field(p, "special_tokens");
    std::vector<int32_t> before, after;
    bool seen_sequence = false;
    for (const json& item : get_array(p, "single", "TemplateProcessing")) {
      if (field(item, "Sequence")) {
        seen_sequence = true;
        continue;
      }
      const json* special = field(item, "SpecialToken");
      RT_CHECK_VALUE(special != nullptr, "tokenizer.json: TemplateProcessing item ", item.dump(),
                     " is neither Sequence nor SpecialToken");
      std::string name = get_string(*special, "id", "TemplateProcessing.SpecialToken");
      const json* entry = specials ? field(*specials, name.c_str()) : nullptr;
      RT_CHECK_VALUE(entry != nullptr, "tokenizer.json: TemplateProcessing uses special token '",
                     name, "' that its special_tokens do not define");
      for (const json& id : get_array(*entry, "ids", "TemplateProcessing special token")) {
        (seen_sequence ? after : before).push_back(id_of(id, "TemplateProcessing"));
      }
    }
    prefix.insert(prefix.begin(), before.begin(), before.end());
    suffix.insert(suffix.end(), after.begin(), after.end());
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    const json& cls = get_array(p, "cls", type.c_str());
    const json& sep = get_array(p, "sep", type.c_str());
    RT_CHECK_VALUE(cls.size() == 2 && sep.size() == 2, "tokenizer.json: ", type,
                   " cls/sep are not [token, id] pairs");
    prefix.insert(prefix.begin(), id_of(cls[1], "cls"));
    suffix.push_back(id_of(sep[1], "sep"));
  } else {
    unsupported("post_processor", type,
                "TemplateProcessing, ByteLevel, Sequence, RobertaProcessing, BertProcessing");
  }
}

void parse_model(const json& m, BpeModel& model) {
  RT_CHECK_VALUE(m.is_object(), "tokenizer.json: 'model' is missing or not an object");
  std::string type = field(m, "type") ? get_string(m, "type", "model") : "BPE";
  if (type != "BPE") unsupported("model", type, "BPE");
  const json* vocab = field(m, "vocab");
  RT_CHECK_VALUE(vocab && vocab->is_object(), "tokenizer.json: model.vocab is not an object");
  for (const auto& [token, id] : vocab->items()) {
    int64_t v = get_int(id, "a model.vocab id");
    RT_CHECK_VALUE(v >= 0 && v < INT32_MAX, "tokenizer.json: model.vocab id ", v, " of '", token,
                   "' is out of range");
    model.add_token(token, int32_t(v));
  }
  if (const json* unk = field(m, "unk_token")) {
    RT_CHECK_VALUE(unk->is_string(), "tokenizer.json: model.unk_token is not a string");
    model.unk_token = unk->get<std::string>();
  }
  model.continuing_subword_prefix = get_string(m, "continuing_subword_prefix", "model", "");
  model.end_of_word_suffix = get_string(m, "end_of_word_suffix", "model", "");
  model.fuse_unk = get_bool(m, "fuse_unk", false);
  model.byte_fallback = get_bool(m, "byte_fallback", false);
  model.ignore_merges = get_bool(m, "ignore_merges", false);
  std::vector<std::pair<std::string, std::string>> merges;
  if (const json* list = field(m, "merges")) {
    RT_CHECK_VALUE(list->is_array(), "tokenizer.json: model.merges is not a list");
    merges.reserve(list->size());
    for (const json& item : *list) {
      if (item.is_string()) {
        const std::string& s = item.get_ref<const std::string&>();
        size_t sp = s.find(' ');
        RT_CHECK_VALUE(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos,
                       "tokenizer.json: merge '", s, "' is not two tokens separated by a space");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else {
        RT_CHECK_VALUE(
            item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string(),
            "tokenizer.json: merge ", item.dump(), " is not a pair of strings");
        merges.emplace_back(item[0].get<std::string>(), item[1].get<std::string>());
      }
    }
  }
  model.set_merges(merges);
}

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  RT_CHECK_VALUE(in.good(), "tokenizer: cannot open '", path.string(), "'");
  std::stringstream buf;
  buf << in.rdbuf();
  try {
    return json::parse(buf.str());
  } catch (const json::exception& e) {
    RT_ERROR_KIND(ErrorKind::kValue, "tokenizer: '", path.string(),
                  "' is not valid JSON: ", e.what());
  }
}

// A special-token entry of tokenizer_config.json: a string or an AddedToken object.
std::optional<std::string> config_token(const json& config, const char* key) {
  const json* v = field(config, key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (const json* content = field(*v, "content"); content && content->is_string()) {
    return content->get<std::string>();
  }
  return std::nullopt;
}

void read_config(const json& config, Tokenizer::Impl& im, bool has_post_processor) {
  if (const json* t = field(config, "chat_template")) {
    if (t->is_string()) {
      im.chat_template = t->get<std::string>();
    } else if (t->is_array()) {  // named templates: take "default", else the first
      for (const json& entry : *t) {
        const json* tmpl = field(entry, "template");
        if (!tmpl || !tmpl->is_string()) continue;
        bool is_default = field(entry, "name") && (*field(entry, "name")) == "default";
        if (im.chat_template.empty() || is_default) im.chat_template = tmpl->get<std::string>();
        if (is_default) break;
      }
    }
  }
  im.bos_token = config_token(config, "bos_token");
  im.eos_token = config_token(config, "eos_token");
  if (im.bos_token) im.bos = im.find(*im.bos_token);
  if (im.eos_token) im.eos = im.find(*im.eos_token);
  // transformers' Llama tokenizers build their post-processor from these flags; tokenizer.json's
  // own post-processor wins when it has one (it is what the tokenizers package runs).
  if (!has_post_processor) {
    if (get_bool(config, "add_bos_token", false) && im.bos) im.post_prefix = {*im.bos};
    if (get_bool(config, "add_eos_token", false) && im.eos) im.post_suffix = {*im.eos};
  }
}

std::optional<int32_t> first_present(const Tokenizer::Impl& im,
                                     std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (auto id = im.find(name)) return id;
  }
  return std::nullopt;
}

}  // namespace

std::shared_ptr<Tokenizer::Impl> load_tokenizer_json(const std::string& path_str) {
  fs::path path(path_str);
  if (fs::is_directory(path)) path /= "tokenizer.json";
  json root = read_json(path);
  RT_CHECK_VALUE(root.is_object(), "tokenizer.json: the top level is not an object");
  auto im = std::make_shared<Tokenizer::Impl>();
  try {
    parse_model(root.contains("model") ? root["model"] : json(), im->model);
    if (const json* n = field(root, "normalizer")) parse_normalizer(*n, im->normalizer);
    if (const json* p = field(root, "pre_tokenizer")) parse_pre_tokenizer(*p, im->pre_tokenizer);
    const json* d = field(root, "decoder");
    im->has_decoder = d != nullptr;
    if (d) parse_decoder(*d, im->decoder);
    const json* post = field(root, "post_processor");
    if (post) parse_post_processor(*post, im->post_prefix, im->post_suffix);

    std::vector<AddedToken> added;
    if (const json* list = field(root, "added_tokens")) {
      RT_CHECK_VALUE(list->is_array(), "tokenizer.json: added_tokens is not a list");
      for (const json& t : *list) {
        AddedToken tok;
        tok.content = get_string(t, "content", "added token");
        tok.single_word = get_bool(t, "single_word", false);
        tok.lstrip = get_bool(t, "lstrip", false);
        tok.rstrip = get_bool(t, "rstrip", false);
        tok.normalized = get_bool(t, "normalized", true);
        tok.special = get_bool(t, "special", false);
        added.push_back(std::move(tok));
      }
    }
    im->add_tokens(added);

    fs::path config_path = path.parent_path() / "tokenizer_config.json";
    if (fs::exists(config_path)) read_config(read_json(config_path), *im, post != nullptr);
  } catch (const json::exception& e) {  // a type mismatch nlohmann caught before we did
    RT_ERROR_KIND(ErrorKind::kValue, "tokenizer: malformed '", path.string(), "': ", e.what());
  }
  if (!im->bos) {
    im->bos = !im->post_prefix.empty()
                  ? std::optional<int32_t>(im->post_prefix.front())
                  : first_present(*im, {"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>"});
  }
  if (!im->eos) im->eos = first_present(*im, {"</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>"});
  for (int32_t id : im->post_prefix) {
    RT_CHECK_VALUE(im->token_text(id), "tokenizer.json: post-processor id ", id,
                   " is not in the vocabulary");
  }
  for (int32_t id : im->post_suffix) {
    RT_CHECK_VALUE(im->token_text(id), "tokenizer.json: post-processor id ", id,
                   " is not in the vocabulary");
  }
  im->finish();
  return im;
}

}  // namespace retorch::llama
