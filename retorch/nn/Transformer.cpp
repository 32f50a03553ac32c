// Transformer modules: layer construction in torch's submodule order, post-/pre-norm forwards,
// stacks of copied layers, and the full encoder-decoder model.
#include "retorch/nn/Transformer.h"

#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/nn/Init.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn {

namespace {

void check_layer_options(const TransformerEncoderLayerOptions& o, const char* who) {
  RT_CHECK(o.activation() == "relu" || o.activation() == "gelu", who,
           ": activation should be relu/gelu, not ", o.activation());
  RT_CHECK(o.d_model() > 0 && o.dim_feedforward() > 0, who,
           ": d_model and dim_feedforward must be positive, got ", o.d_model(), " and ",
           o.dim_feedforward());
}

Tensor activate(const std::string& activation, const Tensor& x) {
  return activation == "relu" ? x.relu() : gelu(x);
}

MultiheadAttention make_attention(const TransformerEncoderLayerOptions& o) {
  return MultiheadAttention(MultiheadAttentionOptions(o.d_model(), o.nhead())
                                .dropout(o.dropout())
                                .batch_first(o.batch_first()));
}

LayerNorm make_norm(const TransformerEncoderLayerOptions& o) {
  return LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()));
}

}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(
    const TransformerEncoderLayerOptions& options_)
    : Module("retorch::nn::TransformerEncoderLayer"), options(options_) {
  check_layer_options(options, "TransformerEncoderLayer");
  self_attn = register_module("self_attn", make_attention(options));
  linear1 = register_module("linear1", Linear(options.d_model(), options.dim_feedforward()));
  dropout = register_module("dropout", Dropout(options.dropout()));
  linear2 = register_module("linear2", Linear(options.dim_feedforward(), options.d_model()));
  norm1 = register_module("norm1", make_norm(options));
  norm2 = register_module("norm2", make_norm(options));
  dropout1 = register_module("dropout1", Dropout(options.dropout()));
  dropout2 = register_module("dropout2", Dropout(options.dropout()));
}

Tensor TransformerEncoderLayerImpl::sa_block(const Tensor& x, const Tensor& mask,
                                             const Tensor& key_padding_mask) {
  Tensor out = std::get<0>(self_attn(x, x, x, key_padding_mask, false, mask));
  return dropout1(out);
}

Tensor TransformerEncoderLayerImpl::ff_block(const Tensor& x) {
  return dropout2(linear2(dropout(activate(options.activation(), linear1(x)))));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask) {
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa_block(norm1(x), src_mask, src_key_padding_mask);
    x = x + ff_block(norm2(x));
  } else {
    x = norm1(x + sa_block(x, src_mask, src_key_padding_mask));
    x = norm2(x + ff_block(x));
  }
  return x;
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(
    const TransformerDecoderLayerOptions& options_)
    : Module("retorch::nn::TransformerDecoderLayer"), options(options_) {
  check_layer_options(options, "TransformerDecoderLayer");
  self_attn = register_module("self_attn", make_attention(options));
  multihead_attn = register_module("multihead_attn", make_attention(options));
  linear1 = register_module("linear1", Linear(options.d_model(), options.dim_feedforward()));
  dropout = register_module("dropout", Dropout(options.dropout()));
  linear2 = register_module("linear2", Linear(options.dim_feedforward(), options.d_model()));
  norm1 = register_module("norm1", make_norm(options));
  norm2 = register_module("norm2", make_norm(options));
  norm3 = register_module("norm3", make_norm(options));
  dropout1 = register_module("dropout1", Dropout(options.dropout()));
  dropout2 = register_module("dropout2", Dropout(options.dropout()));
  dropout3 = register_module("dropout3", Dropout(options.dropout()));
}

Tensor TransformerDecoderLayerImpl::ff_block(const Tensor& x) {
  return dropout3(linear2(dropout(activate(options.activation(), linear1(x)))));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory,
                                            const Tensor& tgt_mask, const Tensor& memory_mask,
                                            const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask) {
  auto sa = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, tgt_key_padding_mask, false, tgt_mask)));
  };
  auto mha = [&](const Tensor& x) {
    return dropout2(std::get<0>(
        multihead_attn(x, memory, memory, memory_key_padding_mask, false, memory_mask)));
  };
  Tensor x = tgt;
  if (options.norm_first()) {
    x = x + sa(norm1(x));
    x = x + mha(norm2(x));
    x = x + ff_block(norm3(x));
  } else {
    x = norm1(x + sa(x));
    x = norm2(x + mha(x));
    x = norm3(x + ff_block(x));
  }
  return x;
}

// Note [Cloned layers]
// torch builds a stack by deep-copying one layer, so every layer starts with the same weights;
// here each copy is built from the prototype's options and then given its state.
TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderOptions& options_)
    : Module("retorch::nn::TransformerEncoder"), options(options_) {
  const auto& proto = options.encoder_layer();
  RT_CHECK(!proto.is_empty(), "TransformerEncoder: encoder_layer is empty");
  RT_CHECK(options.num_layers() > 0, "TransformerEncoder: num_layers must be positive, got ",
           options.num_layers());
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) {
    TransformerEncoderLayer layer(proto->options);
    layer->load_state_dict(proto->state_dict());
    layers->push_back(layer);
  }
  if (!options.norm().is_empty()) norm = register_module("norm", options.norm());
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask,
                                       const Tensor& src_key_padding_mask) {
  Tensor x = src;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->ptr<TransformerEncoderLayerImpl>(i)->forward(x, mask, src_key_padding_mask);
  return norm.is_empty() ? x : norm(x);
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderOptions& options_)
    : Module("retorch::nn::TransformerDecoder"), options(options_) {
  const auto& proto = options.decoder_layer();
  RT_CHECK(!proto.is_empty(), "TransformerDecoder: decoder_layer is empty");
  RT_CHECK(options.num_layers() > 0, "TransformerDecoder: num_layers must be positive, got ",
           options.num_layers());
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) {
    TransformerDecoderLayer layer(proto->options);
    layer->load_state_dict(proto->state_dict());  // See Note [Cloned layers]
    layers->push_back(layer);
  }
  if (!options.norm().is_empty()) norm = register_module("norm", options.norm());
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory,
                                       const Tensor& tgt_mask, const Tensor& memory_mask,
                                       const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask) {
  Tensor x = tgt;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->ptr<TransformerDecoderLayerImpl>(i)->forward(
        x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
  return norm.is_empty() ? x : norm(x);
}

TransformerImpl::TransformerImpl(const TransformerOptions& options_)
    : Module("retorch::nn::Transformer"), options(options_) {
  auto layer = TransformerEncoderLayerOptions(options.d_model(), options.nhead())
                   .dim_feedforward(options.dim_feedforward())
                   .dropout(options.dropout())
                   .activation(options.activation())
                   .layer_norm_eps(options.layer_norm_eps())
                   .batch_first(options.batch_first())
                   .norm_first(options.norm_first());
  auto norm = [&] {
    return LayerNorm(LayerNormOptions({options.d_model()}).eps(options.layer_norm_eps()));
  };
  encoder = register_module(
      "encoder", TransformerEncoder(
                     TransformerEncoderOptions(layer, options.num_encoder_layers()).norm(norm())));
  decoder = register_module(
      "decoder", TransformerDecoder(
                     TransformerDecoderOptions(layer, options.num_decoder_layers()).norm(norm())));
  for (const Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask,
                                const Tensor& tgt_mask, const Tensor& memory_mask,
                                const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask,
                                const Tensor& memory_key_padding_mask) {
  const bool batched = src.dim() == 3;
  RT_CHECK(src.dim() == tgt.dim() && (batched || src.dim() == 2),
           "Transformer: src and tgt must both be 2-D (unbatched) or 3-D, got sizes ", src.sizes(),
           " and ", tgt.sizes());
  const int64_t bdim = options.batch_first() ? 0 : 1;
  RT_CHECK(!batched || src.size(bdim) == tgt.size(bdim),
           "Transformer: the batch number of src and tgt must be equal, got sizes ", src.sizes(),
           " and ", tgt.sizes());
  RT_CHECK(src.size(-1) == options.d_model() && tgt.size(-1) == options.d_model(),
           "Transformer: the feature number of src and tgt must be equal to d_model (",
           options.d_model(), "), got sizes ", src.sizes(), " and ", tgt.sizes());
  Tensor memory = encoder(src, src_mask, src_key_padding_mask);
  return decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz) {
  return triu(full({sz, sz}, -INFINITY, TensorOptions(kFloat)), 1);
}

}  // namespace retorch::nn
