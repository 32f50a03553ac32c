// The profiler: records every op called through the dispatcher (the Profiler-key fallback) and
// every record_function range while a Profile is active, then prints tables like PyTorch's
// key_averages().table() and Nsight's kernel summary, and exports a Chrome/Perfetto trace.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "retorch/core/Device.h"

namespace retorch::profiler {

/// torch.profiler.schedule: per cycle, `wait` steps unrecorded, `warmup` steps recorded and
/// discarded, `active` steps recorded; `repeat` cycles (0: until the profile stops).
struct Schedule {
  int64_t wait = 0, warmup = 0, active = 1, repeat = 0;
};

struct ProfilerOptions {
  bool record_shapes = false;  // keep each op's input shapes ("[[2, 3], [3]]")
  /// Record allocator events: a memory timeline, and the bytes each op allocates (CPU Mem).
  bool profile_memory = false;
  /// Record the caller's stack with each op (from the stack provider: the Python module installs
  /// one giving the Python frames; without one, the C++ frames of native_stack()).
  bool with_stack = false;
  /// With a schedule, Profile::step() marks step boundaries and recording follows the schedule;
  /// without one every step is recorded.
  std::optional<Schedule> schedule;
};

/// What chrome_trace() keeps: identical consecutive events (same name and nesting, one after
/// the other) merged into one with a "count", and at most max_events events (0: all), the rest
/// dropped with a note in the trace and on stderr.
struct TraceOptions {
  bool merge_identical = false;
  size_t max_events = 1000000;
};

/// One recorded range: an op ("aten::mm"), a kernel launch ("cpu::mm") or a user range
/// (record_function).
struct Event {
  std::string name;
  std::string kind;    // "op", "kernel" or "user_annotation"
  std::string shapes;  // input shapes when record_shapes, else ""
  std::string op;      // a kernel's issuing op ("aten::mm"), else ""
  int64_t mem_bytes = 0, self_mem_bytes = 0;  // allocated minus freed inside it (profile_memory)
  std::vector<std::string> stack;  // with_stack: the user's frames, innermost first
  int64_t start_ns = 0, end_ns = 0;  // since the profile started
  int64_t self_ns = 0;               // minus the events nested directly inside it
  int64_t device_ns = -1;            // a CUDA kernel's time on the device (CUDA events), or -1
  int64_t stream = -1;               // a device kernel's stream id (LaunchRecord::stream), or -1
  uint64_t thread = 0;               // a small per-thread number (1, 2, ...)
  int depth = 0;                     // nesting on its thread (0: outermost)
  int64_t duration_ns() const { return end_ns - start_ns; }
};

/// One allocator event of a profile_memory profile: bytes allocated (> 0) or freed (< 0) and
/// the device allocator's totals after it.
struct MemoryRecord {
  int64_t ts_ns = 0;
  int64_t bytes = 0, allocated_bytes = 0, reserved_bytes = 0;
  Device device = Device(kCPU);  // whose allocator: cpu, or a device's own memory (cuda:0)
};

/// Per-name (and optionally per-shape) statistics of a profile.
struct EventStats {
  std::string name, shapes;
  int64_t count = 0;
  int64_t mem_bytes = 0, self_mem_bytes = 0;
  double total_ns = 0, self_ns = 0, avg_ns = 0, median_ns = 0, min_ns = 0, max_ns = 0,
         stddev_ns = 0;
};

/// How key_averages() sorts: "self_cpu_time_total" (default), "cpu_time_total", "count",
/// "cpu_time_avg", "name"; unknown keys are an error naming the choices.
std::vector<EventStats> sort_stats(std::vector<EventStats> stats, const std::string& sort_by);

/// A profiling session; only one may be active at a time (an error otherwise). Ops are recorded
/// on the thread that started it (where the autograd engine also runs backward).
class Profile {
 public:
  explicit Profile(ProfilerOptions options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  /// Stops recording (idempotent; must run on the starting thread). Returns whether it ended an
  /// active window of the schedule (a trace is ready).
  bool stop();
  /// Ends step N and begins step N + 1 (each recorded step is a "ProfilerStep#N" range); with a
  /// schedule, moves to the next step's phase. Returns whether an active window just ended (a
  /// trace is ready: its events stay readable until the next window begins).
  bool step();
  bool active() const;
  /// Whether it records memory (ProfilerOptions::profile_memory).
  bool profiles_memory() const;
  /// The events recorded so far, in order of their end.
  std::vector<Event> events() const;
  /// Statistics per name (and per input shapes when group_by_input_shape), sorted.
  std::vector<EventStats> key_averages(bool group_by_input_shape = false,
                                       const std::string& sort_by = "self_cpu_time_total") const;
  /// PyTorch-style table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
  /// # of Calls (and Input Shapes when grouped by them); row_limit < 0 prints every row.
  std::string table(const std::string& sort_by = "self_cpu_time_total", int row_limit = -1,
                    bool group_by_input_shape = false) const;
  /// Nsight's kernel summary: Time %, Total Time, Instances, Avg, Med, Min, Max, StdDev, Name,
  /// most expensive first, over the kernel launches' self times, grouped by kernel name or
  /// (`by_op`) by the op that issued them.
  std::string kernel_summary(int row_limit = -1, bool by_op = false) const;
  /// Chrome trace JSON ("X" events with microsecond ts/dur), loadable in Perfetto.
  std::string chrome_trace(const TraceOptions& options = {}) const;
  void export_chrome_trace(const std::string& path, const TraceOptions& options = {}) const;
  /// key_averages() as CSV (times in microseconds), for spreadsheets.
  std::string table_csv(bool group_by_input_shape = false) const;
  /// The allocator events of a profile_memory profile, in order (all threads).
  std::vector<MemoryRecord> memory_events() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// A named range in the active profile (a no-op without one), like torch's record_function.
class RecordFunction {
 public:
  explicit RecordFunction(std::string name);
  ~RecordFunction();
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  std::shared_ptr<Profile::State> state_;
  size_t slot_ = 0;
};

/// Whether a profile is active (one atomic load: for callers that build range names).
bool is_profiling();

/// Returns the user's current call stack, innermost frame first ("file.py(12): fn").
using StackProvider = std::vector<std::string> (*)();
/// Installs the stack provider with_stack profiles use (the Python bindings install one).
void set_stack_provider(StackProvider provider);
/// The calling thread's C++ frames outside libretorch, innermost first, through `main`:
/// "file.cpp(12): function" where the binary has line tables (Note [Native call stacks]).
std::vector<std::string> native_stack();

/// The device allocator's statistics as text, like torch.cuda.memory_summary: allocated and
/// reserved bytes (current, peak, total allocated, total freed) and allocation counts.
std::string memory_summary(Device device = Device(kCPU));
/// Bytes in PyTorch's table units: "512 b", "1.50 Kb", "3.25 Mb", "1.00 Gb".
std::string format_bytes(int64_t bytes);

/// Median and sample standard deviation (n - 1; 0 for fewer than two values).
double median(std::vector<double> v);
double stddev(const std::vector<double>& v);
/// A duration in human units: "850 ns", "12.345 μs", "3.210 ms", "1.500 s".
std::string format_time(double ns);

}  // namespace retorch::profiler
