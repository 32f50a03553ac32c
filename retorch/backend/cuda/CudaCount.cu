// CUDA kernels of the counting ops: histc and bincount (atomic counts), searchsorted (a binary
// search per value), repeat_interleave's index and unique's runs (over CUB's running sums).
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "retorch/backend/cuda/CudaCount.h"
#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaGeometry.h"

namespace retorch::cuda_backend {

// Note [CUDA counting ops]
// These ops have results whose size depends on the data (bincount's max + 1, repeat_interleave's
// sum, unique's number of runs) or a range read from it (histc with min == max), so each reads
// one small device buffer back to the host, the synchronization PyTorch's CUDA kernels have too:
// bincount reads min and max together (a negative min takes the fallback, whose cpu kernel
// raises), histc min and max, repeat_interleave the total with a negative flag (none when
// output_size is given: a device check then stops a wrong size), unique its number of runs.
// Counts are atomic adds: histc into 32-bit counters in shared memory per block when the bins fit
// (kSharedBins), flushed into 64-bit global counters; bincount straight into its result, so
// weighted sums are added in an unspecified order (float32 weights in float32, as the cpu's).
// histc bins exactly as the cpu's kernel: in the input's accumulation type, (v - lo) * bins /
// (hi - lo) truncated, the right edge in the last bin, a NaN in the first (PyTorch 1.13).
// searchsorted compares as the cpu's (NaN moves right); a sorter index out of range stops the
// kernel (RT_DEVICE_CHECK). unique sorts with CUB (launch_sort_rows) on the host side; here a run
// starts where neighbours differ by value (-0.0 == 0.0, NaN != NaN, as the cpu's groups), a
// running sum of the starts numbers the runs, and one pass writes values, inverse and run
// starts, whose differences are the counts.

namespace {

constexpr int kSharedBins = 4096;  // histc's per-block counters (16 KB of shared memory)

// A value as the kernels compare and bin it: 16-bit floats as float, others as themselves.
template <typename T>
__device__ inline T value_of(const T* p) {
  return *p;
}
__device__ inline float value_of(const __half* p) { return __half2float(*p); }
__device__ inline float value_of(const __nv_bfloat16* p) { return __bfloat162float(*p); }

// min and max where a NaN wins (x != x only for NaN; integers never).
template <typename A>
__device__ inline A min_nan(A a, A b) {
  return a != a ? a : (b != b ? b : (b < a ? b : a));
}
template <typename A>
__device__ inline A max_nan(A a, A b) {
  return a != a ? a : (b != b ? b : (a < b ? b : a));
}

// Each block's min of lo_in and max of hi_in (n > 0 elements each) into lo_out[block] and
// hi_out[block]: grid-stride partials, then a tree in shared memory (blockDim.x == kThreads).
template <typename T, typename A>
__global__ void min_max_kernel(const T* lo_in, const T* hi_in, int64_t n, A* lo_out, A* hi_out) {
  __shared__ A lo[kThreads], hi[kThreads];
  A l = A(value_of(lo_in)), h = A(value_of(hi_in));
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    l = min_nan(l, A(value_of(lo_in + i)));
    h = max_nan(h, A(value_of(hi_in + i)));
  }
  lo[threadIdx.x] = l;
  hi[threadIdx.x] = h;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      lo[threadIdx.x] = min_nan(lo[threadIdx.x], lo[threadIdx.x + s]);
      hi[threadIdx.x] = max_nan(hi[threadIdx.x], hi[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    lo_out[blockIdx.x] = lo[0];
    hi_out[blockIdx.x] = hi[0];
  }
}

// histc's bin of v, or -1 outside [left, right]. See Note [CUDA counting ops].
template <typename C>
__device__ inline int64_t bin_of(C v, C left, C right, int64_t bins) {
  if (v < left || v > right) return -1;
  if (v != v) return 0;
  const int64_t pos = int64_t((v - left) * C(bins) / (right - left));
  return pos >= bins ? bins - 1 : pos;
}

// bins <= kSharedBins: counts in shared memory, added to the global counts once per block.
template <typename T, typename C>
__global__ void histc_shared_kernel(const T* in, int64_t n, int64_t bins, C left, C right,
                                    unsigned long long* counts) {
  __shared__ unsigned int local[kSharedBins];
  for (int64_t b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = bin_of(C(value_of(in + i)), left, right, bins);
    if (b >= 0) atomicAdd(&local[b], 1u);
  }
  __syncthreads();
  for (int64_t b = threadIdx.x; b < bins; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&counts[b], (unsigned long long)local[b]);
}

template <typename T, typename C>
__global__ void histc_global_kernel(const T* in, int64_t n, int64_t bins, C left, C right,
                                    unsigned long long* counts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = bin_of(C(value_of(in + i)), left, right, bins);
    if (b >= 0) atomicAdd(&counts[b], 1ull);
  }
}

// The counts in the result's dtype (through double, as the cpu's).
template <typename T>
__global__ void counts_to_kernel(const unsigned long long* counts, int64_t bins, T* out) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < bins;
       b += int64_t(gridDim.x) * blockDim.x)
    store(out + b, double(counts[b]));
}

