// Composite loss functions (torch.nn.functional signatures, reduction as a string).
#include <cmath>
#include <limits>
#include <string>

#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::composite {

namespace {

/// PyTorch's Reduction enum: 0 none, 1 mean, 2 sum. Unknown names raise ValueError like F does.
int64_t reduction_enum(std::string_view reduction) {
  if (reduction == "none") return 0;
  if (reduction == "mean") return 1;
  if (reduction == "sum") return 2;
  RT_CHECK_VALUE(false, reduction, " is not a valid value for reduction");
  return 0;
}

Tensor reduce(const Tensor& loss, std::string_view reduction) {
  switch (reduction_enum(reduction)) {
    case 1: return loss.mean();
    case 2: return loss.sum();
    default: return loss;
  }
}

void check_float(const Tensor& t, const char* op) {
  RT_CHECK(is_floating_type(t.dtype()), op, ": expected a floating point input, got ", t.dtype());
}

/// Targets of nll/cross_entropy must be int64 and inside [0, C) where not ignored.
/// Checks class-index targets; returns how many equal ignore_index.
int64_t check_class_target(const Tensor& target, int64_t ignore_index, int64_t C,
                           const char* op) {
  RT_CHECK(target.dtype() == kLong, op, ": expected scalar type Long but found ",
           dtype_name(target.dtype()));
  Tensor t = target.contiguous();
  const int64_t* tp = t.data_ptr<int64_t>();
  int64_t ignored = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    ignored += tp[i] == ignore_index;
    RT_CHECK_INDEX(tp[i] == ignore_index || (tp[i] >= 0 && tp[i] < C), op, ": Target ", tp[i],
                   " is out of bounds.");
  }
  return ignored;
}

/// The class-weight vector: undefined or a [C] tensor.
void check_class_weight(const std::optional<Tensor>& weight, int64_t C, const char* op) {
  RT_CHECK(!weight || !weight->defined() || (weight->dim() == 1 && weight->numel() == C), op,
           ": weight tensor should be defined either for all ", C,
           " classes or no classes but got weight tensor of shape: ", weight->sizes());
}

/// input[i, t[i], ...] for every position, flattened in target order: a gather along the class
/// dim in place (moving the classes last first copied the whole input: nll_loss of
/// [8, 21, 64, 64] 0.84 ms, PyTorch 0.077). `idx` has the flattened target's elements.
Tensor picked_classes(const Tensor& input, const Tensor& idx) {
  if (input.dim() <= 2) {
    Tensor rows = input.dim() == 1 ? input.unsqueeze(0) : input;
    return rows.gather(1, idx.unsqueeze(1)).squeeze(1);
  }
  std::vector<int64_t> shape = input.sizes().vec();
  shape[1] = 1;
  return input.gather(1, idx.reshape(shape)).reshape({-1});
}

/// Shape checks shared by nll_loss and cross_entropy with class-index targets.
void check_nll_shapes(const Tensor& input, const Tensor& target, const char* op) {
  RT_CHECK(input.dim() >= 1, op, ": input tensor should be 1D or more, got shape ", input.sizes());
  if (input.dim() == 1) {
    RT_CHECK(target.dim() == 0, op, ": 1D input expects a 0D target, got target of shape ",
             target.sizes());
    return;
  }
  RT_CHECK_VALUE(target.dim() >= 1 && input.size(0) == target.size(0),
                 "Expected input batch_size (", input.size(0), ") to match target batch_size (",
                 target.dim() >= 1 ? target.size(0) : 0, ").");
  std::vector<int64_t> want{input.size(0)};
  for (int64_t i = 2; i < input.dim(); ++i) want.push_back(input.size(i));
  RT_CHECK(target.sizes() == IntArrayRef(want), op, ": Expected target size ", IntArrayRef(want),
           ", got ", target.sizes());
}

}  // namespace

// ---------------------------------------------------------------- regression losses

Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  const int64_t r = reduction_enum(reduction);  // 0 none, 1 mean, 2 sum
  if (r != 0 && input.sizes().equals(target.sizes()) && input.dtype() == target.dtype() &&
      is_floating_type(input.dtype()) && input.device() == target.device() && input.is_cpu()) {
    Tensor s = retorch::_mse_sum(input, target);
    return r == 2 ? s : s / double(input.numel());  // (empty: 0 / 0, NaN, as PyTorch)
  }
  Tensor d = input - target;
  return reduce(d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  reduction_enum(reduction);
  return reduce((input - target).abs(), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                      double beta) {
  reduction_enum(reduction);
  RT_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  if (beta == 0) return retorch::l1_loss(input, target, reduction);
  return reduce(retorch::_smooth_l1(input, target, beta), reduction);
}

Tensor _smooth_l1_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                           double beta) {
  Tensor d = self - target;
  return where(d.le(Scalar(-beta)), grad_output.neg(),
               where(d.ge(Scalar(beta)), grad_output, d * grad_output / beta));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                  double delta) {
  reduction_enum(reduction);
  RT_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return reduce(retorch::_smooth_l1(input, target, delta), reduction) * delta;
}

