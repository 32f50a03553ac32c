// Statistics and normalizing reductions: var, norm, softmax, log_softmax, cumsum.
#include <cmath>
#include <limits>

#include "retorch/backend/cpu/ReduceUtils.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

Tensor var_correction(const Tensor& self, OptionalIntArrayRef dim, std::optional<int64_t> correction,
                      bool keepdim) {
  RT_CHECK(is_floating_type(self.dtype()), "var(): only floating point types are supported, got ",
           self.dtype());
  ReducePlan p = plan_reduce(self, dim, keepdim, "var");
  double corr = double(correction.value_or(1));
  Tensor result = make_empty(p.out_shape, self.dtype(), self.device());
  if (result.device().is_meta()) return result;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(self.dtype(), "var", [&] {
    const scalar_t* in = static_cast<const scalar_t*>(p.rows.impl()->data());
    scalar_t* out = result.data_ptr<scalar_t>();
    parallel_for(0, p.outer, std::max<int64_t>(1, 32768 / std::max<int64_t>(p.inner, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const scalar_t* row = in + r * p.inner;
        double mean = 0;
        for (int64_t i = 0; i < p.inner; ++i) mean += double(opmath_t<scalar_t>(row[i]));
        mean /= double(p.inner);
        double ss = 0;
        for (int64_t i = 0; i < p.inner; ++i) {
          double d = double(opmath_t<scalar_t>(row[i])) - mean;
          ss += d * d;
        }
        double denom = double(p.inner) - corr;
        out[r] = scalar_t(opmath_t<scalar_t>(denom > 0 ? ss / denom
                                             : (ss == 0 || p.inner == 0 ? std::numeric_limits<double>::quiet_NaN()
                                                                        : std::numeric_limits<double>::infinity())));
      }
    });
  });
  return result;
}

Tensor norm(const Tensor& self, const std::optional<Scalar>& p_opt, OptionalIntArrayRef dim,
            bool keepdim) {
  RT_CHECK(is_floating_type(self.dtype()), "linalg.vector_norm: Expected a floating point or "
           "complex tensor as input. Got ", self.dtype());
  double pv = p_opt ? p_opt->to_double() : 2.0;
  ReducePlan plan = plan_reduce(self, dim, keepdim, "norm");
  Tensor result = make_empty(plan.out_shape, self.dtype(), self.device());
  if (result.device().is_meta()) return result;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(self.dtype(), "norm", [&] {
    scalar_t* out = result.data_ptr<scalar_t>();
    auto fin_pow = [pv](double a, int64_t) {
      return scalar_t(opmath_t<scalar_t>(std::pow(a, 1.0 / pv)));
    };
    // Lane folds (Note [Lane reductions]) for the common orders; NaN propagates through the
    // max/min selects as through the sums.
    auto fin = [](double a, int64_t) { return scalar_t(opmath_t<scalar_t>(a)); };
    auto add = [](auto a, auto b) { return a + b; };
    auto abs = [](auto x) { return x < 0 ? -x : x; };
    if (std::isinf(pv)) {
      auto mx = [](auto a, auto x) { return x != x ? x : (x > a ? x : a); };
      auto mn = [](auto a, auto x) { return x != x ? x : (x < a ? x : a); };
      if (pv > 0)
        reduce_rows_lanes<scalar_t, scalar_t, double>(
            plan, out, 0.0, [=](auto a, auto x) { return mx(a, abs(x)); }, mx, fin);
      else
        reduce_rows_lanes<scalar_t, scalar_t, double>(
            plan, out, std::numeric_limits<double>::infinity(),
            [=](auto a, auto x) { return mn(a, abs(x)); }, mn, fin);
    } else if (pv == 1) {
      reduce_rows_lanes<scalar_t, scalar_t, double>(
          plan, out, 0.0, [=](auto a, auto x) { return a + abs(x); }, add, fin);
    } else if (pv == 0) {
      reduce_rows<scalar_t, scalar_t, double>(
          plan, out, 0.0, [](double a, scalar_t v, int64_t) { return a + (double(opmath_t<scalar_t>(v)) != 0); },
          [](double a, int64_t) { return scalar_t(opmath_t<scalar_t>(a)); });
    } else if (pv == 2) {
      reduce_rows_lanes<scalar_t, scalar_t, double>(
          plan, out, 0.0, [](auto a, auto x) { return a + x * x; }, add,
          [](double a, int64_t) { return scalar_t(opmath_t<scalar_t>(std::sqrt(a))); });
    } else {
      reduce_rows<scalar_t, scalar_t, double>(
          plan, out, 0.0, [pv](double a, scalar_t v, int64_t) {
            return a + std::pow(std::fabs(double(opmath_t<scalar_t>(v))), pv);
          },
          fin_pow);
    }
  });
  return result;
}

