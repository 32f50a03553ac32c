// Optional C libraries opened at run time (NVRTC, NCCL): the first of several names that loads,
// and typed function pointers bound from it, so libretorch neither links nor needs them.
#pragma once
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace retorch {

/// The first of `names` dlopen loads (RTLD_NOW | RTLD_LOCAL), or nullptr; `why` collects each
/// failure's dlerror when given.
inline void* open_first_library(const std::vector<std::string>& names, std::string* why = nullptr) {
  for (const std::string& n : names) {
    if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    if (why) *why += (why->empty() ? "" : "; ") + n + ": " + ::dlerror();
  }
  return nullptr;
}

/// The library the environment variable `env` names when it is set (a user's override), else
/// the first of `names` that loads, as open_first_library.
inline void* open_library(const char* env, const std::vector<std::string>& names,
                          std::string* why = nullptr) {
  if (const char* e = std::getenv(env); e && *e) return open_first_library({e}, why);
  return open_first_library(names, why);
}

/// Sets *f to the function `name` of the dlopen handle h; false when h has none.
template <typename F>
bool bind_symbol(void* h, const char* name, F* f) {
  *f = reinterpret_cast<F>(::dlsym(h, name));
  return *f != nullptr;
}

}  // namespace retorch
