// Thread count for parallel_for.
#include "retorch/backend/cpu/Parallel.h"

#include <atomic>
#include <cstdlib>
#include <thread>

namespace retorch {
namespace {
std::atomic<int> g_threads{0};
}

int get_num_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  const char* env = std::getenv("RETORCH_NUM_THREADS");
  if (!env) env = std::getenv("OMP_NUM_THREADS");
  n = env ? std::atoi(env) : 0;
  if (n <= 0) n = int(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  g_threads = n;
  return n;
}

void set_num_threads(int n) { g_threads = n > 0 ? n : 1; }

}  // namespace retorch
