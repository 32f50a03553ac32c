// TensorIterator construction: result type, broadcast shape, output checks, dim coalescing.
#include "retorch/backend/cpu/TensorIterator.h"

#include <algorithm>
#include <cstdlib>

#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch {

namespace {
int category(ScalarType t) { return t == kBool ? 0 : (is_floating_type(t) ? 2 : 1); }

ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (lower == ScalarType::Undefined) return higher;
  if (is_floating_type(higher)) return higher;
  if (higher == kBool || is_floating_type(lower)) return promote_types(higher, lower);
  return higher;
}

ScalarType promote_skip_undefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return promote_types(a, b);
}
}  // namespace

ScalarType result_type(TensorList tensors) {
  ScalarType dim_r = ScalarType::Undefined, zero_r = ScalarType::Undefined,
             wrapped_r = ScalarType::Undefined;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    ScalarType cur = t.dtype();
    if (t.impl()->is_wrapped_number()) {
      if (is_floating_type(cur)) cur = default_dtype();
      wrapped_r = promote_skip_undefined(wrapped_r, cur);
    } else if (t.dim() == 0) {
      zero_r = promote_skip_undefined(zero_r, cur);
    } else {
      dim_r = promote_skip_undefined(dim_r, cur);
    }
  }
  return combine_categories(dim_r, combine_categories(zero_r, wrapped_r));
}

bool can_cast(ScalarType from, ScalarType to) {
  return category(from) <= category(to);
}

