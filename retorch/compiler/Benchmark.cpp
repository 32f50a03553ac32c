// The do_bench-style harness behind compiler::benchmark.
#include "retorch/compiler/Benchmark.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

namespace retorch::compiler {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Twice the last-level cache (32 MiB when the system does not say), so a flush evicts it; at
// most 64 MiB: in a VM the system may report the whole socket's cache (256 MiB on this
// project's EPYC machines, of which a guest sees 32), and a 512 MiB flush per run costs more
// than most calls measured.
std::vector<char>& flush_buffer() {
  static std::vector<char> buf = [] {
    long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t bytes = std::min(l3 > 0 ? size_t(l3) * 2 : size_t(32) << 20, size_t(64) << 20);
    return std::vector<char>(bytes, 1);
  }();
  return buf;
}

void flush() {
  std::vector<char>& b = flush_buffer();
  for (size_t i = 0; i < b.size(); i += 64) b[i] = char(b[i] + 1);
}

double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(pos);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

}  // namespace

BenchmarkResult benchmark(const std::function<void()>& fn, const BenchmarkOptions& options) {
  fn();  // first call: compiles, allocates, faults pages in
  // The estimate times the calls only: a flush of a large last-level cache can take longer than
  // the call, and the budgets (warmup_ms, rep_ms) are for calls.
  double spent = 0;
  for (int i = 0; i < 5; ++i) {
    if (options.flush_cache) flush();
    double s = now();
    fn();
    spent += now() - s;
  }
  const double estimate = std::max(spent / 5, 1e-9);
  BenchmarkResult r;
  r.warmup = std::clamp(int(options.warmup_ms * 1e-3 / estimate), 1, options.max_reps);
  r.reps = std::clamp(int(options.rep_ms * 1e-3 / estimate), 1, options.max_reps);
  for (int i = 0; i < r.warmup; ++i) fn();
  std::vector<double> times;
  times.reserve(size_t(r.reps));
  for (int i = 0; i < r.reps; ++i) {
    if (options.flush_cache) flush();
    double s = now();
    fn();
    times.push_back(now() - s);
  }
  std::sort(times.begin(), times.end());
  r.median = quantile(times, 0.5);
  r.p20 = quantile(times, 0.2);
  r.p80 = quantile(times, 0.8);
  r.min = times.front();
  r.mean = std::accumulate(times.begin(), times.end(), 0.0) / double(times.size());
  return r;
}

}  // namespace retorch::compiler
