// Fused loss kernels: cross_entropy over class indices, and CTC loss forward and backward.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/backend/cpu/VecMathAvx2.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {

template <typename T>
__attribute__((always_inline)) inline T exp_fast(T x) {
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (std::is_same_v<T, float>) return avx2::exp_scalar(x);
#endif
  return std::exp(x);
}

// Row helpers of the cross_entropy kernels. GCC does not vectorize the polynomial exp on its own
// (the clamps become branches), so float rows use AVX2 intrinsics where the build has them.
template <typename scalar_t, typename op_t>
op_t row_max(const scalar_t* x, int64_t n) {
  op_t m = -std::numeric_limits<op_t>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, op_t(x[j]));
  return m;
}

template <typename scalar_t, typename op_t>
op_t row_sum_exp(const scalar_t* x, int64_t n, op_t shift) {
  op_t s = 0;
  for (int64_t j = 0; j < n; ++j) s += exp_fast(op_t(x[j]) - shift);
  return s;
}

/// g[j] = exp(x[j] - lse) * a - b * (w ? w[j] : 1)
template <typename scalar_t, typename op_t>
void row_softmax_grad(const scalar_t* x, scalar_t* g, int64_t n, op_t lse, op_t a, op_t b,
                      const op_t* w) {
  for (int64_t j = 0; j < n; ++j)
    g[j] = scalar_t(exp_fast(op_t(x[j]) - lse) * a - b * (w ? w[j] : op_t(1)));
}

#if defined(__AVX2__) && defined(__FMA__)
using avx2::exp8;
using avx2::exp_scalar;
using avx2::hsum8;

template <>
float row_max<float, float>(const float* x, int64_t n) {
  return vec_max(x, n);
}

template <>
float row_sum_exp<float, float>(const float* x, int64_t n, float shift) {
  __m256 s = _mm256_setzero_ps(), sh = _mm256_set1_ps(shift);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) s = _mm256_add_ps(s, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), sh)));
  float r = hsum8(s);
  for (; j < n; ++j) r += exp_scalar(x[j] - shift);
  return r;
}

template <>
void row_softmax_grad<float, float>(const float* x, float* g, int64_t n, float lse, float a,
                                    float b, const float* w) {
  __m256 l = _mm256_set1_ps(lse), va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = _mm256_mul_ps(exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), l)), va);
    __m256 c = w ? _mm256_mul_ps(vb, _mm256_loadu_ps(w + j)) : vb;
    _mm256_storeu_ps(g + j, _mm256_sub_ps(e, c));
  }
  for (; j < n; ++j) g[j] = exp_scalar(x[j] - lse) * a - b * (w ? w[j] : 1.0f);
}
#endif

// Rows of the cross_entropy kernels go to a thread in chunks of at least this many elements:
// smaller chunks cost more in thread wake-ups than they save (256x1000 splits in four).
constexpr int64_t kSerialElems = int64_t(1) << 16;

inline double log_add(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

}  // namespace

// ---------------------------------------------------------------- cross entropy

