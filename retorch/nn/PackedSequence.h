// Packed variable-length sequences for the recurrent modules (torch.nn.utils.rnn).
#pragma once
#include <optional>
#include <tuple>
#include <vector>

#include "retorch/core/Tensor.h"

namespace retorch::nn::utils::rnn {

// Note [Packed layout]
// A PackedSequence stores the time steps one after another: step t holds batch_sizes[t] rows,
// the first batch_sizes[t] sequences of the batch sorted by decreasing length. batch_sizes is
// an int64 CPU tensor; sorted_indices[i] is the original index of sorted sequence i and
// unsorted_indices is its inverse (both undefined when the input was already sorted).

/// Variable-length sequences packed step by step (see Note [Packed layout]).
class PackedSequence {
 public:
  PackedSequence() = default;
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {},
                          Tensor unsorted_indices = {});
  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }
  /// batch_sizes as a vector.
  std::vector<int64_t> batch_sizes_vec() const;
  bool is_empty() const { return !data_.defined(); }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

/// The inverse permutation: out[perm[i]] = i.
Tensor invert_permutation(const Tensor& permutation);
/// Packs a padded batch (T, B, *) (or (B, T, *) when batch_first) with the given lengths;
/// enforce_sorted requires decreasing lengths, otherwise the batch is sorted first.
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths,
                                    bool batch_first = false, bool enforce_sorted = true);
/// Unpacks to (padded, lengths) in the original batch order; total_length pads further.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence,
                                               bool batch_first = false, double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);
/// Stacks sequences of shape (L_i, *) into (max L, B, *) (or (B, max L, *)), padded.
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false,
                    double padding_value = 0.0);
/// Packs a list of sequences of shape (L_i, *).
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

}  // namespace retorch::nn::utils::rnn
