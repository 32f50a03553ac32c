// The device API: availability, current device, guards, streams, events, RNG and memory queries
// per device type, with torch.cuda-shaped retorch::cuda / mps / xpu namespaces.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "retorch/core/Device.h"
#include "retorch/core/Tensor.h"

namespace retorch {

/// Whether the device type has a usable backend and device here (cpu: always).
bool device_available(DeviceType type);
/// Number of devices of the type this build can use (cpu: 1).
int device_count(DeviceType type);

/// Sets the thread's current device of d's type for a scope, then restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device d);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  DeviceType type_;
  int8_t previous_;
};

class Event;

/// A queue of work on a device: id 0 is the device's default stream, new_stream() makes others.
/// Without a backend (and on cpu) work runs as it is issued, so a stream is a label that is
/// always idle: query() is true, synchronize() and the waits return at once. With the CUDA
/// backend a cuda stream is a CUDA stream (Note [CUDA streams]): the kernels a thread issues
/// queue on its current stream, and query, synchronize and the waits act on that stream.
class Stream {
 public:
  Stream() = default;
  explicit Stream(Device device, int priority = 0, int64_t id = 0)
      : device_(device.canonical()), priority_(priority), id_(id) {}
  Device device() const { return device_; }
  int priority() const { return priority_; }
  int64_t id() const { return id_; }
  bool query() const;
  void synchronize() const;
  /// Makes work queued on this stream later wait for e, or for the work queued on `other` by
  /// now (the host does not wait).
  void wait_event(const Event& e) const;
  void wait_stream(const Stream& other) const;
  bool operator==(const Stream& o) const { return device_ == o.device_ && id_ == o.id_; }

 private:
  Device device_;
  int priority_ = 0;
  int64_t id_ = 0;
};

/// A marker in a stream. Without a backend it records the host clock when recorded, so
/// elapsed_time() measures the host time between two events (work is synchronous there); on a
/// cuda stream with the CUDA backend it is a CUDA event, timed on the device.
class Event {
 public:
  explicit Event(bool enable_timing = false) : enable_timing_(enable_timing) {}
  void record(const Stream& stream);
  /// Makes work queued on `stream` later wait for this event (Stream::wait_event).
  void wait(const Stream& stream) const;
  bool query() const;
  void synchronize() const;
  /// Milliseconds from this event to `end`; both must be recorded with enable_timing.
  double elapsed_time(const Event& end) const;
  bool recorded() const { return recorded_; }
  /// The CUDA event once recorded on a cuda stream with the backend, else nullptr.
  void* device_event() const { return device_.get(); }

 private:
  bool enable_timing_;
  bool recorded_ = false;
  int64_t host_ns_ = 0;
  std::shared_ptr<void> device_;  // the CUDA event, once recorded on a cuda stream
};

/// A device's properties as torch.cuda.get_device_properties shows them.
struct DeviceProperties {
  std::string name;
  int major = 0;  // compute capability
  int minor = 0;
  int multi_processor_count = 0;
  int64_t total_memory = 0;  // bytes
  int64_t l2_cache_size = 0;
};

/// The generic forms behind the per-type namespaces below.
namespace device_api {
void check_index(DeviceType type, int index, const char* fn);
int current_device(DeviceType type);
void set_device(DeviceType type, int index);
void synchronize(DeviceType type, int index);
Stream current_stream(DeviceType type, int index);
Stream default_stream(DeviceType type, int index);
/// Makes s the thread's current stream of its device type (what `with stream(s)` does).
void set_stream(const Stream& s);
/// A new stream of the device (torch.cuda.Stream()): from the CUDA backend's pool on a cuda
/// device with it, else a label with an id of its own.
Stream new_stream(Device device, int priority = 0);
/// Without a backend the device's random ops draw from the CPU default generator (so a program
/// gives the numbers it gives on cpu): seeding and RNG state act on that generator.
void manual_seed(DeviceType type, uint64_t seed);
Tensor get_rng_state(DeviceType type, int index);
void set_rng_state(DeviceType type, const Tensor& state, int index);
int64_t memory_allocated(DeviceType type, int index);
int64_t max_memory_allocated(DeviceType type, int index);
int64_t memory_reserved(DeviceType type, int index);
int64_t max_memory_reserved(DeviceType type, int index);
void reset_peak_memory_stats(DeviceType type, int index);
void empty_cache(DeviceType type);
std::string memory_summary(DeviceType type, int index);
/// The properties of a device (-1: the current one) and its free and total bytes (cudaMemGetInfo);
/// both raise without the device, as PyTorch's do.
DeviceProperties get_device_properties(DeviceType type, int index);
std::pair<int64_t, int64_t> mem_get_info(DeviceType type, int index);
}  // namespace device_api

