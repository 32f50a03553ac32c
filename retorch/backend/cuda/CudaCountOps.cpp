// CUDA kernels of the counting ops at the CUDA key: histc, bincount, searchsorted.Tensor,
// repeat_interleave.Tensor and _unique2; and so, through their composites, bucketize,
// searchsorted.Scalar, the other repeat_interleave overloads and unique.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/backend/cuda/CudaCount.h"
#include "retorch/backend/cuda/CudaIndex.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/generated/Functions.h"

namespace retorch::cuda_backend {

// See Note [CUDA counting ops] in CudaCount.cu. The host side takes tensors in the device memory
// of one device and reads back, in one copy, the little a result's size or range needs. Every
// call the cpu kernel would refuse (bad arguments, negative values, a range that is not finite)
// and every call outside the kernels' dtypes, empty inputs included, takes the device fallback,
// so results and errors there are the cpu kernel's.

namespace {

std::optional<NumericType> int_type(ScalarType t) {
  const auto n = numeric_type(t);
  if (!n || is_floating_type(t)) return std::nullopt;
  return n;
}

// A small device tensor's values on the host (the synchronization of Note [CUDA counting ops]).
Tensor to_host(const Tensor& t) {
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  return t.to(Device(kCPU));
}

// histc(self, bins, min, max): min == max reads the data's range (as the cpu's).
void histc(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Tensor self = a[0].to_tensor();
  const int64_t bins = a[1].to_int();
  const auto t = float_type(self.dtype());
  if (!in_device_memory(self) || !t || bins <= 0 || self.numel() == 0)
    return run_device_fallback(h, ks, stack);
  double lo = a[2].to_scalar().to_double(), hi = a[3].to_scalar().to_double();
  const Tensor x = contiguous_on_device(self);
  const int64_t n = x.numel();
  Scratch scratch{self.device(), {}};
  if (lo == hi) {
    Tensor range = make_empty({2}, kDouble, self.device());
    launch_min_max_float(*t, device_ptr(x), n, static_cast<double*>(device_ptr(range)),
                         &Scratch::get, &scratch, current_stream());
    const Tensor r = to_host(range);
    lo = r.data_ptr<double>()[0];
    hi = r.data_ptr<double>()[1];
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi))  // (the cpu's errors)
    return run_device_fallback(h, ks, stack);
  Tensor out = make_empty({bins}, self.dtype(), self.device());
  launch_histc(*t, device_ptr(x), n, bins, lo, hi, device_ptr(out), &Scratch::get, &scratch,
               current_stream());
  push_results(s, {out}, stack);
}

// bincount(self, weights?, minlength): 1-d integer input; weights of any real dtype sum in
// float32 when float32, else in float64, as the cpu's.
void bincount(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Tensor self = a[0].to_tensor();
  const int64_t minlength = a[2].to_int();
  const auto t = int_type(self.dtype());
  bool ok = in_device_memory(self) && t && self.dim() == 1 && minlength >= 0;
  const int64_t n = ok ? self.size(0) : 0;
  Tensor w;
  if (ok && !a[1].is_none() && a[1].to_tensor().defined()) {
    w = a[1].to_tensor();
    ok = in_device_memory(w) && w.device() == self.device() && w.dim() == 1 &&
         w.size(0) == n && numeric_type(w.dtype());
  }
  if (!ok) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  if (n == 0)  // (a long result even with weights, as the cpu's)
    return push_results(s, {zeros({minlength}, TensorOptions(kLong).device(self.device()))}, stack);
  const Tensor x = contiguous_on_device(self);
  Scratch scratch{self.device(), {}};
  Tensor range = make_empty({2}, kLong, self.device());
  launch_min_max_int(*t, device_ptr(x), n, static_cast<int64_t*>(device_ptr(range)),
                     &Scratch::get, &scratch, current_stream());
  const Tensor r = to_host(range);
  const int64_t lo = r.data_ptr<int64_t>()[0], hi = r.data_ptr<int64_t>()[1];
  if (lo < 0) return run_device_fallback(h, ks, stack);  // (the cpu's error)
  const int64_t nbins = std::max(hi + 1, minlength);
  const ScalarType wt = !w.defined() ? kLong : w.dtype() == kFloat ? kFloat : kDouble;
  if (w.defined()) w = contiguous_on_device(w.dtype() == wt ? w : w.to(wt));
  Tensor out = make_empty({nbins}, wt, self.device());
  launch_bincount(*t, device_ptr(x), n, w.defined() ? device_ptr(w) : nullptr, wt == kDouble,
                  device_ptr(out), nbins, current_stream());
  push_results(s, {out}, stack);
}

// The cpu kernel's argument checks of searchsorted (seq's leading dims matching self's, the
// sorter's dtype and shape); false where it raises.
bool searchsorted_arguments(const Tensor& seq, const Tensor& self, const Tensor& sorter) {
  if (seq.dim() < 1) return false;
  if (seq.dim() > 1) {
    if (seq.dim() != self.dim()) return false;
    for (int64_t i = 0; i + 1 < seq.dim(); ++i)
      if (seq.size(i) != self.size(i)) return false;
  }
  return !sorter.defined() || (sorter.dtype() == kLong && sorter.sizes() == seq.sizes());
}

// searchsorted.Tensor(sorted_sequence, self, out_int32, right, side?, sorter?): both operands
// in their result type (PyTorch's promotion), `side` naming the side when given.
void searchsorted(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Tensor seq = a[0].to_tensor(), self = a[1].to_tensor();
  const bool out_int32 = a[2].to_bool();
  bool right = a[3].to_bool();
  bool ok = in_device_memory(seq) && in_device_memory(self) && seq.device() == self.device();
  if (ok && !a[4].is_none()) {
    const std::string_view side = a[4].to_string();
    ok = (side == "left" || side == "right") && !(right && side == "left");
    right = side == "right";
  }
  Tensor sorter;
  if (ok && !a[5].is_none() && a[5].to_tensor().defined()) {
    sorter = a[5].to_tensor();
    ok = in_device_memory(sorter) && sorter.device() == seq.device();
  }
  ok = ok && searchsorted_arguments(seq, self, sorter);
  const ScalarType ct = ok ? result_type({seq, self}) : kFloat;
  const auto t = numeric_type(ct);
  if (!ok || !t) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor q = contiguous_on_device(seq.dtype() == ct ? seq : seq.to(ct));
  const Tensor v = contiguous_on_device(self.dtype() == ct ? self : self.to(ct));
  if (sorter.defined()) sorter = contiguous_on_device(sorter);
  Tensor out = make_empty(self.sizes(), out_int32 ? kInt : kLong, self.device());
  const int64_t per_row = seq.dim() == 1 ? 0 : self.size(-1);
  launch_searchsorted(*t, device_ptr(q), device_ptr(v),
                      sorter.defined() ? static_cast<const int64_t*>(device_ptr(sorter)) : nullptr,
                      v.numel(), seq.size(-1), per_row, right, out_int32, device_ptr(out),
                      current_stream());
  push_results(s, {out}, stack);
}

// repeat_interleave.Tensor(repeats, output_size?): [0] * repeats[0] + [1] * repeats[1] + ...
// in repeats' dtype. Without output_size the total is read back (with a negative-repeat flag);
// with it, nothing is, and a device check stops a wrong one (see the launcher).
void repeat_interleave(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Tensor repeats = a[0].to_tensor();
  const bool sized = !a[1].is_none();
  const int64_t size = sized ? a[1].to_int() : -1;
  const bool int32 = repeats.dtype() == kInt;
  if (!in_device_memory(repeats) || repeats.dim() > 1 || !(int32 || repeats.dtype() == kLong) ||
      repeats.numel() == 0 || (sized && size < 0))
    return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor r = contiguous_on_device(repeats.reshape({-1}));
  const int64_t n = r.numel();
  Tensor cum = make_empty({n}, kLong, repeats.device());
  Tensor summary = make_empty({2}, kLong, repeats.device());
  Scratch scratch{repeats.device(), {}};
  auto* sums = static_cast<int64_t*>(device_ptr(summary));
  launch_repeat_cumsum(int32, device_ptr(r), n, static_cast<int64_t*>(device_ptr(cum)), sums,
                       &Scratch::get, &scratch, current_stream());
  int64_t total = size;
  if (!sized) {
    const Tensor host = to_host(summary);
    if (host.data_ptr<int64_t>()[1] != 0) return run_device_fallback(h, ks, stack);
    total = host.data_ptr<int64_t>()[0];
  }
  Tensor out = make_empty({total}, repeats.dtype(), repeats.device());
  launch_repeat_fill(int32, static_cast<const int64_t*>(device_ptr(cum)), n, sums,
                     size, total, device_ptr(out), current_stream());
  push_results(s, {out}, stack);
}

// _unique2(self, sorted, return_inverse, return_counts): the values sorted either way (as the
// cpu's); inverse in self's shape, and empty results for what is not asked.
void unique2(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const IValue* a = &(*stack)[stack->size() - size_t(s.num_args)];
  const Tensor self = a[0].to_tensor();
  const bool return_inverse = a[2].to_bool(), return_counts = a[3].to_bool();
  const auto st = sort_type(self.dtype());
  if (!in_device_memory(self) || !st || self.numel() == 0)
    return run_device_fallback(h, ks, stack);
  const NumericType t = self.dtype() == kBool ? NumericType::kUInt8 : *numeric_type(self.dtype());
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor flat = contiguous_on_device(self.reshape({-1}));
  const int64_t n = flat.numel();
  const Device dev = self.device();
  Tensor keys = make_empty({n}, self.dtype(), dev), perm = make_empty({n}, kLong, dev);
  Tensor ids = make_empty({n}, kLong, dev);
  Scratch scratch{dev, {}};
  launch_sort_rows(*st, device_ptr(flat), device_ptr(keys), static_cast<int64_t*>(device_ptr(perm)),
                   1, n, false, &Scratch::get, &scratch, current_stream());
  launch_unique_runs(t, device_ptr(keys), n, static_cast<int64_t*>(device_ptr(ids)),
                     &Scratch::get, &scratch, current_stream());
  const int64_t u = to_host(ids.narrow(0, n - 1, 1)).data_ptr<int64_t>()[0];
  Tensor values = make_empty({u}, self.dtype(), dev);
  Tensor inverse = make_empty(return_inverse ? self.sizes() : IntArrayRef({0}), kLong, dev);
  Tensor counts = make_empty({return_counts ? u : 0}, kLong, dev);
  launch_unique_outputs(t, device_ptr(keys), static_cast<const int64_t*>(device_ptr(perm)),
                        static_cast<const int64_t*>(device_ptr(ids)), n, u, device_ptr(values),
                        return_inverse ? static_cast<int64_t*>(device_ptr(inverse)) : nullptr,
                        return_counts ? static_cast<int64_t*>(device_ptr(counts)) : nullptr,
                        &Scratch::get, &scratch, current_stream());
  push_results(s, {values, inverse, counts}, stack);
}

}  // namespace

void register_count_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view n = s.name, o = s.overload;
    if (n == "histc" && o.empty()) set_cuda_kernel(h, &histc);
    else if (n == "bincount" && o.empty()) set_cuda_kernel(h, &bincount);
    else if (n == "searchsorted" && o == "Tensor") set_cuda_kernel(h, &searchsorted);
    else if (n == "repeat_interleave" && o == "Tensor") set_cuda_kernel(h, &repeat_interleave);
    else if (n == "_unique2" && o.empty()) set_cuda_kernel(h, &unique2);
  }
}

}  // namespace retorch::cuda_backend
