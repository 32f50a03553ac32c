// The Llama modules' forward passes (see Model.h) over the paged KV cache.
#include "retorch/models/llama/Model.h"

#include <cmath>
#include <cstring>
#include <ostream>

#include "retorch/autograd/GradMode.h"
#include "retorch/backend/cpu/QuantBlocks.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/generated/Functions.h"

namespace retorch::llama {

namespace {

using cpu::quant::kQ4_0;
using cpu::quant::kQ4_0x16;

// A Q4_0 weight [N, row_bytes] (N % 16 == 0) in the Q4_0x16 layout, a group of 16 rows at a
// time (Note [Q4_0 in groups of 16 rows] in backend/cpu/QuantBlocks.h).
Tensor interleave_q4_0(const Tensor& w) {
  Tensor c = w.contiguous();
  Tensor out = empty(c.sizes(), TensorOptions().dtype(kByte));
  const int64_t group_bytes = cpu::quant::kQ4_0x16Rows * c.size(1);
  const uint8_t* src = c.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  for (int64_t g = 0; g < c.size(0) / cpu::quant::kQ4_0x16Rows; ++g)
    cpu::quant::interleave_q4_0(src + g * group_bytes, c.size(1), dst + g * group_bytes);
  return out;
}

}  // namespace

QLinearImpl::QLinearImpl(Tensor weight, Tensor bias, int64_t qtype, int64_t in_features)
    : Module("retorch::llama::QLinear"), qtype_(qtype) {
  RT_CHECK_VALUE(weight.dim() == 2, "QLinear: expected a 2-D weight, got shape ", weight.sizes());
  RT_CHECK_VALUE(qtype < 0 ? is_floating_type(weight.dtype()) : weight.dtype() == kByte,
                 "QLinear: a ", qtype < 0 ? "dense" : "quantized", " weight cannot be ",
                 weight.dtype());
  in_features_ = qtype < 0 ? weight.size(1) : in_features;
  if (qtype < 0 && (weight.dtype() == kBFloat16 || weight.dtype() == kHalf)) {
    // 16-bit weights run as ggml's BF16/F16 rows through quantized_linear, which widens them in
    // registers: linear() would widen the whole matrix to float32 in memory on every call, and
    // a decode step is bound by the bytes it reads.
    qtype_ = weight.dtype() == kBFloat16 ? 30 : 1;
    Tensor c = weight.contiguous();
    Tensor bytes = empty({c.size(0), c.size(1) * 2}, TensorOptions().dtype(kByte));
    std::memcpy(bytes.data_ptr<uint8_t>(), c.impl()->data(), size_t(c.numel()) * 2);
    weight = bytes;
  }
  if (qtype_ == kQ4_0 && weight.size(0) % 16 == 0 && weight.size(1) % 18 == 0 &&
      weight.device().is_cpu()) {
    // A decode step reads Q4_0 rows fastest 16 at a time (Note [Q4_0 in groups of 16 rows]).
    weight = interleave_q4_0(weight);
    qtype_ = kQ4_0x16;
  }
  weight_ = register_parameter("weight", std::move(weight), false);
  if (bias.defined()) {
    RT_CHECK_VALUE(bias.dim() == 1 && bias.size(0) == weight_.size(0), "QLinear: bias of shape ",
                   bias.sizes(), " does not match weight ", weight_.sizes());
    bias_ = register_parameter("bias", std::move(bias), false);
  }
}

Tensor QLinearImpl::forward(const Tensor& input) {
  const std::optional<Tensor> b = bias();
  // In a device's own memory, 16-bit rows run the device's quantized_linear: one GEMM of the
  // rows as they are, float32 accumulation and result.
  if (qtype_ >= 0) return quantized_linear(input.to(kFloat), weight_, qtype_, in_features_, b);
  std::optional<Tensor> bw = b ? std::optional<Tensor>(b->to(weight_.dtype())) : std::nullopt;
  return linear(input.to(weight_.dtype()), weight_, bw);
}

int64_t QLinearImpl::weight_bytes() const {
  int64_t n = weight_.numel() * int64_t(element_size(weight_.dtype()));
  if (bias_.defined()) n += bias_.numel() * int64_t(element_size(bias_.dtype()));
  return n;
}

void QLinearImpl::pretty_print(std::ostream& os) const {
  os << "retorch::llama::QLinear(in_features=" << in_features_
     << ", out_features=" << weight_.size(0) << ", bias=" << (bias_.defined() ? "true" : "false");
  if (qtype_ >= 0) os << ", qtype=" << qtype_;
  os << ")";
}

QEmbeddingImpl::QEmbeddingImpl(Tensor weight, int64_t qtype, int64_t dim)
    : Module("retorch::llama::QEmbedding"), qtype_(qtype) {
  RT_CHECK_VALUE(weight.dim() == 2, "QEmbedding: expected a 2-D table, got shape ",
                 weight.sizes());
  dim_ = qtype < 0 ? weight.size(1) : dim;
  weight_ = register_parameter("weight", std::move(weight), false);
}

Tensor QEmbeddingImpl::forward(const Tensor& ids) {
  // index_select checks the ids (and the engine already did, once per request): no extra
  // min/max reductions on every forward.
  Tensor rows = weight_.index_select(0, ids.reshape({-1}));
  if (qtype_ >= 0) return dequantize_blocks(rows, qtype_, dim_);
  return rows.to(kFloat);
}

namespace {

int64_t out_features(const QLinearParts& parts) {
  int64_t n = 0;
  for (const QLinear& p : parts) n += p->out_features();
  return n;
}

// Registers one fused part under `fused` or several under `names`.
void register_parts(nn::Module& m, const QLinearParts& parts, const char* fused,
                    const std::vector<const char*>& names) {
  RT_CHECK_VALUE(parts.size() == 1 || parts.size() == names.size(), m.name(), ": expected 1 or ",
                 names.size(), " projections, got ", parts.size());
  for (size_t i = 0; i < parts.size(); ++i)
    m.register_module(parts.size() == 1 ? fused : names[i], parts[i]);
}

Tensor run_parts(const QLinearParts& parts, const Tensor& x) {
  if (parts.size() == 1) return parts[0](x);
  std::vector<Tensor> outs;
  for (const QLinear& p : parts) outs.push_back(p(x));
  return cat(outs, -1);
}

}  // namespace

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig& config, QLinearParts qkv,
                                       QLinear o_proj)
    : Module("retorch::llama::LlamaAttention"), config_(config), qkv_(std::move(qkv)) {
  int64_t D = config.head_dim;
  RT_CHECK_VALUE(out_features(qkv_) == (config.num_heads + 2 * config.num_kv_heads) * D &&
                     o_proj->in_features() == config.num_heads * D,
                 "LlamaAttention: projections of ", out_features(qkv_), " and ",
                 o_proj->in_features(), " features do not match ", config.num_heads, "+2x",
                 config.num_kv_heads, " heads of ", D);
  register_parts(*this, qkv_, "qkv_proj", {"q_proj", "k_proj", "v_proj"});
  o_proj_ = register_module("o_proj", std::move(o_proj));
}

