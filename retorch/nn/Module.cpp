// nn::Module: registration, recursive traversal, train/eval, dtype conversion, state dicts and
// libtorch-style printing.
#include "retorch/nn/Module.h"

#include <algorithm>
#include <sstream>

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::nn {

Module::Module(std::string name) : name_(std::move(name)) {
  if (name_.empty()) name_ = "retorch::nn::Module";
}

Tensor Module::forward(const Tensor& input) {
  RT_CHECK(false, name_, " has no forward(Tensor); call the forward it defines");
}

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

bool valid_name(const std::string& name) {
  return !name.empty() && name.find('.') == std::string::npos;
}

}  // namespace

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  RT_CHECK(valid_name(name), name_, ": parameter name must be non-empty and contain no '.', got '",
           name, "'");
  if (tensor.defined()) tensor.set_requires_grad(requires_grad);
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor, bool persistent) {
  RT_CHECK(valid_name(name), name_, ": buffer name must be non-empty and contain no '.', got '",
           name, "'");
  if (!persistent) non_persistent_.push_back(name);
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::register_child(std::string name, std::shared_ptr<Module> module) {
  RT_CHECK(valid_name(name), name_, ": submodule name must be non-empty and contain no '.', got '",
           name, "'");
  RT_CHECK(module != nullptr, name_, ": cannot register an empty submodule '", name, "'");
  children_.insert(std::move(name), std::move(module));
}

void Module::collect_parameters(const std::string& prefix, bool recurse,
                                OrderedDict<Tensor>& out) const {
  for (const auto& [name, p] : parameters_)
    if (p.defined()) out.insert(join(prefix, name), p);
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->collect_parameters(join(prefix, name), true, out);
}

void Module::collect_buffers(const std::string& prefix, bool recurse, bool persistent_only,
                             OrderedDict<Tensor>& out) const {
  for (const auto& [name, b] : buffers_) {
    if (!b.defined()) continue;
    if (persistent_only &&
        std::find(non_persistent_.begin(), non_persistent_.end(), name) != non_persistent_.end())
      continue;
    out.insert(join(prefix, name), b);
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_)
    child->collect_buffers(join(prefix, name), true, persistent_only, out);
}

OrderedDict<Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<Tensor> out("parameter");
  collect_parameters("", recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

OrderedDict<Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<Tensor> out("buffer");
  collect_buffers("", recurse, false, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_modules(const std::string& prefix,
                                                          bool include_self) {
  OrderedDict<std::shared_ptr<Module>> out("module");
  std::function<void(const std::string&, const std::shared_ptr<Module>&)> walk =
      [&](const std::string& p, const std::shared_ptr<Module>& m) {
        out.insert(p, m);
        for (const auto& [name, child] : m->children_) walk(join(p, name), child);
      };
  if (include_self) {
    walk(prefix, shared_from_this());
  } else {
    for (const auto& [name, child] : children_) walk(join(prefix, name), child);
  }
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  return named_modules("", include_self).values();
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::to(ScalarType dtype) { convert(std::nullopt, dtype); }

void Module::to(Device device, std::optional<ScalarType> dtype) { convert(device, dtype); }

void Module::convert(std::optional<Device> device, std::optional<ScalarType> dtype) {
  NoGradGuard no_grad;
  auto move = [&](const Tensor& t) {
    if (!t.defined()) return;
    // Like torch, only floating tensors change dtype; integer buffers (num_batches_tracked) stay.
    ScalarType to_dtype = dtype && is_floating_type(t.dtype()) ? *dtype : t.dtype();
    Tensor moved = t.to(device.value_or(t.device()), to_dtype);
    if (moved.impl() != t.impl()) t.set_data(moved);
  };
  for (const auto& p : parameters()) {
    move(p);
    move(p.grad());
  }
  for (const auto& b : buffers()) move(b);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor p : parameters()) {
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      Tensor gd = g.detach();
      gd.zero_();
    }
  }
}

OrderedDict<Tensor> Module::state_dict() const {
  OrderedDict<Tensor> out("state entry");
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m,
                                                                     const std::string& prefix) {
    for (const auto& [name, p] : m.parameters_)
      if (p.defined()) out.insert(join(prefix, name), p.detach());
    OrderedDict<Tensor> bufs("buffer");
    m.collect_buffers(prefix, false, true, bufs);
    for (const auto& [name, b] : bufs) out.insert(name, b.detach());
    for (const auto& [name, child] : m.children_) walk(*child, join(prefix, name));
  };
  walk(*this, "");
  return out;
}

void Module::load_state_dict(const OrderedDict<Tensor>& state, bool strict) {
  OrderedDict<Tensor> own = state_dict();
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : own) {
    const Tensor* src = state.find(name);
    if (src == nullptr) {
      missing.push_back(name);
    } else if (src->sizes() != t.sizes()) {
      std::ostringstream ss;
      ss << name << ": checkpoint " << src->sizes() << " vs model " << t.sizes();
      mismatched.push_back(ss.str());
    }
  }
  for (const auto& [name, t] : state)
    if (!own.contains(name)) unexpected.push_back(name);
  auto list = [](const std::vector<std::string>& v) {
    std::ostringstream ss;
    for (size_t i = 0; i < v.size(); ++i) ss << (i ? ", " : "") << '"' << v[i] << '"';
    return ss.str();
  };
  const bool key_errors = strict && (!missing.empty() || !unexpected.empty());
  if (key_errors || !mismatched.empty()) {
    std::ostringstream msg;
    msg << "Error(s) in loading state_dict for " << name_ << ":";
    if (strict && !missing.empty()) msg << "\n  Missing key(s) in state_dict: " << list(missing);
    if (strict && !unexpected.empty())
      msg << "\n  Unexpected key(s) in state_dict: " << list(unexpected);
    if (!mismatched.empty()) msg << "\n  Size mismatch for " << list(mismatched);
    RT_CHECK(false, msg.str());
  }
  NoGradGuard no_grad;
  for (const auto& [name, t] : own) {
    const Tensor* src = state.find(name);
    if (src != nullptr) t.copy_(*src);
  }
}

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (const auto& [name, child] : children_) child->apply(fn);
}

void Module::pretty_print(std::ostream& os) const { os << name_; }

void Module::print_tree(std::ostream& os, int indent) const {
  pretty_print(os);
  if (children_.empty()) return;
  os << "(\n";
  for (const auto& [name, child] : children_) {
    os << std::string(size_t(indent + 2), ' ') << "(" << name << "): ";
    child->print_tree(os, indent + 2);
    os << "\n";
  }
  os << std::string(size_t(indent), ' ') << ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) {
  m.print_tree(os, 0);
  return os;
}

namespace {
thread_local ForwardObserver g_observer;
}  // namespace

ForwardObserverGuard::ForwardObserverGuard(ForwardObserver fn) : prev_(std::move(g_observer)) {
  g_observer = std::move(fn);
}

ForwardObserverGuard::~ForwardObserverGuard() { g_observer = std::move(prev_); }

void notify_forward(const Module& m, const Tensor& output) {
  if (g_observer) g_observer(m, output);
}

}  // namespace retorch::nn
