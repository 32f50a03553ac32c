// NCCL for the distributed process group (retorch/distributed): loaded with dlopen when a group
// is made, a one-device communicator, in-place all-reduce and broadcast on the default stream.
#include <mutex>
#include <string>

#include "retorch/backend/cuda/CudaRuntime.h"
#include "retorch/core/Error.h"
#include "retorch/core/SharedLibrary.h"
#include "retorch/device/CudaBridge.h"

namespace retorch::detail {

namespace {

// nccl.h's C ABI: results are an enum (0 is success), a communicator an opaque pointer, data
// types and reduction ops the enum values the process group passes.
using Result = int;
using Comm = void*;

struct Nccl {
  void* handle = nullptr;
  const char* (*error_string)(Result) = nullptr;
  Result (*init_all)(Comm*, int, const int*) = nullptr;
  Result (*all_reduce)(const void*, void*, size_t, int, int, Comm, void*) = nullptr;
  Result (*broadcast)(const void*, void*, size_t, int, int, Comm, void*) = nullptr;
};

const Nccl& nccl() {
  static const Nccl n = [] {
    Nccl r;
    r.handle =
        open_first_library({"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"});
    if (r.handle && !(bind_symbol(r.handle, "ncclGetErrorString", &r.error_string) &&
                      bind_symbol(r.handle, "ncclCommInitAll", &r.init_all) &&
                      bind_symbol(r.handle, "ncclAllReduce", &r.all_reduce) &&
                      bind_symbol(r.handle, "ncclBroadcast", &r.broadcast))) {
      ::dlclose(r.handle);
      r.handle = nullptr;
    }
    return r;
  }();
  return n;
}

void check(Result r, const char* what) {
  RT_CHECK(r == 0, "NCCL error in ", what, ": ", nccl().error_string(r));
}

}  // namespace

bool cuda_backend_nccl_available() { return nccl().handle != nullptr; }

/// A communicator over the current device alone.
void* cuda_backend_nccl_comm() {
  RT_CHECK(cuda_backend_nccl_available(), "NCCL (libnccl.so.2) could not be loaded");
  const int dev = cuda_backend::current_device();
  Comm comm = nullptr;
  check(nccl().init_all(&comm, 1, &dev), "ncclCommInitAll");
  return comm;
}

void cuda_backend_nccl_all_reduce(void* comm, void* data, size_t count, int dtype, int op) {
  check(nccl().all_reduce(data, data, count, dtype, op, comm, cuda_backend::current_stream()),
        "ncclAllReduce");
}

void cuda_backend_nccl_broadcast(void* comm, void* data, size_t count, int dtype, int root) {
  check(nccl().broadcast(data, data, count, dtype, root, comm, cuda_backend::current_stream()),
        "ncclBroadcast");
}

}  // namespace retorch::detail
