// Reduction planning shared by the reduction and normalization kernels.
#include "retorch/backend/cpu/ReduceUtils.h"

#include "retorch/generated/Functions.h"

namespace retorch::cpu {

ReducePlan plan_reduce(const Tensor& self, OptionalIntArrayRef dims, bool keepdim, const char* op) {
  int64_t nd = self.dim();
  std::vector<bool> reduced(size_t(std::max<int64_t>(nd, 1)), false);
  bool all = !dims || dims->empty();
  if (!all) {
    for (int64_t d : *dims) {
      int64_t w = maybe_wrap_dim(d, nd, op);
      RT_CHECK(!reduced[size_t(w)], op, ": dim ", w, " appears multiple times in the list of dims");
      reduced[size_t(w)] = true;
    }
  }
  ReducePlan p;
  std::vector<int64_t> perm, kept_sizes;
  for (int64_t d = 0; d < nd; ++d) {
    bool r = all || reduced[size_t(d)];
    if (!r) {
      perm.push_back(d);
      p.outer *= self.size(d);
      p.out_shape.push_back(self.size(d));
    } else if (keepdim) {
      p.out_shape.push_back(1);
    }
    if (keepdim && !r) continue;
  }
  if (keepdim) {
    p.out_shape.clear();
    for (int64_t d = 0; d < nd; ++d) p.out_shape.push_back((all || reduced[size_t(d)]) ? 1 : self.size(d));
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (all || reduced[size_t(d)]) {
      perm.push_back(d);
      p.inner *= self.size(d);
    }
  }
  Tensor t = nd == 0 ? self : self.permute(perm);
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
