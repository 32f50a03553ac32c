// gradcheck: analytical Jacobians from autograd against central finite differences.
#include <cmath>
#include <sstream>

#include "retorch/autograd/Engine.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"

namespace retorch::autograd {

namespace {

// A 0-dim view of element `flat` of t (any strides).
Tensor element(const Tensor& t, int64_t flat) {
  Tensor v = t;
  std::vector<int64_t> idx(size_t(t.dim()));
  int64_t rem = flat;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    idx[size_t(d)] = rem % t.size(d);
    rem /= t.size(d);
  }
  for (int64_t d = 0; d < t.dim(); ++d) v = v.select(0, idx[size_t(d)]);
  return v;
}

variable_list flat_outputs(const std::function<variable_list(const variable_list&)>& fn,
                           const variable_list& inputs) {
  variable_list outs = fn(inputs);
  // Cloned like PyTorch's gradcheck: an output may alias the input being perturbed (x.view(),
  // x.contiguous()), and restoring the input would otherwise change the recorded value.
  for (auto& o : outs)
    if (o.defined()) o = o.reshape({-1}).clone();
  return outs;
}

}  // namespace

bool gradcheck(const std::function<variable_list(const variable_list&)>& fn,
               const variable_list& inputs, double eps, double atol, double rtol,
               bool raise_exception) {
  variable_list outs = fn(inputs);
  std::vector<size_t> diff_inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) diff_inputs.push_back(i);
  RT_CHECK(!diff_inputs.empty(), "gradcheck expects at least one input tensor to require gradient");
  variable_list diff;
  for (size_t i : diff_inputs) diff.push_back(inputs[i]);

  for (size_t oi = 0; oi < outs.size(); ++oi) {
    const Tensor& out = outs[oi];
    if (!out.defined() || !is_floating_type(out.dtype())) continue;
    int64_t n_out = out.numel();
    // Numerical Jacobian columns: d out / d input[j] for every input element j.
    for (size_t k = 0; k < diff.size(); ++k) {
      const Tensor& x = diff[k];
      Tensor xd = x.detach();
      int64_t n_in = x.numel();
      std::vector<std::vector<double>> num(static_cast<size_t>(n_in), std::vector<double>(static_cast<size_t>(n_out)));
      {
        NoGradGuard ng;
        for (int64_t j = 0; j < n_in; ++j) {
          Tensor e = element(xd, j);
          double orig = e.item<double>();
          e.fill_(orig + eps);
          Tensor plus = flat_outputs(fn, inputs)[oi].to(kDouble).contiguous();
          e.fill_(orig - eps);
          Tensor minus = flat_outputs(fn, inputs)[oi].to(kDouble).contiguous();
          e.fill_(orig);
          const double* p = plus.data_ptr<double>();
          const double* mi = minus.data_ptr<double>();
          for (int64_t m = 0; m < n_out; ++m) num[size_t(j)][size_t(m)] = (p[m] - mi[m]) / (2 * eps);
        }
      }
      // Analytical rows: one backward per output element.
      for (int64_t m = 0; m < n_out; ++m) {
        variable_list fresh = fn(inputs);
        Tensor go = zeros_like(fresh[oi]).reshape({-1});
        go.select(0, m).fill_(1);
        variable_list g = grad({fresh[oi]}, {x}, {go.reshape(fresh[oi].sizes())}, true, false, true);
        Tensor gx = g[0].defined() ? g[0].to(kDouble).contiguous().reshape({-1})
                                   : zeros({n_in}, TensorOptions(kDouble));
        const double* ga = gx.data_ptr<double>();
        for (int64_t j = 0; j < n_in; ++j) {
          double a = ga[j], nv = num[size_t(j)][size_t(m)];
          if (!(std::fabs(a - nv) <= atol + rtol * std::fabs(nv))) {
            if (!raise_exception) return false;
            std::ostringstream os;
            os << "Jacobian mismatch for output " << oi << " with respect to input " << diff_inputs[k]
               << ",\nnumerical:" << nv << "\nanalytical:" << a << "\n(at input element " << j
               << ", output element " << m << ")";
            RT_ERROR(os.str());
          }
        }
      }
    }
  }
  return true;
}

}  // namespace retorch::autograd
