// CUB behind the CUDA sorts and selections: rows sorted by radix sort with their places
// (sort, argsort, topk), and the places of nonzero elements (nonzero, boolean masks).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaIndex.h"

namespace retorch::cuda_backend {

// Note [CUDA sorts]
// Radix sorts are stable, descending ones too (equal keys keep their order), which is what
// `sort(stable=True)` promises; CUB orders floats by value with -0.0 equal to 0.0 and NaNs with
// a clear sign bit above +inf (PyTorch's place for NaN; a NaN with its sign bit set would sort
// below -inf, which no op of ours produces on the device). A row at a time is CUB's plain radix
// sort; several rows are its segmented sort over offsets i * n. The values sorted along are
// each key's place in its row, so the sorted values are the indices torch returns.

namespace {

void check(cudaError_t e, const char* what) {
  RT_CHECK(e == cudaSuccess, "cuda ", what, ": ", cudaGetErrorString(e));
}

__global__ void places_kernel(int64_t* out, int64_t total, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = i % n;
}

__global__ void row_offsets_kernel(int* out, int64_t rows, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i <= rows;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = int(i * n);
}

template <typename K>
void sort_rows(const K* in, K* out, const int64_t* places_in, int64_t* places_out, int64_t rows,
               int64_t n, bool descending, void* (*scratch)(void*, size_t), void* ctx,
               cudaStream_t st) {
  size_t bytes = 0;
  if (rows == 1) {
    auto go = [&](void* tmp) {
      return descending ? cub::DeviceRadixSort::SortPairsDescending(tmp, bytes, in, out,
                                                                    places_in, places_out, n,
                                                                    0, int(sizeof(K) * 8), st)
                        : cub::DeviceRadixSort::SortPairs(tmp, bytes, in, out, places_in,
                                                          places_out, n, 0,
                                                          int(sizeof(K) * 8), st);
    };
    check(go(nullptr), "sort (scratch size)");
    check(go(scratch(ctx, bytes)), "sort");
    return;
  }
  int* offsets = static_cast<int*>(scratch(ctx, size_t(rows + 1) * sizeof(int)));
  row_offsets_kernel<<<blocks_for(rows + 1), kThreads, 0, st>>>(offsets, rows, n);
  check_launch("sort offsets");
  auto go = [&](void* tmp) {
    const int items = int(rows * n), segments = int(rows);
    return descending
               ? cub::DeviceSegmentedRadixSort::SortPairsDescending(
                     tmp, bytes, in, out, places_in, places_out, items, segments, offsets,
                     offsets + 1, 0, int(sizeof(K) * 8), st)
               : cub::DeviceSegmentedRadixSort::SortPairs(tmp, bytes, in, out, places_in,
                                                          places_out, items, segments, offsets,
                                                          offsets + 1, 0, int(sizeof(K) * 8),
                                                          st);
  };
  check(go(nullptr), "sort (scratch size)");
  check(go(scratch(ctx, bytes)), "sort");
}

template <typename T>
__device__ bool nonzero_value(const void* in, int64_t i) {
  return static_cast<const T*>(in)[i] != T(0);
}

__global__ void nonzero_flags_kernel(ZeroTest t, int64_t element_size, const void* in,
                                     int64_t n, uint8_t* flags) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    bool hit = false;
    switch (t) {
      case ZeroTest::kFloat: hit = nonzero_value<float>(in, i); break;
      case ZeroTest::kDouble: hit = nonzero_value<double>(in, i); break;
      case ZeroTest::kHalf: hit = __half2float(static_cast<const __half*>(in)[i]) != 0.f; break;
      case ZeroTest::kBFloat16:
        hit = __bfloat162float(static_cast<const __nv_bfloat16*>(in)[i]) != 0.f;
        break;
      case ZeroTest::kBytes:
        switch (element_size) {
          case 1: hit = nonzero_value<uint8_t>(in, i); break;
          case 2: hit = nonzero_value<uint16_t>(in, i); break;
          case 4: hit = nonzero_value<uint32_t>(in, i); break;
          default: hit = nonzero_value<uint64_t>(in, i); break;
        }
        break;
    }
    flags[i] = hit;
  }
}

