// Autocast: per-thread state (on/off and dtype per device type, the cast cache) and the Autocast
// key's boxed kernel that casts an op's floating-point tensors by its policy, then redispatches.
#include "retorch/ops/Autocast.h"

#include <optional>
#include <unordered_map>
#include <utility>

#include "retorch/core/Error.h"
#include "retorch/dispatch/StackTensors.h"
#include "retorch/generated/Functions.h"

namespace retorch {
namespace {

// Note [Autocast]
// torch.autocast runs some ops in a lower-precision dtype (matmuls, convolutions: faster, and
// exact enough) and some in float32 (reductions, losses, exp/log on cuda: range or accuracy),
// per device type. As PyTorch's, it is a dispatch key, above Autograd and the Tracer so that
// the casts it makes are recorded (gradients flow back through them to float32 weights): a
// thread with autocast on includes the Autocast key in every dispatch, and ops with a policy in
// ops.yaml (`autocast:`) have a kernel there; every other op falls through it at no cost. The
// kernel casts the call's eligible tensors (float32/float16/bfloat16 on the device type the
// call runs on; float64 never) and redispatches below Autocast with the Autocast key excluded,
// so the ops an autocast op is made of are not cast again. In-place and out= variants have no
// kernel (PyTorch's rule: they run in their tensors' dtype). Casts of float32 leaves that
// require grad (weights) are cached for the region, as PyTorch's `cache_enabled`, keyed by the
// tensor and its version (a weight changed in place is cast again).
struct CachedCast {
  Tensor source;  // keeps the key's address from being reused while the entry lives
  uint32_t version;
  Tensor cast;
};

struct AutocastState {
  bool enabled[2] = {false, false};
  ScalarType dtype[2] = {kBFloat16, kHalf};
  bool cache_enabled = true;
  int nesting = 0;
  std::unordered_map<const void*, CachedCast> cache;
};

AutocastState& state() {
  static thread_local AutocastState s;
  return s;
}

// The state slot of a device type: 0 cpu, 1 cuda, -1 for devices autocast does not cover.
int slot(DeviceType t) { return t == kCPU ? 0 : t == kCUDA ? 1 : -1; }

int checked_slot(DeviceType t, const char* what) {
  int s = slot(t);
  RT_CHECK(s >= 0, what, ": autocast supports the cpu and cuda device types, not ",
           device_type_name(t));
  return s;
}

void sync_dispatch_key() {
  const AutocastState& s = state();
  auto& tls = tls_local_dispatch_key_set();
  if (s.enabled[0] || s.enabled[1]) tls.included = tls.included.add(DispatchKey::Autocast);
  else tls.included = tls.included.remove(DispatchKey::Autocast);
}

bool eligible(const Tensor& t, DeviceType dev) {
  if (!t.defined() || t.device().type != dev) return false;
  ScalarType s = t.scalar_type();
  return s == kFloat || s == kHalf || s == kBFloat16;
}

Tensor cast(const Tensor& t, ScalarType to, DeviceType dev) {
  if (!eligible(t, dev) || t.scalar_type() == to) return t;
  AutocastState& s = state();
  bool cacheable = s.cache_enabled && to == s.dtype[slot(dev)] && t.scalar_type() == kFloat &&
                   t.requires_grad() && t.is_leaf();
  if (!cacheable) return t.to(to);
  auto it = s.cache.find(t.impl());
  if (it != s.cache.end() && it->second.version == t._version()) return it->second.cast;
  Tensor c = t.to(to);
  s.cache[t.impl()] = CachedCast{t, t._version(), c};
  return c;
}

// Calls f on every tensor argument of the call (in tensor lists too), which it may replace.
template <typename F>
void for_each_tensor(Stack& stack, size_t base, F&& f) {
  for (size_t i = base; i < stack.size(); ++i) retorch::for_each_tensor(stack[i], f);
}

// The device type a call runs on: its first tensor's (None when it has no tensor).
std::optional<DeviceType> call_device_type(const Stack& stack, size_t base) {
  for (size_t i = base; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.is_tensor() && v.to_tensor().defined()) return v.to_tensor().device().type;
    if (v.is_tensor_list())
      for (const Tensor& t : v.to_tensor_list())
        if (t.defined()) return t.device().type;
  }
  return std::nullopt;
}

// PyTorch's promote policy: float32 if any eligible tensor is, else the lower-precision dtype.
ScalarType widest(const Stack& stack, size_t base, DeviceType dev, ScalarType lower) {
  auto wide = [&](const Tensor& t) { return eligible(t, dev) && t.scalar_type() == kFloat; };
  for (size_t i = base; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.is_tensor() && wide(v.to_tensor())) return kFloat;
    if (v.is_tensor_list())
      for (const Tensor& t : v.to_tensor_list())
        if (wide(t)) return kFloat;
  }
  return lower;
}

