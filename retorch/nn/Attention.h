// MultiheadAttention: torch.nn.MultiheadAttention's parameters, initialization and forward.
#pragma once
#include <optional>
#include <tuple>

#include "retorch/nn/Linear.h"
#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  RETORCH_ARG(int64_t, embed_dim);
  RETORCH_ARG(int64_t, num_heads);
  RETORCH_ARG(double, dropout) = 0.0;
  RETORCH_ARG(bool, bias) = true;
  /// Appends learned bias_k / bias_v rows to the keys and values.
  RETORCH_ARG(bool, add_bias_kv) = false;
  RETORCH_ARG(bool, add_zero_attn) = false;
  RETORCH_ARG(int64_t, kdim);
  RETORCH_ARG(int64_t, vdim);
  RETORCH_ARG(bool, batch_first) = false;
};

/// Attention over num_heads heads with packed (in_proj_weight) or separate q/k/v projections.
class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  /// xavier_uniform_ projections, zero biases, xavier_normal_ bias_k/bias_v (like torch).
  void reset_parameters();
  /// (attn_output, attn_weights); attn_weights is undefined when need_weights is false.
  /// key_padding_mask (B, S): true (or -inf) ignores a key; attn_mask (L, S) or (B*heads, L, S).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {},
                                     bool average_attn_weights = true);
  /// True when key and value have the embedding size (one packed in_proj_weight).
  bool qkv_same_embed_dim() const;

  MultiheadAttentionOptions options;
  int64_t head_dim;
  Tensor in_proj_weight, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight;
  Tensor bias_k, bias_v;
  Linear out_proj{nullptr};
};
RETORCH_MODULE(MultiheadAttention);

}  // namespace retorch::nn