template <typename I>
__global__ void bincount_kernel(const I* in, int64_t n, unsigned long long* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(out + int64_t(in[i]), 1ull);
}

template <typename I, typename W>
__global__ void bincount_weighted_kernel(const I* in, const W* w, int64_t n, W* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(out + int64_t(in[i]), w[i]);
}

// The cpu's binary search: the first place whose boundary is > x (right) or >= x (left).
template <typename T, typename O>
__global__ void searchsorted_kernel(const T* seq, const T* values, const int64_t* sorter,
                                    int64_t n, int64_t L, int64_t per_row, bool right, O* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = per_row == 0 ? 0 : i / per_row;
    const T* base = seq + row * L;
    const int64_t* order = sorter == nullptr ? nullptr : sorter + row * L;
    const auto x = value_of(values + i);
    int64_t lo = 0, hi = L;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      int64_t j = mid;
      if (order != nullptr) {
        j = order[mid];
        RT_DEVICE_CHECK(j >= 0 && j < L, "searchsorted's sorter index");
      }
      const auto a = value_of(base + j);
      const bool go_right = right ? !(a > x) : !(a >= x);
      if (go_right) lo = mid + 1;
      else hi = mid;
    }
    out[i] = O(lo);
  }
}

// The repeats as int64, flagging a negative one in summary[1] (zeroed before).
template <typename R>
__global__ void repeats_kernel(const R* r, int64_t n, int64_t* out, int64_t* summary) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t v = int64_t(r[i]);
    out[i] = v;
    if (v < 0) summary[1] = 1;
  }
}

__global__ void repeat_check_kernel(const int64_t* summary, int64_t expect_total) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    RT_DEVICE_CHECK(summary[1] == 0 && summary[0] == expect_total,
                    "repeat_interleave's output_size (or a negative repeat)");
}

// out[j] = the first i whose running sum is above j.
template <typename O>
__global__ void repeat_fill_kernel(const int64_t* cum, int64_t n, int64_t total, O* out) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (cum[mid] > j) hi = mid;
      else lo = mid + 1;
    }
    out[j] = O(lo);
  }
}

template <typename T>
__global__ void run_starts_kernel(const T* sorted, int64_t n, int64_t* starts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    starts[i] = i == 0 || !(value_of(sorted + i) == value_of(sorted + i - 1)) ? 1 : 0;
}

// ids[i] = 1 + i's run: each run's first element writes its value and place (places[u] = n).
template <typename T>
__global__ void unique_scatter_kernel(const T* sorted, const int64_t* perm, const int64_t* ids,
                                      int64_t n, int64_t u, T* values, int64_t* inverse,
                                      int64_t* places) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = ids[i] - 1;
    if (i == 0 || ids[i] != ids[i - 1]) {
      values[g] = sorted[i];
      if (places != nullptr) places[g] = i;
    }
    if (inverse != nullptr) inverse[perm[i]] = g;
    if (i == 0 && places != nullptr) places[u] = n;
  }
}

__global__ void run_lengths_kernel(const int64_t* places, int64_t u, int64_t* counts) {
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < u;
       g += int64_t(gridDim.x) * blockDim.x)
    counts[g] = places[g + 1] - places[g];
}

}  // namespace

