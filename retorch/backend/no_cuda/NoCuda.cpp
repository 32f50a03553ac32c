// Stubs chosen by the build when the CUDA backend is not compiled: CUDA reports unavailable.
namespace retorch::detail {

/// Whether a CUDA device can be used by this build.
bool cuda_backend_available() { return false; }
/// Number of CUDA devices visible to this build.
int cuda_backend_device_count() { return 0; }

}  // namespace retorch::detail
