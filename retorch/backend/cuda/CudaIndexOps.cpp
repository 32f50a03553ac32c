// CUDA kernels of the index ops at the CUDA key: index and index_put (accumulate too), gather,
// scatter, scatter_add, index_select, sort, topk, nonzero and embedding_dense_backward; and so,
// through their composites, flip, masked_select/masked_scatter, index_add, take/put, argsort
// and boolean indexing.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "retorch/backend/cuda/CudaIndex.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/Shape.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/generated/Functions.h"

namespace retorch::cuda_backend {

// Note [CUDA index ops]
// Each op builds the geometry of Note [CUDA index kernels] from its shapes: `index` and
// `index_put` follow Note [Advanced indexing plan] (backend/cpu/AdvancedIndex.cpp) for where the
// broadcast index shape goes among self's unindexed dims, masks becoming their nonzero() columns
// (computed on the device; reading their count synchronizes, as in PyTorch) and cpu index
// tensors moving to the device; `gather`/`scatter` walk the index tensor's shape with self's
// stride along dim replaced by the index; `index_select` walks the result. Calls outside what the
// kernels cover (other index dtypes, more than kMaxIndexTensors index tensors, out= of another
// shape, shapes the op refuses) take the device fallback, whose cpu kernel raises the op's own
// error for bad input, so the messages match the cpu's. Index values are checked on the device.

namespace {

std::optional<AddType> add_type(ScalarType t) {
  switch (t) {
    case kFloat: return AddType::kFloat;
    case kDouble: return AddType::kDouble;
    case kHalf: return AddType::kHalf;
    case kBFloat16: return AddType::kBFloat16;
    case kInt: return AddType::kInt;
    case kLong: return AddType::kLong;
    default: return std::nullopt;
  }
}

bool movable(const Tensor& t) {
  const int64_t e = t.element_size();
  return e == 1 || e == 2 || e == 4 || e == 8;
}

bool long_on(const Tensor& t, const Tensor& self) {
  return t.defined() && t.dtype() == kLong && in_device_memory(t) && t.device() == self.device();
}

// Launches over `shape` with the three kinds of operand strides of Note [CUDA index kernels];
// false when the shape does not fit the geometry (the caller takes the fallback).
bool launch(IndexMode mode, const Tensor& indexed, IntArrayRef shape, const DimVector& plain,
            const DimVector& restrided, const std::vector<DimVector>& index_strides,
            const IndexTensors& idx, void* plain_ptr, uint64_t fill_bits = 0) {
  DimVector strides[kIndexOperands];
  strides[0] = plain;
  strides[1] = restrided;
  for (int k = 0; k < kMaxIndexTensors; ++k)
    strides[2 + k] = k < idx.count ? index_strides[size_t(k)] : DimVector(shape.size(), 0);
  Geometry<kIndexOperands> g;
  if (!geometry_of<kIndexOperands>(shape, strides, &g)) return false;
  const auto add = add_type(indexed.dtype());
  launch_indexed(mode, indexed.element_size(), add ? *add : AddType::kFloat, g, plain_ptr,
                 device_ptr(indexed), idx, fill_bits, current_stream());
  return true;
}

// ---- index / index_put

// The advanced-indexing geometry of self and its index list (see the Note); nullopt when the
// call takes the fallback.
struct Plan {
  DimVector shape;                       // the result's
  DimVector restrided;                   // self's strides over it, 0 along the index dims
  std::vector<DimVector> index_strides;  // each index tensor's over it
  IndexTensors idx;
  std::vector<Tensor> held;              // the device index tensors the launch reads
};

bool broadcastable(IntArrayRef a, IntArrayRef b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

std::vector<std::optional<Tensor>> optional_list(const IValue& list) {
  if (list.is_tensor_list()) {
    std::vector<std::optional<Tensor>> out;
    for (const Tensor& t : list.to_tensor_list()) out.emplace_back(t);
    return out;
  }
  return list.to_optional_tensor_list();
}

std::optional<Plan> plan_indexing(const Tensor& self, const IValue& list, IndexOp op) {
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  std::vector<std::optional<Tensor>> per_dim;  // one entry per dim of self it reaches
  for (const auto& raw : optional_list(list)) {
    if (!raw || !raw->defined()) {
      per_dim.emplace_back(std::nullopt);
      continue;
    }
    Tensor t = *raw;
    const ScalarType dt = t.dtype();
    if (dt != kLong && dt != kBool && dt != kByte) return std::nullopt;
    if (!in_device_memory(t)) {
      if (!t.device().is_cpu()) return std::nullopt;
      t = t.to(self.device());
    } else if (t.device() != self.device()) {
      return std::nullopt;
    }
    if (dt == kLong) {
      per_dim.emplace_back(t);
      continue;
    }
    const int64_t start = int64_t(per_dim.size());
    if (start + t.dim() > self.dim()) return std::nullopt;
    for (int64_t j = 0; j < t.dim(); ++j)
      if (t.size(j) != self.size(start + j)) return std::nullopt;
    const Tensor nz = retorch::nonzero(dt == kBool ? t : t.to(kBool));
    for (int64_t j = 0; j < t.dim(); ++j) per_dim.emplace_back(nz.select(1, j));
  }
  const int64_t nd = self.dim();
  if (int64_t(per_dim.size()) > nd) return std::nullopt;
  per_dim.resize(size_t(nd));
  std::vector<int64_t> indexed, plain;
  DimVector bshape;
  for (int64_t d = 0; d < nd; ++d) {
    const auto& t = per_dim[size_t(d)];
    if (!t) {
      plain.push_back(d);
      continue;
    }
    if (indexed.empty()) {
      bshape = DimVector(t->sizes());
    } else {
      if (!broadcastable(bshape, t->sizes())) return std::nullopt;
      bshape = broadcast_shapes(bshape, t->sizes(), "index");
    }
    indexed.push_back(d);
  }
  if (indexed.empty() || indexed.size() > size_t(kMaxIndexTensors)) return std::nullopt;
  const bool adjacent = indexed.back() - indexed.front() + 1 == int64_t(indexed.size());
  std::vector<int64_t> before, after;
  for (int64_t d : plain) (adjacent && d < indexed.front() ? before : after).push_back(d);
  Plan p;
  const size_t nb = bshape.size();
  for (int64_t d : before) p.shape.push_back(self.size(d)), p.restrided.push_back(self.stride(d));
  const size_t b0 = p.shape.size();
  for (int64_t s : bshape) p.shape.push_back(s), p.restrided.push_back(0);
  for (int64_t d : after) p.shape.push_back(self.size(d)), p.restrided.push_back(self.stride(d));
  p.idx.wrap = true;
  p.idx.op = op;
  for (int64_t d : indexed) {
    const Tensor& t = *per_dim[size_t(d)];
    DimVector s(p.shape.size(), 0);
    const DimVector over_b = broadcast_strides(t, bshape);
    for (size_t i = 0; i < nb; ++i) s[b0 + i] = over_b[i];
    const int k = p.idx.count++;
    p.idx.values[k] = static_cast<const int64_t*>(device_ptr(t));
    p.idx.size[k] = self.size(d);
    p.idx.stride[k] = self.stride(d);
    p.index_strides.push_back(s);
    p.held.push_back(t);
  }
  return p;
}

void index(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  if (!in_device_memory(self) || !movable(self) || variant_of(s) != Variant::kFunctional)
    return run_device_fallback(h, ks, stack);
  const auto p = plan_indexing(self, (*stack)[base + 1], IndexOp::kIndex);
  if (!p) return run_device_fallback(h, ks, stack);
  Tensor out = make_empty(p->shape, self.dtype(), self.device());
  if (!launch(IndexMode::kGather, self, p->shape, contiguous_strides(p->shape), p->restrided,
              p->index_strides, p->idx, device_ptr(out)))
    return run_device_fallback(h, ks, stack);
  finish_call(s, Variant::kFunctional, out, stack);
}

// A copy of t made on the device: the dispatched clone (CUDA's is an empty tensor and the device
// copy), below autograd since the kernels run under it.
Tensor device_clone(const Tensor& t) {
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  return t.clone();
}

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->storage().get() == b.impl()->storage().get();
}

// Whether t may hold one element at two places (an expanded tensor): the cpu's path raises or
// copies for those.
bool overlapping(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) == 0) return true;
  return false;
}

