// The CUDA index kernel: gathers, scatters, accumulating scatters and fills through index
// tensors over an offset-calculator geometry (Note [CUDA index kernels] in CudaIndex.h).
#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaIndex.h"

namespace retorch::cuda_backend {

namespace {

template <typename E>
struct Gather {
  E* plain;
  const E* indexed;
  __device__ void operator()(int64_t o, int64_t at) const { plain[o] = indexed[at]; }
};

template <typename E>
struct Scatter {
  const E* plain;
  E* indexed;
  __device__ void operator()(int64_t o, int64_t at) const { indexed[at] = plain[o]; }
};

template <typename E>
struct Fill {
  E* indexed;
  E value;
  __device__ void operator()(int64_t, int64_t at) const { indexed[at] = value; }
};

__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(__half* p, __half v) { atomicAdd(p, v); }
__device__ inline void atomic_add(__nv_bfloat16* p, __nv_bfloat16 v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int32_t* p, int32_t v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int64_t* p, int64_t v) {  // two's complement: wraps as torch
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

template <typename T>
struct Accumulate {
  const T* plain;
  T* indexed;
  __device__ void operator()(int64_t o, int64_t at) const { atomic_add(indexed + at, plain[o]); }
};

__device__ const char* const kIndexOpNames[] = {"index", "index_put", "gather", "scatter",
                                                "index_select"};

template <typename Index, typename Op>
__global__ void indexed_kernel(OffsetCalc<kIndexOperands, Index> c, Index n, IndexTensors idx,
                               Op op) {
  for (Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += Index(gridDim.x) * blockDim.x) {
    Index o[kIndexOperands];
    c.offsets(i, o);
    int64_t at = o[1];
    for (int k = 0; k < idx.count; ++k) {
      const int64_t v = idx.values[k][o[2 + k]], size = idx.size[k];
      if (v < (idx.wrap ? -size : 0) || v >= size) {  // RT_DEVICE_CHECK, naming the op
        printf("retorch CUDA kernel: %s: an index is out of range\n", kIndexOpNames[int(idx.op)]);
        __trap();
      }
      at += (v < 0 ? v + size : v) * idx.stride[k];
    }
    op(int64_t(o[0]), at);
  }
}

template <typename Op>
void run(const Geometry<kIndexOperands>& g, const IndexTensors& idx, const Op& op,
         StreamHandle s) {
  if (g.fits_32bit())
    indexed_kernel<int32_t><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
        g.calc<int32_t>(), int32_t(g.numel), idx, op);
  else
    indexed_kernel<int64_t><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
        g.calc<int64_t>(), g.numel, idx, op);
}

template <typename F>
void with_add_type(AddType t, F&& f) {
  switch (t) {
    case AddType::kFloat: return f(Tag<float>{});
    case AddType::kDouble: return f(Tag<double>{});
    case AddType::kHalf: return f(Tag<__half>{});
    case AddType::kBFloat16: return f(Tag<__nv_bfloat16>{});
    case AddType::kInt: return f(Tag<int32_t>{});
    case AddType::kLong: return f(Tag<int64_t>{});
  }
  RT_ERROR("cuda index: unknown accumulation type ", int(t));
}

}  // namespace

void launch_indexed(IndexMode mode, int64_t element_size, AddType add,
                    const Geometry<kIndexOperands>& g, void* plain, void* indexed,
                    const IndexTensors& idx, uint64_t fill_bits, StreamHandle s) {
  if (g.numel == 0) return;
  if (mode == IndexMode::kAccumulate) {
    with_add_type(add, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run(g, idx, Accumulate<T>{static_cast<const T*>(plain), static_cast<T*>(indexed)}, s);
    });
  } else {
    with_element_size(element_size, "index", [&](auto tag) {
      using E = typename decltype(tag)::type;
      if (mode == IndexMode::kGather)
        run(g, idx, Gather<E>{static_cast<E*>(plain), static_cast<const E*>(indexed)}, s);
      else if (mode == IndexMode::kScatter)
        run(g, idx, Scatter<E>{static_cast<const E*>(plain), static_cast<E*>(indexed)}, s);
      else
        run(g, idx, Fill<E>{static_cast<E*>(indexed), static_cast<E>(fill_bits)}, s);
    });
  }
  check_launch("index");
}

}  // namespace retorch::cuda_backend
