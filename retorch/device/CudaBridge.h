// The CUDA backend's entry points for code outside backend/cuda (the device API, the compiler,
// the profiler, the process groups): defined in backend/cuda, or failing clearly in no_cuda.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace retorch {
class Allocator;
struct DeviceProperties;  // DeviceApi.h
}  // namespace retorch

namespace retorch::detail {

/// Whether this build has the CUDA backend (torch.backends.cuda.is_built()).
bool cuda_backend_built();
/// Whether this build has the CUDA backend and a device, and how many devices.
bool cuda_backend_available();
int cuda_backend_device_count();

/// The device's architecture for NVRTC ("compute_90"), a kernel of PTX loaded as a CUDA library,
/// and its launch over `work` items of `block` threads (Note [Generated CUDA kernels]).
std::string cuda_backend_arch();
void* cuda_backend_kernel(const std::string& ptx, const std::string& name);
void cuda_backend_launch(void* kernel, int64_t work, int block, void** args);

/// NCCL on a one-device communicator (Note [Process groups]).
bool cuda_backend_nccl_available();
void* cuda_backend_nccl_comm();
void cuda_backend_nccl_all_reduce(void* comm, void* data, size_t count, int dtype, int op);
void cuda_backend_nccl_broadcast(void* comm, void* data, size_t count, int dtype, int root);

/// Waits for the device's work (cudaDeviceSynchronize).
void cuda_backend_synchronize(int index);

/// What cudaGetDeviceProperties reports of a device that torch.cuda.get_device_properties
/// shows, and its free and total memory (cudaMemGetInfo).
DeviceProperties cuda_backend_device_properties(int index);
void cuda_backend_mem_get_info(int index, int64_t* free_bytes, int64_t* total_bytes);

/// NVTX ranges and marks for Nsight Systems (torch.cuda.nvtx): the push/pop depth, a start/end
/// range id. Without the CUDA backend they raise.
int cuda_backend_nvtx_range_push(const char* message);
int cuda_backend_nvtx_range_pop();
uint64_t cuda_backend_nvtx_range_start(const char* message);
void cuda_backend_nvtx_range_end(uint64_t id);
void cuda_backend_nvtx_mark(const char* message);

/// Streams of a device (-1: the current one) by id (Note [CUDA streams]; 0: the legacy default
/// stream): a pool stream for a priority, the thread's current stream and setting it, whether
/// one is idle, waiting for it, making it wait for an event (not the host), and marking a
/// tensor's device memory (its storage's base pointer) as used on it (record_stream).
int64_t cuda_backend_stream_create(int device, int priority);
int64_t cuda_backend_current_stream(int device);
void cuda_backend_set_stream(int device, int64_t id);
bool cuda_backend_stream_query(int device, int64_t id);
void cuda_backend_stream_synchronize(int device, int64_t id);
void cuda_backend_stream_wait_event(int device, int64_t id, void* event);
void cuda_backend_record_stream(void* data, int device, int64_t id);
/// Pinned host memory (Note [Pinned host memory]): its allocator (nullptr without the backend
/// or a device), and whether p points into page-locked host memory.
Allocator* cuda_backend_host_allocator();
bool cuda_backend_is_pinned(const void* p);

/// CUDA graphs on a device's stream (Note [CUDA graphs]): a capture begun (its private pool's
/// id), ended (the graph), abandoned after an error; a graph replayed, destroyed.
int64_t cuda_backend_graph_begin(int device, int64_t stream);
void* cuda_backend_graph_end(int device, int64_t stream, int64_t pool);
void cuda_backend_graph_abort(int device, int64_t stream, int64_t pool);
void cuda_backend_graph_replay(void* graph, int device, int64_t stream);
void cuda_backend_graph_destroy(void* graph);
/// Whether a stream is being captured (events recorded on it then are graph nodes, not clocks).
bool cuda_backend_stream_capturing(int device, int64_t stream);

/// CUDA events (the device API's Event, the profiler's kernel clock): created (with timing or
/// not), recorded now on a stream, queried, waited for, destroyed, and the milliseconds between
/// two recorded ones once the second has completed (waits for it; NaN when the CUDA runtime is
/// already torn down at process exit).
void* cuda_backend_event_create(bool enable_timing);
void cuda_backend_event_destroy(void* event);
void cuda_backend_event_record(void* event, int device, int64_t stream);
bool cuda_backend_event_query(void* event);
void cuda_backend_event_synchronize(void* event);
double cuda_backend_event_elapsed_ms(void* start, void* end);

}  // namespace retorch::detail
