// The launch manager: the dispatcher's launch hook, observers, capture into a LaunchGraph and
// its replay.
#include "retorch/runtime/LaunchManager.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "retorch/autograd/GradMode.h"
#include "retorch/core/Error.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/dispatch/DirectKernel.h"
#include "retorch/dispatch/Dispatcher.h"

namespace retorch::runtime {

// Note [Launch manager]
// Every backend kernel call passes the dispatcher's launch check (Note [Launch hook]); while this
// manager has observers or a capture runs, it installs the hook, which turns the call into a
// LaunchRecord (kernel name, issuing op, device, stream, range, argument bytes and shapes),
// shows it to the observers before and after (with its host-clock duration) and runs it. A
// capture also keeps each outermost launch's kernel, dispatch keys, argument values and
// results; replay calls the kernels directly on the same arguments — no key computation, no
// autograd or profiler layers — and writes each result into the tensor the capture returned, so
// a captured sequence reads and writes the same buffers each time, like a CUDA graph. (A few CPU
// kernels still call helper ops through the dispatcher — a reduction's permute — and those
// dispatch on replay too.) On CPU a launch is synchronous; a device launch records the stream it
// queues on, the thread's current stream of the device (Note [CUDA streams]), and with the CUDA
// backend returns before its kernel runs.
//
// Note [Direct replay]
// How replay calls a launch, cheapest first. (1) Most backend kernels are written in out form,
// `f(args..., Tensor& out)`, and the generated registration gives each functional op's one a
// direct entry (retorch/dispatch/DirectKernel.h): replay calls it on the captured argument
// values with the captured result as `out`, so the kernel writes that buffer itself — no boxed
// stack, no adapter, no fresh tensor, no copy. (2) Otherwise, where the op has an out= overload
// with a kernel for the same backend (the CUDA backend registers its kernels by hand, out forms
// included), replay runs that one boxed with the captured result as `out`. (3) Otherwise it runs
// the op's own kernel boxed and copies each result into the captured one. (1) and (2) need a
// result that is a tensor of its own, not an input's memory. A three-op graph on 16 floats,
// `(a + b) * a` then relu (`bench_overhead --benchmark_filter='Replay|EagerThree'`, Zen 4):
// through (3) 770 ns against eager's 610; through (2) for add and mul, with one stack per
// thread, 487-518 against eager's 443-450 (relu, without an out= overload, still took (3));
// through (1) 276-286 against eager's 478-480 in the same runs.

struct LaunchGraph::Launch {
  const OperatorHandle* op = nullptr;
  KernelFunction kernel;
  DispatchKeySet ks;
  Stack inputs;
  std::vector<IValue> outputs;
  LaunchRecord record;
  // What replay calls instead, when the op has it (Note [Direct replay]): its direct kernel,
  // else its out= form.
  DirectKernel direct = nullptr;
  const OperatorHandle* out_op = nullptr;
  KernelFunction out_kernel;
};

struct LaunchManager::State {
  std::mutex mu;
  std::vector<std::shared_ptr<LaunchObserver>> observers;
  int captures = 0;
  void update_hook();
};

namespace {

thread_local LaunchGraph* tls_capture = nullptr;
thread_local int tls_launch_depth = 0;  // launches running on this thread (a kernel may launch)

LaunchManager::State& state();

LaunchRecord make_record(const OperatorHandle& op, DispatchKeySet ks, const Stack& stack) {
  LaunchRecord r;
  switch ((ks & kBackendKeys).highest()) {
    case DispatchKey::CUDA: r.device = Device(kCUDA, 0); break;
    case DispatchKey::MPS: r.device = Device(kMPS, 0); break;
    case DispatchKey::XPU: r.device = Device(kXPU, 0); break;
    case DispatchKey::Meta: r.device = Device(kMeta); break;
    default: r.device = Device(kCPU); break;
  }
  if (r.device.has_index()) r.stream = device_api::current_stream(r.device.type, -1).id();
  r.name = std::string(device_type_name(r.device.type)) + "::" + std::string(op.schema().name);
  r.op = "aten::" + std::string(op.schema().name);
  const size_t nargs = std::min(stack.size(), size_t(op.schema().num_args));
  for (size_t i = stack.size() - nargs; i < stack.size(); ++i) {
    if (!stack[i].is_tensor() || !stack[i].to_tensor().defined()) continue;
    const Tensor& t = stack[i].to_tensor();
    r.shapes.push_back(t.sizes().vec());
    r.arg_bytes += t.numel() * int64_t(t.element_size());
    r.range = std::max(r.range, t.numel());
  }
  return r;
}

// Whether the launch's one result is a tensor of its own that replay can hand the kernel as
// `out`: defined, contiguous, and not one of the inputs' memory (an op that returned its input,
// or a view of it).
bool result_is_own(const LaunchGraph::Launch& l) {
  if (l.op->schema().num_returns != 1 || l.outputs.size() != 1 || !l.outputs[0].is_tensor())
    return false;
  const Tensor& result = l.outputs[0].to_tensor();
  if (!result.defined() || !result.is_contiguous()) return false;
  for (const IValue& v : l.inputs)
    if (v.is_tensor() && v.to_tensor().defined() &&
        v.to_tensor().impl()->storage().get() == result.impl()->storage().get())
      return false;
  return true;
}

// Sets what replay calls (Note [Direct replay]): l.direct, or l.out_op and l.out_kernel (the
// op's out= form: its arguments and then `out`, one result, with a kernel for the backend).
void find_replay_form(LaunchGraph::Launch& l) {
  if (!result_is_own(l)) return;
  const DispatchKey backend = (l.ks & kBackendKeys).highest();
  l.direct = direct_kernel(*l.op, backend);
  if (l.direct) return;
  const OpSchema& s = l.op->schema();
  std::string name(s.name);
  name += s.overload.empty() ? ".out" : "." + std::string(s.overload) + "_out";
  const OperatorHandle* out = Dispatcher::singleton().find(name);
  if (out == nullptr || out->schema().num_args != s.num_args + 1 ||
      out->schema().num_returns != 1)
    return;
  if (!out->has_kernel(backend)) return;
  l.out_op = out;
  l.out_kernel = out->kernel(backend);
}

void launch_hook(const OperatorHandle& op, const KernelFunction& k, DispatchKeySet ks,
                 Stack* stack) {
  std::vector<std::shared_ptr<LaunchObserver>> observers;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    observers = state().observers;
  }
  // A capture keeps the outermost launches: a kernel that calls other ops relaunches them.
  LaunchGraph* capture = tls_launch_depth == 0 ? tls_capture : nullptr;
  struct Depth {
    Depth() { ++tls_launch_depth; }
    ~Depth() { --tls_launch_depth; }
  } depth;
  if (observers.empty() && capture == nullptr) return run_kernel(op, k, ks, stack);
  LaunchRecord r = make_record(op, ks, *stack);
  std::shared_ptr<LaunchGraph::Launch> l;
  if (capture) {
    l = std::make_shared<LaunchGraph::Launch>();
    l->op = &op;
    l->kernel = k;
    l->ks = ks;
    l->inputs.assign(stack->end() - std::ptrdiff_t(op.schema().num_args), stack->end());
  }
  for (const auto& o : observers) o->before(r);
  const auto t0 = std::chrono::steady_clock::now();
  run_kernel(op, k, ks, stack);
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  for (const IValue& v : *stack)  // results: the range covers the largest of them too
    if (v.is_tensor() && v.to_tensor().defined()) r.range = std::max(r.range, v.to_tensor().numel());
  if (capture) {
    l->outputs.assign(stack->end() - std::ptrdiff_t(op.schema().num_returns), stack->end());
    l->record = r;
    find_replay_form(*l);
    capture->launches.push_back(std::move(l));
  }
  for (const auto& o : observers) o->after(r, ns);
}

LaunchManager::State& state() {
  static LaunchManager::State* s = new LaunchManager::State();
  return *s;
}

// Writes a replayed result into the tensor the capture returned for it.
void write_into(const Tensor& dst, const Tensor& src) {
  if (!dst.defined() || !src.defined() || dst.impl() == src.impl()) return;
  if (dst.impl()->data() == src.impl()->data()) return;  // in place, or a view of the same memory
  if (dst.dtype() == src.dtype() && dst.sizes().equals(src.sizes()) && dst.is_contiguous() &&
      src.is_contiguous()) {
    std::memcpy(dst.impl()->data(), src.impl()->data(), size_t(src.numel() * src.element_size()));
    return;
  }
  NoGradGuard no_grad;
  const_cast<Tensor&>(dst).copy_(src);
}

}  // namespace

