// Sorting and searching kernels: sort, topk, unique (_unique2), searchsorted.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "retorch/backend/cpu/ReduceUtils.h"
#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}

// Note [NaN order]
// PyTorch sorts NaN above every number (also +inf), in both directions; topk and unique use the
// same order. `less` is that total order on opmath values.
template <typename T>
bool nan_less(T a, T b) {
  return !is_nan(a) && (is_nan(b) || a < b);
}

// Runs f(row_in, row_values, row_indices, L) over every row of self along dim (moved last);
// out_len is the length of each output row (L for sort, k for topk).
template <typename scalar_t, typename F>
std::tuple<Tensor, Tensor> rowwise(const Tensor& self, int64_t d, int64_t out_len, const F& f) {
  Tensor rows = move_dim_last(self, d);
  int64_t L = self.dim() == 0 ? 1 : rows.size(-1);
  DimVector shape(rows.sizes());
  if (!shape.empty()) shape.back() = out_len;
  Tensor values = make_empty(shape, self.dtype(), self.device());
  Tensor indices = make_empty(shape, kLong, self.device());
  if (values.device().is_meta())  // See Note [Meta through CPU kernels]
    return {restore_dim(values, d), restore_dim(indices, d)};
  int64_t n = L == 0 ? 0 : rows.numel() / L;
  const scalar_t* in = static_cast<const scalar_t*>(rows.impl()->data());
  scalar_t* vo = values.numel() ? values.data_ptr<scalar_t>() : nullptr;
  int64_t* io = indices.numel() ? indices.data_ptr<int64_t>() : nullptr;
  parallel_for(0, n, std::max<int64_t>(1, 4096 / std::max<int64_t>(L, 1)),
               [&](int64_t b, int64_t e) {
    std::vector<int64_t> perm(static_cast<size_t>(L));
    for (int64_t r = b; r < e; ++r) {
      std::iota(perm.begin(), perm.end(), 0);
      const scalar_t* x = in + r * L;
      f(x, perm, L);
      for (int64_t i = 0; i < out_len; ++i) {
        vo[r * out_len + i] = x[perm[size_t(i)]];
        io[r * out_len + i] = perm[size_t(i)];
      }
    }
  });
  return {restore_dim(values, d), restore_dim(indices, d)};
}

}  // namespace

std::tuple<Tensor, Tensor> sort_stable(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                       bool descending) {
  (void)stable;  // the CPU sort is always stable, as in PyTorch
  int64_t d = maybe_wrap_dim(dim, self.dim(), "sort");
  int64_t L = self.dim() == 0 ? 1 : self.size(d);
  std::tuple<Tensor, Tensor> out;
  RT_DISPATCH_ALL(self.dtype(), "sort", [&] {
    using op_t = opmath_t<scalar_t>;
    out = rowwise<scalar_t>(self, d, L, [&](const scalar_t* x, std::vector<int64_t>& perm,
                                            int64_t) {
      if (descending) {
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
          return nan_less(op_t(x[b]), op_t(x[a]));
        });
      } else {
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
          return nan_less(op_t(x[a]), op_t(x[b]));
        });
      }
    });
  });
  return out;
}

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  (void)sorted;  // always sorted: a valid order for sorted=False too
  int64_t d = maybe_wrap_dim(dim, self.dim(), "topk");
  int64_t L = self.dim() == 0 ? 1 : self.size(d);
  RT_CHECK(k >= 0 && k <= L, "topk(): selected index k out of range (k = ", k,
           ", dimension ", d, " has size ", L, ")");
  // A 0-dim input is its own top-1 for every dtype (PyTorch answers before dispatching).
  if (self.dim() == 0) return {self.clone(), make_empty({}, kLong, self.device()).fill_(0)};
  std::tuple<Tensor, Tensor> out;
  RT_DISPATCH_NUMERIC(self.dtype(), "topk", [&] {
    using op_t = opmath_t<scalar_t>;
    out = rowwise<scalar_t>(self, d, k, [&](const scalar_t* x, std::vector<int64_t>& perm,
                                            int64_t) {
      // Ties keep the lower index first so the result is deterministic.
      auto cmp = [&](int64_t a, int64_t b) {
        op_t va(x[a]), vb(x[b]);
        bool before = largest ? nan_less(vb, va) : nan_less(va, vb);
        bool after = largest ? nan_less(va, vb) : nan_less(vb, va);
        return before || (!after && a < b);
      };
      std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), cmp);
    });
  });
  return out;
}

