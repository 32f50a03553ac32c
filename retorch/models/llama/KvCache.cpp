// The paged KV cache's block pool (see Note [Paged KV cache]).
#include "retorch/models/llama/KvCache.h"

#include "retorch/core/Error.h"
#include "retorch/generated/Functions.h"

namespace retorch::llama {

KvCache::KvCache(const LlamaConfig& config, int64_t num_blocks, int64_t block_size,
                 ScalarType dtype, Device device)
    : num_blocks_(num_blocks), block_size_(block_size), dtype_(dtype) {
  RT_CHECK_VALUE(num_blocks > 0 && block_size > 0, "KvCache: num_blocks (", num_blocks,
                 ") and block_size (", block_size, ") must be positive");
  RT_CHECK_TYPE(dtype == kFloat || dtype == kBFloat16,
                "KvCache: the cache holds float32 or bfloat16, got ", dtype);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    keys_.push_back(zeros({num_blocks, block_size, config.num_kv_heads, config.head_dim},
                          TensorOptions().dtype(dtype).device(device)));
    values_.push_back(zeros({num_blocks, block_size, config.num_kv_heads, config.head_dim},
                            TensorOptions().dtype(dtype).device(device)));
  }
  // Handed out lowest id first (popped from the back).
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int64_t KvCache::bytes() const {
  int64_t n = 0;
  for (const Tensor& t : keys_) n += t.numel() * int64_t(element_size(dtype_));
  for (const Tensor& t : values_) n += t.numel() * int64_t(element_size(dtype_));
  return n;
}

bool KvCache::reserve(std::vector<int64_t>& table, int64_t num_tokens) {
  int64_t need = (num_tokens + block_size_ - 1) / block_size_ - int64_t(table.size());
  if (need <= 0) return true;
  if (need > int64_t(free_.size())) return false;
  for (int64_t i = 0; i < need; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void KvCache::release(std::vector<int64_t>& table) {
  for (int64_t b : table) free_.push_back(b);
  table.clear();
}

int64_t KvCache::slot(const std::vector<int64_t>& table, int64_t pos) const {
  size_t i = size_t(pos / block_size_);
  RT_CHECK_INDEX(pos >= 0 && i < table.size(), "KvCache: position ", pos,
                 " is past the sequence's ", table.size(), " blocks");
  return table[i] * block_size_ + pos % block_size_;
}

}  // namespace retorch::llama
