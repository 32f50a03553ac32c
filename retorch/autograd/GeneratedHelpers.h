// What the generated autograd code uses: edge collection, history, in-place checks, formulas.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "retorch/autograd/FunctionsManual.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/autograd/Node.h"
#include "retorch/autograd/SavedVariable.h"
#include "retorch/dispatch/Dispatcher.h"
#include "retorch/generated/Functions.h"

namespace retorch::autograd::generated {

using namespace retorch::autograd::fm;  // formula helpers, unqualified as in derivatives.yaml

/// Runs the ops inside it below the Autograd key (PyTorch's AutoDispatchBelowAutograd).
struct AutoDispatchBelowAutograd {
  ExcludeDispatchKeyGuard guard{DispatchKeySet(DispatchKey::Autograd)};
};

inline bool any_defined(const variable_list& v) {
  for (auto& t : v)
    if (t.defined()) return true;
  return false;
}

inline bool any_requires_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }
inline bool any_requires_grad(const std::optional<Tensor>& t) { return t && any_requires_grad(*t); }
inline bool any_requires_grad(TensorList l) {
  for (auto& t : l)
    if (any_requires_grad(t)) return true;
  return false;
}
template <typename... Ts>
bool compute_requires_grad(const Ts&... ts) {
  return GradMode::is_enabled() && (any_requires_grad(ts) || ...);
}

inline void add_edges(std::vector<Edge>& out, const Tensor& t) {
  out.push_back(t.defined() ? gradient_edge(t) : Edge());
}
inline void add_edges(std::vector<Edge>& out, const std::optional<Tensor>& t) {
  out.push_back(t && t->defined() ? gradient_edge(*t) : Edge());
}
inline void add_edges(std::vector<Edge>& out, TensorList l) {
  for (auto& t : l) add_edges(out, t);
}
template <typename... Ts>
std::vector<Edge> collect_next_edges(const Ts&... ts) {
  std::vector<Edge> out;
  (add_edges(out, ts), ...);
  return out;
}

/// Makes result an output of node (output_nr); view_of marks result as a view of that tensor.
void set_history(const Tensor& result, const std::shared_ptr<Node>& node, uint32_t output_nr,
                 const Tensor* view_of);
/// After a differentiable in-place op: self takes over the history of r.
void rebase_history(const Tensor& self, const Tensor& r);
/// Refuses in-place ops on leaves (and views of leaves) that require grad.
void check_inplace(const Tensor& self, bool requires_grad, const char* op);
template <typename... Ts>
void check_no_grad_for_out(const char* op, const Ts&... ts) {
  RT_CHECK(!compute_requires_grad(ts...), op, "(): functions with out=... arguments don't support "
           "automatic differentiation, but one of the arguments requires grad.");
}
std::string describe_tensor(const Tensor& t);
inline std::string describe_arg(const Tensor& t) { return describe_tensor(t); }
inline std::string describe_arg(const std::optional<Tensor>& t) {
  return t ? describe_tensor(*t) : std::string("None");
}
inline std::string describe_arg(TensorList l) {
  std::string s = "[";
  for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + describe_tensor(l[i]);
  return s + "]";
}
/// "aten::mul.Tensor(float32[3], float32[3])", recorded on nodes in anomaly mode.
template <typename... Ts>
std::string describe_call(std::string name, const Ts&... ts) {
  std::string args;
  ((args += (args.empty() ? "" : ", ") + describe_arg(ts)), ...);
  return name + "(" + args + ")";
}
[[noreturn]] void raise_not_implemented(const char* op, const char* arg);
inline Tensor not_implemented(const char* op, const char* arg) { raise_not_implemented(op, arg); }
/// PyTorch's own form: "the derivative for '<what>' is not implemented."
inline Tensor not_implemented(const char* what) { raise_not_implemented(what, nullptr); }

}  // namespace retorch::autograd::generated