void LaunchManager::State::update_hook() {
  set_launch_hook(observers.empty() && captures == 0 ? nullptr : &launch_hook);
}

LaunchManager::LaunchManager() = default;

LaunchManager& LaunchManager::get() {
  static LaunchManager m;
  return m;
}

void LaunchManager::add_observer(std::shared_ptr<LaunchObserver> o) {
  RT_CHECK(o != nullptr, "launch manager: add_observer got a null observer");
  std::lock_guard<std::mutex> lock(state().mu);
  state().observers.push_back(std::move(o));
  state().update_hook();
}

void LaunchManager::remove_observer(const std::shared_ptr<LaunchObserver>& o) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto& v = state().observers;
  v.erase(std::remove(v.begin(), v.end(), o), v.end());
  state().update_hook();
}

LaunchGraph LaunchManager::capture(const std::function<void()>& fn) {
  RT_CHECK(tls_capture == nullptr, "launch manager: this thread is already capturing");
  LaunchGraph g;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    ++state().captures;
    state().update_hook();
  }
  struct End {
    ~End() {
      tls_capture = nullptr;
      std::lock_guard<std::mutex> lock(state().mu);
      --state().captures;
      state().update_hook();
    }
  } end;
  tls_capture = &g;
  fn();
  return g;
}

