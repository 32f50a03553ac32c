// The profiling session: the Profiler-key fallback that times every op, record_function ranges,
// and the Chrome trace export.
#include "retorch/profiler/Profiler.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "retorch/core/Allocator.h"
#include "retorch/core/Error.h"
#include "retorch/device/CudaBridge.h"
#include "retorch/dispatch/Dispatcher.h"
#include "retorch/runtime/LaunchManager.h"

namespace retorch::profiler {

// Note [Profiler]
// A Profile adds the Profiler key to its thread's included keys; the key is the highest, so every
// op called on that thread (user calls, the ops a composite calls, the backward formulas the
// autograd engine runs there) reaches the boxed fallback below first. It opens an event, runs the
// op below the key (nested op calls open nested events), and closes it: self time is its time
// minus that of the events directly inside it, so a table's self times add up to the profiled
// time without double counting. Without an active profile the key is in no key set and costs
// nothing. Only the starting thread records (its open-event stack needs no lock); finished events
// go to a vector under a mutex, since a profile may be read from another thread. The profile is
// also a launch observer (Note [Launch manager]): each backend kernel launch becomes a "kernel"
// event inside the op that issued it, so an op's self time is its overhead around its kernels.

struct Profile::State {
  ProfilerOptions options;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::thread::id owner = std::this_thread::get_id();
  bool active = true;
  std::atomic<bool> recording{true};  // false in a schedule's wait steps (read by any thread)
  int64_t step_num = 0;
  bool had_key = false;  // the thread already included the Profiler key (left as it was)
  mutable std::mutex mu;
  std::vector<Event> events;
  struct Open {
    Event event;
    int64_t children_ns = 0;
    int64_t children_mem = 0;
  };
  std::vector<MemoryRecord> memory;  // under mu
  std::vector<Open> open;
  std::vector<size_t> kernel_slots;  // the launches open on the owner thread
  // Note [Kernel time on the device]: a CUDA launch returns before its kernel runs, so its host
  // range says little; a timing event recorded before and after it on the stream gives the
  // device's time, read (synchronizing) when the step or the profile ends.
  std::vector<void*> kernel_starts;  // per open launch: its start event, or nullptr
  struct DeviceTiming {
    size_t event;  // index into events
    void* start;
    void* end;
  };
  std::vector<DeviceTiming> device_timings;
  void resolve_device_times() {
    for (const DeviceTiming& t : device_timings) {
      const double ms = detail::cuda_backend_event_elapsed_ms(t.start, t.end);
      detail::cuda_backend_event_destroy(t.start);
      detail::cuda_backend_event_destroy(t.end);
      if (std::isnan(ms)) continue;  // the runtime is gone (exit): the kernel keeps no device time
      std::lock_guard<std::mutex> lock(mu);
      if (t.event < events.size()) events[t.event].device_ns = int64_t(ms * 1e6);
    }
    device_timings.clear();
  }
  std::shared_ptr<runtime::LaunchObserver> launches;  // records kernel events while active

  int64_t now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now() - t0)
        .count();
  }
  size_t begin(std::string name, const char* kind, std::string shapes) {
    Open o;
    o.event.name = std::move(name);
    o.event.kind = kind;
    o.event.shapes = std::move(shapes);
    o.event.thread = 1;
    o.event.depth = int(open.size());
    o.event.start_ns = now();
    open.push_back(std::move(o));
    return open.size() - 1;
  }
  void end(size_t slot) {
    const int64_t t = now();
    // Ranges close innermost first; a range left open by an exception closes with its parent.
    while (open.size() > slot) {
      Open o = std::move(open.back());
      open.pop_back();
      o.event.end_ns = t;
      o.event.self_ns = o.event.duration_ns() - o.children_ns;
      o.event.mem_bytes = o.event.self_mem_bytes + o.children_mem;
      if (!open.empty()) {
        open.back().children_ns += o.event.duration_ns();
        open.back().children_mem += o.event.mem_bytes;
      }
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(std::move(o.event));
    }
  }
};

