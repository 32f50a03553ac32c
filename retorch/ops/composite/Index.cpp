// Index-family composites (masked/index_* ops, take/put, flip/roll/repeat/tile, tril/triu,
// diag, sort wrappers, kthvalue, bucketize) built on index / index_put / sort.
#include <algorithm>
#include <tuple>

#include "retorch/autograd/GradMode.h"
#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

namespace {

Tensor long_arange(int64_t n, Device device) {
  return retorch::arange(0, n, 1, TensorOptions().dtype(kLong).device(device));
}

void check_mask(const Tensor& mask, const char* op) {
  RT_CHECK(mask.dtype() == kBool || mask.dtype() == kByte, op, ": expected BoolTensor or "
           "ByteTensor for mask (got ", mask.dtype(), ")");
}

// Index list selecting `index` along dim d and everything along the other dims.
std::vector<std::optional<Tensor>> along(int64_t d, const Tensor& index) {
  std::vector<std::optional<Tensor>> idx(static_cast<size_t>(d));
  idx.emplace_back(index.reshape({-1}));
  return idx;
}

// Note [In-place index composites]
// index_add_, index_copy_, index_fill_, put_ and masked_scatter_ (ops.yaml inplace_composite)
// write self through index_put_ instead of copying the functional result into self, which
// cloned self and copied it back: index_copy_ of 256 rows into [1024, 1024] floats 0.11 ms,
// PyTorch 0.04. put_along is each one's last step: self.index_put(indices, values) for the
// functional form, index_put_ in place (op names the in-place op in the leaf error); a 0-dim
// self is viewed as [1].
void check_not_leaf(const Tensor& self, const char* in_place_op) {
  RT_CHECK(!(GradMode::is_enabled() && self.is_leaf() && self.requires_grad()), in_place_op,
           ": a leaf Variable that requires grad is being used in an in-place operation.");
}

Tensor put_along(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                 const Tensor& values, bool accumulate, const char* in_place_op) {
  const Tensor base = self.dim() == 0 ? self.view({1}) : self;
  if (in_place_op) {
    check_not_leaf(self, in_place_op);
    base.index_put_(indices, values, accumulate);
    return self;
  }
  Tensor r = base.index_put(indices, values, accumulate);
  return self.dim() == 0 ? r.reshape({}) : r;
}

}  // namespace

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  check_mask(mask, "masked_select");
  DimVector shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_select");
  if (shape.empty()) shape.push_back(1);
  return retorch::index(self.expand(shape), {mask.expand(shape)});
}

namespace {

Tensor masked_scatter_impl(const Tensor& self, const Tensor& mask, const Tensor& source,
                           const char* in_place_op) {
  check_mask(mask, "masked_scatter_");
  RT_CHECK(self.dtype() == source.dtype(), "masked_scatter: expected self and source to have "
           "same dtypes but got ", self.dtype(), " and ", source.dtype());
  // In place, mask expands to self (as in PyTorch); otherwise both broadcast.
  DimVector shape = in_place_op ? DimVector(self.sizes().begin(), self.sizes().end())
                                : broadcast_shapes(self.sizes(), mask.sizes(), "masked_scatter");
  Tensor base = IntArrayRef(shape) == self.sizes() ? self : self.expand(shape).contiguous();
  Tensor m = mask.to(kBool).expand(shape);
  int64_t n = m.numel() ? m.sum().item<int64_t>() : 0;
  RT_CHECK(source.numel() >= n, "masked_scatter: Number of elements of source < number of ones "
           "in mask (source has ", source.numel(), " elements, mask ", m.sizes(), " has ", n,
           " ones)");
  Tensor src = source.reshape({-1}).narrow(0, 0, n);
  // (source may be self, as PyTorch allows in place; it is read as it was before the call)
  if (in_place_op && n > 0 && source.impl()->storage().get() == self.impl()->storage().get())
    src = src.clone();
  return put_along(base, {base.dim() == 0 ? m.reshape({1}) : m}, src, false, in_place_op);
}

}  // namespace

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  return masked_scatter_impl(self, mask, source, nullptr);
}
void masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source) {
  masked_scatter_impl(self, mask, source, "masked_scatter_");
}

