// The CUDA backend's runtime layer: devices, streams, events, the caching allocator and the
// first kernels, over the CUDA runtime API (no CUDA header needed to include this one).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "retorch/core/Allocator.h"

namespace retorch::cuda_backend {

// Note [CUDA build]
// CMake builds backend/cuda when it finds nvcc (RETORCH_CUDA=auto|on|off), with machine code
// for sm_80 and sm_90 and sm_90 PTX, linked against the static CUDA runtime, so libretorch
// loads on machines without a driver and there answers "no device" (device_count() == 0).
// Without nvcc, backend/no_cuda stands in. This layer is the groundwork of the CUDA issue: the
// pieces below are compiled in CI (nvcc present, no GPU) and tested on a GPU machine
// (tests/cpp/test_cuda_runtime.cpp skips without one). With a device, cuda tensors live in
// device memory and every op without a CUDA kernel runs through the device fallback's copies
// (Note [CUDA tensors] in CudaTensors.cpp); without one, cuda is unavailable and cuda tensors
// run on the cpu through the fallback as before (Note [Device API without a device]).

using StreamHandle = void*;  // a cudaStream_t; nullptr is the legacy default stream
using EventHandle = void*;   // a cudaEvent_t

/// Throws a retorch::Error naming `what` and CUDA's message unless status (a cudaError_t) is 0.
void check_status(int status, const char* what);

/// Devices the driver reports; 0 without a driver or GPU. Never throws.
int device_count();
/// Why device_count() is 0 ("no CUDA driver", "no CUDA device", ...), or "" when it is not.
std::string unavailable_reason();
/// The calling thread's current device (cudaGetDevice), and setting it.
int current_device();
void set_device(int index);
/// Waits for all work on a device (-1: the current one).
void synchronize(int index = -1);

/// A stream on the current device; lower priority numbers run first (CUDA's convention: 0 is
/// the default, negative numbers are higher priorities, clamped to the device's range).
StreamHandle create_stream(int priority = 0);
void destroy_stream(StreamHandle s);
/// Whether all work queued on s has finished.
bool query_stream(StreamHandle s);
void synchronize_stream(StreamHandle s);
/// Whether the decode kernels launch as programmatic dependents on the current device (Note
/// [Dependent launches] in CudaDevice.cuh): compute capability 9.0 or later, and
/// RETORCH_CUDA_PDL not set to 0; turned off for the process after a launch that fails.
bool dependent_launches();
void disable_dependent_launches();

// Note [CUDA streams]
// Stream ids name a device's streams as the device API's Stream objects carry them: 0 is the
// legacy default stream (a nullptr handle), which every thread uses until it sets another, as
// in PyTorch; other ids are streams of the device's pool, non-blocking (they do not wait for
// the default stream, nor it for them: order them with events or wait_stream), 32 per priority
// class (0 and higher priorities: a negative priority), created on first use and handed out
// round robin, so Streams made in a loop do not make more. Every kernel, copy and library call
// of this backend queues on the calling thread's current stream of the device; copies to and
// from the host wait for that stream, as PyTorch's do.
constexpr int kStreamsPerClass = 32;
/// The calling thread's current stream (and its id) on a device (-1: the current cuda device).
StreamHandle current_stream(int device = -1);
int64_t current_stream_id(int device = -1);
/// Makes stream `id` the thread's current stream of the device (an error for an unknown id).
void set_current_stream(int device, int64_t id);
/// A stream of the device's pool for the priority (its id).
int64_t pool_stream(int device, int priority);
/// The handle of a stream id of the device (0: nullptr, the legacy default stream).
StreamHandle stream_handle(int device, int64_t id);

EventHandle create_event(bool enable_timing);
void destroy_event(EventHandle e);
void record_event(EventHandle e, StreamHandle s);
bool query_event(EventHandle e);
void synchronize_event(EventHandle e);
/// Milliseconds between two recorded, completed timing events.
float elapsed_ms(EventHandle start, EventHandle end);
/// Waits for `end`, then sets *ms as elapsed_ms does; false, with nothing set, when the CUDA
/// runtime is being torn down at process exit (a profile stopped by a static destructor).
bool wait_elapsed_ms(EventHandle start, EventHandle end, float* ms);
/// Makes later work on s wait for e (a cross-stream dependency; the host does not wait).
void stream_wait_event(StreamHandle s, EventHandle e);

enum class CopyKind : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice };
/// Queues a copy of n bytes on s; a host-to-device or device-to-host copy of pageable memory
/// returns once the host side has been read or written, as cudaMemcpyAsync does.
void copy_async(void* dst, const void* src, size_t n, CopyKind kind, StreamHandle s);

/// The caching device allocator (Note [CUDA caching allocator]): blocks of the current device,
/// reused on the stream they were freed on; stats and empty_cache() like the CPU one's.
Allocator* caching_allocator();
/// The device pointer of `bytes` on `s` from the caching allocator, and its release (after
/// which the block serves later allocations on the same stream).
void* raw_alloc(size_t bytes, StreamHandle s);
void raw_free(void* ptr);
/// Marks the block at ptr (a caching-allocator pointer) as used on stream s too: when freed, it
/// is reused only after the work queued on s by then has finished (Tensor.record_stream).
void record_stream(void* ptr, StreamHandle s);

/// The caching allocator of page-locked host memory (Note [Pinned host memory] in
/// CudaHostAllocator.cpp): cpu memory the device copies to and from without waiting.
Allocator* host_allocator();
/// Whether p points into page-locked host memory (this allocator's or any other).
bool is_pinned(const void* p);
/// Keeps the pinned block holding p from reuse until the work queued on s by now has run (a
/// copy that did not wait for its stream reads or writes it).
void record_host_use(const void* p, StreamHandle s);

/// A graph's private pool in the caching allocator: opened for the calling thread's capture on
/// stream s (its allocations there come from the pool), the capture's end, and the pool's close
/// when the graph is destroyed (Note [CUDA graphs] in CudaGraphs.cpp).
void open_graph_pool(int64_t pool, StreamHandle s);
void stop_graph_capture();
void close_graph_pool(int64_t pool);

/// CUDA graphs (Note [CUDA graphs]): capturing the work the calling thread queues on stream s
/// (not the legacy default stream) into a graph with a private memory pool (its id), ending the
/// capture (the instantiated graph), abandoning it after an error, replaying a graph on a
/// stream, and destroying it.
using GraphHandle = void*;
int64_t capture_graph_begin(StreamHandle s);
GraphHandle capture_graph_end(StreamHandle s, int64_t pool);
void capture_graph_abort(StreamHandle s, int64_t pool);
void replay_graph(GraphHandle g, StreamHandle s);
void destroy_graph(GraphHandle g);
/// Whether s is being captured.
bool stream_capturing(StreamHandle s);

// Kernels (CudaKernels.cu), queued on s, float32 on contiguous device memory.
void fill(float* out, float value, int64_t n, StreamHandle s);
void add(const float* a, const float* b, float alpha, float* out, int64_t n, StreamHandle s);
/// out[i] = src[offset of the i-th element in row-major order over sizes, with strides] for a
/// tensor of up to 8 dims: a strided tensor made contiguous on the device.
void gather_strided(const float* src, const int64_t* sizes, const int64_t* strides, int dims,
                    float* out, StreamHandle s);

}  // namespace retorch::cuda_backend
