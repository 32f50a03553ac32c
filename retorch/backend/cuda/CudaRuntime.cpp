// Devices, streams, events and copies over the CUDA runtime API, with every failure a
// retorch::Error naming the call and CUDA's message.
#include "retorch/backend/cuda/CudaRuntime.h"

#include <cuda_runtime_api.h>

#include "retorch/core/Error.h"

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

}  // namespace retorch