std::tuple<Tensor, Tensor> cross_entropy_fused(const Tensor& input, const Tensor& target,
                                               const std::optional<Tensor>& weight,
                                               int64_t ignore_index, int64_t reduction,
                                               double label_smoothing) {
  const char* op = "cross_entropy";
  RT_CHECK(input.dim() == 2, op, ": the fused kernel expects a 2-D input, got ", input.sizes());
  RT_CHECK(is_floating_type(input.dtype()), "\"log_softmax_lastdim_kernel_impl\" not implemented "
           "for '", dtype_name(input.dtype()), "'");
  RT_CHECK(target.dtype() == kLong, op, ": expected scalar type Long but found ",
           dtype_name(target.dtype()));
  int64_t N = input.size(0), C = input.size(1);
  RT_CHECK(target.dim() == 1 && target.size(0) == N, op, ": expected target of shape [", N,
           "], got ", target.sizes());
  bool has_w = weight && weight->defined();
  RT_CHECK(!has_w || (weight->dim() == 1 && weight->numel() == C), op, ": weight tensor should "
           "be defined either for all ", C, " classes or no classes but got weight tensor of "
           "shape: ", has_w ? weight->sizes() : IntArrayRef());
  if (input.device().is_meta()) {  // See Note [Meta through CPU kernels]
    const std::vector<int64_t> loss_shape =
        reduction == 0 ? std::vector<int64_t>{N} : std::vector<int64_t>{};
    return {make_empty(loss_shape, input.dtype(), input.device()),
            make_empty({N}, input.dtype(), input.device())};
  }
  Tensor x = input.contiguous(), t = target.contiguous();
  const int64_t* tp = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < N; ++i)
    RT_CHECK_INDEX(tp[i] == ignore_index || (tp[i] >= 0 && tp[i] < C), op, ": Target ", tp[i],
                   " is out of bounds.");
  Tensor lse = make_empty({N}, input.dtype(), input.device());
  std::vector<double> row_loss(static_cast<size_t>(N)), row_w(static_cast<size_t>(N));
  RT_DISPATCH_FLOATING(input.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* lp = lse.data_ptr<scalar_t>();
    Tensor wc = has_w ? weight->to(input.dtype()).contiguous() : Tensor();
    const scalar_t* wp = has_w ? wc.data_ptr<scalar_t>() : nullptr;
    op_t wsum_all = 0;
    if (wp)
      for (int64_t j = 0; j < C; ++j) wsum_all += op_t(wp[j]);
    else
      wsum_all = op_t(C);
    op_t ls = op_t(label_smoothing);
    parallel_for(0, N, std::max<int64_t>(1, kSerialElems / std::max<int64_t>(C, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const scalar_t* xr = xp + i * C;
        op_t m = row_max<scalar_t, op_t>(xr, C);
        op_t shift = std::isinf(m) ? op_t(0) : m;
        op_t s = row_sum_exp<scalar_t, op_t>(xr, C, shift);
        op_t l = std::log(s) + shift;
        lp[i] = scalar_t(l);
        int64_t ti = tp[i];
        if (ti == ignore_index) {
          row_loss[size_t(i)] = 0;
          row_w[size_t(i)] = 0;
          continue;
        }
        op_t wt = wp ? op_t(wp[ti]) : op_t(1);
        op_t loss = -wt * (op_t(xr[ti]) - l) * (1 - ls);
        if (ls > 0) {
          // -(ls/C) sum_j w_j (x_j - lse)
          op_t wx = 0;
          if (wp) {
            for (int64_t j = 0; j < C; ++j) wx += op_t(wp[j]) * op_t(xr[j]);
          } else {
            _Pragma("omp simd reduction(+ : wx)")
            for (int64_t j = 0; j < C; ++j) wx += op_t(xr[j]);
          }
          loss += -(ls / op_t(C)) * (wx - l * wsum_all);
        }
        row_loss[size_t(i)] = double(loss);
        row_w[size_t(i)] = double(wt);
      }
    });
  });
  if (reduction == 0) {
    Tensor out = make_empty({N}, kDouble);
    std::copy(row_loss.begin(), row_loss.end(), out.data_ptr<double>());
    return {out.to(input.dtype()), lse};
  }
  double total = 0, wsum = 0;
  for (int64_t i = 0; i < N; ++i) {
    total += row_loss[size_t(i)];
    wsum += row_w[size_t(i)];
  }
  double v = reduction == 2 ? total : total / wsum;
  return {full({}, Scalar(v), TensorOptions().dtype(input.dtype())), lse};
}

