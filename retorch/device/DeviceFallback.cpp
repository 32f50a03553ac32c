// The DeviceFallback boxed kernel: runs ops of devices without a backend (or without the op) on
// the best available device and hands the results back; policy, counters and the report.
#include "retorch/device/DeviceFallback.h"
#include "retorch/device/DeviceFallbackUnboxed.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "retorch/core/Error.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/dispatch/Dispatcher.h"
#include "retorch/dispatch/StackTensors.h"
#include "retorch/profiler/Profiler.h"

namespace retorch {

// Note [Device routing]
// A tensor on a device that has no backend here (cuda without the CUDA backend or a GPU; mps
// and xpu always) carries the DeviceFallback key beside its device's key (device_key_set). Its
// storage is host memory; only its TensorImpl says "cuda:0". Every op on it reaches the boxed
// fallback below, which
//  - runs device-independent kernels (composites, views) on the tensors as they are: a
//    composite's inner ops come back here one by one, and views keep their base's device;
//  - otherwise picks the executing device (the first available device in the order, default
//    cuda → mps → cpu, with a kernel for the op), rehomes the tensor arguments there (a new
//    TensorImpl over the same storage: the memory already is host memory, so nothing is
//    copied), replaces device arguments naming the asked device, runs the op, and hands the
//    results back as tensors that say the asked device again (or leaves them on the executing
//    device, per placement). A result that is a rehomed argument (in-place and out= ops) comes
//    back as that argument itself, so identities and version counters hold.
// Autograd sits above this key, so graphs, grads and optimizer state live on the asked device.
// Ops with a CPU kernel reach it through a generated typed kernel at this key that takes the
// common case without boxing (Note [Unboxed device fallback]) and boxes everything else.
// A device that has a backend but lacks one op reaches the same kernel through the
// dispatcher's missing-kernel path (OperatorHandle::lookup_missing); rehoming its memory takes
// that backend's copies, which arrive with it.

namespace {

FallbackPolicy policy_from_env() {
  const char* env = std::getenv("RETORCH_DEVICE_FALLBACK");
  if (env == nullptr || *env == '\0') return FallbackPolicy::kAuto;
  std::string v(env);
  if (v == "auto") return FallbackPolicy::kAuto;
  if (v == "warn") return FallbackPolicy::kWarn;
  if (v == "error") return FallbackPolicy::kError;
  if (v == "off") return FallbackPolicy::kOff;
  std::fprintf(stderr,
               "retorch: ignoring RETORCH_DEVICE_FALLBACK=%s (expected auto, warn, error or off); "
               "using auto\n",
               env);
  return FallbackPolicy::kAuto;
}

std::atomic<FallbackPolicy>& policy_slot() {
  static std::atomic<FallbackPolicy> p{policy_from_env()};
  return p;
}
std::atomic<FallbackPlacement> g_placement{FallbackPlacement::kRequested};
std::atomic<FallbackWarningHandler> g_warning_handler{nullptr};

// The fallback order, packed 4 bits per device type (low bits first; 0xF ends the list), so a
// routed op reads it without a lock.
constexpr uint64_t kOrderEnd = 0xF;
constexpr uint64_t pack_order(std::initializer_list<DeviceType> order) {
  uint64_t packed = 0;
  int shift = 0;
  for (DeviceType t : order) {
    packed |= uint64_t(t) << shift;
    shift += 4;
  }
  return packed | (kOrderEnd << shift);
}
std::atomic<uint64_t> g_order{pack_order({kCUDA, kMPS, kCPU})};

// One thread's counters of one op on one route; created once and never freed, so its thread
// keeps a pointer to it. Only that thread writes the counters, with plain relaxed loads and
// stores (no locked read-modify-write: two of those were a quarter of a fallback's own time);
// readers sum the threads' slots, and reset moves the baseline instead of writing them.
struct Counter {
  std::atomic<int64_t> value{0};
  int64_t base = 0;  // the value at the last reset (under State::mu)
  void add(int64_t v) {
    value.store(value.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
  int64_t read() const { return value.load(std::memory_order_relaxed) - base; }
  void reset() { base = value.load(std::memory_order_relaxed); }
};
struct Slot {
  const OperatorHandle* op;
  Device from, to;
  Counter calls, bytes_moved, bytes_copied, move_ns;
};

struct State {
  std::mutex mu;
  std::set<const OperatorHandle*> warned;
  int next_thread = 0;
  // Keyed by op, asked device, executing device (device_code) and thread (in order of each
  // thread's first fallback), so one route's slots sit together.
  std::map<std::tuple<const OperatorHandle*, int, int, int>, std::unique_ptr<Slot>> stats;
};
State& state() {
  static State* s = new State();  // leaked: ops may run during static destruction
  return *s;
}

DispatchKey backend_key(DeviceType t) {
  switch (t) {
    case kCUDA: return DispatchKey::CUDA;
    case kMPS: return DispatchKey::MPS;
    case kXPU: return DispatchKey::XPU;
    case kMeta: return DispatchKey::Meta;
    default: return DispatchKey::CPU;
  }
}

std::string_view backend_missing_reason(DeviceType t) {
  switch (t) {
    case kCUDA: return "this build of retorch has no CUDA backend or no CUDA device is available";
    case kMPS: return "retorch has no MPS backend";
    case kXPU: return "retorch has no XPU backend";
    default: return "the device has no kernel for it";
  }
}

// device_has_backend, inlined for the routes below.
inline bool has_backend(DeviceType t) {
  return t != kMeta && !device_key_set(t).has(DispatchKey::DeviceFallback);
}

// The device that runs a routed op: the first available in the order with a kernel for it.
Device pick_executing(const OperatorHandle& op, Device asked) {
  for (uint64_t o = g_order.load(std::memory_order_relaxed); (o & kOrderEnd) != kOrderEnd; o >>= 4) {
    const DeviceType t = DeviceType(o & kOrderEnd);
    if (t == kCPU) return Device(kCPU);
    if (t == asked.type || !has_backend(t)) continue;
    if (op.has_kernel(backend_key(t))) return Device(t).canonical();
  }
  return Device(kCPU);
}

int device_code(Device d) { return int(d.type) * 256 + d.index + 1; }

int64_t tensor_bytes(const Tensor& t) { return t.numel() * int64_t(element_size(t.dtype())); }

// A tensor over t's storage that reports device d (zero-copy: See Note [Device routing]).
Tensor rehome(const Tensor& t, Device d, const OperatorHandle& op) {
  const Device home = t.impl()->storage()->device();
  // Host memory can be seen as cpu or as any device without a backend; device memory only as
  // its own device.
  const bool host_view = home.is_cpu() && (d.is_cpu() || !device_has_backend(d.type));
  RT_CHECK(home == d || host_view, op.qualified_name(),
           ": the device fallback cannot move a tensor from ", t.device(), " (memory on ", home,
           ") to ", d, ": no copy between them is available in this build");
  return Tensor(make_intrusive<TensorImpl>(*t.impl(), d));
}

// Note [Fallback copies]
// Memory only its device can read (a backend's device memory: cuda with the CUDA backend) cannot
// be rehomed. The fallback copies such an argument to the executing device instead (a
// contiguous tensor; the transfer is the copy_ kernel of the device, which a backend with its
// own memory must have), runs the op, copies back the arguments the op writes (`Tensor(a!)` in
// its schema) into the caller's tensors (a view's write lands in its base, as the op's own
// would), and copies fresh results to the asked device. Results that are written arguments come
// back as the caller's tensors, as with rehoming. The copies run below autograd and the tracer
// (they are the fallback's business, not the program's); the profiler shows them inside the
// fallback's ranges, and the counters add their bytes to bytes_copied.

// Whether t's memory is host memory (cpu, or a device without a backend: Note [Device routing]).
bool host_memory(const Tensor& t) { return t.impl()->storage()->device().is_cpu(); }

// A contiguous copy of t on d, through the copy_ kernel of the device that owns the memory.
Tensor copy_to(const Tensor& t, Device d) {
  ExcludeDispatchKeyGuard below({DispatchKey::Autograd, DispatchKey::Tracer});
  Tensor c = make_empty(t.sizes(), t.dtype(), d);
  c.copy_(t);
  return c;
}

// The arguments op writes: those whose schema type carries `!` ("Tensor(a!) self"), in
// argument order (the keyword marker `*` is not an argument). Parsed once per op.
const std::vector<bool>& written_args(const OperatorHandle& op) {
  static std::mutex mu;
  static auto& parsed = *new std::map<const OperatorHandle*, std::vector<bool>>;
  std::lock_guard<std::mutex> g(mu);
  auto [it, fresh] = parsed.try_emplace(&op);
  if (!fresh) return it->second;
  const std::string_view sc = op.schema().schema;
  size_t i = sc.find('(');
  int depth = 0;
  std::string arg;
  auto close_arg = [&] {
    const size_t a = arg.find_first_not_of(' '), b = arg.find_last_not_of(' ');
    const std::string trimmed = a == std::string::npos ? "" : arg.substr(a, b - a + 1);
    if (!trimmed.empty() && trimmed != "*")
      it->second.push_back(trimmed.find('!') != std::string::npos);
    arg.clear();
  };
  for (; i != std::string_view::npos && i < sc.size(); ++i) {
    const char ch = sc[i];
    if (ch == '(' || ch == '[') {
      if (depth++ == 0) continue;
    } else if (ch == ')' || ch == ']') {
      if (--depth == 0) {
        close_arg();
        break;
      }
    } else if (ch == ',' && depth == 1) {
      close_arg();
      continue;
    }
    arg += ch;
  }
  return it->second;
}

// The asked device of a call, after PyTorch's same-device rule (cpu scalars may join anything).
Device asked_device(const OperatorHandle& op, const Stack& stack, size_t base,
                    std::optional<Device>* device_arg) {
  std::optional<Device> asked, cpu_tensor;
  auto see = [&](const Tensor& t) {
    if (!t.defined()) return;
    const Device d = t.device();
    if (d.is_cpu()) {
      if (t.dim() > 0 && !cpu_tensor) cpu_tensor = d;
      return;
    }
    if (!asked) asked = d;
    else
      RT_CHECK(*asked == d, op.qualified_name(),
               ": Expected all tensors to be on the same device, but found at least two devices, ",
               *asked, " and ", d, "!");
  };
  for (size_t i = base; i < stack.size(); ++i) {
    const auto& p = stack[i].payload();
    if (auto* t = std::get_if<Tensor>(&p)) see(*t);
    else if (auto* l = std::get_if<std::vector<Tensor>>(&p)) for (const auto& t : *l) see(t);
    else if (auto* ol = std::get_if<std::vector<std::optional<Tensor>>>(&p)) {
      for (const auto& t : *ol) if (t) see(*t);
    } else if (auto* d = std::get_if<Device>(&p)) {
      if (!*device_arg) *device_arg = d->canonical();
    }
  }
  if (asked && cpu_tensor && !*device_arg && !op.allows_mixed_devices())
    RT_ERROR(op.qualified_name(),
             ": Expected all tensors to be on the same device, but found at least two devices, ",
             *asked, " and cpu!");
  if (*device_arg && !(*device_arg)->is_cpu()) return **device_arg;
  return asked.value_or(Device(kCPU));
}

void warn_once(const OperatorHandle& op, Device asked, Device exec) {
  {
    std::lock_guard<std::mutex> g(state().mu);
    if (!state().warned.insert(&op).second) return;
  }
  std::string msg = op.qualified_name() + " has no kernel for " + asked.str() + " here (" +
                    std::string(backend_missing_reason(asked.type)) + "); running it on " +
                    exec.str() + " (device fallback; RETORCH_DEVICE_FALLBACK=error makes this an "
                    "error, =auto silences it)";
  if (FallbackWarningHandler h = g_warning_handler.load()) h(msg);
  else std::fprintf(stderr, "retorch: warning: %s\n", msg.c_str());
}

[[noreturn]] void raise_refused(const OperatorHandle& op, Device asked, FallbackPolicy p) {
  if (p == FallbackPolicy::kOff)
    RT_ERROR_KIND(ErrorKind::kNotImplemented, "Could not run '", op.qualified_name(),
                  "' with arguments from the '", asked, "' device: ",
                  backend_missing_reason(asked.type),
                  ", and the device fallback is off (RETORCH_DEVICE_FALLBACK=off)");
  RT_ERROR_KIND(ErrorKind::kNotImplemented, op.qualified_name(), ": no kernel for ", asked,
                " here (", backend_missing_reason(asked.type),
                "), and the device fallback policy is 'error' (RETORCH_DEVICE_FALLBACK); set it "
                "to 'auto' or 'warn' to run the op on cpu");
}

using Clock = std::chrono::steady_clock;

int64_t elapsed_ns(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

// This thread's counters of a route: a small per-thread cache in front of the locked map.
Slot& slot_for(const OperatorHandle& op, Device from, Device to) {
  struct Cached {
    const OperatorHandle* op = nullptr;
    int from = 0, to = 0;
    Slot* slot = nullptr;
  };
  thread_local Cached cache[16];
  thread_local int thread = -1;
  const int f = device_code(from), t = device_code(to);
  Cached& c = cache[(reinterpret_cast<uintptr_t>(&op) >> 4) & 15];
  if (c.op == &op && c.from == f && c.to == t) return *c.slot;
  std::lock_guard<std::mutex> g(state().mu);
  if (thread < 0) thread = state().next_thread++;
  std::unique_ptr<Slot>& p = state().stats[{&op, f, t, thread}];
  if (!p) {
    p = std::make_unique<Slot>();
    p->op = &op;
    p->from = from;
    p->to = to;
  }
  c = Cached{&op, f, t, p.get()};
  return *p;
}

// Timing every fallback would cost more than the zero-copy moves it measures (four clock reads
// against ~100 ns of work), so one call in kTimedEvery per thread is timed and counted for all.
constexpr unsigned kTimedEvery = 64;

void device_fallback_kernel(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const DispatchKeySet below = ks.below(DispatchKey::DeviceFallback);
  if (op.device_independent()) return op.redispatch_boxed(below, stack);

  const size_t nargs = size_t(op.schema().num_args);
  RT_CHECK(stack->size() >= nargs, op.qualified_name(), ": device fallback got ", stack->size(),
           " arguments, expected ", nargs);
  const size_t base = stack->size() - nargs;
  std::optional<Device> device_arg;
  const Device asked = asked_device(op, *stack, base, &device_arg);
  RT_CHECK_KIND(!asked.is_meta(), ErrorKind::kNotImplemented, "Could not run '",
                op.qualified_name(), "' on the meta device: it has no meta kernel");
  const FallbackPolicy policy = device_fallback();
  if (policy == FallbackPolicy::kError || policy == FallbackPolicy::kOff)
    raise_refused(op, asked, policy);
  const Device exec = pick_executing(op, asked);
  if (policy == FallbackPolicy::kWarn) warn_once(op, asked, exec);

  std::optional<profiler::RecordFunction> range;
  const bool profiling = profiler::is_profiling();
  if (profiling) range.emplace("device_fallback::" + asked.str() + "_to_" + exec.str());
  thread_local unsigned calls_here = 0;
  const bool timed = ++calls_here % kTimedEvery == 0;
  Clock::time_point t0 = timed ? Clock::now() : Clock::time_point();
  int64_t moved = 0;
  // The tensor arguments as the op sees them and as the caller passed them: a result that is
  // one of them (in-place and out= ops, copy_) goes back as the caller's tensor itself. A
  // rehomed argument's original is moved here from the stack, an argument passed as it is
  // leaves its slot undefined: no reference counting (locked instructions) either way.
  // (Most ops have few tensor arguments: inline slots, a vector past them.)
  std::array<std::pair<const TensorImpl*, Tensor>, 6> inline_originals;
  std::vector<std::pair<const TensorImpl*, Tensor>> more_originals;
  size_t n_originals = 0;
  auto remember = [&](const TensorImpl* seen, Tensor&& orig) {
    if (n_originals < inline_originals.size())
      inline_originals[n_originals] = {seen, std::move(orig)};
    else more_originals.emplace_back(seen, std::move(orig));
    ++n_originals;
  };
  // Arguments in device memory, copied to exec (Note [Fallback copies]).
  struct Copied {
    Tensor orig, copy;
    bool written;
  };
  std::vector<Copied> copies;
  int64_t copied = 0;
  auto move = [&](Tensor& t, size_t arg) {
    if (!t.defined()) return;
    if (t.device() == exec || t.device().is_cpu()) {
      remember(t.impl(), Tensor());
      return;
    }
    Tensor r;
    if (host_memory(t) || t.impl()->storage()->device() == exec) {
      r = rehome(t, exec, op);
    } else {
      // The copy is the owning backend's copy_ kernel; without one it would come back here.
      static const OperatorHandle& copy_op = *Dispatcher::singleton().find("copy_");
      const DeviceType home = t.impl()->storage()->device().type;
      RT_CHECK(copy_op.has_kernel(backend_key(home)), op.qualified_name(),
               ": the device fallback cannot move a tensor from ", t.device(), " (memory on ",
               t.impl()->storage()->device(), ") to ", exec,
               ": that device's backend has no copy_ kernel");
      const std::vector<bool>& writes = written_args(op);
      r = copy_to(t, exec);
      copied += tensor_bytes(t);
      copies.push_back({t, r, arg < writes.size() && writes[arg]});
    }
    moved += tensor_bytes(t);
    const TensorImpl* seen = r.impl();
    remember(seen, std::move(t));
    t = std::move(r);
  };
  for (size_t i = base; i < stack->size(); ++i) {
    IValue& v = (*stack)[i];
    if (auto* d = std::get_if<Device>(&v.payload()); d && d->canonical() == asked)
      v = IValue(exec);
    else
      for_each_tensor(v, [&](Tensor& t) { move(t, i - base); });
  }
  range.reset();
  int64_t move_ns = timed ? elapsed_ns(t0) : 0;

  op.redispatch_boxed((below - kBackendKeys) | device_key_set(exec.type), stack);
  for (const Copied& c : copies) {
    if (!c.written) continue;
    ExcludeDispatchKeyGuard guard({DispatchKey::Autograd, DispatchKey::Tracer});
    Tensor(c.orig).copy_(c.copy);
    copied += tensor_bytes(c.copy);
  }

  if (profiling) range.emplace("device_fallback::" + exec.str() + "_to_" + asked.str());
  if (timed) t0 = Clock::now();
  const Device result_device = device_arg.value_or(asked);
  const bool hand_back = g_placement.load(std::memory_order_relaxed) ==
                             FallbackPlacement::kRequested &&
                         !result_device.is_cpu() && result_device != exec;
  auto give_back = [&](Tensor& t) {
    if (!t.defined()) return;
    for (size_t i = 0; i < n_originals; ++i) {
      const auto& [seen, orig] = i < inline_originals.size() ? inline_originals[i]
                                                             : more_originals[i - inline_originals.size()];
      if (t.impl() == seen) {
        if (orig.defined()) t = orig;
        return;
      }
    }
    if (!hand_back || t.device() != exec) return;
    moved += tensor_bytes(t);
    if (device_has_backend(result_device.type)) {
      copied += tensor_bytes(t);
      t = copy_to(t, result_device);
    } else if (t.use_count() == 1 && !t.impl()->autograd_meta()) {
      t.impl()->relabel_device(result_device);  // a fresh result: nothing else sees it
    } else {
      t = rehome(t, result_device, op);
    }
  };
  const size_t nrets = size_t(op.schema().num_returns);
  for (size_t i = stack->size() - std::min(nrets, stack->size()); i < stack->size(); ++i)
    for_each_tensor((*stack)[i], give_back);
  range.reset();
  if (timed) move_ns += elapsed_ns(t0);

  Slot& s = slot_for(op, asked, exec);
  s.calls.add(1);
  s.bytes_moved.add(moved);
  if (copied) s.bytes_copied.add(copied);
  if (timed) s.move_ns.add(move_ns * kTimedEvery);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace detail {

void device_fallback_boxed(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  device_fallback_kernel(op, ks, stack);
}

// Note [Unboxed device fallback] (DeviceFallbackUnboxed.h): the checks of the fast route.
void FastFallback::see(const Tensor& t) {
  if (!t.defined() || !fast_) return;
  const Device d = t.device();
  if (!seen_) {
    asked_ = d;
    seen_ = true;
  }
  fast_ = d == asked_ && !d.is_cpu() && host_memory(t) && n_rehomed_ < kMaxRehomed;
  ++n_rehomed_;  // counts the tensors; hold() records them again from 0
}

bool FastFallback::begin() {
  if (!fast_ || !seen_ || asked_.is_meta() || has_backend(asked_.type)) return false;
  if (policy_slot().load(std::memory_order_relaxed) != FallbackPolicy::kAuto ||
      profiler::is_profiling())
    return false;
  exec_ = pick_executing(op_, asked_);
  if (!exec_.is_cpu()) return false;
  n_rehomed_ = 0;
  thread_local unsigned calls_here = 0;
  timed_ = ++calls_here % kTimedEvery == 0;
  if (timed_) t0_ = now_ns();
  return true;
}

DispatchKeySet FastFallback::exec_keys(DispatchKeySet ks) const {
  return (ks.below(DispatchKey::DeviceFallback) - kBackendKeys) | device_key_set(exec_.type);
}

Tensor FastFallback::hold(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor r(make_intrusive<TensorImpl>(*t.impl(), exec_));
  rehomed_[n_rehomed_++] = {r.impl(), &t};
  moved_ += tensor_bytes(t);
  if (timed_ && n_rehomed_ == 1) move_ns_ = now_ns() - t0_;  // the first rehome, roughly
  return r;
}

Tensor FastFallback::finish(Tensor r) {
  const int64_t t1 = timed_ ? now_ns() : 0;
  if (r.defined()) {
    bool argument = false;
    for (int i = 0; i < n_rehomed_ && !argument; ++i)
      if (rehomed_[i].seen == r.impl()) {
        r = *rehomed_[i].orig;
        argument = true;
      }
    const bool hand_back = g_placement.load(std::memory_order_relaxed) ==
                           FallbackPlacement::kRequested;
    if (!argument && hand_back && r.device() == exec_) {
      moved_ += tensor_bytes(r);
      if (r.use_count() == 1 && !r.impl()->autograd_meta()) r.impl()->relabel_device(asked_);
      else r = rehome(r, asked_, op_);
    }
  }
  Slot& s = slot_for(op_, asked_, exec_);
  s.calls.add(1);
  s.bytes_moved.add(moved_);
  if (timed_) s.move_ns.add((move_ns_ * n_rehomed_ + now_ns() - t1) * kTimedEvery);
  return r;
}

}  // namespace detail

void set_device_fallback(FallbackPolicy policy) { policy_slot().store(policy); }

void set_device_fallback(const std::string& policy) {
  if (policy == "auto") set_device_fallback(FallbackPolicy::kAuto);
  else if (policy == "warn") set_device_fallback(FallbackPolicy::kWarn);
  else if (policy == "error") set_device_fallback(FallbackPolicy::kError);
  else if (policy == "off") set_device_fallback(FallbackPolicy::kOff);
  else RT_CHECK_VALUE(false, "set_device_fallback: expected 'auto', 'warn', 'error' or 'off', got '",
                      policy, "'");
}

FallbackPolicy device_fallback() { return policy_slot().load(std::memory_order_relaxed); }

std::string device_fallback_name(FallbackPolicy policy) {
  switch (policy) {
    case FallbackPolicy::kAuto: return "auto";
    case FallbackPolicy::kWarn: return "warn";
    case FallbackPolicy::kError: return "error";
    case FallbackPolicy::kOff: return "off";
  }
  return "auto";
}

void set_device_fallback_placement(FallbackPlacement placement) { g_placement.store(placement); }
FallbackPlacement device_fallback_placement() { return g_placement.load(); }

void set_device_fallback_order(const std::vector<DeviceType>& order) {
  std::vector<DeviceType> o;
  for (DeviceType t : order) {
    RT_CHECK_VALUE(t != kMeta, "set_device_fallback_order: meta cannot run ops (it has no data)");
    if (t != kCPU && std::find(o.begin(), o.end(), t) == o.end()) o.push_back(t);
  }
  o.push_back(kCPU);
  uint64_t packed = 0;
  for (size_t i = 0; i < o.size(); ++i) packed |= uint64_t(o[i]) << (4 * i);
  g_order.store(packed | (kOrderEnd << (4 * o.size())));
}

std::vector<DeviceType> device_fallback_order() {
  std::vector<DeviceType> out;
  for (uint64_t o = g_order.load(); (o & kOrderEnd) != kOrderEnd; o >>= 4)
    out.push_back(DeviceType(o & kOrderEnd));
  return out;
}

bool device_has_backend(DeviceType type) { return has_backend(type); }

std::vector<FallbackStats> device_fallback_stats() {
  std::vector<FallbackStats> out;
  {
    std::lock_guard<std::mutex> g(state().mu);
    // The threads' slots of one route are neighbours in the map: summed into one row.
    const Slot* row = nullptr;
    for (const auto& [key, slot] : state().stats) {
      const bool same_route = row && row->op == slot->op && row->from == slot->from &&
                              row->to == slot->to;
      if (!same_route) {
        if (!out.empty() && out.back().calls == 0) out.pop_back();
        out.emplace_back();
        out.back().op = slot->op->qualified_name();
        out.back().from = slot->from;
        out.back().to = slot->to;
        row = slot.get();
      }
      FallbackStats& r = out.back();
      r.calls += slot->calls.read();
      r.bytes_moved += slot->bytes_moved.read();
      r.bytes_copied += slot->bytes_copied.read();
      r.move_ns += slot->move_ns.read();
    }
    if (!out.empty() && out.back().calls == 0) out.pop_back();
  }
  std::stable_sort(out.begin(), out.end(), [](const FallbackStats& a, const FallbackStats& b) {
    return a.calls != b.calls ? a.calls > b.calls : a.op < b.op;
  });
  return out;
}

void reset_device_fallback_stats() {
  std::lock_guard<std::mutex> g(state().mu);
  for (auto& [key, slot] : state().stats) {
    slot->calls.reset();
    slot->bytes_moved.reset();
    slot->bytes_copied.reset();
    slot->move_ns.reset();
  }
  state().warned.clear();
}

std::string device_fallback_report() {
  std::vector<FallbackStats> stats = device_fallback_stats();
  std::ostringstream os;
  os << "Device fallback report (policy " << device_fallback_name(device_fallback()) << ")\n";
  if (stats.empty()) {
    os << "  no op fell back\n";
    return os.str();
  }
  size_t w = 2;
  for (const auto& s : stats) w = std::max(w, s.op.size());
  os << "  " << std::left << std::setw(int(w)) << "op" << "  " << std::setw(14) << "route"
     << std::right << std::setw(10) << "calls" << std::setw(12) << "moved" << std::setw(12)
     << "copied" << std::setw(14) << "move time" << "\n";
  int64_t calls = 0, moved = 0, copied = 0, ns = 0;
  for (const auto& s : stats) {
    os << "  " << std::left << std::setw(int(w)) << s.op << "  " << std::setw(14)
       << (s.from.str() + "->" + s.to.str()) << std::right << std::setw(10) << s.calls
       << std::setw(12) << profiler::format_bytes(s.bytes_moved) << std::setw(12)
       << profiler::format_bytes(s.bytes_copied) << std::setw(14) << profiler::format_time(double(s.move_ns))
       << "\n";
    calls += s.calls;
    moved += s.bytes_moved;
    copied += s.bytes_copied;
    ns += s.move_ns;
  }
  os << "  total: " << calls << " fallbacks over " << stats.size() << " ops, "
     << profiler::format_bytes(moved) << " moved (" << profiler::format_bytes(copied)
     << " copied), " << profiler::format_time(double(ns)) << " moving\n";
  return os.str();
}

void set_fallback_warning_handler(FallbackWarningHandler handler) { g_warning_handler.store(handler); }

namespace detail {
// Called by Dispatcher::singleton() once the generated tables exist.
void register_device_fallback(Dispatcher& d) {
  // (Device-independent kernels sit at the DeviceFallback key too: gen.py registers them there.)
  d.register_fallback(DispatchKey::DeviceFallback, &device_fallback_kernel);
  if (const char* env = std::getenv("RETORCH_DEVICE_REPORT"); env && std::string(env) == "1")
    std::atexit([] { std::fputs(device_fallback_report().c_str(), stderr); });
}
}  // namespace detail

}  // namespace retorch