// Note [Output layout]
// Like PyTorch's TensorIterator, a new output follows its inputs' memory layout: relu or add of a
// channels-last (or transposed) tensor is laid out the same way. Inputs of the output's shape
// that are all contiguous give a contiguous output, all channels-last a channels-last one, all
// dense with equal strides those strides; otherwise the dims are ordered by the inputs' strides
// (the first input whose strides differ decides, broadcast dims abstain; PyTorch's
// reorder_dimensions) and the output is dense in that order.
DimVector output_strides(TensorList inputs, IntArrayRef shape) {
  bool contiguous = true, same_shape = true;
  for (const Tensor& t : inputs) {
    contiguous &= t.is_contiguous();
    same_shape &= t.sizes().equals(shape);
  }
  if (contiguous || inputs.empty()) return contiguous_strides(shape);
  if (same_shape) {
    bool channels_last = true, equal = true;
    for (const Tensor& t : inputs) {
      channels_last &= t.is_contiguous(MemoryFormat::ChannelsLast);
      equal &= t.strides().equals(inputs[0].strides());
    }
    if (channels_last) return channels_last_strides(shape);
    if (equal && is_non_overlapping_and_dense_strides(shape, inputs[0].strides()))
      return DimVector(inputs[0].strides());
  }
  const size_t nd = shape.size();
  if (nd <= 1) return contiguous_strides(shape);
  // Each input's strides aligned to shape, 0 where it broadcasts.
  std::vector<DimVector> st;
  for (const Tensor& t : inputs) {
    DimVector s(nd, 0);
    size_t off = nd - size_t(t.dim());
    for (size_t d = 0; d < size_t(t.dim()); ++d)
      s[off + d] = (t.size(int64_t(d)) == 1 && shape[off + d] != 1) ? 0 : t.stride(int64_t(d));
    st.push_back(s);
  }
  // 1: dim0 goes after (is slower than) dim1; -1: before; 0: no input decides.
  auto should_swap = [&](size_t d0, size_t d1) {
    for (const DimVector& s : st) {
      if (s[d0] == 0 || s[d1] == 0) continue;
      if (s[d0] != s[d1]) return s[d0] < s[d1] ? -1 : 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  std::vector<size_t> perm(nd);  // perm[0] is the fastest dim
  for (size_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  for (size_t i = 1; i < nd; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  DimVector out(nd);
  int64_t next = 1;
  for (size_t i = 0; i < nd; ++i) {
    out[perm[i]] = next;
    next *= std::max<int64_t>(shape[perm[i]], 1);
  }
  return out;
}

TensorIterator::TensorIterator(Tensor& out, std::initializer_list<Tensor> inputs,
                               const Config& cfg)
    : user_out_(&out) {
  n_ = 1 + int(inputs.size());
  RT_INTERNAL_ASSERT(n_ <= kMaxOperands);
  int k = 1;
  for (const Tensor& t : inputs) {
    RT_CHECK(t.defined(), cfg.name, ": expected a defined tensor for argument ", k - 1);
    operands_[k++] = t;
  }
  // Device: every input must be on the same device (0-dim CPU tensors may mix in).
  Device dev = operands_[1].device();
  for (int i = 1; i < n_; ++i) {
    if (operands_[i].dim() == 0 && operands_[i].is_cpu()) continue;
    dev = operands_[i].device();
  }
  for (int i = 1; i < n_; ++i) {
    const Tensor& t = operands_[i];
    RT_CHECK(t.device() == dev || (t.dim() == 0 && t.is_cpu()), cfg.name,
             ": expected all tensors to be on the same device, but found at least two devices, ",
             dev, " and ", t.device());
  }
  meta_ = dev.is_meta();
  // Shape.
  DimVector shape(operands_[1].sizes());
  for (int i = 2; i < n_; ++i)
    if (!operands_[i].sizes().equals(shape)) shape = broadcast_shapes(shape, operands_[i].sizes(), cfg.name);
  // Dtypes.
  if (cfg.common) {
    common_ = *cfg.common;
  } else {
    common_ = result_type(TensorList(operands_ + 1, size_t(n_ - 1)));
    if (cfg.int_to_float && !is_floating_type(common_)) common_ = default_dtype();
  }
  ScalarType want_out = cfg.out_dtype.value_or(common_);
  if (cfg.promote_inputs) {
    for (int i = 1; i < n_; ++i) {
      if (operands_[i].dtype() != common_) operands_[i] = operands_[i].to(common_);
    }
  }
  // Output.
  Tensor& o = out;
  if (o.defined()) {
    if (cfg.check_mem_overlap) {
      detail::assert_no_internal_overlap(o, cfg.name);
      for (const Tensor& t : inputs) detail::assert_no_partial_overlap(o, t, cfg.name);
    }
    bool is_input = false;
    for (int i = 1; i < n_; ++i) is_input |= o.is_same(*(inputs.begin() + (i - 1)));
    if (!o.sizes().equals(shape)) {
      RT_CHECK(!is_input && cfg.allow_resize_out, cfg.name, ": output with shape ", o.sizes(),
               " doesn't match the broadcast shape ", IntArrayRef(shape));
      detail::resize_output(o, shape, cfg.name);
    }
    RT_CHECK(can_cast(want_out, o.dtype()), cfg.name, ": result type ", want_out,
             " can't be cast to the desired output type ", o.dtype());
    // Write through a temporary when dtypes differ or memory overlaps an input partially.
    bool overlap = false;
    for (int i = 1; i < n_; ++i) {
      const Tensor& t = operands_[i];
      if (t.impl()->storage().get() == o.impl()->storage().get() &&
          !(t.strides().equals(o.strides()) && t.storage_offset() == o.storage_offset() &&
            t.sizes().equals(o.sizes())))
        overlap = true;
    }
    if (o.dtype() != want_out || overlap) {
      operands_[0] = make_empty(shape, want_out, dev);
      needs_copy_back_ = true;
    } else {
      operands_[0] = o;
    }
  } else {
    o = make_empty_strided(shape, output_strides(TensorList(operands_ + 1, size_t(n_ - 1)), shape),
                           want_out, dev);
    operands_[0] = o;
  }
  shape_ = shape;
  numel_ = compute_numel(shape_);
  // Byte strides, 0 where broadcast.
  size_t nd = shape_.size();
  for (int i = 0; i < n_; ++i) {
    const Tensor& t = operands_[i];
    strides_[i] = DimVector(nd, 0);
    int64_t isz = t.element_size();
    IntArrayRef ts = t.sizes(), tst = t.strides();
    size_t off = nd - ts.size();
    for (size_t d = 0; d < ts.size(); ++d) strides_[i][off + d] = ts[d] == 1 ? 0 : tst[d] * isz;
    base_[i] = numel_ == 0 || meta_ ? nullptr : static_cast<char*>(t.impl()->data());
  }
  coalesce();
}

void TensorIterator::coalesce() {
  // Drop size-1 dims and order the rest by the output's strides, slowest first (a no-op for
  // row-major outputs; a channels-last one gets its channel dim innermost, see Note [Output
  // layout]), then merge neighbours whose strides chain for every operand.
  // An insertion sort on an inline vector: this runs for every op, so no heap allocation.
  // One dim: nothing to order or merge (a single element: stride 0). Building the vectors below
  // for it was 8% of a replayed 16-float op: `bench_overhead` three ops 543-561 -> 474-488 ns,
  // 1-element add kernel 111-157 -> 90-92 ns (Zen 4).
  if (shape_.size() == 1) {
    if (shape_[0] == 1)
      for (int i = 0; i < n_; ++i) strides_[i][0] = 0;
    return;
  }
  DimVector order;
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] == 1) continue;
    size_t i = order.size();
    order.push_back(int64_t(d));
    for (; i > 0 && std::abs(strides_[0][size_t(order[i - 1])]) < std::abs(strides_[0][d]); --i)
      order[i] = order[i - 1];
    order[i] = int64_t(d);
  }
  DimVector shape;
  std::array<DimVector, kMaxOperands> st;
  for (int64_t d : order) {
    shape.push_back(shape_[size_t(d)]);
    for (int i = 0; i < n_; ++i) st[i].push_back(strides_[i][size_t(d)]);
  }
  DimVector cs;
  std::array<DimVector, kMaxOperands> cst;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!cs.empty()) {
      bool ok = true;
      for (int i = 0; i < n_; ++i) ok &= cst[i].back() == st[i][d] * shape[d];
      if (ok) {
        cs.back() *= shape[d];
        for (int i = 0; i < n_; ++i) cst[i].back() = st[i][d];
        continue;
      }
    }
    cs.push_back(shape[d]);
    for (int i = 0; i < n_; ++i) cst[i].push_back(st[i][d]);
  }
  if (cs.empty() && numel_ == 1) {
    cs.push_back(1);
    for (int i = 0; i < n_; ++i) cst[i].push_back(0);
  }
  RT_CHECK(cs.size() <= 16, "TensorIterator: too many dimensions");
  shape_ = cs;
  for (int i = 0; i < n_; ++i) strides_[i] = cst[i];
}

