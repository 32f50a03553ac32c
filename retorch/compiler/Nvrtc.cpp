// NVRTC through dlopen: libretorch neither links it nor needs its headers, so builds without
// the CUDA toolkit keep the same compiler and simply report NVRTC as unavailable.
#include "retorch/compiler/Nvrtc.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "retorch/compiler/CodeCache.h"
#include "retorch/core/Error.h"
#include "retorch/core/SharedLibrary.h"

namespace retorch::compiler {

namespace {

// nvrtc.h's types, as its C ABI defines them: results are an enum (0 is success) and a program
// is an opaque pointer.
using Result = int;
using Program = void*;

struct Api {
  void* handle = nullptr;
  std::string why;
  const char* (*error_string)(Result) = nullptr;
  Result (*version)(int*, int*) = nullptr;
  Result (*create)(Program*, const char*, const char*, int, const char* const*,
                   const char* const*) = nullptr;
  Result (*compile)(Program, int, const char* const*) = nullptr;
  Result (*ptx_size)(Program, size_t*) = nullptr;
  Result (*ptx)(Program, char*) = nullptr;
  Result (*log_size)(Program, size_t*) = nullptr;
  Result (*log)(Program, char*) = nullptr;
  Result (*destroy)(Program*) = nullptr;
};

const Api& api() {
  static const Api a = [] {
    Api r;
    r.handle = open_library("RETORCH_NVRTC",
                            {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                             "/usr/local/cuda/lib64/libnvrtc.so"},
                            &r.why);
    if (!r.handle) return r;
    const bool ok = bind_symbol(r.handle, "nvrtcGetErrorString", &r.error_string) &&
                    bind_symbol(r.handle, "nvrtcVersion", &r.version) &&
                    bind_symbol(r.handle, "nvrtcCreateProgram", &r.create) &&
                    bind_symbol(r.handle, "nvrtcCompileProgram", &r.compile) &&
                    bind_symbol(r.handle, "nvrtcGetPTXSize", &r.ptx_size) &&
                    bind_symbol(r.handle, "nvrtcGetPTX", &r.ptx) &&
                    bind_symbol(r.handle, "nvrtcGetProgramLogSize", &r.log_size) &&
                    bind_symbol(r.handle, "nvrtcGetProgramLog", &r.log) &&
                    bind_symbol(r.handle, "nvrtcDestroyProgram", &r.destroy);
    if (!ok) {
      r.why = "the loaded libnvrtc lacks nvrtc functions";
      ::dlclose(r.handle);
      r.handle = nullptr;
    }
    return r;
  }();
  return a;
}

const Api& checked_api() {
  const Api& a = api();
  RT_CHECK(a.handle != nullptr, "NVRTC is not available (", a.why,
           "); install the CUDA toolkit or set RETORCH_NVRTC to libnvrtc.so");
  return a;
}

void check(const Api& a, Result r, const char* what) {
  RT_CHECK(r == 0, "NVRTC: ", what, " failed: ", a.error_string(r));
}

}  // namespace

bool nvrtc_available(std::string* why) {
  const Api& a = api();
  if (why) *why = a.why;
  return a.handle != nullptr;
}

std::string nvrtc_version() {
  const Api& a = checked_api();
  int major = 0, minor = 0;
  check(a, a.version(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string compile_ptx(const std::string& source, const std::string& arch, bool* cache_hit) {
  RT_CHECK(arch.rfind("compute_", 0) == 0 && arch.size() > 8 &&
               arch.find_first_not_of("0123456789", 8) == std::string::npos,
           "compile_ptx: the architecture must be a virtual one like compute_80, not '", arch, "'");
  const Api& a = checked_api();
  const std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17"};
  std::string identity = "nvrtc " + nvrtc_version();
  for (const std::string& o : options) identity += " " + o;
  return cached_build(source, identity, "ptx", [&] {
    Program p = nullptr;
    check(a, a.create(&p, source.c_str(), "retorch_kernels.cu", 0, nullptr, nullptr),
          "nvrtcCreateProgram");
    std::vector<const char*> opts;
    for (const std::string& o : options) opts.push_back(o.c_str());
    const Result rc = a.compile(p, int(opts.size()), opts.data());
    size_t n = 0;
    std::string log;
    if (a.log_size(p, &n) == 0 && n > 1) {
      log.resize(n);
      a.log(p, log.data());
      log.resize(n - 1);
    }
    std::string ptx;
    if (rc == 0 && a.ptx_size(p, &n) == 0) {
      ptx.resize(n);
      a.ptx(p, ptx.data());
      if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    }
    a.destroy(&p);
    RT_CHECK(rc == 0, "NVRTC: compiling the generated CUDA source failed (",
             a.error_string(rc), "):\n", log.substr(0, 4000));
    return ptx;
  }, cache_hit);
}

}  // namespace retorch::compiler
