// Composite activations (torch.nn.functional semantics), built from differentiable primitives so
// every gradient, and every gradient of a gradient, comes from autograd.
#include <cmath>

#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

namespace {

// Note [Activations in opmath]: a composite rounds every intermediate to its input dtype. For
// float16/bfloat16 that costs several ulps where PyTorch's fused kernels round once, so the
// 16-bit floats run the whole formula in float32 and round the result once.
template <typename F>
Tensor in_opmath(const Tensor& x, const F& f) {
  if (x.dtype() == kHalf || x.dtype() == kBFloat16) return f(x.to(kFloat)).to(x.dtype());
  return f(x);
}

void check_floating(const char* kernel, const Tensor& x) {
  RT_CHECK(is_floating_type(x.dtype()), "\"", kernel, "\" not implemented for '",
           dtype_name(x.dtype()), "'");
}

/// PyTorch converts a Scalar argument to an integer dtype with an overflow check.
void check_fits(const char* op, const Scalar& s, ScalarType t) {
  double lo = 0, hi = 0;
  switch (t) {
    // Negative integers wrap around into uint8 (c10's rule); negative floats overflow.
    case kByte: lo = s.is_floating_point() ? 0 : -255, hi = 255; break;
    case kChar: lo = -128, hi = 127; break;
    case kShort: lo = -32768, hi = 32767; break;
    case kInt: lo = -2147483648.0, hi = 2147483647.0; break;
    case kLong: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
    default: return;
  }
  const double v = s.to_double();
  RT_CHECK(v >= lo && v <= hi, op, ": value ", v, " cannot be converted to type ",
           dtype_name(t), " without overflow");
}

}  // namespace

Tensor relu6(const Tensor& self) { return retorch::hardtanh(self, Scalar(0), Scalar(6)); }
// (The in-place forms go through the in-place kernels they are built on: relu6_ of 1M floats
// computed a result and copied it into self, 0.09 ms, PyTorch 0.04.)
void relu6_(const Tensor& self) { retorch::hardtanh_(self, Scalar(0), Scalar(6)); }

Tensor mish(const Tensor& self) {
  check_floating("mish_cpu", self);
  return in_opmath(self, [](const Tensor& x) { return x * retorch::softplus(x).tanh(); });
}

namespace {
const Scalar kSeluAlpha(1.6732632423543772848170429916717);
const Scalar kSeluScale(1.0507009873554804934193349852946);
double celu_input_scale(const Scalar& alpha) {
  RT_CHECK(alpha.to_double() != 0, "ZeroDivisionError: alpha cannot be 0 for CELU");
  return 1.0 / alpha.to_double();
}
}  // namespace

Tensor selu(const Tensor& self) { return retorch::elu(self, kSeluAlpha, kSeluScale, Scalar(1)); }
void selu_(const Tensor& self) { retorch::elu_(self, kSeluAlpha, kSeluScale, Scalar(1)); }

Tensor celu(const Tensor& self, const Scalar& alpha) {
  return retorch::elu(self, alpha, Scalar(1), Scalar(celu_input_scale(alpha)));
}
void celu_(const Tensor& self, const Scalar& alpha) {
  retorch::elu_(self, alpha, Scalar(1), Scalar(celu_input_scale(alpha)));
}

Tensor prelu(const Tensor& self, const Tensor& weight) {
  check_floating("prelu_cpu", self);
  RT_CHECK(weight.dim() <= 1, "prelu: Expected `weight` to be a scalar or 1D tensor, but got "
           "ndim = ", weight.dim());
  const int64_t nw = weight.numel();
  Tensor w = weight;
  if (nw != 1) {
    RT_CHECK(self.dim() > 0, "prelu: Not allow zero-dim input tensor.");
    const int64_t channels = self.dim() > 1 ? self.size(1) : 1;
    RT_CHECK(channels == nw, "prelu: Mismatch of parameter numbers and input channel size. Found "
             "parameter numbers = ", nw, " and channel size = ", channels, " (input ",
             self.sizes(), ").");
    std::vector<int64_t> shape(size_t(self.dim()), 1);
    shape[1] = nw;
    w = weight.reshape(shape);
  } else {
    w = weight.reshape({});
  }
  auto f = [&](const Tensor& x) {
    const Tensor wx = w.dtype() == x.dtype() ? w : w.to(x.dtype());
    return where(x > 0, x, wx * x);
  };
  return in_opmath(self, f);
}

