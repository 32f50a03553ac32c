// copy_ (with broadcasting and dtype conversion), fill_, clone and _to_copy.
#include <cmath>
#include <cstring>
#include <limits>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {
// copy_ without the overlap check, shared with fill_ (see Note [Internal overlap]).
Tensor copy_impl(const Tensor& self, const Tensor& src, bool check_overlap) {
  RT_CHECK(self.defined() && src.defined(), "copy_: undefined tensor");
  RT_CHECK(self.is_cpu() && src.is_cpu(), "copy_: the CPU backend copies between CPU tensors only ",
           "(got ", self.device(), " and ", src.device(), ")");
  if (self.is_same(src) || self.numel() == 0) return self;
  if (check_overlap) detail::assert_no_partial_overlap(self, src, "copy_");
  // Fast path: same dtype, same shape, both contiguous.
  if (self.dtype() == src.dtype() && self.sizes().equals(src.sizes()) && self.is_contiguous() &&
      src.is_contiguous()) {
    char* d = static_cast<char*>(self.impl()->data());
    const char* s = static_cast<const char*>(src.impl()->data());
    if (d == s) return self;
    int64_t nbytes = self.numel() * self.element_size();
    parallel_for(0, nbytes, 1 << 20, [&](int64_t b, int64_t e) { std::memmove(d + b, s + b, size_t(e - b)); });
    return self;
  }
  Tensor out = self;
  // copy_ broadcasts src to self's shape (the iterator only broadcasts inputs with each other).
  const Tensor s = src.sizes().equals(self.sizes()) ? src : src.expand(self.sizes());
  TensorIterator iter(out, {s}, {.name = "copy_", .promote_inputs = false,
                                 .out_dtype = self.dtype(), .common = src.dtype(),
                                 .allow_resize_out = false,
                                 .check_mem_overlap = check_overlap});
  RT_DISPATCH_ALL(self.dtype(), "copy_", [&] {
    using out_t = scalar_t;
    RT_DISPATCH_ALL(src.dtype(), "copy_", [&] {
      unary_loop<out_t, scalar_t>(iter, [](auto x) { return x; });
    });
  });
  iter.finish();
  return self;
}
}  // namespace

Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  (void)non_blocking;
  return copy_impl(self, src, true);
}

// PyTorch's checked_convert for fill values: a value outside the dtype's range is an error
// rather than a wrapped or saturated number. Negative integers may wrap into unsigned types
// (-1 fills uint8 with 255), infinities and nan may fill floating types, bool takes anything.
template <typename T>
void check_fill_value(const Scalar& v, ScalarType dtype) {
  if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, double>) {
    constexpr bool kFloat = !std::is_integral_v<T>;
    constexpr bool kSigned = kFloat || std::is_signed_v<T>;
    double lo, hi;
    if constexpr (std::is_same_v<T, Half>) {
      lo = -65504.0, hi = 65504.0;
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      lo = -3.3895313892515355e38, hi = 3.3895313892515355e38;
    } else {
      lo = double(std::numeric_limits<T>::lowest()), hi = double(std::numeric_limits<T>::max());
    }
    bool ok;
    if (v.is_floating_point()) {
      double d = v.to_double();
      ok = (kFloat && !std::isfinite(d)) || (d >= lo && d <= hi);
    } else {
      double i = double(v.to_long());
      ok = i <= hi && (kSigned ? i >= lo : -i <= hi);
    }
    RT_CHECK(ok, "fill_: value cannot be converted to type ", dtype, " without overflow");
  }
}

Tensor fill_(const Tensor& self, const Scalar& value) {
  RT_DISPATCH_ALL(self.dtype(), "fill_", [&] { check_fill_value<scalar_t>(value, self.dtype()); });
  if (self.numel() == 0 || self.device().is_meta()) return self;  // Note [Meta through CPU kernels]
  if (self.is_contiguous()) {
    RT_DISPATCH_ALL(self.dtype(), "fill_", [&] {
      scalar_t v = value.to<scalar_t>();
      scalar_t* p = static_cast<scalar_t*>(self.impl()->data());
      parallel_for(0, self.numel(), 1 << 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = v;
      });
    });
    return self;
  }
  Tensor v = make_empty({}, self.dtype());
  RT_DISPATCH_ALL(self.dtype(), "fill_", [&] { *v.data_ptr<scalar_t>() = value.to<scalar_t>(); });
  return copy_impl(self, v, false);
}

Tensor clone(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  return out.copy_(self);  // dispatched: on meta tensors, the meta copy
}

Tensor to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Device d = device.value_or(self.device());
  RT_CHECK(d.is_cpu(), "_to_copy: the CPU backend cannot copy to device ", d);
  Tensor out = make_empty(self.sizes(), dtype.value_or(self.dtype()), d);
  return copy_(out, self, false);
}

}  // namespace retorch::cpu
