// The CUDA kernels' offset calculator: an output shape and each operand's element strides,
// coalesced on the host and split per element on the device (host and device code in one header).
#pragma once
#include <cstdint>
#include <cstdlib>

#include "retorch/core/HostDevice.h"

#if defined(__CUDACC__)
#include <cstdio>
// Stops a kernel whose data indexes out of range (an index tensor's value): the stream gets a
// sticky error that the next synchronizing call reports, as PyTorch's device-side asserts do,
// in every build type (assert() is compiled out of Release builds).
#define RT_DEVICE_CHECK(cond, what)                                \
  do {                                                            \
    if (!(cond)) {                                                \
      printf("retorch CUDA kernel: %s is out of range\n", what); \
      __trap();                                                   \
    }                                                             \
  } while (0)
#endif

namespace retorch::cuda_backend {

// Note [CUDA offset calculator]
// A pointwise kernel's operands (the output first) share one iteration shape, each with its own
// element strides (0 along broadcast dims). The host drops size-1 dims and merges neighbours
// that every operand walks contiguously (stride[d] == stride[d + 1] * size[d + 1]), so a
// contiguous or simply broadcast case becomes one or two dims; dims are stored innermost first.
// A thread splits its linear index over those dims with one division per dim and adds up each
// operand's offset. Offsets and the linear index are 32-bit where every operand's largest offset
// and the element count fit in int32 (the division is the cost that matters), 64-bit otherwise:
// `fits_32bit` says which kernel to launch. This is ATen's OffsetCalculator in spirit, written
// here for retorch's kernels; it is plain C++ on the host, so tests check it without a GPU.
constexpr int kMaxGeometryDims = 12;

template <int N, typename Index>
struct OffsetCalc {
  int dims = 0;
  Index sizes[kMaxGeometryDims] = {};
  Index strides[kMaxGeometryDims][N] = {};

  RT_HOST_DEVICE void offsets(Index linear, Index (&out)[N]) const {
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = 0; d < dims; ++d) {
      const Index i = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) out[k] += i * strides[d][k];
    }
  }
};

/// A coalesced iteration geometry for N operands (host side; see the Note above).
template <int N>
struct Geometry {
  int dims = 0;
  int64_t numel = 1;
  int64_t sizes[kMaxGeometryDims] = {};         // innermost first
  int64_t strides[kMaxGeometryDims][N] = {};    // element strides, innermost first

  /// Whether every offset and the element count fit in int32.
  bool fits_32bit() const {
    const int64_t limit = INT32_MAX;
    if (numel > limit) return false;
    for (int k = 0; k < N; ++k) {
      int64_t span = 0;
      for (int d = 0; d < dims; ++d) span += (sizes[d] - 1) * std::llabs(strides[d][k]);
      if (span > limit) return false;
    }
    return true;
  }

  template <typename Index>
  OffsetCalc<N, Index> calc() const {
    OffsetCalc<N, Index> c;
    c.dims = dims;
    for (int d = 0; d < dims; ++d) {
      c.sizes[d] = Index(sizes[d]);
      for (int k = 0; k < N; ++k) c.strides[d][k] = Index(strides[d][k]);
    }
    return c;
  }
};

/// The geometry of `ndim` dims of `shape` (outermost first, as tensors store them) with
/// operand k's strides in strides[k]; false when the shape needs more than kMaxGeometryDims
/// dims after coalescing.
template <int N>
bool make_geometry(const int64_t* shape, int ndim, const int64_t* const (&strides)[N],
                   Geometry<N>* g) {
  *g = Geometry<N>();
  for (int d = ndim - 1; d >= 0; --d) {  // innermost first
    g->numel *= shape[d];
    if (shape[d] == 1) continue;
    if (g->dims > 0) {  // merge into the inner neighbour when every operand continues it
      const int in = g->dims - 1;
      bool merge = true;
      for (int k = 0; k < N && merge; ++k)
        merge = strides[k][d] == g->strides[in][k] * g->sizes[in];
      if (merge) {
        g->sizes[in] *= shape[d];
        continue;
      }
    }
    if (g->dims == kMaxGeometryDims) return false;
    g->sizes[g->dims] = shape[d];
    for (int k = 0; k < N; ++k) g->strides[g->dims][k] = strides[k][d];
    ++g->dims;
  }
  if (g->numel == 0) g->dims = 0;
  return true;
}

}  // namespace retorch::cuda_backend