Tensor LlamaAttentionImpl::forward(const Tensor& x, const ForwardBatch& batch,
                                   const Tensor& cos_sin, const Tensor& key_cache,
                                   const Tensor& value_cache) {
  // See Note [Paged KV cache]: each token's key and value go to its slot before attention reads;
  // the rotations and the cache write are one op (Note [Rotary and cache write]).
  Tensor q = rotary_and_cache(run_parts(qkv_, x), batch.positions, cos_sin, key_cache,
                              value_cache, batch.slots, config_.rope_interleaved);
  return attend(q, batch, key_cache, value_cache);
}

std::tuple<Tensor, Tensor> LlamaAttentionImpl::forward_normed(
    LlamaRmsNormImpl& norm, const Tensor& h, const std::optional<Tensor>& residual,
    const ForwardBatch& batch, const Tensor& cos_sin, const Tensor& key_cache,
    const Tensor& value_cache) {
  if (qkv_.size() != 1 || qkv_[0]->qtype() < 0) {
    auto [x, sum] = norm.forward(h, residual);
    return {forward(x, batch, cos_sin, key_cache, value_cache), sum};
  }
  const QLinearImpl& p = *qkv_[0];
  auto [q, sum] = rms_norm_linear_rotary_and_cache(
      h, residual, norm.weight(), norm.eps(), p.weight(), p.qtype(), p.in_features(), p.bias(),
      batch.positions, cos_sin, key_cache, value_cache, batch.slots, config_.rope_interleaved);
  return {attend(q, batch, key_cache, value_cache), sum};
}

