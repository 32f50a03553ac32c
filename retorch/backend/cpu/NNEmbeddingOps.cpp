// Embedding kernels: lookup, its dense backward, max-norm renormalization and embedding_bag.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

/// Indices as int64 values (Long or Int only, like PyTorch's embedding).
std::vector<int64_t> index_values(const Tensor& indices, const char* op, const char* arg) {
  RT_CHECK(indices.dtype() == kLong || indices.dtype() == kInt, "Expected tensor for argument '",
           arg, "' to have one of the following scalar types: Long, Int; but got ",
           dtype_name(indices.dtype()), " instead (while checking arguments for ", op, ")");
  Tensor c = indices.to(kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

/// embedding raises IndexError like index_select; embedding_bag a RuntimeError like PyTorch's.
void check_range(const std::vector<int64_t>& idx, int64_t n, const char* op, bool index_error) {
  for (int64_t v : idx) {
    if (v >= 0 && v < n) continue;
    if (index_error)
      RT_CHECK_INDEX(false, op, ": index ", v, " out of range in self (", n, " rows)");
    RT_CHECK(false, op, ": Index ", v, " is out of bounds: range 0 to ", n);
  }
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/,
                 bool /*scale_grad_by_freq*/, bool sparse) {
  RT_CHECK(weight.dim() == 2, "embedding: 'weight' must be 2-D, got shape ", weight.sizes());
  RT_CHECK(!sparse, "embedding: sparse gradients are not supported by retorch");
  if (weight.device().is_meta() || indices.device().is_meta()) {  // Note [Meta through CPU kernels]
    std::vector<int64_t> shape(indices.sizes().begin(), indices.sizes().end());
    shape.push_back(weight.size(1));
    return make_empty(shape, weight.dtype(), Device(kMeta));
  }
  std::vector<int64_t> idx = index_values(indices, "embedding", "indices");
  int64_t V = weight.size(0), D = weight.size(1);
  check_range(idx, V, "embedding", true);
  std::vector<int64_t> shape(indices.sizes().begin(), indices.sizes().end());
  shape.push_back(D);
  // The rows are gathered by index_select's kernel (indices already validated above); it was
  // measured faster than a memcpy per row here.
  Tensor flat = indices.dim() == 1 ? indices : indices.reshape({-1});
  Tensor out = weight.index_select(0, flat).view(shape);
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx,
                                bool scale_grad_by_freq) {
  RT_CHECK(is_floating_type(grad_output.dtype()), "embedding_dense_backward: expected a floating "
           "point grad_output, got ", grad_output.dtype());
  if (grad_output.device().is_meta())  // See Note [Meta through CPU kernels]
    return make_empty({num_weights, grad_output.dim() > 0 ? grad_output.size(-1) : 0},
                      grad_output.dtype(), grad_output.device());
  std::vector<int64_t> idx = index_values(indices, "embedding_backward", "indices");
  check_range(idx, num_weights, "embedding_backward", true);
  int64_t n = int64_t(idx.size());
  int64_t D = n == 0 ? (grad_output.dim() > 0 ? grad_output.size(-1) : 0) : grad_output.numel() / n;
  RT_CHECK(grad_output.numel() == n * D, "embedding_dense_backward: grad_output of shape ",
           grad_output.sizes(), " does not match indices of shape ", indices.sizes());
  // Accumulate in float/double; half types are rounded once at the end.
  ScalarType acc_t = grad_output.dtype() == kDouble ? kDouble : kFloat;
  Tensor g = grad_output.to(acc_t).contiguous();
  Tensor out = zeros({num_weights, D}, TensorOptions().dtype(acc_t));
  std::vector<double> scale(size_t(num_weights), 1.0);
  if (scale_grad_by_freq) {
    std::vector<int64_t> count(size_t(num_weights), 0);
    for (int64_t v : idx) ++count[size_t(v)];
    for (int64_t v = 0; v < num_weights; ++v)
      if (count[size_t(v)] > 0) scale[size_t(v)] = 1.0 / double(count[size_t(v)]);
  }
  auto run = [&](auto tag) {
    using scalar_t = decltype(tag);
    const scalar_t* gp = g.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    // Threads own column blocks, so rows hitting the same index never race.
    constexpr int64_t kBlock = 64;
    int64_t nblocks = (D + kBlock - 1) / kBlock;
    parallel_for(0, nblocks, 1, [&](int64_t bb, int64_t be) {
      int64_t c0 = bb * kBlock, c1 = std::min(D, be * kBlock);
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = idx[size_t(i)];
        if (v == padding_idx) continue;
        scalar_t s = scalar_t(scale[size_t(v)]);
        const scalar_t* gr = gp + i * D;
        scalar_t* orow = op + v * D;
        _Pragma("omp simd")
        for (int64_t c = c0; c < c1; ++c) orow[c] += gr[c] * s;
      }
    });
  };
  if (acc_t == kDouble) run(double());
  else run(float());
  return out.to(grad_output.dtype());
}

Tensor embedding_renorm_(const Tensor& self, const Tensor& indices, double max_norm,
                         double norm_type) {
  RT_CHECK(self.dim() == 2, "embedding_renorm_: 'self' must be 2-D, got shape ", self.sizes());
  RT_CHECK(is_floating_type(self.dtype()), "embedding_renorm_: expected a floating point weight, "
           "got ", self.dtype());
  if (self.device().is_meta()) return self;  // See Note [Meta through CPU kernels]
  std::vector<int64_t> idx = index_values(indices, "embedding_renorm_", "indices");
  check_range(idx, self.size(0), "embedding_renorm_", true);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  int64_t D = self.size(1);
  RT_DISPATCH_FLOATING(self.dtype(), "embedding_renorm_", [&] {
    using op_t = opmath_t<scalar_t>;
    scalar_t* base = static_cast<scalar_t*>(self.data_ptr());
    int64_t s0 = self.stride(0), s1 = self.stride(1);
    for (int64_t v : idx) {
      scalar_t* row = base + v * s0;
      double norm = 0;
      for (int64_t c = 0; c < D; ++c) {
        double x = std::fabs(double(op_t(row[c * s1])));
        norm += norm_type == 1 ? x : (norm_type == 2 ? x * x : std::pow(x, norm_type));
      }
      norm = norm_type == 1 ? norm : (norm_type == 2 ? std::sqrt(norm)
                                                     : std::pow(norm, 1.0 / norm_type));
      if (norm > max_norm) {
        op_t scale = op_t(max_norm / (norm + 1e-7));
        for (int64_t c = 0; c < D; ++c) row[c * s1] = scalar_t(op_t(row[c * s1]) * scale);
      }
    }
  });
  return self;
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_forward(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool /*scale_grad_by_freq*/,
    int64_t mode, bool sparse, const std::optional<Tensor>& per_sample_weights,
    bool include_last_offset, int64_t padding_idx) {
  const char* op = "embedding_bag";
  RT_CHECK(weight.dim() == 2, op, ": 'weight' must be 2-D, got shape ", weight.sizes());
  RT_CHECK(is_floating_type(weight.dtype()), op, ": expected a floating point weight, got ",
           weight.dtype());
  RT_CHECK(!sparse, op, ": sparse gradients are not supported by retorch");
  RT_CHECK(mode >= 0 && mode <= 2, op, ": mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  RT_CHECK(indices.dim() == 1, op, ": input has to be a 1D Tensor when offsets are given, but got "
           "shape ", indices.sizes());
  RT_CHECK(offsets.dim() == 1, op, ": offsets has to be a 1D Tensor, but got shape ",
           offsets.sizes());
  if (weight.device().is_meta()) {  // See Note [Meta through CPU kernels]: sizes, not values
    const int64_t B = offsets.size(0) - (include_last_offset ? 1 : 0), D = weight.size(1);
    RT_CHECK(B >= 0, op, ": include_last_offset needs at least one offset");
    const Device dev = weight.device();
    return {make_empty({B, D}, weight.dtype(), dev), make_empty({indices.size(0)}, kLong, dev),
            make_empty({B}, kLong, dev),
            make_empty(mode == 2 ? std::vector<int64_t>{B, D} : std::vector<int64_t>{B}, kLong,
                       dev)};
  }
  std::vector<int64_t> idx = index_values(indices, op, "indices");
  std::vector<int64_t> off = index_values(offsets, op, "offsets");
  int64_t V = weight.size(0), D = weight.size(1), n = int64_t(idx.size());
  check_range(idx, V, op, false);
  int64_t B = int64_t(off.size()) - (include_last_offset ? 1 : 0);
  RT_CHECK(B >= 0, op, ": include_last_offset needs at least one offset");
  if (!off.empty())
    RT_CHECK(off[0] == 0, op, ": offsets[0] has to be 0, i.e., the first sequence in the "
             "mini-batch has to start from position 0. However, got ", off[0]);
  for (size_t i = 1; i < off.size(); ++i)
    RT_CHECK(off[i] >= off[i - 1], op, ": offsets must be non-decreasing, got ", off[i - 1],
             " before ", off[i]);
  if (!off.empty())
    RT_CHECK(off.back() <= n, op, ": offsets[-1] can not be greater than input's length (", n,
             "), but got offsets[-1] of ", off.back());
  bool has_psw = per_sample_weights && per_sample_weights->defined();
  if (has_psw) {
    RT_CHECK(mode == 0, op, ": per_sample_weights was not None. per_sample_weights is only "
             "supported for mode='sum'");
    RT_CHECK(per_sample_weights->dim() == 1 && per_sample_weights->numel() == n, op,
             ": expected per_sample_weights to be a 1D tensor of the same size as input (", n,
             "), got shape ", per_sample_weights->sizes());
  }
  auto bag_end = [&](int64_t b) { return b + 1 < int64_t(off.size()) ? off[size_t(b + 1)] : n; };
  Tensor out = zeros({B, D}, weight.options());
  Tensor o2b = make_empty({n}, kLong);
  Tensor bsize = make_empty({B}, kLong);
  Tensor maxi = mode == 2 ? zeros({B, D}, TensorOptions().dtype(kLong)) : Tensor();
  int64_t* o2bp = o2b.data_ptr<int64_t>();
  int64_t* bsp = bsize.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) o2bp[i] = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = off[size_t(b)]; i < bag_end(b); ++i) o2bp[i] = b;
  Tensor w = weight.contiguous();
  Tensor psw = has_psw ? per_sample_weights->to(weight.dtype()).contiguous() : Tensor();
  RT_DISPATCH_FLOATING(weight.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* wp = w.data_ptr<scalar_t>();
    const scalar_t* pp = has_psw ? psw.data_ptr<scalar_t>() : nullptr;
    scalar_t* outp = out.data_ptr<scalar_t>();
    int64_t* mip = mode == 2 ? maxi.data_ptr<int64_t>() : nullptr;
    parallel_for(0, B, 1, [&](int64_t bb, int64_t be) {
      std::vector<op_t> acc(static_cast<size_t>(D));
      for (int64_t b = bb; b < be; ++b) {
        int64_t count = 0;
        std::fill(acc.begin(), acc.end(), mode == 2 ? -INFINITY : op_t(0));
        int64_t* mrow = mip ? mip + b * D : nullptr;
        for (int64_t i = off[size_t(b)]; i < bag_end(b); ++i) {
          int64_t v = idx[size_t(i)];
          if (v == padding_idx) continue;
          const scalar_t* wr = wp + v * D;
          if (mode == 2) {
            for (int64_t c = 0; c < D; ++c) {
              op_t x = op_t(wr[c]);
              if (count == 0 || x > acc[size_t(c)] || std::isnan(x)) {
                acc[size_t(c)] = x;
                mrow[c] = v;
              }
            }
          } else {
            op_t s = pp ? op_t(pp[i]) : op_t(1);
            for (int64_t c = 0; c < D; ++c) acc[size_t(c)] += op_t(wr[c]) * s;
          }
          ++count;
        }
        bsp[b] = count;
        scalar_t* orow = outp + b * D;
        if (count == 0) continue;  // empty bags stay zero
        op_t div = mode == 1 ? op_t(count) : op_t(1);
        for (int64_t c = 0; c < D; ++c) orow[c] = scalar_t(acc[size_t(c)] / div);
      }
    });
  });
  // Like PyTorch, the fourth output holds the arg-max rows in max mode and bag sizes otherwise.
  return {out, o2b, bsize, mode == 2 ? maxi : bsize.clone()};
}

}  // namespace retorch::cpu
