// Devices, streams, events and copies over the CUDA runtime API, with every failure a
// retorch::Error naming the call and CUDA's message.
#include "retorch/backend/cuda/CudaRuntime.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>

#include "retorch/core/Device.h"
#include "retorch/core/Error.h"
#include "retorch/device/CudaBridge.h"
#include "retorch/device/DeviceApi.h"

namespace retorch {

namespace cuda_backend {

namespace {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear it, so that the next call's check does not report it again
  RT_ERROR("CUDA error in ", what, ": ", cudaGetErrorString(status), " (",
           cudaGetErrorName(status), ")");
}

struct Discovery {
  int count = 0;
  std::string reason;
};

// The driver is asked once; a machine without it (or without a GPU) has 0 devices.
const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery r;
    const cudaError_t status = cudaGetDeviceCount(&r.count);
    if (status != cudaSuccess) {
      r.count = 0;
      r.reason = status == cudaErrorNoDevice ? "no CUDA device"
                 : status == cudaErrorInsufficientDriver
                     ? "no CUDA driver (or one older than this build's CUDA runtime)"
                     : std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
      cudaGetLastError();
    } else if (r.count == 0) {
      r.reason = "no CUDA device";
    }
    return r;
  }();
  return d;
}

void require_device(const char* fn) {
  RT_CHECK(device_count() > 0, "cuda.", fn, ": CUDA is not available: ", unavailable_reason());
}

int resolve(int index, const char* fn) {
  require_device(fn);
  if (index < 0) return current_device();
  RT_CHECK_VALUE(index < device_count(), "cuda.", fn, ": invalid device ordinal ", index, " (",
                 device_count(), " devices available)");
  return index;
}

// A query's answer: true when done, false while work is pending, an error otherwise.
bool finished(cudaError_t status, const char* what) {
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check(status, what);
  return true;
}

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(EventHandle e) { return static_cast<cudaEvent_t>(e); }

}  // namespace

void check_status(int status, const char* what) { check(cudaError_t(status), what); }

int device_count() { return discovery().count; }
std::string unavailable_reason() { return discovery().reason; }

namespace {
std::atomic<bool> g_dependent_off{false};
}  // namespace

bool dependent_launches() {
  static const bool asked = [] {
    const char* v = std::getenv("RETORCH_CUDA_PDL");
    return v == nullptr || std::string(v) != "0";
  }();
  if (!asked || g_dependent_off.load(std::memory_order_relaxed)) return false;
  constexpr int kMaxDevices = 64;
  static std::atomic<int> major[kMaxDevices];  // 0: not asked yet
  const int d = current_device();
  if (d < 0 || d >= kMaxDevices) return false;
  int m = major[d].load(std::memory_order_relaxed);
  if (m == 0) {
    check(cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, d),
          "cudaDeviceGetAttribute");
    major[d].store(m, std::memory_order_relaxed);
  }
  return m >= 9;
}

void disable_dependent_launches() { g_dependent_off.store(true, std::memory_order_relaxed); }

int current_device() {
  require_device("current_device");
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

void set_device(int index) {
  RT_CHECK_VALUE(index >= 0, "cuda.set_device: expected a device index >= 0, got ", index);
  check(cudaSetDevice(resolve(index, "set_device")), "cudaSetDevice");
}

void synchronize(int index) {
  const int d = resolve(index, "synchronize");
  int previous = 0;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  if (previous != d) check(cudaSetDevice(d), "cudaSetDevice");
  const cudaError_t status = cudaDeviceSynchronize();
  if (previous != d) cudaSetDevice(previous);
  check(status, "cudaDeviceSynchronize");
}

StreamHandle create_stream(int priority) {
  require_device("Stream");
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  const int p = priority < greatest ? greatest : (priority > least ? least : priority);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, p), "cudaStreamCreateWithPriority");
  return s;
}

void destroy_stream(StreamHandle s) {
  if (s != nullptr) cudaStreamDestroy(as_stream(s));
}

namespace {
constexpr int kMaxDevices = 64;

// A device's pool: kStreamsPerClass streams per priority class, made on first use.
struct StreamPool {
  std::atomic<cudaStream_t> streams[2][kStreamsPerClass] = {};
  std::atomic<uint32_t> next[2] = {};
  std::mutex mu;  // creation
};

StreamPool& pool_of(int device) {
  static StreamPool* pools = new StreamPool[kMaxDevices];  // outlives streams used at exit
  return pools[device];
}

int check_device(int device, const char* fn) {
  if (device < 0) device = retorch::current_device_index(kCUDA);
  RT_CHECK_VALUE(device < device_count() && device < kMaxDevices, "cuda.", fn,
                 ": invalid device ordinal ", device, " (", device_count(),
                 " devices available)");
  return device;
}

// The thread's current stream per device (zero: the legacy default stream everywhere).
struct CurrentStreams {
  StreamHandle handle[kMaxDevices] = {};
  int64_t id[kMaxDevices] = {};
};
thread_local CurrentStreams tls_current;
}  // namespace

int64_t pool_stream(int device, int priority) {
  device = check_device(device, "Stream");
  const int cls = priority < 0 ? 1 : 0;
  StreamPool& p = pool_of(device);
  const int k = int(p.next[cls].fetch_add(1) % kStreamsPerClass);
  const int64_t id = 1 + cls * kStreamsPerClass + k;
  stream_handle(device, id);  // created now, so a bad device or priority fails here
  return id;
}

