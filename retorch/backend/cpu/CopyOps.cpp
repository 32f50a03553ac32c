// copy_ (with broadcasting and dtype conversion), fill_, clone and _to_copy.
#include <cstring>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  RT_CHECK(self.defined() && src.defined(), "copy_: undefined tensor");
  RT_CHECK(self.is_cpu() && src.is_cpu(), "copy_: the CPU backend copies between CPU tensors only ",
           "(got ", self.device(), " and ", src.device(), ")");
  if (self.is_same(src) || self.numel() == 0) return self;
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
  TensorIterator iter(out, {src}, {.name = "copy_", .promote_inputs = false,
                                   .out_dtype = self.dtype(), .common = src.dtype(),
                                   .allow_resize_out = false});
  RT_DISPATCH_ALL(self.dtype(), "copy_", [&] {
    using out_t = scalar_t;
    RT_DISPATCH_ALL(src.dtype(), "copy_", [&] {
      unary_loop<out_t, scalar_t>(iter, [](auto x) { return x; });
    });
  });
  iter.finish();
  return self;
}

Tensor fill_(const Tensor& self, const Scalar& value) {
  if (self.numel() == 0) return self;
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
  return copy_(self, v, false);
}

Tensor clone(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  return copy_(out, self, false);
}

Tensor to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  Device d = device.value_or(self.device());
  RT_CHECK(d.is_cpu(), "_to_copy: the CPU backend cannot copy to device ", d);
  Tensor out = make_empty(self.sizes(), dtype.value_or(self.dtype()), d);
  return copy_(out, self, false);
}

}  // namespace retorch::cpu
