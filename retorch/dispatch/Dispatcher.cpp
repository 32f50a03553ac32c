// Dispatcher implementation: kernel lookup by highest key, boxed calls, fallbacks, TLS key sets.
#include "retorch/dispatch/Dispatcher.h"

#include <mutex>
#include <sstream>

namespace retorch {

std::string_view dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::Undefined: return "Undefined";
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::MPS: return "MPS";
    case DispatchKey::XPU: return "XPU";
    case DispatchKey::DeviceFallback: return "DeviceFallback";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::Tracer: return "Tracer";
    case DispatchKey::Autocast: return "Autocast";
    case DispatchKey::Profiler: return "Profiler";
    case DispatchKey::TestingA: return "TestingA";
    case DispatchKey::TestingB: return "TestingB";
    default: return "Unknown";
  }
}

std::ostream& operator<<(std::ostream& os, DispatchKeySet ks) {
  os << "DispatchKeySet(";
  bool first = true;
  for (int i = 63; i >= 0; --i) {
    if ((ks.raw() >> i) & 1) {
      os << (first ? "" : ", ") << dispatch_key_name(DispatchKey(i));
      first = false;
    }
  }
  return os << ")";
}

// Constant-initialized (usable from static initializers). Without a backend, cuda, mps and xpu
// tensors carry DeviceFallback; meta has its own kernels; cpu is always here.
DispatchKeySet detail::g_device_keys[kNumDeviceTypes] = {
    DispatchKeySet(DispatchKey::CPU),
    DispatchKeySet({DispatchKey::CUDA, DispatchKey::DeviceFallback}),
    DispatchKeySet({DispatchKey::MPS, DispatchKey::DeviceFallback}),
    DispatchKeySet({DispatchKey::XPU, DispatchKey::DeviceFallback}),
    DispatchKeySet(DispatchKey::Meta),
};

void set_device_key_set(DeviceType t, DispatchKeySet ks) { detail::g_device_keys[int(t)] = ks; }

LocalDispatchKeySet& tls_local_dispatch_key_set() {
  static thread_local LocalDispatchKeySet tls;
  return tls;
}

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = tls_local_dispatch_key_set();
  added_ = ks - tls.included;
  tls.included = tls.included | added_;
}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() {
  auto& tls = tls_local_dispatch_key_set();
  tls.included = tls.included - added_;
}
ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet ks) {
  auto& tls = tls_local_dispatch_key_set();
  added_ = ks - tls.excluded;
  tls.excluded = tls.excluded | added_;
}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() {
  auto& tls = tls_local_dispatch_key_set();
  tls.excluded = tls.excluded - added_;
}

std::string OperatorHandle::qualified_name() const {
  std::string s = "aten::";
  s += schema_.name;
  if (!schema_.overload.empty()) {
    s += ".";
    s += schema_.overload;
  }
  return s;
}

void OperatorHandle::set_kernel(DispatchKey k, KernelFunction f) {
  kernels_[uint8_t(k)] = std::move(f);
  if (kernels_[uint8_t(k)].valid()) kernel_mask_ |= uint64_t(1) << uint8_t(k);
  else kernel_mask_ &= ~(uint64_t(1) << uint8_t(k));
}

const KernelFunction& OperatorHandle::lookup(DispatchKeySet ks) const {
  const Dispatcher& d = Dispatcher::singleton();
  uint64_t candidates = ks.raw() & (kernel_mask_ | d.fallback_mask());
  if (__builtin_expect(candidates == 0, 0)) return lookup_missing(ks);
  int k = 63 - __builtin_clzll(candidates);
  // A backend key above the chosen one without a kernel (an xpu tensor with a backend, next to
  // a cpu one or a device argument): that device lacks the op, which is the device fallback's
  // case, not the lower backend's kernel's.
  if (__builtin_expect((ks.raw() & kBackendKeys.raw()) >> k > 1, 0)) return lookup_missing(ks);
  if ((kernel_mask_ >> k) & 1) return kernels_[k];
  return d.fallback(DispatchKey(k));
}

// A device with a backend that lacks this op: the device fallback routes the call (See Note
// [Device routing]); cpu has every kernel there is, and meta never falls back (no data).
const KernelFunction& OperatorHandle::lookup_missing(DispatchKeySet ks) const {
  const Dispatcher& d = Dispatcher::singleton();
  DispatchKeySet backends = ks & kBackendKeys;
  bool routable = !(backends - DispatchKeySet({DispatchKey::CPU, DispatchKey::Meta})).empty();
  if (routable && d.fallback(DispatchKey::DeviceFallback).valid())
    return d.fallback(DispatchKey::DeviceFallback);
  raise_no_kernel(ks);
}

void OperatorHandle::raise_no_kernel(DispatchKeySet ks) const {
  std::ostringstream os;
  DispatchKey backend = ks.below(DispatchKey::DeviceFallback).highest();
  os << "Could not run '" << qualified_name() << "' with arguments from the '"
     << dispatch_key_name(backend) << "' backend. '" << qualified_name()
     << "' has kernels for: " << kernel_keys();
  if (backend == DispatchKey::CUDA)
    os << ". This build of retorch has no CUDA backend or no CUDA device is available";
  if (backend == DispatchKey::Undefined)
    os << ". The call had no tensor arguments with a device (undefined tensor?)";
  detail::throw_error(ErrorKind::kNotImplemented, os.str());
}

