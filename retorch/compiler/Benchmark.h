// compiler::benchmark: timing of a callable like Triton's do_bench — warm-up and repetition
// counts from an estimate of its runtime, the caches flushed between repetitions, quantiles.
#pragma once
#include <cstddef>
#include <functional>

namespace retorch::compiler {

struct BenchmarkOptions {
  double warmup_ms = 25;     // time spent warming up
  double rep_ms = 100;       // time spent measuring
  bool flush_cache = true;   // overwrite a buffer twice the last-level cache before each run
  int max_reps = 100000;
};

/// Seconds per call: median, 20th/80th percentiles, min, mean, and the counts used.
struct BenchmarkResult {
  double median = 0, p20 = 0, p80 = 0, min = 0, mean = 0;
  int warmup = 0, reps = 0;
};

/// Times fn: 5 calls estimate its runtime, then warmup_ms / estimate warm-up calls and
/// rep_ms / estimate timed calls (at least one each), each after a cache flush when asked.
BenchmarkResult benchmark(const std::function<void()>& fn, const BenchmarkOptions& options = {});

}  // namespace retorch::compiler
