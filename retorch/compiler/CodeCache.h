// Builds generated C++ into shared objects with the system compiler, caches them in a private
// per-user directory keyed by a hash of source + compiler + flags, and loads them with dlopen.
#pragma once
#include <functional>
#include <memory>
#include <string>

namespace retorch::compiler {

/// A loaded shared object (closed when the last reference goes).
class Library {
 public:
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  /// The address of an `extern "C"` symbol; throws naming it when absent.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  void* handle_;
  std::string path_;
};

/// How the last build_or_load went (for tests and RETORCH_COMPILE_DEBUG).
struct BuildInfo {
  std::string key;        // sha256 of source + compiler identity + flags
  std::string object;     // the .so path
  bool cache_hit = false; // loaded from disk without compiling
  bool rebuilt = false;   // a cached object failed verification and was rebuilt
};

/// The cache directory: $RETORCH_CACHE_DIR, else $XDG_CACHE_HOME/retorch, else
/// ~/.cache/retorch; created with mode 0700 and checked to be owned by this user and private.
std::string cache_dir();

/// The compiler command (RETORCH_CXX, else "c++") and its flags.
std::string compiler_command();

/// Loads the object of `source` from the cache after checking that its recorded sha256
/// matches its bytes and its recorded source matches `source`; otherwise compiles it (into a
/// temporary name, renamed into place) and loads that. Throws with the compiler's output when
/// the build fails.
std::shared_ptr<Library> build_or_load(const std::string& source, BuildInfo* info = nullptr);

/// A built text artifact (PTX from NVRTC) cached like the objects (Note [Code cache]):
/// <key>.<ext> next to its source and digest, key = sha256(source, identity); a cached one is
/// used only when both verify, else `build()` makes it again.
std::string cached_build(const std::string& source, const std::string& identity,
                         const std::string& ext, const std::function<std::string()>& build,
                         bool* cache_hit = nullptr);

/// sha256 of bytes, as 64 hex digits.
std::string sha256_hex(const std::string& bytes);

}  // namespace retorch::compiler
