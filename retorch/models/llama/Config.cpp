// LlamaConfig parsing (HF config.json) and the rotary frequency tables.
#include "retorch/models/llama/Config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"

namespace retorch::llama {
namespace {

using nlohmann::json;

int64_t get_int(const json& j, const char* key, int64_t dflt, const std::string& name) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  RT_CHECK_VALUE(j[key].is_number_integer(), "llama config ", name, ": '", key,
                 "' must be an integer, got ", j[key].dump());
  return j[key].get<int64_t>();
}

double get_double(const json& j, const char* key, double dflt, const std::string& name) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  RT_CHECK_VALUE(j[key].is_number(), "llama config ", name, ": '", key,
                 "' must be a number, got ", j[key].dump());
  return j[key].get<double>();
}

bool get_bool(const json& j, const char* key, bool dflt, const std::string& name) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  RT_CHECK_VALUE(j[key].is_boolean(), "llama config ", name, ": '", key,
                 "' must be true or false, got ", j[key].dump());
  return j[key].get<bool>();
}

}  // namespace

LlamaConfig LlamaConfig::from_hf_json_text(const std::string& text, const std::string& name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  RT_CHECK_VALUE(j.is_object(), "llama config ", name, ": not a JSON object");
  LlamaConfig c;
  c.model_type = j.value("model_type", std::string("llama"));
  static const char* kKnown[] = {"llama", "qwen2", "mistral"};
  bool known = false;
  for (const char* k : kKnown) known = known || c.model_type == k;
  RT_CHECK_VALUE(known, "llama config ", name, ": model_type '", c.model_type,
                 "' is not a Llama-family architecture (llama, qwen2, mistral)");
  std::string act = j.value("hidden_act", std::string("silu"));
  RT_CHECK_VALUE(act == "silu", "llama config ", name, ": hidden_act '", act,
                 "' is not supported (silu only)");
  c.vocab_size = get_int(j, "vocab_size", c.vocab_size, name);
  c.hidden_size = get_int(j, "hidden_size", c.hidden_size, name);
  c.intermediate_size = get_int(j, "intermediate_size", c.intermediate_size, name);
  c.num_layers = get_int(j, "num_hidden_layers", c.num_layers, name);
  c.num_heads = get_int(j, "num_attention_heads", c.num_heads, name);
  c.num_kv_heads = get_int(j, "num_key_value_heads", c.num_heads, name);
  c.head_dim = get_int(j, "head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0, name);
  c.rms_norm_eps = get_double(j, "rms_norm_eps", c.rms_norm_eps, name);
  c.rope_theta = get_double(j, "rope_theta", c.rope_theta, name);
  c.max_position_embeddings =
      get_int(j, "max_position_embeddings", c.max_position_embeddings, name);
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", false, name);
  bool attention_bias = get_bool(j, "attention_bias", false, name);
  c.qkv_bias = c.model_type == "qwen2" || attention_bias;
  c.o_bias = attention_bias;
  c.mlp_bias = get_bool(j, "mlp_bias", false, name);
  bool use_window = c.model_type == "mistral" ||
                    (c.model_type == "qwen2" && get_bool(j, "use_sliding_window", false, name));
  if (use_window) c.sliding_window = get_int(j, "sliding_window", -1, name);
  c.bos_token_id = get_int(j, "bos_token_id", -1, name);
  if (j.contains("eos_token_id") && j["eos_token_id"].is_array()) {
    for (const json& e : j["eos_token_id"]) c.eos_token_ids.push_back(e.get<int64_t>());
  } else if (get_int(j, "eos_token_id", -1, name) >= 0) {
    c.eos_token_ids.push_back(get_int(j, "eos_token_id", -1, name));
  }
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    const json& r = j["rope_scaling"];
    std::string type = r.value("rope_type", r.value("type", std::string("default")));
    RT_CHECK_VALUE(type == "linear" || type == "llama3" || type == "default", "llama config ",
                   name, ": rope_scaling type '", type, "' is not supported (linear, llama3)");
    c.rope_scaling.type = type == "default" ? "none" : type;
    c.rope_scaling.factor = get_double(r, "factor", 1.0, name);
    c.rope_scaling.low_freq_factor = get_double(r, "low_freq_factor", 1.0, name);
    c.rope_scaling.high_freq_factor = get_double(r, "high_freq_factor", 4.0, name);
    c.rope_scaling.original_max_position_embeddings =
        get_int(r, "original_max_position_embeddings", 8192, name);
  }
  c.validate();
  return c;
}

