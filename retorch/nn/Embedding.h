// Embedding modules: Embedding (padding_idx, max_norm) and EmbeddingBag (sum/mean/max).
#pragma once
#include "retorch/nn/Module.h"
#include "retorch/nn/Options.h"

namespace retorch::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  RETORCH_ARG(int64_t, num_embeddings);
  RETORCH_ARG(int64_t, embedding_dim);
  RETORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  RETORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  RETORCH_ARG(double, norm_type) = 2.0;
  RETORCH_ARG(bool, scale_grad_by_freq) = false;
  RETORCH_ARG(bool, sparse) = false;
};

/// A lookup table of num_embeddings rows, initialized N(0, 1) with the padding row zero.
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num, int64_t dim) : EmbeddingImpl(EmbeddingOptions(num, dim)) {}
  EmbeddingImpl(const EmbeddingOptions& options);  // NOLINT
  void reset_parameters();
  Tensor forward(const Tensor& indices) override;
  void pretty_print(std::ostream& os) const override;
  EmbeddingOptions options;
  Tensor weight;
};
RETORCH_MODULE(Embedding);

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  RETORCH_ARG(int64_t, num_embeddings);
  RETORCH_ARG(int64_t, embedding_dim);
  RETORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  RETORCH_ARG(double, norm_type) = 2.0;
  RETORCH_ARG(bool, scale_grad_by_freq) = false;
  /// "sum", "mean" or "max".
  RETORCH_ARG(std::string, mode) = "mean";
  RETORCH_ARG(bool, include_last_offset) = false;
  RETORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

/// Sums, averages or maxes bags of embeddings given by offsets (or the rows of a 2-d input).
class EmbeddingBagImpl : public Module {
 public:
  EmbeddingBagImpl(int64_t num, int64_t dim) : EmbeddingBagImpl(EmbeddingBagOptions(num, dim)) {}
  EmbeddingBagImpl(const EmbeddingBagOptions& options);  // NOLINT
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  Tensor forward(const Tensor& input, const Tensor& offsets,
                 const Tensor& per_sample_weights = Tensor());
  void pretty_print(std::ostream& os) const override;
  EmbeddingBagOptions options;
  Tensor weight;
};
RETORCH_MODULE(EmbeddingBag);

}  // namespace retorch::nn
