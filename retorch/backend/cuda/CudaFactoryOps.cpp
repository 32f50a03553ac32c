// CUDA kernels of the factories and random fills the pointwise file has not got: arange,
// linspace, eye, random_(from, to) and bernoulli, each filling device memory in place.
#include <algorithm>
#include <cstring>
#include <optional>

#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/backend/cuda/CudaRandom.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cuda_backend {

// Note [CUDA factories]
// A factory's arguments are checked and its result's dtype and size worked out by the cpu
// kernel itself, run for the meta device (Note [Meta through CPU kernels]), so the errors and the
// size rules (arange's integer truncation, linspace's integer endpoints) stay the cpu's; the
// device kernel then writes each element from its index with the cpu's formula (arange: start +
// i * step in double, or in int64 for integer dtypes; linspace: counting up from start for the
// first half and down from end for the second). eye is a zero fill and a fill of the diagonal
// (a strided geometry of min(n, m) elements, stride m + 1). random_ and bernoulli draw the cpu's
// Philox numbers (Note [CUDA random numbers]), so a seed gives the same tensor on both devices.

namespace {

Device device_arg(const IValue& a) { return a.is_none() ? Device(kCUDA) : a.to_device(); }

std::optional<ScalarType> dtype_arg(const IValue& a) {
  if (a.is_none()) return std::nullopt;
  return a.to_scalar_type();
}

// arange.start_step(start, end, step, dtype?, device?)
void arange(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Scalar start = a[0].to_scalar(), end = a[1].to_scalar(), step = a[2].to_scalar();
  const Tensor shape = cpu::arange_start_step(start, end, step, dtype_arg(a[3]), Device(kMeta));
  const auto t = numeric_type(shape.dtype());
  if (!t) return run_device_fallback(h, ks, stack);
  Tensor out = make_empty(shape.sizes(), shape.dtype(), device_arg(a[4]));
  const int64_t n = out.numel();
  const bool integral = !is_floating_type(out.dtype());
  launch_ramp(*t, device_ptr(out), n, integral, integral ? start.to_long() : 0,
              integral ? step.to_long() : 0, start.to_double(), step.to_double(), 0.0, n,
              current_stream());
  push_results(s, {out}, stack);
}

// linspace(start, end, steps, dtype?, device?)
void linspace(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Scalar start = a[0].to_scalar(), end = a[1].to_scalar();
  const int64_t steps = a[2].to_int();
  const Tensor shape = cpu::linspace(start, end, steps, dtype_arg(a[3]), Device(kMeta));
  const auto t = numeric_type(shape.dtype());
  if (!t) return run_device_fallback(h, ks, stack);
  Tensor out = make_empty(shape.sizes(), shape.dtype(), device_arg(a[4]));
  const bool integral = !is_floating_type(out.dtype());  // integer endpoints, as the cpu's
  const double lo = integral ? double(start.to_long()) : start.to_double();
  const double hi = integral ? double(end.to_long()) : end.to_double();
  const double step = steps > 1 ? (hi - lo) / double(steps - 1) : 0.0;
  launch_ramp(*t, device_ptr(out), steps, false, 0, 0, lo, step, hi,
              steps == 1 ? 1 : steps / 2, current_stream());
  push_results(s, {out}, stack);
}

// eye(n, m?, dtype?, device?)
void eye(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const int64_t n = a[0].to_int();
  const std::optional<int64_t> m = a[1].is_none() ? std::nullopt
                                                  : std::optional<int64_t>(a[1].to_int());
  const Tensor shape = cpu::eye(n, m, dtype_arg(a[2]), Device(kMeta));
  const int64_t es = shape.element_size();
  if (!(es == 1 || es == 2 || es == 4 || es == 8)) return run_device_fallback(h, ks, stack);
  Tensor out = make_empty(shape.sizes(), shape.dtype(), device_arg(a[3]));
  const int64_t cols = out.size(1), diag = std::min(out.size(0), cols);
  Geometry<1> g;
  if (out.numel() == 0) return push_results(s, {out}, stack);
  RT_CHECK(geometry_of<1>(out.sizes(), {strides_of(out)}, &g), "cuda eye: a ", out.sizes(),
           " geometry");
  launch_fill_bytes(int(es), g, device_ptr(out), 0, current_stream());
  const int64_t stride = cols + 1;
  const int64_t* strides[1] = {&stride};
  if (diag > 0) {
    RT_CHECK(make_geometry<1>(&diag, 1, strides, &g), "cuda eye: a diagonal of ", diag);
    launch_fill_bytes(int(es), g, device_ptr(out), bits_of(out.dtype(), Scalar(int64_t(1))),
                      current_stream());
  }
  push_results(s, {out}, stack);
}

// random_.from(self, from, to?, generator?): integers in [from, to) in self's numeric dtype.
void random_from(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Tensor self = a[0].to_tensor();
  const int64_t from = a[1].to_int();
  const auto t = numeric_type(self.dtype());
  // The cpu's default bound: 2^min(53, bits - 1) of self's element size.
  const int64_t hi = a[2].is_none()
                         ? int64_t(1) << std::min<int64_t>(53, self.element_size() * 8 - 1)
                         : a[2].to_int();
  if (!t || !in_device_memory(self) || !(from < hi)) return run_device_fallback(h, ks, stack);
  const Tensor target =
      self.is_contiguous() ? self : make_empty(self.sizes(), self.dtype(), self.device());
  const auto [key, first] = generator_arg(a[3]).reserve(uint64_t(target.numel()));
  launch_random_int(*t, device_ptr(target), target.numel(), key, first, uint64_t(hi - from), from,
                    current_stream());
  if (!target.is_same(self)) RT_CHECK(copy_on_device(self, target), "cuda random_: copy failed");
  finish_call(s, Variant::kInplace, self, stack);
}

// bernoulli(self, generator?): 1 where element i's uniform number is below the probability
// self[i]. A probability outside [0, 1] is found on the device and the call is then rerun by
// the fallback, whose cpu kernel raises the error naming it (one synchronization a call).
void bernoulli(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Tensor self = a[0].to_tensor();
  const auto t = float_type(self.dtype());
  if (!t || !in_device_memory(self)) return run_device_fallback(h, ks, stack);
  const Tensor p = contiguous_on_device(self);
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  Tensor bad = make_empty({1}, kInt, self.device());
  Geometry<1> g;
  RT_CHECK(geometry_of<1>(bad.sizes(), {strides_of(bad)}, &g), "cuda bernoulli: a flag");
  launch_fill_bytes(4, g, device_ptr(bad), 0, current_stream());
  const auto [key, first] = generator_arg(a[1]).reserve(uint64_t(out.numel()));
  launch_bernoulli(*t, device_ptr(out), device_ptr(p), out.numel(), key, first,
                   static_cast<int*>(device_ptr(bad)), current_stream());
  bool invalid = false;
  {
    ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
    invalid = bad.to(Device(kCPU)).item<int>() != 0;
  }
  if (invalid) return run_device_fallback(h, ks, stack);
  push_results(s, {out}, stack);
}

}  // namespace

void register_factory_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view n = s.name, o = s.overload;
    if (n == "arange" && o == "start_step") set_cuda_kernel(h, &arange);
    else if (n == "linspace" && o.empty()) set_cuda_kernel(h, &linspace);
    else if (n == "eye" && o.empty()) set_cuda_kernel(h, &eye);
    else if (n == "random_" && o == "from") set_cuda_kernel(h, &random_from);
    else if (n == "bernoulli" && o.empty()) set_cuda_kernel(h, &bernoulli);
  }
}

}  // namespace retorch::cuda_backend