namespace {

Tensor index_fill_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value,
                       const char* in_place_op) {
  RT_CHECK_INDEX(index.dtype() == kLong, "index_fill_(): Expected dtype int64 for index.");
  RT_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got "
           "tensor with ", value.dim(), " dimension(s).");
  int64_t d = maybe_wrap_dim(dim, self.dim(), "index_fill");
  RT_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector (got shape ",
                 index.sizes(), ")");
  Tensor v = value.dtype() == self.dtype() ? value : value.to(self.dtype());
  // Repeated indices fill once, so value's gradient counts each position once (as in PyTorch).
  Tensor idx = std::get<0>(retorch::_unique2(index.reshape({-1}), true, false, false));
  return put_along(self, along(self.dim() == 0 ? 0 : d, idx), v, false, in_place_op);
}

// full() checks that the value fits the dtype, as PyTorch's index_fill does.
Tensor fill_value(const Tensor& self, const Scalar& value) {
  return retorch::full({}, value, TensorOptions().dtype(self.dtype()).device(self.device()));
}

}  // namespace

Tensor index_fill_tensor(const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& value) {
  return index_fill_impl(self, dim, index, value, nullptr);
}
void index_fill_tensor_(const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor& value) {
  index_fill_impl(self, dim, index, value, "index_fill_");
}
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill_impl(self, dim, index, fill_value(self, value), nullptr);
}
void index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  index_fill_impl(self, dim, index, fill_value(self, value), "index_fill_");
}

namespace {

/// scatter's legacy reduce argument as scatter_reduce's name for it.
std::string_view scatter_reduction(std::string_view reduce) {
  RT_CHECK(reduce == "add" || reduce == "multiply",
           "reduce argument must be either add or multiply.");
  return reduce == "add" ? "sum" : "prod";
}

}  // namespace

Tensor scatter_with_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           std::string_view reduce) {
  return retorch::scatter_reduce(self, dim, index, src, scatter_reduction(reduce), true);
}
Tensor scatter_value_with_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                                 const Scalar& value, std::string_view reduce) {
  const std::string_view how = scatter_reduction(reduce);
  return retorch::scatter_reduce(
      self, dim, index, retorch::full_like(index, value, TensorOptions().dtype(self.dtype())), how,
      true);
}

namespace {

Tensor index_copy_impl(const Tensor& self, int64_t dim, const Tensor& index,
                       const Tensor& source, const char* in_place_op) {
  RT_CHECK(index.dtype() == kLong, "index_copy_(): Expected a long tensor for index, but got ",
           index.dtype());
  RT_CHECK(self.dtype() == source.dtype(), "index_copy_(): self and source expected to have the "
           "same dtype, but got (self) ", self.dtype(), " and (source) ", source.dtype());
  int64_t d = maybe_wrap_dim(dim, self.dim(), "index_copy");
  RT_CHECK_INDEX(index.dim() <= 1, "index_copy_(): Index should have dimension 1 or 0 (got ",
                 index.dim(), ")");
  RT_CHECK(self.dim() == source.dim() || (self.dim() <= 1 && source.dim() <= 1),
           "index_copy_(): When source and destination are not scalars, their dimensionality "
           "must match. Source dimensionality (", source.dim(), "), destination dimensionality (",
           self.dim(), ")");
  int64_t k = index.numel();
  int64_t src_k = source.dim() == 0 ? 1 : source.size(d);
  RT_CHECK_INDEX(k == src_k, "index_copy_(): Number of indices (", k, ") should be equal to "
                 "source.size(dim) (", src_k, ")");
  for (int64_t i = 0; i < self.dim() && source.dim() == self.dim(); ++i)
    RT_CHECK(i == d || self.size(i) == source.size(i), "index_copy_(): Source/destination "
             "tensor must have same slice shapes. Destination slice shape: ", self.sizes(),
             " at dimension ", d, " and source slice shape: ", source.sizes(), " at dimension ",
             d);
  return put_along(self, along(self.dim() == 0 ? 0 : d, index),
                   self.dim() == 0 || source.dim() == 0 ? source.reshape({-1}) : source, false,
                   in_place_op);
}

}  // namespace

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_copy_impl(self, dim, index, source, nullptr);
}
void index_copy_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  index_copy_impl(self, dim, index, source, "index_copy_");
}

