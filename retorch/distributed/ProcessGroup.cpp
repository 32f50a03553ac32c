// The default process group and its two backends: gloo-named for CPU tensors, NCCL for CUDA
// tensors through the CUDA backend's communicator (backend/cuda/CudaNccl.cpp).
#include "retorch/device/CudaBridge.h"
#include "retorch/distributed/ProcessGroup.h"

#include <mutex>

#include "retorch/core/Error.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/device/ElementAddress.h"

namespace retorch::distributed {

// Note [Process groups]
// The collective interface is torch.distributed's: one default group made by
// init_process_group, tensors reduced or broadcast in place. This build has no rendezvous
// between processes, so a group has one rank: every collective leaves its tensor as it is
// (the sum, product, max, min or average of one tensor is that tensor), after the checks a
// real backend makes (defined, dense and contiguous tensors; the backend's device; a dtype NCCL
// takes). The NCCL group still calls NCCL, on a one-device communicator, so the CUDA issue's
// "all-reduce of a tensor on one GPU" runs the library for real where a GPU is present.

namespace {

std::mutex g_mu;
std::unique_ptr<ProcessGroup> g_group;

void check_tensor(const char* fn, const ProcessGroup& g, const Tensor& t, bool cuda) {
  RT_CHECK_VALUE(t.defined(), fn, ": expected a tensor, got an undefined one");
  RT_CHECK_VALUE(t.is_contiguous(), fn, ": tensors must be contiguous (got sizes ", t.sizes(),
                 ", strides ", t.strides(), ")");
  RT_CHECK_VALUE(t.device().is_cuda() == cuda, fn, ": the ", g.backend(), " backend takes ",
                 cuda ? "CUDA" : "CPU", " tensors, got one on ", t.device().str());
}

void check_src(const char* fn, const ProcessGroup& g, int src) {
  RT_CHECK_VALUE(src >= 0 && src < g.size(), fn, ": src rank ", src, " is not in a group of ",
                 g.size());
}

// One rank over CPU tensors.
class GlooGroup final : public ProcessGroup {
 public:
  GlooGroup() : ProcessGroup(0, 1) {}
  std::string backend() const override { return "gloo"; }
  void all_reduce(const Tensor& t, ReduceOp) override { check_tensor("all_reduce", *this, t, false); }
  void broadcast(const Tensor& t, int src) override {
    check_tensor("broadcast", *this, t, false);
    check_src("broadcast", *this, src);
  }
  void barrier() override {}
};

// ncclDataType_t of a dtype (nccl.h's values), or -1.
int nccl_dtype(ScalarType t) {
  switch (t) {
    case kChar: return 0;
    case kByte: return 1;
    case kInt: return 2;
    case kLong: return 4;
    case kHalf: return 6;
    case kFloat: return 7;
    case kDouble: return 8;
    case kBFloat16: return 9;
    default: return -1;
  }
}

// One rank over CUDA tensors, through a one-device NCCL communicator.
class NcclGroup final : public ProcessGroup {
 public:
  NcclGroup() : ProcessGroup(0, 1), comm_(detail::cuda_backend_nccl_comm()) {}
  std::string backend() const override { return "nccl"; }
  void all_reduce(const Tensor& t, ReduceOp op) override {
    const int dt = checked("all_reduce", t);
    detail::cuda_backend_nccl_all_reduce(comm_, element_address(t), size_t(t.numel()), dt, int(op));
  }
  void broadcast(const Tensor& t, int src) override {
    const int dt = checked("broadcast", t);
    check_src("broadcast", *this, src);
    detail::cuda_backend_nccl_broadcast(comm_, element_address(t), size_t(t.numel()), dt, src);
  }
  void barrier() override {}

 private:
  int checked(const char* fn, const Tensor& t) {
    check_tensor(fn, *this, t, true);
    const int dt = nccl_dtype(t.dtype());
    RT_CHECK_TYPE(dt >= 0, fn, ": NCCL does not reduce ", t.dtype(), " tensors");
    return dt;
  }
  void* comm_;  // lives as long as the process (NCCL communicators are few and small)
};

}  // namespace

void init_process_group(const std::string& backend, int rank, int world_size) {
  std::lock_guard<std::mutex> lock(g_mu);
  RT_CHECK(!g_group, "init_process_group: the default process group is already initialized "
           "(call destroy_process_group first)");
  RT_CHECK_VALUE(backend == "gloo" || backend == "nccl",
                 "init_process_group: unknown backend '", backend, "' (expected gloo or nccl)");
  RT_CHECK_VALUE(world_size >= 1 && rank >= 0 && rank < world_size, "init_process_group: rank ",
                 rank, " is not in a world of size ", world_size);
  RT_CHECK_VALUE(world_size == 1, "init_process_group: world_size ", world_size,
                 " needs a rendezvous between processes, which this build does not have yet; "
                 "world_size 1 works");
  if (backend == "nccl") {
    RT_CHECK(is_nccl_available(), "init_process_group: the nccl backend needs NCCL "
             "(libnccl.so.2, from the CUDA toolkit), which could not be loaded");
    RT_CHECK(device_available(kCUDA), "init_process_group: the nccl backend needs a CUDA "
             "device; none is available (use gloo for CPU tensors)");
    g_group = std::make_unique<NcclGroup>();
  } else {
    g_group = std::make_unique<GlooGroup>();
  }
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_group != nullptr;
}

void destroy_process_group() {
  std::lock_guard<std::mutex> lock(g_mu);
  RT_CHECK(g_group != nullptr, "destroy_process_group: no default process group is initialized");
  g_group.reset();
}

ProcessGroup& default_group() {
  std::lock_guard<std::mutex> lock(g_mu);
  RT_CHECK(g_group != nullptr, "Default process group has not been initialized, please make "
           "sure to call init_process_group.");
  return *g_group;
}

int get_rank() { return default_group().rank(); }
int get_world_size() { return default_group().size(); }

void all_reduce(const Tensor& t, ReduceOp op) {
  RT_CHECK_VALUE(int(op) >= 0 && int(op) <= int(ReduceOp::kAvg), "all_reduce: unknown op ",
                 int(op));
  default_group().all_reduce(t, op);
}
void broadcast(const Tensor& t, int src) { default_group().broadcast(t, src); }
void barrier() { default_group().barrier(); }

bool is_nccl_available() { return detail::cuda_backend_nccl_available(); }

}  // namespace retorch::distributed
