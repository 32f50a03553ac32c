// CUDA kernels of batch norm (forward, and its backward's reduce and elementwise passes) and of
// max_pool2d_with_indices, avg_pool2d and adaptive_avg_pool2d with their backwards, registered
// at the CUDA key (NCHW tensors; channels-last calls through NCHW copies).
#include <algorithm>
#include <tuple>
#include <vector>

#include "retorch/backend/cuda/CudaNorm.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cuda_backend {

// See Note [CUDA batch norm and max pool] in CudaNorm.cu. The host side takes contiguous
// (NCHW) float tensors of one dtype (channels-last calls run on NCHW copies: Note [Channels-last
// through NCHW] in CudaNormOps.cpp); mixed dtypes (a float16 model with float32 running statistics)
// and empty inputs take the device fallback; invalid pooling
// parameters raise the cpu kernel's errors (ops/ArgRules.h).

namespace {

// The call's argument i as a device tensor of `dtype` with `numel` elements, contiguous; an
// undefined tensor for None; nullopt when it is neither.
std::optional<Tensor> param(const Stack& stack, size_t i, ScalarType dtype, int64_t numel) {
  if (stack[i].is_none()) return Tensor();
  const Tensor& t = stack[i].to_tensor();
  if (!t.defined()) return Tensor();
  if (!in_device_memory(t) || t.dtype() != dtype || t.numel() != numel || !t.is_contiguous())
    return std::nullopt;
  return t;
}

bool nchw(const Tensor& t) {
  return in_device_memory(t) && float_type(t.dtype()) && t.dim() >= 2 && t.is_contiguous();
}

BatchNormShape bn_shape(const Tensor& x) {
  BatchNormShape g;
  g.n = x.size(0);
  g.c = x.size(1);
  g.s = g.n * g.c == 0 ? 0 : x.numel() / (g.n * g.c);
  return g;
}

const void* ptr_or_null(const Tensor& t) { return t.defined() ? device_ptr(t) : nullptr; }

void batch_norm(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor x = (*stack)[base].to_tensor();
  const bool training = (*stack)[base + 5].to_bool();
  if (!nchw(x)) return run_device_fallback(h, ks, stack);
  const int64_t c = x.size(1);
  std::optional<Tensor> p[4];
  bool ok = true;
  for (size_t k = 0; k < 4; ++k) ok = ok && (p[k] = param(*stack, base + 1 + k, x.dtype(), c));
  if (ok && !training) ok = p[2]->defined() && p[3]->defined();
  if (!ok) return run_device_fallback(h, ks, stack);
  BatchNormShape g = bn_shape(x);
  g.momentum = (*stack)[base + 6].to_double();
  g.eps = (*stack)[base + 7].to_double();
  const ScalarType at = x.dtype() == kDouble ? kDouble : kFloat;
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  Tensor save_mean = make_empty({training ? c : 0}, x.dtype(), x.device());
  Tensor save_invstd = make_empty({training ? c : 0}, x.dtype(), x.device());
  Tensor mean = make_empty({c}, at, x.device()), invstd = make_empty({c}, at, x.device());
  launch_batch_norm(*float_type(x.dtype()), device_ptr(x), ptr_or_null(*p[0]), ptr_or_null(*p[1]),
                    const_cast<void*>(ptr_or_null(*p[2])), const_cast<void*>(ptr_or_null(*p[3])),
                    training, device_ptr(save_mean), device_ptr(save_invstd), device_ptr(mean),
                    device_ptr(invstd), device_ptr(out), g, current_stream());
  if (training)  // the running statistics were written in place
    for (size_t k = 2; k < 4; ++k)
      if (p[k]->defined()) p[k]->impl()->bump_version();
  stack->erase(stack->end() - s.num_args, stack->end());
  stack->push_back(IValue(out));
  stack->push_back(IValue(save_mean));
  stack->push_back(IValue(save_invstd));
}

// _batch_norm_backward_reduce(grad_out, input, mean, invstd) and _batch_norm_backward_elemt(
// grad_out, input, mean, invstd, weight?, sum_dy, sum_dy_xmu).
void batch_norm_backward(bool elemt, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor dy = (*stack)[base].to_tensor(), x = (*stack)[base + 1].to_tensor();
  bool ok = nchw(x) && in_device_memory(dy) && dy.dtype() == x.dtype() &&
            dy.sizes().equals(x.sizes());
  const int64_t c = ok ? x.size(1) : 0;
  std::optional<Tensor> mean, invstd, weight, s1, s2;
  if (ok) {
    mean = param(*stack, base + 2, x.dtype(), c);
    invstd = param(*stack, base + 3, x.dtype(), c);
    ok = mean && invstd && mean->defined() && invstd->defined();
  }
  if (ok && elemt) {
    weight = param(*stack, base + 4, x.dtype(), c);
    s1 = param(*stack, base + 5, x.dtype(), c);
    s2 = param(*stack, base + 6, x.dtype(), c);
    ok = weight && s1 && s2 && s1->defined() && s2->defined();
  }
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor g_out = contiguous_on_device(dy);
  const BatchNormShape g = bn_shape(x);
  const FloatType t = *float_type(x.dtype());
  if (!elemt) {
    Tensor sum_dy = make_empty({c}, x.dtype(), x.device());
    Tensor sum_dy_xmu = make_empty({c}, x.dtype(), x.device());
    launch_batch_norm_backward_reduce(t, device_ptr(g_out), device_ptr(x), device_ptr(*mean),
                                      device_ptr(sum_dy), device_ptr(sum_dy_xmu), g,
                                      current_stream());
    stack->erase(stack->end() - s.num_args, stack->end());
    stack->push_back(IValue(sum_dy));
    stack->push_back(IValue(sum_dy_xmu));
    return;
  }
  Tensor gi = make_empty(x.sizes(), x.dtype(), x.device());
  launch_batch_norm_backward_elemt(t, device_ptr(g_out), device_ptr(x), device_ptr(*mean),
                                   device_ptr(*invstd), ptr_or_null(*weight), device_ptr(*s1),
                                   device_ptr(*s2), device_ptr(gi), g, current_stream());
  finish_call(s, Variant::kFunctional, gi, stack);
}

// Whether the pool kernels take x: a contiguous 3-d or 4-d float tensor in device memory with
// elements (empty inputs, and their errors, go through the fallback).
bool poolable(const Tensor& x) {
  return (x.dim() == 3 || x.dim() == 4) && nchw(x) && x.numel() > 0;
}

// The pooling geometry of a max_pool2d call's arguments (kernel_size at `args`), checked as
// the cpu kernel checks them (the same errors).
PoolShape pool_shape(const Tensor& x, const Stack& stack, size_t args) {
  auto ints = [&](size_t i) {
    const IValue& a = stack[args + i];
    return a.is_int() ? std::vector<int64_t>{a.to_int()} : a.to_int_list();
  };
  PoolShape g;
  g.h = x.size(-2);
  g.w = x.size(-1);
  g.planes = g.h * g.w == 0 ? 0 : x.numel() / (g.h * g.w);
  const Pool2dWindow k = check_pool2d(g.h, g.w, ints(0), ints(1), ints(2), ints(3),
                                      stack[args + 4].to_bool(), "max_pool2d");
  g.kh = k.kh, g.kw = k.kw, g.sh = k.sh, g.sw = k.sw, g.ph = k.ph, g.pw = k.pw;
  g.dh = k.dh, g.dw = k.dw, g.oh = k.oh, g.ow = k.ow;
  return g;
}

void max_pool(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor x = (*stack)[base].to_tensor();
  if (!poolable(x)) return run_device_fallback(h, ks, stack);
  const PoolShape g = pool_shape(x, *stack, base + 1);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 2);
  shape.push_back(g.oh);
  shape.push_back(g.ow);
  Tensor out = make_empty(shape, x.dtype(), x.device());
  Tensor indices = make_empty(shape, kLong, x.device());
  launch_max_pool2d(*float_type(x.dtype()), device_ptr(x), device_ptr(out),
                    static_cast<int64_t*>(device_ptr(indices)), g, current_stream());
  stack->erase(stack->end() - s.num_args, stack->end());
  stack->push_back(IValue(out));
  stack->push_back(IValue(indices));
}

