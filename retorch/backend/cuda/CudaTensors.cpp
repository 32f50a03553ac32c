// CUDA tensors: the backend's registration (allocator, dispatch keys) and its copies, copy_ and
// _to_copy between cuda and cpu tensors, through which the device fallback runs every other op.
#include <cuda_runtime_api.h>

#include <cmath>
#include <optional>

#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/backend/cuda/CudaRuntime.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/device/CudaBridge.h"
#include "retorch/dispatch/Dispatcher.h"

namespace retorch {

namespace cuda_backend {

// Note [CUDA tensors]
// With a device present, cuda tensors live in device memory (the caching allocator) and carry
// the CUDA key alone. copy_ moves bytes with one cudaMemcpy when both sides are contiguous with
// one dtype; between two cuda tensors of one dtype, or of two floating dtypes, it runs a strided
// (broadcasting, converting) copy kernel on the device (copy_on_device, CudaOpsShared.cpp);
// otherwise it brings the span of device memory each cuda side occupies to the host, runs the
// CPU kernel between host views of the same geometry, and sends the destination's span back. _to_copy allocates on the
// target device and copy_es. Copies queue on the current stream (Note [CUDA streams]); those to
// and from the host then wait for it, so the host sees the data when they return, except a
// non_blocking one whose host side is pinned (Note [Pinned host memory]), which returns at once,
// as PyTorch's does; device-to-device ones do not wait. Ops with CUDA kernels
// (Note [CUDA op kernels], Note [cuBLAS products]) run on the GPU; every other op reaches the
// device fallback, which copies its cuda arguments to the cpu and its results back (Note
// [Fallback copies]). Placement follows the CUDA current device (one GPU, as on the machines
// used here). A kernel that reads a cuda tensor's data on the host by mistake gets an error, not
// a crash: TensorImpl::data() refuses memory that is not the host's (device_ptr() is the way in).

namespace {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  RT_ERROR("CUDA error in ", what, ": ", cudaGetErrorString(status));
}

// A copy in any direction on the current stream (unified addressing tells the kinds apart).
// One with a host side (`host`, else nullptr) waits for the stream, unless it need not
// (non_blocking) and the host side is pinned: then the pinned block is kept until the copy has
// run (Note [Pinned host memory]).
void copy_bytes(void* dst, const void* src, size_t n, const void* host, bool non_blocking) {
  if (n == 0) return;
  cudaStream_t s = static_cast<cudaStream_t>(current_stream());
  check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s), "cudaMemcpyAsync");
  if (host == nullptr) return;
  if (non_blocking && is_pinned(host)) return record_host_use(host, s);
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

// The host copy of the device memory a cuda tensor's elements span, and a cpu tensor with the
// tensor's geometry over it.
struct HostSpan {
  Tensor buffer, view;
  char* device = nullptr;  // the span's first byte on the device
  size_t nbytes = 0;
  HostSpan(const Tensor& t, bool read) {
    int64_t last = 0;  // the largest element offset past storage_offset
    for (int64_t d = 0; d < t.dim(); ++d) {
      RT_CHECK(t.stride(d) >= 0, "cuda copy_: negative strides are not supported");
      last += (t.size(d) - 1) * t.stride(d);
    }
    const size_t es = t.element_size();
    nbytes = size_t(last + 1) * es;
    device = static_cast<char*>(t.impl()->storage()->data()) + size_t(t.storage_offset()) * es;
    buffer = make_empty({int64_t(nbytes)}, kByte);
    if (read) copy_bytes(buffer.data_ptr(), device, nbytes, buffer.data_ptr(), false);
    auto impl = make_intrusive<TensorImpl>(buffer.impl()->storage(), t.dtype(), Device(kCPU));
    impl->set_sizes_and_strides(t.sizes(), t.strides(), 0);
    view = Tensor(std::move(impl));
  }
  void write_back() { copy_bytes(device, buffer.data_ptr(), nbytes, buffer.data_ptr(), false); }
};

Tensor copy(const Tensor& self, const Tensor& src, bool non_blocking) {
  if (self.numel() == 0) return self;
  if (self.dtype() == src.dtype() && self.sizes().equals(src.sizes()) && self.is_contiguous() &&
      src.is_contiguous()) {
    const void* host = !in_device_memory(self) ? device_ptr(self)
                       : !in_device_memory(src) ? device_ptr(src) : nullptr;
    copy_bytes(device_ptr(self), device_ptr(src), size_t(self.numel()) * self.element_size(),
               host, non_blocking);
    return self;
  }
  if (copy_on_device(self, src)) return self;  // Note [CUDA op kernels]
  std::optional<HostSpan> from, to;
  if (in_device_memory(src)) from.emplace(src, true);
  if (in_device_memory(self)) to.emplace(self, true);  // keeps the span's other bytes
  {
    ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
    Tensor(to ? to->view : self).copy_(from ? from->view : src);
  }
  if (to) to->write_back();
  return self;
}

void copy_kernel(const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Tensor self = (*stack)[stack->size() - 3].to_tensor();
  Tensor src = (*stack)[stack->size() - 2].to_tensor();
  copy(self, src, stack->back().to_bool());
  stack->erase(stack->end() - 3, stack->end());
  stack->push_back(IValue(self));
}

void to_copy_kernel(const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Tensor self = (*stack)[stack->size() - 4].to_tensor();
  const IValue& dt = (*stack)[stack->size() - 3];
  const IValue& dev = (*stack)[stack->size() - 2];
  const bool non_blocking = stack->back().to_bool();
  const ScalarType dtype = dt.is_none() ? self.dtype() : dt.to_scalar_type();
  const Device device = dev.is_none() ? self.device() : dev.to_device();
  Tensor out = make_empty(self.sizes(), dtype, device);
  copy(out, self, non_blocking);
  stack->erase(stack->end() - 4, stack->end());
  stack->push_back(IValue(out));
}

// empty and empty_strided on a cuda device: the caching allocator's memory, uninitialized, as
// on the cpu (without them, factories went through the fallback: a host allocation copied over).
template <bool strided>
void empty_kernel(const OperatorHandle&, DispatchKeySet, Stack* stack) {
  const size_t n = strided ? 4 : 3;  // (size, [stride,] dtype, device)
  const IValue* a = &(*stack)[stack->size() - n];
  std::vector<int64_t> size = a[0].to_int_list();
  for (int64_t s : size)
    RT_CHECK_VALUE(s >= 0, "empty: Trying to create tensor with negative dimension ", s, ": ",
                   IntArrayRef(size));
  const IValue& dt = a[n - 2];
  const ScalarType dtype = dt.is_none() ? default_dtype() : dt.to_scalar_type();
  const Device device = a[n - 1].to_device();
  Tensor out;
  if constexpr (strided) {
    std::vector<int64_t> stride = a[1].to_int_list();
    RT_CHECK_VALUE(size.size() == stride.size(),
                   "empty_strided: mismatch in length of strides and shape");
    out = make_empty_strided(size, stride, dtype, device);
  } else {
    out = make_empty(size, dtype, device);
  }
  stack->erase(stack->end() - std::ptrdiff_t(n), stack->end());
  stack->push_back(IValue(out));
}

}  // namespace

}  // namespace cuda_backend