Tensor rrelu(const Tensor& self, const Scalar& lower, const Scalar& upper, bool training,
             std::optional<Generator> generator) {
  const double lo = lower.to_double(), hi = upper.to_double();
  RT_CHECK(lo <= hi, "rrelu: Lower bound should be less than or equal to the upper bound (got "
           "lower ", lo, ", upper ", hi, ")");
  if (!training) return retorch::leaky_relu(self, Scalar((lo + hi) / 2));
  check_floating("rrelu_with_noise_cpu", self);
  return in_opmath(self, [&](const Tensor& x) {
    // Each non-positive element gets its own slope drawn from U(lower, upper); the slopes
    // are constants for autograd, so the gradient is grad * slope.
    Tensor noise = empty_like(x).uniform_(lo, hi, generator);
    noise = where(x > 0, Scalar(1), noise).detach();
    return x * noise;
  });
}

Tensor glu(const Tensor& self, int64_t dim) {
  RT_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  check_floating("glu_cpu", self);
  const int64_t d = maybe_wrap_dim(dim, self.dim(), "glu");
  const int64_t n = self.size(d);
  RT_CHECK(n % 2 == 0, "glu: Halving dimension must be even, but dimension ", d, " is size ", n,
           " (input ", self.sizes(), ")");
  return in_opmath(self, [&](const Tensor& x) {
    // split, not narrow: split's backward is a cat, which differentiates again.
    std::vector<Tensor> halves = x.split_with_sizes({n / 2, n / 2}, d);
    return halves[0] * halves[1].sigmoid();
  });
}

Tensor softsign(const Tensor& self) {
  return in_opmath(self, [](const Tensor& x) { return x / (x.abs() + 1); });
}

Tensor tanhshrink(const Tensor& self) {
  return in_opmath(self, [](const Tensor& x) { return x - x.tanh(); });
}

Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  RT_CHECK(self.dtype() != kBool, "\"threshold_cpu\" not implemented for 'Bool'");
  check_fits("threshold", threshold, self.dtype());
  check_fits("threshold", value, self.dtype());
  // PyTorch casts threshold and value to self's dtype (no promotion): an integer input
  // compares against the truncated (and, for uint8, wrapped) threshold.
  const Tensor v = scalar_to_tensor(value).to(self.dtype());
  if (is_integral_type(self.dtype(), false)) {
    const Tensor th = scalar_to_tensor(Scalar(threshold.to_long())).to(self.dtype());
    return where(self <= th, v, self);
  }
  const Scalar& th = threshold;
  return where(self <= th, v, self);  // NaN is not <= threshold: it passes through
}

Tensor logsigmoid(const Tensor& self) { return std::get<0>(retorch::log_sigmoid_forward(self)); }

std::tuple<Tensor, Tensor> log_sigmoid_forward(const Tensor& self) {
  check_floating("log_sigmoid_cpu", self);
  // -softplus(-x): softplus's threshold makes it exact (= x) for very negative x. Both
  // contiguous, as PyTorch's.
  Tensor out = in_opmath(self, [](const Tensor& x) { return retorch::softplus(x.neg()).neg(); });
  Tensor buffer = in_opmath(self, [](const Tensor& x) { return x.abs().neg().exp(); });
  return {out.contiguous(), buffer.contiguous()};
}

Tensor softmin(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return retorch::softmax(self.neg(), dim, dtype);
}

Tensor hardshrink(const Tensor& self, const Scalar& lambd) {
  check_floating("hardshrink_cpu", self);
  const double l = lambd.to_double();
  return in_opmath(self, [l](const Tensor& x) {
    return where((x >= -l) & (x <= l), Scalar(0), x);
  });
}

Tensor softshrink(const Tensor& self, const Scalar& lambd) {
  const double l = lambd.to_double();
  RT_CHECK(l >= 0, "softshrink: lambda must be greater or equal to 0, but found to be ", l, ".");
  check_floating("softshrink_cpu", self);
  return in_opmath(self, [l](const Tensor& x) {
    return where(x > l, x - l, where(x < -l, x + l, Scalar(0)));
  });
}

}  // namespace retorch::composite
