// Stride rules of the NCHW and NHWC memory formats (PyTorch's c10/core/MemoryFormat.h).
#include "retorch/core/MemoryFormat.h"

#include <algorithm>
#include <vector>

#include "retorch/core/Error.h"

namespace retorch {

std::ostream& operator<<(std::ostream& os, MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return os << "Contiguous";
    case MemoryFormat::ChannelsLast: return os << "ChannelsLast";
    case MemoryFormat::Preserve: return os << "Preserve";
  }
  return os << "Unknown";
}

DimVector channels_last_strides(IntArrayRef sizes) {
  RT_CHECK(sizes.size() == 4, "required rank 4 tensor to use channels_last format");
  DimVector st(4);
  st[1] = 1;
  st[3] = sizes[1];
  st[2] = st[3] * sizes[3];
  st[0] = st[2] * sizes[2];
  return st;
}

bool is_channels_last_contiguous_strides(IntArrayRef sizes, IntArrayRef strides) {
  if (sizes.size() != 4) return false;
  int64_t expected = 1;
  for (size_t d : {1, 3, 2, 0}) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool is_channels_last_like_strides(IntArrayRef sizes, IntArrayRef strides) {
  if (sizes.size() != 4 || strides[1] == 0) return false;
  int64_t min = 0;
  for (size_t d : {1, 3, 2, 0}) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    // N111 tensors (and N11W ones sliced to W=1) with equal strides stay NCHW.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d] * (sizes[d] > 1 ? sizes[d] : 1);
  }
  return true;
}

bool is_non_overlapping_and_dense_strides(IntArrayRef sizes, IntArrayRef strides) {
  // Called for every gradient accumulated (Note [Gradient layout]): shapes stay inline.
  SmallVector<int64_t, 8> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return true;
    if (sizes[d] != 1) dims.push_back(int64_t(d));
  }
  std::sort(dims.begin(), dims.end(),
            [&](int64_t a, int64_t b) { return strides[size_t(a)] < strides[size_t(b)]; });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (strides[size_t(d)] != expected) return false;
    expected *= sizes[size_t(d)];
  }
  return true;
}

}  // namespace retorch