namespace {

// index_add's checks; returns (dim, int64 indices, source times alpha in self's dtype).
std::tuple<int64_t, Tensor, Tensor> index_add_args(const Tensor& self, int64_t dim,
                                                   const Tensor& index, const Tensor& source,
                                                   const Scalar& alpha) {
  RT_CHECK(index.dtype() == kLong || index.dtype() == kInt, "index_add_(): Expected dtype "
           "int32/int64 for index (got ", index.dtype(), ")");
  RT_CHECK(self.dtype() == source.dtype(), "index_add_(): self (", self.dtype(), ") and source (",
           source.dtype(), ") must have the same scalar type");
  int64_t d = maybe_wrap_dim(dim, self.dim(), "index_add");
  RT_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector (got shape ",
                 index.sizes(), ")");
  int64_t src_k = source.dim() == 0 ? 1 : source.size(d);
  RT_CHECK(index.numel() == src_k, "index_add_(): Number of indices (", index.numel(), ") should "
           "be equal to source.size(dim) (", src_k, ")");
  Tensor idx = index.to(kLong);
  int64_t size = self.dim() == 0 ? 1 : self.size(d);
  if (idx.numel()) {
    // PyTorch's index_add reports a bad index as "index out of range in self".
    RT_CHECK_INDEX(idx.min().item<int64_t>() >= 0 && idx.max().item<int64_t>() < size,
                   "index_add_(): index out of range in self (dimension ", d, " has size ", size,
                   ")");
  }
  Tensor src = alpha.to<double>() == 1.0 ? source : source.mul(alpha);
  if (src.dtype() != self.dtype()) src = src.to(self.dtype());
  if (self.dim() == 0 || source.dim() == 0) src = src.reshape({-1});
  return {d, idx, src};
}

}  // namespace

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  auto [d, idx, src] = index_add_args(self, dim, index, source, alpha);
  return put_along(self, along(self.dim() == 0 ? 0 : d, idx), src, true, nullptr);
}
void index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                const Scalar& alpha) {
  auto [d, idx, src] = index_add_args(self, dim, index, source, alpha);
  put_along(self, along(self.dim() == 0 ? 0 : d, idx), src, true, "index_add_");
}

Tensor take(const Tensor& self, const Tensor& index) {
  RT_CHECK(index.dtype() == kLong, "take(): Expected a long tensor for index, but got ",
           index.dtype());
  return retorch::index(self.reshape({-1}), {index});
}

namespace {

Tensor put_impl(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate,
                const char* in_place_op) {
  RT_CHECK(index.dtype() == kLong, "put_(): Expected a long tensor for index, but got ",
           index.dtype());
  RT_CHECK(self.dtype() == source.dtype(), "put_(): self and source expected to have the same "
           "dtype, but got self.dtype = ", self.dtype(), " and source.dtype = ", source.dtype());
  RT_CHECK_INDEX(index.numel() == source.numel(), "put_(): Expected source and index to have "
                 "the same number of elements, but got source.numel() = ", source.numel(),
                 ", index.numel() = ", index.numel());
  const int64_t n = self.numel();
  // index_put checks the bounds as it plans its writes; an index outside them is reported with
  // put_'s message (a min and a max pass before it took 13% of put_'s time).
  auto out_of_range = [&] {
    if (index.numel()) {
      int64_t lo = index.min().item<int64_t>(), hi = index.max().item<int64_t>();
      RT_CHECK_INDEX(lo >= -n && hi < n, "out of range: tried to access index ", lo < -n ? lo : hi,
                     " on a tensor of ", n, " elements.");
    }
  };
  if (in_place_op) check_not_leaf(self, in_place_op);
  if (in_place_op && self.is_contiguous()) {  // (through a flat view of self's memory)
    try {
      put_along(self.view({-1}), {index.reshape({-1})}, source.reshape({-1}), accumulate,
                in_place_op);
    } catch (const Error&) {
      out_of_range();
      throw;
    }
    return self;
  }
  out_of_range();
  Tensor r = (in_place_op && self.requires_grad() ? self.clone() : self).reshape({-1})
                 .index_put({index.reshape({-1})}, source.reshape({-1}), accumulate)
                 .view(self.sizes());
  if (in_place_op) self.copy_(r);
  return in_place_op ? self : r;
}

}  // namespace

Tensor put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  return put_impl(self, index, source, accumulate, nullptr);
}
void put_(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  put_impl(self, index, source, accumulate, "put_");
}

