// View kernels (device-independent): new geometry over the same storage, no copies.
#include <string>

#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::native {

namespace {

// A view of self with the given geometry, remembering the root of self's chain of views
// (TensorImpl::view_base; Note [In-place on views]). detach() is an alias, not such a view.
// dtype, when given, reads the memory as that type (view.dtype); offset counts its elements.
Tensor make_view(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, int64_t offset,
                 ScalarType dtype = ScalarType::Undefined) {
  Tensor v(make_intrusive<TensorImpl>(self.impl()->storage(),
                                      dtype == ScalarType::Undefined ? self.dtype() : dtype,
                                      self.device()));
  v.impl()->set_sizes_and_strides(sizes, strides, offset);
  TensorImpl* root = self.impl()->view_base();
  v.impl()->set_view_base(root ? intrusive_ptr<TensorImpl>(root) : self.impl_ptr());
  return v;
}

}  // namespace

Tensor detach(const Tensor& self) {
  return alias_with_geometry(self, self.sizes(), self.strides(), self.storage_offset());
}

Tensor view(const Tensor& self, IntArrayRef size) {
  DimVector shape = infer_size(size, self.numel(), "view");
  auto strides = compute_view_strides(self.sizes(), self.strides(), shape);
  RT_CHECK(strides, "view size is not compatible with input tensor's size and stride (at least "
           "one dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
           "(input shape ", self.sizes(), ", strides ", self.strides(), ", requested ", size, ")");
  return make_view(self, shape, *strides, self.storage_offset());
}

