// retorch::cuda::CUDAGraph over the CUDA backend's graphs (the bridge; no_cuda raises).
#include "retorch/device/CudaGraph.h"

#include "retorch/core/Error.h"
#include "retorch/device/CudaBridge.h"

namespace retorch::cuda {

namespace {
void require_device(const char* fn) {
  RT_CHECK(device_available(kCUDA), "CUDAGraph.", fn,
           ": CUDA graphs need a CUDA device, and this machine or build has none");
}
}  // namespace

CUDAGraph::~CUDAGraph() {
  try {
    if (capturing_) capture_abort();
    reset();
  } catch (...) {  // a destructor does not throw (the runtime may be unloading at exit)
  }
}

void CUDAGraph::capture_begin() {
  require_device("capture_begin");
  RT_CHECK(!capturing_ && graph_ == nullptr, "CUDAGraph.capture_begin: this graph ",
           capturing_ ? "is capturing already" : "holds a capture already (reset() it first)");
  stream_ = current_stream();
  pool_ = detail::cuda_backend_graph_begin(stream_.device().index, stream_.id());
  capturing_ = true;
}

void CUDAGraph::capture_end() {
  RT_CHECK(capturing_, "CUDAGraph.capture_end: no capture is running (call capture_begin)");
  RT_CHECK(current_stream() == stream_, "CUDAGraph.capture_end: the current stream is not the ",
           "one the capture began on");
  capturing_ = false;
  graph_ = detail::cuda_backend_graph_end(stream_.device().index, stream_.id(), pool_);
}

void CUDAGraph::capture_abort() {
  if (!capturing_) return;
  capturing_ = false;
  detail::cuda_backend_graph_abort(stream_.device().index, stream_.id(), pool_);
}

void CUDAGraph::replay() {
  RT_CHECK(graph_ != nullptr, "CUDAGraph.replay: nothing was captured (capture_begin, the work, ",
           "capture_end)");
  const Stream s = current_stream(stream_.device().index);
  detail::cuda_backend_graph_replay(graph_, s.device().index, s.id());
}

void CUDAGraph::reset() {
  if (graph_ == nullptr) return;
  detail::cuda_backend_graph_destroy(graph_);
  graph_ = nullptr;
}

}  // namespace retorch::cuda
