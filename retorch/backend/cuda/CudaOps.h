// The CUDA backend's op kernels: registration at the CUDA key, and the helpers the kernel files
// share (device pointers, geometries over tensors, the device fallback for unsupported calls).
#pragma once
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "retorch/backend/cuda/CudaIndex.h"
#include "retorch/backend/cuda/CudaPointwise.h"
#include "retorch/core/Generator.h"
#include "retorch/core/Tensor.h"
#include "retorch/dispatch/Dispatcher.h"

namespace retorch::cuda_backend {

/// Whether t's storage is device memory (a cuda tensor of a build and machine with a device).
bool in_device_memory(const Tensor& t);
/// The address of t's first element, host or device (TensorImpl::data() refuses device memory).
void* device_ptr(const Tensor& t);
/// The pointwise kernels' element type for a dtype, if they have one.
std::optional<FloatType> float_type(ScalarType t);
/// t's strides broadcast to `shape` (t's dims aligned right; 0 where t has size 1 or no dim).
DimVector broadcast_strides(const Tensor& t, IntArrayRef shape);
/// t's element strides.
DimVector strides_of(const Tensor& t);
/// The geometry of `shape` with operand k's strides in strides[k] (make_geometry over tensors'
/// shapes); false when it needs more than kMaxGeometryDims dims.
template <int N>
bool geometry_of(IntArrayRef shape, const DimVector (&strides)[N], Geometry<N>* g) {
  const int64_t* p[N];
  for (int k = 0; k < N; ++k) p[k] = strides[k].data();
  return make_geometry<N>(shape.data(), int(shape.size()), p, g);
}
/// t converted to dtype `to` on the device (contiguous); nullopt when the cast or its geometry
/// is not the device's.
std::optional<Tensor> converted(const Tensor& t, ScalarType to);
/// The bit pattern of `value` in dtype (elements of 1, 2, 4 or 8 bytes), as a cpu tensor of that
/// dtype filled with it holds it: what the fill kernels write.
uint64_t bits_of(ScalarType dtype, const Scalar& value);
/// The generator an op's optional Generator argument names (the default one for None).
Generator& generator_arg(const IValue& a);
/// Runs the call through the device fallback (copies to the cpu and back): what a CUDA kernel
/// does with arguments it has no kernel for.
void run_device_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack);
/// t as contiguous device memory: itself when it already is, else a copy made on the device.
Tensor contiguous_on_device(const Tensor& t);
/// A boxed CUDA kernel of the form every kernel file uses, set at h's CUDA key.
using CudaKernel = void (*)(const OperatorHandle& op, DispatchKeySet ks, Stack* stack);
void set_cuda_kernel(OperatorHandle* h, CudaKernel k);
/// The op's name without its in-place '_' (add_ -> add): what the registration tables match.
std::string_view base_name(const OpSchema& s);
/// set_cuda_kernel for a kernel written for NCHW: a functional call whose first argument is
/// channels-last runs on NCHW copies and gets channels-last results (Note [Channels-last
/// through NCHW]).
void set_cuda_kernel_nchw(OperatorHandle* h, CudaKernel k);
/// Device-to-device copy_ on the GPU (same dtype, or between floating dtypes, src broadcast
/// to dst); false when the pair needs the host path.
bool copy_on_device(const Tensor& dst, const Tensor& src);

/// This thread's handle of a library whose handles must not be shared between threads (cuBLAS,
/// cuDNN): made by create() (which raises when it cannot) on the thread's first call, and
/// handed to a pool when the thread ends, from which a later thread takes it (a handle holds
/// device memory, so a thread pool's churn must not make new ones).
template <typename Handle, typename Create>
Handle thread_handle(const Create& create) {
  struct Pool {
    std::mutex mu;
    std::vector<Handle> free;
  };
  static Pool* pool = new Pool();  // outlives the threads that return their handles
  struct Lease {
    Handle h = nullptr;
    ~Lease() {
      if (h == nullptr) return;
      std::lock_guard<std::mutex> lock(pool->mu);
      pool->free.push_back(h);
    }
  };
  thread_local Lease lease;
  if (lease.h == nullptr) {
    {
      std::lock_guard<std::mutex> lock(pool->mu);
      if (!pool->free.empty()) {
        lease.h = pool->free.back();
        pool->free.pop_back();
      }
    }
    if (lease.h == nullptr) lease.h = create();
  }
  return lease.h;
}

