// MappedFile: open + fstat + mmap (MAP_PRIVATE, copy-on-write) with errors naming the file.
#include "retorch/io/MappedFile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "retorch/core/Error.h"

namespace retorch::io {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  RT_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    RT_ERROR("'", path, "' is not a regular file");
  }
  size_t size = size_t(st.st_size);
  uint8_t* data = nullptr;
  if (size > 0) {
    // See Note [Copy-on-write mapping].
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    RT_CHECK(p != MAP_FAILED, "cannot memory-map '", path, "' (", size, " bytes): ",
             std::strerror(err));
    data = static_cast<uint8_t*>(p);
  } else {
    ::close(fd);
  }
  return std::shared_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace retorch::io