void index_put(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[base].to_tensor();
  Tensor values = (*stack)[base + 2].to_tensor();
  const bool accumulate = (*stack)[base + 3].to_bool();
  bool ok = v != Variant::kOut && in_device_memory(self) && movable(self) &&
            values.dtype() == self.dtype() && (!accumulate || add_type(self.dtype()));
  if (ok && values.device().is_cpu()) {  // a Python number's tensor, `x[mask] = 7`
    ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
    values = values.to(self.device(), values.dtype());
  }
  ok = ok && in_device_memory(values) && values.device() == self.device();
  if (!ok) return run_device_fallback(h, ks, stack);
  if (v == Variant::kInplace && overlapping(self))
    return run_device_fallback(h, ks, stack);  // (an expanded self: the cpu's error)
  // (the plan is over the tensor written: a functional call's contiguous copy of self)
  const Tensor out = v == Variant::kInplace ? self : device_clone(self);
  auto p = plan_indexing(out, (*stack)[base + 1], IndexOp::kIndexPut);
  if (!p || !is_expandable_to(values.sizes(), p->shape)) return run_device_fallback(h, ks, stack);
  if (same_storage(values, out)) values = device_clone(values);  // read as it was before
  if (!launch(accumulate ? IndexMode::kAccumulate : IndexMode::kScatter, out, p->shape,
              broadcast_strides(values, p->shape), p->restrided, p->index_strides, p->idx,
              device_ptr(values)))
    return run_device_fallback(h, ks, stack);
  finish_call(s, v, out, stack);
}