namespace detail {

// Called by Dispatcher::singleton() once the generated tables exist (backend/no_cuda has the
// build without CUDA): with a device, cuda tensors get device memory and the CUDA key.
void register_cuda_backend(Dispatcher& d) {
  if (cuda_backend::device_count() == 0) return;
  set_allocator(kCUDA, cuda_backend::caching_allocator());
  set_device_key_set(kCUDA, DispatchKeySet(DispatchKey::CUDA));
  d.find("copy_")->set_kernel(DispatchKey::CUDA, make_boxed_kernel(&cuda_backend::copy_kernel));
  d.find("_to_copy")->set_kernel(DispatchKey::CUDA,
                                 make_boxed_kernel(&cuda_backend::to_copy_kernel));
  d.find("empty")->set_kernel(DispatchKey::CUDA,
                              make_boxed_kernel(&cuda_backend::empty_kernel<false>));
  d.find("empty_strided")
      ->set_kernel(DispatchKey::CUDA, make_boxed_kernel(&cuda_backend::empty_kernel<true>));
  // clone's kernel is device-generic (an empty tensor on self's device, then a dispatched copy_,
  // here the device copy above): without it every clone took the fallback's two host copies.
  OperatorHandle* clone = d.find("clone");
  clone->set_kernel(DispatchKey::CUDA, clone->kernel(DispatchKey::CPU));
  cuda_backend::register_pointwise_ops(d);
  cuda_backend::register_fill_ops(d);
  cuda_backend::register_row_ops(d);
  cuda_backend::register_llm_ops(d);
  cuda_backend::register_dnn_ops(d);
  cuda_backend::register_norm_ops(d);
  cuda_backend::register_blas_ops(d);
  cuda_backend::register_index_ops(d);
  cuda_backend::register_factory_ops(d);
  cuda_backend::register_image_ops(d);
  cuda_backend::register_count_ops(d);
  cuda_backend::register_gather_ops(d);
  cuda_backend::register_linalg_ops(d);
}

bool cuda_backend_available() { return cuda_backend::device_count() > 0; }
int cuda_backend_device_count() { return cuda_backend::device_count(); }

void cuda_backend_synchronize(int index) { cuda_backend::synchronize(index); }

int64_t cuda_backend_stream_create(int device, int priority) {
  return cuda_backend::pool_stream(device, priority);
}
int64_t cuda_backend_current_stream(int device) { return cuda_backend::current_stream_id(device); }
void cuda_backend_set_stream(int device, int64_t id) {
  cuda_backend::set_current_stream(device, id);
}
bool cuda_backend_stream_query(int device, int64_t id) {
  return cuda_backend::query_stream(cuda_backend::stream_handle(device, id));
}
void cuda_backend_stream_synchronize(int device, int64_t id) {
  cuda_backend::synchronize_stream(cuda_backend::stream_handle(device, id));
}
void cuda_backend_stream_wait_event(int device, int64_t id, void* event) {
  cuda_backend::stream_wait_event(cuda_backend::stream_handle(device, id), event);
}
void cuda_backend_record_stream(void* data, int device, int64_t id) {
  cuda_backend::record_stream(data, cuda_backend::stream_handle(device, id));
}

Allocator* cuda_backend_host_allocator() {
  return cuda_backend::device_count() > 0 ? cuda_backend::host_allocator() : nullptr;
}
bool cuda_backend_is_pinned(const void* p) { return cuda_backend::is_pinned(p); }

int64_t cuda_backend_graph_begin(int device, int64_t stream) {
  return cuda_backend::capture_graph_begin(cuda_backend::stream_handle(device, stream));
}
void* cuda_backend_graph_end(int device, int64_t stream, int64_t pool) {
  return cuda_backend::capture_graph_end(cuda_backend::stream_handle(device, stream), pool);
}
void cuda_backend_graph_abort(int device, int64_t stream, int64_t pool) {
  cuda_backend::capture_graph_abort(cuda_backend::stream_handle(device, stream), pool);
}
void cuda_backend_graph_replay(void* graph, int device, int64_t stream) {
  cuda_backend::replay_graph(graph, cuda_backend::stream_handle(device, stream));
}
void cuda_backend_graph_destroy(void* graph) { cuda_backend::destroy_graph(graph); }
bool cuda_backend_stream_capturing(int device, int64_t stream) {
  return cuda_backend::stream_capturing(cuda_backend::stream_handle(device, stream));
}

void* cuda_backend_event_create(bool enable_timing) {
  return cuda_backend::create_event(enable_timing);
}
void cuda_backend_event_destroy(void* event) { cuda_backend::destroy_event(event); }
void cuda_backend_event_record(void* event, int device, int64_t stream) {
  cuda_backend::record_event(event, cuda_backend::stream_handle(device, stream));
}
bool cuda_backend_event_query(void* event) { return cuda_backend::query_event(event); }
void cuda_backend_event_synchronize(void* event) { cuda_backend::synchronize_event(event); }
double cuda_backend_event_elapsed_ms(void* start, void* end) {
  float ms = 0;
  return cuda_backend::wait_elapsed_ms(start, end, &ms) ? double(ms) : std::nan("");
}

}  // namespace detail

}  // namespace retorch