// ---------------------------------------------------------------- classification losses

Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                int64_t ignore_index, std::string_view reduction) {
  int64_t red = reduction_enum(reduction);
  check_nll_shapes(input, target, "nll_loss");
  int64_t C = input.dim() == 1 ? input.size(0) : input.size(1);
  check_class_weight(weight, C, "nll_loss");
  Tensor t = target.reshape({-1});
  const int64_t ignored = check_class_target(t, ignore_index, C, "nll_loss");
  if (ignored == 0 && !(weight && weight->defined())) {
    // Every target counts with weight 1: the picked log-probabilities, negated, and their sum or
    // mean (three ops where the masks and weights below took ten: 6 us for [100, 10], PyTorch 2).
    Tensor loss = -picked_classes(input, t);
    if (red == 0) return loss.reshape(target.sizes());
    return red == 2 ? loss.sum() : loss.mean();
  }
  Tensor keep = t.ne(Scalar(ignore_index));
  Tensor safe = t.masked_fill(keep.logical_not(), 0);
  Tensor picked = picked_classes(input, safe);
  Tensor w = keep.to(input.dtype());
  if (weight && weight->defined()) w = w * weight->index_select(0, safe);
  Tensor loss = -picked * w;
  if (red == 0) return loss.reshape(target.sizes());
  if (red == 2) return loss.sum();
  return loss.sum() / w.sum();
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const std::optional<Tensor>& weight, int64_t ignore_index,
                     std::string_view reduction, double label_smoothing) {
  int64_t red = reduction_enum(reduction);
  RT_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
           "cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  check_float(input, "cross_entropy");
  int64_t class_dim = input.dim() == 1 ? 0 : 1;
  RT_CHECK(input.dim() >= 1, "cross_entropy: input tensor should be 1D or more, got shape ",
           input.sizes());
  int64_t C = input.size(class_dim);
  check_class_weight(weight, C, "cross_entropy");
  if (is_floating_type(target.dtype())) {
    // Class probabilities: -sum_c w_c q_c log p_c, mean over every non-class position.
    RT_CHECK(target.sizes() == input.sizes(), "cross_entropy: Expected target of the same shape "
             "as input for class probabilities, got input ", input.sizes(), " and target ",
             target.sizes());
    Tensor q = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / double(C)
                                   : target;
    Tensor lp = input.log_softmax(class_dim);
    Tensor prod = lp * q;
    if (weight && weight->defined()) {
      std::vector<int64_t> s(size_t(input.dim()), 1);
      s[size_t(class_dim)] = C;
      prod = prod * weight->view(s);
    }
    Tensor loss = -prod.sum(IntArrayRef({class_dim}));
    if (red == 0) return loss;
    if (red == 2) return loss.sum();
    return input.numel() == 0 ? loss.sum() / 0.0 : loss.sum() / double(input.numel() / C);
  }
  // Note [Fused cross_entropy]: 2-D class-index inputs take one fused kernel (log-softmax, pick
  // and reduction in one pass over each row); its backward is written in retorch ops. Class
  // weights that require grad take the composite path, which differentiates them too.
  if (input.dim() == 2 && !(weight && weight->defined() && weight->requires_grad())) {
    check_nll_shapes(input, target, "cross_entropy");
    return std::get<0>(retorch::_cross_entropy_fused(input, target, weight, ignore_index, red,
                                                     label_smoothing));
  }
  Tensor lp = input.log_softmax(class_dim);
  Tensor nll = retorch::nll_loss(lp, target, weight, ignore_index, reduction);
  if (label_smoothing == 0) return nll;
  Tensor keep = target.ne(Scalar(ignore_index));
  Tensor smooth;
  if (weight && weight->defined()) {
    std::vector<int64_t> s(size_t(input.dim()), 1);
    s[size_t(class_dim)] = C;
    smooth = -(lp * weight->view(s)).sum(IntArrayRef({class_dim}));
  } else {
    smooth = -lp.sum(IntArrayRef({class_dim}));
  }
  smooth = smooth.masked_fill(keep.logical_not(), 0);
  Tensor ret;
  if (red == 0) {
    ret = smooth;
  } else if (red == 2) {
    ret = smooth.sum();
  } else if (weight && weight->defined()) {
    Tensor safe = target.masked_fill(keep.logical_not(), 0).reshape({-1});
    ret = smooth.sum() / (weight->index_select(0, safe) * keep.reshape({-1}).to(lp.dtype())).sum();
  } else {
    ret = smooth.sum() / keep.sum().to(lp.dtype());
  }
  return nll * (1 - label_smoothing) + ret * (label_smoothing / double(C));
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const std::optional<Tensor>& weight, std::string_view reduction) {
  reduction_enum(reduction);
  RT_CHECK_VALUE(target.sizes() == input.sizes(), "Using a target size (", target.sizes(),
                 ") that is different to the input size (", input.sizes(),
                 ") is deprecated. Please ensure they have the same size.");
  check_float(input, "binary_cross_entropy");
  if (input.numel() > 0) {
    bool ok = logical_and(input.ge(Scalar(0)), input.le(Scalar(1))).all().item<bool>();
    RT_CHECK(ok, "binary_cross_entropy: all elements of input should be between 0 and 1");
  }
  // PyTorch clamps each log at -100 so that a saturated input gives a finite loss.
  Tensor loss = -(target * input.log().clamp(Scalar(-100)) +
                  (1 - target) * (1 - input).log().clamp(Scalar(-100)));
  if (weight && weight->defined()) loss = loss * *weight;
  return reduce(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        std::string_view reduction,
                                        const std::optional<Tensor>& pos_weight) {
  reduction_enum(reduction);
  RT_CHECK_VALUE(target.sizes() == input.sizes(), "Target size (", target.sizes(),
                 ") must be the same as input size (", input.sizes(), ")");
  // log(1 + exp(-x)) computed stably as max_val + log(exp(-max_val) + exp(-x - max_val)).
  Tensor max_val = (-input).clamp(Scalar(0));
  Tensor softplus_neg = ((-max_val).exp() + (-input - max_val).exp()).log() + max_val;
  Tensor loss;
  if (pos_weight && pos_weight->defined()) {
    Tensor log_weight = (*pos_weight - 1) * target + 1;
    loss = (1 - target) * input + log_weight * softplus_neg;
  } else {
    loss = (1 - target) * input + softplus_neg;
  }
  if (weight && weight->defined()) loss = loss * *weight;
  return reduce(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction,
              bool log_target) {
  bool batchmean = reduction == "batchmean";
  if (!batchmean) reduction_enum(reduction);
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - input);
  } else {
    // xlogy(t, t) - t * x, with 0 * log 0 = 0 (and a gradient free of NaN there).
    Tensor t_safe = where(target.eq(Scalar(0)), ones_like(target), target);
    loss = target * t_safe.log() - target * input;
  }
  if (batchmean) return input.dim() == 0 ? loss.sum() : loss.sum() / double(input.size(0));
  return reduce(loss, reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full,
                        double eps, std::string_view reduction) {
  reduction_enum(reduction);
  Tensor loss = log_input ? input.exp() - target * input : input - target * (input + eps).log();
  if (full) {
    Tensor t_safe = where(target.le(Scalar(1)), ones_like(target), target);
    Tensor stirling = t_safe * t_safe.log() - t_safe + (t_safe * (2 * M_PI)).log() * 0.5;
    loss = loss + stirling.masked_fill(target.le(Scalar(1)), 0);
  }
  return reduce(loss, reduction);
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  reduction_enum(reduction);
  return reduce((-(input * target)).exp().log1p(), reduction);
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin,
                         const std::optional<Tensor>& weight, std::string_view reduction) {
  int64_t red = reduction_enum(reduction);
  RT_CHECK_VALUE(p == 1 || p == 2, "multi_margin_loss: only p == 1 and p == 2 supported");
  RT_CHECK((input.dim() <= 1 && input.numel() > 0) || (input.dim() == 2 && input.size(1) > 0),
           "multi_margin_loss: Expected non-empty vector or matrix with optional 0-dim batch size, "
           "but got: ", input.sizes());
  Tensor x = input.dim() <= 1 ? input.reshape({1, -1}) : input;
  int64_t N = x.size(0), C = x.size(1);
  RT_CHECK(target.dim() <= 1 && target.numel() == N,
           "multi_margin_loss: inconsistent target size: ", target.sizes(),
           " for input of size: ", input.sizes());
  RT_CHECK(target.dtype() == kLong, "multi_margin_loss: expected scalar type Long but found ",
           dtype_name(target.dtype()));
  Tensor t = target.reshape({N, 1});
  if (N > 0)
    RT_CHECK(!logical_or(t.lt(Scalar(0)), t.ge(Scalar(C))).any().item<bool>(),
             "multi_margin_loss: target out of range");
  check_class_weight(weight, C, "multi_margin_loss");
  Tensor z = (x - x.gather(1, t) + margin).clamp(Scalar(0));
  if (p == 2) z = z * z;
  if (weight && weight->defined()) z = z * weight->index_select(0, t.reshape({-1})).unsqueeze(1);
  Tensor loss = z.scatter(1, t, Scalar(0)).sum(IntArrayRef({1})) / double(C);
  if (red == 0) return input.dim() <= 1 ? loss.reshape({}) : loss;
  return red == 2 ? loss.sum() : loss.mean();
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           double margin, std::string_view reduction) {
  reduction_enum(reduction);
  RT_CHECK_VALUE(input1.dim() == input2.dim() && input1.dim() == target.dim(),
                 "margin_ranking_loss : All input tensors should have same dimension but got "
                 "sizes: input1: ", input1.sizes(), ", input2: ", input2.sizes(), ", target: ",
                 target.sizes());
  return reduce((-target * (input1 - input2) + margin).clamp(Scalar(0)), reduction);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin,
                            std::string_view reduction) {
  reduction_enum(reduction);
  Tensor zeros = zeros_like(input);
  Tensor margin_clamp = (margin - input).clamp(Scalar(0));
  Tensor loss = where(target.ne(Scalar(1)), margin_clamp, zeros) +
                where(target.ne(Scalar(-1)), input, zeros);
  return reduce(loss, reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             double margin, std::string_view reduction) {
  reduction_enum(reduction);
  int64_t td = target.dim();
  RT_CHECK(td == 1 || td == 0, "cosine_embedding_loss: 0D or 1D target tensor expected, "
           "multi-target not supported");
  if (td == 1)
    RT_CHECK(input1.dim() == 2 && input2.dim() == 2, "cosine_embedding_loss: 1D target tensor "
             "expects 2D input tensors, but found inputs with sizes ", input1.sizes(), " and ",
             input2.sizes(), ".");
  else
    RT_CHECK(input1.dim() == 1 && input2.dim() == 1, "cosine_embedding_loss: 0D target tensor "
             "expects 1D input tensors, but found inputs with sizes ", input1.sizes(), " and ",
             input2.sizes(), ".");
  constexpr double kEps = 1e-12;
  Tensor prod = (input1 * input2).sum(IntArrayRef({td}));
  Tensor m1 = (input1 * input1).sum(IntArrayRef({td})) + kEps;
  Tensor m2 = (input2 * input2).sum(IntArrayRef({td})) + kEps;
  Tensor cos = prod / (m1 * m2).sqrt();
  Tensor zeros = zeros_like(cos);
  Tensor loss = where(target.eq(Scalar(1)), 1 - cos, zeros) +
                where(target.eq(Scalar(-1)), (cos - margin).clamp(Scalar(0)), zeros);
  return reduce(loss, reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin, double p, double eps, bool swap,
                           std::string_view reduction) {
  reduction_enum(reduction);
  RT_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
           "triplet_margin_loss: The anchor, positive, and negative tensors are expected to have "
           "the same number of dimensions, but got: anchor ", anchor.dim(), "D, positive ",
           positive.dim(), "D, and negative ", negative.dim(), "D inputs");
  auto dist = [&](const Tensor& a, const Tensor& b) {
    int64_t d = std::max(a.dim(), b.dim()) - 1;
    return retorch::norm(a - b + eps, Scalar(p), IntArrayRef({std::max<int64_t>(d, 0)}), false);
  };
  Tensor dpos = dist(anchor, positive), dneg = dist(anchor, negative);
  if (swap) dneg = minimum(dneg, dist(positive, negative));
  return reduce((dpos - dneg + margin).clamp(Scalar(0)), reduction);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, std::string_view reduction,
                bool zero_infinity) {
  int64_t red = reduction_enum(reduction);
  auto as_vec = [](const Tensor& t, const char* what) {
    RT_CHECK(!is_floating_type(t.dtype()) && t.dim() <= 1, "ctc_loss: ", what,
             " must be a 1-D integer tensor, got ", t.dtype(), " of shape ", t.sizes());
    Tensor c = t.to(kLong).contiguous().reshape({-1});
    const int64_t* p = c.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + c.numel());
  };
  std::vector<int64_t> il = as_vec(input_lengths, "input_lengths");
  std::vector<int64_t> tl = as_vec(target_lengths, "target_lengths");
  Tensor res = std::get<0>(retorch::_ctc_loss(log_probs, targets, il, tl, blank, zero_infinity));
  if (zero_infinity)
    res = where(res.eq(Scalar(std::numeric_limits<double>::infinity())), zeros_like(res), res);
  if (red == 1) {
    Tensor tlt = target_lengths.to(res.dtype()).reshape({-1}).clamp(Scalar(1));
    return (res / tlt).mean();
  }
  return red == 2 ? res.sum() : res;
}

}  // namespace retorch::composite
