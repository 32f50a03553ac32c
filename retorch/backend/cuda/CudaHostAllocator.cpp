// The caching allocator of page-locked (pinned) host memory, for copies between the host and
// the device that do not wait for the device: Tensor.pin_memory() and DataLoader(pin_memory=).
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <vector>

#include "retorch/backend/cuda/CudaRuntime.h"
#include "retorch/core/Error.h"

namespace retorch::cuda_backend {

// Note [Pinned host memory]
// The DMA engines read and write page-locked host memory directly, so a copy between it and the
// device can return at once (non_blocking=True) and overlap with work on the host; a copy of
// pageable memory goes through a staging buffer and returns only once the host side is done.
// cudaHostAlloc and cudaFreeHost are slow (they synchronize the device), so, as PyTorch's
// CachingHostAllocator does, blocks are rounded to a power of two and kept when freed. A copy
// that did not wait records an event for its stream on the block (record_host_use); a freed
// block is handed out again only once those events have passed, so no later user overwrites
// bytes a queued copy still reads. Pinned tensors are cpu tensors: every cpu kernel reads them;
// only the copies to and from cuda tensors treat them differently (Note [CUDA tensors]).

namespace {

size_t round_pow2(size_t n) {
  size_t r = 512;
  while (r < n) r <<= 1;
  return r;
}

class HostAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    const size_t size = round_pow2(nbytes);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& sizes = free_[size];
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (!passed(sizes[i])) continue;
        p = sizes[i];
        sizes.erase(sizes.begin() + std::ptrdiff_t(i));
        break;
      }
      if (p == nullptr) {
        const cudaError_t st = cudaHostAlloc(&p, size, cudaHostAllocDefault);
        if (st != cudaSuccess) {
          cudaGetLastError();
          RT_ERROR("pin_memory: could not allocate ", nbytes, " bytes of pinned host memory (",
                   cudaGetErrorString(st), "); CUDA: ", unavailable_reason());
        }
        blocks_[static_cast<char*>(p)] = Block{size, {}, false};
        stats_.reserved_bytes += int64_t(size);
        stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
        ++stats_.num_os_allocs;
      }
      blocks_[static_cast<char*>(p)].in_use = true;
      ++stats_.num_allocs;
      stats_.allocated_bytes += int64_t(size);
      stats_.total_allocated_bytes += int64_t(size);
      stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    }
    return DataPtr(p, nbytes, this, &release, Device(kCPU));
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, ptrs] : free_) {
      for (void* p : ptrs) {
        Block& b = blocks_.at(static_cast<char*>(p));
        for (cudaEvent_t e : b.events) cudaEventSynchronize(e);
        clear_events(b);
        cudaFreeHost(p);
        stats_.reserved_bytes -= int64_t(size);
        blocks_.erase(static_cast<char*>(p));
      }
      ptrs.clear();
    }
    cudaGetLastError();
  }

  void record(const void* p, StreamHandle s) {
    std::lock_guard<std::mutex> lock(mu_);
    Block* b = containing(p);
    if (b == nullptr) return;  // pinned elsewhere (cudaHostRegister): not ours to track
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(e, static_cast<cudaStream_t>(s)) != cudaSuccess) {
      cudaGetLastError();
      if (e != nullptr) cudaEventDestroy(e);
      synchronize_stream(s);  // cannot tell when the copy is done: wait for it now
      return;
    }
    b->events.push_back(e);
  }

  bool owns(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    return containing(p) != nullptr;
  }

 private:
  struct Block {
    size_t size = 0;
    std::vector<cudaEvent_t> events;  // copies that did not wait for their streams
    bool in_use = false;
  };

  static void release(void* ctx, void* p, size_t) {
    auto* a = static_cast<HostAllocator*>(ctx);
    std::lock_guard<std::mutex> lock(a->mu_);
    Block& b = a->blocks_.at(static_cast<char*>(p));
    b.in_use = false;
    a->stats_.allocated_bytes -= int64_t(b.size);
    ++a->stats_.num_frees;
    a->stats_.total_freed_bytes += int64_t(b.size);
    a->free_[b.size].push_back(p);
  }

  // The block whose bytes hold p; mu_ is held.
  Block* containing(const void* p) {
    auto it = blocks_.upper_bound(static_cast<char*>(const_cast<void*>(p)));
    if (it == blocks_.begin()) return nullptr;
    --it;
    const char* c = static_cast<const char*>(p);
    return c < it->first + it->second.size ? &it->second : nullptr;
  }

  // Whether every copy recorded on the free block at p has run (its events then dropped).
  bool passed(void* p) {
    Block& b = blocks_.at(static_cast<char*>(p));
    for (cudaEvent_t e : b.events) {
      if (cudaEventQuery(e) == cudaErrorNotReady) {
        cudaGetLastError();
        return false;
      }
    }
    clear_events(b);
    return true;
  }

  static void clear_events(Block& b) {
    for (cudaEvent_t e : b.events) cudaEventDestroy(e);
    b.events.clear();
  }

  mutable std::mutex mu_;
  std::map<char*, Block> blocks_;  // every block, by its first byte
  std::map<size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

HostAllocator& the_host_allocator() {
  static HostAllocator* a = new HostAllocator;  // outlives static tensors at exit
  return *a;
}

}  // namespace

Allocator* host_allocator() { return &the_host_allocator(); }

bool is_pinned(const void* p) {
  if (p == nullptr || device_count() == 0) return false;
  if (the_host_allocator().owns(p)) return true;
  cudaPointerAttributes attr{};
  const cudaError_t st = cudaPointerGetAttributes(&attr, p);
  cudaGetLastError();
  return st == cudaSuccess && attr.type == cudaMemoryTypeHost;
}

void record_host_use(const void* p, StreamHandle s) { the_host_allocator().record(p, s); }

}  // namespace retorch::cuda_backend
