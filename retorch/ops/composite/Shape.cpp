// Composite shape ops: reshape, flatten, narrow, t, expand_as, chunk, unbind, stack.
#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::composite {

Tensor reshape(const Tensor& self, IntArrayRef shape) {
  DimVector s = infer_size(shape, self.numel(), "reshape");
  if (compute_view_strides(self.sizes(), self.strides(), s)) return self.view(s);
  return self.clone().view(s);
}
Tensor reshape_as(const Tensor& self, const Tensor& other) { return self.reshape(other.sizes()); }
Tensor view_as(const Tensor& self, const Tensor& other) { return self.view(other.sizes()); }

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return self.reshape({1});
  int64_t s = maybe_wrap_dim(start_dim, self.dim(), "flatten");
  int64_t e = maybe_wrap_dim(end_dim, self.dim(), "flatten");
  RT_CHECK(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (s == e) return self;
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < s; ++d) shape.push_back(self.size(d));
  int64_t m = 1;
  for (int64_t d = s; d <= e; ++d) m *= self.size(d);
  shape.push_back(m);
  for (int64_t d = e + 1; d < self.dim(); ++d) shape.push_back(self.size(d));
  return self.reshape(shape);
}

Tensor t(const Tensor& self) {
  RT_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return self.dim() < 2 ? self.transpose(0, 0) : self.transpose(0, 1);
}

Tensor expand_as(const Tensor& self, const Tensor& other) { return self.expand(other.sizes()); }
Tensor broadcast_to(const Tensor& self, IntArrayRef size) { return self.expand(size); }

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  RT_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = maybe_wrap_dim(dim, self.dim(), "narrow");
  int64_t n = self.size(d);
  RT_CHECK_INDEX(start >= -n && start <= n, "start out of range (expected to be in range of [",
                 -n, ", ", n, "], but got ", start, ")");
  if (start < 0) start += n;
  RT_CHECK(length >= 0 && start <= n - length, "start (", start, ") + length (", length,
           ") exceeds dimension size (", n, ").");
  return self.slice(d, start, start + length, 1);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  RT_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  int64_t d = maybe_wrap_dim(dim, self.dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.size(d); ++i) out.push_back(self.select(d, i));
  return out;
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  RT_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  RT_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  int64_t d = maybe_wrap_dim(dim, self.dim(), "chunk");
  int64_t n = self.size(d);
  int64_t split = (n + chunks - 1) / chunks;
  if (split == 0 && n == 0) {
    std::vector<int64_t> sizes(size_t(chunks), 0);
    return self.split_with_sizes(sizes, d);
  }
  return self.split(split, d);
}

Tensor stack(TensorList tensors, int64_t dim) {
  RT_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  int64_t d = maybe_wrap_dim(dim, tensors[0].dim() + 1, "stack");
  for (size_t i = 1; i < tensors.size(); ++i)
    RT_CHECK(tensors[i].sizes().equals(tensors[0].sizes()), "stack expects each tensor to be "
             "equal size, but got ", tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(),
             " at entry ", i);
  std::vector<Tensor> parts;
  for (const auto& t : tensors) parts.push_back(t.unsqueeze(d));
  return retorch::cat(parts, d);
}

}  // namespace retorch::composite