namespace {

// The active session: a raw pointer for the fallback's check, and an owning pointer that
// record_function ranges share (so a range never outlives its session's state).
std::atomic<Profile::State*> g_active{nullptr};
std::atomic<StackProvider> g_stack_provider{nullptr};
// Never destroyed: a profile may stop during static destruction (Note [RETORCH_PROFILE]).
std::mutex& g_session_mu = *new std::mutex;
std::shared_ptr<Profile::State>& g_session = *new std::shared_ptr<Profile::State>;

std::string shapes_of(const Stack& stack, size_t first) {
  std::ostringstream os;
  os << "[";
  for (size_t i = first; i < stack.size(); ++i) {
    if (i > first) os << ", ";
    const IValue& v = stack[i];
    if (v.is_tensor() && v.to_tensor().defined()) {
      os << "[";
      const Tensor& t = v.to_tensor();
      for (int64_t d = 0; d < t.dim(); ++d) os << (d ? ", " : "") << t.size(d);
      os << "]";
    } else if (v.is_tensor_list()) {
      os << "[";
      const auto& l = v.to_tensor_list();
      for (size_t j = 0; j < l.size(); ++j) os << (j ? ", " : "") << "[...]";
      os << "]";
    } else {
      os << "[]";
    }
  }
  os << "]";
  return os.str();
}

// A timing event recorded now on the stream a CUDA kernel is queued on (Note [Kernel time on
// the device]); resolve_device_times reads and destroys it.
void* timing_event_now(const runtime::LaunchRecord& r) {
  void* e = detail::cuda_backend_event_create(true);
  detail::cuda_backend_event_record(e, -1, r.stream);
  return e;
}

std::string memory_counter_name(Device d) {
  return d.is_cpu() ? "CPU memory" : d.canonical().str() + " memory";
}

// profile_memory: every allocator event joins the timeline; on the profiling thread its bytes
// also count for the innermost open event (its self memory).
void on_memory(const MemoryEvent& m) {
  std::shared_ptr<Profile::State> s;  // any thread: hold the session while using it
  {
    std::lock_guard<std::mutex> lock(g_session_mu);
    s = g_session;
  }
  if (s == nullptr || !s->options.profile_memory || !s->recording) return;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->memory.push_back({s->now(), m.bytes, m.allocated_bytes, m.reserved_bytes, m.device});
  }
  if (std::this_thread::get_id() == s->owner && !s->open.empty())
    s->open.back().event.self_mem_bytes += m.bytes;
}

enum class Phase { kNone, kWarmup, kActive };

// The schedule's phase of a step (no schedule: always recording).
Phase phase_at(const std::optional<Schedule>& sc, int64_t step) {
  if (!sc) return Phase::kActive;
  const int64_t cycle = sc->wait + sc->warmup + sc->active;
  if (cycle <= 0 || (sc->repeat > 0 && step >= sc->repeat * cycle)) return Phase::kNone;
  const int64_t p = step % cycle;
  return p < sc->wait ? Phase::kNone : p < sc->wait + sc->warmup ? Phase::kWarmup : Phase::kActive;
}

// The profiler as a launch observer: each kernel launch on the profiling thread is a "kernel"
// event nested in the op that issued it (its time is the op's time in the kernel).
// Launches run on any thread: the recorder holds its session weakly and locks it per launch.
class KernelRecorder : public runtime::LaunchObserver {
 public:
  explicit KernelRecorder(std::weak_ptr<Profile::State> s) : session_(std::move(s)) {}
  void before(const runtime::LaunchRecord& r) override {
    std::shared_ptr<Profile::State> s = session_.lock();
    if (!s || std::this_thread::get_id() != s->owner || !s->active) return;
    // A launch captured into a CUDA graph runs later (on replay): no clock for it now.
    const bool cuda = s->recording && r.device.is_cuda() && detail::cuda_backend_available() &&
                      !detail::cuda_backend_stream_capturing(-1, r.stream);
    s->kernel_starts.push_back(cuda ? timing_event_now(r) : nullptr);
    if (!s->recording) return s->kernel_slots.push_back(SIZE_MAX);
    s->kernel_slots.push_back(s->begin(r.name, "kernel", ""));
    s->open.back().event.op = r.op;
    if (!r.device.is_cpu()) s->open.back().event.stream = r.stream;
  }
  void after(const runtime::LaunchRecord& r, int64_t) override {
    std::shared_ptr<Profile::State> s = session_.lock();
    if (!s || std::this_thread::get_id() != s->owner || !s->active || s->kernel_slots.empty())
      return;
    void* start = s->kernel_starts.empty() ? nullptr : s->kernel_starts.back();
    if (!s->kernel_starts.empty()) s->kernel_starts.pop_back();
    if (s->kernel_slots.back() != SIZE_MAX) {
      s->end(s->kernel_slots.back());
      if (start) {  // the kernel's event is the last one its end() moved into events
        void* end = timing_event_now(r);
        std::lock_guard<std::mutex> lock(s->mu);
        s->device_timings.push_back({s->events.size() - 1, start, end});
      }
    }
    s->kernel_slots.pop_back();
  }

 private:
  std::weak_ptr<Profile::State> session_;
};

