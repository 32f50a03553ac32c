// NVRTC, CUDA's run-time compiler, loaded when the toolkit is installed: generated CUDA sources
// (CudaCodegen.cpp) compiled to PTX at run time and cached like the C++ objects.
#pragma once
#include <string>

namespace retorch::compiler {

/// Whether NVRTC could be loaded ($RETORCH_NVRTC, else libnvrtc from the loader's path or the
/// toolkit's lib64); `why` says what was tried when it could not.
bool nvrtc_available(std::string* why = nullptr);

/// NVRTC's version as "major.minor"; throws when it is not available.
std::string nvrtc_version();

/// The PTX of a CUDA source for a virtual architecture ("compute_80", "compute_90"), from the
/// cache when an earlier build verifies (Note [Code cache]). Throws with NVRTC's log when the
/// source does not compile, and when NVRTC is not available.
std::string compile_ptx(const std::string& source, const std::string& arch = "compute_80",
                        bool* cache_hit = nullptr);

}  // namespace retorch::compiler