namespace {
template <typename scalar_t, typename op_t>
op_t row_max(const scalar_t* x, int64_t n) {
  if constexpr (std::is_same_v<scalar_t, float>) {
    return vec_max(x, n);
  } else {
    op_t m = -std::numeric_limits<op_t>::infinity();
    for (int64_t i = 0; i < n; ++i) m = std::max(m, op_t(x[i]));
    return m;
  }
}

// y = exp(x - m), s = sum(y) with the vector exp for float32 (Note [Vectorized math]); false
// for the other dtypes, which keep their scalar loops.
template <typename scalar_t, typename op_t>
bool row_exp_sum(const scalar_t* x, op_t m, scalar_t* y, int64_t n, op_t& s) {
  if constexpr (std::is_same_v<scalar_t, float>) {
    s = vec_exp_shift_sum(x, m, y, n);
    return true;
  } else {
    return false;
  }
}

// Note [Column softmax]
// softmax over a dim that is not the last of a contiguous float32 tensor, read as [outer, D,
// inner]: blocks of up to 256 columns run three passes down the D rows (the column maxima;
// exp(x - max) a row segment at a time with the vector exp, summed by column and kept in y for
// softmax; then y scaled by 1 / sum, or x - max - log(sum) for log_softmax), where moving the
// dim last and back cost two transposed copies (softmax over dim 0 of [512, 512]: 0.36 ms,
// PyTorch 0.26). Columns that are all -inf take max 0, as the row kernel does, so they come out
// NaN like PyTorch's.
// m[c] = max(m[c], x[c]) over a row segment (NaN in x is skipped, as std::max(m, x) did); a
// function of __restrict pointers, so that it vectorizes (written inline, with std::max, the
// loop ran scalar: log_softmax over dim 1 of [8, 21, 64, 64] spent half its time there).
void column_max(float* __restrict m, const float* __restrict x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) m[c] = x[c] > m[c] ? x[c] : m[c];
}

template <bool kLog>
void column_softmax(const float* x, float* y, int64_t outer, int64_t D, int64_t inner) {
  constexpr int64_t kCols = 256;
  const int64_t blocks = (inner + kCols - 1) / kCols;
  parallel_for(0, outer * blocks, 1, [&](int64_t b, int64_t e) {
    alignas(64) float m[kCols], s[kCols], t[kCols];
    for (int64_t task = b; task < e; ++task) {
      const int64_t o = task / blocks, c0 = task % blocks * kCols;
      const int64_t nc = std::min(kCols, inner - c0);
      const float* xb = x + o * D * inner + c0;
      float* yb = y + o * D * inner + c0;
      for (int64_t c = 0; c < nc; ++c) m[c] = -std::numeric_limits<float>::infinity();
      for (int64_t r = 0; r < D; ++r) column_max(m, xb + r * inner, nc);
      for (int64_t c = 0; c < nc; ++c) {
        if (std::isinf(m[c]) && m[c] < 0) m[c] = 0;
        s[c] = 0;
      }
      for (int64_t r = 0; r < D; ++r) {
        float* yr = kLog ? t : yb + r * inner;  // (log_softmax keeps no exponentials)
        for (int64_t c = 0; c < nc; ++c) t[c] = xb[r * inner + c] - m[c];
        if (!vec_unary(VecFn::kExp, t, yr, nc))
          for (int64_t c = 0; c < nc; ++c) yr[c] = std::exp(t[c]);
        for (int64_t c = 0; c < nc; ++c) s[c] += yr[c];
      }
      if constexpr (kLog) {
        for (int64_t c = 0; c < nc; ++c) t[c] = m[c] + std::log(s[c]);
        for (int64_t r = 0; r < D; ++r)
          for (int64_t c = 0; c < nc; ++c) yb[r * inner + c] = xb[r * inner + c] - t[c];
      } else {
        for (int64_t c = 0; c < nc; ++c) t[c] = 1.0f / s[c];
        for (int64_t r = 0; r < D; ++r)
          for (int64_t c = 0; c < nc; ++c) yb[r * inner + c] *= t[c];
      }
    }
  });
}

