// Atomic file replacement: write a temp file beside the target, fsync, rename over it.
#pragma once
#include <cstdio>
#include <functional>
#include <string>

namespace retorch::io {

/// Writes `path` through `writer` so readers see the old file or the complete new one, never a
/// partial one; if writer throws, the temp file is removed and the old file is left untouched.
void atomic_write(const std::string& path, const std::function<void(std::FILE*)>& writer);

/// fwrite that throws an error naming `path` when fewer than n bytes were written.
void write_all(std::FILE* f, const void* data, size_t n, const std::string& path);

}  // namespace retorch::io
