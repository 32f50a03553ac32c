// Cumulative scans along a dim: cumprod, cummax / cummin (values and indices), logcumsumexp.
#include <cmath>
#include <limits>

#include "retorch/backend/cpu/ReduceUtils.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

// Calls f(in_row, out_row, L) for every row of `in` along d (moved last, contiguous) and
// returns the outputs (shaped like in, dtype out_dtype) with d put back.
template <typename in_t, typename out_t, typename F>
Tensor scan_rows(const Tensor& in, int64_t d, ScalarType out_dtype, const F& f) {
  Tensor rows = move_dim_last(in, d);
  Tensor out = make_empty(rows.sizes(), out_dtype, rows.device());
  if (out.device().is_meta()) return restore_dim(out, d);  // See Note [Meta through CPU kernels]
  int64_t L = in.dim() == 0 ? 1 : rows.size(-1);
  int64_t n = L == 0 ? 0 : rows.numel() / L;
  const in_t* x = n ? static_cast<const in_t*>(rows.impl()->data()) : nullptr;
  out_t* y = n ? out.data_ptr<out_t>() : nullptr;
  parallel_for(0, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(L, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) f(x + r * L, y + r * L, L);
  });
  return restore_dim(out, d);
}

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}

template <bool kMax>
std::tuple<Tensor, Tensor> cummaxmin(const Tensor& self, int64_t dim, const char* op) {
  int64_t d = maybe_wrap_dim(dim, self.dim(), op);
  Tensor rows = move_dim_last(self, d);
  int64_t L = self.dim() == 0 ? 1 : rows.size(-1);
  int64_t n = L == 0 ? 0 : rows.numel() / L;
  Tensor values = make_empty(rows.sizes(), self.dtype(), self.device());
  Tensor indices = make_empty(rows.sizes(), kLong, self.device());
  if (values.device().is_meta())  // See Note [Meta through CPU kernels]
    return {restore_dim(values, d), restore_dim(indices, d)};
  RT_DISPATCH_ALL(self.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* x = n ? static_cast<const scalar_t*>(rows.impl()->data()) : nullptr;
    scalar_t* v = n ? values.data_ptr<scalar_t>() : nullptr;
    int64_t* ix = n ? indices.data_ptr<int64_t>() : nullptr;
    parallel_for(0, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(L, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        op_t best = op_t(x[r * L]);
        int64_t at = 0;
        for (int64_t i = 0; i < L; ++i) {
          op_t cur = op_t(x[r * L + i]);
          // Ties move to the later index; a NaN sticks until the next NaN (PyTorch's rule).
          bool better = kMax ? cur >= best : cur <= best;
          if (is_nan(cur) || (!is_nan(best) && better)) {
            best = cur;
            at = i;
          }
          v[r * L + i] = scalar_t(best);
          ix[r * L + i] = at;
        }
      }
    });
  });
  return {restore_dim(values, d), restore_dim(indices, d)};
}

}  // namespace

Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  ScalarType rt = dtype ? *dtype : (is_integral_type(self.dtype(), true) ? kLong : self.dtype());
  Tensor in = self.dtype() == rt ? self : self.to(rt);
  int64_t d = maybe_wrap_dim(dim, in.dim(), "cumprod");
  Tensor out;
  RT_DISPATCH_ALL(rt, "cumprod", [&] {
    using acc_t =
        std::conditional_t<std::is_floating_point_v<opmath_t<scalar_t>>, double, int64_t>;
    out = scan_rows<scalar_t, scalar_t>(in, d, rt, [](const scalar_t* x, scalar_t* y, int64_t L) {
      acc_t acc = 1;
      for (int64_t i = 0; i < L; ++i) {
        acc *= acc_t(opmath_t<scalar_t>(x[i]));
        y[i] = scalar_t(opmath_t<scalar_t>(acc));
      }
    });
  });
  return out;
}

std::tuple<Tensor, Tensor> cummax(const Tensor& self, int64_t dim) {
  return cummaxmin<true>(self, dim, "cummax");
}

std::tuple<Tensor, Tensor> cummin(const Tensor& self, int64_t dim) {
  return cummaxmin<false>(self, dim, "cummin");
}

Tensor logcumsumexp(const Tensor& self, int64_t dim) {
  int64_t d = maybe_wrap_dim(dim, self.dim(), "logcumsumexp");
  Tensor out;
  RT_DISPATCH_FLOATING(self.dtype(), "logcumsumexp", [&] {
    out = scan_rows<scalar_t, scalar_t>(self, d, self.dtype(),
                                        [](const scalar_t* x, scalar_t* y, int64_t L) {
      // Stable log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)); -inf + -inf stays -inf.
      constexpr double kNegInf = -std::numeric_limits<double>::infinity();
      double acc = kNegInf;
      for (int64_t i = 0; i < L; ++i) {
        double v = double(opmath_t<scalar_t>(x[i]));
        if (std::isnan(v) || std::isnan(acc)) {
          acc = std::numeric_limits<double>::quiet_NaN();
        } else {
          double hi = std::max(acc, v), lo = std::min(acc, v);
          if (lo == kNegInf || hi == std::numeric_limits<double>::infinity()) acc = hi;
          else acc = hi + std::log1p(std::exp(lo - hi));
        }
        y[i] = scalar_t(acc);
      }
    });
  });
  return out;
}

}  // namespace retorch::cpu