bool first_tensor_eligible(Stack& stack, size_t base, DeviceType dev) {
  for (size_t i = base; i < stack.size(); ++i)
    if (stack[i].is_tensor()) return eligible(stack[i].to_tensor(), dev);
  return false;
}

void apply_policy(const OperatorHandle& op, AutocastPolicy p, DeviceType dev, Stack& stack,
                  size_t base, int dtype_arg) {
  ScalarType lower = state().dtype[slot(dev)];
  switch (p) {
    case AutocastPolicy::kNone: return;
    case AutocastPolicy::kLowerPrecision:
    case AutocastPolicy::kFloat32:
    case AutocastPolicy::kPromote: {
      ScalarType to = p == AutocastPolicy::kLowerPrecision ? lower
                      : p == AutocastPolicy::kFloat32      ? kFloat
                                                           : widest(stack, base, dev, lower);
      for_each_tensor(stack, base, [&](Tensor& t) { t = cast(t, to, dev); });
      return;
    }
    case AutocastPolicy::kFloat32OptDtype:
      // An explicit dtype wins; the op computes in float32 itself (no cast of the input).
      if (dtype_arg >= 0 && stack[base + size_t(dtype_arg)].is_none() &&
          first_tensor_eligible(stack, base, dev))
        stack[base + size_t(dtype_arg)] = IValue(kFloat);
      return;
    case AutocastPolicy::kBanned:
      RT_ERROR(op.qualified_name(), " is unsafe to autocast on ", device_type_name(dev),
               ": its gradients may not be representable in ", dtype_name(lower),
               ". Apply the sigmoid inside the loss instead: binary_cross_entropy_with_logits ",
               "(nn.BCEWithLogitsLoss) is safe to autocast.");
  }
}

}  // namespace

namespace autocast {

bool is_enabled(DeviceType t) {
  int s = slot(t);
  return s >= 0 && state().enabled[s];
}

void set_enabled(DeviceType t, bool enabled) {
  state().enabled[checked_slot(t, "set_autocast_enabled")] = enabled;
  sync_dispatch_key();
}

ScalarType get_dtype(DeviceType t) { return state().dtype[checked_slot(t, "get_autocast_dtype")]; }

void set_dtype(DeviceType t, ScalarType dtype) {
  int s = checked_slot(t, "set_autocast_dtype");
  RT_CHECK(dtype == kHalf || dtype == kBFloat16, "set_autocast_dtype: autocast runs in float16 or ",
           "bfloat16, not ", dtype_name(dtype));
  state().dtype[s] = dtype;
}

bool is_cache_enabled() { return state().cache_enabled; }
void set_cache_enabled(bool enabled) { state().cache_enabled = enabled; }
void clear_cache() { state().cache.clear(); }
uint32_t state_key() {
  const AutocastState& s = state();
  if (!s.enabled[0] && !s.enabled[1]) return 0;
  return uint32_t(s.enabled[0]) | uint32_t(s.enabled[1]) << 1 | uint32_t(s.dtype[0]) << 8 |
         uint32_t(s.dtype[1]) << 16;
}
int increment_nesting() { return ++state().nesting; }
int decrement_nesting() { return --state().nesting; }

AutocastGuard::AutocastGuard(DeviceType t, ScalarType dtype, bool enabled, bool cache_enabled)
    : type_(t), prev_enabled_(is_enabled(t)), prev_dtype_(get_dtype(t)),
      prev_cache_(is_cache_enabled()) {
  set_dtype(t, dtype);
  set_enabled(t, enabled);
  set_cache_enabled(cache_enabled);
  increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (decrement_nesting() == 0) clear_cache();
  set_enabled(type_, prev_enabled_);
  state().dtype[slot(type_)] = prev_dtype_;
  set_cache_enabled(prev_cache_);
}

}  // namespace autocast

KernelFunction make_autocast_kernel(AutocastPolicy cpu, AutocastPolicy cuda, int dtype_arg) {
  return make_boxed_kernel([cpu, cuda, dtype_arg](const OperatorHandle& op, DispatchKeySet ks,
                                                  Stack* stack) {
    size_t base = stack->size() - size_t(op.schema().num_args);
    std::optional<DeviceType> dev = call_device_type(*stack, base);
    AutocastPolicy p = !dev || !autocast::is_enabled(*dev) ? AutocastPolicy::kNone
                       : *dev == kCPU                      ? cpu
                                                           : cuda;
    if (p == AutocastPolicy::kNone) {
      // Not listed for this device: as if the op had no kernel here (its parts may be listed).
      op.redispatch_boxed(ks.below(DispatchKey::Autocast), stack);
      return;
    }
    ExcludeDispatchKeyGuard no_autocast{DispatchKeySet(DispatchKey::Autocast)};
    apply_policy(op, p, *dev, *stack, base, dtype_arg);
    op.redispatch_boxed(ks.below(DispatchKey::Autocast), stack);
  });
}

}  // namespace retorch
