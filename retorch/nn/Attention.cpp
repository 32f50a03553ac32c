// MultiheadAttention: parameters, torch's initialization, and forward over the
// multi_head_attention_forward composite (sequence-first inside, batch_first outside).
#include "retorch/nn/Attention.h"

#include "retorch/generated/Functions.h"
#include "retorch/nn/Init.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn {

namespace {

std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_)
    : Module("retorch::nn::MultiheadAttention"), options(options_) {
  const int64_t E = options.embed_dim(), H = options.num_heads();
  RT_CHECK(E > 0 && H > 0, "MultiheadAttention: embed_dim and num_heads must be positive, got ", E,
           " and ", H);
  RT_CHECK(E % H == 0,
           "MultiheadAttention: embed_dim must be divisible by num_heads, got "
           "embed_dim=",
           E, " and num_heads=", H);
  RT_CHECK(options.kdim() > 0 && options.vdim() > 0,
           "MultiheadAttention: kdim and vdim must be positive, got ", options.kdim(), " and ",
           options.vdim());
  head_dim = E / H;
  if (qkv_same_embed_dim()) {
    in_proj_weight = register_parameter("in_proj_weight", retorch::empty({3 * E, E}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", retorch::empty({E, E}));
    k_proj_weight = register_parameter("k_proj_weight", retorch::empty({E, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", retorch::empty({E, options.vdim()}));
  }
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", retorch::empty({3 * E}));
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", retorch::empty({1, 1, E}));
    bias_v = register_parameter("bias_v", retorch::empty({1, 1, E}));
  }
  out_proj = register_module("out_proj", Linear(LinearOptions(E, E).bias(options.bias())));
  reset_parameters();
}

bool MultiheadAttentionImpl::qkv_same_embed_dim() const {
  return options.kdim() == options.embed_dim() && options.vdim() == options.embed_dim();
}

void MultiheadAttentionImpl::reset_parameters() {
  if (in_proj_weight.defined()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask,
    bool need_weights, const Tensor& attn_mask, bool average_attn_weights) {
  const int64_t E = options.embed_dim();
  RT_CHECK(query.dim() == 2 || query.dim() == 3,
           "MultiheadAttention: query should be unbatched 2-D or batched 3-D, got size ",
           query.sizes());
  RT_CHECK(query.size(-1) == E, "MultiheadAttention: expected query of embedding size ", E,
           ", got size ", query.sizes());
  RT_CHECK(key.dim() == query.dim() && value.dim() == query.dim(),
           "MultiheadAttention: query, key and value must have the same number of dims, got ",
           query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  RT_CHECK(key.size(-1) == options.kdim() && value.size(-1) == options.vdim(),
           "MultiheadAttention: expected key and value of sizes (..., ", options.kdim(),
           ") and (..., ", options.vdim(), "), got ", key.sizes(), " and ", value.sizes());
  const bool batched = query.dim() == 3;
  Tensor q = query, k = key, v = value;
  if (batched && options.batch_first()) {
    q = q.transpose(0, 1);
    k = k.transpose(0, 1);
    v = v.transpose(0, 1);
  }
  const bool separate = !qkv_same_embed_dim();
  auto [out, weights] = multi_head_attention_forward(
      q, k, v, E, options.num_heads(), opt(in_proj_weight), opt(in_proj_bias), opt(bias_k),
      opt(bias_v), options.add_zero_attn(), options.dropout(), out_proj->weight,
      opt(out_proj->bias), is_training(), opt(key_padding_mask), need_weights, opt(attn_mask),
      separate, opt(q_proj_weight), opt(k_proj_weight), opt(v_proj_weight), std::nullopt,
      std::nullopt, average_attn_weights);
  if (batched && options.batch_first()) out = out.transpose(0, 1);
  return {out, need_weights ? weights : Tensor()};
}

}  // namespace retorch::nn