void TensorIterator::finish() {
  if (needs_copy_back_) {
    user_out_->copy_(operands_[0]);
  }
}

namespace detail {
// Note [Internal overlap]
// A tensor with a stride-0 dim of size > 1 (an expanded tensor) has several elements at one
// memory location; writing a different value to each is undefined, so like PyTorch we refuse
// to use such a tensor as an output (in-place self or out=). fill_ is exempt (every element
// gets the same value) and so is masked_fill_, which PyTorch only warns about. Outputs that
// share memory with an input other than exactly are refused too (assert_no_partial_overlap).
void assert_no_internal_overlap(const Tensor& t, const char* op) {
  if (t.numel() == 0) return;  // nothing is written
  for (int64_t d = 0; d < t.dim(); ++d) {
    RT_CHECK(!(t.size(d) > 1 && t.stride(d) == 0), op, ": unsupported operation: more than one "
             "element of the written-to tensor refers to a single memory location. Please "
             "clone() the tensor before performing the operation.");
  }
}

void raise_undefined(const char* op, const char* arg) {
  RT_ERROR(op, "(): expected a defined Tensor for argument '", arg, "' but got an undefined tensor");
}

namespace {
// Every element at its own address with no gaps (any dim order), like PyTorch's
// is_non_overlapping_and_dense; only such tensors get the exact overlap test below.
bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(),
            [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}
}  // namespace

void assert_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  // PyTorch's get_overlap_status: the same memory with the same strides is a full (in-place)
  // overlap and fine; any other sharing of dense tensors is refused. Non-dense pairs are too
  // hard to decide and allowed (the iterator then writes through a temporary).
  if (out.is_same(in) || out.numel() == 0 || in.numel() == 0) return;
  if (out.impl()->storage().get() != in.impl()->storage().get()) return;
  if (!non_overlapping_and_dense(out) || !non_overlapping_and_dense(in)) return;
  const char* ob = static_cast<const char*>(out.impl()->data());
  const char* oe = ob + out.numel() * out.element_size();
  const char* ib = static_cast<const char*>(in.impl()->data());
  const char* ie = ib + in.numel() * in.element_size();
  bool partial = (ob == ib && oe == ie) ? !out.strides().equals(in.strides())
                                        : (ob < ie && ib < oe);
  RT_CHECK(!partial, op, ": unsupported operation: some elements of the input tensor and the "
           "written-to tensor refer to a single memory location. Please clone() the tensor "
           "before performing the operation.");
}

void resize_output(const Tensor& out, IntArrayRef shape, const char* op) {
  if (out.sizes().equals(shape)) return;
  (void)op;
  out.impl()->resize_contiguous(shape);
}
}  // namespace detail

}  // namespace retorch
