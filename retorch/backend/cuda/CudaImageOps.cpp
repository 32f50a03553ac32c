// CUDA kernels of upsample_nearest2d and upsample_bilinear2d, adaptive_max_pool2d and
// native_group_norm, with their backwards, registered at the CUDA key (NCHW tensors).
#include <optional>
#include <string_view>
#include <vector>

#include "retorch/backend/cuda/CudaImage.h"
#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"

namespace retorch::cuda_backend {

// See Note [CUDA image ops] in CudaImage.cu. The host side takes floating tensors of one dtype
// in the device memory of one device (nearest forward: uint8 too), strided inputs made
// contiguous on the device; adaptive max pooling of channels-last inputs runs on NCHW copies
// (Note [Channels-last through NCHW] in CudaNormOps.cpp). Everything else (other dtypes, empty
// tensors, sizes or arguments the cpu kernel refuses) takes the device fallback, so its results
// and errors are the cpu kernel's.

namespace {

// An optional float argument: 0 for None (the kernels read a scale <= 0 as none, as the cpu).
double scale_arg(const IValue& v) {
  return v.is_none() ? 0.0 : v.to_double();
}

bool positive_pair(const std::vector<int64_t>& v) {
  return v.size() == 2 && v[0] > 0 && v[1] > 0;
}

// upsample_nearest2d(self, output_size, scales_h?, scales_w?) and upsample_bilinear2d(self,
// output_size, align_corners, scales_h?, scales_w?): 4-d inputs with elements.
void upsample(bool bilinear, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args), scales = base + (bilinear ? 3 : 2);
  const Tensor x = (*stack)[base].to_tensor();
  const std::vector<int64_t> size = (*stack)[base + 1].to_int_list();
  const bool typed =
      bilinear ? bool(float_type(x.dtype())) : float_type(x.dtype()) || x.dtype() == kByte;
  if (!in_device_memory(x) || !typed || x.dim() != 4 || x.numel() == 0 || !positive_pair(size))
    return run_device_fallback(h, ks, stack);
  ResizeShape g;
  g.planes = x.size(0) * x.size(1);
  g.ih = x.size(2), g.iw = x.size(3), g.oh = size[0], g.ow = size[1];
  g.scale_h = scale_arg((*stack)[scales]);
  g.scale_w = scale_arg((*stack)[scales + 1]);
  g.align_corners = bilinear && (*stack)[base + 2].to_bool();
  const Tensor xc = contiguous_on_device(x);
  Tensor out = make_empty({x.size(0), x.size(1), g.oh, g.ow}, x.dtype(), x.device());
  if (bilinear)
    launch_upsample_bilinear2d(*float_type(x.dtype()), device_ptr(xc), device_ptr(out), g,
                               current_stream());
  else
    launch_upsample_nearest2d(x.element_size(), device_ptr(xc), device_ptr(out), g,
                              current_stream());
  finish_call(s, Variant::kFunctional, out, stack);
}

// upsample_nearest2d_backward(grad_output, output_size, input_size, scales_h?, scales_w?) and
// upsample_bilinear2d_backward(grad_output, output_size, input_size, align_corners, scales_h?,
// scales_w?): grad_output of the size the forward gave.
void upsample_backward(bool bilinear, const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args), scales = base + (bilinear ? 4 : 3);
  const Tensor go = (*stack)[base].to_tensor();
  const std::vector<int64_t> out_size = (*stack)[base + 1].to_int_list();
  const std::vector<int64_t> in_size = (*stack)[base + 2].to_int_list();
  bool ok = on_device(go) && positive_pair(out_size) && in_size.size() == 4;
  for (size_t k = 0; ok && k < 4; ++k) ok = in_size[k] > 0;
  ok = ok && go.sizes().equals({in_size[0], in_size[1], out_size[0], out_size[1]});
  if (!ok) return run_device_fallback(h, ks, stack);
  ResizeShape g;
  g.planes = in_size[0] * in_size[1];
  g.ih = in_size[2], g.iw = in_size[3], g.oh = out_size[0], g.ow = out_size[1];
  g.scale_h = scale_arg((*stack)[scales]);
  g.scale_w = scale_arg((*stack)[scales + 1]);
  g.align_corners = bilinear && (*stack)[base + 3].to_bool();
  const Tensor gc = contiguous_on_device(go);
  Tensor gi = make_empty(in_size, go.dtype(), go.device());
  const FloatType t = *float_type(go.dtype());
  if (bilinear)
    launch_upsample_bilinear2d_backward(t, device_ptr(gc), device_ptr(gi), g, current_stream());
  else
    launch_upsample_nearest2d_backward(t, device_ptr(gc), device_ptr(gi), g, current_stream());
  finish_call(s, Variant::kFunctional, gi, stack);
}

