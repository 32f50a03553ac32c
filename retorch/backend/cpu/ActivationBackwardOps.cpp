// One-pass backward kernels of the activations (sigmoid, tanh, silu, gelu, hardtanh, hardswish,
// hardsigmoid, leaky_relu, elu; logsigmoid's also reads its forward's buffer): out =
// f(grad_output, x) in opmath, rounded once. Written of primitives
// (composite/ActivationBackward.cpp, the other backends' form) they took three to seven passes
// over fresh temporaries: 1.2-7.9x PyTorch's time on 1M floats. silu's sigmoid and
// gelu's erf, exp and tanh run through the vector functions an L1-sized chunk at a time.
#include <cmath>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cpu {

namespace {

// out = f(g, x) over the floating dtypes, g and x promoted together; f takes opmath values.
// `chunk(g, x, out, m)`, given, runs contiguous float/double spans (loops::binary_chunks) and
// returns false where the CPU lacks the vector functions it uses.
template <typename F, typename Chunk = std::nullptr_t>
Tensor activation_backward(const char* name, const Tensor& grad_output, const Tensor& x,
                           const F& f, const Chunk& chunk = nullptr) {
  Tensor out;
  TensorIterator iter(out, {grad_output, x}, {.name = name});
  RT_CHECK(is_floating_type(iter.common_dtype()), "\"", name, "\" not implemented for '",
           dtype_name(iter.common_dtype()), "'");
  RT_DISPATCH_FLOATING(iter.common_dtype(), name, [&] {
    using op_t = opmath_t<scalar_t>;
    auto g = [&](op_t a, op_t b) -> op_t { return f(a, b); };
    if constexpr (!std::is_null_pointer_v<Chunk> && loops::kVecFloat<scalar_t>) {
      iter.for_each([&](char** data, const int64_t* st, int64_t n) {
        if (!loops::binary_chunks<scalar_t>(data, st, n, chunk))
          binary_span<scalar_t, scalar_t>(data, st, n, g);
      });
    } else if constexpr (!std::is_null_pointer_v<Chunk> && !loops::kVecFloat<scalar_t>) {
      // float16/bfloat16 (autocast's activations): the float chunks, widened. 1M bfloat16
      // gelu_backward took 2.5 ms through the scalar erf and exp.
      iter.for_each([&](char** data, const int64_t* st, int64_t n) {
        if (!loops::binary_chunks_widened<scalar_t>(data, st, n, chunk))
          binary_span<scalar_t, scalar_t>(data, st, n, g);
      });
    } else {
      binary_loop<scalar_t, scalar_t>(iter, g);
    }
  });
  iter.finish();
  return out;
}

constexpr double kGeluK = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

// gelu's derivative from erf(x / sqrt(2)) and exp(-x^2 / 2).
template <typename T>
T gelu_grad(T x, T erf_term, T exp_term) {
  return T(0.5) * (T(1) + erf_term) + x * exp_term * T(M_2_SQRTPI * M_SQRT1_2 * 0.5);
}

// gelu-tanh's derivative from t = tanh(k (x + c x^3)).
template <typename T>
T gelu_tanh_grad(T x, T t) {
  const T du = T(kGeluK) * (T(1) + T(3 * kGeluC) * x * x);  // d/dx of tanh's argument
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

}  // namespace

Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return activation_backward("sigmoid_backward", grad_output, output, [](auto g, auto y) {
    using T = decltype(g);
    return g * (T(1) - y) * y;
  });
}

Tensor tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return activation_backward("tanh_backward", grad_output, output, [](auto g, auto y) {
    using T = decltype(g);
    return g * (T(1) - y * y);
  });
}

Tensor silu_backward(const Tensor& grad_output, const Tensor& self) {
  auto grad = [](auto g, auto x, auto s) {
    using T = decltype(g);
    return g * s * (T(1) + x * (T(1) - s));
  };
  return activation_backward("silu_backward", grad_output, self,
      [&](auto g, auto x) {
        using T = decltype(g);
        return grad(g, x, T(1) / (T(1) + std::exp(-x)));
      },
      [&](const auto* g, const auto* x, auto* out, int64_t m) {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(g)>>;
        alignas(64) T s[512];
        if (!vec_unary(VecFn::kSigmoid, x, s, m)) return false;
        for (int64_t j = 0; j < m; ++j) out[j] = grad(g[j], x[j], s[j]);
        return true;
      });
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& self,
                     std::string_view approximate) {
  check_gelu_approximate(approximate, "gelu_backward");
  if (approximate == "tanh") {
    return activation_backward("gelu_backward", grad_output, self,
        [](auto g, auto x) {
          using T = decltype(g);
          return g * gelu_tanh_grad(x, std::tanh(T(kGeluK) * (x + T(kGeluC) * x * x * x)));
        },
        [](const auto* g, const auto* x, auto* out, int64_t m) {
          using T = std::remove_cv_t<std::remove_pointer_t<decltype(g)>>;
          alignas(64) T t[512];
          for (int64_t j = 0; j < m; ++j)
            t[j] = T(kGeluK) * (x[j] + T(kGeluC) * x[j] * x[j] * x[j]);
          if (!vec_unary(VecFn::kTanh, t, t, m)) return false;
          for (int64_t j = 0; j < m; ++j) out[j] = g[j] * gelu_tanh_grad(x[j], t[j]);
          return true;
        });
  }
  return activation_backward("gelu_backward", grad_output, self,
      [](auto g, auto x) {
        using T = decltype(g);
        return g * gelu_grad(x, std::erf(x * T(M_SQRT1_2)), std::exp(T(-0.5) * x * x));
      },
      [](const auto* g, const auto* x, auto* out, int64_t m) {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(g)>>;
        alignas(64) T e[512], p[512];
        for (int64_t j = 0; j < m; ++j) {
          e[j] = x[j] * T(M_SQRT1_2);
          p[j] = T(-0.5) * x[j] * x[j];
        }
        // GELU's rational erf (SLEEF's 1-ulp erf took 2.2x the whole kernel's time in PyTorch)
        if (!vec_unary(VecFn::kErfFast, e, e, m) || !vec_unary(VecFn::kExp, p, p, m))
          return false;
        for (int64_t j = 0; j < m; ++j) out[j] = g[j] * gelu_grad(x[j], e[j], p[j]);
        return true;
      });
}