void max_pool_backward(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor go = (*stack)[base].to_tensor(), x = (*stack)[base + 1].to_tensor();
  const Tensor indices = (*stack)[base + 7].to_tensor();
  if (!poolable(x)) return run_device_fallback(h, ks, stack);
  const PoolShape g = pool_shape(x, *stack, base + 2);
  const bool ok = in_device_memory(go) && go.dtype() == x.dtype() &&
                  in_device_memory(indices) && indices.dtype() == kLong && go.dim() == x.dim() &&
                  indices.sizes().equals(go.sizes()) && go.size(-2) == g.oh && go.size(-1) == g.ow;
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor gc = contiguous_on_device(go), ic = contiguous_on_device(indices);
  Tensor gi = make_empty(x.sizes(), x.dtype(), x.device());
  Geometry<1> all;
  all.numel = gi.numel();
  all.dims = 1;
  all.sizes[0] = gi.numel();
  all.strides[0][0] = 1;
  launch_fill_bytes(int(gi.element_size()), all, device_ptr(gi), 0, current_stream());
  launch_max_pool2d_backward(*float_type(x.dtype()), device_ptr(gc),
                             static_cast<const int64_t*>(device_ptr(ic)), device_ptr(gi), g,
                             current_stream());
  finish_call(s, Variant::kFunctional, gi, stack);
}

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override) and avg_pool2d_backward(grad_output, self, the same): the window checked as
// the cpu kernel checks it (its errors); contiguous NCHW (or CHW) floating tensors.
void avg_pool(bool backward, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args), args = base + (backward ? 2 : 1);
  const Tensor x = (*stack)[base + (backward ? 1 : 0)].to_tensor();
  if (!poolable(x)) return run_device_fallback(h, ks, stack);
  auto ints = [&](size_t i) {
    const IValue& a = (*stack)[args + i];
    return a.is_int() ? std::vector<int64_t>{a.to_int()} : a.to_int_list();
  };
  PoolShape g;
  g.h = x.size(-2);
  g.w = x.size(-1);
  g.planes = x.numel() / (g.h * g.w);
  const Pool2dWindow k = check_pool2d(g.h, g.w, ints(0), ints(1), ints(2), {1},
                                      (*stack)[args + 3].to_bool(), "avg_pool2d");
  g.kh = k.kh, g.kw = k.kw, g.sh = k.sh, g.sw = k.sw, g.ph = k.ph, g.pw = k.pw;
  g.oh = k.oh, g.ow = k.ow;
  const bool count_pad = (*stack)[args + 4].to_bool();
  const IValue& div = (*stack)[args + 5];
  const int64_t divisor = div.is_none() ? 0 : div.to_int();
  if (!div.is_none() && divisor == 0) return run_device_fallback(h, ks, stack);  // its error
  const FloatType t = *float_type(x.dtype());
  Tensor out;
  if (backward) {
    const Tensor go = (*stack)[base].to_tensor();
    const bool ok = in_device_memory(go) && go.dtype() == x.dtype() && go.dim() == x.dim() &&
                    go.size(-2) == g.oh && go.size(-1) == g.ow &&
                    go.numel() == g.planes * g.oh * g.ow;
    if (!ok) return run_device_fallback(h, ks, stack);
    const Tensor gc = contiguous_on_device(go);
    out = make_empty(x.sizes(), x.dtype(), x.device());
    launch_avg_pool2d_backward(t, device_ptr(gc), device_ptr(out), g, count_pad, divisor,
                               current_stream());
  } else {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 2);
    shape.push_back(g.oh);
    shape.push_back(g.ow);
    out = make_empty(shape, x.dtype(), x.device());
    launch_avg_pool2d(t, device_ptr(x), device_ptr(out), g, count_pad, divisor,
                      current_stream());
  }
  finish_call(s, Variant::kFunctional, out, stack);
}

