// torch.distributed's collective interface: a default process group (gloo for CPU tensors,
// nccl for CUDA tensors), all_reduce/broadcast/barrier, rank and world size. One process today;
// the multi-process rendezvous is the distributed issue's (Note [Process groups]).
#pragma once
#include <memory>
#include <string>

#include "retorch/core/Tensor.h"

namespace retorch::distributed {

/// torch.distributed.ReduceOp.
enum class ReduceOp { kSum, kProduct, kMax, kMin, kAvg };

/// A group of processes exchanging tensors in place (c10d's ProcessGroup).
class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup() = default;
  virtual std::string backend() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Every rank's tensor becomes the reduction of all ranks' tensors.
  virtual void all_reduce(const Tensor& t, ReduceOp op) = 0;
  /// Every rank's tensor becomes rank src's.
  virtual void broadcast(const Tensor& t, int src) = 0;
  virtual void barrier() = 0;

 private:
  int rank_, size_;
};

/// Makes the default group: backend "gloo" (CPU tensors) or "nccl" (CUDA tensors on a device,
/// NCCL loaded at run time). world_size must be 1 until the distributed issue adds the
/// rendezvous between processes; errors name what is missing.
void init_process_group(const std::string& backend, int rank = 0, int world_size = 1);
bool is_initialized();
void destroy_process_group();
/// The default group; throws when init_process_group has not been called.
ProcessGroup& default_group();
int get_rank();
int get_world_size();

void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::kSum);
void broadcast(const Tensor& t, int src);
void barrier();

/// Whether NCCL's library can be loaded (it runs only with a CUDA device).
bool is_nccl_available();

}  // namespace retorch::distributed
