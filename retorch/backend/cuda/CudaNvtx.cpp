// NVTX ranges and marks (torch.cuda.nvtx) through the toolkit's header-only NVTX 3 (calls are
// no-ops until a tool such as Nsight Systems injects itself, so they need no device), and the
// build's answer to torch.backends.cuda.is_built().
#include <nvtx3/nvToolsExt.h>

#include "retorch/device/CudaBridge.h"

namespace retorch::detail {

bool cuda_backend_built() { return true; }

int cuda_backend_nvtx_range_push(const char* message) { return nvtxRangePushA(message); }
int cuda_backend_nvtx_range_pop() { return nvtxRangePop(); }
uint64_t cuda_backend_nvtx_range_start(const char* message) { return nvtxRangeStartA(message); }
void cuda_backend_nvtx_range_end(uint64_t id) { nvtxRangeEnd(id); }
void cuda_backend_nvtx_mark(const char* message) { nvtxMarkA(message); }

}  // namespace retorch::detail