Tensor LlamaAttentionImpl::attend(const Tensor& q, const ForwardBatch& batch,
                                  const Tensor& key_cache, const Tensor& value_cache) {
  const int64_t T = q.size(0), Hq = config_.num_heads, D = config_.head_dim;
  Tensor o = paged_attention(q, key_cache, value_cache, batch.block_tables, batch.query_seq,
                             batch.positions, 1.0 / std::sqrt(double(D)), config_.sliding_window);
  return o_proj_(o.view({T, Hq * D}));
}

LlamaMlpImpl::LlamaMlpImpl(QLinearParts gate_up, QLinear down_proj)
    : Module("retorch::llama::LlamaMlp"), gate_up_(std::move(gate_up)) {
  register_parts(*this, gate_up_, "gate_up_proj", {"gate_proj", "up_proj"});
  down_proj_ = register_module("down_proj", std::move(down_proj));
}

Tensor LlamaMlpImpl::forward(const Tensor& x) {
  return down_proj_(silu_and_mul(run_parts(gate_up_, x)));
}

LlamaRmsNormImpl::LlamaRmsNormImpl(Tensor weight, double eps)
    : Module("retorch::llama::LlamaRmsNorm"), eps_(eps) {
  RT_CHECK_VALUE(weight.dim() == 1, "LlamaRmsNorm: expected a 1-D weight, got shape ",
                 weight.sizes());
  weight_ = register_parameter("weight", std::move(weight), false);
}

std::tuple<Tensor, Tensor> LlamaRmsNormImpl::forward(const Tensor& x,
                                                     const std::optional<Tensor>& residual) {
  return fused_rms_norm(x, residual, weight_, eps_);
}

std::tuple<Tensor, Tensor> LlamaRmsNormImpl::forward_then(const QLinearParts& parts,
                                                          const Tensor& x,
                                                          const std::optional<Tensor>& residual,
                                                          bool silu_and_mul) {
  if (parts.size() == 1 && parts[0]->qtype() >= 0) {
    const QLinearImpl& p = *parts[0];
    return rms_norm_linear(x, residual, weight_, eps_, p.weight(), p.qtype(), p.in_features(),
                           p.bias(), silu_and_mul);
  }
  auto [normed, sum] = forward(x, residual);
  Tensor y = run_parts(parts, normed);
  return {silu_and_mul ? retorch::silu_and_mul(y) : y, sum};
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig& config, LlamaLayer layer)
    : Module("retorch::llama::LlamaDecoderLayer") {
  self_attn_ = register_module("self_attn", std::move(layer.attn));
  mlp_ = register_module("mlp", std::move(layer.mlp));
  input_layernorm_ = register_module(
      "input_layernorm", LlamaRmsNorm(std::move(layer.input_norm), config.rms_norm_eps));
  post_attention_layernorm_ = register_module(
      "post_attention_layernorm",
      LlamaRmsNorm(std::move(layer.post_attention_norm), config.rms_norm_eps));
}

std::tuple<Tensor, Tensor> LlamaDecoderLayerImpl::forward(
    const Tensor& h, const std::optional<Tensor>& residual, const ForwardBatch& batch,
    const Tensor& cos_sin, const Tensor& key_cache, const Tensor& value_cache) {
  // Each norm and the projection after it are one op (Note [Normed decode projections]).
  auto [a, r] = self_attn_->forward_normed(*input_layernorm_, h, residual, batch, cos_sin,
                                           key_cache, value_cache);
  auto [act, r2] = post_attention_layernorm_->forward_then(mlp_->gate_up(), a, r, true);
  return {mlp_->down(act), r2};
}

int64_t LlamaDecoderLayerImpl::weight_bytes() const {
  int64_t n = 0;
  for (const auto& parent : {self_attn_->children(), mlp_->children()})
    for (const auto& m : parent) n += static_cast<const QLinearImpl&>(*m).weight_bytes();
  for (const Tensor& t : {input_layernorm_->parameters()[0], post_attention_layernorm_->parameters()[0]})
    n += t.numel() * int64_t(element_size(t.dtype()));
  return n;
}

LlamaForCausalLMImpl::LlamaForCausalLMImpl(LlamaConfig config, QEmbedding embed,
                                           std::vector<LlamaLayer> layers, Tensor norm,
                                           QLinear lm_head)
    : Module("retorch::llama::LlamaForCausalLM"), config_(std::move(config)) {
  config_.validate();
  RT_CHECK_VALUE(int64_t(layers.size()) == config_.num_layers, "LlamaForCausalLM: got ",
                 layers.size(), " layers for a config of ", config_.num_layers);
  // HF's module tree: embed_tokens, layers.N.{self_attn,mlp,...}, norm, lm_head.
  embed_ = register_module("embed_tokens", std::move(embed));
  auto list = register_module("layers", std::make_shared<nn::Module>("retorch::nn::ModuleList"));
  for (size_t i = 0; i < layers.size(); ++i)
    layers_.push_back(list->register_module(std::to_string(i),
                                            LlamaDecoderLayer(config_, std::move(layers[i]))));
  norm_ = register_module("norm", LlamaRmsNorm(std::move(norm), config_.rms_norm_eps));
  lm_head_ = register_module("lm_head", std::move(lm_head));
  eval();
}

// The table follows the model: one built before the model moved (an engine on the cpu, then one
// on cuda) moves with it.
const Tensor& LlamaForCausalLMImpl::cos_sin(int64_t max_pos) {
  const Device device = norm_->parameters()[0].device();  // the model's device
  if (!cos_sin_.defined() || cos_sin_.size(0) <= max_pos) {
    int64_t n = std::max<int64_t>(256, cos_sin_.defined() ? 2 * cos_sin_.size(0) : 0);
    while (n <= max_pos) n *= 2;
    cos_sin_ = rope_cos_sin_cache(config_, n);
  }
  if (cos_sin_.device() != device) cos_sin_ = cos_sin_.to(device, cos_sin_.dtype());
  return cos_sin_;
}

Tensor LlamaForCausalLMImpl::forward(const ForwardBatch& batch, KvCache& cache) {
  InferenceMode guard;
  RT_CHECK(batch.tokens.dim() == 1 && batch.positions.sizes() == batch.tokens.sizes() &&
               batch.slots.sizes() == batch.tokens.sizes() &&
               batch.query_seq.sizes() == batch.tokens.sizes(),
           "LlamaForCausalLM: tokens ", batch.tokens.sizes(), ", positions ",
           batch.positions.sizes(), ", query_seq ", batch.query_seq.sizes(), " and slots ",
           batch.slots.sizes(), " must be 1-D of one length");
  const int64_t max_pos = batch.max_position >= 0 ? batch.max_position
                         : batch.positions.numel() ? batch.positions.max().item<int64_t>()
                                                   : 0;
  const Tensor& cs = cos_sin(max_pos);
  Tensor h = embed_(batch.tokens);
  std::optional<Tensor> residual;
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto [out, r] = layers_[i](h, residual, batch, cs, cache.key(int64_t(i)),
                               cache.value(int64_t(i)));
    h = std::move(out);
    residual = std::move(r);
  }
  if (batch.logit_rows.defined()) {  // the norm is row by row: only the rows wanted
    h = h.index_select(0, batch.logit_rows);
    if (residual) residual = residual->index_select(0, batch.logit_rows);
  }
  return std::get<0>(norm_->forward_then({lm_head_}, h, residual));
}

int64_t LlamaForCausalLMImpl::weight_bytes_per_token() const {
  int64_t n = lm_head_->weight_bytes() + config_.hidden_size * 4;
  for (const LlamaDecoderLayer& l : layers_) n += l->weight_bytes();
  return n;
}

}  // namespace retorch::llama
