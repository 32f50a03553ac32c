// Llama models and tokenizers from GGUF files: config from the {arch}.* keys, tensors by
// llama.cpp's names, vocabulary from tokenizer.ggml.*.
#include "retorch/models/llama/GgufLoader.h"

#include <filesystem>

#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"
#include "retorch/io/Gguf.h"
#include "retorch/models/llama/TokenizerLoader.h"

namespace retorch::llama {
namespace {

LlamaConfig config_from_gguf(const io::GgufFile& f) {
  LlamaConfig c;
  std::string arch = f.get_string("general.architecture");
  RT_CHECK_VALUE(arch == "llama" || arch == "qwen2" || arch == "mistral", "load_llama: ",
                 f.path(), ": architecture '", arch,
                 "' is not a Llama-family one (llama, qwen2, mistral)");
  c.model_type = arch;
  std::string k = arch + ".";
  c.hidden_size = f.get_int(k + "embedding_length");
  c.num_layers = f.get_int(k + "block_count");
  c.intermediate_size = f.get_int(k + "feed_forward_length");
  c.num_heads = f.get_int(k + "attention.head_count");
  c.num_kv_heads = f.get_int(k + "attention.head_count_kv", c.num_heads);
  c.head_dim = f.get_int(k + "attention.key_length",
                         f.get_int(k + "rope.dimension_count",
                                   c.num_heads > 0 ? c.hidden_size / c.num_heads : 0));
  c.rms_norm_eps = f.get_float(k + "attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_theta = f.get_float(k + "rope.freq_base", 10000.0);
  c.max_position_embeddings = f.get_int(k + "context_length", 2048);
  std::string scaling = f.get_string(k + "rope.scaling.type", std::string("none"));
  RT_CHECK_VALUE(scaling == "none" || scaling == "linear", "load_llama: ", f.path(),
                 ": rope scaling '", scaling, "' is not supported (none, linear)");
  c.rope_scaling.type = scaling;
  c.rope_scaling.factor = f.get_float(k + "rope.scaling.factor", 1.0);
  c.sliding_window = f.get_int(k + "attention.sliding_window", -1);
  // llama.cpp's converter permutes the rows of q and k of "llama" models so that rotary pairs
  // are adjacent (x[2i], x[2i+1]); qwen2 keeps Hugging Face's half-split pairs.
  c.rope_interleaved = arch != "qwen2";
  if (const io::GgufTensorInfo* info = f.find_tensor("token_embd.weight"))
    c.vocab_size = info->rows();
  c.vocab_size = f.get_int(k + "vocab_size", c.vocab_size);
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
  c.mlp_bias = f.find_tensor("blk.0.ffn_up.bias") != nullptr;
  c.bos_token_id = f.get_int("tokenizer.ggml.bos_token_id", -1);
  if (f.has("tokenizer.ggml.eos_token_id"))
    c.eos_token_ids.push_back(f.get_int("tokenizer.ggml.eos_token_id"));
  if (f.has("tokenizer.ggml.eot_token_id")) {
    int64_t eot = f.get_int("tokenizer.ggml.eot_token_id");
    if (c.eos_token_ids.empty() || c.eos_token_ids[0] != eot) c.eos_token_ids.push_back(eot);
  }
  if (f.find_tensor("rope_freqs.weight")) {
    Tensor r = f.tensor("rope_freqs.weight").to(kFloat).contiguous();
    const float* p = r.data_ptr<float>();
    c.rope_freq_factors.assign(p, p + r.numel());
  }
  c.validate();
  return c;
}

// One weight as the model takes it: dense ones converted to `dtype`, quantized ones as stored.
struct Weight {
  Tensor data;
  int64_t qtype = -1;
  int64_t cols = 0;
};

class Reader {
 public:
  Reader(const io::GgufFile& f, ScalarType dtype) : f_(f), dtype_(dtype) {}

  Weight weight(const std::string& name, int64_t rows, int64_t cols) const {
    const io::GgufTensorInfo* info = f_.find_tensor(name);
    RT_CHECK_VALUE(info != nullptr, "load_llama: ", f_.path(), " lacks tensor '", name, "'");
    RT_CHECK_VALUE(info->cols() == cols && info->rows() == rows, "load_llama: ", f_.path(),
                   ": tensor '", name, "' has ne ", IntArrayRef(info->ne), ", expected [", cols,
                   ", ", rows, "]");
    Tensor t = f_.tensor(*info);
    if (info->is_quantized()) return {t, info->type, cols};
    return {t.to(dtype_), -1, cols};
  }

  Tensor vector(const std::string& name, int64_t n) const {
    const io::GgufTensorInfo* info = f_.find_tensor(name);
    RT_CHECK_VALUE(info != nullptr, "load_llama: ", f_.path(), " lacks tensor '", name, "'");
    Tensor t = f_.tensor(*info);
    RT_CHECK_VALUE(!info->is_quantized() && t.numel() == n, "load_llama: ", f_.path(),
                   ": tensor '", name, "' must be a plain vector of ", n, " values");
    return t.reshape({n}).to(kFloat);
  }

  Tensor maybe_vector(const std::string& name, int64_t n) const {
    return f_.find_tensor(name) ? vector(name, n) : Tensor();
  }

  // Several weights stacked along rows into one fused projection when they share a format;
  // otherwise the parts as they are (see QLinearParts).
  QLinearParts fused(const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                     int64_t cols, const std::vector<std::string>& bias_names) const {
    std::vector<Weight> ws;
    std::vector<Tensor> biases;
    bool same = true;
    for (size_t i = 0; i < names.size(); ++i) {
      ws.push_back(weight(names[i], rows[i], cols));
      same = same && ws[i].qtype == ws[0].qtype;
      biases.push_back(bias_names.empty() ? Tensor() : vector(bias_names[i], rows[i]));
    }
    if (!same || ws.size() == 1) {
      QLinearParts parts;
      for (size_t i = 0; i < ws.size(); ++i)
        parts.push_back(QLinear(ws[i].data, biases[i], ws[i].qtype, cols));
      return parts;
    }
    std::vector<Tensor> data;
    for (const Weight& w : ws) data.push_back(w.data);
    Tensor b = bias_names.empty() ? Tensor() : cat(biases, 0);
    return {QLinear(cat(data, 0), b, ws[0].qtype, cols)};
  }

 private:
  const io::GgufFile& f_;
  ScalarType dtype_;
};

}  // namespace

LlamaForCausalLM load_llama_gguf(const std::string& path, const LoadOptions& options) {
  std::shared_ptr<io::GgufFile> file = io::GgufFile::open(path);
  const io::GgufFile& f = *file;
  LlamaConfig c = config_from_gguf(f);
  Reader r(f, options.dtype);
  int64_t H = c.hidden_size, D = c.head_dim, I = c.intermediate_size;
  std::vector<LlamaLayer> layers;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    std::string p = "blk." + std::to_string(i) + ".";
    std::vector<std::string> qkv_bias;
    if (c.qkv_bias) qkv_bias = {p + "attn_q.bias", p + "attn_k.bias", p + "attn_v.bias"};
    LlamaLayer l;
    QLinearParts qkv = r.fused({p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"},
                          {c.num_heads * D, c.num_kv_heads * D, c.num_kv_heads * D}, H, qkv_bias);
    std::vector<std::string> o_bias;
    if (c.o_bias) o_bias = {p + "attn_output.bias"};
    QLinear o = r.fused({p + "attn_output.weight"}, {H}, c.num_heads * D, o_bias)[0];
    l.attn = LlamaAttention(c, qkv, o);
    std::vector<std::string> gu_bias, down_bias;
    if (c.mlp_bias) {
      gu_bias = {p + "ffn_gate.bias", p + "ffn_up.bias"};
      down_bias = {p + "ffn_down.bias"};
    }
    l.mlp = LlamaMlp(r.fused({p + "ffn_gate.weight", p + "ffn_up.weight"}, {I, I}, H, gu_bias),
                     r.fused({p + "ffn_down.weight"}, {H}, I, down_bias)[0]);
    l.input_norm = r.vector(p + "attn_norm.weight", H);
    l.post_attention_norm = r.vector(p + "ffn_norm.weight", H);
    layers.push_back(std::move(l));
  }
  Weight emb = r.weight("token_embd.weight", c.vocab_size, H);
  QLinear head = c.tie_word_embeddings ? QLinear(emb.data, Tensor(), emb.qtype, H)
                                       : r.fused({"output.weight"}, {c.vocab_size}, H, {})[0];
  return LlamaForCausalLM(c, QEmbedding(emb.data, emb.qtype, H), std::move(layers),
                          r.vector("output_norm.weight", H), head);
}

Tokenizer tokenizer_from_gguf(const io::GgufFile& f) {
  TokenizerSpec s;
  std::string model = f.get_string("tokenizer.ggml.model");
  RT_CHECK_VALUE(model == "llama" || model == "gpt2", "tokenizer: ", f.path(),
                 ": tokenizer.ggml.model '", model, "' is not supported (llama, gpt2)");
  s.kind = model;
  s.tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (f.has("tokenizer.ggml.scores")) s.scores = f.get_float_array("tokenizer.ggml.scores");
  if (f.has("tokenizer.ggml.token_type")) {
    for (int64_t t : f.get_int_array("tokenizer.ggml.token_type")) s.token_types.push_back(int32_t(t));
  }
  if (f.has("tokenizer.ggml.merges")) s.merges = f.get_string_array("tokenizer.ggml.merges");
  auto id = [&](const char* key) -> std::optional<int32_t> {
    if (!f.has(key)) return std::nullopt;
    return int32_t(f.get_int(key));
  };
  s.bos_id = id("tokenizer.ggml.bos_token_id");
  s.eos_id = id("tokenizer.ggml.eos_token_id");
  s.unk_id = id("tokenizer.ggml.unknown_token_id");
  s.pad_id = id("tokenizer.ggml.padding_token_id");
  // llama.cpp's defaults: SentencePiece vocabularies add BOS, byte-level BPE ones do not.
  s.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", model == "llama");
  s.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
  s.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);
  s.pre = f.get_string("tokenizer.ggml.pre", std::string("default"));
  s.chat_template = f.get_string("tokenizer.chat_template", std::string());
  return Tokenizer::from_spec(s);
}

Tokenizer load_tokenizer(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".gguf")
    return tokenizer_from_gguf(*io::GgufFile::open(path));
  return Tokenizer::from_file(path);
}

}  // namespace retorch::llama