template <bool kLog>
Tensor softmax_impl(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const char* op) {
  Tensor in = dtype ? self.to(*dtype) : self;
  int64_t d = maybe_wrap_dim(dim, in.dim(), op);
  // PyTorch returns early for empty inputs, before it looks at the dtype.
  if (in.numel() == 0) return make_empty(in.sizes(), in.dtype(), in.device());
  RT_CHECK(is_floating_type(in.dtype()), "\"", op, "_lastdim_kernel_impl\" not implemented for '",
           dtype_name(in.dtype()), "'");
  if (in.dtype() == kFloat && in.is_contiguous() && d < in.dim() - 1 && !in.device().is_meta()) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= in.size(i);
    for (int64_t i = d + 1; i < in.dim(); ++i) inner *= in.size(i);
    if (inner >= 16) {  // (narrower columns: the transposed rows are cheap enough)
      Tensor out = make_empty(in.sizes(), kFloat, in.device());
      column_softmax<kLog>(static_cast<const float*>(in.impl()->data()), out.data_ptr<float>(),
                           outer, in.size(d), inner);
      return out;
    }
  }
  Tensor rows = move_dim_last(in, d);
  Tensor out = make_empty(rows.sizes(), rows.dtype(), rows.device());
  if (out.device().is_meta()) return restore_dim(out, d);  // See Note [Meta through CPU kernels]
  int64_t L = in.dim() == 0 ? 1 : rows.size(-1);
  int64_t n = L == 0 ? 0 : rows.numel() / L;
  RT_DISPATCH_FLOATING(in.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* x = static_cast<const scalar_t*>(rows.impl()->data());
    scalar_t* y = out.data_ptr<scalar_t>();
    parallel_for(0, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(L, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const scalar_t* xr = x + r * L;
        scalar_t* yr = y + r * L;
        op_t m = row_max<scalar_t, op_t>(xr, L);
        if (std::isinf(m) && m < 0) m = 0;
        op_t s = 0;
        if (row_exp_sum(xr, m, yr, L, s)) {
          // float32: vector exponentials, already in y (log_softmax overwrites them below).
        } else if constexpr (!kLog && std::is_same_v<scalar_t, op_t>) {
          for (int64_t i = 0; i < L; ++i) {
            op_t ex = std::exp(op_t(xr[i]) - m);
            yr[i] = scalar_t(ex);
            s += ex;
          }
        } else {
          for (int64_t i = 0; i < L; ++i) s += std::exp(op_t(xr[i]) - m);
        }
        if constexpr (kLog) {
          op_t ls = std::log(s) + m;
          for (int64_t i = 0; i < L; ++i) yr[i] = scalar_t(op_t(xr[i]) - ls);
        } else if constexpr (std::is_same_v<scalar_t, op_t>) {
          // Full-precision types keep the first pass's exponentials in y: one exp per element.
          op_t inv = op_t(1) / s;
          for (int64_t i = 0; i < L; ++i) yr[i] = scalar_t(op_t(yr[i]) * inv);
        } else {
          op_t inv = op_t(1) / s;
          for (int64_t i = 0; i < L; ++i) yr[i] = scalar_t(std::exp(op_t(xr[i]) - m) * inv);
        }
      }
    });
  });
  return restore_dim(out, d);
}
}  // namespace

Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<false>(self, dim, dtype, "softmax");
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<true>(self, dim, dtype, "log_softmax");
}

