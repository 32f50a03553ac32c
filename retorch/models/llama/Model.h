// The Llama model family (Llama 2/3, Qwen2, Mistral, SmolLM, TinyLlama) as retorch nn modules,
// running batches of tokens from many sequences against a paged KV cache.
#pragma once
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "retorch/models/llama/Config.h"
#include "retorch/models/llama/KvCache.h"
#include "retorch/nn/Module.h"

namespace retorch::llama {

/// One forward pass over the tokens of several sequences (see Note [Paged attention]).
struct ForwardBatch {
  Tensor tokens;        // [T] int64 token ids
  Tensor positions;     // [T] int64 position of each token in its sequence
  Tensor query_seq;     // [T] int64 row of block_tables each token belongs to
  Tensor block_tables;  // [S, max_blocks] int64
  Tensor slots;         // [T] int64 cache slot each token's key and value are written to
  Tensor logit_rows;    // [R] int64 rows of T whose logits are wanted; undefined: all rows
  int64_t max_position = -1;  // the largest position, when the caller knows it (-1: read it
                              // from positions, a device-to-host copy when they are on one)
};

/// y = x W^T + b where W is dense (any floating dtype) or GGUF block-quantized (uint8 rows and
/// a ggml type id); quantized weights stay quantized and run through quantized_linear.
class QLinearImpl : public nn::Module {
 public:
  QLinearImpl(Tensor weight, Tensor bias, int64_t qtype = -1, int64_t in_features = -1);
  Tensor forward(const Tensor& input) override;
  int64_t qtype() const { return qtype_; }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return weight_.size(0); }
  const Tensor& weight() const { return weight_; }
  /// The bias as an op's optional argument.
  std::optional<Tensor> bias() const {
    return bias_.defined() ? std::optional<Tensor>(bias_) : std::nullopt;
  }
  /// Bytes of the weight (and bias) a forward reads.
  int64_t weight_bytes() const;
  void pretty_print(std::ostream& os) const override;

 private:
  Tensor weight_;
  Tensor bias_;
  int64_t qtype_;
  int64_t in_features_;
};
RETORCH_MODULE(QLinear);

/// Token embeddings, dense or quantized (rows are gathered, then dequantized).
class QEmbeddingImpl : public nn::Module {
 public:
  QEmbeddingImpl(Tensor weight, int64_t qtype = -1, int64_t dim = -1);
  Tensor forward(const Tensor& ids) override;
  /// The table as a dense float32 matrix (for a tied output head over a quantized table).
  const Tensor& weight() const { return weight_; }
  int64_t qtype() const { return qtype_; }
  int64_t dim() const { return dim_; }

 private:
  Tensor weight_;
  int64_t qtype_;
  int64_t dim_;
};
RETORCH_MODULE(QEmbedding);

/// Projections whose outputs are used side by side: one fused weight (q|k|v, gate|up) or, when
/// the checkpoint stores the parts in different formats (GGUF Q4_K_M mixes Q4_K and Q6_K), the
/// parts, whose outputs are concatenated.
using QLinearParts = std::vector<QLinear>;

/// Grouped-query attention with rotary positions over the paged cache; q, k and v are one fused
/// projection (qkv_proj) unless the checkpoint's three differ in format (q_proj, k_proj, v_proj).
class LlamaRmsNormImpl;

class LlamaAttentionImpl : public nn::Module {
 public:
  LlamaAttentionImpl(const LlamaConfig& config, QLinearParts qkv, QLinear o_proj);
  Tensor forward(const Tensor& x, const ForwardBatch& batch, const Tensor& cos_sin,
                 const Tensor& key_cache, const Tensor& value_cache);
  /// (forward(norm(h + residual)), h + residual): the norm, the q/k/v projection, the rotations
  /// and the cache write one op where the projection is one quantized part (Note [Normed decode
  /// projections]).
  std::tuple<Tensor, Tensor> forward_normed(LlamaRmsNormImpl& norm, const Tensor& h,
                                            const std::optional<Tensor>& residual,
                                            const ForwardBatch& batch, const Tensor& cos_sin,
                                            const Tensor& key_cache, const Tensor& value_cache);

 private:
  // Attention of the rotated queries q [T, Hq, D] over the cache, then the output projection.
  Tensor attend(const Tensor& q, const ForwardBatch& batch, const Tensor& key_cache,
                const Tensor& value_cache);

  LlamaConfig config_;
  QLinearParts qkv_;
  QLinear o_proj_{nullptr};
};
RETORCH_MODULE(LlamaAttention);

