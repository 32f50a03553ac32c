// Stubs chosen by the build when the CUDA backend is not compiled: CUDA reports unavailable.
namespace retorch {
class Dispatcher;
namespace detail {

/// Registers the CUDA backend's kernels: nothing to register without it.
void register_cuda_backend(Dispatcher&) {}

/// Whether a CUDA device can be used by this build.
bool cuda_backend_available() { return false; }
/// Number of CUDA devices visible to this build.
int cuda_backend_device_count() { return 0; }

}  // namespace detail
}  // namespace retorch