Tensor view_dtype(const Tensor& self, ScalarType dtype) {
  const int64_t from = int64_t(element_size(self.dtype())), to = int64_t(element_size(dtype));
  DimVector sizes(self.sizes()), strides(self.strides());
  if (from == to) return make_view(self, sizes, strides, self.storage_offset(), dtype);
  const std::string_view a = scalar_type_name(self.dtype()), b = scalar_type_name(dtype);
  RT_CHECK(self.dim() > 0, "self.dim() cannot be 0 to view ", a, " as ", b,
           " (different element sizes)");
  const auto check = [&](bool ok, const std::string& what, int64_t got) {
    RT_CHECK(ok, what, " to view ", a, " as ", b, " (different element sizes), but got ", got);
  };
  const size_t last = size_t(self.dim() - 1);
  check(strides[last] == 1, "self.stride(-1) must be 1", strides[last]);
  if (to < from) {  // each element becomes from / to of them
    for (size_t d = 0; d < last; ++d) strides[d] *= from / to;
    sizes[last] *= from / to;
    return make_view(self, sizes, strides, self.storage_offset() * (from / to), dtype);
  }
  const int64_t ratio = to / from;
  const std::string by = " must be divisible by " + std::to_string(ratio);
  check(sizes[last] % ratio == 0, "self.size(-1)" + by, sizes[last]);
  check(self.storage_offset() % ratio == 0, "self.storage_offset()" + by, self.storage_offset());
  for (size_t d = 0; d < last; ++d) {
    check(strides[d] % ratio == 0, "self.stride(" + std::to_string(d) + ")" + by, strides[d]);
    strides[d] /= ratio;
  }
  sizes[last] /= ratio;
  return make_view(self, sizes, strides, self.storage_offset() / ratio, dtype);
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  int64_t nd = self.dim();
  RT_CHECK(int64_t(dims.size()) == nd, "permute(sparse_coo): number of dimensions in the tensor "
           "input does not match the length of the desired ordering of dimensions i.e. input.dim() = ",
           nd, " is not equal to len(dims) = ", dims.size());
  DimVector sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd));
  std::vector<bool> seen(size_t(nd), false);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t d = maybe_wrap_dim(dims[size_t(i)], nd, "permute");
    RT_CHECK(!seen[size_t(d)], "permute(): duplicate dims are not allowed (dims ", dims, ")");
    seen[size_t(d)] = true;
    sizes[size_t(i)] = self.size(d);
    strides[size_t(i)] = self.stride(d);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  int64_t nd = self.dim();
  if (nd == 0) {
    maybe_wrap_dim(dim0, nd, "transpose");
    maybe_wrap_dim(dim1, nd, "transpose");
    return native::detach(self);
  }
  int64_t a = maybe_wrap_dim(dim0, nd, "transpose"), b = maybe_wrap_dim(dim1, nd, "transpose");
  DimVector sizes(self.sizes()), strides(self.strides());
  std::swap(sizes[size_t(a)], sizes[size_t(b)]);
  std::swap(strides[size_t(a)], strides[size_t(b)]);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor expand(const Tensor& self, IntArrayRef size, bool implicit) {
  int64_t nd = int64_t(size.size());
  RT_CHECK(nd >= self.dim(), "expand(", legacy_type_name(self.dtype()), "{", self.sizes(),
           "}, size=", size, "): the number of sizes provided (", nd, ") must be greater or equal "
           "to the number of dimensions in the tensor (", self.dim(), ")");
  DimVector sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd));
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t off = nd - 1 - i;
    int64_t d = self.dim() - 1 - off;
    int64_t want = size[size_t(i)];
    if (d >= 0) {
      int64_t have = self.size(d);
      if (want == -1) want = have;
      RT_CHECK(have == want || have == 1, "The expanded size of the tensor (", want,
               ") must match the existing size (", have, ") at non-singleton dimension ", i,
               ".  Target sizes: ", size, ".  Tensor sizes: ", self.sizes());
      sizes[size_t(i)] = want;
      strides[size_t(i)] = have == want ? self.stride(d) : 0;
    } else {
      RT_CHECK(want >= 0, "The expanded size of the tensor (", want, ") isn't allowed in a "
               "leading, non-existing dimension ", i);
      sizes[size_t(i)] = want;
      strides[size_t(i)] = 0;
    }
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze(const Tensor& self) {
  DimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.size(d) == 1) continue;
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze_dim(const Tensor& self, int64_t dim) {
  int64_t d = maybe_wrap_dim(dim, self.dim(), "squeeze");
  if (self.dim() == 0 || self.size(d) != 1) return native::detach(self);
  DimVector sizes(self.sizes()), strides(self.strides());
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  int64_t d = maybe_wrap_dim(dim, self.dim() + 1, "unsqueeze");
  DimVector sizes(self.sizes()), strides(self.strides());
  int64_t st = d < self.dim() ? self.stride(d) * self.size(d) : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  RT_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  int64_t d = maybe_wrap_dim(dim, self.dim(), "select");
  int64_t n = self.size(d);
  RT_CHECK_INDEX(index >= -n && index < n, "select(): index ", index,
                 " out of range for tensor of size ", self.sizes(), " at dimension ", d);
  if (index < 0) index += n;
  DimVector sizes(self.sizes()), strides(self.strides());
  int64_t offset = self.storage_offset() + index * self.stride(d);
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(self, sizes, strides, offset);
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start_opt,
             std::optional<int64_t> end_opt, int64_t step) {
  RT_CHECK_INDEX(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  RT_CHECK(step > 0, "slice step must be positive (got ", step, ")");
  int64_t d = maybe_wrap_dim(dim, self.dim(), "slice");
  int64_t n = self.size(d);
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  DimVector sizes(self.sizes()), strides(self.strides());
  sizes[size_t(d)] = (end - start + step - 1) / step;
  strides[size_t(d)] = self.stride(d) * step;
  return make_view(self, sizes, strides, self.storage_offset() + start * self.stride(d));
}

Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset) {
  return make_view(self, size, stride, storage_offset.value_or(self.storage_offset()));
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t nd = self.dim();
  int64_t d1 = maybe_wrap_dim(dim1, nd, "diagonal", false);
  int64_t d2 = maybe_wrap_dim(dim2, nd, "diagonal", false);
  RT_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t len = offset >= 0 ? std::min(self.size(d1), self.size(d2) - offset)
                            : std::min(self.size(d1) + offset, self.size(d2));
  len = std::max<int64_t>(len, 0);
  int64_t start = self.storage_offset();
  if (len > 0) start += offset >= 0 ? offset * self.stride(d2) : -offset * self.stride(d1);
  DimVector sizes, strides;
  for (int64_t i = 0; i < nd; ++i) {
    if (i == d1 || i == d2) continue;
    sizes.push_back(self.size(i));
    strides.push_back(self.stride(i));
  }
  sizes.push_back(len);
  strides.push_back(self.stride(d1) + self.stride(d2));
  return make_view(self, sizes, strides, start);
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  RT_CHECK(self.dim() > 0, "split expects at least a 1-dimensional tensor");
  int64_t d = maybe_wrap_dim(dim, self.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    RT_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but "
             "got split_sizes=", split_sizes);
    total += s;
  }
  RT_CHECK(total == self.size(d), "split_with_sizes expects split_sizes to sum exactly to ",
           self.size(d), " (input tensor's size at dimension ", d, "), but got split_sizes=",
           split_sizes);
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : split_sizes) {
    out.push_back(native::slice(self, d, off, off + s, 1));
    off += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  RT_CHECK(self.dim() > 0, "split expects at least a 1-dimensional tensor");
  RT_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=",
           split_size);
  int64_t d = maybe_wrap_dim(dim, self.dim(), "split");
  int64_t n = self.size(d);
  RT_CHECK(split_size > 0 || n == 0, "split_size can only be 0 if dimension size is 0, but got "
           "dimension size of ", n);
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < n; s += split_size) sizes.push_back(std::min(split_size, n - s));
  if (sizes.empty()) sizes.push_back(0);
  return native::split_with_sizes(self, sizes, d);
}

}  // namespace retorch::native