namespace {

// out = exp(in) through the vector exp where T has one; false (nothing written) elsewhere.
template <typename T>
bool exp_row(const T* in, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    return vec_unary(VecFn::kExp, in, out, n);
  return false;
}

// The backward of Note [Column softmax]: over a dim that is not the last of contiguous tensors,
// read as [outer, D, inner], blocks of up to 256 columns sum down the D rows (g y, or g for
// log_softmax), then write the outputs row by row. Through three transposed copies (moving the
// dim last for g and y, and back for the result), softmax's backward over dim 1 of
// [32, 64, 32, 32] took 10 ms (PyTorch 0.84) and cross_entropy's over [8, 21, 64, 64] 3.8x.
template <bool kLog, typename scalar_t>
void column_softmax_backward(const scalar_t* g, const scalar_t* y, scalar_t* out, int64_t outer,
                             int64_t D, int64_t inner) {
  using op_t = opmath_t<scalar_t>;
  constexpr int64_t kCols = 256;
  const int64_t blocks = (inner + kCols - 1) / kCols;
  parallel_for(0, outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(D * kCols, 1)),
               [&](int64_t b, int64_t e) {
    alignas(64) op_t s[kCols];
    alignas(64) scalar_t t[kCols];
    for (int64_t task = b; task < e; ++task) {
      const int64_t o = task / blocks, c0 = task % blocks * kCols;
      const int64_t nc = std::min(kCols, inner - c0);
      const int64_t base = o * D * inner + c0;
      for (int64_t c = 0; c < nc; ++c) s[c] = 0;
      for (int64_t r = 0; r < D; ++r) {
        const scalar_t* gr = g + base + r * inner;
        const scalar_t* yr = y + base + r * inner;
        if constexpr (kLog) {
          for (int64_t c = 0; c < nc; ++c) s[c] += op_t(gr[c]);
        } else {
          for (int64_t c = 0; c < nc; ++c) s[c] += op_t(gr[c]) * op_t(yr[c]);
        }
      }
      for (int64_t r = 0; r < D; ++r) {
        const scalar_t* gr = g + base + r * inner;
        const scalar_t* yr = y + base + r * inner;
        scalar_t* orow = out + base + r * inner;
        if constexpr (kLog) {
          if (exp_row(yr, t, nc)) {
            for (int64_t c = 0; c < nc; ++c) orow[c] = scalar_t(op_t(gr[c]) - op_t(t[c]) * s[c]);
          } else {
            for (int64_t c = 0; c < nc; ++c)
              orow[c] = scalar_t(op_t(gr[c]) - std::exp(op_t(yr[c])) * s[c]);
          }
        } else {
          for (int64_t c = 0; c < nc; ++c) orow[c] = scalar_t(op_t(yr[c]) * (op_t(gr[c]) - s[c]));
        }
      }
    }
  });
}