namespace {

void check(cudaError_t e, const char* what) {
  RT_CHECK(e == cudaSuccess, "cuda ", what, ": ", cudaGetErrorString(e));
}

// At most 1024 blocks: the kernels that add per-block partials (min/max, shared histc) loop.
unsigned capped_blocks(int64_t n) { return std::min(blocks_for(n), 1024u); }

template <typename T, typename A>
void min_max(const T* in, int64_t n, A* out, ScratchFn scratch, void* ctx, cudaStream_t st) {
  RT_CHECK(n > 0, "cuda min/max: no elements");
  const unsigned blocks = capped_blocks(n);
  A* partial = static_cast<A*>(scratch(ctx, 2 * size_t(blocks) * sizeof(A)));
  min_max_kernel<T, A><<<blocks, kThreads, 0, st>>>(in, in, n, partial, partial + blocks);
  check_launch("min/max partials");
  min_max_kernel<A, A><<<1, kThreads, 0, st>>>(partial, partial + blocks, blocks, out, out + 1);
  check_launch("min/max");
}

// n running sums of int64 `in` into `out` (CUB's scan, its scratch from `scratch`).
void running_sums(const int64_t* in, int64_t* out, int64_t n, ScratchFn scratch, void* ctx,
                  cudaStream_t st) {
  size_t bytes = 0;
  check(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, n, st), "scan (scratch size)");
  check(cub::DeviceScan::InclusiveSum(scratch(ctx, bytes), bytes, in, out, n, st), "scan");
}

// Calls f(Tag<T>{}) with the integer element type t (the float types are refused).
template <typename F>
void with_int_type(NumericType t, const char* what, F&& f) {
  switch (t) {
    case NumericType::kInt8: return f(Tag<int8_t>{});
    case NumericType::kUInt8: return f(Tag<uint8_t>{});
    case NumericType::kInt16: return f(Tag<int16_t>{});
    case NumericType::kInt32: return f(Tag<int32_t>{});
    case NumericType::kInt64: return f(Tag<int64_t>{});
    default: RT_ERROR("cuda ", what, ": not an integer type ", int(t));
  }
}

}  // namespace

void launch_min_max_float(FloatType t, const void* in, int64_t n, double* out, ScratchFn scratch,
                          void* ctx, StreamHandle s) {
  with_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    min_max<T, double>(static_cast<const T*>(in), n, out, scratch, ctx, as_stream(s));
  });
}

void launch_min_max_int(NumericType t, const void* in, int64_t n, int64_t* out,
                        ScratchFn scratch, void* ctx, StreamHandle s) {
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    min_max<T, int64_t>(static_cast<const T*>(in), n, out, scratch, ctx, as_stream(s));
  };
  with_int_type(t, "min/max", go);
}

void launch_histc(FloatType t, const void* in, int64_t n, int64_t bins, double lo, double hi,
                  void* out, ScratchFn scratch, void* ctx, StreamHandle s) {
  const cudaStream_t st = as_stream(s);
  auto* counts = static_cast<unsigned long long*>(scratch(ctx, size_t(bins) * 8));
  check(cudaMemsetAsync(counts, 0, size_t(bins) * 8, st), "histc");
  with_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    // The edges rounded to the input's type first, as the cpu's (16-bit types from float).
    const C left = C(T(C(lo))), right = C(T(C(hi)));
    const T* x = static_cast<const T*>(in);
    if (n > 0 && bins <= kSharedBins)
      histc_shared_kernel<T, C><<<capped_blocks(n), kThreads, 0, st>>>(x, n, bins, left, right,
                                                                        counts);
    else if (n > 0)
      histc_global_kernel<T, C><<<blocks_for(n), kThreads, 0, st>>>(x, n, bins, left, right,
                                                                    counts);
    check_launch("histc");
    counts_to_kernel<T><<<blocks_for(bins), kThreads, 0, st>>>(counts, bins, static_cast<T*>(out));
    check_launch("histc counts");
  });
}

void launch_bincount(NumericType t, const void* in, int64_t n, const void* weights,
                     bool weight_double, void* out, int64_t nbins, StreamHandle s) {
  const cudaStream_t st = as_stream(s);
  const size_t out_bytes = size_t(nbins) * (weights == nullptr || weight_double ? 8 : 4);
  check(cudaMemsetAsync(out, 0, out_bytes, st), "bincount");
  if (n == 0) return;
  auto go = [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* x = static_cast<const I*>(in);
    if (weights == nullptr)
      bincount_kernel<I><<<blocks_for(n), kThreads, 0, st>>>(
          x, n, static_cast<unsigned long long*>(out));
    else if (weight_double)
      bincount_weighted_kernel<I, double><<<blocks_for(n), kThreads, 0, st>>>(
          x, static_cast<const double*>(weights), n, static_cast<double*>(out));
    else
      bincount_weighted_kernel<I, float><<<blocks_for(n), kThreads, 0, st>>>(
          x, static_cast<const float*>(weights), n, static_cast<float*>(out));
    check_launch("bincount");
  };
  with_int_type(t, "bincount", go);
}

