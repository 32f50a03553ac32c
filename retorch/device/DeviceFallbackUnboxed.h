// The device fallback's typed fast route (Note [Unboxed device fallback]), instantiated once per
// op by the generated registrations; every case it does not take goes to the boxed fallback.
#pragma once
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "retorch/dispatch/Dispatcher.h"

namespace retorch {

// Note [Unboxed device fallback]
// The boxed fallback (Note [Device routing]) serves every op from one function, at the price of
// boxing: a Stack allocated per call, each argument wrapped in an IValue, the CPU kernel unboxed
// again behind it (~100 ns of a ~280 ns route for a three-tensor linear). The generated
// registrations put a typed kernel at the DeviceFallback key of every op with a CPU kernel
// (functional and in-place forms) that does the common case itself: policy auto, no profile
// running, every tensor argument on the one asked device, which has no backend (host memory),
// cpu executing. It rehomes those arguments, redispatches typed, and hands the result back the
// way the boxed fallback does (an argument comes back as the caller's tensor, a fresh result is
// relabelled in place), counting in the same counters. Anything else (warn and error policies,
// profiles, mixed devices, device arguments, tensor lists, device memory, out= forms) boxes the
// call and takes the boxed fallback, so behaviour is the boxed fallback's in every case.

namespace detail {

/// The boxed fallback (DeviceFallback.cpp).
void device_fallback_boxed(const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

/// One call's state on the fast route; the work is in DeviceFallback.cpp, out of line.
class FastFallback {
 public:
  explicit FastFallback(const OperatorHandle& op) : op_(op) {}
  void see(const Tensor& t);
  void see(const std::optional<Tensor>& t) {
    if (t) see(*t);
  }
  template <typename T>
  void see(const T&) {}
  /// Whether the fast route applies; picks the executing device.
  bool begin();
  DispatchKeySet exec_keys(DispatchKeySet ks) const;
  /// The argument as the executing device sees it.
  Tensor hold(const Tensor& t);
  std::optional<Tensor> hold(const std::optional<Tensor>& t) {
    return t ? std::optional<Tensor>(hold(*t)) : std::nullopt;
  }
  template <typename T>
  const T& hold(const T& v) {
    return v;
  }
  /// The result as the caller sees it; counts the call.
  Tensor finish(Tensor r);

 private:
  static constexpr int kMaxRehomed = 6;
  const OperatorHandle& op_;
  Device asked_{kCPU}, exec_{kCPU};
  bool fast_ = true, seen_ = false, timed_ = false;
  int n_rehomed_ = 0;
  int64_t moved_ = 0, move_ns_ = 0, t0_ = 0;
  struct Rehomed {
    const TensorImpl* seen;  // the argument as the op sees it
    const Tensor* orig;      // as the caller passed it
  };
  Rehomed rehomed_[kMaxRehomed];  // the first n_rehomed_ are set
};

template <typename A>
inline constexpr bool kFastArg = !std::is_same_v<std::decay_t<A>, Device> &&
                                 !std::is_same_v<std::decay_t<A>, std::optional<Device>> &&
                                 !std::is_same_v<std::decay_t<A>, TensorList> &&
                                 !std::is_same_v<std::decay_t<A>, ArrayRef<std::optional<Tensor>>>;

template <typename A>
using Held = std::conditional_t<std::is_same_v<std::decay_t<A>, Tensor>, Tensor,
             std::conditional_t<std::is_same_v<std::decay_t<A>, std::optional<Tensor>>,
                                std::optional<Tensor>, A>>;

}  // namespace detail

/// The DeviceFallback kernel of one op (Note [Unboxed device fallback]).
template <typename R, typename... Args>
R device_fallback_unboxed(const OperatorHandle& op, DispatchKeySet ks, Args... args) {
  if constexpr (std::is_same_v<R, Tensor> && (detail::kFastArg<Args> && ...)) {
    detail::FastFallback f(op);
    (f.see(args), ...);
    if (f.begin()) {
      std::tuple<detail::Held<Args>...> held{f.hold(args)...};
      Tensor r = std::apply(
          [&](auto&... h) { return op.redispatch<R, Args...>(f.exec_keys(ks), h...); }, held);
      return f.finish(std::move(r));
    }
  }
  Stack stack;
  stack.reserve(sizeof...(Args));
  (stack.emplace_back(IValue(args)), ...);
  detail::device_fallback_boxed(op, ks, &stack);
  return ReturnConv<R>::pop(stack);
}

}  // namespace retorch
