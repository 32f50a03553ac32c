// Shape and stride math: broadcasting, view strides, storage extents.
#pragma once
#include <optional>

#include "retorch/core/ArrayRef.h"

namespace retorch {

/// Broadcast shape of a and b; errors naming op when they do not broadcast.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op = nullptr);
/// Strides for viewing a tensor of (sizes, strides) as new_sizes without copying, or nullopt.
std::optional<DimVector> compute_view_strides(IntArrayRef sizes, IntArrayRef strides,
                                              IntArrayRef new_sizes);
/// Replaces a single -1 in shape so the product equals numel; checks the result.
DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op = "view");
/// Number of elements of storage (from index 0) the geometry touches.
int64_t storage_extent(IntArrayRef sizes, IntArrayRef strides, int64_t offset);
/// Whether `shape` can be broadcast to `desired`.
bool is_expandable_to(IntArrayRef shape, IntArrayRef desired);
/// True when strides are row-major contiguous for sizes (size-1 dims ignored).
bool is_contiguous_strides(IntArrayRef sizes, IntArrayRef strides);

}  // namespace retorch
