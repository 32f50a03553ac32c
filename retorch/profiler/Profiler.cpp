// The profiling session: the Profiler-key fallback that times every op, record_function ranges,
// and the Chrome trace export.
#include "retorch/profiler/Profiler.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "retorch/core/Error.h"
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
  bool had_key = false;  // the thread already included the Profiler key (left as it was)
  mutable std::mutex mu;
  std::vector<Event> events;
  struct Open {
    Event event;
    int64_t children_ns = 0;
  };
  std::vector<Open> open;
  std::vector<size_t> kernel_slots;  // the launches open on the owner thread
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
      if (!open.empty()) open.back().children_ns += o.event.duration_ns();
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(std::move(o.event));
    }
  }
};

namespace {

// The active session: a raw pointer for the fallback's check, and an owning pointer that
// record_function ranges share (so a range never outlives its session's state).
std::atomic<Profile::State*> g_active{nullptr};
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

// The profiler as a launch observer: each kernel launch on the profiling thread is a "kernel"
// event nested in the op that issued it (its time is the op's time in the kernel).
class KernelRecorder : public runtime::LaunchObserver {
 public:
  explicit KernelRecorder(Profile::State* s) : s_(s) {}
  void before(const runtime::LaunchRecord& r) override {
    if (std::this_thread::get_id() != s_->owner || !s_->active) return;
    s_->kernel_slots.push_back(s_->begin(r.name, "kernel", ""));
    s_->open.back().event.op = r.op;
  }
  void after(const runtime::LaunchRecord&, int64_t) override {
    if (std::this_thread::get_id() != s_->owner || !s_->active || s_->kernel_slots.empty()) return;
    s_->end(s_->kernel_slots.back());
    s_->kernel_slots.pop_back();
  }

 private:
  Profile::State* s_;
};

void profiler_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  Profile::State* s = g_active.load(std::memory_order_acquire);
  if (s == nullptr || std::this_thread::get_id() != s->owner)
    return op.redispatch_boxed(ks.below(DispatchKey::Profiler), stack);
  const size_t nargs = size_t(op.schema().num_args);
  std::string shapes;
  if (s->options.record_shapes && stack->size() >= nargs) shapes = shapes_of(*stack, stack->size() - nargs);
  const size_t slot = s->begin("aten::" + std::string(op.schema().name), "op", std::move(shapes));
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
  state_->launches = std::make_shared<KernelRecorder>(state_.get());
  runtime::LaunchManager::get().add_observer(state_->launches);
}

Profile::~Profile() {
  if (state_->active && std::this_thread::get_id() == state_->owner) stop();
}

void Profile::stop() {
  State& s = *state_;
  if (!s.active) return;
  RT_CHECK(std::this_thread::get_id() == s.owner,
           "profiler: stop() must run on the thread that started the profile");
  runtime::LaunchManager::get().remove_observer(s.launches);
  s.end(0);  // ranges still open end here
  s.kernel_slots.clear();
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
}

bool Profile::active() const { return state_->active; }

std::vector<Event> Profile::events() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->events;
}

std::string Profile::chrome_trace() const {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  const int pid = int(::getpid());
  for (const Event& e : this->events()) {
    nlohmann::ordered_json j;
    j["name"] = e.name;
    j["cat"] = e.kind == "op" ? "cpu_op" : e.kind == "kernel" ? "kernel" : "user_annotation";
    j["ph"] = "X";
    j["ts"] = double(e.start_ns) / 1e3;
    j["dur"] = double(e.duration_ns()) / 1e3;
    j["pid"] = pid;
    j["tid"] = e.thread;
    if (!e.shapes.empty()) j["args"]["Input Dims"] = e.shapes;
    events.push_back(std::move(j));
  }
  nlohmann::ordered_json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ms";
  return doc.dump();
}

void Profile::export_chrome_trace(const std::string& path) const {
  std::ofstream f(path, std::ios::binary);
  RT_CHECK(f.good(), "profiler: cannot write the trace to '", path, "'");
  f << chrome_trace();
  RT_CHECK(f.good(), "profiler: writing the trace to '", path, "' failed");
}

bool is_profiling() { return g_active.load(std::memory_order_relaxed) != nullptr; }

RecordFunction::RecordFunction(std::string name) {
  if (g_active.load(std::memory_order_acquire) == nullptr) return;  // the common case: cheap
  {
    std::lock_guard<std::mutex> lock(g_session_mu);
    state_ = g_session;
  }
  if (!state_ || std::this_thread::get_id() != state_->owner) {
    state_.reset();
    return;
  }
  slot_ = state_->begin(std::move(name), "user_annotation", "");
}

RecordFunction::~RecordFunction() {
  if (state_ && state_->active) state_->end(slot_);
}

}  // namespace retorch::profiler
