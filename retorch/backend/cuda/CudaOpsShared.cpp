// The helpers CudaOps.h declares for every CUDA op file: reading a call's variant and finishing
// it, dtype tables, device copies and casts, and the route to the device fallback.
#include <cstring>
#include <string_view>

#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/device/ElementAddress.h"
#include "retorch/generated/Functions.h"

namespace retorch::cuda_backend {

std::optional<Tensor> converted(const Tensor& t, ScalarType to) {
  Tensor out = make_empty(t.sizes(), to, t.device());
  if (!copy_on_device(out, t)) return std::nullopt;
  return out;
}

Variant variant_of(const OpSchema& s) {
  if (!s.name.empty() && s.name.back() == '_') return Variant::kInplace;
  const std::string_view o = s.overload;
  if (o == "out" || (o.size() > 4 && o.substr(o.size() - 4) == "_out")) return Variant::kOut;
  return Variant::kFunctional;
}

void finish_call(const OpSchema& s, Variant v, const Tensor& out, Stack* stack) {
  if (v != Variant::kFunctional) out.impl()->bump_version();
  stack->erase(stack->end() - s.num_args, stack->end());
  stack->push_back(IValue(out));
}

DimVector strides_of(const Tensor& t) { return DimVector(t.strides().begin(), t.strides().end()); }

bool in_device_memory(const Tensor& t) {
  return t.defined() && !t.impl()->storage()->device().is_cpu();
}

void* device_ptr(const Tensor& t) { return element_address(t); }

std::optional<NumericType> numeric_type(ScalarType t) {
  switch (t) {
    case kFloat: return NumericType::kFloat;
    case kDouble: return NumericType::kDouble;
    case kHalf: return NumericType::kHalf;
    case kBFloat16: return NumericType::kBFloat16;
    case kChar: return NumericType::kInt8;
    case kByte: return NumericType::kUInt8;
    case kShort: return NumericType::kInt16;
    case kInt: return NumericType::kInt32;
    case kLong: return NumericType::kInt64;
    default: return std::nullopt;
  }
}

std::optional<CastType> cast_type(ScalarType t) {
  if (t == kBool) return CastType::kBool;
  const auto n = numeric_type(t);
  if (!n) return std::nullopt;
  return CastType(int(*n));  // the same order (CudaPointwise.h)
}

uint64_t bits_of(ScalarType dtype, const Scalar& value) {
  Tensor one = make_empty({}, dtype);
  {
    ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
    one.fill_(value);
  }
  uint64_t bits = 0;
  std::memcpy(&bits, one.impl()->storage()->data(), size_t(one.element_size()));
  return bits;
}

Generator& generator_arg(const IValue& a) {
  return a.is_none() ? default_generator() : const_cast<Generator&>(a.to_generator());
}

void push_results(const OpSchema& s, std::initializer_list<Tensor> outs, Stack* stack) {
  stack->erase(stack->end() - s.num_args, stack->end());
  for (const Tensor& t : outs) stack->push_back(IValue(t));
}

std::optional<FloatType> float_type(ScalarType t) {
  switch (t) {
    case kFloat: return FloatType::kFloat;
    case kDouble: return FloatType::kDouble;
    case kHalf: return FloatType::kHalf;
    case kBFloat16: return FloatType::kBFloat16;
    default: return std::nullopt;
  }
}

DimVector broadcast_strides(const Tensor& t, IntArrayRef shape) {
  DimVector s(shape.size(), 0);
  const size_t lead = shape.size() - size_t(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) s[lead + size_t(d)] = t.stride(d);
  return s;
}

void run_device_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  Dispatcher::singleton().fallback(DispatchKey::DeviceFallback).boxed(op, ks, stack);
}

Tensor contiguous_on_device(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = make_empty(t.sizes(), t.dtype(), t.device());
  RT_CHECK(copy_on_device(c, t), "cuda: could not copy a ", t.dim(), "-dim tensor");
  return c;
}

std::string_view base_name(const OpSchema& s) {
  std::string_view base = s.name;
  if (!base.empty() && base.back() == '_') base.remove_suffix(1);
  return base;
}

void set_cuda_kernel(OperatorHandle* h, CudaKernel k) {
  h->set_kernel(DispatchKey::CUDA, make_boxed_kernel([k](const OperatorHandle& op,
                                                         DispatchKeySet ks, Stack* stack) {
                  k(op, ks, stack);
                }));
}

bool copy_on_device(const Tensor& dst, const Tensor& src) {
  if (!in_device_memory(dst) || !in_device_memory(src) || dst.device() != src.device() ||
      src.dim() > dst.dim())
    return false;
  for (int64_t d = 0; d < src.dim(); ++d) {
    const int64_t want = dst.size(dst.dim() - src.dim() + d);
    if (src.size(d) != want && src.size(d) != 1) return false;  // the host path raises
  }
  const bool same = dst.dtype() == src.dtype();
  const auto cast_to = cast_type(dst.dtype()), cast_from = cast_type(src.dtype());
  if (!same && !(cast_to && cast_from)) return false;
  Geometry<2> g;
  if (!geometry_of<2>(dst.sizes(), {strides_of(dst), broadcast_strides(src, dst.sizes())}, &g))
    return false;
  if (same)
    launch_copy_bytes(int(dst.element_size()), g, device_ptr(dst), device_ptr(src),
                      current_stream());
  else
    launch_cast(*cast_to, *cast_from, g, device_ptr(dst), device_ptr(src), current_stream());
  return true;
}

}  // namespace retorch::cuda_backend