void profiler_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  Profile::State* s = g_active.load(std::memory_order_acquire);
  if (s == nullptr || std::this_thread::get_id() != s->owner || !s->recording)
    return op.redispatch_boxed(ks.below(DispatchKey::Profiler), stack);
  const size_t nargs = size_t(op.schema().num_args);
  std::string shapes;
  if (s->options.record_shapes && stack->size() >= nargs) shapes = shapes_of(*stack, stack->size() - nargs);
  const size_t slot = s->begin("aten::" + std::string(op.schema().name), "op", std::move(shapes));
  // The user's frames go with the ops the user called (not those a composite or a kernel
  // called): the outermost op, or one directly inside a record_function range.
  const bool user_call = slot == 0 || s->open[slot - 1].event.kind == "user_annotation";
  if (s->options.with_stack && user_call) {
    StackProvider provider = g_stack_provider.load();
    s->open[slot].event.stack = provider ? provider() : native_stack();
  }
  struct Close {
    Profile::State* s;
    size_t slot;
    ~Close() { s->end(slot); }
  } close{s, slot};
  op.redispatch_boxed(ks.below(DispatchKey::Profiler), stack);
}

}  // namespace

Profile::Profile(ProfilerOptions options) : state_(std::make_shared<State>()) {
  static std::once_flag once;
  std::call_once(once, [] {
    Dispatcher::singleton().register_fallback(DispatchKey::Profiler, profiler_fallback);
  });
  if (options.schedule) {
    const Schedule& sc = *options.schedule;
    RT_CHECK(sc.wait >= 0 && sc.warmup >= 0 && sc.active > 0 && sc.repeat >= 0,
             "profiler: schedule needs wait >= 0, warmup >= 0, active > 0 and repeat >= 0, got "
             "wait=", sc.wait, " warmup=", sc.warmup, " active=", sc.active, " repeat=", sc.repeat);
  }
  state_->options = options;
  State* expected = nullptr;
  RT_CHECK(g_active.compare_exchange_strong(expected, state_.get()),
           "profiler: a profile is already active; stop it before starting another");
  {
    std::lock_guard<std::mutex> lock(g_session_mu);
    g_session = state_;
  }
  LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
  state_->had_key = tls.included.has(DispatchKey::Profiler);
  tls.included = tls.included | DispatchKeySet(DispatchKey::Profiler);
  state_->launches = std::make_shared<KernelRecorder>(state_);
  runtime::LaunchManager::get().add_observer(state_->launches);
  if (options.profile_memory) set_memory_observer(&on_memory);
  state_->recording = phase_at(options.schedule, 0) != Phase::kNone;
  // With a schedule the steps are ranges from the start: "ProfilerStep#0" until step().
  if (options.schedule && state_->recording) state_->begin("ProfilerStep#0", "user_annotation", "");
}

Profile::~Profile() {
  // A destructor must not throw: a stop that fails (say, the device is gone) ends the profile.
  try {
    if (state_->active && std::this_thread::get_id() == state_->owner) stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "profiler: stopping the profile failed: %s\n", e.what());
  }
}

bool Profile::stop() {
  State& s = *state_;
  if (!s.active) return false;
  RT_CHECK(std::this_thread::get_id() == s.owner,
           "profiler: stop() must run on the thread that started the profile");
  runtime::LaunchManager::get().remove_observer(s.launches);
  if (s.options.profile_memory) set_memory_observer(nullptr);
  s.end(0);  // ranges still open end here
  s.kernel_slots.clear();
  s.kernel_starts.clear();
  s.resolve_device_times();
  s.active = false;
  g_active.store(nullptr, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(g_session_mu);
    g_session.reset();
  }
  if (!s.had_key) {
    LocalDispatchKeySet& tls = tls_local_dispatch_key_set();
    tls.included = tls.included - DispatchKeySet(DispatchKey::Profiler);
  }
  return phase_at(s.options.schedule, s.step_num) == Phase::kActive;
}

bool Profile::step() {
  State& s = *state_;
  RT_CHECK(std::this_thread::get_id() == s.owner,
           "profiler: step() must run on the thread that started the profile");
  if (!s.active) return false;
  const Phase before = phase_at(s.options.schedule, s.step_num);
  s.end(0);  // the step's ranges end with it
  s.resolve_device_times();
  const Phase after = phase_at(s.options.schedule, ++s.step_num);
  const bool ready = before == Phase::kActive && after != Phase::kActive;
  // A new window's recording starts clean: warmup steps are discarded, and the last window's
  // events stay readable until then.
  if ((after == Phase::kWarmup && before != Phase::kWarmup) ||
      (after == Phase::kActive && before != Phase::kActive)) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.events.clear();
    s.memory.clear();
  }
  s.recording = after != Phase::kNone;
  if (s.recording) s.begin("ProfilerStep#" + std::to_string(s.step_num), "user_annotation", "");
  return ready;
}

