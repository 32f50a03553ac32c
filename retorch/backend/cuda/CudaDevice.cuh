// What the CUDA backend's kernel files share (.cu only): element loads and stores through the
// accumulation type, block reductions, launch sizes and checks, and dispatch over element types.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"
#include "retorch/core/Error.h"

namespace retorch::cuda_backend {

constexpr int kThreads = 256;  // a block of the elementwise and row kernels

/// The type an element type computes in: float for float and the 16-bit floats, double for
/// double (PyTorch's opmath types).
template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };
template <> struct Acc<int32_t> { using type = int32_t; };  // integers compute as themselves
template <> struct Acc<int64_t> { using type = int64_t; };
template <typename T> using acc_t = typename Acc<T>::type;

__device__ inline float load(const float* p) { return *p; }
__device__ inline double load(const double* p) { return *p; }
__device__ inline float load(const __half* p) { return __half2float(*p); }
__device__ inline float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ inline int32_t load(const int32_t* p) { return *p; }
__device__ inline int64_t load(const int64_t* p) { return *p; }
__device__ inline bool load(const bool* p) { return *p; }

// 16-bit stores round to nearest even; bool stores any nonzero as true.
__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline void store(float* p, double v) { *p = float(v); }
__device__ inline void store(double* p, double v) { *p = v; }
__device__ inline void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ inline void store(__half* p, double v) { *p = __float2half_rn(float(v)); }
__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ inline void store(__nv_bfloat16* p, double v) { *p = __float2bfloat16_rn(float(v)); }
__device__ inline void store(bool* p, float v) { *p = v != 0; }
__device__ inline void store(bool* p, double v) { *p = v != 0; }
__device__ inline void store(int32_t* p, int32_t v) { *p = v; }
__device__ inline void store(int64_t* p, int64_t v) { *p = v; }
__device__ inline void store(bool* p, int32_t v) { *p = v != 0; }
__device__ inline void store(bool* p, int64_t v) { *p = v != 0; }
__device__ inline void store(bool* p, bool v) { *p = v; }

/// f(a, b) of the block's values, in every thread: lanes combine with shuffles, warps through
/// `shared` (32 values), `identity` filling the missing warps' places.
template <typename A, typename F>
__device__ A block_reduce(A v, A identity, F f, A* shared) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // an earlier call's readers are done with shared
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename A>
__device__ A block_sum(A v, A* shared) {
  return block_reduce(v, A(0), [](A a, A b) { return a + b; }, shared);
}

/// Enough blocks of kThreads to cover n (grid-stride loops take the rest past 65535).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535 ? (b < 1 ? 1 : b) : 65535);
}

/// Raises the launch's error, if any, naming the kernel.
inline void check_launch(const char* what) {
  const cudaError_t status = cudaGetLastError();
  RT_CHECK(status == cudaSuccess, "CUDA kernel launch failed (", what, "): ",
           cudaGetErrorString(status));
}

inline cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

// Note [Dependent launches]
// A batch-1 decode step is a chain of short kernels, and each waits for the one before it to
// finish, drain and be replaced: microseconds of an idle GPU per boundary, a hundred and more
// boundaries a step. On sm_90 a kernel launched as a programmatic dependent
// (cudaLaunchAttributeProgrammaticStreamSerialization; captured into CUDA graphs as
// programmatic edges) may start as soon as every block of the kernel before it has run
// `griddepcontrol.launch_dependents` (let_next_kernel_start), or has exited; it must run
// `griddepcontrol.wait` (wait_for_previous_kernel) before it reads what earlier kernels wrote,
// and before it writes anything at all: its outputs may be memory the stream's allocator just
// handed back from a tensor the kernel before it still reads. The GEMVs of the decode
// projections launch this way: before the wait they only ask L2 to fetch their weight rows
// (constant, written by nobody in the step), so the weights of the next projection stream in
// while the attention kernel, or the projection before it, is still running. The GEMVs and
// paged attention let the next kernel start as soon as they start. Without sm_90 the
// instructions compile to nothing and launches are plain; RETORCH_CUDA_PDL=0 turns the
// dependent launches off (to measure them), and a launch the driver refuses turns them off for
// the process and launches plainly.

/// Waits until the kernel before this one in the stream has finished and its writes are
/// visible (immediate unless this kernel was launched as a dependent).
__device__ inline void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets a dependent kernel after this one start its blocks now (a hint; no effect otherwise).
__device__ inline void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Asks L2 to fetch the 128-byte line holding p.
__device__ inline void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/// Asks L2 for the lines of [p, p + bytes), thread t of `threads` taking every threads-th line.
__device__ inline void prefetch_bytes(const void* p, int64_t bytes, int t, int threads) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = int64_t(t) * 128; off < bytes; off += int64_t(threads) * 128)
    prefetch_l2(c + off);
}

/// kernel<<<grid, block, shared, s>>>(args...), as a programmatic dependent where
/// dependent_launches() allows (Note [Dependent launches]). The kernel must call
/// wait_for_previous_kernel() before it reads earlier kernels' outputs or writes anything.
template <typename... Params, typename... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                      StreamHandle s, Args... args) {
  if (dependent_launches()) {
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared;
    config.stream = as_stream(s);
    cudaLaunchAttribute attribute[1] = {};
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    if (cudaLaunchKernelEx(&config, kernel, Params(args)...) == cudaSuccess) return;
    (void)cudaGetLastError();  // refused: plain launches from now on
    disable_dependent_launches();
  }
  kernel<<<grid, block, shared, as_stream(s)>>>(Params(args)...);
}

template <typename T> struct Tag { using type = T; };

/// Calls f(Tag<T>{}) with the C++ element type of t.
template <typename F>
void with_type(FloatType t, F&& f) {
  switch (t) {
    case FloatType::kFloat: return f(Tag<float>{});
    case FloatType::kDouble: return f(Tag<double>{});
    case FloatType::kHalf: return f(Tag<__half>{});
    case FloatType::kBFloat16: return f(Tag<__nv_bfloat16>{});
  }
  RT_ERROR("cuda: unknown element type ", int(t));
}

/// Calls f(Tag<E>{}) with the C++ element type of t.
template <typename F>
void with_numeric_type(NumericType t, F&& f) {
  switch (t) {
    case NumericType::kFloat: return f(Tag<float>{});
    case NumericType::kDouble: return f(Tag<double>{});
    case NumericType::kHalf: return f(Tag<__half>{});
    case NumericType::kBFloat16: return f(Tag<__nv_bfloat16>{});
    case NumericType::kInt8: return f(Tag<int8_t>{});
    case NumericType::kUInt8: return f(Tag<uint8_t>{});
    case NumericType::kInt16: return f(Tag<int16_t>{});
    case NumericType::kInt32: return f(Tag<int32_t>{});
    case NumericType::kInt64: return f(Tag<int64_t>{});
  }
  RT_ERROR("cuda: unknown element type ", int(t));
}

/// Calls f(Tag<E>{}) with an unsigned type of `size` bytes (1, 2, 4 or 8): kernels that move
/// elements without looking at them.
template <typename F>
void with_element_size(int64_t size, const char* what, F&& f) {
  switch (size) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    case 8: return f(Tag<uint64_t>{});
  }
  RT_ERROR("cuda ", what, ": elements of ", size, " bytes are not supported");
}

}  // namespace retorch::cuda_backend
