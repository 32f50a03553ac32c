// retorch::cuda::CUDAGraph: torch.cuda.CUDAGraph's capture and replay of a stream's work.
#pragma once
#include <cstdint>

#include "retorch/device/DeviceApi.h"

namespace retorch::cuda {

/// Work queued on the current cuda stream between capture_begin() and capture_end(), captured
/// once and replayed with one launch (Note [CUDA graphs] in backend/cuda/CudaGraphs.cpp). The
/// capture's allocations come from a private pool kept for the graph's life, so a replay
/// reads and writes the tensors the capture did: refresh inputs by copying into them, read
/// results from the tensors the capture returned. Capture on a stream other than the default
/// (retorch.cuda.graph does that). Without a CUDA device every call raises.
class CUDAGraph {
 public:
  CUDAGraph() = default;
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  void capture_begin();
  void capture_end();
  /// Ends a capture after an error in the captured code, discarding it.
  void capture_abort();
  void replay();
  /// Destroys the captured graph (capture_begin may run again).
  void reset();
  bool captured() const { return graph_ != nullptr; }

 private:
  void* graph_ = nullptr;
  int64_t pool_ = 0;
  Stream stream_;
  bool capturing_ = false;
};

}  // namespace retorch::cuda