void OperatorHandle::call_boxed(Stack* stack) const {
  DispatchKeySet ks;
  size_t n = size_t(schema_.num_args);
  RT_CHECK(stack->size() >= n, qualified_name(), ": boxed call needs ", n,
           " arguments on the stack, got ", stack->size());
  for (size_t i = stack->size() - n; i < stack->size(); ++i) {
    const IValue& v = (*stack)[i];
    if (v.is_tensor()) ks = ks | key_set_of(v.to_tensor());
    else if (v.is_tensor_list()) ks = ks | key_set_of(TensorList(v.to_tensor_list()));
    else if (std::holds_alternative<Device>(v.payload()))
      ks = ks | device_key_set(v.to_device().type);
  }
  if ((ks & kBackendKeys).empty()) ks = ks | DispatchKeySet(DispatchKey::CPU);
  const auto& tls = tls_local_dispatch_key_set();
  redispatch_boxed((ks | tls.included) - tls.excluded, stack);
}

// Note [Launch hook]
// A backend kernel (one registered for CPU or CUDA) is a launch: the unit the launch manager
// records, times, counts and captures. The dispatcher checks one atomic pointer per call; while
// it is null (no observer, no capture) the typed kernel runs as before, so the check is all an
// unobserved launch pays. While a hook is installed, backend calls are boxed and handed to it
// (it runs them through run_kernel); composite and fallback kernels are not launches.
std::atomic<LaunchHook> detail::g_launch_hook{nullptr};

void set_launch_hook(LaunchHook hook) { detail::g_launch_hook.store(hook); }

void run_kernel(const OperatorHandle& op, const KernelFunction& k, DispatchKeySet ks,
                Stack* stack) {
  if (k.unboxed) k.adapter(k.unboxed, ks, stack);
  else k.boxed(op, ks, stack);
}

bool OperatorHandle::is_launch(DispatchKeySet ks) const {
  uint64_t candidates = ks.raw() & (kernel_mask_ | Dispatcher::singleton().fallback_mask());
  if (candidates == 0) return false;
  int k = 63 - __builtin_clzll(candidates);
  return ((kernel_mask_ >> k) & 1) && ((kBackendKeys.raw() >> k) & 1);
}

void OperatorHandle::redispatch_boxed(DispatchKeySet ks, Stack* stack) const {
  const KernelFunction& k = lookup(ks);
  LaunchHook hook = detail::g_launch_hook.load(std::memory_order_relaxed);
  if (hook != nullptr && is_launch(ks)) return hook(*this, k, ks, stack);
  run_kernel(*this, k, ks, stack);
}

namespace {
// Constant-initialized, so usable from any static initializer (Note [Dispatcher ready hook]).
void (*g_ready_hook)() = nullptr;
std::atomic<bool> g_built{false};
}  // namespace

// Note [Dispatcher ready hook]
// Code that must run ops as soon as the library can (RETORCH_PROFILE starts a profile) cannot do
// so from its own static initializer: the generated registrations may not have run yet. It sets
// a hook instead, which the first call of singleton() runs once the tables are built (the check
// costs one relaxed load per call afterwards).
void Dispatcher::set_ready_hook(void (*hook)()) {
  if (g_built.load()) hook();
  else g_ready_hook = hook;
}

namespace detail {
void register_device_fallback(Dispatcher& d);  // retorch/device/DeviceFallback.cpp
void register_meta_backend(Dispatcher& d);     // retorch/backend/meta/MetaOps.cpp
void register_cuda_backend(Dispatcher& d);     // backend/cuda/CudaTensors.cpp or no_cuda
}

Dispatcher& Dispatcher::singleton() {
  static Dispatcher* d = [] {
    auto* disp = new Dispatcher();
    register_generated_ops(*disp);
    detail::register_device_fallback(*disp);
    detail::register_meta_backend(*disp);
    detail::register_cuda_backend(*disp);
    return disp;
  }();
  if (!g_built.load(std::memory_order_relaxed) && !g_built.exchange(true) && g_ready_hook)
    g_ready_hook();
  return *d;
}

OperatorHandle& Dispatcher::register_op(const OpSchema& schema) {
  auto* h = new OperatorHandle(schema);
  ops_.push_back(h);
  std::string base(schema.name);
  std::string full = schema.overload.empty() ? base : base + "." + std::string(schema.overload);
  by_name_[full] = h;
  by_name_.emplace(base, h);  // the first overload registered answers to the bare name
  return *h;
}

OperatorHandle* Dispatcher::find(std::string_view name) const {
  if (name.substr(0, 6) == "aten::") name.remove_prefix(6);
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

void Dispatcher::register_fallback(DispatchKey k, BoxedKernel f) {
  fallbacks_[uint8_t(k)] = make_boxed_kernel(std::move(f));
  fallback_mask_ |= uint64_t(1) << uint8_t(k);
}

void Dispatcher::remove_fallback(DispatchKey k) {
  fallbacks_[uint8_t(k)] = KernelFunction();
  fallback_mask_ &= ~(uint64_t(1) << uint8_t(k));
}

}  // namespace retorch