// logsigmoid's: g * sigmoid(-x), from the forward's buffer b = exp(-|x|) as PyTorch's kernel
// computes it, b / (1 + b) at and above 0 and 1 - b / (1 + b) below (no exp: computing the
// sigmoid again took 1.66x PyTorch's time on 1M floats).
Tensor log_sigmoid_backward(const Tensor& grad_output, const Tensor& self, const Tensor& buffer) {
  Tensor out;
  TensorIterator iter(out, {grad_output, self, buffer}, {.name = "log_sigmoid_backward_cpu"});
  RT_CHECK(is_floating_type(iter.common_dtype()), "\"log_sigmoid_backward_cpu\" not implemented "
           "for '", dtype_name(iter.common_dtype()), "'");
  RT_DISPATCH_FLOATING(iter.common_dtype(), "log_sigmoid_backward_cpu", [&] {
    using op_t = opmath_t<scalar_t>;
    ternary_loop<scalar_t, scalar_t, scalar_t, scalar_t>(iter, [](op_t g, op_t x, op_t b) {
      const op_t z = b / (op_t(1) + b);
      return (x < op_t(0) ? op_t(1) - z : z) * g;
    });
  });
  iter.finish();
  return out;
}

// elu's: g * scale above 0; elsewhere (NaN included, as PyTorch's vector loop decides it),
// g * input_scale * alpha * scale * exp(x * input_scale) from the input, or
// g * input_scale * (y + alpha * scale) from the result. The exponentials run through the vector
// exp a chunk at a time, only for chunks holding a value that is not above 0.
Tensor elu_backward(const Tensor& grad_output, const Scalar& alpha, const Scalar& scale,
                    const Scalar& input_scale, bool is_result, const Tensor& self_or_result) {
  const double neg = alpha.to_double() * scale.to_double(), pos = scale.to_double();
  const double in_s = input_scale.to_double();
  check_elu_backward(alpha.to_double(), is_result);
  if (is_result) {
    return activation_backward("elu_backward", grad_output, self_or_result, [=](auto g, auto y) {
      using T = decltype(g);
      const T below = g * T(in_s) * (y + T(neg));
      return y > T(0) ? g * T(pos) : below;
    });
  }
  return activation_backward("elu_backward", grad_output, self_or_result,
      [=](auto g, auto x) {
        using T = decltype(g);
        return x > T(0) ? g * T(pos) : g * T(in_s * neg) * std::exp(x * T(in_s));
      },
      [=](const auto* g, const auto* x, auto* out, int64_t m) {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(g)>>;
        bool all_above = true;
        for (int64_t j = 0; j < m; ++j) all_above &= x[j] > T(0);
        if (all_above) {
          for (int64_t j = 0; j < m; ++j) out[j] = g[j] * T(pos);
          return true;
        }
        alignas(64) T e[512];
        for (int64_t j = 0; j < m; ++j) e[j] = (x[j] > T(0) ? T(0) : x[j]) * T(in_s);
        if (!vec_unary(VecFn::kExp, e, e, m)) return false;
        for (int64_t j = 0; j < m; ++j)
          out[j] = x[j] > T(0) ? g[j] * T(pos) : g[j] * T(in_s * neg) * e[j];
        return true;
      });
}

// The piecewise ones decide NaN and the bounds as their composite forms (and PyTorch's vectorized
// kernels) do: a NaN x fails every comparison.
Tensor hardtanh_backward(const Tensor& grad_output, const Tensor& self, const Scalar& min_val,
                         const Scalar& max_val) {
  const double lo = min_val.to_double(), hi = max_val.to_double();
  return activation_backward("hardtanh_backward", grad_output, self, [=](auto g, auto x) {
    using T = decltype(g);
    return (x > T(lo)) & (x < T(hi)) ? g : T(0);  // (&&'s branch kept the loop scalar)
  });
}

Tensor hardswish_backward(const Tensor& grad_output, const Tensor& self) {
  return activation_backward("hardswish_backward", grad_output, self, [](auto g, auto x) {
    using T = decltype(g);
    const T mid = g * (x / T(3) + T(0.5));
    return x < T(-3) ? T(0) : (x >= T(3) ? g : mid);
  });
}

Tensor hardsigmoid_backward(const Tensor& grad_output, const Tensor& self) {
  return activation_backward("hardsigmoid_backward", grad_output, self, [](auto g, auto x) {
    using T = decltype(g);
    return (x > T(-3)) & (x < T(3)) ? g / T(6) : T(0);
  });
}

Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self,
                           const Scalar& negative_slope, bool self_is_result) {
  const double s = negative_slope.to_double();
  check_leaky_relu_backward(s, self_is_result);
  return activation_backward("leaky_relu_backward", grad_output, self, [=](auto g, auto x) {
    using T = decltype(g);
    const T scaled = g * T(s);  // read s unconditionally: a load under the select kept it scalar
    return x > T(0) ? g : scaled;
  });
}

}  // namespace retorch::cpu