// ---- gather / scatter / scatter_add / index_select

// The geometry of gather and the scatters: the iteration shape is the index's, self's stride
// along dim is the index's to replace; false when shapes are outside what the op allows (the
// fallback raises) or the index is not an int64 device tensor.
bool along_dim(IndexOp op, const Tensor& self, int64_t dim, const Tensor& index,
               const Tensor* src, DimVector* restrided, IndexTensors* idx) {
  if (!long_on(index, self) || self.dim() == 0 || index.dim() != self.dim()) return false;
  if (src && (src->dim() != self.dim() || src->dtype() != self.dtype() ||
              !in_device_memory(*src) || src->device() != self.device()))
    return false;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim && index.size(d) > self.size(d)) return false;
    if (src && index.size(d) > src->size(d)) return false;
  }
  *restrided = strides_of(self);
  (*restrided)[size_t(dim)] = 0;
  idx->count = 1;
  idx->wrap = false;
  idx->op = op;
  idx->values[0] = static_cast<const int64_t*>(device_ptr(index));
  idx->size[0] = self.size(dim);
  idx->stride[0] = self.stride(dim);
  return true;
}

void gather(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[base].to_tensor(), index = (*stack)[base + 2].to_tensor();
  DimVector restrided;
  IndexTensors idx;
  const int64_t dim = self.dim() == 0 ? 0 : maybe_wrap_dim((*stack)[base + 1].to_int(), self.dim());
  Tensor out = v == Variant::kOut ? stack->back().to_tensor() : Tensor();
  bool ok = in_device_memory(self) && movable(self) &&
            along_dim(IndexOp::kGather, self, dim, index, nullptr, &restrided, &idx);
  if (ok && out.defined())
    ok = in_device_memory(out) && out.device() == self.device() && out.dtype() == self.dtype() &&
         out.sizes().equals(index.sizes()) && !same_storage(out, self);
  if (!ok) return run_device_fallback(h, ks, stack);
  if (!out.defined()) out = make_empty(index.sizes(), self.dtype(), self.device());
  if (!launch(IndexMode::kGather, self, index.sizes(),
              strides_of(out), restrided,
              {strides_of(index)}, idx, device_ptr(out)))
    return run_device_fallback(h, ks, stack);
  finish_call(s, v, out, stack);
}