Tensor cross_entropy_fused_backward(const Tensor& grad, const Tensor& input, const Tensor& target,
                                    const std::optional<Tensor>& weight, int64_t ignore_index,
                                    int64_t reduction, double label_smoothing, const Tensor& lse) {
  const char* op = "_cross_entropy_fused_backward";
  RT_CHECK(input.dim() == 2 && target.dim() == 1 && target.size(0) == input.size(0) &&
           lse.numel() == input.size(0) && target.dtype() == kLong, op, ": expected input [N, C], "
           "int64 target [N] and lse [N], got ", input.sizes(), ", ", target.sizes(), " (",
           dtype_name(target.dtype()), ") and ", lse.sizes());
  int64_t N = input.size(0), C = input.size(1);
  bool has_w = weight && weight->defined();
  RT_CHECK(!has_w || weight->numel() == C, op, ": weight of shape ", weight->sizes(),
           " does not match ", C, " classes");
  RT_CHECK(reduction == 0 ? grad.numel() == N : grad.numel() == 1, op, ": grad of shape ",
           grad.sizes(), " does not match reduction ", reduction);
  if (input.device().is_meta())  // See Note [Meta through CPU kernels]
    return make_empty({N, C}, input.dtype(), input.device());
  Tensor x = input.contiguous(), t = target.contiguous();
  Tensor g = grad.to(kDouble).contiguous(), l = lse.to(kDouble).contiguous();
  Tensor wd = has_w ? weight->to(kDouble).contiguous() : Tensor();
  const int64_t* tp = t.data_ptr<int64_t>();
  const double* gp = g.data_ptr<double>();
  const double* lp = l.data_ptr<double>();
  const double* wp = has_w ? wd.data_ptr<double>() : nullptr;
  for (int64_t i = 0; i < N; ++i)
    RT_CHECK_INDEX(tp[i] == ignore_index || (tp[i] >= 0 && tp[i] < C), op, ": Target ", tp[i],
                   " is out of bounds.");
  // The mean divides by the summed weights of the kept rows; the class weights' total enters
  // every row through the smoothing term.
  double denom = 0, wsum_all = 0;
  for (int64_t i = 0; i < N; ++i)
    if (tp[i] != ignore_index) denom += wp ? wp[tp[i]] : 1.0;
  for (int64_t j = 0; j < C; ++j) wsum_all += wp ? wp[j] : 1.0;
  Tensor out = make_empty({N, C}, input.dtype(), input.device());
  double ls = label_smoothing;
  RT_DISPATCH_FLOATING(input.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* op_ = out.data_ptr<scalar_t>();
    std::vector<op_t> wv;
    if (wp) wv.assign(wp, wp + C);
    parallel_for(0, N, std::max<int64_t>(1, kSerialElems / std::max<int64_t>(C, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const scalar_t* xr = xp + i * C;
        scalar_t* gr = op_ + i * C;
        int64_t ti = tp[i];
        if (ti == ignore_index) {
          std::fill(gr, gr + C, scalar_t(0));
          continue;
        }
        double scale = reduction == 0 ? gp[i] : (reduction == 1 ? gp[0] / denom : gp[0]);
        double wt = wp ? wp[ti] : 1.0;
        // d loss_i / d x_j = p_j * sum(q) - q_j with q = (1-ls) w_t onehot(t) + (ls/C) w.
        op_t qsum = op_t(((1 - ls) * wt + ls / double(C) * wsum_all) * scale);
        op_t lse_i = op_t(lp[i]);
        op_t sm = op_t(ls / double(C) * scale);
        row_softmax_grad<scalar_t, op_t>(xr, gr, C, lse_i, qsum, sm, wp ? wv.data() : nullptr);
        gr[ti] = scalar_t(op_t(gr[ti]) - op_t((1 - ls) * wt * scale));
      }
    });
  });
  return out;
}

// ---------------------------------------------------------------- CTC

