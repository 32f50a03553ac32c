// Stubs chosen by the build when the CUDA backend is not compiled: CUDA reports unavailable.
#include "retorch/core/Device.h"

namespace retorch::cuda {

/// Whether a CUDA device can be used by this build.
bool is_available() { return false; }
/// Number of CUDA devices visible to this build.
int device_count() { return 0; }

}  // namespace retorch::cuda