// scatter.src / scatter.value / scatter_add in their functional, in-place and out= forms.
void scatter(IndexMode mode, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[base].to_tensor(), index = (*stack)[base + 2].to_tensor();
  const IValue& last = (*stack)[base + 3];
  const bool fill = mode == IndexMode::kFill;
  Tensor src = fill ? Tensor() : last.to_tensor();
  const int64_t dim = self.dim() == 0 ? 0 : maybe_wrap_dim((*stack)[base + 1].to_int(), self.dim());
  DimVector restrided;
  IndexTensors idx;
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  bool ok = in_device_memory(self) && movable(self) &&
            (mode != IndexMode::kAccumulate || add_type(self.dtype())) &&
            along_dim(IndexOp::kScatter, self, dim, index, fill ? nullptr : &src, &restrided,
                      &idx);
  if (ok && v == Variant::kOut)
    ok = in_device_memory(out) && out.device() == self.device() && out.dtype() == self.dtype() &&
         out.sizes().equals(self.sizes());
  if (ok && v == Variant::kInplace)
    ok = !overlapping(self);
  if (!ok) return run_device_fallback(h, ks, stack);
  uint64_t bits = 0;
  if (fill) {  // the value's bit pattern in self's dtype, filled the cpu's way
    Tensor one = make_empty({}, self.dtype());
    {
      ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
      one.fill_(last.to_scalar());
    }
    std::memcpy(&bits, one.impl()->data(), size_t(self.element_size()));
  }
  if (!out.defined()) out = device_clone(self);
  else if (v == Variant::kOut && !out.is_same(self)) RT_CHECK(copy_on_device(out, self), "scatter");
  if (!fill && same_storage(src, out)) src = device_clone(src);
  // (out's strides along dim replace self's: the launch writes out)
  if (v == Variant::kOut || v == Variant::kFunctional) {
    restrided = strides_of(out);
    restrided[size_t(dim)] = 0;
    idx.stride[0] = out.stride(dim);
  }
  const DimVector plain = fill ? DimVector(index.dim(), 0)
                               : strides_of(src);
  if (!launch(mode, out, index.sizes(), plain, restrided,
              {strides_of(index)}, idx,
              fill ? nullptr : device_ptr(src), bits))
    return run_device_fallback(h, ks, stack);
  finish_call(s, v, out, stack);
}

void index_select(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[base].to_tensor(), index = (*stack)[base + 2].to_tensor();
  bool ok = v != Variant::kInplace && in_device_memory(self) && movable(self) &&
            self.dim() > 0 && long_on(index, self) && index.dim() <= 1;
  if (!ok) return run_device_fallback(h, ks, stack);
  const int64_t dim = maybe_wrap_dim((*stack)[base + 1].to_int(), self.dim());
  DimVector shape(self.sizes().begin(), self.sizes().end());
  shape[size_t(dim)] = index.numel();
  // out=: a device tensor of the result's shape and dtype, written through its own strides
  // (others, to be resized, take the fallback).
  Tensor out = v == Variant::kOut ? stack->back().to_tensor() : Tensor();
  if (out.defined() && !(in_device_memory(out) && out.dtype() == self.dtype() &&
                         out.sizes().equals(IntArrayRef(shape)) && !out.is_same(self)))
    return run_device_fallback(h, ks, stack);
  DimVector restrided(self.strides().begin(), self.strides().end());
  restrided[size_t(dim)] = 0;
  DimVector along(shape.size(), 0);
  along[size_t(dim)] = index.dim() == 0 ? 0 : index.stride(0);
  IndexTensors idx;
  idx.count = 1;
  idx.wrap = false;
  idx.op = IndexOp::kIndexSelect;
  idx.values[0] = static_cast<const int64_t*>(device_ptr(index));
  idx.size[0] = self.size(dim);
  idx.stride[0] = self.stride(dim);
  if (!out.defined()) out = make_empty(shape, self.dtype(), self.device());
  if (!launch(IndexMode::kGather, self, shape, strides_of(out), restrided, {along}, idx,
              device_ptr(out)))
    return run_device_fallback(h, ks, stack);
  finish_call(s, v, out, stack);
}

// ---- sort / topk / nonzero