// softmax's backward, y (g - sum(g y)), and log_softmax's, g - exp(y) sum(g), a row at a time:
// the row's sum, then the outputs, while the row is still in cache.
template <bool kLog>
Tensor softmax_backward_impl(const Tensor& grad_output, const Tensor& output, int64_t dim,
                             const char* op) {
  RT_CHECK(grad_output.sizes().equals(output.sizes()), op, ": grad_output of size ",
           grad_output.sizes(), " does not match the output of size ", output.sizes());
  RT_CHECK(grad_output.dtype() == output.dtype() && is_floating_type(output.dtype()), op,
           ": expected grad_output and output of one floating dtype, got ", grad_output.dtype(),
           " and ", output.dtype());
  const int64_t d = maybe_wrap_dim(dim, output.dim(), op);
  if (d < output.dim() - 1 && output.numel() > 0 && !output.device().is_meta()) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= output.size(i);
    for (int64_t i = d + 1; i < output.dim(); ++i) inner *= output.size(i);
    if (inner >= 16) {  // (narrower columns: the transposed rows are cheap enough)
      const Tensor gc = grad_output.contiguous(), yc = output.contiguous();
      Tensor out = make_empty(output.sizes(), output.dtype(), output.device());
      RT_DISPATCH_FLOATING(output.dtype(), op, [&] {
        column_softmax_backward<kLog, scalar_t>(
            static_cast<const scalar_t*>(gc.impl()->data()),
            static_cast<const scalar_t*>(yc.impl()->data()), out.data_ptr<scalar_t>(), outer,
            output.size(d), inner);
      });
      return out;
    }
  }
  Tensor g = move_dim_last(grad_output, d), y = move_dim_last(output, d);
  Tensor out = make_empty(y.sizes(), y.dtype(), y.device());
  if (out.device().is_meta() || out.numel() == 0)  // See Note [Meta through CPU kernels]
    return restore_dim(out, d);
  const int64_t L = output.dim() == 0 ? 1 : y.size(-1), n = y.numel() / L;
  RT_DISPATCH_FLOATING(y.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* gp = static_cast<const scalar_t*>(g.impl()->data());
    const scalar_t* yp = static_cast<const scalar_t*>(y.impl()->data());
    scalar_t* o = out.data_ptr<scalar_t>();
    parallel_for(0, n, std::max<int64_t>(1, 16384 / L), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const scalar_t* gr = gp + r * L;
        const scalar_t* yr = yp + r * L;
        scalar_t* orow = o + r * L;
        op_t s = 0;  // in lanes, as PyTorch's vectorized sums (a chain of adds took 4x longer)
        if constexpr (kLog) {
          _Pragma("omp simd reduction(+ : s)")
          for (int64_t i = 0; i < L; ++i) s += op_t(gr[i]);
        } else {
          _Pragma("omp simd reduction(+ : s)")
          for (int64_t i = 0; i < L; ++i) s += op_t(gr[i]) * op_t(yr[i]);
        }
        if constexpr (kLog) {
          if (exp_row(yr, orow, L)) {  // float32/float64: exp(y) into the output row first
            for (int64_t i = 0; i < L; ++i) orow[i] = scalar_t(op_t(gr[i]) - op_t(orow[i]) * s);
          } else {
            for (int64_t i = 0; i < L; ++i)
              orow[i] = scalar_t(op_t(gr[i]) - std::exp(op_t(yr[i])) * s);
          }
        } else {
          for (int64_t i = 0; i < L; ++i) orow[i] = scalar_t(op_t(yr[i]) * (op_t(gr[i]) - s));
        }
      }
    });
  });
  return restore_dim(out, d);
}

}  // namespace

Tensor softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                             ScalarType /*input_dtype: as in torch's CPU kernel, unused*/) {
  return softmax_backward_impl<false>(grad_output, output, dim,
                                      "_softmax_backward_data");
}

Tensor log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                 ScalarType /*input_dtype*/) {
  return softmax_backward_impl<true>(grad_output, output, dim,
                                     "_log_softmax_backward_data");
}

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  ScalarType rt = dtype ? *dtype : (is_integral_type(self.dtype(), true) ? kLong : self.dtype());
  Tensor in = self.dtype() == rt ? self : self.to(rt);
  int64_t d = maybe_wrap_dim(dim, in.dim(), "cumsum");
  Tensor rows = move_dim_last(in, d);
  Tensor out = make_empty(rows.sizes(), rt, rows.device());
  if (out.device().is_meta()) return restore_dim(out, d);  // See Note [Meta through CPU kernels]
  int64_t L = in.dim() == 0 ? 1 : rows.size(-1);
  int64_t n = L == 0 ? 0 : rows.numel() / L;
  RT_DISPATCH_ALL(rt, "cumsum", [&] {
    using acc_t = std::conditional_t<std::is_floating_point_v<opmath_t<scalar_t>>, double, int64_t>;
    const scalar_t* x = static_cast<const scalar_t*>(rows.impl()->data());
    scalar_t* y = out.data_ptr<scalar_t>();
    parallel_for(0, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(L, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        acc_t acc = 0;
        for (int64_t i = 0; i < L; ++i) {
          acc += acc_t(opmath_t<scalar_t>(x[r * L + i]));
          y[r * L + i] = scalar_t(opmath_t<scalar_t>(acc));
        }
      }
    });
  });
  return restore_dim(out, d);
}

}  // namespace retorch::cpu