namespace {

struct CtcPlan {
  int64_t T, N, C, max_target;
  std::vector<int64_t> target_offset;  // start of each sample's target in `targets`
  int64_t target_stride;               // element step inside one target sequence
};

CtcPlan plan_ctc(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                 IntArrayRef target_lengths, int64_t blank) {
  const char* op = "ctc_loss";
  RT_CHECK(log_probs.dim() == 3, op, ": expected log_probs of shape (T, N, C), got ",
           log_probs.sizes());
  RT_CHECK(is_floating_type(log_probs.dtype()), op, ": expected floating point log_probs, got ",
           log_probs.dtype());
  RT_CHECK(targets.dtype() == kLong || targets.dtype() == kInt, op, ": targets must be Long or "
           "Int, got ", targets.dtype());
  CtcPlan p{log_probs.size(0), log_probs.size(1), log_probs.size(2), 0, {}, 1};
  RT_CHECK(blank >= 0 && blank < p.C, op, ": blank must be in label range");
  RT_CHECK(int64_t(input_lengths.size()) == p.N, op, ": input_lengths must be of size batch_size");
  RT_CHECK(int64_t(target_lengths.size()) == p.N, op,
           ": target_lengths must be of size batch_size");
  int64_t pos = 0;
  for (int64_t b = 0; b < p.N; ++b) {
    int64_t il = input_lengths[size_t(b)], tl = target_lengths[size_t(b)];
    RT_CHECK(il >= 0 && il <= p.T, op, ": Expected input_lengths to have value at most ", p.T,
             ", but got value ", il, " (while checking arguments for ctc_loss_cpu)");
    RT_CHECK(tl >= 0, op, ": Expected target_lengths to be non-negative, got ", tl);
    p.max_target = std::max(p.max_target, tl);
    if (targets.dim() == 1) {
      p.target_offset.push_back(pos);
      pos += tl;
    } else {
      p.target_offset.push_back(b * targets.size(1));
    }
  }
  if (targets.dim() == 1) {
    RT_CHECK(targets.numel() >= pos, op, ": targets of length ", targets.numel(),
             " are shorter than the sum of target_lengths (", pos, ")");
  } else {
    RT_CHECK(targets.dim() == 2 && targets.size(0) == p.N, op, ": expected targets of shape "
             "(N, S) or concatenated 1-D targets, got ", targets.sizes());
    RT_CHECK(targets.size(1) >= p.max_target, op, ": Expected tensor to have size at least ",
             p.max_target, " at dimension 1, but got size ", targets.size(1),
             " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
  }
  return p;
}

}  // namespace

std::tuple<Tensor, Tensor> ctc_loss_forward(const Tensor& log_probs, const Tensor& targets,
                                            IntArrayRef input_lengths, IntArrayRef target_lengths,
                                            int64_t blank, bool /*zero_infinity*/) {
  CtcPlan p = plan_ctc(log_probs, targets, input_lengths, target_lengths, blank);
  int64_t S = 2 * p.max_target + 1;
  if (log_probs.device().is_meta()) {  // See Note [Meta through CPU kernels]: lengths are ints
    const Device dev = log_probs.device();
    return {make_empty({p.N}, log_probs.dtype(), dev),
            make_empty({p.N, p.T, S}, log_probs.dtype(), dev)};
  }
  Tensor lp = log_probs.to(kDouble).contiguous();
  Tensor tg = targets.to(kLong).contiguous();
  Tensor alpha = full({p.N, p.T, S}, Scalar(-INFINITY), TensorOptions().dtype(kDouble));
  std::vector<double> nll(static_cast<size_t>(p.N));
  const double* lpp = lp.data_ptr<double>();
  const int64_t* tgp = tg.data_ptr<int64_t>();
  double* ap = alpha.data_ptr<double>();
  for (int64_t b = 0; b < p.N; ++b)
    for (int64_t s = 0; s < target_lengths[size_t(b)]; ++s) {
      int64_t c = tgp[p.target_offset[size_t(b)] + s];
      RT_CHECK_INDEX(c >= 0 && c < p.C, "ctc_loss: target ", c, " is out of the class range [0, ",
                     p.C, ")");
    }
  parallel_for(0, p.N, 1, [&](int64_t bb, int64_t be) {
    for (int64_t b = bb; b < be; ++b) {
      int64_t T = input_lengths[size_t(b)], L = target_lengths[size_t(b)], Sb = 2 * L + 1;
      const int64_t* tgt = tgp + p.target_offset[size_t(b)];
      auto label = [&](int64_t s) { return s % 2 == 0 ? blank : tgt[s / 2]; };
      auto lpv = [&](int64_t t, int64_t c) { return lpp[(t * p.N + b) * p.C + c]; };
      double* a = ap + b * p.T * S;
      if (T == 0) {
        nll[size_t(b)] = L == 0 ? 0.0 : INFINITY;
        continue;
      }
      a[0] = lpv(0, blank);
      if (L > 0) a[1] = lpv(0, label(1));
      for (int64_t t = 1; t < T; ++t) {
        for (int64_t s = 0; s < Sb; ++s) {
          double v = a[(t - 1) * S + s];
          if (s > 0) v = log_add(v, a[(t - 1) * S + s - 1]);
          if (s > 1 && label(s) != blank && label(s) != label(s - 2))
            v = log_add(v, a[(t - 1) * S + s - 2]);
          a[t * S + s] = v == -INFINITY ? v : v + lpv(t, label(s));
        }
      }
      double end = a[(T - 1) * S + Sb - 1];
      if (L > 0) end = log_add(end, a[(T - 1) * S + Sb - 2]);
      nll[size_t(b)] = -end;
    }
  });
  Tensor out = make_empty({p.N}, kDouble);
  std::copy(nll.begin(), nll.end(), out.data_ptr<double>());
  return {out.to(log_probs.dtype()), alpha.to(log_probs.dtype())};
}

Tensor ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                         IntArrayRef input_lengths, IntArrayRef target_lengths,
                         const Tensor& neg_log_likelihood, const Tensor& log_alpha, int64_t blank,
                         bool zero_infinity) {
  CtcPlan p = plan_ctc(log_probs, targets, input_lengths, target_lengths, blank);
  int64_t S = 2 * p.max_target + 1;
  RT_CHECK(log_alpha.dim() == 3 && log_alpha.size(2) == S, "_ctc_loss_backward: log_alpha of "
           "shape ", log_alpha.sizes(), " does not match the targets");
  if (log_probs.device().is_meta())  // See Note [Meta through CPU kernels]
    return make_empty({p.T, p.N, p.C}, log_probs.dtype(), log_probs.device());
  Tensor lp = log_probs.to(kDouble).contiguous();
  Tensor tg = targets.to(kLong).contiguous();
  Tensor al = log_alpha.to(kDouble).contiguous();
  Tensor nl = neg_log_likelihood.to(kDouble).contiguous();
  Tensor gr = grad.to(kDouble).expand({p.N}).contiguous();
  Tensor out = zeros({p.T, p.N, p.C}, TensorOptions().dtype(kDouble));
  const double* lpp = lp.data_ptr<double>();
  const int64_t* tgp = tg.data_ptr<int64_t>();
  const double* ap = al.data_ptr<double>();
  const double* nlp = nl.data_ptr<double>();
  const double* gp = gr.data_ptr<double>();
  double* op = out.data_ptr<double>();
  parallel_for(0, p.N, 1, [&](int64_t bb, int64_t be) {
    std::vector<double> beta, lcab;
    for (int64_t b = bb; b < be; ++b) {
      int64_t T = input_lengths[size_t(b)], L = target_lengths[size_t(b)], Sb = 2 * L + 1;
      double nll = nlp[b];
      if (T == 0 || (zero_infinity && std::isinf(nll))) continue;
      const int64_t* tgt = tgp + p.target_offset[size_t(b)];
      auto label = [&](int64_t s) { return s % 2 == 0 ? blank : tgt[s / 2]; };
      auto lpv = [&](int64_t t, int64_t c) { return lpp[(t * p.N + b) * p.C + c]; };
      const double* a = ap + b * p.T * S;
      beta.assign(size_t(T * Sb), -INFINITY);
      beta[size_t((T - 1) * Sb + Sb - 1)] = lpv(T - 1, blank);
      if (L > 0) beta[size_t((T - 1) * Sb + Sb - 2)] = lpv(T - 1, label(Sb - 2));
      for (int64_t t = T - 2; t >= 0; --t) {
        for (int64_t s = 0; s < Sb; ++s) {
          double v = beta[size_t((t + 1) * Sb + s)];
          if (s + 1 < Sb) v = log_add(v, beta[size_t((t + 1) * Sb + s + 1)]);
          if (s + 2 < Sb && label(s) != blank && label(s) != label(s + 2))
            v = log_add(v, beta[size_t((t + 1) * Sb + s + 2)]);
          beta[size_t(t * Sb + s)] = v == -INFINITY ? v : v + lpv(t, label(s));
        }
      }
      // d nll / d lp[t, c] = exp(lp) - exp(log(sum_{s: l(s) = c} alpha beta) + nll - lp).
      lcab.assign(size_t(p.C), -INFINITY);
      for (int64_t t = 0; t < T; ++t) {
        std::fill(lcab.begin(), lcab.end(), -INFINITY);
        for (int64_t s = 0; s < Sb; ++s)
          lcab[size_t(label(s))] = log_add(lcab[size_t(label(s))],
                                           a[t * S + s] + beta[size_t(t * Sb + s)]);
        for (int64_t c = 0; c < p.C; ++c) {
          double l = lpv(t, c);
          double g = std::exp(l) - (lcab[size_t(c)] == -INFINITY ? 0.0
                                    : std::exp(lcab[size_t(c)] + nll - l));
          op[(t * p.N + b) * p.C + c] = g * gp[b];
        }
      }
    }
  });
  return out.to(log_probs.dtype());
}

