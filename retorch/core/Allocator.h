// Allocator interface, DataPtr, and the CPU caching allocator (64-byte aligned, size-class pools).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "retorch/core/Device.h"

namespace retorch {

/// Owning pointer to device memory plus the function that frees it.
class DataPtr {
 public:
  using Deleter = void (*)(void* ctx, void* ptr, size_t nbytes);
  DataPtr() = default;
  DataPtr(void* ptr, size_t nbytes, void* ctx, Deleter d, Device dev)
      : ptr_(ptr), nbytes_(nbytes), ctx_(ctx), deleter_(d), device_(dev) {}
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  DataPtr(DataPtr&& o) noexcept { *this = std::move(o); }
  DataPtr& operator=(DataPtr&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      nbytes_ = o.nbytes_;
      ctx_ = o.ctx_;
      deleter_ = std::exchange(o.deleter_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  ~DataPtr() { reset(); }
  void reset() {
    if (deleter_) deleter_(ctx_, ptr_, nbytes_);
    ptr_ = nullptr;
    deleter_ = nullptr;
  }
  void* get() const { return ptr_; }
  Device device() const { return device_; }

 private:
  void* ptr_ = nullptr;
  size_t nbytes_ = 0;
  void* ctx_ = nullptr;
  Deleter deleter_ = nullptr;
  Device device_;
};

struct AllocatorStats {
  int64_t allocated_bytes = 0;       // in use by tensors now
  int64_t reserved_bytes = 0;        // in use + cached for reuse
  int64_t peak_allocated_bytes = 0;  // high-water mark of allocated_bytes
  int64_t peak_reserved_bytes = 0;   // high-water mark of reserved_bytes
  int64_t total_allocated_bytes = 0;  // every allocation's bytes, summed
  int64_t total_freed_bytes = 0;
  int64_t num_allocs = 0;            // calls to allocate
  int64_t num_frees = 0;
  int64_t num_os_allocs = 0;         // allocations that went to the OS (cache misses)
};

/// One allocation (bytes > 0) or free (bytes < 0) and the allocator's totals after it.
struct MemoryEvent {
  Device device;
  int64_t bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
};
/// Sees every allocation and free while set (the profiler's memory view); nullptr stops it.
/// Unset, an allocation pays one relaxed atomic load for it.
using MemoryObserver = void (*)(const MemoryEvent&);
void set_memory_observer(MemoryObserver o);

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak_stats() {}
  virtual void empty_cache() {}
};

/// The process-wide CPU allocator (caching; RETORCH_CPU_CACHING=0 turns caching off).
Allocator* cpu_allocator();
/// The allocator for a device; errors for devices this build lacks.
Allocator* allocator_for(Device d);
/// Registers the allocator of a non-CPU device type (used by backends).
void set_allocator(DeviceType t, Allocator* a);

}  // namespace retorch