// adaptive_avg_pool2d(self, output_size) and _adaptive_avg_pool2d_backward(grad_output, self)
// of contiguous NCHW (or CHW) floating tensors; other layouts and bad sizes take the fallback
// (its errors).
void adaptive_avg_pool(bool backward, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor x = (*stack)[base + (backward ? 1 : 0)].to_tensor();
  if (!poolable(x)) return run_device_fallback(h, ks, stack);
  PoolShape g;
  g.h = x.size(-2);
  g.w = x.size(-1);
  g.planes = x.numel() / (g.h * g.w);
  Tensor go;
  if (backward) {
    go = (*stack)[base].to_tensor();
    const bool ok = in_device_memory(go) && go.dtype() == x.dtype() && go.dim() == x.dim() &&
                    go.sizes().slice(0, size_t(x.dim() - 2))
                        .equals(x.sizes().slice(0, size_t(x.dim() - 2)));
    if (!ok) return run_device_fallback(h, ks, stack);
    g.oh = go.size(-2);
    g.ow = go.size(-1);
  } else {
    const std::vector<int64_t> size = (*stack)[base + 1].to_int_list();
    if (size.size() != 2 || size[0] <= 0 || size[1] <= 0) return run_device_fallback(h, ks, stack);
    g.oh = size[0];
    g.ow = size[1];
  }
  const FloatType t = *float_type(x.dtype());
  Tensor out;
  if (backward) {
    const Tensor gc = contiguous_on_device(go);
    out = make_empty(x.sizes(), x.dtype(), x.device());
    launch_adaptive_avg_pool2d_backward(t, device_ptr(gc), device_ptr(out), g, current_stream());
  } else {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 2);
    shape.push_back(g.oh);
    shape.push_back(g.ow);
    out = make_empty(shape, x.dtype(), x.device());
    launch_adaptive_avg_pool2d(t, device_ptr(x), device_ptr(out), g, current_stream());
  }
  finish_call(s, Variant::kFunctional, out, stack);
}

}  // namespace