struct Coordinates {
  int ndim = 0;
  int64_t sizes[kMaxGeometryDims] = {};
};

__global__ void coordinates_kernel(const int64_t* places, int64_t count, Coordinates c,
                                   int64_t* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = places[i];
    for (int d = c.ndim - 1; d >= 0; --d) {
      out[i * c.ndim + d] = p % c.sizes[d];
      p /= c.sizes[d];
    }
  }
}

}  // namespace

void launch_sort_rows(SortType t, const void* keys_in, void* keys_out, int64_t* indices_out,
                      int64_t rows, int64_t n, bool descending,
                      void* (*scratch)(void* ctx, size_t bytes), void* ctx, StreamHandle s) {
  if (rows * n == 0) return;
  RT_CHECK_VALUE(rows == 1 || rows * n <= INT32_MAX, "cuda sort: ", rows, " rows of ", n,
                 " elements (several rows sort at most 2^31 - 1 elements)");
  const cudaStream_t st = as_stream(s);
  int64_t* places = static_cast<int64_t*>(scratch(ctx, size_t(rows * n) * sizeof(int64_t)));
  places_kernel<<<blocks_for(rows * n), kThreads, 0, st>>>(places, rows * n, n);
  check_launch("sort places");
  auto go = [&](auto tag) {
    using K = typename decltype(tag)::type;
    sort_rows(static_cast<const K*>(keys_in), static_cast<K*>(keys_out), places, indices_out,
              rows, n, descending, scratch, ctx, st);
  };
  switch (t) {
    case SortType::kFloat: return go(Tag<float>{});
    case SortType::kDouble: return go(Tag<double>{});
    case SortType::kHalf: return go(Tag<__half>{});
    case SortType::kBFloat16: return go(Tag<__nv_bfloat16>{});
    case SortType::kByte: return go(Tag<uint8_t>{});
    case SortType::kChar: return go(Tag<int8_t>{});
    case SortType::kShort: return go(Tag<int16_t>{});
    case SortType::kInt: return go(Tag<int32_t>{});
    case SortType::kLong: return go(Tag<int64_t>{});
  }
  RT_ERROR("cuda sort: unknown key type ", int(t));
}

void launch_select_nonzero(ZeroTest t, int64_t element_size, const void* in, int64_t n,
                           int64_t* places_out, int64_t* count,
                           void* (*scratch)(void* ctx, size_t bytes), void* ctx, StreamHandle s) {
  const cudaStream_t st = as_stream(s);
  if (n == 0) {
    check(cudaMemsetAsync(count, 0, sizeof(int64_t), st), "nonzero");
    return;
  }
  uint8_t* flags = static_cast<uint8_t*>(scratch(ctx, size_t(n)));
  nonzero_flags_kernel<<<blocks_for(n), kThreads, 0, st>>>(t, element_size, in, n, flags);
  check_launch("nonzero flags");
  int64_t* places = static_cast<int64_t*>(scratch(ctx, size_t(n) * sizeof(int64_t)));
  places_kernel<<<blocks_for(n), kThreads, 0, st>>>(places, n, n);
  check_launch("nonzero places");
  size_t bytes = 0;
  check(cub::DeviceSelect::Flagged(nullptr, bytes, places, flags, places_out, count, n, st),
        "nonzero (scratch size)");
  check(cub::DeviceSelect::Flagged(scratch(ctx, bytes), bytes, places, flags, places_out, count,
                                   n, st),
        "nonzero");
}

void launch_coordinates(const int64_t* places, int64_t count, const int64_t* sizes, int ndim,
                        int64_t* out, StreamHandle s) {
  if (count == 0 || ndim == 0) return;
  RT_CHECK_VALUE(ndim <= kMaxGeometryDims, "cuda nonzero: ", ndim, " dims (at most ",
                 kMaxGeometryDims, ")");
  Coordinates c;
  c.ndim = ndim;
  for (int d = 0; d < ndim; ++d) c.sizes[d] = sizes[d];
  coordinates_kernel<<<blocks_for(count), kThreads, 0, as_stream(s)>>>(places, count, c, out);
  check_launch("nonzero coordinates");
}

}  // namespace retorch::cuda_backend
