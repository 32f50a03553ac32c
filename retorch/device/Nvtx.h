// NVTX ranges and marks for Nsight Systems timelines (torch.cuda.nvtx): no-ops until a tool
// attaches; without the CUDA backend they raise, as torch's CPU builds do.
#pragma once
#include <cstdint>
#include <string>

#include "retorch/device/CudaBridge.h"

namespace retorch::cuda::nvtx {

/// Opens a nested range; returns its depth (0 for the outermost).
inline int range_push(const std::string& message) {
  return detail::cuda_backend_nvtx_range_push(message.c_str());
}
/// Closes the innermost range; returns the depth it had.
inline int range_pop() { return detail::cuda_backend_nvtx_range_pop(); }
/// Opens a range that may end on another thread; returns its id for range_end.
inline uint64_t range_start(const std::string& message) {
  return detail::cuda_backend_nvtx_range_start(message.c_str());
}
inline void range_end(uint64_t id) { detail::cuda_backend_nvtx_range_end(id); }
/// An instantaneous event.
inline void mark(const std::string& message) { detail::cuda_backend_nvtx_mark(message.c_str()); }

}  // namespace retorch::cuda::nvtx
