// Packed variable-length sequences: packing, unpacking and padding, differentiable in the data.
#include "retorch/nn/PackedSequence.h"

#include <algorithm>

#include "retorch/core/TensorFactory.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn::utils::rnn {

namespace {

std::vector<int64_t> to_vec(const Tensor& t) {
  Tensor c = t.to(kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

Tensor long_tensor(const std::vector<int64_t>& v) {
  Tensor out = retorch::empty({int64_t(v.size())}, TensorOptions(kLong));
  std::copy(v.begin(), v.end(), out.data_ptr<int64_t>());
  return out;
}

}  // namespace

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices,
                               Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  if (sorted_indices_.defined() && !unsorted_indices_.defined())
    unsorted_indices_ = invert_permutation(sorted_indices_);
}

std::vector<int64_t> PackedSequence::batch_sizes_vec() const {
  return to_vec(batch_sizes_);
}

Tensor invert_permutation(const Tensor& permutation) {
  if (!permutation.defined()) return {};
  std::vector<int64_t> p = to_vec(permutation), inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    RT_CHECK(p[i] >= 0 && p[i] < int64_t(p.size()), "invert_permutation: index ", p[i],
             " out of range for a permutation of ", p.size());
    inv[size_t(p[i])] = int64_t(i);
  }
  return long_tensor(inv).to(permutation.device());
}

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first,
                                    bool enforce_sorted) {
  RT_CHECK(input.dim() >= 2,
           "pack_padded_sequence: expected a padded input of at least 2 dims,"
           " got size ",
           input.sizes());
  std::vector<int64_t> len = to_vec(lengths);
  const int64_t B = input.size(batch_first ? 0 : 1), T = input.size(batch_first ? 1 : 0);
  RT_CHECK(int64_t(len.size()) == B, "pack_padded_sequence: expected ", B,
           " lengths (the batch size of input ", input.sizes(), "), got ", len.size());
  Tensor x = batch_first ? input.transpose(0, 1) : input;
  Tensor sorted_indices;
  if (enforce_sorted) {
    for (size_t i = 1; i < len.size(); ++i)
      RT_CHECK(len[i - 1] >= len[i],
               "pack_padded_sequence: `lengths` array must be sorted in "
               "decreasing order when `enforce_sorted` is True. You can pass "
               "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
               "this requirement if you do not need ONNX exportability.");
  } else {
    // A stable sort keeps equal lengths in batch order (torch's CPU sort does the same).
    std::vector<int64_t> order(len.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return len[size_t(a)] > len[size_t(b)]; });
    std::vector<int64_t> sorted_len(len.size());
    for (size_t i = 0; i < order.size(); ++i) sorted_len[i] = len[size_t(order[i])];
    len = sorted_len;
    sorted_indices = long_tensor(order).to(input.device());
    x = x.index_select(1, sorted_indices);
  }
  RT_CHECK(!len.empty() && len.back() > 0,
           "pack_padded_sequence: Length of all samples has to be greater than 0, but found an "
           "element in 'lengths' that is <= 0");
  RT_CHECK(len.front() <= T, "pack_padded_sequence: the longest length ", len.front(),
           " exceeds the padded length ", T, " of input ", input.sizes());
  std::vector<int64_t> batch_sizes;
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < len.front(); ++t) {
    int64_t bs = 0;
    while (bs < int64_t(len.size()) && len[size_t(bs)] > t) ++bs;
    batch_sizes.push_back(bs);
    steps.push_back(x.select(0, t).narrow(0, 0, bs));
  }
  return PackedSequence(retorch::cat(steps, 0), long_tensor(batch_sizes), sorted_indices);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first,
                                               double padding_value,
                                               std::optional<int64_t> total_length) {
  std::vector<int64_t> bs = sequence.batch_sizes_vec();
  RT_CHECK(!bs.empty(), "pad_packed_sequence: empty PackedSequence");
  const Tensor& data = sequence.data();
  const int64_t T = int64_t(bs.size()), B = bs.front();
  int64_t out_len = T;
  if (total_length) {
    RT_CHECK(*total_length >= T,
             "pad_packed_sequence: Expected total_length to be at least the "
             "length of the longest sequence (",
             T, "), but got total_length=", *total_length);
    out_len = *total_length;
  }
  std::vector<int64_t> row_shape(data.sizes().begin(), data.sizes().end());
  std::vector<Tensor> steps;
  int64_t offset = 0;
  for (int64_t t = 0; t < out_len; ++t) {
    int64_t n = t < T ? bs[size_t(t)] : 0;
    Tensor step = n > 0 ? data.narrow(0, offset, n) : Tensor();
    offset += n;
    if (n < B) {
      row_shape[0] = B - n;
      Tensor pad =
          full(row_shape, padding_value, TensorOptions(data.dtype()).device(data.device()));
      step = n > 0 ? retorch::cat({step, pad}, 0) : pad;
    }
    steps.push_back(step);
  }
  Tensor padded = retorch::stack(steps, 0);
  std::vector<int64_t> lengths(size_t(B), 0);
  for (int64_t n : bs)
    for (int64_t b = 0; b < n; ++b) ++lengths[size_t(b)];
  Tensor len = long_tensor(lengths);
  if (sequence.unsorted_indices().defined()) {
    padded = padded.index_select(1, sequence.unsorted_indices());
    len = len.index_select(0, sequence.unsorted_indices().to(kCPU));
  }
  if (batch_first) padded = padded.transpose(0, 1);
  return {padded, len};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value) {
  RT_CHECK(!sequences.empty(), "pad_sequence: received an empty list of sequences");
  int64_t max_len = 0;
  for (const Tensor& s : sequences) {
    RT_CHECK(s.dim() >= 1 && s.sizes().slice(1) == sequences[0].sizes().slice(1),
             "pad_sequence: all sequences must have the same trailing dims, got ", s.sizes(),
             " and ", sequences[0].sizes());
    max_len = std::max(max_len, s.size(0));
  }
  std::vector<Tensor> cols;
  for (const Tensor& s : sequences) {
    Tensor col = s;
    if (s.size(0) < max_len) {
      std::vector<int64_t> shape = s.sizes().vec();
      shape[0] = max_len - s.size(0);
      col = retorch::cat(
          {s, full(shape, padding_value, TensorOptions(s.dtype()).device(s.device()))}, 0);
    }
    cols.push_back(col);
  }
  return retorch::stack(cols, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) lengths.push_back(s.dim() > 0 ? s.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), long_tensor(lengths), false, enforce_sorted);
}

}  // namespace retorch::nn::utils::rnn
