// The paged KV cache: fixed-size blocks of keys and values per layer, handed out to sequences.
#pragma once
#include <cstdint>
#include <vector>

#include "retorch/core/Tensor.h"
#include "retorch/models/llama/Config.h"

namespace retorch::llama {

// Note [Paged KV cache]
// Each layer owns two tensors [num_blocks, block_size, kv_heads, head_dim], float32 or bfloat16
// (half the bytes a decode step reads; keys and values are rounded once, as they are written).
// A sequence owns a list of block ids (its block table); the key and value of its token at
// position p live at row p % block_size of block table[p / block_size], i.e. at slot
// table[p / block_size] * block_size + p % block_size of the cache viewed as
// [num_blocks * block_size, kv_heads, head_dim]. Blocks are allocated as a sequence grows and
// returned when it ends, so sequences of any length share one fixed pool without copying, and
// paged_attention (see Note [Paged attention]) reads keys straight from the blocks.
class KvCache {
 public:
  /// Allocates num_blocks blocks of block_size tokens for every layer of `config`, in `dtype`
  /// (float32 or bfloat16).
  KvCache(const LlamaConfig& config, int64_t num_blocks, int64_t block_size = 16,
          ScalarType dtype = kFloat, Device device = Device(kCPU));

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  ScalarType dtype() const { return dtype_; }
  int64_t num_free_blocks() const { return int64_t(free_.size()); }
  /// Bytes held by the keys and values of all layers.
  int64_t bytes() const;

  /// The key/value blocks of one layer ([num_blocks, block_size, kv_heads, head_dim]).
  const Tensor& key(int64_t layer) const { return keys_.at(size_t(layer)); }
  const Tensor& value(int64_t layer) const { return values_.at(size_t(layer)); }

  /// Grows `table` to cover positions [0, num_tokens); false (table unchanged) when the pool
  /// has too few free blocks.
  bool reserve(std::vector<int64_t>& table, int64_t num_tokens);
  /// Returns a sequence's blocks to the pool and clears its table.
  void release(std::vector<int64_t>& table);
  /// The cache slot of position `pos` of a sequence with this table.
  int64_t slot(const std::vector<int64_t>& table, int64_t pos) const;

 private:
  int64_t num_blocks_;
  int64_t block_size_;
  ScalarType dtype_;
  std::vector<Tensor> keys_;
  std::vector<Tensor> values_;
  std::vector<int64_t> free_;
};

}  // namespace retorch::llama
