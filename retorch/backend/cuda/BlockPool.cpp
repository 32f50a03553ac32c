// Segments split into blocks and merged back for the caching CUDA allocator (Note [Allocator
// block splitting] in BlockPool.h).
#include "retorch/backend/cuda/BlockPool.h"

#include "retorch/core/Error.h"

namespace retorch::cuda_backend {

size_t BlockPool::round_request(size_t n) {
  if (n == 0) n = 1;
  return (n + kMinBlock - 1) / kMinBlock * kMinBlock;
}

size_t BlockPool::segment_size(size_t rounded) {
  if (is_small(rounded)) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

void BlockPool::insert_free(Block* b) { free_[b->key].insert({b->size, b->ptr}); }

void BlockPool::erase_free(Block* b) {
  auto it = free_.find(b->key);
  if (it != free_.end()) it->second.erase({b->size, b->ptr});
}

BlockPool::Block* BlockPool::take(const Key& key, size_t size) {
  auto pool = free_.find(key);
  if (pool == free_.end()) return nullptr;
  auto it = pool->second.lower_bound({size, nullptr});
  if (it == pool->second.end()) return nullptr;
  Block* b = &blocks_.at(it->second);
  pool->second.erase(it);
  const size_t rest = b->size - size;
  const bool split = std::get<3>(key) ? rest >= kMinBlock : rest > kSmallRequest;
  if (split) {  // the rest becomes a free block right after b
    Block r;
    r.ptr = b->ptr + size;
    r.size = rest;
    r.key = key;
    r.prev = b;
    r.next = b->next;
    Block* rb = &blocks_.emplace(r.ptr, std::move(r)).first->second;
    if (rb->next) rb->next->prev = rb;
    b->next = rb;
    b->size = size;
    insert_free(rb);
  }
  b->allocated = true;
  return b;
}

void BlockPool::add_segment(const Key& key, char* ptr, size_t bytes) {
  Block b;
  b.ptr = ptr;
  b.size = bytes;
  b.key = key;
  insert_free(&blocks_.emplace(ptr, std::move(b)).first->second);
}

BlockPool::Block* BlockPool::allocated_at(void* ptr) {
  auto it = blocks_.find(static_cast<char*>(ptr));
  return it == blocks_.end() || !it->second.allocated ? nullptr : &it->second;
}

void BlockPool::give_back(Block* b) {
  RT_CHECK(b->allocated, "CUDA caching allocator: block ", static_cast<void*>(b->ptr),
           " freed twice");
  b->allocated = false;
  b->used_on.clear();
  if (Block* n = b->next; n && !n->allocated) {  // absorb the free block after
    erase_free(n);
    merge(b, n);
  }
  if (Block* p = b->prev; p && !p->allocated) {  // join the free block before
    erase_free(p);
    merge(p, b);
    b = p;
  }
  insert_free(b);
}

void BlockPool::merge(Block* earlier, Block* later) {
  earlier->size += later->size;
  earlier->next = later->next;
  if (earlier->next) earlier->next->prev = earlier;
  blocks_.erase(later->ptr);
}

std::vector<std::tuple<char*, size_t, BlockPool::Key>> BlockPool::release_free_segments(
    const std::function<bool(const Key&)>& release) {
  std::vector<std::tuple<char*, size_t, Key>> out;
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    Block& b = it->second;
    if (b.allocated || b.prev || b.next || !release(b.key)) {
      ++it;
      continue;
    }
    erase_free(&b);
    out.emplace_back(b.ptr, b.size, b.key);
    it = blocks_.erase(it);
  }
  return out;
}

void BlockPool::dissolve_pool(int64_t pool) {
  for (auto& [ptr, b] : blocks_) {
    if (std::get<2>(b.key) != pool) continue;
    if (!b.allocated) erase_free(&b);
    std::get<2>(b.key) = 0;
    if (!b.allocated) insert_free(&b);
  }
}

size_t BlockPool::free_blocks() const {
  size_t n = 0;
  for (const auto& [key, set] : free_) n += set.size();
  return n;
}

size_t BlockPool::free_bytes() const {
  size_t n = 0;
  for (const auto& [key, set] : free_)
    for (const auto& [size, ptr] : set) n += size;
  return n;
}

}  // namespace retorch::cuda_backend
