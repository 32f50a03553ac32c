// Launchers of the CUDA backend's index kernels: gathers and scatters through index tensors
// (CudaIndex.cu: index, index_put, gather, scatter, index_select) and CUB's sorts and selection
// (CudaSort.cu: sort, topk, nonzero).
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaGeometry.h"
#include "retorch/backend/cuda/CudaRuntime.h"

namespace retorch::cuda_backend {

// Note [CUDA index kernels]
// One kernel serves every op that moves elements through index tensors. It walks an iteration
// shape with an offset calculator over 2 + kMaxIndexTensors operands: operand 0 is the "plain"
// side (the result of a gather, the values of a scatter), operand 1 the indexed tensor restrided
// (stride 0 along the dims its indices replace), operands 2.. the index tensors broadcast over
// the iteration shape. An element's place in the indexed tensor is operand 1's offset plus, for
// each index tensor k, its value (negative values wrap, as in Python, where the op allows them)
// times stride[k]; a value outside [-size[k], size[k]) (or [0, size[k])) stops the kernel (RT_DEVICE_CHECK), reported at the next
// synchronizing call. So index(self, [i, j]), gather(self, d, i), index_select and the scatters
// differ only in the shapes and strides the host builds (CudaIndexOps.cpp). Accumulating
// scatters (index_put with accumulate, scatter_add) add with atomics, so repeated indices sum in
// an unspecified order, as on PyTorch's CUDA path with deterministic algorithms off.
constexpr int kMaxIndexTensors = 4;
constexpr int kIndexOperands = 2 + kMaxIndexTensors;

/// The index tensors of a launch: device pointers to int64 values, and per tensor the size and
/// element stride of the dim of the indexed tensor it indexes. `wrap`: negative values count
/// from the end (advanced indexing); else they are out of range (gather, scatter, index_select).
/// The op a launch serves, named by a device-side range check.
enum class IndexOp : int { kIndex, kIndexPut, kGather, kScatter, kIndexSelect };

struct IndexTensors {
  int count = 0;
  bool wrap = true;
  IndexOp op = IndexOp::kIndex;
  const int64_t* values[kMaxIndexTensors] = {};
  int64_t size[kMaxIndexTensors] = {};
  int64_t stride[kMaxIndexTensors] = {};
};

/// What a launch does at each element.
enum class IndexMode : int {
  kGather,      // plain[o0] = indexed[at]
  kScatter,     // indexed[at] = plain[o0]
  kAccumulate,  // indexed[at] += plain[o0] (atomically)
  kFill,        // indexed[at] = the fill value (operand 0 unused)
};

/// Element types an accumulating scatter adds in.
enum class AddType : int { kFloat, kDouble, kHalf, kBFloat16, kInt, kLong };

/// Runs `mode` over g (operands as in the Note) for elements of `element_size` bytes (1, 2, 4
/// or 8; kAccumulate reads `add` instead); kFill writes the bit pattern `fill_bits`.
void launch_indexed(IndexMode mode, int64_t element_size, AddType add,
                    const Geometry<kIndexOperands>& g, void* plain, void* indexed,
                    const IndexTensors& idx, uint64_t fill_bits, StreamHandle s);

/// Element types CUB sorts (bool sorts as kByte).
enum class SortType : int { kFloat, kDouble, kHalf, kBFloat16, kByte, kChar, kShort, kInt, kLong };

/// Sorts `rows` contiguous rows of n keys each (stable; descending keeps equal keys in their
/// order), writing the sorted keys to keys_out and each key's place in its row to indices_out.
/// Device scratch comes from `scratch(bytes)`.
void launch_sort_rows(SortType t, const void* keys_in, void* keys_out, int64_t* indices_out,
                      int64_t rows, int64_t n, bool descending,
                      void* (*scratch)(void* ctx, size_t bytes), void* ctx, StreamHandle s);

/// How nonzero reads an element: floating types by value (-0.0 is zero), others by their bytes.
enum class ZeroTest : int { kBytes, kFloat, kDouble, kHalf, kBFloat16 };

/// Writes the linear places of the n elements of `in` (contiguous) that are not zero to
/// places_out (room for n), in order, and their count to *count (device memory).
void launch_select_nonzero(ZeroTest t, int64_t element_size, const void* in, int64_t n,
                           int64_t* places_out, int64_t* count,
                           void* (*scratch)(void* ctx, size_t bytes), void* ctx, StreamHandle s);
/// out[i, d] = the coordinate along dim d of linear place places[i] in `sizes` (ndim dims,
/// outermost first, at most kMaxGeometryDims).
void launch_coordinates(const int64_t* places, int64_t count, const int64_t* sizes, int ndim,
                        int64_t* out, StreamHandle s);

}  // namespace retorch::cuda_backend
