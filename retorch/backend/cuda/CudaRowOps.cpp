// CUDA kernels of the row ops: sum, mean, amax, amin, var, norm over any dims, prod and the
// scans (cumsum, cumprod, logcumsumexp, cummax, cummin) along one, all and any, max, min, argmax,
// argmin, softmax and log_softmax, native_layer_norm and its backward, fused_rms_norm,
// silu_and_mul and cross entropy, at the CUDA key.
#include <cmath>
#include <numeric>
#include <vector>

#include "retorch/backend/cuda/CudaCtc.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/backend/cuda/CudaRows.h"
#include "retorch/backend/cuda/CudaScan.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cuda_backend {

// Note [CUDA row ops]
// The row kernels (Note [CUDA row kernels]) want contiguous rows, so a reduction over any set
// of dims permutes the kept dims in front of the reduced ones and, unless that view is already
// contiguous, copies it on the device; rows are then the kept elements and columns the reduced
// ones. softmax over an inner dim does the same and copies its result back to the input's
// order. Arguments these kernels do not cover take the device fallback, as in Note [CUDA op
// kernels]: integer dtypes, an empty amax/amin, out= tensors that are not contiguous of the
// right shape and dtype, affine parameters of another dtype or device.

namespace {

// The call's tensor argument i, if it is a tensor in device memory of a floating dtype.
std::optional<Tensor> device_float(const Stack& stack, size_t i) {
  if (!stack[i].is_tensor()) return std::nullopt;
  const Tensor& t = stack[i].to_tensor();
  if (!in_device_memory(t) || !float_type(t.dtype())) return std::nullopt;
  return t;
}

// t converted to dtype `to` on the device, contiguous.
Tensor as_dtype(const Tensor& t, ScalarType to) {
  if (t.dtype() == to) return contiguous_on_device(t);
  Tensor c = make_empty(t.sizes(), to, t.device());
  RT_CHECK(copy_on_device(c, t), "cuda: could not convert a ", t.dim(), "-dim tensor");
  return c;
}

// A dim list argument (an int, a list, or None) as a list.
std::vector<int64_t> dim_list(const IValue& arg) {
  if (arg.is_int()) return {arg.to_int()};
  return arg.is_none() ? std::vector<int64_t>{} : arg.to_int_list();
}

// A reduction over the dims of self flagged in `red`: the permutation that puts the kept dims
// first (rows) and the reduced ones last (columns), and the result's shape.
struct RowPlan {
  std::vector<int64_t> order, shape;
  int64_t rows = 1, cols = 1;
};

RowPlan row_plan(const Tensor& self, const std::vector<bool>& red, bool keepdim) {
  RowPlan p;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (red[size_t(d)]) {
      p.cols *= self.size(d);
      if (keepdim) p.shape.push_back(1);
    } else {
      p.order.push_back(d);
      p.rows *= self.size(d);
      p.shape.push_back(self.size(d));
    }
  }
  for (int64_t d = 0; d < self.dim(); ++d)
    if (red[size_t(d)]) p.order.push_back(d);
  return p;
}

void reduce(RowReduce op, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Variant v = variant_of(s);
  const bool has_dtype =
      op == RowReduce::kSum || op == RowReduce::kMean || op == RowReduce::kProd;
  const auto self = device_float(*stack, base);
  if (!self) return run_device_fallback(h, ks, stack);
  const ScalarType rt = has_dtype && !(*stack)[base + 3].is_none()
                            ? (*stack)[base + 3].to_scalar_type()
                            : self->dtype();
  const auto t = float_type(rt);
  const std::vector<bool> red =
      reduced_dim_flags(dim_list((*stack)[base + 1]), self->dim(), s.name.data());
  const RowPlan p = row_plan(*self, red, (*stack)[base + 2].to_bool());
  Tensor out = v == Variant::kOut ? stack->back().to_tensor() : Tensor();
  bool ok = t.has_value() && !(p.cols == 0 && (op == RowReduce::kMax || op == RowReduce::kMin));
  if (ok && out.defined())
    ok = in_device_memory(out) && out.dtype() == rt && out.is_contiguous() &&
         out.sizes().equals(IntArrayRef(p.shape));
  if (!ok) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor in = as_dtype(self->permute(p.order), rt);
  if (!out.defined()) out = make_empty(p.shape, rt, self->device());
  launch_reduce_rows(op, *t, device_ptr(in), device_ptr(out), p.rows, p.cols, current_stream());
  finish_call(s, v, out, stack);
}