Tensor flip(const Tensor& self, IntArrayRef dims) {
  std::vector<bool> seen(size_t(std::max<int64_t>(self.dim(), 1)), false);
  Tensor t = self;
  for (int64_t dim : dims) {
    int64_t d = maybe_wrap_dim(dim, self.dim(), "flip");
    RT_CHECK(!seen[size_t(d)], "dims has duplicates, original flip dims size=", dims.size(),
             ", but unique flip dims are fewer (dims ", dims, ")");
    seen[size_t(d)] = true;
    int64_t n = self.dim() == 0 ? 1 : self.size(d);
    // index_select (its backward, a scatter_add, differentiates again): whole blocks for
    // leading dims and typed element loads for the last, where the advanced-index gather took
    // flip(1) of [1024, 1024] floats 1.5 ms (PyTorch 0.15).
    if (n > 1) {
      Tensor rev = retorch::arange(n - 1, -1, -1, TensorOptions().dtype(kLong).device(t.device()));
      t = retorch::index_select(t, d, rev);
    }
  }
  return t.is_same(self) ? self.clone() : t;
}

Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  RT_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty()) {
    RT_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(),
             ", dims:", dims.size());
    return composite::roll(self.reshape({-1}), shifts, IntArrayRef{0}).view(self.sizes());
  }
  RT_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
           shifts.size(), ", dims:", dims.size());
  Tensor t = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = maybe_wrap_dim(dims[i], self.dim(), "roll");
    int64_t n = t.size(d);
    if (n == 0) continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    // out[j] = in[(j - s) mod n]: the last s entries, then the first n - s, as PyTorch rolls
    // (narrow and cat differentiate again). Gathering with index took roll of a [1024, 1024]
    // float tensor along dim 1 1.6 ms, PyTorch 0.06; two narrows and a cat 0.07.
    t = retorch::cat({t.narrow(d, n - s, s), t.narrow(d, 0, n - s)}, d);
  }
  return t.is_same(self) ? self.clone() : t;
}

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  int64_t n = int64_t(repeats.size());
  RT_CHECK(n >= self.dim(), "Number of dimensions of repeat dims can not be smaller than number "
           "of dimensions of tensor (repeat dims ", repeats, ", tensor ", self.sizes(), ")");
  for (int64_t r : repeats)
    RT_CHECK(r >= 0, "Trying to create tensor with negative dimension ", r, ": ", repeats);
  // [s0, s1] repeated [r0, r1] is [1, s0, 1, s1] expanded to [r0, s0, r1, s1], then merged.
  DimVector view, expanded, result;
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = i - (n - self.dim());
    int64_t s = j >= 0 ? self.size(j) : 1;
    view.push_back(1);
    view.push_back(s);
    expanded.push_back(repeats[size_t(i)]);
    expanded.push_back(s);
    result.push_back(repeats[size_t(i)] * s);
  }
  return self.reshape(view).expand(expanded).reshape(result);
}

Tensor tile(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> reps(size_t(std::max<int64_t>(self.dim() - int64_t(dims.size()), 0)), 1);
  reps.insert(reps.end(), dims.begin(), dims.end());
  return self.repeat(reps);
}

Tensor repeat_interleave_self_int(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                                  std::optional<int64_t> output_size) {
  RT_CHECK(repeats >= 0, "repeat_interleave: repeats can not be negative (got ", repeats, ")");
  Tensor in = dim ? self : self.reshape({-1});
  int64_t d = dim ? maybe_wrap_dim(*dim, in.dim(), "repeat_interleave") : 0;
  if (in.dim() == 0) in = in.reshape({1});
  if (output_size)
    RT_CHECK(*output_size == in.size(d) * repeats, "repeat_interleave: allocated size does not "
             "match required size (output_size ", *output_size, ")");
  DimVector expanded(in.sizes());
  expanded.insert(expanded.begin() + d + 1, repeats);
  return in.unsqueeze(d + 1).expand(expanded).flatten(d, d + 1);
}

Tensor repeat_interleave_self_tensor(const Tensor& self, const Tensor& repeats,
                                     std::optional<int64_t> dim,
                                     std::optional<int64_t> output_size) {
  Tensor in = dim ? self : self.reshape({-1});
  int64_t d = dim ? maybe_wrap_dim(*dim, in.dim(), "repeat_interleave") : 0;
  if (in.dim() == 0) in = in.reshape({1});
  if (repeats.dim() == 0 || (repeats.dim() == 1 && repeats.size(0) == 1 && in.size(d) != 1)) {
    RT_CHECK(repeats.dtype() == kLong || repeats.dtype() == kInt, "repeat_interleave: repeats "
             "has to be Long or Int tensor (got ", repeats.dtype(), ")");
    return repeat_interleave_self_int(in, repeats.item<int64_t>(), d, output_size);
  }
  RT_CHECK(repeats.dim() == 1, "repeat_interleave: repeats must be 0-dim or 1-dim tensor");
  RT_CHECK(repeats.size(0) == in.size(d), "repeats must have the same size as input along dim, "
           "but got repeats.size(0) = ", repeats.size(0), " and input.size(", d, ") = ",
           in.size(d));
  return in.index_select(d, retorch::repeat_interleave(repeats, output_size));
}