/// The factory and counting kernels' element type for a numeric dtype (not bool), if any.
std::optional<NumericType> numeric_type(ScalarType t);
/// The sort kernels' key type for a dtype (bool sorting as bytes), if any.
std::optional<SortType> sort_type(ScalarType t);
/// Whether t is in device memory with a floating dtype the kernels compute in.
inline bool on_device(const Tensor& t) { return in_device_memory(t) && float_type(t.dtype()); }
/// Whether t is a tensor of x's dtype in x's device memory.
inline bool alongside(const Tensor& t, const Tensor& x) {
  return t.defined() && in_device_memory(t) && t.device() == x.device() && t.dtype() == x.dtype();
}
/// The cast kernel's element type for a dtype (numeric or bool), if any.
std::optional<CastType> cast_type(ScalarType t);
/// Pops the call's arguments and pushes its results in order (a multi-output op's, one by one).
void push_results(const OpSchema& s, std::initializer_list<Tensor> outs, Stack* stack);
/// A meta tensor of t's shape and dtype: the cpu kernels run on those check a call's arguments
/// and size its results without touching data (Note [Meta through CPU kernels]).
inline Tensor meta_like(const Tensor& t) { return make_empty(t.sizes(), t.dtype(), Device(kMeta)); }
/// Device memory for a library's temporary storage (CUB's): blocks from the caching allocator,
/// held until the call returns (the allocator's blocks are stream-ordered, so freeing them after
/// the queued work is safe). get() is the callback the launchers take.
struct Scratch {
  Device device;
  std::vector<Tensor> held;
  static void* get(void* ctx, size_t bytes) {
    auto* s = static_cast<Scratch*>(ctx);
    s->held.push_back(make_empty({int64_t(bytes > 0 ? bytes : 1)}, kByte, s->device));
    return device_ptr(s->held.back());
  }
};

/// Which variant of an op a schema names: `exp` (allocates), `exp_` (writes self), `exp.out`.
enum class Variant { kFunctional, kInplace, kOut };
Variant variant_of(const OpSchema& s);
/// Pops the call's arguments and pushes its result (bumping the version of a written tensor).
void finish_call(const OpSchema& s, Variant v, const Tensor& out, Stack* stack);

/// Registers the pointwise kernels (CudaOps.cpp), the row ops (CudaRowOps.cpp), the LLM path's
/// ops (CudaLlmOps.cpp), the cuDNN convolutions (CudaDnn.cpp), batch norm and max pool
/// (CudaNormOps.cpp), the cuBLAS products (CudaBlas.cpp), the index ops (CudaIndexOps.cpp) and
/// the factories (CudaFactoryOps.cpp).
void register_pointwise_ops(Dispatcher& d);
/// fill_, zero_, where, masked_fill, cat, uniform_ and normal_ (CudaFillOps.cpp).
void register_fill_ops(Dispatcher& d);
void register_row_ops(Dispatcher& d);
void register_llm_ops(Dispatcher& d);
void register_dnn_ops(Dispatcher& d);
void register_norm_ops(Dispatcher& d);
void register_blas_ops(Dispatcher& d);
void register_index_ops(Dispatcher& d);
void register_factory_ops(Dispatcher& d);
/// Resizing, adaptive max pool and group norm (CudaImageOps.cpp).
void register_image_ops(Dispatcher& d);
/// histc, bincount, searchsorted, repeat_interleave and unique (CudaCountOps.cpp).
void register_count_ops(Dispatcher& d);
/// im2col/col2im, scatter_reduce, _embedding_bag and embedding_renorm_ (CudaGatherOps.cpp).
void register_gather_ops(Dispatcher& d);
/// The LAPACK ops through cuSOLVER, and the triangular solve through cuBLAS (CudaLinalg.cpp).
void register_linalg_ops(Dispatcher& d);

}  // namespace retorch::cuda_backend
