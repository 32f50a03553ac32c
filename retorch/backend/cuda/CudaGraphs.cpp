// CUDA graphs: a stream's work captured into a graph with a private memory pool, and replayed
// with one launch.
#include <cuda_runtime_api.h>

#include <atomic>

#include "retorch/backend/cuda/CudaRuntime.h"
#include "retorch/core/Error.h"

namespace retorch::cuda_backend {

// Note [CUDA graphs]
// capture_graph_begin starts capturing the work the calling thread queues on a stream (not the
// legacy default stream, which CUDA cannot capture), in relaxed mode so that the caching
// allocator may still cudaMalloc new blocks, and opens a private pool for the capture's
// allocations (Note [CUDA caching allocator]): memory the captured kernels use stays theirs for
// the graph's life, whatever the program allocates between replays. capture_graph_end
// instantiates the graph; a replay launches it on a stream, reading and writing the addresses
// the capture used (inputs are refreshed by copying into the tensors the capture read);
// destroying it returns its pool's blocks to their stream. Work that needs the host during a
// capture (a copy to the cpu, item(), the device fallback's copies) cannot be captured: CUDA
// refuses its stream synchronization with an error naming it, and capture_graph_abort ends the
// broken capture so the stream stays usable.

namespace {
struct CapturedGraph {
  cudaGraphExec_t exec = nullptr;
  int64_t pool = 0;
};
cudaStream_t as_cuda(StreamHandle s) { return static_cast<cudaStream_t>(s); }
}  // namespace

int64_t capture_graph_begin(StreamHandle s) {
  RT_CHECK(s != nullptr,
           "CUDAGraph.capture_begin: CUDA graphs must be captured on a non-default stream (the "
           "legacy default stream cannot be captured): capture under retorch.cuda.stream(s)");
  static std::atomic<int64_t> next_pool{1};
  const int64_t pool = next_pool++;
  check_status(cudaStreamBeginCapture(as_cuda(s), cudaStreamCaptureModeRelaxed),
               "cudaStreamBeginCapture");
  open_graph_pool(pool, s);
  return pool;
}

void capture_graph_abort(StreamHandle s, int64_t pool) {
  stop_graph_capture();
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(as_cuda(s), &g);
  if (g != nullptr) cudaGraphDestroy(g);
  cudaGetLastError();
  close_graph_pool(pool);
}

GraphHandle capture_graph_end(StreamHandle s, int64_t pool) {
  stop_graph_capture();
  cudaGraph_t g = nullptr;
  cudaError_t status = cudaStreamEndCapture(as_cuda(s), &g);
  cudaGraphExec_t exec = nullptr;
  if (status == cudaSuccess) status = cudaGraphInstantiate(&exec, g, 0);
  if (g != nullptr) cudaGraphDestroy(g);
  if (status != cudaSuccess) {
    close_graph_pool(pool);
    check_status(status, "CUDAGraph.capture_end (cudaStreamEndCapture, cudaGraphInstantiate)");
  }
  return new CapturedGraph{exec, pool};
}

void replay_graph(GraphHandle g, StreamHandle s) {
  check_status(cudaGraphLaunch(static_cast<CapturedGraph*>(g)->exec, as_cuda(s)),
               "CUDAGraph.replay (cudaGraphLaunch)");
}

bool stream_capturing(StreamHandle s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(as_cuda(s), &status) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

void destroy_graph(GraphHandle g) {
  auto* graph = static_cast<CapturedGraph*>(g);
  if (graph == nullptr) return;
  cudaGraphExecDestroy(graph->exec);
  cudaGetLastError();
  close_graph_pool(graph->pool);
  delete graph;
}

}  // namespace retorch::cuda_backend
