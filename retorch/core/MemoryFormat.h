// MemoryFormat: the dense layouts a 4-d tensor can have (NCHW or NHWC) and their stride rules.
#pragma once
#include <ostream>

#include "retorch/core/ArrayRef.h"

namespace retorch {

/// libtorch's at::MemoryFormat: Contiguous is row-major (NCHW), ChannelsLast is NHWC with
/// the channel dim innermost, Preserve keeps the input's layout (clone, empty_like, to).
enum class MemoryFormat : int8_t { Contiguous, ChannelsLast, Preserve };

std::ostream& operator<<(std::ostream& os, MemoryFormat f);

/// NHWC strides for 4-d sizes: strides[1] = 1, then W, H, N (size-0/1 dims keep the formula).
DimVector channels_last_strides(IntArrayRef sizes);
/// Whether (sizes, strides) is densely NHWC; size-1 dims may have any stride (PyTorch's rule).
bool is_channels_last_contiguous_strides(IntArrayRef sizes, IntArrayRef strides);
/// PyTorch's is_channels_last_strides_2d: strides ordered like NHWC (not necessarily dense);
/// ambiguous cases (N111, a stride-0 channel dim) are NCHW.
bool is_channels_last_like_strides(IntArrayRef sizes, IntArrayRef strides);
/// Non-overlapping and dense in some dim order (PyTorch's is_non_overlapping_and_dense).
bool is_non_overlapping_and_dense_strides(IntArrayRef sizes, IntArrayRef strides);

}  // namespace retorch