#define RETORCH_DEVICE_NAMESPACE(ns, kType)                                                    \
  namespace ns {                                                                               \
  inline bool is_available() { return device_available(kType); }                               \
  inline int device_count() { return retorch::device_count(kType); }                           \
  inline int current_device() { return device_api::current_device(kType); }                    \
  inline void set_device(int index) { device_api::set_device(kType, index); }                  \
  inline void synchronize(int index = -1) { device_api::synchronize(kType, index); }           \
  inline Stream current_stream(int index = -1) { return device_api::current_stream(kType, index); } \
  inline Stream default_stream(int index = -1) { return device_api::default_stream(kType, index); } \
  inline Stream stream() { return current_stream(); }                                          \
  inline void manual_seed(uint64_t seed) { device_api::manual_seed(kType, seed); }             \
  inline void manual_seed_all(uint64_t seed) { device_api::manual_seed(kType, seed); }         \
  inline Tensor get_rng_state(int index = -1) { return device_api::get_rng_state(kType, index); } \
  inline void set_rng_state(const Tensor& s, int index = -1) {                                 \
    device_api::set_rng_state(kType, s, index);                                                \
  }                                                                                            \
  inline int64_t memory_allocated(int i = -1) { return device_api::memory_allocated(kType, i); } \
  inline int64_t max_memory_allocated(int i = -1) {                                            \
    return device_api::max_memory_allocated(kType, i);                                         \
  }                                                                                            \
  inline int64_t memory_reserved(int i = -1) { return device_api::memory_reserved(kType, i); } \
  inline int64_t max_memory_reserved(int i = -1) {                                             \
    return device_api::max_memory_reserved(kType, i);                                          \
  }                                                                                            \
  inline void reset_peak_memory_stats(int i = -1) { device_api::reset_peak_memory_stats(kType, i); } \
  inline void empty_cache() { device_api::empty_cache(kType); }                                \
  inline std::string memory_summary(int i = -1) { return device_api::memory_summary(kType, i); } \
  inline DeviceProperties get_device_properties(int i = -1) {                                  \
    return device_api::get_device_properties(kType, i);                                        \
  }                                                                                            \
  inline std::pair<int64_t, int64_t> mem_get_info(int i = -1) {                                \
    return device_api::mem_get_info(kType, i);                                                 \
  }                                                                                            \
  }

RETORCH_DEVICE_NAMESPACE(cuda, kCUDA)
RETORCH_DEVICE_NAMESPACE(mps, kMPS)
RETORCH_DEVICE_NAMESPACE(xpu, kXPU)
#undef RETORCH_DEVICE_NAMESPACE

/// Marks t's memory as used by work queued on s, so that when t is freed its memory is not
/// reused before that work has finished (Tensor.record_stream); t must be on a device (not the
/// cpu); a no-op without the device's backend, where work runs as it is issued.
void record_stream(const Tensor& t, const Stream& s);

/// Whether t's memory is page-locked host memory (Tensor.is_pinned); false for device tensors.
bool is_pinned(const Tensor& t);
/// t in page-locked host memory (Note [Pinned host memory]): t itself when it already is, else
/// a contiguous copy; copies between it and cuda tensors with non_blocking=True do not wait for
/// the device. t must be a cpu tensor; raises without a CUDA device, as PyTorch does.
Tensor pin_memory(const Tensor& t);

/// Whether float32 matrix products on CUDA may round their inputs to TF32 (cuBLAS's fast TF32
/// mode): PyTorch's torch.backends.cuda.matmul.allow_tf32, false by default as since 1.12.
/// It reads and sets set_float32_matmul_precision (Note [float32 matmul precision]).
namespace cuda::matmul {
void set_allow_tf32(bool allow);
bool allow_tf32();
}  // namespace cuda::matmul

}  // namespace retorch