namespace {
Tensor triangle(const Tensor& self, int64_t diagonal, bool lower, const char* op) {
  // PyTorch fails on size(-2) first, hence an IndexError.
  RT_CHECK_INDEX(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions (got "
                 "shape ", self.sizes(), ")");
  int64_t m = self.size(-2), n = self.size(-1);
  // col > row + diagonal (lower) or col < row + diagonal, compared by broadcasting a row of
  // columns against a column of rows: one bool pass, where an m x n int64 matrix of col - row
  // came first (tril of [1024, 1024] floats 0.51 ms, PyTorch 0.29).
  const Tensor col = long_arange(n, self.device()).unsqueeze(0);
  const Tensor row = long_arange(m, self.device()).add(Scalar(diagonal)).unsqueeze(1);
  const Tensor drop = lower ? col.gt(row) : col.lt(row);
  return self.masked_fill(drop, Scalar(0));
}
}  // namespace

Tensor tril(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, true, "tril"); }
Tensor triu(const Tensor& self, int64_t diagonal) {
  return triangle(self, diagonal, false, "triu");
}

Tensor diag(const Tensor& self, int64_t diagonal) {
  RT_CHECK(self.dim() == 1 || self.dim() == 2, "diag(): matrix or a vector expected (got a ",
           self.dim(), "-d tensor)");
  if (self.dim() == 2) {
    int64_t m = self.size(0), n = self.size(1);
    int64_t len = diagonal >= 0 ? std::min(m, n - diagonal) : std::min(m + diagonal, n);
    // PyTorch 1.13 fails here (on a negative allocation size) instead of returning empty.
    RT_CHECK(len >= 0, "diag(): diagonal ", diagonal, " is outside the matrix ", self.sizes());
    return self.diagonal(diagonal, 0, 1).clone();
  }
  int64_t n = self.size(0), k = diagonal;
  int64_t big = n + (k < 0 ? -k : k);
  // The vector copied into the diagonal view of a zero matrix (an index_put of arange indices
  // into a clone of it took diag of 1024 floats 0.094 ms, PyTorch 0.036).
  Tensor out = retorch::zeros({big, big}, self.options());
  out.diagonal(k, 0, 1).copy_(self);
  return out;
}

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
  return retorch::sort(self, std::optional<bool>(false), dim, descending);
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(retorch::sort(self, std::optional<bool>(false), dim, descending));
}

Tensor argsort_stable(const Tensor& self, bool stable, int64_t dim, bool descending) {
  return std::get<1>(retorch::sort(self, std::optional<bool>(stable), dim, descending));
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  int64_t d = maybe_wrap_dim(dim, self.dim(), "kthvalue");
  int64_t n = self.dim() == 0 ? 1 : self.size(d);
  RT_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", d,
           " (k = ", k, ", size ", n, ")");
  RT_CHECK(self.dtype() != kBool || self.dim() == 0, "\"kthvalue_cpu\" not implemented for "
           "'Bool'");
  auto [values, indices] = retorch::sort(self, std::optional<bool>(true), d, false);
  if (self.dim() == 0) return {values, indices};
  values = values.narrow(d, k - 1, 1);
  indices = indices.narrow(d, k - 1, 1);
  if (!keepdim) return {values.squeeze(d), indices.squeeze(d)};
  return {values, indices};
}

Tensor searchsorted_scalar(const Tensor& sorted_sequence, const Scalar& self, bool out_int32,
                           bool right, std::optional<std::string_view> side,
                           const std::optional<Tensor>& sorter) {
  RT_CHECK(sorted_sequence.dim() == 1, "searchsorted(): input value can be a scalar only when "
           "boundaries tensor dimension is 1, but we got boundaries tensor dim(",
           sorted_sequence.dim(), ") and input value's dim(0) numel(1)");
  return retorch::searchsorted(sorted_sequence, scalar_to_tensor(self, sorted_sequence.device()),
                               out_int32, right, side, sorter);
}

Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  RT_CHECK(boundaries.dim() == 1, "bucketize(): boundaries tensor must be 1 dimension, but got "
           "dim(", boundaries.dim(), ")");
  return retorch::searchsorted(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}

Tensor bucketize_scalar(const Scalar& self, const Tensor& boundaries, bool out_int32, bool right) {
  return composite::bucketize(scalar_to_tensor(self, boundaries.device()), boundaries, out_int32,
                              right);
}

}  // namespace retorch::composite
