// Embedding modules: initialization, padding row, max_norm renormalization, bag reductions.
#include "retorch/nn/Embedding.h"

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/nn/Init.h"

namespace retorch::nn {

namespace {

// padding_idx in [-num, num) as torch normalizes it; -1 means none for the op.
int64_t normalized_padding(const std::optional<int64_t>& idx, int64_t num, const char* name) {
  if (!idx) return -1;
  RT_CHECK(*idx < num && *idx >= -num, name, ": padding_idx must be within num_embeddings (",
           num, "), got ", *idx);
  return *idx < 0 ? *idx + num : *idx;
}

}  // namespace

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_)
    : Module("retorch::nn::Embedding"), options(options_) {
  normalized_padding(options.padding_idx(), options.num_embeddings(), "Embedding");
  weight = register_parameter("weight", retorch::empty({options.num_embeddings(), options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  int64_t p = normalized_padding(options.padding_idx(), options.num_embeddings(), "Embedding");
  if (p >= 0) {
    NoGradGuard no_grad;
    weight.select(0, p).fill_(0.0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  if (options.max_norm()) {
    NoGradGuard no_grad;
    embedding_renorm_(weight, indices, *options.max_norm(), options.norm_type());
  }
  return embedding(weight, indices,
                   normalized_padding(options.padding_idx(), options.num_embeddings(), "Embedding"),
                   options.scale_grad_by_freq(), options.sparse());
}

void EmbeddingImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::Embedding(num_embeddings=" << options.num_embeddings()
     << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) os << ", padding_idx=" << *options.padding_idx();
  if (options.max_norm()) os << ", max_norm=" << *options.max_norm();
  os << ")";
}

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options_)
    : Module("retorch::nn::EmbeddingBag"), options(options_) {
  const std::string& m = options.mode();
  RT_CHECK(m == "sum" || m == "mean" || m == "max", "EmbeddingBag: mode has to be one of sum, "
           "mean or max, got '", m, "'");
  weight = register_parameter("weight", retorch::empty({options.num_embeddings(), options.embedding_dim()}));
  init::normal_(weight);
  int64_t p = normalized_padding(options.padding_idx(), options.num_embeddings(), "EmbeddingBag");
  if (p >= 0) {
    NoGradGuard no_grad;
    weight.select(0, p).fill_(0.0);
  }
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets,
                                 const Tensor& per_sample_weights) {
  Tensor idx = input, off = offsets;
  if (input.dim() == 2) {
    RT_CHECK(!offsets.defined(), "EmbeddingBag: if input is 2D, then offsets has to be None, as "
             "input is treated is a mini-batch of fixed length sequences");
    off = arange(0, input.numel(), input.size(1), TensorOptions(kLong));
    idx = input.reshape({-1});
  } else {
    RT_CHECK(input.dim() == 1 && offsets.defined() && offsets.dim() == 1,
             "EmbeddingBag: input has to be 1D or 2D Tensor, with 1D offsets for a 1D input; got "
             "input of size ", input.sizes());
  }
  if (options.max_norm()) {
    NoGradGuard no_grad;
    embedding_renorm_(weight, idx, *options.max_norm(), options.norm_type());
  }
  const int64_t mode = options.mode() == "sum" ? 0 : options.mode() == "mean" ? 1 : 2;
  std::optional<Tensor> psw;
  if (per_sample_weights.defined()) psw = per_sample_weights.reshape({-1});
  int64_t pad = normalized_padding(options.padding_idx(), options.num_embeddings(), "EmbeddingBag");
  return std::get<0>(embedding_bag(weight, idx, off, options.scale_grad_by_freq(), mode, false, psw,
                                   options.include_last_offset(),
                                   pad >= 0 ? std::optional<int64_t>(pad) : std::nullopt));
}

void EmbeddingBagImpl::pretty_print(std::ostream& os) const {
  os << "retorch::nn::EmbeddingBag(num_embeddings=" << options.num_embeddings()
     << ", embedding_dim=" << options.embedding_dim() << ", mode=" << options.mode() << ")";
}

}  // namespace retorch::nn
