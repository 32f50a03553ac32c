// CUDA kernels of fill_ and zero_, where, masked_fill, cat, uniform_ and normal_ at the CUDA key.
#include <cstring>
#include <string_view>
#include <vector>

#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/backend/cuda/CudaRandom.h"
#include "retorch/core/Error.h"
#include "retorch/core/Shape.h"
#include "retorch/core/TensorImpl.h"

namespace retorch::cuda_backend {

// See Note [CUDA op kernels] (CudaOps.cpp): the same rules of what a kernel covers and what takes
// the device fallback.

namespace {

// fill_ and zero_ of any dtype whose elements are 1, 2, 4 or 8 bytes: the value's bit pattern in
// self's dtype comes from a one-element cpu tensor filled the cpu's way.
void fill_kernel(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  const int64_t es = self.element_size();
  if (!in_device_memory(self) || !(es == 1 || es == 2 || es == 4 || es == 8))
    return run_device_fallback(h, ks, stack);
  const Scalar value = s.num_args > 1 ? (*stack)[base + 1].to_scalar() : Scalar(int64_t(0));
  const uint64_t bits = bits_of(self.dtype(), value);
  Geometry<1> g;
  if (!geometry_of<1>(self.sizes(), {strides_of(self)}, &g))
    return run_device_fallback(h, ks, stack);
  launch_fill_bytes(int(es), g, device_ptr(self), bits, current_stream());
  finish_call(s, Variant::kInplace, self, stack);
}

// where.self(condition, self, other): a bool condition on the device choosing between two
// floating tensors, all broadcast together, in their promoted dtype.
void where(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor cond = (*stack)[base].to_tensor();
  Tensor a = (*stack)[base + 1].to_tensor(), b = (*stack)[base + 2].to_tensor();
  bool ok = in_device_memory(cond) && cond.dtype() == kBool && in_device_memory(a) &&
            in_device_memory(b) && float_type(a.dtype()) && float_type(b.dtype());
  if (!ok) return run_device_fallback(h, ks, stack);
  const ScalarType rt = result_type({a, b});
  const DimVector shape =
      broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes(), "where"), b.sizes(), "where");
  for (Tensor* t : {&a, &b}) {
    if (t->dtype() == rt) continue;
    auto c = converted(*t, rt);
    if (!c) return run_device_fallback(h, ks, stack);
    *t = *c;
  }
  Tensor out = make_empty(shape, rt, a.device());
  Geometry<4> g;
  if (!geometry_of<4>(shape, {strides_of(out), broadcast_strides(cond, shape),
                              broadcast_strides(a, shape), broadcast_strides(b, shape)}, &g))
    return run_device_fallback(h, ks, stack);
  launch_select(*float_type(rt), g, device_ptr(out), static_cast<const bool*>(device_ptr(cond)),
                device_ptr(a), false, 0.0, device_ptr(b), false, 0.0, current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// masked_fill(self, mask, value) and masked_fill_: value where the (broadcast) mask is set. The
// Tensor overload's value is 0-dim: a cpu one passes its number, a device one of self's dtype is
// read by every thread (no synchronization).
void masked_fill(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const Tensor self = (*stack)[base].to_tensor(), mask = (*stack)[base + 1].to_tensor();
  const IValue& arg = (*stack)[base + 2];
  const Tensor value_tensor = arg.is_tensor() ? arg.to_tensor() : Tensor();
  const bool on_device = value_tensor.defined() && in_device_memory(value_tensor);
  bool ok = in_device_memory(self) && float_type(self.dtype()) && in_device_memory(mask) &&
            mask.dtype() == kBool && mask.dim() <= self.dim();
  if (value_tensor.defined())
    ok = ok && value_tensor.dim() == 0 &&
         (!on_device || value_tensor.dtype() == self.dtype());
  const double value = !ok || on_device ? 0.0
                       : value_tensor.defined() ? value_tensor.item().to_double()
                                                : arg.to_scalar().to_double();
  for (int64_t d = 0; ok && d < mask.dim(); ++d) {
    const int64_t m = mask.size(d), x = self.size(self.dim() - mask.dim() + d);
    ok = m == x || m == 1;
  }
  if (!ok) return run_device_fallback(h, ks, stack);
  Tensor out =
      v == Variant::kInplace ? self : make_empty(self.sizes(), self.dtype(), self.device());
  Geometry<4> g;
  const DimVector zeros(size_t(self.dim()), 0);
  if (!geometry_of<4>(self.sizes(), {strides_of(out), broadcast_strides(mask, self.sizes()), zeros,
                                     strides_of(self)}, &g))
    return run_device_fallback(h, ks, stack);
  launch_select(*float_type(self.dtype()), g, device_ptr(out),
                static_cast<const bool*>(device_ptr(mask)),
                on_device ? device_ptr(value_tensor) : nullptr, !on_device, value,
                device_ptr(self), false, 0.0, current_stream());
  finish_call(s, v, out, stack);
}

// cat(tensors, dim) and cat.out: each tensor copied on the device into its slice of the result
// (1-D empty tensors skipped, as PyTorch's legacy rule does); mixed dtypes take the fallback.
void cat(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  std::vector<Tensor> parts;
  for (const Tensor& t : (*stack)[base].to_tensor_list())
    if (!(t.defined() && t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  bool ok = !parts.empty();
  for (const Tensor& t : parts)
    ok = ok && t.defined() && in_device_memory(t) && t.dtype() == parts[0].dtype() &&
         t.dim() == parts[0].dim() && t.dim() > 0;
  const int64_t dim = ok ? maybe_wrap_dim((*stack)[base + 1].to_int(), parts[0].dim(), "cat") : 0;
  DimVector shape = ok ? DimVector(parts[0].sizes().begin(), parts[0].sizes().end()) : DimVector();
  if (ok) shape[size_t(dim)] = 0;
  for (const Tensor& t : parts) {
    for (int64_t d = 0; ok && d < t.dim(); ++d) ok = d == dim || t.size(d) == shape[size_t(d)];
    if (ok) shape[size_t(dim)] += t.size(dim);
  }
  Tensor out = v == Variant::kOut ? stack->back().to_tensor() : Tensor();
  if (ok && out.defined())
    ok = in_device_memory(out) && out.dtype() == parts[0].dtype() &&
         out.sizes().equals(IntArrayRef(shape));
  if (!ok) return run_device_fallback(h, ks, stack);  // its checks name shapes and dtypes
  if (!out.defined()) out = make_empty(shape, parts[0].dtype(), parts[0].device());
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});  // narrow
  int64_t offset = 0;
  for (const Tensor& t : parts) {
    if (t.numel() > 0)
      RT_CHECK(copy_on_device(out.narrow(dim, offset, t.size(dim)), t),
               "cuda cat: the copy of a ", t.dim(), "-dim tensor failed");
    offset += t.size(dim);
  }
  finish_call(s, v, out, stack);
}

// uniform_(self, from, to, generator?) and normal_(self, mean, std, generator?) on floating
// device tensors, from the generator the cpu kernels use (Note [CUDA random numbers]).
void random_fill(bool normal, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  const double a = (*stack)[base + 1].to_double(), b = (*stack)[base + 2].to_double();
  const IValue& gen = (*stack)[base + 3];
  const bool ok = in_device_memory(self) && float_type(self.dtype()) && (normal ? b >= 0 : a <= b);
  if (!ok) return run_device_fallback(h, ks, stack);  // its checks and errors
  Generator& g = generator_arg(gen);
  const Tensor target = self.is_contiguous() ? self : make_empty(self.sizes(), self.dtype(),
                                                                 self.device());
  const auto [key, first] = g.reserve(uint64_t(target.numel()));
  launch_random(normal ? Distribution::kNormal : Distribution::kUniform,
                *float_type(self.dtype()), device_ptr(target), target.numel(), key, first, a, b,
                current_stream());
  if (!target.is_same(self)) RT_CHECK(copy_on_device(self, target), "cuda random: copy failed");
  finish_call(s, Variant::kInplace, self, stack);
}

}  // namespace

void register_fill_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view base = base_name(s);
    const bool out = variant_of(s) == Variant::kOut;
    if ((s.name == "fill_" && s.overload == "Scalar") || (s.name == "zero_" && s.overload.empty()))
      set_cuda_kernel(h, &fill_kernel);
    if (s.name == "where" && s.overload == "self") set_cuda_kernel(h, &where);
    if (s.name == "cat" && (s.overload.empty() || out)) set_cuda_kernel(h, &cat);
    if (s.name == "uniform_" && s.overload.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet k, Stack* st) {
        random_fill(false, oh, k, st);
      });
    if (s.name == "normal_" && s.overload.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet k, Stack* st) {
        random_fill(true, oh, k, st);
      });
    if (base == "masked_fill" && (s.overload == "Scalar" || s.overload == "Tensor"))
      set_cuda_kernel(h, &masked_fill);
  }
}

}  // namespace retorch::cuda_backend
