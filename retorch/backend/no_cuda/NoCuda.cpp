// Stubs chosen by the build when the CUDA backend is not compiled: CUDA reports unavailable.
#include <cstddef>
#include <cstdint>
#include <string>

#include "retorch/core/Error.h"
#include "retorch/device/CudaBridge.h"
#include "retorch/device/DeviceApi.h"

namespace retorch {
class Dispatcher;
namespace detail {

/// Registers the CUDA backend's kernels: nothing to register without it.
void register_cuda_backend(Dispatcher&) {}

/// Whether a CUDA device can be used by this build.
bool cuda_backend_built() { return false; }
bool cuda_backend_available() { return false; }
/// Number of CUDA devices visible to this build.
int cuda_backend_device_count() { return 0; }

/// Generated kernels (backend/cuda/CudaModules.cpp): never reached, no tensor is on a device.
std::string cuda_backend_arch() { RT_ERROR("CUDA is not available: this build has no CUDA backend"); }
void* cuda_backend_kernel(const std::string&, const std::string&) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
void cuda_backend_launch(void*, int64_t, int, void**) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}

/// NCCL (backend/cuda/CudaNccl.cpp): unavailable without the CUDA backend.
bool cuda_backend_nccl_available() { return false; }
void* cuda_backend_nccl_comm() { RT_ERROR("NCCL is not available: this build has no CUDA backend"); }
void cuda_backend_nccl_all_reduce(void*, void*, size_t, int, int) {
  RT_ERROR("NCCL is not available: this build has no CUDA backend");
}
void cuda_backend_nccl_broadcast(void*, void*, size_t, int, int) {
  RT_ERROR("NCCL is not available: this build has no CUDA backend");
}

/// Device synchronization, streams and events (the device API, the profiler): never reached,
/// device_available(kCUDA) is false.
void cuda_backend_synchronize(int) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
int64_t cuda_backend_stream_create(int, int) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
int64_t cuda_backend_current_stream(int) { return 0; }
void cuda_backend_set_stream(int, int64_t) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
bool cuda_backend_stream_query(int, int64_t) { return true; }
void cuda_backend_stream_synchronize(int, int64_t) {}
void cuda_backend_stream_wait_event(int, int64_t, void*) {}
void cuda_backend_record_stream(void*, int, int64_t) {}
Allocator* cuda_backend_host_allocator() { return nullptr; }
bool cuda_backend_is_pinned(const void*) { return false; }
int64_t cuda_backend_graph_begin(int, int64_t) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
void* cuda_backend_graph_end(int, int64_t, int64_t) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
void cuda_backend_graph_abort(int, int64_t, int64_t) {}
void cuda_backend_graph_replay(void*, int, int64_t) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
void cuda_backend_graph_destroy(void*) {}
bool cuda_backend_stream_capturing(int, int64_t) { return false; }
void* cuda_backend_event_create(bool) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
void cuda_backend_event_destroy(void*) {}
void cuda_backend_event_record(void*, int, int64_t) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
bool cuda_backend_event_query(void*) { return true; }
void cuda_backend_event_synchronize(void*) {}
double cuda_backend_event_elapsed_ms(void*, void*) {
  RT_ERROR("CUDA is not available: this build has no CUDA backend");
}
DeviceProperties cuda_backend_device_properties(int) {
  RT_ERROR("cuda.get_device_properties: CUDA is not available: this build has no CUDA backend");
}
void cuda_backend_mem_get_info(int, int64_t*, int64_t*) {
  RT_ERROR("cuda.mem_get_info: CUDA is not available: this build has no CUDA backend");
}

// As torch's CPU builds: NVTX is a CUDA build's.
[[noreturn]] static void no_nvtx(const char* fn) {
  RT_ERROR("cuda.nvtx.", fn, ": NVTX functions not installed: this build has no CUDA backend");
}
int cuda_backend_nvtx_range_push(const char*) { no_nvtx("range_push"); }
int cuda_backend_nvtx_range_pop() { no_nvtx("range_pop"); }
uint64_t cuda_backend_nvtx_range_start(const char*) { no_nvtx("range_start"); }
void cuda_backend_nvtx_range_end(uint64_t) { no_nvtx("range_end"); }
void cuda_backend_nvtx_mark(const char*) { no_nvtx("mark"); }

}  // namespace detail
}  // namespace retorch
