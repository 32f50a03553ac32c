// parallel_for: splits [begin, end) into chunks run on OpenMP threads when the work is large.
#pragma once
#include <cstdint>
#include <exception>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace retorch {

/// Number of threads kernels may use (RETORCH_NUM_THREADS or all cores).
int get_num_threads();
void set_num_threads(int n);

/// Calls f(chunk_begin, chunk_end) over [begin, end); runs in parallel only if the range
/// exceeds grain_size, so small ops pay no thread start-up.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int nthreads = get_num_threads();
#ifdef _OPENMP
  if (n > grain_size && nthreads > 1 && !omp_in_parallel()) {
    int64_t max_chunks = (n + grain_size - 1) / (grain_size > 0 ? grain_size : 1);
    int use = int(max_chunks < nthreads ? max_chunks : nthreads);
    std::exception_ptr err;
    std::mutex mu;
#pragma omp parallel num_threads(use)
    {
      int tid = omp_get_thread_num();
      int nt = omp_get_num_threads();
      int64_t chunk = (n + nt - 1) / nt;
      int64_t b = begin + tid * chunk;
      int64_t e = b + chunk < end ? b + chunk : end;
      if (b < e) {
        try {
          f(b, e);
        } catch (...) {
          std::lock_guard<std::mutex> g(mu);
          if (!err) err = std::current_exception();
        }
      }
    }
    if (err) std::rethrow_exception(err);
    return;
  }
#endif
  (void)nthreads;
  f(begin, end);
}

}  // namespace retorch
