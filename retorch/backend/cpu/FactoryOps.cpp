// Factory kernels: empty, empty_strided, arange, linspace, eye.
#include <algorithm>
#include <cmath>
#include <limits>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {
// cpu, or meta: these kernels make meta tensors too (See Note [Meta through CPU kernels]).
Device cpu_device(const std::optional<Device>& d, const char* op) {
  if (d && d->is_meta()) return Device(kMeta);
  RT_CHECK(!d || d->is_cpu(), op, ": the CPU backend cannot allocate on ", *d);
  return Device(kCPU);
}
}  // namespace

Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  for (int64_t s : size)
    RT_CHECK(s >= 0, "empty: Trying to create tensor with negative dimension ", s, ": ", size);
  return make_empty(size, dtype.value_or(default_dtype()), cpu_device(device, "empty"));
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                     std::optional<Device> device) {
  RT_CHECK(size.size() == stride.size(), "empty_strided: mismatch in length of strides and shape");
  return make_empty_strided(size, stride, dtype.value_or(default_dtype()),
                            cpu_device(device, "empty_strided"));
}

Tensor arange_start_step(const Scalar& start, const Scalar& end, const Scalar& step,
                         std::optional<ScalarType> dtype, std::optional<Device> device) {
  bool any_float = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  ScalarType dt = dtype.value_or(any_float ? default_dtype() : kLong);
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  // Like PyTorch, integer dtypes accumulate in int64: start, end and step are truncated first
  // (arange(0, 1, 0.1, dtype=int64) has step 0). Only int64 also sizes from the truncated
  // values; the other dtypes size from the exact ones.
  bool integral = !is_floating_type(dt);
  int64_t a = integral ? start.to_long() : 0, b = integral ? end.to_long() : 0,
          c = integral ? step.to_long() : 0;
  double xs = integral ? double(a) : s, xe = integral ? double(b) : e,
         xst = integral ? double(c) : st;
  RT_CHECK(xst != 0, "arange: step must be nonzero");
  RT_CHECK(std::isfinite(s) && std::isfinite(e), "arange: unsupported range: ", s, " -> ", e);
  RT_CHECK((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs),
           "arange: upper bound and larger bound inconsistent with step sign");
  double size_d = dt == kLong ? std::ceil(double(b - a) / double(c)) : std::ceil((e - s) / st);
  RT_CHECK(size_d >= 0 && size_d <= double(std::numeric_limits<int64_t>::max()),
           "arange: invalid size, possible overflow?");
  int64_t n = int64_t(size_d);
  Tensor out = make_empty({n}, dt, cpu_device(device, "arange"));
  if (out.device().is_meta()) return out;
  RT_DISPATCH_NUMERIC(dt, "arange", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    if constexpr (std::is_floating_point_v<opmath_t<scalar_t>>) {
      for (int64_t i = 0; i < n; ++i) p[i] = scalar_t(opmath_t<scalar_t>(s + double(i) * st));
    } else {
      for (int64_t i = 0; i < n; ++i) p[i] = scalar_t(a + i * c);
    }
  });
  return out;
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                std::optional<ScalarType> dtype, std::optional<Device> device) {
  RT_CHECK(steps >= 0, "linspace: number of steps must be non-negative");
  ScalarType dt = dtype.value_or(default_dtype());
  Tensor out = make_empty({steps}, dt, cpu_device(device, "linspace"));
  if (out.device().is_meta()) return out;
  double s = start.to_double(), e = end.to_double();
  if (!is_floating_type(dt)) {  // PyTorch converts start and end to the integer dtype first
    s = double(start.to_long());
    e = double(end.to_long());
  }
  const double step = steps > 1 ? (e - s) / double(steps - 1) : 0.0;
  // The first half counts up from start, the second down from end (PyTorch's rule); steps == 1
  // gives start. Two branch-free loops over each thread's range (one loop choosing the formula
  // per element, on one thread, took 1M steps 0.22 ms, PyTorch 0.14).
  const int64_t half = steps == 1 ? 1 : steps / 2;
  RT_DISPATCH_NUMERIC(dt, "linspace", [&] {
    scalar_t* p = steps ? out.data_ptr<scalar_t>() : nullptr;
    auto store = [](double v) {
      if constexpr (std::is_floating_point_v<opmath_t<scalar_t>>)
        return scalar_t(opmath_t<scalar_t>(v));
      else
        return scalar_t(int64_t(v));
    };
    parallel_for(0, steps, 1 << 15, [&](int64_t b, int64_t end) {
      const int64_t mid = std::clamp(half, b, end);
      for (int64_t i = b; i < mid; ++i) p[i] = store(s + step * double(i));
      for (int64_t i = mid; i < end; ++i) p[i] = store(e - step * double(steps - 1 - i));
    });
  });
  return out;
}

Tensor eye(int64_t n, std::optional<int64_t> m_opt, std::optional<ScalarType> dtype,
           std::optional<Device> device) {
  int64_t m = m_opt.value_or(n);
  RT_CHECK(n >= 0, "eye: n must be greater or equal to 0, got ", n);
  RT_CHECK(m >= 0, "eye: m must be greater or equal to 0, got ", m);
  Tensor out = retorch::zeros({n, m}, TensorOptions(dtype.value_or(default_dtype())).device(cpu_device(device, "eye")));
  if (out.device().is_meta()) return out;
  RT_DISPATCH_ALL(out.dtype(), "eye", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = scalar_t(1);
  });
  return out;
}

}  // namespace retorch::cpu
