// Containers: Sequential (chains single-tensor forwards), ModuleList and ModuleDict.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "retorch/nn/Module.h"

namespace retorch::nn {

namespace detail {
template <typename M>
std::shared_ptr<Module> as_module(M&& m) {
  if constexpr (std::is_convertible_v<std::decay_t<M>, std::shared_ptr<Module>>) {
    return std::forward<M>(m);
  } else {
    return m.ptr();
  }
}
}  // namespace detail

/// Runs its children in order, each on the previous one's output.
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("retorch::nn::Sequential") {}
  template <typename... Ms>
  explicit SequentialImpl(Ms&&... modules) : SequentialImpl() {
    (push_back(std::forward<Ms>(modules)), ...);
  }

  /// Appends a module (holder or shared_ptr) named by its index.
  template <typename M>
  void push_back(M&& module) {
    push_back(std::to_string(modules_.size()), std::forward<M>(module));
  }
  template <typename M>
  void push_back(std::string name, M&& module) {
    auto m = detail::as_module(std::forward<M>(module));
    register_module(std::move(name), m);
    modules_.push_back(std::move(m));
  }
  Tensor forward(const Tensor& input) override;
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
RETORCH_MODULE(Sequential);

/// A list of registered modules, indexed like a vector.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("retorch::nn::ModuleList") {}
  template <typename... Ms>
  explicit ModuleListImpl(Ms&&... modules) : ModuleListImpl() {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  template <typename M>
  void push_back(M&& module) {
    auto m = detail::as_module(std::forward<M>(module));
    register_module(std::to_string(modules_.size()), m);
    modules_.push_back(std::move(m));
  }
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const;
  /// The i-th module as its implementation type (error if it is another type).
  template <typename T>
  std::shared_ptr<T> ptr(size_t i) const {
    auto p = std::dynamic_pointer_cast<T>((*this)[i]);
    RT_CHECK(p != nullptr, "ModuleList: module ", i, " (", (*this)[i]->name(),
             ") is not of the requested type");
    return p;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
RETORCH_MODULE(ModuleList);

/// Registered modules by name, in insertion order.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("retorch::nn::ModuleDict") {}
  template <typename M>
  void insert(std::string name, M&& module) {
    auto m = detail::as_module(std::forward<M>(module));
    register_module(name, m);
    modules_.insert(std::move(name), std::move(m));
  }
  bool contains(const std::string& name) const { return modules_.contains(name); }
  const std::shared_ptr<Module>& operator[](const std::string& name) const { return modules_[name]; }
  size_t size() const { return modules_.size(); }
  std::vector<std::string> keys() const { return modules_.keys(); }

 private:
  OrderedDict<std::shared_ptr<Module>> modules_{"module"};
};
RETORCH_MODULE(ModuleDict);

}  // namespace retorch::nn