/// SwiGLU: down(silu(gate(x)) * up(x)), gate and up fused into one projection (gate_up_proj)
/// unless they differ in format (gate_proj, up_proj).
class LlamaMlpImpl : public nn::Module {
 public:
  LlamaMlpImpl(QLinearParts gate_up, QLinear down_proj);
  Tensor forward(const Tensor& x) override;
  const QLinearParts& gate_up() const { return gate_up_; }
  /// down(act) for act = silu(gate(x)) * up(x) (the layer fuses gate/up into its norm).
  Tensor down(const Tensor& act) { return down_proj_(act); }

 private:
  QLinearParts gate_up_;
  QLinear down_proj_{nullptr};
};
RETORCH_MODULE(LlamaMlp);

/// RMSNorm with the residual add fused in: returns (norm(x + residual) * weight, x + residual).
class LlamaRmsNormImpl : public nn::Module {
 public:
  LlamaRmsNormImpl(Tensor weight, double eps);
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const std::optional<Tensor>& residual);
  /// (parts(norm(x + residual) * weight), then silu_and_mul of that if asked, x + residual): one
  /// rms_norm_linear when parts is one quantized (or 16-bit rows) projection.
  std::tuple<Tensor, Tensor> forward_then(const QLinearParts& parts, const Tensor& x,
                                          const std::optional<Tensor>& residual,
                                          bool silu_and_mul = false);
  const Tensor& weight() const { return weight_; }
  double eps() const { return eps_; }

 private:
  Tensor weight_;
  double eps_;
};
RETORCH_MODULE(LlamaRmsNorm);

/// The weights of one transformer block, as a loader gathers them.
struct LlamaLayer {
  LlamaAttention attn{nullptr};
  LlamaMlp mlp{nullptr};
  Tensor input_norm;
  Tensor post_attention_norm;
};

/// One transformer block: pre-norm attention and MLP, residual adds fused into the norms.
class LlamaDecoderLayerImpl : public nn::Module {
 public:
  LlamaDecoderLayerImpl(const LlamaConfig& config, LlamaLayer layer);
  /// (output, residual) for the next block's norm to add.
  std::tuple<Tensor, Tensor> forward(const Tensor& h, const std::optional<Tensor>& residual,
                                     const ForwardBatch& batch, const Tensor& cos_sin,
                                     const Tensor& key_cache, const Tensor& value_cache);
  /// Bytes of weights one token reads.
  int64_t weight_bytes() const;

 private:
  LlamaAttention self_attn_{nullptr};
  LlamaMlp mlp_{nullptr};
  LlamaRmsNorm input_layernorm_{nullptr};
  LlamaRmsNorm post_attention_layernorm_{nullptr};
};
RETORCH_MODULE(LlamaDecoderLayer);

/// The causal language model: embeddings, layers, final norm and the output head.
class LlamaForCausalLMImpl : public nn::Module {
 public:
  /// Takes ownership of weights already shaped for the fused projections (see load_llama).
  LlamaForCausalLMImpl(LlamaConfig config, QEmbedding embed, std::vector<LlamaLayer> layers,
                       Tensor norm, QLinear lm_head);
  /// Logits [R, vocab] (float32) for batch.logit_rows, writing every token's keys and values
  /// into `cache`.
  Tensor forward(const ForwardBatch& batch, KvCache& cache);
  const LlamaConfig& config() const { return config_; }
  /// Bytes of weights one decode step reads (every layer, the final norm and the head).
  int64_t weight_bytes_per_token() const;

 private:
  const Tensor& cos_sin(int64_t max_pos);

  LlamaConfig config_;
  QEmbedding embed_{nullptr};
  std::vector<LlamaDecoderLayer> layers_;
  LlamaRmsNorm norm_{nullptr};
  QLinear lm_head_{nullptr};
  Tensor cos_sin_;
};
RETORCH_MODULE(LlamaForCausalLM);

/// Options for loading a checkpoint.
struct LoadOptions {
  /// Dense weights are converted to this dtype (float32: exact HF parity; bfloat16 halves memory).
  ScalarType dtype = kFloat;
};

/// Loads a model from a HF directory (config.json + model.safetensors or a sharded
/// model.safetensors.index.json) or a .gguf file.
LlamaForCausalLM load_llama(const std::string& path, const LoadOptions& options = {});
/// Builds a model with random weights (for benchmarks): weights in `dtype`, or quantized to
/// `qtype` (ggml id, -1 for dense) except the norms.
LlamaForCausalLM random_llama(const LlamaConfig& config, ScalarType dtype = kFloat,
                              int64_t qtype = -1, uint64_t seed = 0);

}  // namespace retorch::llama