StreamHandle stream_handle(int device, int64_t id) {
  if (id == 0) return nullptr;
  RT_CHECK_VALUE(id > 0 && id <= 2 * kStreamsPerClass, "cuda: unknown stream id ", id,
                 " (0 is the default stream; others come from cuda.Stream())");
  device = check_device(device, "Stream");
  const int cls = int((id - 1) / kStreamsPerClass), k = int((id - 1) % kStreamsPerClass);
  StreamPool& p = pool_of(device);
  cudaStream_t s = p.streams[cls][k].load(std::memory_order_acquire);
  if (s != nullptr) return s;
  std::lock_guard<std::mutex> lock(p.mu);
  s = p.streams[cls][k].load(std::memory_order_relaxed);
  if (s != nullptr) return s;
  int previous = 0;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  if (previous != device) check(cudaSetDevice(device), "cudaSetDevice");
  try {  // the class's priority: the greatest (clamped from below) or the default
    s = as_stream(create_stream(cls ? std::numeric_limits<int>::min() : 0));
  } catch (...) {
    if (previous != device) cudaSetDevice(previous);
    throw;
  }
  if (previous != device) cudaSetDevice(previous);
  p.streams[cls][k].store(s, std::memory_order_release);
  return s;
}

StreamHandle current_stream(int device) {
  if (device < 0) device = retorch::current_device_index(kCUDA);
  return device < kMaxDevices ? tls_current.handle[device] : nullptr;
}

int64_t current_stream_id(int device) {
  if (device < 0) device = retorch::current_device_index(kCUDA);
  return device < kMaxDevices ? tls_current.id[device] : 0;
}

void set_current_stream(int device, int64_t id) {
  device = check_device(device, "set_stream");
  tls_current.handle[device] = stream_handle(device, id);
  tls_current.id[device] = id;
}

bool query_stream(StreamHandle s) {
  return finished(cudaStreamQuery(as_stream(s)), "cudaStreamQuery");
}

void synchronize_stream(StreamHandle s) {
  check(cudaStreamSynchronize(as_stream(s)), "cudaStreamSynchronize");
}

EventHandle create_event(bool enable_timing) {
  require_device("Event");
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, enable_timing ? cudaEventDefault : cudaEventDisableTiming),
        "cudaEventCreateWithFlags");
  return e;
}

void destroy_event(EventHandle e) {
  if (e != nullptr) cudaEventDestroy(as_event(e));
}

void record_event(EventHandle e, StreamHandle s) {
  check(cudaEventRecord(as_event(e), as_stream(s)), "cudaEventRecord");
}

bool query_event(EventHandle e) {
  return finished(cudaEventQuery(as_event(e)), "cudaEventQuery");
}

void synchronize_event(EventHandle e) {
  check(cudaEventSynchronize(as_event(e)), "cudaEventSynchronize");
}

float elapsed_ms(EventHandle start, EventHandle end) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, as_event(start), as_event(end)),
        "cudaEventElapsedTime (both events must be created with timing and be completed)");
  return ms;
}

bool wait_elapsed_ms(EventHandle start, EventHandle end, float* ms) {
  cudaError_t status = cudaEventSynchronize(as_event(end));
  if (status == cudaSuccess) status = cudaEventElapsedTime(ms, as_event(start), as_event(end));
  if (status == cudaErrorCudartUnloading) return false;
  check(status, "cudaEventSynchronize + cudaEventElapsedTime");
  return true;
}

void stream_wait_event(StreamHandle s, EventHandle e) {
  check(cudaStreamWaitEvent(as_stream(s), as_event(e), 0), "cudaStreamWaitEvent");
}

void copy_async(void* dst, const void* src, size_t n, CopyKind kind, StreamHandle s) {
  if (n == 0) return;
  const cudaMemcpyKind k = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                           : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                             : cudaMemcpyDeviceToDevice;
  check(cudaMemcpyAsync(dst, src, n, k, as_stream(s)), "cudaMemcpyAsync");
}

}  // namespace cuda_backend

namespace detail {

DeviceProperties cuda_backend_device_properties(int index) {
  const int d = cuda_backend::resolve(index, "get_device_properties");
  cudaDeviceProp p{};
  cuda_backend::check(cudaGetDeviceProperties(&p, d), "cudaGetDeviceProperties");
  DeviceProperties info;
  info.name = p.name;
  info.major = p.major;
  info.minor = p.minor;
  info.multi_processor_count = p.multiProcessorCount;
  info.total_memory = int64_t(p.totalGlobalMem);
  info.l2_cache_size = int64_t(p.l2CacheSize);
  return info;
}

void cuda_backend_mem_get_info(int index, int64_t* free_bytes, int64_t* total_bytes) {
  const int d = cuda_backend::resolve(index, "mem_get_info");
  int previous = 0;
  cuda_backend::check(cudaGetDevice(&previous), "cudaGetDevice");
  if (previous != d) cuda_backend::check(cudaSetDevice(d), "cudaSetDevice");
  size_t free = 0, total = 0;
  const cudaError_t status = cudaMemGetInfo(&free, &total);
  if (previous != d) cudaSetDevice(previous);
  cuda_backend::check(status, "cudaMemGetInfo");
  *free_bytes = int64_t(free);
  *total_bytes = int64_t(total);
}

}  // namespace detail

}  // namespace retorch