bool Profile::active() const { return state_->active; }
bool Profile::profiles_memory() const { return state_->options.profile_memory; }

std::vector<MemoryRecord> Profile::memory_events() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->memory;
}

std::vector<Event> Profile::events() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->events;
}

std::string Profile::chrome_trace(const TraceOptions& options) const {
  std::vector<Event> ev = events();
  std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
  });
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  const int pid = int(::getpid());
  // merge_identical: the last event emitted at each depth, extended while the same event
  // follows it directly (a new event at a depth ends the runs below it).
  std::vector<std::pair<size_t, const Event*>> last;
  size_t dropped = 0;
  for (const Event& e : ev) {
    const size_t d = size_t(e.depth);
    if (last.size() <= d) last.resize(d + 1, {SIZE_MAX, nullptr});
    if (options.merge_identical && last[d].second && last[d].second->name == e.name &&
        last[d].second->kind == e.kind && last[d].first != SIZE_MAX) {
      nlohmann::ordered_json& j = events[last[d].first];
      j["dur"] = double(e.end_ns) / 1e3 - j["ts"].get<double>();
      j["args"]["count"] = j["args"].value("count", 1) + 1;
      continue;
    }
    if (options.max_events > 0 && events.size() >= options.max_events) {
      ++dropped;
      continue;
    }
    nlohmann::ordered_json j;
    j["name"] = e.name;
    j["cat"] = e.kind == "op" ? "cpu_op" : e.kind == "kernel" ? "kernel" : "user_annotation";
    j["ph"] = "X";
    j["ts"] = double(e.start_ns) / 1e3;
    j["dur"] = double(e.duration_ns()) / 1e3;
    j["pid"] = pid;
    j["tid"] = e.thread;
    j["args"] = nlohmann::ordered_json::object();
    if (!e.shapes.empty()) j["args"]["Input Dims"] = e.shapes;
    if (!e.stack.empty()) j["args"]["Call stack"] = e.stack;
    if (e.stream >= 0) j["args"]["stream"] = e.stream;
    events.push_back(std::move(j));
    last[d] = {events.size() - 1, &e};
    for (size_t deeper = d + 1; deeper < last.size(); ++deeper) last[deeper] = {SIZE_MAX, nullptr};
  }
  for (const MemoryRecord& m : memory_events()) {  // Perfetto draws these as counter tracks
    nlohmann::ordered_json j;
    j["name"] = memory_counter_name(m.device);
    j["ph"] = "C";
    j["ts"] = double(m.ts_ns) / 1e3;
    j["pid"] = pid;
    j["args"]["allocated"] = m.allocated_bytes;
    j["args"]["reserved"] = m.reserved_bytes;
    events.push_back(std::move(j));
  }
  if (dropped > 0) {
    std::string note = "trace truncated: " + std::to_string(dropped) + " events after the first " +
                       std::to_string(options.max_events) + " dropped (raise max_events, or "
                       "merge identical events)";
    nlohmann::ordered_json j;
    j["name"] = note;
    j["ph"] = "i";
    j["s"] = "g";
    j["ts"] = ev.empty() ? 0.0 : double(ev.back().end_ns) / 1e3;
    j["pid"] = pid;
    j["tid"] = 1;
    events.push_back(std::move(j));
    std::cerr << "retorch.profiler: " << note << "\n";
  }
  nlohmann::ordered_json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ms";
  return doc.dump();
}

void Profile::export_chrome_trace(const std::string& path, const TraceOptions& options) const {
  std::ofstream f(path, std::ios::binary);
  RT_CHECK(f.good(), "profiler: cannot write the trace to '", path, "'");
  f << chrome_trace(options);
  RT_CHECK(f.good(), "profiler: writing the trace to '", path, "' failed");
}

bool is_profiling() { return g_active.load(std::memory_order_relaxed) != nullptr; }

void set_stack_provider(StackProvider provider) { g_stack_provider.store(provider); }

RecordFunction::RecordFunction(std::string name) {
  if (g_active.load(std::memory_order_acquire) == nullptr) return;  // the common case: cheap
  {
    std::lock_guard<std::mutex> lock(g_session_mu);
    state_ = g_session;
  }
  if (!state_ || std::this_thread::get_id() != state_->owner || !state_->recording) {
    state_.reset();
    return;
  }
  slot_ = state_->begin(std::move(name), "user_annotation", "");
}

RecordFunction::~RecordFunction() {
  if (state_ && state_->active) state_->end(slot_);
}

}  // namespace retorch::profiler
