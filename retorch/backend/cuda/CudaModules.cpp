// Kernels generated at run time (the compiler's CUDA emitter, built to PTX by NVRTC): loaded as
// CUDA libraries through the runtime API and launched on the current device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

#include "retorch/backend/cuda/CudaRuntime.h"
#include "retorch/core/Error.h"
#include "retorch/device/CudaBridge.h"

namespace retorch::detail {

// Note [Generated CUDA kernels]
// The compiler (Compiler.cpp, target cuda) hands over PTX and kernel names; a module is loaded
// once per PTX text and device and stays loaded for the process (compiled graphs are few and
// small), so the returned kernel handles never dangle. A launch covers `work` items with enough
// blocks to fill every multiprocessor several times; the kernels' grid-stride loops take the
// rest (Note [CUDA kernels]). Launches go on the thread's current stream, like the backend's
// other kernels (Note [CUDA streams]), so they are ordered with the copies the device fallback
// queues.

/// The current device's compute capability as NVRTC's virtual architecture ("compute_90").
std::string cuda_backend_arch() {
  const int dev = cuda_backend::current_device();
  int major = 0, minor = 0;
  cuda_backend::check_status(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute");
  cuda_backend::check_status(
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "cudaDeviceGetAttribute");
  return "compute_" + std::to_string(major) + std::to_string(minor);
}

/// The kernel `name` of a PTX module on the current device, loading the module the first time.
void* cuda_backend_kernel(const std::string& ptx, const std::string& name) {
  static std::mutex mu;
  static std::unordered_map<std::string, cudaLibrary_t> libraries;  // by device and PTX
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = std::to_string(cuda_backend::current_device()) + '\0' + ptx;
  auto it = libraries.find(key);
  if (it == libraries.end()) {
    cudaLibrary_t lib = nullptr;
    cuda_backend::check_status(
        cudaLibraryLoadData(&lib, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0),
        "cudaLibraryLoadData (a generated kernel's PTX)");
    it = libraries.emplace(key, lib).first;
  }
  cudaKernel_t kernel = nullptr;
  cuda_backend::check_status(cudaLibraryGetKernel(&kernel, it->second, name.c_str()),
                             "cudaLibraryGetKernel");
  return reinterpret_cast<void*>(kernel);
}

/// Launches a kernel of cuda_backend_kernel over `work` items, `block` threads a block.
void cuda_backend_launch(void* kernel, int64_t work, int block, void** args) {
  if (work <= 0) return;
  static const int sms = [] {
    int n = 0;
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, cuda_backend::current_device());
    return std::max(n, 1);
  }();
  const int64_t blocks = std::min<int64_t>((work + block - 1) / block, int64_t(sms) * 16);
  cuda_backend::check_status(
      cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(blocks)),
                       dim3(unsigned(block)), args, 0,
                       static_cast<cudaStream_t>(cuda_backend::current_stream())),
      "cudaLaunchKernel (a generated kernel)");
}

}  // namespace retorch::detail
