// Transformer modules: encoder/decoder layers and stacks and the full Transformer, with
// torch.nn's submodule names so a torch state_dict maps onto them one to one.
#pragma once
#include <string>

#include "retorch/nn/Attention.h"
#include "retorch/nn/Container.h"
#include "retorch/nn/Dropout.h"
#include "retorch/nn/Linear.h"
#include "retorch/nn/Module.h"
#include "retorch/nn/Normalization.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead)
      : d_model_(d_model), nhead_(nhead) {}
  RETORCH_ARG(int64_t, d_model);
  RETORCH_ARG(int64_t, nhead);
  RETORCH_ARG(int64_t, dim_feedforward) = 2048;
  RETORCH_ARG(double, dropout) = 0.1;
  /// "relu" or "gelu".
  RETORCH_ARG(std::string, activation) = "relu";
  RETORCH_ARG(double, layer_norm_eps) = 1e-5;
  RETORCH_ARG(bool, batch_first) = false;
  /// Pre-norm (LayerNorm before attention and feed-forward) instead of post-norm.
  RETORCH_ARG(bool, norm_first) = false;
};
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

/// Self-attention then feed-forward, each with a residual connection and a LayerNorm.
class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  /// src (S, N, E) (or (N, S, E) when batch_first, or unbatched (S, E)).
  Tensor forward(const Tensor& src, const Tensor& src_mask,
                 const Tensor& src_key_padding_mask = {});
  Tensor forward(const Tensor& src) override { return forward(src, Tensor(), Tensor()); }

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  Tensor sa_block(const Tensor& x, const Tensor& mask, const Tensor& key_padding_mask);
  Tensor ff_block(const Tensor& x);
};
RETORCH_MODULE(TransformerEncoderLayer);

/// Self-attention, attention over the encoder's memory, then feed-forward.
class TransformerDecoderLayerImpl : public Module {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {});

  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};

 private:
  Tensor ff_block(const Tensor& x);
};
RETORCH_MODULE(TransformerDecoderLayer);

struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& layer, int64_t num_layers)
      : encoder_layer_(TransformerEncoderLayer(layer)), num_layers_(num_layers) {}
  /// The prototype layer; every layer starts as a copy of its parameters (like torch).
  RETORCH_ARG(TransformerEncoderLayer, encoder_layer);
  RETORCH_ARG(int64_t, num_layers);
  /// An optional final LayerNorm.
  RETORCH_ARG(LayerNorm, norm) = nullptr;
};

/// num_layers copies of an encoder layer, then the optional norm.
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(TransformerEncoderLayer layer, int64_t num_layers)
      : TransformerEncoderImpl(TransformerEncoderOptions(std::move(layer), num_layers)) {}
  explicit TransformerEncoderImpl(const TransformerEncoderOptions& options);
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {});
  Tensor forward(const Tensor& src) override { return forward(src, Tensor(), Tensor()); }

  TransformerEncoderOptions options;
  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};
};
RETORCH_MODULE(TransformerEncoder);

struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& layer, int64_t num_layers)
      : decoder_layer_(TransformerDecoderLayer(layer)), num_layers_(num_layers) {}
  RETORCH_ARG(TransformerDecoderLayer, decoder_layer);
  RETORCH_ARG(int64_t, num_layers);
  RETORCH_ARG(LayerNorm, norm) = nullptr;
};

/// num_layers copies of a decoder layer, then the optional norm.
class TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(TransformerDecoderLayer layer, int64_t num_layers)
      : TransformerDecoderImpl(TransformerDecoderOptions(std::move(layer), num_layers)) {}
  explicit TransformerDecoderImpl(const TransformerDecoderOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {});

  TransformerDecoderOptions options;
  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};
};
RETORCH_MODULE(TransformerDecoder);

struct TransformerOptions {
  TransformerOptions(int64_t d_model = 512, int64_t nhead = 8, int64_t num_encoder_layers = 6,
                     int64_t num_decoder_layers = 6)
      : d_model_(d_model),
        nhead_(nhead),
        num_encoder_layers_(num_encoder_layers),
        num_decoder_layers_(num_decoder_layers) {}
  RETORCH_ARG(int64_t, d_model);
  RETORCH_ARG(int64_t, nhead);
  RETORCH_ARG(int64_t, num_encoder_layers);
  RETORCH_ARG(int64_t, num_decoder_layers);
  RETORCH_ARG(int64_t, dim_feedforward) = 2048;
  RETORCH_ARG(double, dropout) = 0.1;
  RETORCH_ARG(std::string, activation) = "relu";
  RETORCH_ARG(double, layer_norm_eps) = 1e-5;
  RETORCH_ARG(bool, batch_first) = false;
  RETORCH_ARG(bool, norm_first) = false;
};

/// Encoder-decoder Transformer (each stack ends in a LayerNorm); weights xavier_uniform_.
class TransformerImpl : public Module {
 public:
  explicit TransformerImpl(const TransformerOptions& options = {});
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {},
                 const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& src_key_padding_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {});
  /// A (sz, sz) float mask: -inf above the diagonal, 0 elsewhere.
  static Tensor generate_square_subsequent_mask(int64_t sz);

  TransformerOptions options;
  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};
};
RETORCH_MODULE(Transformer);

}  // namespace retorch::nn