LlamaConfig LlamaConfig::from_hf_json(const std::string& path) {
  std::ifstream f(path);
  RT_CHECK_VALUE(f.good(), "llama config: cannot open '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return from_hf_json_text(ss.str(), path);
}

void LlamaConfig::validate() const {
  RT_CHECK_VALUE(vocab_size > 0 && hidden_size > 0 && intermediate_size > 0 && num_layers > 0 &&
                     num_heads > 0 && num_kv_heads > 0 && head_dim > 0,
                 "llama config: sizes must be positive (vocab ", vocab_size, ", hidden ",
                 hidden_size, ", intermediate ", intermediate_size, ", layers ", num_layers,
                 ", heads ", num_heads, ", kv heads ", num_kv_heads, ", head_dim ", head_dim, ")");
  RT_CHECK_VALUE(num_heads % num_kv_heads == 0, "llama config: ", num_heads,
                 " attention heads are not a multiple of ", num_kv_heads, " kv heads");
  RT_CHECK_VALUE(head_dim % 2 == 0, "llama config: head_dim ", head_dim, " must be even");
  RT_CHECK_VALUE(rope_scaling.factor > 0, "llama config: rope_scaling factor must be positive");
}

int64_t LlamaConfig::num_parameters() const {
  int64_t attn = hidden_size * head_dim * (2 * num_heads + 2 * num_kv_heads);
  int64_t mlp = 3 * hidden_size * intermediate_size;
  int64_t per_layer = attn + mlp + 2 * hidden_size;
  int64_t embed = vocab_size * hidden_size;
  return num_layers * per_layer + hidden_size + embed * (tie_word_embeddings ? 1 : 2);
}

std::vector<float> rope_inv_freq(const LlamaConfig& config) {
  int64_t dim = config.head_dim;
  std::vector<float> inv(size_t(dim / 2));
  float base = float(config.rope_theta);
  for (int64_t i = 0; i < dim / 2; ++i)
    inv[size_t(i)] = 1.0f / std::pow(base, float(2 * i) / float(dim));
  const RopeScaling& s = config.rope_scaling;
  if (s.type == "linear") {
    for (float& f : inv) f /= float(s.factor);
  } else if (s.type == "llama3") {
    // Long wavelengths are slowed by `factor`, short ones kept, the band between interpolated.
    float old_ctx = float(s.original_max_position_embeddings);
    float low_wavelen = old_ctx / float(s.low_freq_factor);
    float high_wavelen = old_ctx / float(s.high_freq_factor);
    for (float& f : inv) {
      float wavelen = 2.0f * float(M_PI) / f;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        f /= float(s.factor);
      } else {
        float smooth = (old_ctx / wavelen - float(s.low_freq_factor)) /
                       float(s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / float(s.factor) + smooth * f;
      }
    }
  }
  if (!config.rope_freq_factors.empty()) {
    RT_CHECK_VALUE(config.rope_freq_factors.size() == inv.size(), "llama config: ",
                   config.rope_freq_factors.size(), " rope frequency factors for ", inv.size(),
                   " frequencies");
    for (size_t i = 0; i < inv.size(); ++i) inv[i] /= config.rope_freq_factors[i];
  }
  return inv;
}

Tensor rope_cos_sin_cache(const LlamaConfig& config, int64_t n) {
  std::vector<float> inv = rope_inv_freq(config);
  int64_t half = int64_t(inv.size());
  Tensor out = empty({n, 2 * half}, TensorOptions().dtype(kFloat));
  float* p = out.data_ptr<float>();
  for (int64_t pos = 0; pos < n; ++pos) {
    for (int64_t i = 0; i < half; ++i) {
      float angle = float(pos) * inv[size_t(i)];  // one float32 product, as HF's matmul does
      p[pos * 2 * half + i] = std::cos(angle);
      p[pos * 2 * half + half + i] = std::sin(angle);
    }
  }
  return out;
}

}  // namespace retorch::llama