// A 3-d or 4-d pool input with elements whose cpu result is NCHW (a channels-last input's is
// channels-last: the fallback keeps that layout).
bool pool_input(const Tensor& x) {
  return on_device(x) && (x.dim() == 3 || x.dim() == 4) && x.numel() > 0 &&
         x.suggest_memory_format() == MemoryFormat::Contiguous;
}

PoolShape plane_shape(const Tensor& x) {
  PoolShape g;
  g.h = x.size(-2);
  g.w = x.size(-1);
  g.planes = x.numel() / (g.h * g.w);
  return g;
}

void adaptive_max_pool(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor x = (*stack)[base].to_tensor();
  const std::vector<int64_t> size = (*stack)[base + 1].to_int_list();
  if (!pool_input(x) || !positive_pair(size)) return run_device_fallback(h, ks, stack);
  PoolShape g = plane_shape(x);
  g.oh = size[0];
  g.ow = size[1];
  const Tensor xc = contiguous_on_device(x);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 2);
  shape.push_back(g.oh);
  shape.push_back(g.ow);
  Tensor out = make_empty(shape, x.dtype(), x.device());
  Tensor indices = make_empty(shape, kLong, x.device());
  launch_adaptive_max_pool2d(*float_type(x.dtype()), device_ptr(xc), device_ptr(out),
                             static_cast<int64_t*>(device_ptr(indices)), g, current_stream());
  push_results(s, {out, indices}, stack);
}

// adaptive_max_pool2d_backward(grad_output, self, indices): any grad_output plane size, as the
// cpu kernel (it scatters to the indices).
void adaptive_max_pool_backward(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor go = (*stack)[base].to_tensor(), x = (*stack)[base + 1].to_tensor();
  const Tensor indices = (*stack)[base + 2].to_tensor();
  const size_t lead = size_t(x.dim() > 2 ? x.dim() - 2 : 0);
  const bool ok = pool_input(x) && alongside(go, x) && indices.defined() &&
                  in_device_memory(indices) && indices.device() == x.device() &&
                  indices.dtype() == kLong && go.dim() == x.dim() &&
                  indices.sizes().equals(go.sizes()) &&
                  go.sizes().slice(0, lead).equals(x.sizes().slice(0, lead));
  if (!ok) return run_device_fallback(h, ks, stack);
  PoolShape g = plane_shape(x);
  g.oh = go.size(-2);
  g.ow = go.size(-1);
  const Tensor gc = contiguous_on_device(go), ic = contiguous_on_device(indices);
  Tensor gi = make_empty(x.sizes(), x.dtype(), x.device());
  const bool wide = x.dtype() == kFloat || x.dtype() == kDouble;
  Tensor acc = wide ? Tensor() : make_empty({x.numel()}, kFloat, x.device());
  launch_adaptive_max_pool2d_backward(
      *float_type(x.dtype()), device_ptr(gc), static_cast<const int64_t*>(device_ptr(ic)),
      device_ptr(gi), wide ? nullptr : static_cast<float*>(device_ptr(acc)), g, current_stream());
  finish_call(s, Variant::kFunctional, gi, stack);
}

// A group norm weight or bias argument: an undefined tensor for None, the contiguous vector of
// c values of x's dtype on its device, or nullopt (the fallback) for anything else.
std::optional<Tensor> channel_param(const IValue& v, const Tensor& x, int64_t c) {
  if (v.is_none() || !v.to_tensor().defined()) return Tensor();
  const Tensor& t = v.to_tensor();
  if (!alongside(t, x) || t.dim() != 1 || t.numel() != c) return std::nullopt;
  return contiguous_on_device(t);
}

