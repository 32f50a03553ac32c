// The dispatcher: per-operator kernel tables indexed by DispatchKey, boxed fallbacks, boxing.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "retorch/dispatch/DispatchKeySet.h"
#include "retorch/dispatch/IValue.h"

namespace retorch {

/// Static description of one operator, written by the generator from ops.yaml.
struct OpSchema {
  std::string_view name;      // "add"
  std::string_view overload;  // "Tensor" ("" for none)
  std::string_view schema;    // the full schema string from ops.yaml
  int num_args;
  int num_returns;
};

class OperatorHandle;
/// A kernel that works on any op: arguments and results travel on a Stack.
using BoxedKernel = std::function<void(const OperatorHandle& op, DispatchKeySet ks, Stack* stack)>;
using BoxedAdapter = void (*)(void* fn, DispatchKeySet ks, Stack* stack);

/// One table entry: an unboxed (typed) function pointer with its boxing adapter, or a boxed kernel.
struct KernelFunction {
  void* unboxed = nullptr;
  BoxedAdapter adapter = nullptr;
  BoxedKernel boxed;
  bool valid() const { return unboxed != nullptr || bool(boxed); }
};

namespace detail {
template <typename R, typename... Args, size_t... I>
R call_from_stack(R (*f)(DispatchKeySet, Args...), DispatchKeySet ks, Stack& s,
                  std::index_sequence<I...>) {
  size_t base = s.size() - sizeof...(Args);
  return f(ks, IValueConv<std::decay_t<Args>>::from(s[base + I])...);
}
template <typename R, typename... Args>
void boxed_adapter(void* fn, DispatchKeySet ks, Stack* stack) {
  auto* f = reinterpret_cast<R (*)(DispatchKeySet, Args...)>(fn);
  R r = call_from_stack(f, ks, *stack, std::index_sequence_for<Args...>{});
  stack->erase(stack->end() - sizeof...(Args), stack->end());
  ReturnConv<R>::push(*stack, std::move(r));
}
}  // namespace detail

/// Wraps a typed kernel `R f(DispatchKeySet, Args...)` so it can be called boxed too.
template <typename R, typename... Args>
KernelFunction make_kernel(R (*f)(DispatchKeySet, Args...)) {
  KernelFunction k;
  k.unboxed = reinterpret_cast<void*>(f);
  k.adapter = &detail::boxed_adapter<R, Args...>;
  return k;
}
inline KernelFunction make_boxed_kernel(BoxedKernel f) {
  KernelFunction k;
  k.boxed = std::move(f);
  return k;
}

class OperatorHandle;
/// Sees every call of a backend (CPU, CUDA) kernel, boxed, while installed: it must run the
/// kernel (`run_kernel`). The launch manager (retorch/runtime) installs one while it has
/// observers or is capturing (Note [Launch hook] in Dispatcher.cpp).
using LaunchHook = void (*)(const OperatorHandle& op, const KernelFunction& k, DispatchKeySet ks,
                            Stack* stack);
namespace detail {
extern std::atomic<LaunchHook> g_launch_hook;
}
void set_launch_hook(LaunchHook hook);
/// Runs a kernel on a boxed stack (what a launch hook does to launch it).
void run_kernel(const OperatorHandle& op, const KernelFunction& k, DispatchKeySet ks, Stack* stack);

class OperatorHandle {
 public:
  explicit OperatorHandle(OpSchema schema) : schema_(schema) {}
  const OpSchema& schema() const { return schema_; }
  /// "aten::add.Tensor"
  std::string qualified_name() const;

  void set_kernel(DispatchKey k, KernelFunction f);
  bool has_kernel(DispatchKey k) const { return (kernel_mask_ >> uint8_t(k)) & 1; }
  const KernelFunction& kernel(DispatchKey k) const { return kernels_[uint8_t(k)]; }
  /// Marks the backend kernels as one device-independent kernel (a composite of other ops, or
  /// a view): it runs on tensors of any device, so the device fallback never reroutes it.
  void set_device_independent(bool v) { device_independent_ = v; }
  bool device_independent() const { return device_independent_; }
  /// Marks an op whose tensors may come from several devices (ops.yaml `mixed_devices`):
  /// copies between devices and indexing with cpu indices, as PyTorch allows.
  void set_allows_mixed_devices(bool v) { allows_mixed_devices_ = v; }
  bool allows_mixed_devices() const { return allows_mixed_devices_; }
  DispatchKeySet kernel_keys() const { return DispatchKeySet(kernel_mask_, 0); }

