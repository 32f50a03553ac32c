// CPU caching allocator: rounds requests to size classes and keeps freed blocks for reuse.
#include "retorch/core/Allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

#include "retorch/core/Error.h"
#include "retorch/core/MemoryObserver.h"

namespace retorch {
namespace {

// Note [CPU caching allocator]
// A fresh large output (say 64 MB) from malloc is mmap'd: every page faults on first touch,
// which costs more than the arithmetic of an elementwise op. Keeping freed blocks in
// per-size-class free lists means the next step's output reuses pages that are already
// mapped. Sizes round up to 4 classes per power of two (<= 25% waste); blocks are
// 64-byte aligned for vector loads. The cache is bounded (kMaxCachedBytes); beyond it,
// freed blocks go back to the OS.
constexpr size_t kAlign = 64;
constexpr size_t kMaxCachedBytes = size_t(2) << 30;

size_t round_size(size_t n) {
  if (n <= 512) return (n + kAlign - 1) / kAlign * kAlign;
  size_t p = size_t(1) << (63 - __builtin_clzll(n));  // highest power of two <= n
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

// Note [Huge pages for large blocks]
// Blocks of 2 MB and more start on a 2 MB boundary and ask the kernel for transparent huge
// pages over their whole 2 MB pages (where THP is "madvise", the default, memory gets them only
// if asked): an elementwise op over a few MB then walks a handful of TLB entries instead of a
// thousand 4 KB pages (relu of 1M floats into a cached 4 MB block: 55-71 -> 47-53 us, PyTorch
// 47-59, on a Zen 4 VM; the op sweep's cheap unary ops 1.2-1.4x -> 0.95-1.1x PyTorch's time).
// The cache keeps the blocks, so the madvise and the huge pages' first touch are paid once.
constexpr size_t kHugePage = size_t(2) << 20;

void* os_alloc(size_t sz) {
  if (sz < kHugePage) return std::aligned_alloc(kAlign, sz);
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, sz) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  madvise(p, sz / kHugePage * kHugePage, MADV_HUGEPAGE);  // a tail under 2 MB keeps 4 KB pages
#endif
  return p;
}

std::atomic<MemoryObserver> g_memory_observer{nullptr};

void notify(int64_t bytes, const AllocatorStats& after) {
  report_memory_event(
      MemoryEvent{Device(kCPU), bytes, after.allocated_bytes, after.reserved_bytes});
}

class CachingCPUAllocator final : public Allocator {
 public:
  CachingCPUAllocator() {
    const char* env = std::getenv("RETORCH_CPU_CACHING");
    caching_ = !(env && std::strcmp(env, "0") == 0);
  }

  DataPtr allocate(size_t nbytes) override {
    size_t sz = round_size(nbytes == 0 ? 1 : nbytes);
    void* p = nullptr;
    AllocatorStats after;
    {
      std::lock_guard<std::mutex> g(mu_);
      stats_.num_allocs++;
      stats_.total_allocated_bytes += int64_t(sz);
      auto it = free_.find(sz);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached_ -= sz;
      }
      stats_.allocated_bytes += sz;
      if (stats_.allocated_bytes > stats_.peak_allocated_bytes)
        stats_.peak_allocated_bytes = stats_.allocated_bytes;
      if (!p) {
        stats_.num_os_allocs++;
        stats_.reserved_bytes += sz;
        stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
      }
      after = stats_;
    }
    if (!p) {
      p = os_alloc(sz);
      if (!p) {
        std::lock_guard<std::mutex> g(mu_);
        stats_.allocated_bytes -= sz;
        stats_.reserved_bytes -= sz;
        RT_ERROR_KIND(ErrorKind::kOutOfMemory, "DefaultCPUAllocator: not enough memory: you tried "
                      "to allocate ", nbytes, " bytes.");
      }
    }
    notify(int64_t(sz), after);
    return DataPtr(p, sz, this, &CachingCPUAllocator::free_block, Device(kCPU));
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> g(mu_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }
  void empty_cache() override {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [sz, list] : free_) {
      for (void* p : list) std::free(p);
      stats_.reserved_bytes -= int64_t(sz * list.size());
      list.clear();
    }
    cached_ = 0;
  }

 private:
  static void free_block(void* ctx, void* p, size_t sz) {
    static_cast<CachingCPUAllocator*>(ctx)->release(p, sz);
  }
  void release(void* p, size_t sz) {
    AllocatorStats after;
    bool cached = false;
    {
      std::lock_guard<std::mutex> g(mu_);
      stats_.allocated_bytes -= sz;
      stats_.num_frees++;
      stats_.total_freed_bytes += int64_t(sz);
      if (caching_ && cached_ + sz <= kMaxCachedBytes) {
        free_[sz].push_back(p);
        cached_ += sz;
        cached = true;
      } else {
        stats_.reserved_bytes -= sz;
      }
      after = stats_;
    }
    if (!cached) std::free(p);
    notify(-int64_t(sz), after);
  }

  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
  bool caching_ = true;
  AllocatorStats stats_;
};

Allocator* g_device_allocators[kNumDeviceTypes] = {};

}  // namespace

void set_memory_observer(MemoryObserver o) { g_memory_observer.store(o); }

void report_memory_event(const MemoryEvent& e) {
  if (MemoryObserver o = g_memory_observer.load(std::memory_order_relaxed)) o(e);
}

Allocator* cpu_allocator() {
  // Leaked on purpose: tensors in static storage may be freed after main returns.
  static Allocator* a = new CachingCPUAllocator();
  return a;
}

Allocator* allocator_for(Device d) {
  if (d.is_cpu()) return cpu_allocator();
  Allocator* a = g_device_allocators[int(d.type)];
  RT_CHECK(a, "no allocator for device '", d, "': this build of retorch has no ",
           device_type_name(d.type), " backend, or no ", device_type_name(d.type),
           " device is available");
  return a;
}

void set_allocator(DeviceType t, Allocator* a) { g_device_allocators[int(t)] = a; }

}  // namespace retorch