std::tuple<Tensor, Tensor, Tensor> unique2(const Tensor& self, bool sorted, bool return_inverse,
                                           bool return_counts) {
  (void)sorted;  // sorted output is a valid answer for sorted=False as well
  Tensor flat = self.reshape({-1}).contiguous();
  int64_t n = flat.numel();
  Tensor values, inverse, counts;
  RT_DISPATCH_ALL(self.dtype(), "unique", [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* x = n ? flat.data_ptr<scalar_t>() : nullptr;
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return nan_less(op_t(x[a]), op_t(x[b]));
    });
    // NaN never equals NaN, so every NaN is its own group (as in PyTorch).
    std::vector<int64_t> group(static_cast<size_t>(n)), starts;
    for (int64_t i = 0; i < n; ++i) {
      bool fresh = i == 0 || !(op_t(x[perm[size_t(i)]]) == op_t(x[perm[size_t(i - 1)]]));
      if (fresh) starts.push_back(i);
      group[size_t(perm[size_t(i)])] = int64_t(starts.size()) - 1;
    }
    int64_t u = int64_t(starts.size());
    values = make_empty({u}, self.dtype(), self.device());
    counts = make_empty({return_counts ? u : 0}, kLong, self.device());
    for (int64_t g = 0; g < u; ++g) {
      values.data_ptr<scalar_t>()[g] = x[perm[size_t(starts[size_t(g)])]];
      if (return_counts) {
        int64_t end = g + 1 < u ? starts[size_t(g + 1)] : n;
        counts.data_ptr<int64_t>()[g] = end - starts[size_t(g)];
      }
    }
    if (return_inverse) {
      inverse = make_empty(self.sizes(), kLong, self.device());
      std::copy(group.begin(), group.end(), inverse.numel() ? inverse.data_ptr<int64_t>()
                                                            : nullptr);
    } else {
      inverse = make_empty({0}, kLong, self.device());
    }
  });
  return {values, inverse, counts};
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  const char* op = "searchsorted";
  if (side) {
    RT_CHECK(*side == "left" || *side == "right", op, "(): side can only be 'left' or 'right' "
             "but got ", *side);
    RT_CHECK(!(right && *side == "left"), op, "(): side and right can't be set to opposites, got "
             "side of left while right was True");
    right = *side == "right";
  }
  const Tensor& seq = sorted_sequence;
  RT_CHECK(seq.dim() >= 1, op, "(): boundaries tensor should have positive dimension, but got 0 "
           "dimension");
  bool one_d = seq.dim() == 1;
  if (!one_d) {
    RT_CHECK(seq.dim() == self.dim(), op, "(): boundaries tensor should be 1 dimension or the "
             "first N-1 dimensions of boundaries tensor and input value tensor must match, but we "
             "got boundaries tensor ", seq.sizes(), " and input value tensor ", self.sizes());
    for (int64_t i = 0; i + 1 < seq.dim(); ++i)
      RT_CHECK(seq.size(i) == self.size(i), op, "(): boundaries tensor should be 1 dimension or "
               "the first N-1 dimensions of boundaries tensor and input value tensor must match, "
               "but we got boundaries tensor ", seq.sizes(), " and input value tensor ",
               self.sizes());
  }
  Tensor order;
  if (sorter) {
    RT_CHECK(sorter->dtype() == kLong, op, "(): sorter must be a tensor of long dtype but got ",
             sorter->dtype());
    RT_CHECK(sorter->sizes() == seq.sizes(), op, "(): boundary and sorter must have the same size, "
             "but got boundary tensor ", seq.sizes(), " and got sorter tensor ", sorter->sizes());
    order = sorter->contiguous();
  }
  ScalarType ct = result_type({seq, self});
  Tensor s = seq.to(ct).contiguous(), v = self.to(ct).contiguous();
  int64_t L = seq.size(-1);
  Tensor out = make_empty(self.sizes(), out_int32 ? kInt : kLong, self.device());
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  int64_t n = self.numel();
  int64_t per_row = one_d || self.dim() == 0 ? n : self.size(-1);
  const int64_t* ord = order.defined() ? order.data_ptr<int64_t>() : nullptr;
  if (ord) {
    for (int64_t i = 0; i < order.numel(); ++i)
      RT_CHECK_INDEX(ord[i] >= 0 && ord[i] < L, op, "(): sorter index out of range (got ", ord[i],
                     " for a boundary row of size ", L, ")");
  }
  RT_DISPATCH_NUMERIC(ct, op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* sp = s.numel() ? s.data_ptr<scalar_t>() : nullptr;
    const scalar_t* vp = v.numel() ? v.data_ptr<scalar_t>() : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      int64_t row = one_d || per_row == 0 ? 0 : i / per_row;
      const scalar_t* base = sp + row * L;
      const int64_t* ob = ord ? ord + row * L : nullptr;
      auto at = [&](int64_t j) { return op_t(base[ob ? ob[j] : j]); };
      op_t x(vp[i]);
      int64_t lo = 0, hi = L;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        // PyTorch's comparisons, written so NaN (in either place) moves right.
        bool go_right = right ? !(at(mid) > x) : !(at(mid) >= x);
        if (go_right) lo = mid + 1;
        else hi = mid;
      }
      if (out_int32) out.data_ptr<int32_t>()[i] = int32_t(lo);
      else out.data_ptr<int64_t>()[i] = lo;
    }
  });
  return out;
}

}  // namespace retorch::cpu
