// IDX reader: validates magic, dims and payload length before trusting any of them.
#include "retorch/data/Idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "retorch/core/Error.h"

namespace retorch::data {

namespace {

// Note [IDX format]
// Bytes 0-1 are zero, byte 2 is the element type code, byte 3 the number of dims; then one
// big-endian uint32 per dim; then the elements, big-endian, row-major. MNIST's images are
// 0x00000803 (uint8, 3 dims) and its labels 0x00000801 (uint8, 1 dim). gzread passes a plain file
// through unchanged, so one reader handles both.

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

ScalarType idx_dtype(uint8_t code) {
  switch (code) {
    case 0x08: return kByte;
    case 0x09: return kChar;
    case 0x0B: return kShort;
    case 0x0C: return kInt;
    case 0x0D: return kFloat;
    case 0x0E: return kDouble;
    default: return ScalarType::Undefined;
  }
}

// Reads up to n bytes; returns how many were read (short only at end of data).
size_t read_some(gzFile f, uint8_t* dst, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    unsigned chunk = unsigned(std::min<size_t>(n - done, size_t(1) << 24));
    int got = gzread(f, dst + done, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      RT_ERROR("IDX file '", path, "': read failed (", msg ? msg : "unknown error",
               errnum == Z_DATA_ERROR ? "; the gzip data is corrupt" : "", ")");
    }
    if (got == 0) break;
    done += size_t(got);
  }
  return done;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

}  // namespace

Tensor read_idx(const std::string& path) {
  errno = 0;
  GzPtr f(gzopen(path.c_str(), "rb"));
  RT_CHECK(f != nullptr, "cannot open IDX file '", path, "': ",
           errno ? std::strerror(errno) : "out of memory");
  uint8_t magic[4];
  size_t got = read_some(f.get(), magic, 4, path);
  RT_CHECK(got == 4, "IDX file '", path, "' is truncated: ", got,
           " bytes, too short for the 4-byte magic number");
  uint32_t magic_value = big_endian_u32(magic);
  ScalarType dtype = idx_dtype(magic[2]);
  char hex[16];
  std::snprintf(hex, sizeof(hex), "0x%08X", magic_value);
  RT_CHECK(magic[0] == 0 && magic[1] == 0 && dtype != ScalarType::Undefined && magic[3] > 0,
           "IDX file '", path, "' has a bad magic number ", hex,
           ": expected 0x0000TTNN with type code TT in {08, 09, 0B, 0C, 0D, 0E} and NN >= 1 dims "
           "(MNIST images are 0x00000803, labels 0x00000801)");
  int ndim = magic[3];
  std::vector<uint8_t> dim_bytes(size_t(ndim) * 4);
  got = read_some(f.get(), dim_bytes.data(), dim_bytes.size(), path);
  RT_CHECK(got == dim_bytes.size(), "IDX file '", path, "' is truncated in its header: ", ndim,
           " dims need ", dim_bytes.size(), " bytes of sizes, found ", got);
  std::vector<int64_t> dims;
  uint64_t itemsize = element_size(dtype);
  uint64_t expected = itemsize;
  for (int d = 0; d < ndim; ++d) {
    uint64_t size = big_endian_u32(&dim_bytes[size_t(d) * 4]);
    dims.push_back(int64_t(size));
    // Each factor is < 2^32, so this bound keeps the product below 2^63 without overflow.
    RT_CHECK(size == 0 || expected <= (uint64_t(1) << 62) / size, "IDX file '", path,
             "': dims are too large (the element count overflows)");
    expected *= size;
  }
  // The buffer grows with the data actually read, so a header claiming huge dims over a short
  // file fails with "truncated" instead of allocating the claimed size up front.
  std::vector<uint8_t> buf;
  size_t step = size_t(1) << 24;
  while (buf.size() < expected) {
    size_t before = buf.size();
    size_t want = std::min<uint64_t>(step, expected - before);
    buf.resize(before + want);
    size_t n = read_some(f.get(), buf.data() + before, want, path);
    if (n < want) {
      buf.resize(before + n);
      break;
    }
  }
  std::string dims_str;
  for (size_t d = 0; d < dims.size(); ++d) dims_str += (d ? " x " : "") + std::to_string(dims[d]);
  RT_CHECK(buf.size() == expected, "IDX file '", path, "' is truncated: dims ", dims_str, " of ",
           itemsize, "-byte elements need ", expected, " bytes of data after the ", 4 + 4 * ndim,
           "-byte header, found ", buf.size());
  uint8_t extra;
  RT_CHECK(read_some(f.get(), &extra, 1, path) == 0, "IDX file '", path,
           "' has bytes after the ", expected, " bytes of data its dims ", dims_str,
           " describe (corrupt or not an IDX file)");
  Tensor t = make_empty(dims, dtype);
  uint8_t* dst = static_cast<uint8_t*>(t.data_ptr());
  if (itemsize == 1) {
    if (expected) std::memcpy(dst, buf.data(), expected);
  } else {
    for (uint64_t i = 0; i < expected; i += itemsize)
      for (uint64_t b = 0; b < itemsize; ++b) dst[i + b] = buf[i + itemsize - 1 - b];
  }
  return t;
}

}  // namespace retorch::data