void launch_searchsorted(NumericType t, const void* seq, const void* values,
                         const int64_t* sorter, int64_t n, int64_t L, int64_t per_row, bool right,
                         bool out_int32, void* out, StreamHandle s) {
  if (n == 0) return;
  const cudaStream_t st = as_stream(s);
  with_numeric_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* q = static_cast<const T*>(seq);
    const T* v = static_cast<const T*>(values);
    if (out_int32)
      searchsorted_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, st>>>(
          q, v, sorter, n, L, per_row, right, static_cast<int32_t*>(out));
    else
      searchsorted_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, st>>>(
          q, v, sorter, n, L, per_row, right, static_cast<int64_t*>(out));
    check_launch("searchsorted");
  });
}

void launch_repeat_cumsum(bool int32, const void* repeats, int64_t n, int64_t* cum,
                          int64_t* summary, ScratchFn scratch, void* ctx, StreamHandle s) {
  const cudaStream_t st = as_stream(s);
  check(cudaMemsetAsync(summary, 0, 2 * sizeof(int64_t), st), "repeat_interleave");
  if (n == 0) return;
  int64_t* r = static_cast<int64_t*>(scratch(ctx, size_t(n) * sizeof(int64_t)));
  if (int32)
    repeats_kernel<int32_t><<<blocks_for(n), kThreads, 0, st>>>(
        static_cast<const int32_t*>(repeats), n, r, summary);
  else
    repeats_kernel<int64_t><<<blocks_for(n), kThreads, 0, st>>>(
        static_cast<const int64_t*>(repeats), n, r, summary);
  check_launch("repeat_interleave repeats");
  running_sums(r, cum, n, scratch, ctx, st);
  check(cudaMemcpyAsync(summary, cum + n - 1, sizeof(int64_t), cudaMemcpyDeviceToDevice, st),
        "repeat_interleave total");
}

void launch_repeat_fill(bool int32, const int64_t* cum, int64_t n, const int64_t* summary,
                        int64_t expect_total, int64_t total, void* out, StreamHandle s) {
  const cudaStream_t st = as_stream(s);
  if (expect_total >= 0) {
    repeat_check_kernel<<<1, 1, 0, st>>>(summary, expect_total);
    check_launch("repeat_interleave check");
  }
  if (total == 0) return;
  if (int32)
    repeat_fill_kernel<int32_t><<<blocks_for(total), kThreads, 0, st>>>(
        cum, n, total, static_cast<int32_t*>(out));
  else
    repeat_fill_kernel<int64_t><<<blocks_for(total), kThreads, 0, st>>>(
        cum, n, total, static_cast<int64_t*>(out));
  check_launch("repeat_interleave");
}

void launch_unique_runs(NumericType t, const void* sorted, int64_t n, int64_t* ids,
                        ScratchFn scratch, void* ctx, StreamHandle s) {
  if (n == 0) return;
  const cudaStream_t st = as_stream(s);
  int64_t* starts = static_cast<int64_t*>(scratch(ctx, size_t(n) * sizeof(int64_t)));
  with_numeric_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_starts_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(static_cast<const T*>(sorted), n,
                                                             starts);
  });
  check_launch("unique runs");
  running_sums(starts, ids, n, scratch, ctx, st);
}

void launch_unique_outputs(NumericType t, const void* sorted, const int64_t* perm,
                           const int64_t* ids, int64_t n, int64_t u, void* values,
                           int64_t* inverse, int64_t* counts, ScratchFn scratch, void* ctx,
                           StreamHandle s) {
  if (n == 0) return;
  const cudaStream_t st = as_stream(s);
  int64_t* places = counts == nullptr
                        ? nullptr
                        : static_cast<int64_t*>(scratch(ctx, size_t(u + 1) * sizeof(int64_t)));
  with_numeric_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    unique_scatter_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(
        static_cast<const T*>(sorted), perm, ids, n, u, static_cast<T*>(values), inverse, places);
  });
  check_launch("unique");
  if (counts == nullptr) return;
  run_lengths_kernel<<<blocks_for(u), kThreads, 0, st>>>(places, u, counts);
  check_launch("unique counts");
}

}  // namespace retorch::cuda_backend