// smooth_l1_loss's elementwise term as PyTorch computes it: z = |self - target|,
// 0.5 z^2 / beta below beta, z - beta / 2 from there on.
Tensor smooth_l1_elementwise(const Tensor& self, const Tensor& target, double beta) {
  Tensor out;
  TensorIterator iter(out, {self, target}, {.name = "smooth_l1_loss"});
  RT_DISPATCH_FLOATING(iter.common_dtype(), "smooth_l1_loss", [&] {
    using op_t = opmath_t<scalar_t>;
    const op_t b = op_t(beta), half = op_t(0.5);
    binary_loop<scalar_t, scalar_t>(iter, [=](op_t x, op_t y) {
      const op_t z = std::abs(x - y);
      const op_t quad = half * z * z / b, lin = z - half * b;
      return z < b ? quad : lin;
    });
  });
  iter.finish();
  return out;
}

// Its derivative as PyTorch's smooth_l1_loss_backward takes it, one pass: g at or past +-beta
// (signed), g (self - target) / beta inside (never reached for beta 0 but by NaN).
// grad_output is the iterator's last input so that a reduction's broadcast scalar gradient
// takes ternary_loop's contiguous path.
Tensor smooth_l1_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                          double beta) {
  Tensor out;
  TensorIterator iter(out, {self, target, grad_output}, {.name = "smooth_l1_loss_backward"});
  RT_CHECK(is_floating_type(iter.common_dtype()), "\"smooth_l1_loss_backward\" not implemented "
           "for '", dtype_name(iter.common_dtype()), "'");
  RT_DISPATCH_FLOATING(iter.common_dtype(), "smooth_l1_loss_backward", [&] {
    using op_t = opmath_t<scalar_t>;
    const op_t b = op_t(beta);
    ternary_loop<scalar_t, scalar_t, scalar_t, scalar_t>(iter, [=](op_t x, op_t y, op_t g) {
      const op_t d = x - y;
      return d <= -b ? -g : (d >= b ? g : d * g / b);
    });
  });
  iter.finish();
  return out;
}

