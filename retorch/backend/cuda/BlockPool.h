// The caching CUDA allocator's segments and blocks (Note [Allocator block splitting]): plain C++
// bookkeeping over memory the allocator brings, so it is tested without a device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace retorch::cuda_backend {

// Note [Allocator block splitting]
// As PyTorch's allocator does, memory comes from the driver in segments and is handed out as
// blocks carved from them. Requests round up to 512 bytes. Up to 1 MiB they come from 2 MiB
// segments of the small pool; larger ones from the large pool, whose segments are 20 MiB for
// requests under 10 MiB and the request rounded to 2 MiB above. A request takes the smallest
// free block of its pool (same device, stream, graph pool and size class) that fits and splits
// off the rest when it is worth keeping (512 bytes in the small pool, more than 1 MiB in the
// large); a freed block merges with its free neighbours in the segment, so a segment whose
// blocks are all free is one block again, which empty_cache returns to the driver. Blocks never
// cross streams or graph pools (Note [CUDA caching allocator]).
class BlockPool {
 public:
  using Stream = void*;
  /// Where a block may be reused: device, stream, graph pool (0: none), small size class.
  using Key = std::tuple<int, Stream, int64_t, bool>;
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    Key key;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the segment
    Block* next = nullptr;
    std::vector<Stream> used_on;  // other streams that used it (record_stream)
  };

  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kSmallRequest = size_t(1) << 20;
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kLargeSegment = size_t(20) << 20;
  static constexpr size_t kMinLargeAlloc = size_t(10) << 20;
  static constexpr size_t kLargeRound = size_t(2) << 20;

  /// A request's size rounded to 512 bytes (at least 512).
  static size_t round_request(size_t n);
  static bool is_small(size_t rounded) { return rounded <= kSmallRequest; }
  /// The bytes of a new segment for a rounded request.
  static size_t segment_size(size_t rounded);

  /// The smallest free block of key's pool holding `size` (rounded) bytes, marked allocated and
  /// split when the rest is worth keeping; nullptr when none fits.
  Block* take(const Key& key, size_t size);
  /// A new segment of `bytes` at ptr as one free block of key's pool.
  void add_segment(const Key& key, char* ptr, size_t bytes);
  /// The allocated block that starts at ptr, or nullptr.
  Block* allocated_at(void* ptr);
  /// Marks b free and merges it with its free neighbours into key's free list.
  void give_back(Block* b);
  /// Removes every wholly free segment whose key `release` accepts; returns (ptr, bytes, key).
  std::vector<std::tuple<char*, size_t, Key>> release_free_segments(
      const std::function<bool(const Key&)>& release);
  /// Moves graph pool `pool`'s blocks, free and allocated, to their streams' ordinary pools.
  void dissolve_pool(int64_t pool);
  /// Free blocks and their bytes (for tests and summaries).
  size_t free_blocks() const;
  size_t free_bytes() const;

 private:
  void insert_free(Block* b);
  void erase_free(Block* b);
  // Folds `later` (the block right after `earlier` in its segment) into `earlier`.
  void merge(Block* earlier, Block* later);
  std::unordered_map<char*, Block> blocks_;  // every block by its start (node-stable)
  std::map<Key, std::set<std::pair<size_t, char*>>> free_;
};

}  // namespace retorch::cuda_backend