// var.correction(self, dim=None, *, correction=None, keepdim=False) and norm(self, p=2,
// dim=None, keepdim=False), functional, in self's floating dtype.
void var_or_norm(bool norm, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto self = device_float(*stack, base);
  if (!self || variant_of(s) != Variant::kFunctional) return run_device_fallback(h, ks, stack);
  const IValue& param = (*stack)[base + (norm ? 1 : 2)];
  const double value = norm ? (param.is_none() ? 2.0 : param.to_scalar().to_double())
                            : (param.is_none() ? 1.0 : double(param.to_int()));
  const std::vector<bool> red = reduced_dim_flags(dim_list((*stack)[base + (norm ? 2 : 1)]),
                                                  self->dim(), s.name.data());
  const RowPlan p = row_plan(*self, red, (*stack)[base + 3].to_bool());
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor in = contiguous_on_device(self->permute(p.order));
  Tensor out = make_empty(p.shape, self->dtype(), self->device());
  const FloatType t = *float_type(self->dtype());
  launch_var_or_norm_rows(norm, t, device_ptr(in), device_ptr(out), p.rows, p.cols, value,
                          current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// all/any(self) and all/any.dim(self, dim, keepdim), functional, of bool or floating device
// tensors (a float is true where it is not 0, NaN included): bool results.
void all_any(bool any, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  if (!in_device_memory(self) || !(self.dtype() == kBool || float_type(self.dtype())) ||
      variant_of(s) != Variant::kFunctional)
    return run_device_fallback(h, ks, stack);
  const bool along_dim = s.num_args == 3;
  std::vector<bool> red(size_t(self.dim()), !along_dim);
  if (along_dim && self.dim() > 0)
    red[size_t(maybe_wrap_dim((*stack)[base + 1].to_int(), self.dim(), s.name.data()))] = true;
  else if (along_dim)
    maybe_wrap_dim((*stack)[base + 1].to_int(), 0, s.name.data());  // its range check
  const RowPlan p = row_plan(self, red, along_dim && (*stack)[base + 2].to_bool());
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor b = self.dtype() == kBool ? self : self.ne(0.0);
  const Tensor in = contiguous_on_device(b.permute(p.order));
  Tensor out = make_empty(p.shape, kBool, self.device());
  launch_bool_rows(any, static_cast<const bool*>(device_ptr(in)),
                   static_cast<bool*>(device_ptr(out)), p.rows, p.cols, current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// prod(self, *, dtype=None) of a floating tensor: prod.dim_int's kernel over the flattened tensor.
void prod_all(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto self = device_float(*stack, base);
  const IValue& dtype_arg = (*stack)[base + 1];
  const std::optional<ScalarType> dtype =
      dtype_arg.is_none() ? std::nullopt : std::optional<ScalarType>(dtype_arg.to_scalar_type());
  if (!self || !float_type(dtype.value_or(self->dtype())))
    return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor out = retorch::prod(self->reshape({-1}), 0, false, dtype);
  finish_call(s, Variant::kFunctional, out, stack);
}

// _mse_sum(self, target): the squared differences summed in double, as the cpu's (Note [Squared
// difference sums]), by the device's pointwise and sum kernels; one floating dtype and shape.
void mse_sum(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto self = device_float(*stack, base), target = device_float(*stack, base + 1);
  if (!self || !target || self->dtype() != target->dtype() ||
      !self->sizes().equals(target->sizes()))
    return run_device_fallback(h, ks, stack);  // its error names shapes and dtypes
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor d = self->to(kDouble) - target->to(kDouble);
  finish_call(s, Variant::kFunctional, (d * d).sum().to(self->dtype()), stack);
}

// The CTC kernels' view of the targets (Note [CUDA CTC]): the labels as device int64, and one
// device int64 tensor of each sample's label offset, input length and target length; nullopt
// when a label is outside [0, C), which the fallback's cpu kernel refuses. Device targets are
// read on the host for that check (a synchronization; the lengths are host lists anyway).
struct CtcTargets {
  Tensor labels, table;
};
std::optional<CtcTargets> ctc_targets(const Tensor& log_probs, const Tensor& targets,
                                      const std::vector<int64_t>& input_lengths,
                                      const std::vector<int64_t>& target_lengths) {
  const int64_t N = log_probs.size(1), C = log_probs.size(2);
  const Tensor host = targets.to(Device(kCPU), kLong).contiguous();
  const int64_t* lab = host.numel() ? host.data_ptr<int64_t>() : nullptr;
  Tensor table = make_empty({3 * N}, kLong);
  int64_t* v = table.data_ptr<int64_t>();
  int64_t pos = 0;
  for (int64_t b = 0; b < N; ++b) {
    const int64_t length = target_lengths[size_t(b)];
    const int64_t offset = targets.dim() == 1 ? pos : b * targets.size(1);
    pos += length;
    for (int64_t s = 0; s < length; ++s)
      if (lab[offset + s] < 0 || lab[offset + s] >= C) return std::nullopt;
    v[b] = offset;
    v[N + b] = input_lengths[size_t(b)];
    v[2 * N + b] = length;
  }
  return CtcTargets{host.to(log_probs.device()), table.to(log_probs.device())};
}

// _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity) ->
// (neg_log_likelihood, log_alpha): floating log_probs [T, N, C] on the device; the arguments
// checked and the results sized by the cpu kernel on meta tensors (its errors).
void ctc_loss(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor lp = (*stack)[base].to_tensor(), targets = (*stack)[base + 1].to_tensor();
  if (!in_device_memory(lp) || !float_type(lp.dtype()) || lp.dim() != 3)
    return run_device_fallback(h, ks, stack);
  const std::vector<int64_t> il = (*stack)[base + 2].to_int_list();
  const std::vector<int64_t> tl = (*stack)[base + 3].to_int_list();
  const int64_t blank = (*stack)[base + 4].to_int();
  const auto [nll_shape, alpha_shape] = cpu::ctc_loss_forward(
      meta_like(lp), meta_like(targets), il, tl, blank, (*stack)[base + 5].to_bool());
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const auto tg = ctc_targets(lp, targets, il, tl);
  if (!tg) return run_device_fallback(h, ks, stack);
  const CtcShape g{lp.size(0), lp.size(1), lp.size(2), alpha_shape.size(2), blank};
  Tensor alpha = make_empty(alpha_shape.sizes(), kDouble, lp.device());
  alpha.fill_(Scalar(-INFINITY));
  Tensor nll = make_empty({g.N}, kDouble, lp.device());
  const int64_t* table = static_cast<const int64_t*>(device_ptr(tg->table));
  launch_ctc_alpha(*float_type(lp.dtype()), device_ptr(contiguous_on_device(lp)),
                   static_cast<const int64_t*>(device_ptr(tg->labels)), table, table + g.N, g,
                   static_cast<double*>(device_ptr(alpha)), static_cast<double*>(device_ptr(nll)),
                   current_stream());
  push_results(s, {nll.to(lp.dtype()), alpha.to(lp.dtype())}, stack);
}

// _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths,
// neg_log_likelihood, log_alpha, blank, zero_infinity): as ctc_loss, the gradient in double.
void ctc_loss_backward(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor grad = (*stack)[base].to_tensor(), lp = (*stack)[base + 1].to_tensor();
  const Tensor targets = (*stack)[base + 2].to_tensor();
  const Tensor nll = (*stack)[base + 5].to_tensor(), log_alpha = (*stack)[base + 6].to_tensor();
  bool ok = in_device_memory(lp) && float_type(lp.dtype()) && lp.dim() == 3;
  for (const Tensor* t : {&grad, &nll, &log_alpha}) ok = ok && in_device_memory(*t);
  if (!ok) return run_device_fallback(h, ks, stack);
  const std::vector<int64_t> il = (*stack)[base + 3].to_int_list();
  const std::vector<int64_t> tl = (*stack)[base + 4].to_int_list();
  const int64_t blank = (*stack)[base + 7].to_int();
  const bool zero_infinity = (*stack)[base + 8].to_bool();
  cpu::ctc_loss_backward(meta_like(grad), meta_like(lp), meta_like(targets), il, tl,
                         meta_like(nll), meta_like(log_alpha), blank, zero_infinity);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const auto tg = ctc_targets(lp, targets, il, tl);
  if (!tg) return run_device_fallback(h, ks, stack);
  const CtcShape g{lp.size(0), lp.size(1), lp.size(2), log_alpha.size(2), blank};
  const Tensor alpha = as_dtype(log_alpha, kDouble), nll_d = as_dtype(nll, kDouble);
  const Tensor g_d = as_dtype(grad.expand({g.N}), kDouble);
  Tensor beta = make_empty({g.N, g.T, g.S}, kDouble, lp.device());
  beta.fill_(Scalar(-INFINITY));
  Tensor out = make_empty({g.T, g.N, g.C}, kDouble, lp.device());
  out.fill_(Scalar(0.0));
  const int64_t* table = static_cast<const int64_t*>(device_ptr(tg->table));
  launch_ctc_grad(*float_type(lp.dtype()), device_ptr(contiguous_on_device(lp)),
                  static_cast<const int64_t*>(device_ptr(tg->labels)), table, table + g.N, g,
                  static_cast<const double*>(device_ptr(alpha)),
                  static_cast<const double*>(device_ptr(nll_d)),
                  static_cast<const double*>(device_ptr(g_d)), zero_infinity,
                  static_cast<double*>(device_ptr(beta)), static_cast<double*>(device_ptr(out)),
                  current_stream());
  push_results(s, {out.to(lp.dtype())}, stack);
}

// cumsum and cumprod (self, dim, *, dtype=None), logcumsumexp (self, dim), cummax and cummin
// (self, dim) -> (values, indices), functional: the dim moved last (a copy unless it already
// is), a scan per row (Note [CUDA scans]), and the results put back in self's order. Floating
// results, and for cumsum and cumprod int32 or int64 ones from a tensor of that dtype (integer
// and bool inputs scan in int64, as PyTorch's); other conversions take the fallback.
void scan(ScanOp op, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor self = (*stack)[base].to_tensor();
  if (!in_device_memory(self) || variant_of(s) != Variant::kFunctional)
    return run_device_fallback(h, ks, stack);
  const bool arithmetic = op == ScanOp::kSum || op == ScanOp::kProd;
  const bool integral = is_integral_type(self.dtype(), true);
  const ScalarType rt = arithmetic && !(*stack)[base + 2].is_none()
                            ? (*stack)[base + 2].to_scalar_type()
                        : arithmetic && integral ? kLong
                                                 : self.dtype();
  const bool as_float = float_type(rt) && float_type(self.dtype());
  const bool as_int = arithmetic && (rt == kLong || rt == kInt) && self.dtype() == rt;
  if (!as_float && !as_int) return run_device_fallback(h, ks, stack);
  const int64_t ndim = self.dim() == 0 ? 1 : self.dim();
  const int64_t dim = maybe_wrap_dim((*stack)[base + 1].to_int(), ndim, s.name.data());
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor x = self.dim() == 0 ? self.reshape({1}) : self;
  std::vector<int64_t> order, inverse(static_cast<size_t>(ndim));
  for (int64_t d = 0; d < ndim; ++d)
    if (d != dim) order.push_back(d);
  order.push_back(dim);
  for (int64_t i = 0; i < ndim; ++i) inverse[size_t(order[size_t(i)])] = i;
  const Tensor in =
      as_float ? as_dtype(x.permute(order), rt) : contiguous_on_device(x.permute(order));
  Tensor rows = make_empty(in.sizes(), rt, self.device());
  const bool extreme = op == ScanOp::kMax || op == ScanOp::kMin;
  Tensor indices = extreme ? make_empty(in.sizes(), kLong, self.device()) : Tensor();
  const int64_t cols = x.size(dim), n = in.numel(), nrows = cols ? n / cols : 0;
  if (as_float)
    launch_scan_rows(op, *float_type(rt), device_ptr(in), device_ptr(rows),
                     extreme ? static_cast<int64_t*>(device_ptr(indices)) : nullptr, nrows, cols,
                     current_stream());
  else
    launch_scan_rows_int(op, rt == kLong, device_ptr(in), device_ptr(rows), nrows, cols,
                         current_stream());
  auto restore = [&](const Tensor& t) {
    Tensor r = contiguous_on_device(t.permute(inverse));
    return self.dim() == 0 ? r.reshape({}) : r;
  };
  if (!extreme) return finish_call(s, Variant::kFunctional, restore(rows), stack);
  push_results(s, {restore(rows), restore(indices)}, stack);
}

// argmax/argmin(self, dim=None, keepdim=False), functional: each row along dim (the flattened
// tensor for None) to the first index of its extreme value. Empty inputs (the cpu's errors),
// keepdim without a dim and out= take the fallback.
void arg_reduce(bool take_max, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto self = device_float(*stack, base);
  const IValue& dim_arg = (*stack)[base + 1];
  const bool keepdim = (*stack)[base + 2].to_bool();
  if (!self || self->numel() == 0 || (dim_arg.is_none() && keepdim) ||
      variant_of(s) != Variant::kFunctional)
    return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const int64_t ndim = self->dim();
  std::vector<int64_t> order, shape;
  int64_t cols = self->numel();
  if (!dim_arg.is_none() && ndim > 0) {
    const int64_t dim = maybe_wrap_dim(dim_arg.to_int(), ndim, s.name.data());
    for (int64_t d = 0; d < ndim; ++d) {
      if (d != dim) order.push_back(d);
      if (d != dim || keepdim) shape.push_back(d == dim ? 1 : self->size(d));
    }
    order.push_back(dim);
    cols = self->size(dim);
  } else if (!dim_arg.is_none()) {
    maybe_wrap_dim(dim_arg.to_int(), ndim, s.name.data());  // its range check
  }
  const Tensor in = order.empty() ? contiguous_on_device(*self)
                                  : contiguous_on_device(self->permute(order));
  Tensor out = make_empty(shape, kLong, self->device());
  launch_arg_rows(take_max, *float_type(self->dtype()), device_ptr(in),
                  static_cast<int64_t*>(device_ptr(out)), self->numel() / cols, cols,
                  current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// max/min(self): the extreme of all elements, as one row of the reduce kernel; and
// max/min.dim(self, dim, keepdim): its values and indices along dim from the reduce and
// arg kernels over the same rows (NaN is the extreme; ties give the first index, as argmax).
// Empty and 0-dim inputs, integer dtypes and out= take the fallback.
void extreme(bool take_max, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto self = device_float(*stack, base);
  const bool along_dim = s.num_args == 3;
  if (!self || self->numel() == 0 || (along_dim && self->dim() == 0) ||
      variant_of(s) != Variant::kFunctional)
    return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  std::vector<int64_t> order, shape;
  int64_t cols = self->numel();
  if (along_dim) {
    const int64_t dim = maybe_wrap_dim((*stack)[base + 1].to_int(), self->dim(), s.name.data());
    const bool keepdim = (*stack)[base + 2].to_bool();
    for (int64_t d = 0; d < self->dim(); ++d) {
      if (d != dim) order.push_back(d);
      if (d != dim || keepdim) shape.push_back(d == dim ? 1 : self->size(d));
    }
    order.push_back(dim);
    cols = self->size(dim);
  }
  const Tensor in = order.empty() ? contiguous_on_device(*self)
                                  : contiguous_on_device(self->permute(order));
  const FloatType t = *float_type(self->dtype());
  const int64_t rows = self->numel() / cols;
  Tensor values = make_empty(shape, self->dtype(), self->device());
  launch_reduce_rows(take_max ? RowReduce::kMax : RowReduce::kMin, t, device_ptr(in),
                     device_ptr(values), rows, cols, current_stream());
  if (!along_dim) return finish_call(s, Variant::kFunctional, values, stack);
  Tensor indices = make_empty(shape, kLong, self->device());
  launch_arg_rows(take_max, t, device_ptr(in), static_cast<int64_t*>(device_ptr(indices)), rows,
                  cols, current_stream());
  push_results(s, {values, indices}, stack);
}

void softmax(bool log, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto self = device_float(*stack, base);
  if (!self) return run_device_fallback(h, ks, stack);
  const IValue& dtype_arg = (*stack)[base + 2];
  const ScalarType rt = dtype_arg.is_none() ? self->dtype() : dtype_arg.to_scalar_type();
  const auto t = float_type(rt);
  if (!t) return run_device_fallback(h, ks, stack);
  const int64_t ndim = self->dim();
  const int64_t dim = maybe_wrap_dim((*stack)[base + 1].to_int(), ndim, s.name.data());
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  std::vector<int64_t> order;
  for (int64_t d = 0; d < ndim; ++d)
    if (d != dim) order.push_back(d);
  if (ndim > 0) order.push_back(dim);
  const Tensor in = as_dtype(ndim > 0 ? self->permute(order) : *self, rt);
  const int64_t cols = ndim > 0 ? self->size(dim) : 1;
  const int64_t rows = cols == 0 ? 0 : in.numel() / cols;
  Tensor rows_out = make_empty(in.sizes(), rt, self->device());
  launch_softmax_rows(log, *t, device_ptr(in), device_ptr(rows_out), rows, cols, current_stream());
  Tensor out = rows_out;
  if (ndim > 0 && dim != ndim - 1) {  // back to the input's order, contiguous
    std::vector<int64_t> inverse(static_cast<size_t>(ndim));
    for (int64_t i = 0; i < ndim; ++i) inverse[size_t(order[size_t(i)])] = i;
    out = make_empty(self->sizes(), rt, self->device());
    RT_CHECK(copy_on_device(out, rows_out.permute(inverse)), "cuda softmax: copy failed");
  }
  finish_call(s, Variant::kFunctional, out, stack);
}

void layer_norm(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto input = device_float(*stack, base);
  const std::vector<int64_t>& normalized = (*stack)[base + 1].to_int_list();
  bool ok = input.has_value() && normalized.size() <= size_t(input->dim());
  int64_t cols = 1;
  for (size_t i = 0; ok && i < normalized.size(); ++i) {
    ok = input->size(input->dim() - int64_t(normalized.size()) + int64_t(i)) == normalized[i];
    cols *= normalized[i];
  }
  std::optional<Tensor> affine[2];
  for (int k = 0; ok && k < 2; ++k) {
    if ((*stack)[base + 2 + size_t(k)].is_none()) continue;
    affine[k] = device_float(*stack, base + 2 + size_t(k));
    ok = affine[k] && affine[k]->dtype() == input->dtype() && affine[k]->numel() == cols &&
         affine[k]->is_contiguous();
  }
  if (!ok || cols == 0) return run_device_fallback(h, ks, stack);  // its errors name shapes
  const double eps = (*stack)[base + 4].to_double();
  const Tensor x = contiguous_on_device(*input);
  const std::vector<int64_t> stat = norm_stat_shape(input->sizes(), normalized.size());
  Tensor out = make_empty(input->sizes(), input->dtype(), input->device());
  Tensor mean = make_empty(stat, input->dtype(), input->device());
  Tensor rstd = make_empty(stat, input->dtype(), input->device());
  launch_layer_norm_rows(*float_type(input->dtype()), device_ptr(x),
                         affine[0] ? device_ptr(*affine[0]) : nullptr,
                         affine[1] ? device_ptr(*affine[1]) : nullptr, device_ptr(out),
                         device_ptr(mean), device_ptr(rstd), x.numel() / cols, cols, eps,
                         current_stream());
  push_results(s, {out, mean, rstd}, stack);
}

// The accumulation dtype of a floating dtype: float64 for float64, float32 otherwise.
ScalarType acc_dtype(ScalarType t) { return t == kDouble ? kDouble : kFloat; }

// _layer_norm_backward_input(grad_out, input, normalized_shape, mean, rstd, weight?) and
// _layer_norm_backward_weight(grad_out, input, normalized_shape, mean, rstd): grad_out of
// input's shape and dtype, mean and rstd of input's dtype (as the forward kernel makes them);
// anything else takes the fallback and its checks.
void layer_norm_backward(bool weight_grad, const OperatorHandle& h, DispatchKeySet ks,
                         Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto grad = device_float(*stack, base), input = device_float(*stack, base + 1);
  const auto mean = device_float(*stack, base + 3), rstd = device_float(*stack, base + 4);
  const std::vector<int64_t>& normalized = (*stack)[base + 2].to_int_list();
  bool ok = grad && input && mean && rstd && grad->dtype() == input->dtype() &&
            grad->sizes().equals(input->sizes()) && mean->dtype() == input->dtype() &&
            rstd->dtype() == input->dtype() && normalized.size() <= size_t(input->dim());
  int64_t cols = 1;
  for (size_t i = 0; ok && i < normalized.size(); ++i) {
    ok = input->size(input->dim() - int64_t(normalized.size()) + int64_t(i)) == normalized[i];
    cols *= normalized[i];
  }
  const int64_t rows = ok && cols > 0 ? input->numel() / cols : 0;
  ok = ok && cols > 0 && mean->numel() == rows && rstd->numel() == rows;
  std::optional<Tensor> weight;
  if (ok && !weight_grad && !(*stack)[base + 5].is_none()) {
    weight = device_float(*stack, base + 5);
    ok = weight && weight->dtype() == input->dtype() && weight->numel() == cols;
  }
  if (!ok) return run_device_fallback(h, ks, stack);
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  const Tensor g = contiguous_on_device(*grad), x = contiguous_on_device(*input);
  const Tensor m = contiguous_on_device(*mean), r = contiguous_on_device(*rstd);
  const FloatType t = *float_type(input->dtype());
  Tensor out;
  if (weight_grad) {
    out = make_empty(normalized, input->dtype(), input->device());
    Tensor part = make_empty({layer_norm_weight_chunks(rows), cols}, acc_dtype(input->dtype()),
                             input->device());
    launch_layer_norm_backward_weight(t, device_ptr(g), device_ptr(x), device_ptr(m),
                                      device_ptr(r), device_ptr(part), device_ptr(out), rows,
                                      cols, current_stream());
  } else {
    const Tensor w = weight ? contiguous_on_device(*weight) : Tensor();
    out = make_empty(input->sizes(), input->dtype(), input->device());
    launch_layer_norm_backward_input(t, device_ptr(g), device_ptr(x), device_ptr(m),
                                     device_ptr(r), weight ? device_ptr(w) : nullptr,
                                     device_ptr(out), rows, cols, current_stream());
  }
  finish_call(s, Variant::kFunctional, out, stack);
}

void rms_norm(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto input = device_float(*stack, base);
  const bool has_res = !(*stack)[base + 1].is_none();
  const auto residual = has_res ? device_float(*stack, base + 1) : std::nullopt;
  const auto weight = device_float(*stack, base + 2);
  bool ok = input && weight && input->dim() >= 1 && weight->dim() == 1 &&
            weight->size(0) == input->size(-1) && weight->dtype() == input->dtype() &&
            weight->is_contiguous();
  if (ok && has_res)
    ok = residual && residual->sizes().equals(input->sizes()) &&
         residual->dtype() == input->dtype();
  if (!ok || input->size(-1) == 0) return run_device_fallback(h, ks, stack);
  const double eps = (*stack)[base + 3].to_double();
  const Tensor x = contiguous_on_device(*input);
  const Tensor r = has_res ? contiguous_on_device(*residual) : Tensor();
  Tensor out = make_empty(input->sizes(), input->dtype(), input->device());
  Tensor sum = has_res ? make_empty(input->sizes(), input->dtype(), input->device()) : *input;
  const int64_t cols = input->size(-1);
  launch_rms_norm_rows(*float_type(input->dtype()), device_ptr(x),
                       has_res ? device_ptr(r) : nullptr,
                       device_ptr(*weight), device_ptr(out), has_res ? device_ptr(sum) : nullptr,
                       x.numel() / cols, cols, eps, current_stream());
  push_results(s, {out, sum}, stack);
}

void silu_and_mul(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const auto input = device_float(*stack, stack->size() - size_t(s.num_args));
  if (!input || input->dim() < 1 || input->size(-1) % 2 != 0)
    return run_device_fallback(h, ks, stack);
  const Tensor x = contiguous_on_device(*input);
  std::vector<int64_t> shape(input->sizes().begin(), input->sizes().end());
  const int64_t d = shape.back() / 2;
  shape.back() = d;
  Tensor out = make_empty(shape, input->dtype(), input->device());
  launch_silu_and_mul(*float_type(input->dtype()), device_ptr(x), device_ptr(out),
                      d == 0 ? 0 : x.numel() / (2 * d), d, current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}


// _cross_entropy_fused(input [N, C], target [N], weight?, ignore_index, reduction, smoothing)
// -> (loss, lse): row losses and weights from a block per row, then summed on the device.
void cross_entropy(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto input = device_float(*stack, base);
  const Tensor target = (*stack)[base + 1].to_tensor();
  const bool has_w = !(*stack)[base + 2].is_none();
  const auto weight = has_w ? device_float(*stack, base + 2) : std::nullopt;
  bool ok = input && input->dim() == 2 && in_device_memory(target) && target.dtype() == kLong &&
            target.dim() == 1 && target.size(0) == input->size(0);
  if (ok && has_w)
    ok = weight && weight->dtype() == input->dtype() && weight->numel() == input->size(1) &&
         weight->is_contiguous();
  if (!ok) return run_device_fallback(h, ks, stack);  // its checks name shapes and dtypes
  const int64_t ignore = (*stack)[base + 3].to_int(), reduction = (*stack)[base + 4].to_int();
  const double smoothing = (*stack)[base + 5].to_double();
  const int64_t n = input->size(0), c = input->size(1);
  const ScalarType dt = input->dtype(), at = acc_dtype(dt);
  const Device dev = input->device();
  const Tensor x = contiguous_on_device(*input), t = contiguous_on_device(target);
  Tensor lse = make_empty({n}, dt, dev);
  Tensor row_loss = make_empty({n}, at, dev), row_w = make_empty({n}, at, dev);
  launch_cross_entropy_rows(*float_type(dt), device_ptr(x),
                            static_cast<const int64_t*>(device_ptr(t)),
                            has_w ? device_ptr(*weight) : nullptr, device_ptr(lse),
                            device_ptr(row_loss), device_ptr(row_w), n, c, ignore, smoothing,
                            current_stream());
  Tensor loss;
  if (reduction == 0) {
    loss = as_dtype(row_loss, dt);
  } else {
    Tensor total = make_empty({}, at, dev);
    launch_reduce_rows(RowReduce::kSum, *float_type(at), device_ptr(row_loss), device_ptr(total),
                       1, n, current_stream());
    if (reduction == 1) {  // divided by the kept rows' summed weights
      Tensor wsum = make_empty({}, at, dev);
      launch_reduce_rows(RowReduce::kSum, *float_type(at), device_ptr(row_w), device_ptr(wsum), 1,
                         n, current_stream());
      launch_binary(BinaryOp::kDiv, *float_type(at), Geometry<3>(), device_ptr(total),
                    device_ptr(total), device_ptr(wsum), false, 0.0, 1.0, current_stream());
    }
    loss = as_dtype(total, dt);
  }
  push_results(s, {loss, lse}, stack);
}

// _cross_entropy_fused_backward(grad, input, target, weight?, ignore_index, reduction,
// smoothing, lse) -> grad_input.
void cross_entropy_backward(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const auto grad = device_float(*stack, base), input = device_float(*stack, base + 1);
  const Tensor target = (*stack)[base + 2].to_tensor();
  const bool has_w = !(*stack)[base + 3].is_none();
  const auto weight = has_w ? device_float(*stack, base + 3) : std::nullopt;
  const auto lse = device_float(*stack, base + 7);
  const int64_t ignore = (*stack)[base + 4].to_int(), reduction = (*stack)[base + 5].to_int();
  bool ok = grad && input && lse && input->dim() == 2 && grad->dtype() == input->dtype() &&
            lse->dtype() == input->dtype() && lse->numel() == input->size(0) &&
            in_device_memory(target) && target.dtype() == kLong && target.dim() == 1 &&
            target.size(0) == input->size(0) &&
            grad->numel() == (reduction == 0 ? input->size(0) : 1);
  if (ok && has_w)
    ok = weight && weight->dtype() == input->dtype() && weight->numel() == input->size(1) &&
         weight->is_contiguous();
  if (!ok) return run_device_fallback(h, ks, stack);
  const double smoothing = (*stack)[base + 6].to_double();
  const ScalarType dt = input->dtype();
  const Tensor x = contiguous_on_device(*input), t = contiguous_on_device(target);
  const Tensor g = contiguous_on_device(*grad), l = contiguous_on_device(*lse);
  Tensor denom = make_empty({}, acc_dtype(dt), input->device());
  Tensor out = make_empty(input->sizes(), dt, input->device());
  launch_cross_entropy_grad_rows(*float_type(dt), device_ptr(x),
                                 static_cast<const int64_t*>(device_ptr(t)),
                                 has_w ? device_ptr(*weight) : nullptr, device_ptr(l),
                                 device_ptr(g), device_ptr(denom), device_ptr(out),
                                 input->size(0), input->size(1), ignore, int(reduction),
                                 smoothing, current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

}  // namespace

void register_row_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU)) continue;
    const std::string_view n = s.name, o = s.overload;
    const bool out = variant_of(s) == Variant::kOut;
    if (n == "sum" && (o == "dim_IntList" || out))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        reduce(RowReduce::kSum, oh, ks, st);
      });
    else if (n == "mean" && (o == "dim" || out))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        reduce(RowReduce::kMean, oh, ks, st);
      });
    else if (n == "prod" && o.empty())
      set_cuda_kernel(h, &prod_all);
    else if (n == "_mse_sum" && o.empty())
      set_cuda_kernel(h, &mse_sum);
    else if (n == "_ctc_loss" && o.empty())
      set_cuda_kernel(h, &ctc_loss);
    else if (n == "_ctc_loss_backward" && o.empty())
      set_cuda_kernel(h, &ctc_loss_backward);
    else if (n == "prod" && o == "dim_int")  // (self, dim, keepdim, dtype): sum's positions
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        reduce(RowReduce::kProd, oh, ks, st);
      });
    else if (n == "amax" && (o.empty() || out))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        reduce(RowReduce::kMax, oh, ks, st);
      });
    else if (n == "amin" && (o.empty() || out))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        reduce(RowReduce::kMin, oh, ks, st);
      });
    else if ((n == "var" && o == "correction") || (n == "norm" && o.empty()))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        var_or_norm(oh.schema().name == "norm", oh, ks, st);
      });
    else if ((n == "all" || n == "any") && (o.empty() || o == "dim"))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        all_any(oh.schema().name == "any", oh, ks, st);
      });
    else if ((n == "cumsum" || n == "cumprod" || n == "logcumsumexp" || n == "cummax" ||
              n == "cummin") && o.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        const std::string_view name = oh.schema().name;
        const ScanOp op = name == "cumsum"         ? ScanOp::kSum
                          : name == "cumprod"      ? ScanOp::kProd
                          : name == "logcumsumexp" ? ScanOp::kLogSumExp
                          : name == "cummax"       ? ScanOp::kMax
                                                   : ScanOp::kMin;
        scan(op, oh, ks, st);
      });
    else if (n == "argmax" && o.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        arg_reduce(true, oh, ks, st);
      });
    else if (n == "argmin" && o.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        arg_reduce(false, oh, ks, st);
      });
    else if ((n == "max" || n == "min") && (o.empty() || o == "dim"))
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        extreme(oh.schema().name == "max", oh, ks, st);
      });
    else if (n == "softmax" && o == "int")
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        softmax(false, oh, ks, st);
      });
    else if (n == "log_softmax" && o == "int")
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        softmax(true, oh, ks, st);
      });
    else if (n == "native_layer_norm" && o.empty())
      set_cuda_kernel(h, &layer_norm);
    else if ((n == "_layer_norm_backward_input" || n == "_layer_norm_backward_weight") &&
             o.empty())
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        layer_norm_backward(oh.schema().name == "_layer_norm_backward_weight", oh, ks, st);
      });
    else if (n == "fused_rms_norm" && o.empty())
      set_cuda_kernel(h, &rms_norm);
    else if (n == "silu_and_mul" && o.empty())
      set_cuda_kernel(h, &silu_and_mul);
    else if (n == "_cross_entropy_fused" && o.empty())
      set_cuda_kernel(h, &cross_entropy);
    else if (n == "_cross_entropy_fused_backward" && o.empty())
      set_cuda_kernel(h, &cross_entropy_backward);
  }
}

}  // namespace retorch::cuda_backend
