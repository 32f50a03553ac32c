// MappedFile: a whole file memory-mapped copy-on-write, shared by the tensors that view it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace retorch::io {

// Note [Copy-on-write mapping]
// Loaded tensors view the mapping directly and retorch tensors are writable, so the file is mapped
// MAP_PRIVATE with PROT_WRITE: an in-place op on a loaded tensor copies the touched page for this
// process and never changes the file. Each tensor's storage deleter holds a shared_ptr to the
// MappedFile, so the mapping lives until the last tensor viewing it is gone.
class MappedFile {
 public:
  /// Maps `path` (errors name the file: missing, not a regular file, mmap failure).
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// First byte of the mapping (null for an empty file).
  uint8_t* data() const { return data_; }
  /// File size in bytes.
  size_t size() const { return size_; }
  /// The path the file was opened with.
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  uint8_t* data_;
  size_t size_;
};

}  // namespace retorch::io