  /// Full dispatch: applies the thread-local include/exclude sets to ks.
  template <typename R, typename... Args>
  R call(DispatchKeySet ks, Args... args) const {
    const auto& tls = tls_local_dispatch_key_set();
    return redispatch<R, Args...>((ks | tls.included) - tls.excluded,
                                  std::forward<Args>(args)...);
  }
  /// Dispatch on exactly ks (kernels use this with ks.below(their key)).
  template <typename R, typename... Args>
  R redispatch(DispatchKeySet ks, Args... args) const {
    const KernelFunction& k = lookup(ks);
    LaunchHook hook = detail::g_launch_hook.load(std::memory_order_relaxed);
    if (k.unboxed && (hook == nullptr || !is_launch(ks)))
      return reinterpret_cast<R (*)(DispatchKeySet, Args...)>(k.unboxed)(
          ks, std::forward<Args>(args)...);
    Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.emplace_back(IValue(args)), ...);
    // A boxed-only backend kernel (the CUDA backend's, a test's fake device) is a launch too.
    if (hook != nullptr && is_launch(ks)) hook(*this, k, ks, &stack);
    else run_kernel(*this, k, ks, &stack);
    return ReturnConv<R>::pop(stack);
  }
  /// Whether a call on ks runs a backend kernel (CPU or CUDA) of this op: a launch.
  bool is_launch(DispatchKeySet ks) const;
  /// Boxed call by a stack of all arguments; keys come from the tensors on the stack.
  void call_boxed(Stack* stack) const;
  void redispatch_boxed(DispatchKeySet ks, Stack* stack) const;

 private:
  const KernelFunction& lookup(DispatchKeySet ks) const;
  const KernelFunction& lookup_missing(DispatchKeySet ks) const;
  [[noreturn]] void raise_no_kernel(DispatchKeySet ks) const;

  OpSchema schema_;
  uint64_t kernel_mask_ = 0;
  bool device_independent_ = false;
  bool allows_mixed_devices_ = false;
  KernelFunction kernels_[64];
};

class Dispatcher {
 public:
  static Dispatcher& singleton();
  /// Runs hook once the operator tables are built: now if they are, else at the end of the
  /// first singleton() call (Note [Dispatcher ready hook]).
  static void set_ready_hook(void (*hook)());
  /// Registers an operator; the handle stays valid for the life of the process.
  OperatorHandle& register_op(const OpSchema& schema);
  /// Finds "add" / "add.Tensor" / "aten::add.Tensor"; nullptr if unknown.
  OperatorHandle* find(std::string_view name) const;
  const std::vector<OperatorHandle*>& ops() const { return ops_; }

  /// Installs a boxed kernel that every op without its own kernel for k runs.
  void register_fallback(DispatchKey k, BoxedKernel f);
  void remove_fallback(DispatchKey k);
  const KernelFunction& fallback(DispatchKey k) const { return fallbacks_[uint8_t(k)]; }
  uint64_t fallback_mask() const { return fallback_mask_; }

 private:
  Dispatcher() = default;
  std::vector<OperatorHandle*> ops_;
  std::unordered_map<std::string, OperatorHandle*> by_name_;
  KernelFunction fallbacks_[64];
  uint64_t fallback_mask_ = 0;
};

/// Computes the dispatch key set of an op call from its tensor arguments.
inline DispatchKeySet key_set_of(const Tensor& t) {
  return t.defined() ? t.key_set() : DispatchKeySet();
}
inline DispatchKeySet key_set_of(const std::optional<Tensor>& t) {
  return t && t->defined() ? t->key_set() : DispatchKeySet();
}
inline DispatchKeySet key_set_of(TensorList l) {
  DispatchKeySet ks;
  for (const auto& t : l) ks = ks | key_set_of(t);
  return ks;
}
inline DispatchKeySet key_set_of(ArrayRef<std::optional<Tensor>> l) {
  DispatchKeySet ks;
  for (const auto& t : l) ks = ks | key_set_of(t);
  return ks;
}

/// Registers every op and kernel declared in ops.yaml (generated).
void register_generated_ops(Dispatcher& d);

}  // namespace retorch
