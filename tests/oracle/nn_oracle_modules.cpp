// nn_oracle's module factory: torch.nn constructor keywords (JSON) to C++ Options, and how each
// module's forward takes its named inputs and returns its outputs.
#include "nn_oracle.h"

namespace retorch::oracle {

namespace {

namespace rnn_utils = nn::utils::rnn;

template <typename T>
T get(const Json& o, const char* key, T fallback) {
  return o.contains(key) && !o[key].is_null() ? o[key].get<T>() : fallback;
}

template <size_t D>
nn::ExpandingArray<D> arr(const Json& j) {
  if (j.is_array()) return nn::ExpandingArray<D>(j.get<std::vector<int64_t>>());
  return nn::ExpandingArray<D>(j.get<int64_t>());
}

std::string reduction(const Json& o) {
  return get<std::string>(o, "reduction", "mean");
}

/// A module whose forward is the virtual single-tensor one.
template <typename H>
Runner single(H holder) {
  std::shared_ptr<nn::Module> m = holder.ptr();
  return {m, [m](const Inputs& in) { return std::vector<Tensor>{m->forward(in.at("input"))}; }};
}

/// A module called as forward(in[names[0]], in[names[1]], ...).
template <typename H, typename... Names>
Runner call(H holder, Names... names) {
  auto impl = holder.ptr();
  return {impl, [impl, names...](const Inputs& in) {
            return std::vector<Tensor>{impl->forward(in.at(names)...)};
          }};
}

template <size_t D>
nn::ConvOptions<D> conv_options(const Json& o) {
  nn::ConvOptions<D> c(o.at("in_channels").get<int64_t>(), o.at("out_channels").get<int64_t>(),
                       arr<D>(o.at("kernel_size")));
  if (o.contains("stride")) c.stride(arr<D>(o["stride"]));
  if (o.contains("dilation")) c.dilation(arr<D>(o["dilation"]));
  if (o.contains("output_padding")) c.output_padding(arr<D>(o["output_padding"]));
  if (o.contains("padding")) {
    if (o["padding"].is_string())
      c.padding(o["padding"].get<std::string>());
    else
      c.padding(arr<D>(o["padding"]));
  }
  c.groups(get<int64_t>(o, "groups", 1)).bias(get<bool>(o, "bias", true));
  c.padding_mode(get<std::string>(o, "padding_mode", "zeros"));
  return c;
}

/// RNN/GRU (hidden = {"h0"}) or LSTM (hidden = {"h0", "c0"}); "lengths" makes a packed call.
/// Outputs: [output, h_n(, c_n)] or [packed data, padded output, h_n(, c_n)].
template <typename H>
Runner recurrent(H holder, bool lstm, bool batch_first, bool enforce_sorted) {
  auto impl = holder.ptr();
  return {impl, [=](const Inputs& in) {
            std::vector<Tensor> out;
            Tensor h0 = in.get("h0"), c0 = in.get("c0");
            auto hidden = [&](auto&& hx) {
              if constexpr (std::is_same_v<std::decay_t<decltype(hx)>, Tensor>) {
                out.push_back(hx);
              } else {
                out.push_back(std::get<0>(hx));
                out.push_back(std::get<1>(hx));
              }
            };
            auto hx_arg = [&] {
              if constexpr (std::is_same_v<H, nn::LSTM>) {
                return h0.defined() ? std::optional<nn::LSTMImpl::State>({h0, c0}) : std::nullopt;
              } else {
                return h0;
              }
            };
            if (in.has("lengths")) {
              auto packed = rnn_utils::pack_padded_sequence(in.at("input"), in.at("lengths"),
                                                            batch_first, enforce_sorted);
              auto [y, hx] = impl->forward(packed, hx_arg());
              out.push_back(y.data());
              out.push_back(std::get<0>(rnn_utils::pad_packed_sequence(y, batch_first)));
              hidden(hx);
            } else {
              auto [y, hx] = impl->forward(in.at("input"), hx_arg());
              out.push_back(y);
              hidden(hx);
            }
            return out;
          }};
}

nn::TransformerEncoderLayerOptions layer_options(const Json& o) {
  return nn::TransformerEncoderLayerOptions(o.at("d_model").get<int64_t>(),
                                            o.at("nhead").get<int64_t>())
      .dim_feedforward(get<int64_t>(o, "dim_feedforward", 2048))
      .dropout(get<double>(o, "dropout", 0.1))
      .activation(get<std::string>(o, "activation", "relu"))
      .layer_norm_eps(get<double>(o, "layer_norm_eps", 1e-5))
      .batch_first(get<bool>(o, "batch_first", false))
      .norm_first(get<bool>(o, "norm_first", false));
}

Runner activation(const std::string& name, const Json& o) {
#define SIMPLE(N) \
  if (name == #N) return single(nn::N());
  SIMPLE(ReLU)
  SIMPLE(ReLU6) SIMPLE(SELU) SIMPLE(SiLU) SIMPLE(Mish) SIMPLE(Sigmoid) SIMPLE(Tanh) SIMPLE(Softsign)
      SIMPLE(Hardswish) SIMPLE(Hardsigmoid) SIMPLE(LogSigmoid) SIMPLE(Tanhshrink) SIMPLE(Softmax2d)
          SIMPLE(Identity)
#undef SIMPLE
              if (name == "LeakyReLU") return single(nn::LeakyReLU(
                  nn::LeakyReLUOptions().negative_slope(get(o, "negative_slope", 0.01))));
  if (name == "ELU") return single(nn::ELU(nn::ELUOptions().alpha(get(o, "alpha", 1.0))));
  if (name == "CELU") return single(nn::CELU(nn::CELUOptions().alpha(get(o, "alpha", 1.0))));
  if (name == "GELU")
    return single(
        nn::GELU(nn::GELUOptions().approximate(get<std::string>(o, "approximate", "none"))));
  if (name == "Softplus")
    return single(nn::Softplus(
        nn::SoftplusOptions().beta(get(o, "beta", 1.0)).threshold(get(o, "threshold", 20.0))));
  if (name == "Hardtanh")
    return single(nn::Hardtanh(
        nn::HardtanhOptions().min_val(get(o, "min_val", -1.0)).max_val(get(o, "max_val", 1.0))));
  if (name == "Softshrink")
    return single(nn::Softshrink(nn::SoftshrinkOptions().lambda(get(o, "lambd", 0.5))));
  if (name == "Hardshrink")
    return single(nn::Hardshrink(nn::HardshrinkOptions().lambda(get(o, "lambd", 0.5))));
  if (name == "RReLU")
    return single(nn::RReLU(
        nn::RReLUOptions().lower(get(o, "lower", 1.0 / 8)).upper(get(o, "upper", 1.0 / 3))));
  if (name == "GLU") return single(nn::GLU(nn::GLUOptions().dim(get<int64_t>(o, "dim", -1))));
  if (name == "Softmax") return single(nn::Softmax(o.at("dim").get<int64_t>()));
  if (name == "LogSoftmax") return single(nn::LogSoftmax(o.at("dim").get<int64_t>()));
  if (name == "Softmin") return single(nn::Softmin(o.at("dim").get<int64_t>()));
  if (name == "Threshold")
    return single(nn::Threshold(o.at("threshold").get<double>(), o.at("value").get<double>()));
  if (name == "PReLU")
    return single(nn::PReLU(nn::PReLUOptions()
                                .num_parameters(get<int64_t>(o, "num_parameters", 1))
                                .init(get(o, "init", 0.25))));
  return {};
}

Runner loss(const std::string& name, const Json& o, const Inputs& t) {
  const std::string r = reduction(o);
  if (name == "L1Loss")
    return call(nn::L1Loss(nn::L1LossOptions().reduction(r)), "input", "target");
  if (name == "MSELoss")
    return call(nn::MSELoss(nn::MSELossOptions().reduction(r)), "input", "target");
  if (name == "SmoothL1Loss")
    return call(nn::SmoothL1Loss(nn::SmoothL1LossOptions().reduction(r).beta(get(o, "beta", 1.0))),
                "input", "target");
  if (name == "HuberLoss")
    return call(nn::HuberLoss(nn::HuberLossOptions().reduction(r).delta(get(o, "delta", 1.0))),
                "input", "target");
  if (name == "NLLLoss")
    return call(nn::NLLLoss(nn::NLLLossOptions()
                                .reduction(r)
                                .weight(t.get("weight"))
                                .ignore_index(get<int64_t>(o, "ignore_index", -100))),
                "input", "target");
  if (name == "CrossEntropyLoss")
    return call(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions()
                                         .reduction(r)
                                         .weight(t.get("weight"))
                                         .ignore_index(get<int64_t>(o, "ignore_index", -100))
                                         .label_smoothing(get(o, "label_smoothing", 0.0))),
                "input", "target");
  if (name == "BCELoss")
    return call(nn::BCELoss(nn::BCELossOptions().reduction(r).weight(t.get("weight"))), "input",
                "target");
  if (name == "BCEWithLogitsLoss")
    return call(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions()
                                          .reduction(r)
                                          .weight(t.get("weight"))
                                          .pos_weight(t.get("pos_weight"))),
                "input", "target");
  if (name == "KLDivLoss")
    return call(
        nn::KLDivLoss(nn::KLDivLossOptions().reduction(r).log_target(get(o, "log_target", false))),
        "input", "target");
  if (name == "PoissonNLLLoss")
    return call(nn::PoissonNLLLoss(nn::PoissonNLLLossOptions()
                                       .reduction(r)
                                       .log_input(get(o, "log_input", true))
                                       .full(get(o, "full", false))
                                       .eps(get(o, "eps", 1e-8))),
                "input", "target");
  if (name == "SoftMarginLoss")
    return call(nn::SoftMarginLoss(nn::SoftMarginLossOptions().reduction(r)), "input", "target");
  if (name == "MultiMarginLoss")
    return call(nn::MultiMarginLoss(nn::MultiMarginLossOptions()
                                        .reduction(r)
                                        .p(get<int64_t>(o, "p", 1))
                                        .margin(get(o, "margin", 1.0))
                                        .weight(t.get("weight"))),
                "input", "target");
  if (name == "HingeEmbeddingLoss")
    return call(nn::HingeEmbeddingLoss(
                    nn::HingeEmbeddingLossOptions().reduction(r).margin(get(o, "margin", 1.0))),
                "input", "target");
  if (name == "MarginRankingLoss")
    return call(nn::MarginRankingLoss(
                    nn::MarginRankingLossOptions().reduction(r).margin(get(o, "margin", 0.0))),
                "input1", "input2", "target");
  if (name == "CosineEmbeddingLoss")
    return call(nn::CosineEmbeddingLoss(
                    nn::CosineEmbeddingLossOptions().reduction(r).margin(get(o, "margin", 0.0))),
                "input1", "input2", "target");
  if (name == "TripletMarginLoss")
    return call(nn::TripletMarginLoss(nn::TripletMarginLossOptions()
                                          .reduction(r)
                                          .margin(get(o, "margin", 1.0))
                                          .p(get(o, "p", 2.0))
                                          .eps(get(o, "eps", 1e-6))
                                          .swap(get(o, "swap", false))),
                "anchor", "positive", "negative");
  if (name == "CTCLoss")
    return call(nn::CTCLoss(nn::CTCLossOptions()
                                .reduction(r)
                                .blank(get<int64_t>(o, "blank", 0))
                                .zero_infinity(get(o, "zero_infinity", false))),
                "log_probs", "targets", "input_lengths", "target_lengths");
  return {};
}

Runner layer(const std::string& name, const Json& o) {
  if (name == "Linear")
    return single(nn::Linear(
        nn::LinearOptions(o.at("in_features"), o.at("out_features")).bias(get(o, "bias", true))));
  if (name == "Bilinear")
    return call(nn::Bilinear(nn::BilinearOptions(o.at("in1_features"), o.at("in2_features"),
                                                 o.at("out_features"))
                                 .bias(get(o, "bias", true))),
                "input1", "input2");
  if (name == "Conv1d") return single(nn::Conv1d(conv_options<1>(o)));
  if (name == "Conv2d") return single(nn::Conv2d(conv_options<2>(o)));
  if (name == "ConvTranspose1d") return single(nn::ConvTranspose1d(conv_options<1>(o)));
  if (name == "ConvTranspose2d") return single(nn::ConvTranspose2d(conv_options<2>(o)));
  if (name == "MaxPool2d") {
    nn::MaxPool2dOptions p(arr<2>(o.at("kernel_size")));
    if (o.contains("stride") && !o["stride"].is_null()) p.stride(arr<2>(o["stride"]));
    p.padding(arr<2>(o.value("padding", Json(0)))).dilation(arr<2>(o.value("dilation", Json(1))));
    return single(nn::MaxPool2d(p.ceil_mode(get(o, "ceil_mode", false))));
  }
  if (name == "AvgPool2d") {
    nn::AvgPool2dOptions p(arr<2>(o.at("kernel_size")));
    if (o.contains("stride") && !o["stride"].is_null()) p.stride(arr<2>(o["stride"]));
    p.padding(arr<2>(o.value("padding", Json(0)))).ceil_mode(get(o, "ceil_mode", false));
    p.count_include_pad(get(o, "count_include_pad", true));
    if (o.contains("divisor_override") && !o["divisor_override"].is_null())
      p.divisor_override(o["divisor_override"].get<int64_t>());
    return single(nn::AvgPool2d(p));
  }
  if (name == "AdaptiveAvgPool2d")
    return single(nn::AdaptiveAvgPool2d(arr<2>(o.at("output_size"))));
  if (name == "AdaptiveMaxPool2d")
    return single(nn::AdaptiveMaxPool2d(arr<2>(o.at("output_size"))));
  if (name == "BatchNorm1d" || name == "BatchNorm2d") {
    nn::BatchNormOptions b(o.at("num_features").get<int64_t>());
    b.eps(get(o, "eps", 1e-5)).affine(get(o, "affine", true));
    b.track_running_stats(get(o, "track_running_stats", true));
    b.momentum(o.contains("momentum") && o["momentum"].is_null()
                   ? std::nullopt
                   : std::optional<double>(get(o, "momentum", 0.1)));
    if (name == "BatchNorm1d") return single(nn::BatchNorm1d(b));
    return single(nn::BatchNorm2d(b));
  }
  if (name == "LayerNorm") {
    const Json& s = o.at("normalized_shape");
    std::vector<int64_t> shape =
        s.is_array() ? s.get<std::vector<int64_t>>() : std::vector<int64_t>{s.get<int64_t>()};
    return single(nn::LayerNorm(nn::LayerNormOptions(shape)
                                    .eps(get(o, "eps", 1e-5))
                                    .elementwise_affine(get(o, "elementwise_affine", true))));
  }
  if (name == "GroupNorm")
    return single(nn::GroupNorm(nn::GroupNormOptions(o.at("num_groups"), o.at("num_channels"))
                                    .eps(get(o, "eps", 1e-5))
                                    .affine(get(o, "affine", true))));
  if (name == "Embedding") {
    nn::EmbeddingOptions e(o.at("num_embeddings"), o.at("embedding_dim"));
    if (o.contains("padding_idx") && !o["padding_idx"].is_null())
      e.padding_idx(o["padding_idx"].get<int64_t>());
    return single(nn::Embedding(e));
  }
  if (name == "EmbeddingBag") {
    nn::EmbeddingBagOptions e(o.at("num_embeddings"), o.at("embedding_dim"));
    e.mode(get<std::string>(o, "mode", "mean"))
        .include_last_offset(get(o, "include_last_offset", false));
    if (o.contains("padding_idx") && !o["padding_idx"].is_null())
      e.padding_idx(o["padding_idx"].get<int64_t>());
    nn::EmbeddingBag bag(e);
    auto impl = bag.ptr();
    return {impl, [impl](const Inputs& in) {
              return std::vector<Tensor>{
                  impl->forward(in.at("input"), in.get("offsets"), in.get("per_sample_weights"))};
            }};
  }
  return {};
}

Runner sequence_model(const std::string& name, const Json& o) {
  const bool batch_first = get(o, "batch_first", false);
  const bool sorted = get(o, "enforce_sorted", false);  // an oracle-only key for packed calls
  auto common = [&](auto opts) {
    return opts.num_layers(get<int64_t>(o, "num_layers", 1))
        .bias(get(o, "bias", true))
        .batch_first(batch_first)
        .dropout(get(o, "dropout", 0.0))
        .bidirectional(get(o, "bidirectional", false));
  };
  const int64_t in = o.value("input_size", 0), hidden = o.value("hidden_size", 0);
  if (name == "RNN") {
    auto opts = common(nn::RNNOptions(in, hidden));
    opts.nonlinearity(get<std::string>(o, "nonlinearity", "tanh"));
    return recurrent(nn::RNN(opts), false, batch_first, sorted);
  }
  if (name == "LSTM") {
    auto opts = common(nn::LSTMOptions(in, hidden));
    opts.proj_size(get<int64_t>(o, "proj_size", 0));
    return recurrent(nn::LSTM(opts), true, batch_first, sorted);
  }
  if (name == "GRU")
    return recurrent(nn::GRU(common(nn::GRUOptions(in, hidden))), false, batch_first, sorted);
  if (name == "MultiheadAttention") {
    nn::MultiheadAttentionOptions m(o.at("embed_dim"), o.at("num_heads"));
    m.dropout(get(o, "dropout", 0.0)).bias(get(o, "bias", true)).batch_first(batch_first);
    m.add_bias_kv(get(o, "add_bias_kv", false)).add_zero_attn(get(o, "add_zero_attn", false));
    if (o.contains("kdim") && !o["kdim"].is_null()) m.kdim(o["kdim"].get<int64_t>());
    if (o.contains("vdim") && !o["vdim"].is_null()) m.vdim(o["vdim"].get<int64_t>());
    const bool need_weights = get(o, "need_weights", true);  // forward keywords ride along
    const bool average = get(o, "average_attn_weights", true);
    auto impl = nn::MultiheadAttention(m).ptr();
    return {impl, [=](const Inputs& x) {
              // Self-attention passes only "query", so one tensor collects all three grads.
              const Tensor& q = x.at("query");
              auto [y, w] = impl->forward(
                  q, x.has("key") ? x.at("key") : q, x.has("value") ? x.at("value") : q,
                  x.get("key_padding_mask"), need_weights, x.get("attn_mask"), average);
              return std::vector<Tensor>{y, w};
            }};
  }
  if (name == "TransformerEncoderLayer") {
    auto impl = nn::TransformerEncoderLayer(layer_options(o)).ptr();
    return {impl, [impl](const Inputs& x) {
              return std::vector<Tensor>{
                  impl->forward(x.at("src"), x.get("src_mask"), x.get("src_key_padding_mask"))};
            }};
  }
  if (name == "TransformerDecoderLayer") {
    auto impl = nn::TransformerDecoderLayer(layer_options(o)).ptr();
    return {impl, [impl](const Inputs& x) {
              return std::vector<Tensor>{impl->forward(
                  x.at("tgt"), x.at("memory"), x.get("tgt_mask"), x.get("memory_mask"),
                  x.get("tgt_key_padding_mask"), x.get("memory_key_padding_mask"))};
            }};
  }
  if (name == "TransformerEncoder") {
    const int64_t d_model = o.at("d_model");
    nn::TransformerEncoderOptions e(layer_options(o), o.at("num_layers").get<int64_t>());
    if (get(o, "norm", false)) e.norm(nn::LayerNorm(nn::LayerNormOptions({d_model})));
    auto impl = nn::TransformerEncoder(e).ptr();
    return {impl, [impl](const Inputs& x) {
              return std::vector<Tensor>{
                  impl->forward(x.at("src"), x.get("mask"), x.get("src_key_padding_mask"))};
            }};
  }
  if (name == "Transformer") {
    nn::TransformerOptions t(o.at("d_model"), o.at("nhead"), o.at("num_encoder_layers"),
                             o.at("num_decoder_layers"));
    t.dim_feedforward(get<int64_t>(o, "dim_feedforward", 2048)).dropout(get(o, "dropout", 0.1));
    t.activation(get<std::string>(o, "activation", "relu")).batch_first(batch_first);
    t.layer_norm_eps(get(o, "layer_norm_eps", 1e-5)).norm_first(get(o, "norm_first", false));
    auto impl = nn::Transformer(t).ptr();
    return {impl, [impl](const Inputs& x) {
              return std::vector<Tensor>{
                  impl->forward(x.at("src"), x.at("tgt"), x.get("src_mask"), x.get("tgt_mask"),
                                x.get("memory_mask"), x.get("src_key_padding_mask"),
                                x.get("tgt_key_padding_mask"), x.get("memory_key_padding_mask"))};
            }};
  }
  return {};
}

}  // namespace

Runner make_runner(const Json& spec, const Inputs& options) {
  const std::string name = spec.at("module");
  const Json o = spec.value("options", Json::object());
  for (Runner r :
       {activation(name, o), loss(name, o, options), layer(name, o), sequence_model(name, o)})
    if (r.module) return r;
  RT_CHECK(false, "nn_oracle: unknown module '", name, "'");
}

}  // namespace retorch::oracle
