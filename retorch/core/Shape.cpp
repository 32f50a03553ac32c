// Shape and stride math shared by views, TensorIterator and autograd.
#include "retorch/core/Shape.h"

#include "retorch/core/Error.h"

namespace retorch {

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    RT_CHECK(x == y || x == 1 || y == 1, op ? op : "broadcast", ": The size of tensor a (", x,
             ") must match the size of tensor b (", y, ") at non-singleton dimension ", n - 1 - i,
             " (shapes ", a, " and ", b, ")");
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

std::optional<DimVector> compute_view_strides(IntArrayRef sizes, IntArrayRef strides,
                                              IntArrayRef new_sizes) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  DimVector out(new_sizes.size());
  if (numel == 0 || sizes.empty()) {
    // Any strides work for empty tensors and scalars; use contiguous ones.
    int64_t st = 1;
    for (size_t i = new_sizes.size(); i-- > 0;) {
      out[i] = st;
      st *= std::max<int64_t>(new_sizes[i], 1);
    }
    return out;
  }
  // Walk old dims in chunks that are contiguous among themselves; each chunk must map onto
  // a run of new dims with the same element count.
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[size_t(d)];
    if (d == 0 || (sizes[size_t(d - 1)] != 1 &&
                   strides[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[size_t(view_d)];
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector out(shape);
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RT_CHECK(infer < 0, op, ": only one dimension can be inferred (shape ", shape, ")");
      infer = int64_t(i);
    } else {
      RT_CHECK(shape[i] >= 0, op, ": invalid shape dimension ", shape[i], " in ", shape);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    RT_CHECK(known != 0 || numel != 0, op, ": cannot reshape tensor of 0 elements into shape ",
             shape,
             " because the unspecified dimension size -1 can be any value and is "
             "ambiguous");
    RT_CHECK(known != 0 && numel % known == 0, op, ": shape '", shape,
             "' is invalid for input of size ", numel);
    out[size_t(infer)] = numel / known;
  } else {
    RT_CHECK(known == numel, op, ": shape '", shape, "' is invalid for input of size ", numel);
  }
  return out;
}

int64_t storage_extent(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  int64_t last = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return offset;
    last += (sizes[i] - 1) * strides[i];
  }
  return last + 1;
}

bool is_expandable_to(IntArrayRef shape, IntArrayRef desired) {
  if (shape.size() > desired.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[shape.size() - 1 - i], d = desired[desired.size() - 1 - i];
    if (s != d && s != 1) return false;
  }
  return true;
}

bool is_contiguous_strides(IntArrayRef sizes, IntArrayRef strides) {
  for (int64_t s : sizes)
    if (s == 0) return true;  // no elements: contiguous whatever the strides (like PyTorch)
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

}  // namespace retorch
