// CUDA kernels of im2col, col2im, scatter_reduce (functional, in-place and out=), _embedding_bag
// and embedding_renorm_ at the CUDA key; and so, through their composites and backward
// formulas, F.unfold/F.fold, embedding_bag and F.embedding's max_norm.
#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "retorch/backend/cuda/CudaGather.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"

namespace retorch::cuda_backend {

// See Note [CUDA gather ops] in CudaGather.cu. The host side takes floating tensors (float,
// double and the 16-bit floats) in the device memory of one device and int64 index tensors
// there; strided inputs are read through their strides. Everything else (other dtypes, cpu
// index tensors, int32 indices or offsets, empty images, arguments or shapes the cpu kernel
// refuses, out= of another shape) takes the device fallback, so its results and errors are the
// cpu kernel's. Index values and offsets are checked on the device.

namespace {

// t is an int64 tensor in x's device memory.
bool long_beside(const Tensor& t, const Tensor& x) {
  return t.defined() && t.dtype() == kLong && in_device_memory(t) && t.device() == x.device();
}

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->storage().get() == b.impl()->storage().get();
}

// Whether t may hold one element at two places (an expanded tensor).
bool overlapping(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) == 0) return true;
  return false;
}

// A copy of t made on the device, below autograd (the kernels run under it).
Tensor device_clone(const Tensor& t) {
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  return t.clone();
}

// ---- im2col / col2im

// A pair argument as the cpu kernel expands it (one value for both dims); nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> pair_arg(const IValue& v) {
  const std::vector<int64_t>& p = v.to_int_list();
  if (p.size() == 1) return std::make_pair(p[0], p[0]);
  if (p.size() == 2) return std::make_pair(p[0], p[1]);
  return std::nullopt;
}

// The window arguments at stack[at..at + 3] (kernel_size, dilation, padding, stride) for images
// of h x w, with the window positions; false where the cpu kernel raises.
bool fold_shape(const Stack& stack, size_t at, int64_t h, int64_t w, FoldShape* g) {
  const auto k = pair_arg(stack[at]), d = pair_arg(stack[at + 1]);
  const auto p = pair_arg(stack[at + 2]), s = pair_arg(stack[at + 3]);
  if (!k || !d || !p || !s) return false;
  g->kh = k->first, g->kw = k->second, g->dh = d->first, g->dw = d->second;
  g->ph = p->first, g->pw = p->second, g->sh = s->first, g->sw = s->second;
  if (g->kh <= 0 || g->kw <= 0 || g->dh <= 0 || g->dw <= 0 || g->ph < 0 || g->pw < 0 ||
      g->sh <= 0 || g->sw <= 0 || h <= 0 || w <= 0)
    return false;
  g->h = h, g->w = w;
  const int64_t span_h = g->dh * (g->kh - 1) + 1, span_w = g->dw * (g->kw - 1) + 1;
  if (h + 2 * g->ph < span_h || w + 2 * g->pw < span_w) return false;
  g->oh = (h + 2 * g->ph - span_h) / g->sh + 1;
  g->ow = (w + 2 * g->pw - span_w) / g->sw + 1;
  return true;
}