// Note [Squared difference sums]
// _mse_sum: each difference is taken in the inputs' float type (as PyTorch's mse_loss takes it),
// squared and summed in double over 16 lanes, in fixed 64K-element chunks added in order (so
// the result does not depend on the thread count): one read of both inputs where the composite
// wrote and read two temporaries (mse_loss of 1M floats 0.19 -> 0.061 ms, PyTorch 0.128).
namespace {
template <typename scalar_t>
double squared_difference_sum(const scalar_t* a, const scalar_t* b, int64_t n) {
  using op_t = opmath_t<scalar_t>;
  double lane[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) {
      const double d = double(op_t(op_t(a[i + k]) - op_t(b[i + k])));
      lane[k] += d * d;
    }
  double tail = 0;
  for (; i < n; ++i) {
    const double d = double(op_t(op_t(a[i]) - op_t(b[i])));
    tail += d * d;
  }
  for (int w = 8; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) lane[k] += lane[k + w];
  return lane[0] + tail;
}
}  // namespace

Tensor mse_sum(const Tensor& self, const Tensor& target) {
  RT_CHECK(self.sizes().equals(target.sizes()) && self.dtype() == target.dtype(),
           "_mse_sum: expected inputs of one shape and dtype, got ", self.sizes(), " ",
           self.dtype(), " and ", target.sizes(), " ", target.dtype());
  RT_CHECK(is_floating_type(self.dtype()), "_mse_sum: expected floating point inputs, got ",
           self.dtype());
  Tensor out = make_empty({}, self.dtype(), self.device());
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  const Tensor a = self.contiguous(), b = target.contiguous();
  RT_DISPATCH_FLOATING(self.dtype(), "_mse_sum", [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>();
    const scalar_t* pb = b.data_ptr<scalar_t>();
    const int64_t n = a.numel();
    constexpr int64_t kChunk = 65536;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> part(static_cast<size_t>(chunks), 0.0);
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        part[size_t(c)] = squared_difference_sum(pa + c * kChunk, pb + c * kChunk,
                                                 std::min(kChunk, n - c * kChunk));
    });
    double total = 0;
    for (double v : part) total += v;
    *out.data_ptr<scalar_t>() = scalar_t(opmath_t<scalar_t>(total));
  });
  return out;
}

}  // namespace retorch::cpu
