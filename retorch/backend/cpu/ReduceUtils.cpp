// Reduction planning shared by the reduction and normalization kernels.
#include "retorch/backend/cpu/ReduceUtils.h"

#include <algorithm>

#include "retorch/generated/Functions.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cpu {

ReducePlan plan_reduce(const Tensor& self, OptionalIntArrayRef dims, bool keepdim, const char* op) {
  const int64_t nd = self.dim();
  // (PyTorch's reductions keep the dims named in a 64-bit mask; reducing all needs none)
  RT_CHECK(nd <= 64 || !dims || dims->empty(), op,
           "(): only tensors with up to 64 dims are supported (got ", nd, ")");
  const std::vector<bool> reduced = reduced_dim_flags(dims, nd, op);
  ReducePlan p;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[size_t(d)]) {
      perm.push_back(d);
      p.outer *= self.size(d);
      p.out_shape.push_back(self.size(d));
    } else if (keepdim) {
      p.out_shape.push_back(1);
    }
  }
  const size_t first_reduced = perm.size();
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced[size_t(d)]) {
      perm.push_back(d);
      p.inner *= self.size(d);
    }
  }
  // Note [Reduced dims in memory order]: each row's elements may be visited in any order, so the
  // reduced dims go in the order of the input's memory (largest stride first), and those that
  // then chain (stride = next stride * next size) merge into one. A channels-last input's
  // (1, 2, 3) rows are then its memory as it is (no copy), and its (2, 3) rows one transposed
  // copy per image (Note [Transposing copies]) instead of a 4-d strided gather.
  std::stable_sort(perm.begin() + long(first_reduced), perm.end(), [&](int64_t a, int64_t b) {
    return self.stride(a) > self.stride(b);
  });
  Tensor t = nd == 0 ? self : self.permute(perm);
  if (!t.is_contiguous() && nd > 0) {
    DimVector sizes, strides;
    for (int64_t d = 0; d < nd; ++d) {
      const bool merge = size_t(d) > first_reduced &&
                         strides.back() == t.stride(d) * t.size(d);
      if (merge) {
        sizes.back() *= t.size(d);
        strides.back() = t.stride(d);
      } else {
        sizes.push_back(t.size(d));
        strides.push_back(t.stride(d));
      }
    }
    if (int64_t(sizes.size()) < nd) t = as_strided(t, sizes, strides, t.storage_offset());
  }
  p.rows = t.contiguous();
  return p;
}

Tensor move_dim_last(const Tensor& self, int64_t dim) {
  if (self.dim() == 0 || dim == self.dim() - 1) return self.contiguous();
  return self.transpose(dim, -1).contiguous();
}

Tensor restore_dim(const Tensor& t, int64_t dim) {
  if (t.dim() == 0 || dim == t.dim() - 1) return t;
  return t.transpose(dim, -1).contiguous();
}

}  // namespace retorch::cpu