const void* ptr_or_null(const Tensor& t) {
  return t.defined() ? device_ptr(t) : nullptr;
}

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps): the sizes as the cpu kernel
// checks them.
void group_norm(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor x = (*stack)[base].to_tensor();
  GroupNormShape g;
  g.n = (*stack)[base + 3].to_int();
  g.c = (*stack)[base + 4].to_int();
  g.hxw = (*stack)[base + 5].to_int();
  g.group = (*stack)[base + 6].to_int();
  g.eps = (*stack)[base + 7].to_double();
  bool ok = on_device(x) && x.dim() >= 2 && x.numel() > 0 && x.size(0) == g.n && x.size(1) == g.c &&
            g.hxw > 0 && x.numel() == g.n * g.c * g.hxw && g.group > 0 && g.c % g.group == 0;
  std::optional<Tensor> w, b;
  if (ok) {
    w = channel_param((*stack)[base + 1], x, g.c);
    b = channel_param((*stack)[base + 2], x, g.c);
    ok = w && b;
  }
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor xc = contiguous_on_device(x);
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  Tensor mean = make_empty({g.n, g.group}, x.dtype(), x.device());
  Tensor rstd = make_empty({g.n, g.group}, x.dtype(), x.device());
  launch_group_norm(*float_type(x.dtype()), device_ptr(xc), ptr_or_null(*w), ptr_or_null(*b),
                    device_ptr(out), device_ptr(mean), device_ptr(rstd), g, current_stream());
  push_results(s, {out, mean, rstd}, stack);
}

// _group_norm_backward(grad_out, input, mean, rstd, weight?, group): dx, and the weight's and
// bias's gradients (computed with or without a weight, as on the cpu).
void group_norm_backward(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor dy = (*stack)[base].to_tensor(), x = (*stack)[base + 1].to_tensor();
  const Tensor mean = (*stack)[base + 2].to_tensor(), rstd = (*stack)[base + 3].to_tensor();
  GroupNormShape g;
  g.group = (*stack)[base + 5].to_int();
  bool ok = on_device(x) && x.dim() >= 2 && x.numel() > 0 && g.group > 0 &&
            x.size(1) % g.group == 0 && alongside(dy, x) && dy.sizes().equals(x.sizes());
  if (ok) {
    g.n = x.size(0);
    g.c = x.size(1);
    g.hxw = x.numel() / (g.n * g.c);
    ok = alongside(mean, x) && alongside(rstd, x) && mean.numel() == g.n * g.group &&
         rstd.numel() == g.n * g.group;
  }
  std::optional<Tensor> w;
  if (ok) ok = bool(w = channel_param((*stack)[base + 4], x, g.c));
  if (!ok) return run_device_fallback(h, ks, stack);
  const Tensor xc = contiguous_on_device(x), dyc = contiguous_on_device(dy);
  const Tensor mc = contiguous_on_device(mean), rc = contiguous_on_device(rstd);
  Tensor dx = make_empty(x.sizes(), x.dtype(), x.device());
  Tensor dw = make_empty({g.c}, x.dtype(), x.device());
  Tensor db = make_empty({g.c}, x.dtype(), x.device());
  const ScalarType at = x.dtype() == kDouble ? kDouble : kFloat;
  Tensor work = make_empty({2 * g.n * g.c + 2 * g.n * g.group}, at, x.device());
  launch_group_norm_backward(*float_type(x.dtype()), device_ptr(dyc), device_ptr(xc),
                             device_ptr(mc), device_ptr(rc), ptr_or_null(*w), device_ptr(dx),
                             device_ptr(dw), device_ptr(db), device_ptr(work), g, current_stream());
  push_results(s, {dx, dw, db}, stack);
}

}  // namespace

void register_image_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU) || !s.overload.empty())
      continue;
    const std::string_view n = s.name;
    if (n == "upsample_nearest2d" || n == "upsample_bilinear2d")
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        upsample(oh.schema().name == "upsample_bilinear2d", oh, ks, st);
      });
    else if (n == "upsample_nearest2d_backward" || n == "upsample_bilinear2d_backward")
      set_cuda_kernel(h, [](const OperatorHandle& oh, DispatchKeySet ks, Stack* st) {
        upsample_backward(oh.schema().name == "upsample_bilinear2d_backward", oh, ks, st);
      });
    else if (n == "adaptive_max_pool2d")
      set_cuda_kernel_nchw(h, &adaptive_max_pool);
    else if (n == "adaptive_max_pool2d_backward")
      set_cuda_kernel_nchw(h, &adaptive_max_pool_backward);
    else if (n == "native_group_norm")
      set_cuda_kernel(h, &group_norm);
    else if (n == "_group_norm_backward")
      set_cuda_kernel(h, &group_norm_backward);
  }
}

}  // namespace retorch::cuda_backend
