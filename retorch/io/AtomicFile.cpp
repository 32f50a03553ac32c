// Atomic file replacement (temp file + fsync + rename + directory fsync).
#include "retorch/io/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "retorch/core/Error.h"

namespace retorch::io {

namespace {

std::string errno_text() { return std::strerror(errno); }

// Note [Atomic write]
// rename(2) within one file system replaces the target atomically, so the temp file must live in
// the target's directory. The data is fsynced before the rename (otherwise a crash could leave
// the new name pointing at an empty file) and the directory after it (so the rename itself is
// durable). Until the rename, the old target is never opened for writing.
void fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // some file systems do not allow opening directories; the data is synced
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_all(std::FILE* f, const void* data, size_t n, const std::string& path) {
  if (n == 0) return;
  size_t written = std::fwrite(data, 1, n, f);
  RT_CHECK(written == n, "failed writing '", path, "': wrote ", written, " of ", n,
           " bytes (", errno_text(), ")");
}

void atomic_write(const std::string& path, const std::function<void(std::FILE*)>& writer) {
  namespace fs = std::filesystem;
  fs::path target(path);
  RT_CHECK(!target.filename().empty(), "atomic_write: '", path, "' does not name a file");
  fs::path dir = target.parent_path();
  std::string dir_str = dir.empty() ? std::string(".") : dir.string();
  std::string templ = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  RT_CHECK(fd >= 0, "cannot create a temporary file in '", dir_str, "' to write '", path,
           "': ", errno_text());
  std::string tmp(name.data());
  // Keep the target's permissions when replacing it; mkstemp's 0600 otherwise.
  struct stat st;
  ::fchmod(fd, ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644);
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    std::string err = errno_text();
    ::close(fd);
    ::unlink(tmp.c_str());
    RT_ERROR("cannot open temporary file '", tmp, "': ", err);
  }
  try {
    writer(f);
    RT_CHECK(!std::ferror(f), "failed writing '", path, "' (via temporary file '", tmp, "')");
    RT_CHECK(std::fflush(f) == 0, "failed flushing '", tmp, "': ", errno_text());
    RT_CHECK(::fsync(::fileno(f)) == 0, "failed fsync of '", tmp, "': ", errno_text());
  } catch (...) {
    std::fclose(f);
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    std::string err = errno_text();
    ::unlink(tmp.c_str());
    RT_ERROR("failed closing '", tmp, "': ", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = errno_text();
    ::unlink(tmp.c_str());
    RT_ERROR("cannot rename '", tmp, "' to '", path, "': ", err);
  }
  fsync_directory(dir_str);
}

}  // namespace retorch::io