// self sorted along dim (keys and places), in self's shape, contiguous.
std::pair<Tensor, Tensor> sorted_along(const Tensor& self, int64_t dim, bool descending,
                                       std::optional<int64_t> keep = std::nullopt) {
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  std::vector<int64_t> order;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim) order.push_back(d);
  order.push_back(dim);
  const Tensor in = contiguous_on_device(self.permute(order));
  const int64_t n = self.size(dim), rows = self.numel() / n;
  Tensor keys = make_empty(in.sizes(), self.dtype(), self.device());
  Tensor places = make_empty(in.sizes(), kLong, self.device());
  Scratch scratch{self.device(), {}};
  launch_sort_rows(*sort_type(self.dtype()), device_ptr(in), device_ptr(keys),
                   static_cast<int64_t*>(device_ptr(places)), rows, n, descending,
                   &Scratch::get, &scratch, current_stream());
  if (keep) {
    keys = keys.narrow(-1, 0, *keep);
    places = places.narrow(-1, 0, *keep);
  }
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); ++i) back[size_t(order[i])] = int64_t(i);
  return {contiguous_on_device(keys.permute(back)), contiguous_on_device(places.permute(back))};
}

void push_pair(const OpSchema& s, const Tensor& a, const Tensor& b, Stack* stack) {
  stack->erase(stack->end() - s.num_args, stack->end());
  stack->push_back(IValue(a));
  stack->push_back(IValue(b));
}

// sort.stable(self, *, stable, dim, descending): radix sorts are stable either way.
void sort(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  if (!in_device_memory(self) || !sort_type(self.dtype()) || self.dim() == 0 ||
      self.numel() == 0 || variant_of(s) != Variant::kFunctional)
    return run_device_fallback(h, ks, stack);
  const int64_t dim = maybe_wrap_dim((*stack)[base + 2].to_int(), self.dim());
  auto [values, indices] = sorted_along(self, dim, (*stack)[base + 3].to_bool());
  push_pair(s, values, indices, stack);
}

// topk(self, k, dim, largest, sorted): the first k of a sort (sorted either way).
void topk(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  const int64_t k = (*stack)[base + 1].to_int();
  bool ok = in_device_memory(self) && sort_type(self.dtype()) && self.dim() > 0 &&
            self.numel() > 0 && variant_of(s) == Variant::kFunctional;
  const int64_t dim = ok ? maybe_wrap_dim((*stack)[base + 2].to_int(), self.dim()) : 0;
  ok = ok && k >= 0 && k <= self.size(dim);
  if (!ok) return run_device_fallback(h, ks, stack);  // (k out of range: its error)
  auto [values, indices] = sorted_along(self, dim, (*stack)[base + 3].to_bool(), k);
  push_pair(s, values, indices, stack);
}

std::optional<ZeroTest> zero_test(ScalarType t) {
  switch (t) {
    case kFloat: return ZeroTest::kFloat;
    case kDouble: return ZeroTest::kDouble;
    case kHalf: return ZeroTest::kHalf;
    case kBFloat16: return ZeroTest::kBFloat16;
    case kBool: case kByte: case kChar: case kShort: case kInt: case kLong:
      return ZeroTest::kBytes;
    default: return std::nullopt;
  }
}

