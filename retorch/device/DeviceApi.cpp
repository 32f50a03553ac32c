// The device API: per-type availability, current device and stream, events, RNG and memory
// queries; truthful answers without a backend (Note [Device API without a device]).
#include "retorch/device/CudaBridge.h"
#include "retorch/device/DeviceApi.h"

#include <atomic>
#include <chrono>
#include <cstring>

#include "retorch/core/Allocator.h"
#include "retorch/core/Error.h"
#include "retorch/core/Generator.h"
#include "retorch/core/MatmulPrecision.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/device/DeviceFallback.h"
#include "retorch/profiler/Profiler.h"

namespace retorch {

// Note [Device API without a device]
// Without a backend a device type still "works" through the device fallback (Note [Device
// routing]), so its API answers as the fallback behaves, never pretending a device exists:
// is_available() is false and device_count() 0; current/set device track the index that
// tensors asked for "cuda" get; streams are always idle and events time the host clock (work
// runs as it is issued); memory queries report 0 bytes, since those tensors live in host memory
// and the cpu allocator counts them; random ops draw from the CPU default generator, so seeding
// and RNG state act on it and a program gives the numbers it gives on cpu.

bool device_available(DeviceType type) {
  if (type == kCPU) return true;
  if (type == kCUDA) return detail::cuda_backend_available();
  return false;
}

int device_count(DeviceType type) {
  if (type == kCPU) return 1;
  if (type == kCUDA) return detail::cuda_backend_device_count();
  return 0;
}

DeviceGuard::DeviceGuard(Device d) : type_(d.type), previous_(current_device_index(d.type)) {
  if (d.has_index() && d.index >= 0) set_current_device_index(d.type, d.index);
}
DeviceGuard::~DeviceGuard() { set_current_device_index(type_, previous_); }

namespace {
int64_t host_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
thread_local Stream tls_stream[kNumDeviceTypes];
thread_local bool tls_stream_set[kNumDeviceTypes] = {};

Device device_at(DeviceType type, int index) {
  return Device(type, int8_t(index < 0 ? current_device_index(type) : index));
}

// Whether work of this device runs on the CUDA backend (its streams and events are CUDA's).
bool on_cuda(Device d) { return d.type == kCUDA && device_available(kCUDA); }
}  // namespace

bool Stream::query() const {
  return !on_cuda(device_) || detail::cuda_backend_stream_query(device_.index, id_);
}

void Stream::synchronize() const {
  if (on_cuda(device_)) detail::cuda_backend_stream_synchronize(device_.index, id_);
}

void Stream::wait_event(const Event& e) const {
  // A host-clock event (no backend, or recorded on another device type) has passed already.
  if (on_cuda(device_) && e.device_event() != nullptr)
    detail::cuda_backend_stream_wait_event(device_.index, id_, e.device_event());
}

void Stream::wait_stream(const Stream& other) const {
  if (!on_cuda(device_) || !on_cuda(other.device()) || other == *this) return;
  Event e;
  e.record(other);
  wait_event(e);
}

void Event::wait(const Stream& stream) const { stream.wait_event(*this); }

void Event::record(const Stream& stream) {
  recorded_ = true;
  host_ns_ = host_now_ns();
  if (!on_cuda(stream.device())) return;
  if (!device_)
    device_ = std::shared_ptr<void>(detail::cuda_backend_event_create(enable_timing_),
                                    detail::cuda_backend_event_destroy);
  detail::cuda_backend_event_record(device_.get(), stream.device().index, stream.id());
}

bool Event::query() const { return !device_ || detail::cuda_backend_event_query(device_.get()); }

void Event::synchronize() const {
  if (device_) detail::cuda_backend_event_synchronize(device_.get());
}

double Event::elapsed_time(const Event& end) const {
  RT_CHECK(enable_timing_ && end.enable_timing_,
           "Event.elapsed_time: both events must be created with enable_timing=True");
  RT_CHECK(recorded_ && end.recorded_,
           "Event.elapsed_time: both events must be recorded before calculating elapsed time");
  RT_CHECK(bool(device_) == bool(end.device_),
           "Event.elapsed_time: both events must be recorded on the same kind of stream (one is a "
           "CUDA event, the other a host clock)");
  if (device_) return detail::cuda_backend_event_elapsed_ms(device_.get(), end.device_.get());
  return double(end.host_ns_ - host_ns_) / 1e6;
}

namespace device_api {

void check_index(DeviceType type, int index, const char* fn) {
  RT_CHECK_VALUE(index >= -1 && index < 128, device_type_name(type), ".", fn,
                 ": invalid device index ", index);
  if (device_available(type))
    RT_CHECK_VALUE(index < device_count(type), device_type_name(type), ".", fn,
                   ": invalid device ordinal ", index, " (", device_count(type),
                   " devices available)");
}

int current_device(DeviceType type) { return current_device_index(type); }

void set_device(DeviceType type, int index) {
  RT_CHECK_VALUE(index >= 0, device_type_name(type), ".set_device: expected a device index >= 0, got ",
                 index);
  check_index(type, index, "set_device");
  set_current_device_index(type, int8_t(index));
}

void synchronize(DeviceType type, int index) {
  check_index(type, index, "synchronize");
  if (type == kCUDA && device_available(kCUDA))
    detail::cuda_backend_synchronize(index < 0 ? current_device_index(type) : index);
}

Stream default_stream(DeviceType type, int index) {
  check_index(type, index, "default_stream");
  return Stream(device_at(type, index));
}

Stream current_stream(DeviceType type, int index) {
  check_index(type, index, "current_stream");
  const Device d = device_at(type, index);
  if (tls_stream_set[int(type)] && tls_stream[int(type)].device() == d) return tls_stream[int(type)];
  return Stream(d);
}

void set_stream(const Stream& s) {
  if (on_cuda(s.device())) detail::cuda_backend_set_stream(s.device().index, s.id());
  tls_stream[int(s.device().type)] = s;
  tls_stream_set[int(s.device().type)] = true;
}

Stream new_stream(Device device, int priority) {
  const Device d = device.has_index() ? device.canonical() : device_at(device.type, -1);
  check_index(d.type, d.index, "Stream");
  if (on_cuda(d)) return Stream(d, priority, detail::cuda_backend_stream_create(d.index, priority));
  static std::atomic<int64_t> next_label{1};
  return Stream(d, priority, next_label++);
}

// Random ops of every device draw from the CPU generator for now: without a backend they run
// on the cpu, and the CUDA backend has no random kernels yet (Note [CUDA tensors]).
void manual_seed(DeviceType type, uint64_t seed) {
  (void)type;
  default_generator().manual_seed(seed);
}

Tensor get_rng_state(DeviceType type, int index) {
  check_index(type, index, "get_rng_state");
  const std::array<uint64_t, 2> s = default_generator().get_state();
  Tensor t = make_empty({int64_t(sizeof s)}, kByte);
  std::memcpy(t.data_ptr(), s.data(), sizeof s);
  return t;
}

void set_rng_state(DeviceType type, const Tensor& state, int index) {
  check_index(type, index, "set_rng_state");
  std::array<uint64_t, 2> s{};
  RT_CHECK_TYPE(state.defined() && state.dtype() == kByte, device_type_name(type),
                ".set_rng_state: expected a torch.uint8 tensor, got ",
                state.defined() ? dtype_name(state.dtype()) : "an undefined tensor");
  RT_CHECK_VALUE(state.numel() == int64_t(sizeof s), device_type_name(type),
                 ".set_rng_state: expected a state of ", sizeof s, " bytes, got ", state.numel());
  Tensor c = state.to(Device(kCPU)).contiguous();
  std::memcpy(s.data(), c.data_ptr(), sizeof s);
  default_generator().set_state(s);
}

namespace {
// One field of the device allocator's statistics; 0 without a device (Note [Device API without
// a device]).
int64_t memory_stat(DeviceType type, int index, int64_t AllocatorStats::*field) {
  check_index(type, index, "memory statistics");
  if (!device_available(type) || type == kCPU) return 0;
  return allocator_for(device_at(type, index))->stats().*field;
}
}  // namespace

int64_t memory_allocated(DeviceType type, int index) {
  return memory_stat(type, index, &AllocatorStats::allocated_bytes);
}
int64_t max_memory_allocated(DeviceType type, int index) {
  return memory_stat(type, index, &AllocatorStats::peak_allocated_bytes);
}
int64_t memory_reserved(DeviceType type, int index) {
  return memory_stat(type, index, &AllocatorStats::reserved_bytes);
}
int64_t max_memory_reserved(DeviceType type, int index) {
  return memory_stat(type, index, &AllocatorStats::peak_reserved_bytes);
}

void reset_peak_memory_stats(DeviceType type, int index) {
  check_index(type, index, "reset_peak_memory_stats");
  if (device_available(type) && type != kCPU)
    allocator_for(device_at(type, index))->reset_peak_stats();
}

void empty_cache(DeviceType type) {
  if (device_available(type) && type != kCPU) allocator_for(Device(type, 0))->empty_cache();
}

std::string memory_summary(DeviceType type, int index) {
  check_index(type, index, "memory_summary");
  if (device_available(type)) return profiler::memory_summary(device_at(type, index));
  return std::string("No ") + std::string(device_type_name(type)) +
         " device: tensors on it run through the device fallback and live in host memory, which "
         "memory_summary('cpu') describes.\n";
}

DeviceProperties get_device_properties(DeviceType type, int index) {
  check_index(type, index, "get_device_properties");
  RT_CHECK(type == kCUDA && device_available(kCUDA), device_type_name(type),
           ".get_device_properties: no ", device_type_name(type), " device is available");
  return detail::cuda_backend_device_properties(index < 0 ? current_device_index(type) : index);
}

std::pair<int64_t, int64_t> mem_get_info(DeviceType type, int index) {
  check_index(type, index, "mem_get_info");
  RT_CHECK(type == kCUDA && device_available(kCUDA), device_type_name(type),
           ".mem_get_info: no ", device_type_name(type), " device is available");
  std::pair<int64_t, int64_t> r;
  detail::cuda_backend_mem_get_info(index < 0 ? current_device_index(type) : index, &r.first,
                                    &r.second);
  return r;
}

}  // namespace device_api

void record_stream(const Tensor& t, const Stream& s) {
  RT_CHECK_VALUE(t.defined(), "record_stream: expected a defined tensor");
  RT_CHECK_KIND(!t.device().is_cpu(), ErrorKind::kNotImplemented,
                "record_stream: expected a tensor on a device with streams, got a ",
                dtype_name(t.dtype()), " tensor of shape ", t.sizes(), " on cpu");
  RT_CHECK_VALUE(s.device().type == t.device().type, "record_stream: the tensor is on ",
                 t.device().str(), " but the stream on ", s.device().str());
  if (on_cuda(t.device()) && on_cuda(s.device()))
    detail::cuda_backend_record_stream(t.impl()->storage()->data(), s.device().index, s.id());
}

bool is_pinned(const Tensor& t) {
  return t.defined() && t.impl()->storage()->device().is_cpu() &&
         detail::cuda_backend_is_pinned(t.impl()->storage()->data());
}

Tensor pin_memory(const Tensor& t) {
  RT_CHECK_VALUE(t.defined(), "pin_memory: expected a defined tensor");
  RT_CHECK(t.device().is_cpu(), "pin_memory: cannot pin a ", dtype_name(t.dtype()),
           " tensor of shape ", t.sizes(), " on ", t.device().str(),
           ": only cpu tensors can be pinned");
  Allocator* pinned = detail::cuda_backend_host_allocator();
  RT_CHECK(pinned != nullptr, "pin_memory: pinned memory requires a CUDA device, and ",
           detail::cuda_backend_available() ? "none answered" : "none is available");
  if (is_pinned(t)) return t;
  const size_t nbytes = size_t(t.numel()) * size_t(element_size(t.dtype()));
  auto storage = make_intrusive<StorageImpl>(nbytes, pinned);
  auto impl = make_intrusive<TensorImpl>(Storage(std::move(storage)), t.dtype(), Device(kCPU));
  impl->set_sizes_contiguous(t.sizes());
  Tensor out(std::move(impl));
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  out.copy_(t);
  return out;
}

namespace cuda::matmul {
// Note [float32 matmul precision]: the precision setting seen from CUDA's side.
void set_allow_tf32(bool allow) {
  set_float32_matmul_precision(allow ? Float32MatmulPrecision::kHigh
                                     : Float32MatmulPrecision::kHighest);
}
bool allow_tf32() { return float32_matmul_precision() != Float32MatmulPrecision::kHighest; }
}  // namespace cuda::matmul

}  // namespace retorch