void LaunchGraph::replay() const {
  // One stack per thread (a graph may replay on several threads), its capacity kept between
  // launches and replays: a fresh one per launch was an allocation per op.
  thread_local Stack stack;
  for (const auto& l : launches) {
    if (l->direct) {  // the kernel writes the captured result's buffer itself
      const Tensor& result = l->outputs[0].to_tensor();
      Tensor out = result;
      l->direct(l->inputs.data(), out);
      if (out.impl() != result.impl()) write_into(result, out);  // it allocated after all
      result.impl()->bump_version();
      continue;
    }
    stack.assign(l->inputs.begin(), l->inputs.end());
    if (l->out_op) {  // writes the captured result's buffer itself
      stack.push_back(l->outputs[0]);
      run_kernel(*l->out_op, l->out_kernel, l->ks, &stack);
      continue;
    }
    run_kernel(*l->op, l->kernel, l->ks, &stack);
    const size_t n = l->outputs.size();
    RT_CHECK(stack.size() >= n, "launch graph: ", l->record.name, " returned too few values");
    for (size_t i = 0; i < n; ++i) {
      const IValue& got = stack[stack.size() - n + i];
      const IValue& want = l->outputs[i];
      if (got.is_tensor() && want.is_tensor()) {
        write_into(want.to_tensor(), got.to_tensor());
      } else if (got.is_tensor_list() && want.is_tensor_list()) {
        const auto& a = want.to_tensor_list();
        const auto& b = got.to_tensor_list();
        for (size_t j = 0; j < a.size() && j < b.size(); ++j) write_into(a[j], b[j]);
      }
    }
  }
  stack.clear();  // keeps no tensor alive past the replay
}

size_t LaunchGraph::size() const { return launches.size(); }

std::vector<LaunchRecord> LaunchGraph::records() const {
  std::vector<LaunchRecord> r;
  for (const auto& l : launches) r.push_back(l->record);
  return r;
}

void CountingObserver::before(const LaunchRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  records_.push_back(r);
}

int64_t CountingObserver::count(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const LaunchRecord& r : records_) n += r.name == name;
  return n;
}

int64_t CountingObserver::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int64_t(records_.size());
}

std::vector<LaunchRecord> CountingObserver::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

}  // namespace retorch::runtime