void nonzero(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  if (!in_device_memory(self) || !zero_test(self.dtype()) || self.dim() > kMaxGeometryDims ||
      variant_of(s) != Variant::kFunctional)
    return run_device_fallback(h, ks, stack);
  const Tensor in = contiguous_on_device(self);
  const int64_t n = self.numel();
  Tensor places = make_empty({std::max<int64_t>(n, 1)}, kLong, self.device());
  Tensor count = make_empty({1}, kLong, self.device());
  Scratch scratch{self.device(), {}};
  launch_select_nonzero(*zero_test(self.dtype()), self.element_size(), device_ptr(in), n,
                        static_cast<int64_t*>(device_ptr(places)),
                        static_cast<int64_t*>(device_ptr(count)), &Scratch::get, &scratch,
                        current_stream());
  int64_t found = 0;
  {
    ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
    found = count.to(Device(kCPU), kLong).item<int64_t>();  // (the synchronization torch has too)
  }
  Tensor out = make_empty({found, self.dim()}, kLong, self.device());
  launch_coordinates(static_cast<const int64_t*>(device_ptr(places)), found,
                     self.sizes().data(), int(self.dim()), static_cast<int64_t*>(device_ptr(out)),
                     current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// where(condition): nonzero(condition)'s columns, one contiguous int64 tensor per dim (a 0-dim
// condition takes the fallback, whose one column nonzero has not got).
void where_condition(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const Tensor cond = (*stack)[stack->size() - size_t(s.num_args)].to_tensor();
  if (!in_device_memory(cond) || cond.dim() == 0) return run_device_fallback(h, ks, stack);
  std::vector<Tensor> columns;
  {
    ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
    const Tensor places = retorch::nonzero(cond);
    for (int64_t d = 0; d < cond.dim(); ++d)
      columns.push_back(contiguous_on_device(places.select(1, d)));
  }
  stack->erase(stack->end() - s.num_args, stack->end());
  stack->push_back(IValue(std::move(columns)));
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
// the rows of grad_output added into a zero [num_weights, D] gradient at their indices by the
// index_put kernel's atomics (in float32, or float64, as the cpu kernel accumulates), rows of
// padding_idx zeroed first. The forward's row gather already checked the indices on the device;
// scale_grad_by_freq and other index dtypes take the fallback.
void embedding_dense_backward(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor grad = (*stack)[base].to_tensor(), indices = (*stack)[base + 1].to_tensor();
  const int64_t num_weights = (*stack)[base + 2].to_int(), padding = (*stack)[base + 3].to_int();
  const bool by_freq = (*stack)[base + 4].to_bool();
  const int64_t n = indices.numel();
  const int64_t D = n == 0 ? (grad.dim() > 0 ? grad.size(-1) : 0) : grad.numel() / n;
  const bool ok = in_device_memory(grad) && is_floating_type(grad.dtype()) &&
                  in_device_memory(indices) && indices.dtype() == kLong && !by_freq &&
                  grad.numel() == n * D && num_weights >= 0;
  if (!ok) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const ScalarType acc = grad.dtype() == kDouble ? kDouble : kFloat;
  const Tensor idx = indices.reshape({n});
  Tensor rows = grad.reshape({n, D}).to(acc);
  if (padding >= 0) rows = rows.masked_fill(idx.eq(padding).unsqueeze(1), 0.0);
  Tensor out = zeros({num_weights, D}, TensorOptions().dtype(acc).device(grad.device()));
  if (n > 0) out.index_put_({std::optional<Tensor>(idx)}, rows, true);
  finish_call(s, Variant::kFunctional, out.to(grad.dtype()), stack);
}

}  // namespace

std::optional<SortType> sort_type(ScalarType t) {
  switch (t) {
    case kFloat: return SortType::kFloat;
    case kDouble: return SortType::kDouble;
    case kHalf: return SortType::kHalf;
    case kBFloat16: return SortType::kBFloat16;
    case kBool:
    case kByte: return SortType::kByte;
    case kChar: return SortType::kChar;
    case kShort: return SortType::kShort;
    case kInt: return SortType::kInt;
    case kLong: return SortType::kLong;
    default: return std::nullopt;
  }
}

void register_index_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view n = s.name, o = s.overload;
    if (n == "index" && o == "Tensor") set_cuda_kernel(h, &index);
    else if ((n == "index_put" || n == "index_put_") && o.empty()) set_cuda_kernel(h, &index_put);
    else if (n == "gather" && (o.empty() || o == "out")) set_cuda_kernel(h, &gather);
    else if (n == "index_select" && (o.empty() || o == "out")) set_cuda_kernel(h, &index_select);
    else if (n == "sort" && o == "stable") set_cuda_kernel(h, &sort);
    else if (n == "topk" && o.empty()) set_cuda_kernel(h, &topk);
    else if (n == "nonzero" && o.empty()) set_cuda_kernel(h, &nonzero);
    else if (n == "where" && o.empty()) set_cuda_kernel(h, &where_condition);
    else if (n == "embedding_dense_backward" && o.empty())
      set_cuda_kernel(h, &embedding_dense_backward);
    else if ((n == "scatter" || n == "scatter_") && (o == "src" || o == "src_out"))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        scatter(IndexMode::kScatter, oh, ks, st);
      });
    else if ((n == "scatter" || n == "scatter_") && (o == "value" || o == "value_out"))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        scatter(IndexMode::kFill, oh, ks, st);
      });
    else if ((n == "scatter_add" || n == "scatter_add_") && (o.empty() || o == "out"))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        scatter(IndexMode::kAccumulate, oh, ks, st);
      });
  }
}

}  // namespace retorch::cuda_backend
