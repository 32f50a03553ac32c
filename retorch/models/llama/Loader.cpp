// Building Llama models: from HF safetensors directories, GGUF files, or random weights.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"
#include "retorch/io/Safetensors.h"
#include "retorch/models/llama/GgufLoader.h"
#include "retorch/models/llama/Model.h"

namespace retorch::llama {
namespace {

namespace fs = std::filesystem;
using TensorMap = std::map<std::string, Tensor>;

// The tensors of a HF checkpoint directory: one model.safetensors, or the shards an index lists.
TensorMap read_hf_tensors(const fs::path& dir) {
  TensorMap out;
  fs::path index = dir / "model.safetensors.index.json";
  std::vector<fs::path> files;
  if (fs::exists(index)) {
    std::ifstream f(index);
    std::stringstream ss;
    ss << f.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    RT_CHECK_VALUE(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
                   "load_llama: ", index.string(), " has no \"weight_map\" object");
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      RT_CHECK_VALUE(file.is_string(), "load_llama: ", index.string(), ": weight_map[\"", name,
                     "\"] is not a file name");
      std::string s = file.get<std::string>();
      // Shards must sit beside the index: no absolute paths or "..".
      RT_CHECK_VALUE(fs::path(s).filename().string() == s, "load_llama: ", index.string(),
                     ": shard name '", s, "' is not a plain file name");
      shards.insert(s);
    }
    for (const std::string& s : shards) files.push_back(dir / s);
  } else {
    RT_CHECK_VALUE(fs::exists(dir / "model.safetensors"), "load_llama: ", dir.string(),
                   " has neither model.safetensors nor model.safetensors.index.json");
    files.push_back(dir / "model.safetensors");
  }
  for (const fs::path& file : files) {
    OrderedDict<Tensor> part = io::load_safetensors(file.string());
    for (const auto& item : part) out[item.key] = item.value;
  }
  return out;
}

const Tensor& need(const TensorMap& m, const std::string& name, const std::string& where) {
  auto it = m.find(name);
  RT_CHECK_VALUE(it != m.end(), "load_llama: ", where, " lacks tensor '", name, "'");
  return it->second;
}

Tensor opt(const TensorMap& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? Tensor() : it->second;
}

Tensor cat_rows(const std::vector<Tensor>& parts, ScalarType dtype) {
  std::vector<Tensor> conv;
  for (const Tensor& t : parts) conv.push_back(t.to(dtype));
  return cat(conv, 0);
}

LlamaForCausalLM build_from_hf(const LlamaConfig& c, const TensorMap& m, const std::string& where,
                               ScalarType dtype) {
  auto w = [&](const std::string& n) { return need(m, n, where); };
  Tensor embed_w = w("model.embed_tokens.weight").to(dtype);
  RT_CHECK_VALUE(embed_w.dim() == 2 && embed_w.size(0) == c.vocab_size &&
                     embed_w.size(1) == c.hidden_size,
                 "load_llama: ", where, ": embed_tokens of shape ", embed_w.sizes(),
                 " does not match vocab ", c.vocab_size, " x hidden ", c.hidden_size);
  std::vector<LlamaLayer> layers;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    std::string a = p + "self_attn.";
    Tensor qkv = cat_rows({w(a + "q_proj.weight"), w(a + "k_proj.weight"), w(a + "v_proj.weight")},
                          dtype);
    Tensor qkv_b;
    if (c.qkv_bias)
      qkv_b = cat_rows({w(a + "q_proj.bias"), w(a + "k_proj.bias"), w(a + "v_proj.bias")}, kFloat);
    Tensor o_b = c.o_bias ? w(a + "o_proj.bias").to(kFloat) : Tensor();
    std::string mp = p + "mlp.";
    Tensor gate_up = cat_rows({w(mp + "gate_proj.weight"), w(mp + "up_proj.weight")}, dtype);
    Tensor gate_up_b, down_b;
    if (c.mlp_bias) {
      gate_up_b = cat_rows({w(mp + "gate_proj.bias"), w(mp + "up_proj.bias")}, kFloat);
      down_b = w(mp + "down_proj.bias").to(kFloat);
    }
    LlamaLayer l;
    l.attn = LlamaAttention(c, QLinearParts{QLinear(qkv, qkv_b)},
                            QLinear(w(a + "o_proj.weight").to(dtype), o_b));
    l.mlp = LlamaMlp(QLinearParts{QLinear(gate_up, gate_up_b)},
                     QLinear(w(mp + "down_proj.weight").to(dtype), down_b));
    l.input_norm = w(p + "input_layernorm.weight").to(kFloat);
    l.post_attention_norm = w(p + "post_attention_layernorm.weight").to(kFloat);
    layers.push_back(std::move(l));
  }
  Tensor head = opt(m, "lm_head.weight");
  Tensor head_w = c.tie_word_embeddings || !head.defined() ? embed_w : head.to(dtype);
  return LlamaForCausalLM(c, QEmbedding(embed_w), std::move(layers),
                          w("model.norm.weight").to(kFloat), QLinear(head_w, Tensor()));
}

}  // namespace

LlamaForCausalLM load_llama(const std::string& path, const LoadOptions& options) {
  RT_CHECK_VALUE(is_floating_type(options.dtype), "load_llama: dtype must be floating, got ",
                 options.dtype);
  fs::path p(path);
  if (p.extension() == ".gguf") return load_llama_gguf(path, options);
  RT_CHECK_VALUE(fs::is_directory(p), "load_llama: '", path,
                 "' is neither a model directory nor a .gguf file");
  LlamaConfig c = LlamaConfig::from_hf_json((p / "config.json").string());
  TensorMap m = read_hf_tensors(p);
  return build_from_hf(c, m, path, options.dtype);
}

LlamaForCausalLM random_llama(const LlamaConfig& c, ScalarType dtype, int64_t qtype,
                              uint64_t seed) {
  c.validate();
  Generator gen(seed);
  auto weight = [&](int64_t rows, int64_t cols) {
    Tensor t = randn({rows, cols}, gen).mul_(0.02);
    return qtype >= 0 ? QLinear(quantize_blocks(t, qtype), Tensor(), qtype, cols)
                      : QLinear(t.to(dtype), Tensor());
  };
  int64_t H = c.hidden_size, D = c.head_dim;
  std::vector<LlamaLayer> layers;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    LlamaLayer l;
    l.attn = LlamaAttention(c, QLinearParts{weight((c.num_heads + 2 * c.num_kv_heads) * D, H)},
                            weight(H, c.num_heads * D));
    l.mlp = LlamaMlp(QLinearParts{weight(2 * c.intermediate_size, H)},
                     weight(H, c.intermediate_size));
    l.input_norm = ones({H});
    l.post_attention_norm = ones({H});
    layers.push_back(std::move(l));
  }
  Tensor emb = randn({c.vocab_size, H}, gen);
  emb = qtype >= 0 ? quantize_blocks(emb, qtype) : emb.to(dtype);
  QLinear head = c.tie_word_embeddings ? QLinear(emb, Tensor(), qtype, H) : weight(c.vocab_size, H);
  return LlamaForCausalLM(c, QEmbedding(emb, qtype, H), std::move(layers), ones({H}), head);
}

}  // namespace retorch::llama