// im2col(self, kernel_size, dilation, padding, stride): [c, h, w] or [n, c, h, w] images.
void im2col(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor x = (*stack)[base].to_tensor();
  const bool batched = x.dim() == 4;
  FoldShape g;
  bool ok = on_device(x) && (x.dim() == 3 || batched) && variant_of(s) == Variant::kFunctional;
  if (ok) {
    const int64_t lead = batched ? 1 : 0;
    g.n = batched ? x.size(0) : 1;
    g.c = x.size(lead);
    ok = g.c > 0 && fold_shape(*stack, base + 1, x.size(lead + 1), x.size(lead + 2), &g);
    g.in_strides[0] = batched ? x.stride(0) : 0;
    for (int64_t d = 0; ok && d < 3; ++d) g.in_strides[d + 1] = x.stride(lead + d);
  }
  if (!ok) return run_device_fallback(h, ks, stack);
  const int64_t rows = g.c * g.kh * g.kw, cols = g.oh * g.ow;
  Tensor out = batched ? make_empty({g.n, rows, cols}, x.dtype(), x.device())
                       : make_empty({rows, cols}, x.dtype(), x.device());
  launch_im2col(*float_type(x.dtype()), device_ptr(x), device_ptr(out), g, current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// col2im(self, output_size, kernel_size, dilation, padding, stride): [c kh kw, L] or
// [n, c kh kw, L] columns, L the number of window positions.
void col2im(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor cols = (*stack)[base].to_tensor();
  const bool batched = cols.dim() == 3;
  const auto size = pair_arg((*stack)[base + 1]);
  FoldShape g;
  bool ok = on_device(cols) && (cols.dim() == 2 || batched) && size &&
            variant_of(s) == Variant::kFunctional;
  if (ok) {
    const int64_t lead = batched ? 1 : 0;
    g.n = batched ? cols.size(0) : 1;
    ok = fold_shape(*stack, base + 2, size->first, size->second, &g);
    const int64_t k = cols.size(lead), l = cols.size(lead + 1);
    ok = ok && k > 0 && l > 0 && k % (g.kh * g.kw) == 0 && g.oh * g.ow == l;
    g.c = ok ? k / (g.kh * g.kw) : 0;
    g.in_strides[0] = batched ? cols.stride(0) : 0;
    g.in_strides[1] = cols.stride(lead);
    g.in_strides[2] = cols.stride(lead + 1);
  }
  if (!ok) return run_device_fallback(h, ks, stack);
  Tensor out = batched ? make_empty({g.n, g.c, g.h, g.w}, cols.dtype(), cols.device())
                       : make_empty({g.c, g.h, g.w}, cols.dtype(), cols.device());
  launch_col2im(*float_type(cols.dtype()), device_ptr(cols), device_ptr(out), g,
                current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// ---- scatter_reduce

std::optional<ScatterReduce> reduction_of(std::string_view r) {
  if (r == "sum") return ScatterReduce::kSum;
  if (r == "prod") return ScatterReduce::kProd;
  if (r == "mean") return ScatterReduce::kMean;
  if (r == "amax") return ScatterReduce::kAmax;
  if (r == "amin") return ScatterReduce::kAmin;
  return std::nullopt;  // (the cpu kernel's error)
}

// The shapes scatter_reduce allows along dim, for the kernels (0-dim self takes the fallback).
bool scatter_shapes(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (self.dim() == 0 || index.dim() != self.dim() || src.dim() != self.dim()) return false;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim && index.size(d) > self.size(d)) return false;
    if (index.size(d) > src.size(d)) return false;
  }
  return true;
}

// scatter_reduce.two(self, dim, index, src, reduce, *, include_self) and its in-place and out=
// forms: the work happens on a contiguous result (out itself when it is contiguous), as on the
// cpu (Note [scatter_reduce]).
void scatter_reduce(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[base].to_tensor(), index = (*stack)[base + 2].to_tensor();
  Tensor src = (*stack)[base + 3].to_tensor();
  const auto r = reduction_of((*stack)[base + 4].to_string());
  const bool include_self = (*stack)[base + 5].to_bool();
  Tensor out = v == Variant::kOut ? stack->back().to_tensor()
               : v == Variant::kInplace ? self : Tensor();
  const int64_t nd = self.dim(), raw_dim = (*stack)[base + 1].to_int();
  bool ok = on_device(self) && r && alongside(src, self) && long_beside(index, self) &&
            raw_dim >= -nd && raw_dim < nd;  // (a 0-dim self, or a bad dim: the fallback)
  const int64_t dim = raw_dim < 0 ? raw_dim + nd : raw_dim;
  ok = ok && scatter_shapes(self, dim, index, src);
  if (ok && v == Variant::kOut)
    ok = alongside(out, self) && out.sizes().equals(self.sizes()) && !overlapping(out);
  if (ok && v == Variant::kInplace) ok = !overlapping(self);
  if (!ok) return run_device_fallback(h, ks, stack);
  if (!out.defined()) out = device_clone(self);
  else if (v == Variant::kOut && !out.is_same(self))
    RT_CHECK(copy_on_device(out, self), "scatter_reduce");
  if (same_storage(src, out)) src = device_clone(src);  // read as it was before
  const Tensor w = out.is_contiguous() ? out : contiguous_on_device(out);
  DimVector strides[3] = {strides_of(w), strides_of(src), strides_of(index)};
  strides[0][size_t(dim)] = 0;
  Geometry<3> g;
  if (!geometry_of<3>(index.sizes(), strides, &g)) return run_device_fallback(h, ks, stack);
  ScatterArgs a;
  a.out = device_ptr(w);
  a.src = device_ptr(src);
  a.index = static_cast<const int64_t*>(device_ptr(index));
  a.dim_size = w.size(dim);
  a.dim_stride = w.stride(dim);
  a.out_numel = w.numel();
  a.include_self = include_self;
  Tensor counts;
  if (*r == ScatterReduce::kMean) counts = make_empty({w.numel()}, kInt, w.device());
  launch_scatter_reduce(*float_type(self.dtype()), *r, g, a,
                        counts.defined() ? static_cast<int32_t*>(device_ptr(counts)) : nullptr,
                        current_stream());
  if (!w.is_same(out)) RT_CHECK(copy_on_device(out, w), "scatter_reduce");
  finish_call(s, v, out, stack);
}

// ---- _embedding_bag / embedding_renorm_

// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights?,
// include_last_offset, padding_idx): output, offset2bag, bag_size and max_indices as the cpu
// kernel returns them (max_indices is a copy of bag_size outside max mode).
void embedding_bag(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor weight = (*stack)[base].to_tensor();
  const Tensor indices = (*stack)[base + 1].to_tensor(), offsets = (*stack)[base + 2].to_tensor();
  const int64_t mode = (*stack)[base + 4].to_int();
  const bool sparse = (*stack)[base + 5].to_bool();
  const IValue& psw_arg = (*stack)[base + 6];
  const Tensor psw = psw_arg.is_none() ? Tensor() : psw_arg.to_tensor();
  const bool last = (*stack)[base + 7].to_bool();
  BagShape g;
  bool ok = on_device(weight) && weight.dim() == 2 && !sparse && mode >= 0 && mode <= 2 &&
            long_beside(indices, weight) && indices.dim() == 1 &&
            long_beside(offsets, weight) && offsets.dim() == 1;
  if (ok) {
    g.n = indices.numel();
    g.offsets = offsets.numel();
    g.bags = g.offsets - (last ? 1 : 0);
    g.rows = weight.size(0);
    g.dim = weight.size(1);
    g.row_stride = weight.stride(0);
    g.col_stride = weight.stride(1);
    g.padding_idx = (*stack)[base + 8].to_int();
    g.mode = int(mode);
    ok = g.bags >= 0 && g.dim > 0;
  }
  if (ok && psw.defined())
    ok = mode == 0 && alongside(psw, weight) && psw.dim() == 1 && psw.numel() == g.n;
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor idx = contiguous_on_device(indices), off = contiguous_on_device(offsets);
  const Tensor weights = psw.defined() ? contiguous_on_device(psw) : Tensor();
  const Device dev = weight.device();
  Tensor out = make_empty({g.bags, g.dim}, weight.dtype(), dev);
  Tensor offset2bag = make_empty({g.n}, kLong, dev);
  Tensor bag_size = make_empty({g.bags}, kLong, dev);
  Tensor max_indices = mode == 2 ? make_empty({g.bags, g.dim}, kLong, dev)
                                 : make_empty({g.bags}, kLong, dev);
  launch_embedding_bag(*float_type(weight.dtype()), device_ptr(weight),
                       static_cast<const int64_t*>(device_ptr(idx)),
                       static_cast<const int64_t*>(device_ptr(off)),
                       weights.defined() ? device_ptr(weights) : nullptr, device_ptr(out),
                       static_cast<int64_t*>(device_ptr(offset2bag)),
                       static_cast<int64_t*>(device_ptr(bag_size)),
                       static_cast<int64_t*>(device_ptr(max_indices)), g, current_stream());
  push_results(s, {out, offset2bag, bag_size, max_indices}, stack);
}

// embedding_renorm_(self, indices, max_norm, norm_type): a 2-d weight, indices of any shape.
void embedding_renorm(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor(), indices = (*stack)[base + 1].to_tensor();
  const bool ok = on_device(self) && self.dim() == 2 && !overlapping(self) &&
                  long_beside(indices, self);
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor idx = contiguous_on_device(indices);
  Tensor claimed = make_empty({std::max<int64_t>(self.size(0), 1)}, kInt, self.device());
  launch_embedding_renorm(*float_type(self.dtype()), device_ptr(self), self.size(0), self.size(1),
                          self.stride(0), self.stride(1),
                          static_cast<const int64_t*>(device_ptr(idx)), idx.numel(),
                          static_cast<int32_t*>(device_ptr(claimed)),
                          (*stack)[base + 2].to_double(), (*stack)[base + 3].to_double(),
                          current_stream());
  finish_call(s, Variant::kInplace, self, stack);
}

}  // namespace

void register_gather_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view n = s.name, o = s.overload;
    if (n == "im2col" && o.empty()) set_cuda_kernel(h, &im2col);
    else if (n == "col2im" && o.empty()) set_cuda_kernel(h, &col2im);
    else if ((n == "scatter_reduce" || n == "scatter_reduce_") && (o == "two" || o == "two_out"))
      set_cuda_kernel(h, &scatter_reduce);
    else if (n == "_embedding_bag" && o.empty()) set_cuda_kernel(h, &embedding_bag);
    else if (n == "embedding_renorm_" && o.empty()) set_cuda_kernel(h, &embedding_renorm);
  }
}

}  // namespace retorch::cuda_backend
