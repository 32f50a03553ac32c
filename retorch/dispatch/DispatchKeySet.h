// DispatchKeySet: a 64-bit set of DispatchKeys; the highest set bit picks the kernel.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>

#include "retorch/core/Device.h"
#include "retorch/dispatch/DispatchKey.h"

namespace retorch {

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(uint64_t raw, int) : repr_(raw) {}
  constexpr DispatchKeySet(DispatchKey k)
      : repr_(k == DispatchKey::Undefined ? 0 : uint64_t(1) << uint8_t(k)) {}
  constexpr DispatchKeySet(std::initializer_list<DispatchKey> ks) {
    for (auto k : ks) repr_ |= DispatchKeySet(k).repr_;
  }

  constexpr bool has(DispatchKey k) const { return (repr_ & DispatchKeySet(k).repr_) != 0; }
  constexpr bool empty() const { return repr_ == 0; }
  constexpr uint64_t raw() const { return repr_; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return DispatchKeySet(repr_ | o.repr_, 0); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return DispatchKeySet(repr_ & o.repr_, 0); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return DispatchKeySet(repr_ & ~o.repr_, 0); }
  constexpr bool operator==(DispatchKeySet o) const { return repr_ == o.repr_; }
  constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return *this - DispatchKeySet(k); }
  /// The highest-priority key in the set (Undefined when empty).
  constexpr DispatchKey highest() const {
    return repr_ == 0 ? DispatchKey::Undefined : DispatchKey(63 - __builtin_clzll(repr_));
  }
  /// Keys strictly below k: what a kernel for k redispatches to.
  constexpr DispatchKeySet below(DispatchKey k) const {
    return DispatchKeySet(repr_ & ((uint64_t(1) << uint8_t(k)) - 1), 0);
  }

 private:
  uint64_t repr_ = 0;
};
static_assert(sizeof(DispatchKeySet) == 8, "DispatchKeySet must stay one machine word");

std::ostream& operator<<(std::ostream& os, DispatchKeySet ks);

/// The backend keys: the ones a device contributes to a tensor's key set.
constexpr DispatchKeySet kBackendKeys{DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta,
                                      DispatchKey::MPS, DispatchKey::XPU};
namespace detail {
extern DispatchKeySet g_device_keys[kNumDeviceTypes];
}
/// The keys of tensors on a device type: its backend key, plus DeviceFallback while the device
/// has no backend here (See Note [Device routing] in retorch/device/DeviceFallback.cpp).
inline DispatchKeySet device_key_set(DeviceType t) { return detail::g_device_keys[int(t)]; }
/// Called by a backend that finds its device at start-up: its tensors then dispatch to it.
void set_device_key_set(DeviceType t, DispatchKeySet ks);

/// Thread-local keys added to (included) and removed from (excluded) every dispatch.
struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
LocalDispatchKeySet& tls_local_dispatch_key_set();

/// Adds keys to the thread-local include set for a scope.
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet ks);
  ~IncludeDispatchKeyGuard();
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet added_;
};

/// Removes keys from every dispatch on this thread for a scope.
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet ks);
  ~ExcludeDispatchKeyGuard();
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet added_;
};

}  // namespace retorch
