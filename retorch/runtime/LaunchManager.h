// The launch manager: every backend kernel launch (a CPU op's kernel now, CUDA kernels later)
// becomes a LaunchRecord that observers see before and after it runs, and a capture records a
// sequence of launches into a LaunchGraph that replays them without dispatch.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "retorch/core/Device.h"
#include "retorch/core/Tensor.h"

namespace retorch::runtime {

/// One kernel launch: what ran, where, on what.
struct LaunchRecord {
  std::string name;     // "cpu::mm" (the device's kernel of the op)
  std::string op;       // the op that issued it ("aten::mm", as the profiler names ops)
  Device device;
  int64_t stream = 0;   // the stream it was queued on: its device's current stream id (cpu: 0)
  int64_t range = 0;    // work items: the elements of its largest tensor argument or result
  int64_t arg_bytes = 0;  // bytes of its tensor arguments
  std::vector<std::vector<int64_t>> shapes;  // its tensor arguments' shapes
};

/// Sees each launch before and after it runs (after: with its duration on the host clock).
class LaunchObserver {
 public:
  virtual ~LaunchObserver() = default;
  virtual void before(const LaunchRecord&) {}
  virtual void after(const LaunchRecord&, int64_t /*duration_ns*/) {}
};

/// A captured sequence of launches: the same kernels on the same buffers, in the same order.
class LaunchGraph {
 public:
  /// Runs the launches again, calling each kernel directly (no dispatch), and writes each
  /// result into the tensor the capture returned for it, so tensors captured as outputs see
  /// the new values (like CUDA graphs' static outputs). Random ops draw new numbers.
  void replay() const;
  size_t size() const;
  /// The launches' records, in order.
  std::vector<LaunchRecord> records() const;

  struct Launch;
  std::vector<std::shared_ptr<Launch>> launches;
};

/// Observers and capture for all devices' launches (one manager; records name their device).
class LaunchManager {
 public:
  static LaunchManager& get();
  void add_observer(std::shared_ptr<LaunchObserver> o);
  void remove_observer(const std::shared_ptr<LaunchObserver>& o);
  /// Runs fn, recording (and running) every launch it makes on this thread.
  LaunchGraph capture(const std::function<void()>& fn);

  struct State;

 private:
  LaunchManager();
  std::shared_ptr<State> state_;
};

/// A launch observer that counts launches per kernel name (for tests and quick checks).
class CountingObserver : public LaunchObserver {
 public:
  void before(const LaunchRecord& r) override;
  int64_t count(const std::string& name) const;
  int64_t total() const;
  std::vector<LaunchRecord> records() const;

 private:
  mutable std::mutex mu_;
  std::vector<LaunchRecord> records_;
};

}  // namespace retorch::runtime
