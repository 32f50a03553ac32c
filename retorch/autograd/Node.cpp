// Node bookkeeping, AccumulateGrad, SavedVariable, and grad modes.
#include "retorch/autograd/Node.h"

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "retorch/autograd/GradMode.h"
#include "retorch/autograd/SavedVariable.h"
#include "retorch/generated/Functions.h"

namespace retorch {

namespace {
thread_local bool tls_grad_enabled = true;
thread_local bool tls_inference = false;
std::atomic<bool> g_anomaly{false};
}  // namespace

bool GradMode::is_enabled() { return tls_grad_enabled; }
void GradMode::set_enabled(bool e) { tls_grad_enabled = e; }
InferenceMode::InferenceMode(bool enabled)
    : prev_grad_(GradMode::is_enabled()), prev_inference_(tls_inference) {
  tls_inference = enabled;
  GradMode::set_enabled(!enabled);  // like c10::InferenceMode: disabling it enables grad
}
InferenceMode::~InferenceMode() {
  tls_inference = prev_inference_;
  GradMode::set_enabled(prev_grad_);
}
bool InferenceMode::is_enabled() { return tls_inference; }
bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool e) { g_anomaly = e; }

}  // namespace retorch

namespace retorch::autograd {

namespace {
// Nodes created later run earlier in backward (see Engine.cpp); a per-thread counter keeps
// creation order.
thread_local uint64_t tls_sequence_nr = 0;
std::atomic<unsigned> g_hook_handle{1};
}  // namespace

Node::Node() : sequence_nr_(tls_sequence_nr++) {}

std::string node_name(const std::shared_ptr<Node>& n) { return n ? n->name() : ""; }

uint32_t Node::add_input_metadata(const Tensor& t) {
  input_metadata_.push_back({DimVector(t.sizes()), t.dtype(), t.device()});
  return uint32_t(input_metadata_.size() - 1);
}

unsigned Node::add_tensor_pre_hook(uint32_t output_nr, std::function<Tensor(const Tensor&)> fn) {
  unsigned h = g_hook_handle++;
  pre_hooks_.push_back({output_nr, h, std::move(fn)});
  return h;
}

bool Node::remove_tensor_pre_hook(unsigned handle) {
  for (auto it = pre_hooks_.begin(); it != pre_hooks_.end(); ++it) {
    if (it->handle == handle) {
      pre_hooks_.erase(it);
      return true;
    }
  }
  return false;
}

void Node::run_pre_hooks(variable_list& grads) {
  for (auto& h : pre_hooks_) {
    if (h.output_nr < grads.size() && grads[h.output_nr].defined()) {
      Tensor r = h.fn(grads[h.output_nr]);
      if (r.defined()) grads[h.output_nr] = r;
    }
  }
  for (auto& [nr, g] : retained_) {
    if (nr < grads.size() && grads[nr].defined()) {
      if (!g.defined()) g = grads[nr].detach().clone();
      else g = g.add(grads[nr].detach());
    }
  }
}

void Node::set_retains_grad(uint32_t output_nr) {
  for (auto& r : retained_)
    if (r.first == output_nr) return;
  retained_.push_back({output_nr, Tensor()});
}

const Tensor& Node::retained_grad(uint32_t output_nr) const {
  static const Tensor undefined;
  for (auto& r : retained_)
    if (r.first == output_nr) return r.second;
  return undefined;
}

bool Node::retains_grad(uint32_t output_nr) const {
  for (auto& r : retained_)
    if (r.first == output_nr) return true;
  return false;
}

namespace {
// Note [Gradient layout]
// Like PyTorch's AccumulateGrad, a leaf's .grad takes the leaf's strides when the leaf is dense
// (a channels-last parameter gets a channels-last gradient), else it is contiguous.
bool obeys_layout(const Tensor& grad, const Tensor& variable) {
  if (!is_non_overlapping_and_dense_strides(variable.sizes(), variable.strides()))
    return grad.is_contiguous();
  for (int64_t d = 0; d < variable.dim(); ++d)
    if (variable.size(d) > 1 && grad.stride(d) != variable.stride(d)) return false;
  return true;
}

Tensor clone_obeying_layout(const Tensor& grad, const Tensor& variable) {
  if (!is_non_overlapping_and_dense_strides(variable.sizes(), variable.strides()) ||
      !grad.sizes().equals(variable.sizes()))
    return grad.clone();
  return empty_strided(variable.sizes(), variable.strides(), grad.options()).copy_(grad);
}
}  // namespace

AccumulateGrad::AccumulateGrad(Tensor v) : variable(std::move(v)) {
  sequence_nr_ = UINT64_MAX;  // accumulate as soon as a leaf's grad is ready
  add_input_metadata(variable);
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor new_grad = std::move(grads[0]);
  if (!new_grad.defined()) return {};
  AutogradMeta& meta = variable.impl()->ensure_autograd_meta();
  for (auto& h : meta.hooks_) {
    Tensor r = h.fn(new_grad);
    if (r.defined()) new_grad = r;
  }
  Tensor& g = meta.grad_;
  if (!GradMode::is_enabled()) {
    if (!g.defined()) {
      // Steal the buffer when nobody else holds it and it has the leaf's layout.
      if (new_grad.use_count() == 1 && obeys_layout(new_grad, variable) && !new_grad.grad_fn())
        g = new_grad.detach();
      else
        g = clone_obeying_layout(new_grad.detach(), variable);
    } else {
      g.add_(new_grad);
    }
  } else {
    // create_graph: keep the gradient differentiable, never modify it in place.
    g = g.defined() ? g.add(new_grad) : new_grad.clone();
  }
  return {};
}

variable_list NotImplementedBackward::apply(variable_list&&) {
  detail::throw_error(ErrorKind::kNotImplemented, msg_);
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = leaf.impl()->ensure_autograd_meta();
  if (auto acc = meta.grad_accumulator_.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(leaf);
  meta.grad_accumulator_ = acc;
  return acc;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* meta = t.impl()->autograd_meta();
  if (!meta) return Edge();
  if (meta->grad_fn_) return Edge{meta->grad_fn_, meta->output_nr_};
  if (meta->requires_grad_) return Edge{grad_accumulator(t), 0};
  return Edge();
}

namespace {
// This thread's saved-tensor hooks, innermost last, and the message pushing fails with while
// they are disabled.
thread_local std::vector<std::shared_ptr<SavedVariableHooksFactory>> tls_saved_hooks;
thread_local std::optional<std::string> tls_saved_hooks_disabled;
}  // namespace

void push_saved_tensor_hooks(std::shared_ptr<SavedVariableHooksFactory> factory) {
  RT_CHECK(!tls_saved_hooks_disabled, *tls_saved_hooks_disabled);
  tls_saved_hooks.push_back(std::move(factory));
}

void pop_saved_tensor_hooks() {
  RT_CHECK(!tls_saved_hooks.empty(), "pop_saved_tensor_hooks: no saved-tensor hooks are set");
  tls_saved_hooks.pop_back();
}

void disable_saved_tensor_hooks(std::string message) {
  tls_saved_hooks_disabled = std::move(message);
}

void enable_saved_tensor_hooks() {
  tls_saved_hooks_disabled.reset();
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  was_saved_ = true;
  is_output_ = is_output;
  saved_version_ = t._version();
  requires_grad_ = t.requires_grad();
  output_nr_ = t.output_nr();
  if (!tls_saved_hooks.empty()) {
    hooks_ = tls_saved_hooks.back()->make();
    {
      NoGradGuard no_grad;  // (as torch's: what the hook computes records no graph)
      hooks_->call_pack_hook(t);
    }
    RT_CHECK(t._version() == saved_version_,
             "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
             "to pack hook can not be modified by in-place operations as this can lead to "
             "unexpected side-effects. Please open an issue if you need to perform in-place "
             "operations on the input to a pack hook.");
    return;
  }
  // An output's grad_fn is the node saving it: keep a plain alias and reconnect on unpack.
  data_ = is_output ? alias_with_geometry(t, t.sizes(), t.strides(), t.storage_offset()) : t;
}

void SavedVariable::reset_data() {
  if (was_saved_) released_ = true;
  data_ = Tensor();
  hooks_.reset();
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
  if (!was_saved_) return Tensor();
  RT_CHECK(!released_,
           "Trying to backward through the graph a second time (or directly access saved "
           "tensors after they have already been freed). Saved intermediate values of the graph "
           "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
           "you need to backward through the graph a second time or if you need to access saved "
           "tensors after calling backward.");
  // Under hooks the unpack hook gives the tensor (its versions cannot be followed through them).
  const Tensor data = hooks_ ? hooks_->call_unpack_hook() : data_;
  if (!hooks_ && data_._version() != saved_version_) {
    std::string fn = saved_for ? saved_for->name() : std::string("a backward node");
    RT_ERROR("one of the variables needed for gradient computation has been modified by an "
             "inplace operation: [", legacy_type_name(data_.dtype()), " ", data_.sizes(), "]",
             is_output_ ? ", which is output " + std::to_string(output_nr_) + " of " + fn : "",
             ", is at version ", data_._version(), "; expected version ", saved_version_,
             " instead. Hint: the backtrace further above can show the operation that failed to "
             "compute its gradient; clone the tensor before modifying it in place.");
  }
  if (!is_output_ || !requires_grad_ || !saved_for) return data;
  Tensor t = alias_with_geometry(data, data.sizes(), data.strides(), data.storage_offset());
  AutogradMeta& m = t.impl()->ensure_autograd_meta();
  m.grad_fn_ = saved_for;
  m.output_nr_ = output_nr_;
  t.impl()->add_key(DispatchKey::Autograd);
  return t;
}

}  // namespace retorch::autograd
