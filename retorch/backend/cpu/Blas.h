// OpenBLAS thread control shared by the GEMM and convolution kernels.
#pragma once
#include <cblas.h>

namespace retorch::cpu {

/// Runs OpenBLAS on the calling thread only while alive (restoring its thread count after):
/// see Note [Conv threading] and Note [GEMM threading].
class BlasSingleThreaded {
 public:
  explicit BlasSingleThreaded(bool on = true) : prev_(on ? openblas_get_num_threads() : 0) {
    if (prev_ > 1) openblas_set_num_threads(1);
  }
  ~BlasSingleThreaded() {
    if (prev_ > 1) openblas_set_num_threads(prev_);
  }
  BlasSingleThreaded(const BlasSingleThreaded&) = delete;
  BlasSingleThreaded& operator=(const BlasSingleThreaded&) = delete;

 private:
  int prev_;
};

}  // namespace retorch::cpu
