// The caching CUDA allocator: blocks carved from cached segments per (device, stream), split
// and merged (BlockPool.h), with PyTorch's statistics and empty_cache.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "retorch/backend/cuda/BlockPool.h"
#include "retorch/backend/cuda/CudaRuntime.h"
#include "retorch/core/Error.h"
#include "retorch/core/MemoryObserver.h"

namespace retorch::cuda_backend {

// Note [CUDA caching allocator]
// cudaMalloc and cudaFree synchronize the device and cost tens of microseconds, so freed
// blocks stay with the allocator: they are carved from cached segments and merged back when
// freed (Note [Allocator block splitting] in BlockPool.h), so a request takes the best-fitting
// free block of its (device, stream) without touching the driver. A block is
// allocated on the thread's current stream (Note [CUDA streams]) and never moves between
// streams: work queued on a stream may still use a block its tensor has freed, and the next
// user on the same stream is ordered after that work by the stream itself. A block that other
// streams used too is marked with record_stream; when freed, it waits (as PyTorch's does) until
// an event recorded then on each of those streams has passed before it joins its free list,
// checked at each allocation and waited for by empty_cache. While a thread captures a CUDA
// graph (Note [CUDA graphs]), its allocations on the capturing stream come from the graph's
// private pool: blocks the capture frees go back to that pool only, so no work outside the
// graph reuses memory its replays write; empty_cache keeps them, and when the graph is
// destroyed its pool's blocks join the stream's ordinary lists. When cudaMalloc
// runs out of memory the cached blocks are released and the allocation retried once; then
// the error names the request and the allocated and reserved totals. Statistics match the CPU
// allocator's (AllocatorStats): allocated = the blocks users hold, reserved = the segments.

namespace {

// A freed block whose other streams' work may still be running, and an event per stream.
struct PendingFree {
  BlockPool::Block* block;
  std::vector<cudaEvent_t> events;
};

// The capture this thread runs, if any: allocations on its stream come from its pool.
struct CaptureTarget {
  StreamHandle stream = nullptr;
  int64_t pool = 0;
};
thread_local CaptureTarget tls_capture;

class CachingAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      cudaGetLastError();
      RT_ERROR("CUDA allocation of ", nbytes, " bytes: CUDA is not available: ",
               unavailable_reason());
    }
    void* p = raw(nbytes, device, current_stream(device));
    return DataPtr(p, nbytes, this, &release, Device(kCUDA, int8_t(device)));
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
  }
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (PendingFree& f : pending_)
      for (cudaEvent_t e : f.events) cudaEventSynchronize(e);
    reclaim_pending();
    release_cached();
  }

  // A graph's pool opens for the capture on stream s of this thread, and closes (its blocks
  // joining their streams' ordinary lists) when the graph is destroyed.
  void open_pool(int64_t pool, StreamHandle s) {
    std::lock_guard<std::mutex> lock(mu_);
    live_pools_.insert(pool);
    tls_capture = CaptureTarget{s, pool};
  }
  void stop_capture() { tls_capture = CaptureTarget{}; }
  void close_pool(int64_t pool) {
    std::lock_guard<std::mutex> lock(mu_);
    live_pools_.erase(pool);
    blocks_.dissolve_pool(pool);
  }

  // Marks ptr's block as used on s as well: a no-op for s, the block's own stream, and for
  // memory this allocator did not allocate (a DLPack import), as in PyTorch.
  void record_stream(void* ptr, StreamHandle s) {
    std::lock_guard<std::mutex> lock(mu_);
    BlockPool::Block* b = blocks_.allocated_at(ptr);
    if (b == nullptr) return;
    if (s != std::get<1>(b->key) &&
        std::find(b->used_on.begin(), b->used_on.end(), s) == b->used_on.end())
      b->used_on.push_back(s);
  }

  void* raw(size_t nbytes, int device, StreamHandle stream) {
    AllocatorStats after;
    size_t size = 0;
    void* p = raw_locked(nbytes, device, stream, &size, &after);
    report(int64_t(size), device, after);
    return p;
  }

  void free(void* p) {
    if (p == nullptr) return;
    int device = 0;
    AllocatorStats after;
    const int64_t size = free_locked(p, &device, &after);
    report(-size, device, after);
  }

 private:
  // The profiler's memory view (report_memory_event), outside the lock, with the totals taken
  // under it.
  static void report(int64_t bytes, int device, const AllocatorStats& after) {
    report_memory_event(MemoryEvent{Device(kCUDA, int8_t(device)), bytes, after.allocated_bytes,
                                    after.reserved_bytes});
  }

  void* raw_locked(size_t nbytes, int device, StreamHandle stream, size_t* size,
                   AllocatorStats* after) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_.empty()) reclaim_pending();
    const size_t rounded = BlockPool::round_request(nbytes);
    const int64_t pool_id =
        tls_capture.pool != 0 && tls_capture.stream == stream ? tls_capture.pool : 0;
    const BlockPool::Key key{device, stream, pool_id, BlockPool::is_small(rounded)};
    BlockPool::Block* b = blocks_.take(key, rounded);
    if (b == nullptr) {
      const size_t segment = BlockPool::segment_size(rounded);
      blocks_.add_segment(key, static_cast<char*>(malloc_device(segment, nbytes)), segment);
      stats_.reserved_bytes += int64_t(segment);
      stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
      ++stats_.num_os_allocs;
      b = blocks_.take(key, rounded);
    }
    *size = b->size;
    ++stats_.num_allocs;
    stats_.total_allocated_bytes += int64_t(b->size);
    stats_.allocated_bytes += int64_t(b->size);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    *after = stats_;
    return b->ptr;
  }

  int64_t free_locked(void* p, int* device, AllocatorStats* after) {
    std::lock_guard<std::mutex> lock(mu_);
    BlockPool::Block* b = blocks_.allocated_at(p);
    RT_CHECK(b != nullptr && !pending_of(b), "CUDA caching allocator: freeing ", p,
             ", which it did not allocate (or freed already)");
    const int64_t size = int64_t(b->size);
    *device = std::get<0>(b->key);
    if (b->used_on.empty()) {
      blocks_.give_back(b);
    } else {
      PendingFree f{b, {}};
      for (StreamHandle s : b->used_on) {
        cudaEvent_t e = nullptr;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess ||
            cudaEventRecord(e, static_cast<cudaStream_t>(s)) != cudaSuccess) {
          cudaGetLastError();  // cannot tell when the stream is done: wait for the device
          if (e != nullptr) cudaEventDestroy(e);
          cudaDeviceSynchronize();
          cudaGetLastError();
          continue;
        }
        f.events.push_back(e);
      }
      pending_.push_back(std::move(f));
    }
    stats_.allocated_bytes -= size;
    ++stats_.num_frees;
    stats_.total_freed_bytes += size;
    *after = stats_;
    return size;
  }

  bool pending_of(const BlockPool::Block* b) const {
    for (const PendingFree& f : pending_)
      if (f.block == b) return true;
    return false;
  }

  static void release(void* ctx, void* p, size_t) { static_cast<CachingAllocator*>(ctx)->free(p); }

  // Moves each pending block whose streams have passed their events to its free list; mu_ is
  // held.
  void reclaim_pending() {
    auto done = [](const PendingFree& f) {
      for (cudaEvent_t e : f.events) {
        const cudaError_t st = cudaEventQuery(e);
        if (st == cudaErrorNotReady) {
          cudaGetLastError();
          return false;
        }
      }
      return true;
    };
    for (size_t i = 0; i < pending_.size();) {
      PendingFree& f = pending_[i];
      if (!done(f)) {
        ++i;
        continue;
      }
      for (cudaEvent_t e : f.events) cudaEventDestroy(e);
      blocks_.give_back(f.block);
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    }
    cudaGetLastError();
  }

  // cudaMalloc, retried once after releasing the cache; mu_ is held.
  void* malloc_device(size_t size, size_t asked) {
    void* p = nullptr;
    cudaError_t status = cudaMalloc(&p, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached();
      status = cudaMalloc(&p, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      RT_ERROR_KIND(status == cudaErrorMemoryAllocation ? ErrorKind::kOutOfMemory
                                                        : ErrorKind::kRuntime,
                    "CUDA out of memory: tried to allocate ", asked, " bytes (", size,
                    " rounded); ", stats_.allocated_bytes, " bytes allocated and ",
                    stats_.reserved_bytes, " reserved by retorch (", cudaGetErrorString(status),
                    ")");
    }
    return p;
  }

  // Returns every wholly free segment but the live graph pools' to the driver; mu_ is held.
  void release_cached() {
    const auto segments = blocks_.release_free_segments(
        [&](const BlockPool::Key& k) { return live_pools_.count(std::get<2>(k)) == 0; });
    int previous = 0;
    cudaGetDevice(&previous);
    for (const auto& [ptr, bytes, key] : segments) {
      if (std::get<0>(key) != previous) cudaSetDevice(std::get<0>(key));
      cudaFree(ptr);
      if (std::get<0>(key) != previous) cudaSetDevice(previous);
      stats_.reserved_bytes -= int64_t(bytes);
    }
    cudaGetLastError();
  }

  mutable std::mutex mu_;
  BlockPool blocks_;
  std::set<int64_t> live_pools_;
  std::vector<PendingFree> pending_;
  AllocatorStats stats_;
};

CachingAllocator& the_allocator() {
  static CachingAllocator* a = new CachingAllocator;  // outlives static tensors at exit
  return *a;
}

}  // namespace

Allocator* caching_allocator() { return &the_allocator(); }

void* raw_alloc(size_t bytes, StreamHandle s) {
  return the_allocator().raw(bytes, current_device(), s);
}

void raw_free(void* ptr) { the_allocator().free(ptr); }

void record_stream(void* ptr, StreamHandle s) { the_allocator().record_stream(ptr, s); }

void open_graph_pool(int64_t pool, StreamHandle s) { the_allocator().open_pool(pool, s); }
void stop_graph_capture() { the_allocator().stop_capture(); }
void close_graph_pool(int64_t pool) { the_allocator().close_pool(pool); }

}  // namespace retorch::cuda_backend