// Note [Channels-last through NCHW]
// The pools' and batch norm's kernels read NCHW. A channels-last call (the first argument's
// suggested format, as the cpu kernels decide their results') used to take the fallback, two
// host round trips; now its channels-last 4-d tensor arguments are copied to NCHW on the device,
// the kernel runs, and its 4-d results are copied to channels-last, the layout the cpu gives
// them (max pooling's indices too: they count within a plane whatever the layout). In-place
// and out= calls keep their path.
void set_cuda_kernel_nchw(OperatorHandle* h, CudaKernel k) {
  h->set_kernel(DispatchKey::CUDA, make_boxed_kernel([k](const OperatorHandle& op,
                                                         DispatchKeySet ks, Stack* stack) {
    const OpSchema& s = op.schema();
    const size_t base = stack->size() - size_t(s.num_args);
    const auto channels_last = [](const IValue& v) {
      if (!v.is_tensor() || !v.to_tensor().defined()) return false;
      const Tensor& t = v.to_tensor();
      return t.dim() == 4 && in_device_memory(t) &&
             t.suggest_memory_format() == MemoryFormat::ChannelsLast;
    };
    if (variant_of(s) != Variant::kFunctional || !channels_last((*stack)[base]))
      return k(op, ks, stack);
    for (size_t i = base; i < stack->size(); ++i)
      if (channels_last((*stack)[i]))
        (*stack)[i] = IValue(contiguous_on_device((*stack)[i].to_tensor()));
    k(op, ks, stack);
    ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
    for (size_t i = base; i < stack->size(); ++i) {
      if (!(*stack)[i].is_tensor()) continue;
      const Tensor r = (*stack)[i].to_tensor();
      if (r.defined() && r.dim() == 4 && in_device_memory(r))
        (*stack)[i] = IValue(r.contiguous(MemoryFormat::ChannelsLast));
    }
  }));
}

void register_norm_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU) || !s.overload.empty())
      continue;
    const std::string_view n = s.name;
    if (n == "native_batch_norm") set_cuda_kernel_nchw(h, &batch_norm);
    else if (n == "_batch_norm_backward_reduce")
      set_cuda_kernel_nchw(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        batch_norm_backward(false, oh, ks, st);
      });
    else if (n == "_batch_norm_backward_elemt")
      set_cuda_kernel_nchw(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        batch_norm_backward(true, oh, ks, st);
      });
    else if (n == "max_pool2d_with_indices") set_cuda_kernel_nchw(h, &max_pool);
    else if (n == "max_pool2d_with_indices_backward")
      set_cuda_kernel_nchw(h, &max_pool_backward);
    else if (n == "avg_pool2d" || n == "avg_pool2d_backward")
      set_cuda_kernel_nchw(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        avg_pool(oh.schema().name == "avg_pool2d_backward", oh, ks, st);
      });
    else if (n == "adaptive_avg_pool2d" || n == "_adaptive_avg_pool2d_backward")
      set_cuda_kernel_nchw(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        adaptive_avg_pool(oh.schema().name == "_adaptive_avg_pool2d_backward", oh, ks, st);
      });
  }
}

}  // namespace retorch::cuda_backend
