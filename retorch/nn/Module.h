// nn::Module: parameters, buffers and submodules by name, train/eval, to(), state dicts, and
// the ModuleHolder handles (Linear, Conv2d, ...) through which libtorch-style code uses them.
#pragma once
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "retorch/core/Tensor.h"
#include "retorch/nn/OrderedDict.h"

namespace retorch::nn {

template <typename Impl>
class ModuleHolder;

/// The base of every layer, like torch::nn::Module: owns named parameters, buffers and
/// children; subclasses register them in their constructor (or reset()).
class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string name = "");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The type name printed for this module, e.g. "retorch::nn::Linear".
  const std::string& name() const { return name_; }

  /// The single-tensor forward; modules with other signatures define their own overloads.
  virtual Tensor forward(const Tensor& input);

  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::shared_ptr<Module>> named_children() const;
  /// This module and all its descendants, depth first ("" names this module).
  OrderedDict<std::shared_ptr<Module>> named_modules(const std::string& prefix = "",
                                                    bool include_self = true);
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);

  /// Sets training mode here and in every descendant (dropout, batch norm statistics).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Converts every floating parameter and buffer (and their grads) in place.
  virtual void to(ScalarType dtype);
  virtual void to(Device device, std::optional<ScalarType> dtype = std::nullopt);

  /// Clears the gradients of all parameters (to undefined, or to zeros).
  void zero_grad(bool set_to_none = true);

  /// Parameters and persistent buffers by dotted name ("features.0.weight"), detached.
  OrderedDict<Tensor> state_dict() const;
  /// Copies values in by name. strict: every key must match; shapes must always match. The
  /// error lists the missing, unexpected and mis-shaped entries.
  void load_state_dict(const OrderedDict<Tensor>& state, bool strict = true);

  /// Calls fn on this module and every descendant.
  void apply(const std::function<void(Module&)>& fn);

  /// Writes "retorch::nn::Name(options)" (no children); containers print children too.
  virtual void pretty_print(std::ostream& os) const;

  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    register_child(std::move(name), module);
    return module;
  }
  /// Registers the module a holder (Linear, Conv2d, ...) points to and returns the holder.
  template <typename Holder, typename = typename Holder::ContainedType>
  Holder register_module(std::string name, Holder holder) {
    register_child(std::move(name), holder.ptr());
    return holder;
  }
  /// Swaps in a new child under an existing name (keeps the order).
  template <typename M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    children_[name] = module;
    return module;
  }

 protected:
  void register_child(std::string name, std::shared_ptr<Module> module);
  bool training_ = true;

 private:
  void convert(std::optional<Device> device, std::optional<ScalarType> dtype);
  void collect_parameters(const std::string& prefix, bool recurse, OrderedDict<Tensor>& out) const;
  void collect_buffers(const std::string& prefix, bool recurse, bool persistent_only,
                       OrderedDict<Tensor>& out) const;
  void print_tree(std::ostream& os, int indent) const;
  friend std::ostream& operator<<(std::ostream& os, const Module& m);

  std::string name_;
  OrderedDict<Tensor> parameters_{"parameter"};
  OrderedDict<Tensor> buffers_{"buffer"};
  std::vector<std::string> non_persistent_;
  OrderedDict<std::shared_ptr<Module>> children_{"submodule"};
};

/// Prints the module tree like libtorch: "Name(options)" with indented "(child): ..." lines.
std::ostream& operator<<(std::ostream& os, const Module& m);

// Note [Forward observers]
// ModuleHolder::operator() is how layers call their children, so it is where an observer can
// see each module's output (model summary, tracing hooks) without touching any forward().
using ForwardObserver = std::function<void(const Module&, const Tensor& output)>;
/// Installs an observer for this thread until the returned guard dies.
class ForwardObserverGuard {
 public:
  explicit ForwardObserverGuard(ForwardObserver fn);
  ~ForwardObserverGuard();
  ForwardObserverGuard(const ForwardObserverGuard&) = delete;
  ForwardObserverGuard& operator=(const ForwardObserverGuard&) = delete;

 private:
  ForwardObserver prev_;
};
/// Notifies the current thread's observer, if any.
void notify_forward(const Module& m, const Tensor& output);

/// A shared handle to a module implementation, like torch::nn::ModuleHolder: `Linear l(4, 2);
/// l->weight; l(x);`. An empty holder is made with `nullptr`.
template <typename Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;
  ModuleHolder(std::nullptr_t) {}  // NOLINT: like libtorch, an explicitly empty holder
  template <typename... Args,
            typename = std::enable_if_t<
                !(sizeof...(Args) == 1 &&
                  ((std::is_same_v<std::decay_t<Args>, std::shared_ptr<Impl>> ||
                    std::is_base_of_v<ModuleHolder<Impl>, std::decay_t<Args>>) &&
                   ...)) &&
                std::is_constructible_v<Impl, Args&&...>>>
  ModuleHolder(Args&&... args)  // NOLINT: implicit like libtorch's holders
      : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  Impl* get() const {
    RT_CHECK(impl_ != nullptr, "accessing an empty ModuleHolder");
    return impl_.get();
  }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  /// Calls forward and reports the output to the thread's observer (Note [Forward observers]).
  template <typename... Args>
  auto operator()(Args&&... args) const {
    auto out = get()->forward(std::forward<Args>(args)...);
    if constexpr (std::is_same_v<decltype(out), Tensor>) notify_forward(*impl_, out);
    return out;
  }

 private:
  std::shared_ptr<Impl> impl_;
};

template <typename Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& m) {
  return os << *m;
}

}  // namespace retorch::nn

/// Declares the holder `Name` for the implementation `NameImpl` (libtorch's TORCH_MODULE).
#define RETORCH_MODULE(Name)                                     \
  class Name : public ::retorch::nn::ModuleHolder<Name##Impl> { \
   public:                                                       \
    using ::retorch::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }
